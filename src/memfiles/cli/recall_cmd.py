"""`memfiles recall`: what the memory holds for what an agent is about to do, by layer, in the seed's order.

Kept light on purpose: `memfiles recall` is dispatched here without loading the other commands
(see cli/entry.py), and everything heavy waits until no watcher answers.
"""

from __future__ import annotations

from typing import Any

import click

from memfiles.cli.app import App, JsonErrorsCommand, errors_to_exit, json_option, pass_app, print_json
from memfiles.services.agents.recall import DEFAULT_K, TRIGGERS
from memfiles.services.agents.recall import recall as recall_service


def _first_sentence(body: str, width: int = 140) -> str:
    text = " ".join(body.split())
    end = text.find(". ")
    text = text[: end + 1] if 0 < end < width else text
    return text if len(text) <= width else text[: width - 1] + "…"


def print_recall(result: dict[str, Any]) -> None:
    for group in result["layers"]:
        query = f"  (query: {group['query']})" if group["query"] and group["query"] != result["query"] else ""
        click.echo(f"{group['layer']} — {group['why']}{query}")
        if group["layer"] == "working" and group["working"]:
            state = group["working"]
            click.echo(f"  run {state['run']} ({state['status']})  {state['path']}")
            for name in ("goal", "stage", "hypothesis", "last_action", "last_observation", "next_step"):
                if state[name]:
                    click.echo(f"  {name}: {state[name]}")
            for name in ("blockers", "evidence_refs", "active_action_ids"):
                if state[name]:
                    click.echo(f"  {name}: {'; '.join(state[name])}")
            for name in ("todo_active", "todo_blocked"):
                for todo in state[name]:
                    click.echo(f"  {name}: {todo['id']} {todo['task']}")
        elif group["empty"]:
            click.echo(f"  (empty: {group['note']})")
        for hit in group["hits"]:
            entry = hit["entry"]
            click.echo(f"  {entry['id']}  {entry['title']}  ({entry['path']}:{entry['line']})  {hit['score']:.3f}")
            click.echo(f"      {_first_sentence(entry['body'])}")
    for warning in result["warnings"]:
        click.echo(f"memfiles: warning: {warning}", err=True)


# JsonErrorsCommand: `--trigger bogus --json` prints the error object on the thin path (cli/recall_group.py) too,
# whose group is not the main one's JsonErrorsGroup.
@click.command(cls=JsonErrorsCommand)
@click.argument("query", required=False, default="")
@click.option(
    "--trigger",
    type=click.Choice(list(TRIGGERS)),
    default="turn",
    show_default=True,
    help="The moment in the agent's loop; it decides which layers are mandatory (see docs/agents.md).",
)
@click.option(
    "--run", envvar="MEMFILES_RUN", help="The run whose working memory to include (resume, compaction, answer)."
)
@click.option("-k", "k", type=click.IntRange(1, 50), default=DEFAULT_K, show_default=True, help="Hits per layer.")
@click.option(
    "--floor",
    type=click.FloatRange(0, 1),
    help="The score every hit needs, in place of each layer's floor (recall_floors); 0 shows all.",
)
@json_option
@pass_app
def recall(app: App, query: str, trigger: str, run: str | None, k: int, floor: float | None, as_json: bool) -> None:
    """Recall prior experience for QUERY (what you are about to do), layer by layer: procedure,
    episode, lesson, insight, working. A hit scores its layer's floor or more (recall_floors); each group
    says when it is empty, so an agent knows it looked. A promoted episode gives way to its procedure.

    \b
    Triggers and their mandatory layers:
      turn, replan         procedure, episode, lesson, insight
      act                  procedure, episode (of the same task)
      failure, risky       procedure, episode, lesson (failure: episodes matched on the error signature)
      resume, compaction   procedure, working
      answer               insight, working
      memory-edit          procedure, insight

    \b
    Example:
      memfiles recall "run the migration on the staging database" --trigger risky
      memfiles recall "kubectl apply -f deploy/api.yaml --context prod" --trigger act
      memfiles recall "ModuleNotFoundError: No module named 'yaml'" --trigger failure --json
      memfiles recall --trigger resume --run fix-ci
    """
    with errors_to_exit():
        result = recall_service(app.project, query, trigger, run, k, floor)
    print_json(result) if as_json else print_recall(result)
