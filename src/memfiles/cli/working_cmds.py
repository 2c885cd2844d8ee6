"""`memfiles working`: a run's working memory (goal, stage, hypothesis, ... todos), kept across crashes
and compactions in memory/working/<run>.md."""

from __future__ import annotations

import os
from typing import Any

import click

from memfiles.cli.app import App, errors_to_exit, json_option, pass_app, print_json, warn
from memfiles.cli.complete import complete_todo
from memfiles.contract import write_object
from memfiles.services.agents.working import FIELDS, LISTS, SCALARS, TODOS, Working, WorkingState, find_todo

run_option = click.option(
    "--run",
    "run",
    envvar="MEMFILES_RUN",
    help="The run (a name like fix-ci-42). Default: $MEMFILES_RUN, else the one active run.",
)


def _service(app: App) -> Working:
    from memfiles.cli.writes import notify_index

    return Working(app.project, notify=notify_index)


def _print_state(state: WorkingState) -> None:
    click.echo(f"run {state.run} ({state.status})  {state.path}  {state.id}")
    for name in FIELDS:
        value = state.get(name)
        if name in TODOS:
            click.echo(f"{name}:")
            for todo in value:
                note = f"  — {todo.note}" if todo.note else ""
                click.echo(f"  - {todo.id} {todo.task}{note}")
        elif name in LISTS:
            click.echo(f"{name}: " + ("; ".join(value) if value else ""))
        else:
            click.echo(f"{name}: {value or ''}")


def _report(
    app: App,
    service: Working,
    state: WorkingState,
    as_json: bool,
    added: list[str] | None = None,
    text: str = "",
    replayed: bool = False,
) -> None:
    for warning in service.warnings:
        warn(warning)
    if as_json:
        from memfiles.services.agents.promote import entry_json_by_id

        added = list(dict.fromkeys([*(added or []), *(i for r in service.written for i in r.added)]))
        updated = list(dict.fromkeys(i for r in service.written for i in r.updated if i not in added))
        entries = [entry_json_by_id(app.project, i) for i in dict.fromkeys([*added, *updated, state.id or ""]) if i]
        listed = [e for e in entries if e]
        write = write_object(added=added, updated=updated, replayed=replayed, entries=listed, warnings=service.warnings)
        print_json({**write, "working": state.as_json()})
    elif text:
        if replayed or not service.unchanged:
            click.echo(text)  # "run R saved", unless nothing was (a warning above says so)
    else:
        _print_state(state)


@click.group()
def working() -> None:
    """A run's working memory: goal, stage, hypothesis, last action and observation, next step,
    blockers, evidence refs, active action ids and task-level todos, in memory/working/<run>.md.

    `show` after a crash or a compaction prints the state exactly as last saved. The folder holds a
    .gitignore, so working memory is not committed (delete that file to commit it).

    \b
    Example:
      memfiles working start --run fix-ci --goal "Make the hook tests pass offline"
      memfiles working set --stage implement --last-action "ran pytest" --last-observation "2 failed"
      memfiles working todo add "Pin pre-commit in the dev extra"
      memfiles working show --json
      memfiles working end --episode
    """


def _field_options(function: Any) -> Any:
    for name in reversed(SCALARS[1:]):
        flag = "--" + name.replace("_", "-")
        function = click.option(flag, name, help=f"Set {name} (one line).")(function)
    function = click.option("--blocker", "blockers", multiple=True, help="A blocker (repeatable; replaces the list).")(
        function
    )
    function = click.option(
        "--evidence",
        "evidence_refs",
        multiple=True,
        help="An evidence ref: an id, a file, commit:SHA, run:ID (repeatable).",
    )(function)
    function = click.option(
        "--action-id", "active_action_ids", multiple=True, help="An active action id (repeatable; replaces the list)."
    )(function)
    return function


@working.command("start")
@run_option
@click.option("--goal", required=True, help="What the run is for (one line).")
@click.option("--area", help="The area of the project the run works on. Default: working.")
@_field_options
@json_option
@pass_app
def start(app: App, run: str | None, goal: str, area: str | None, as_json: bool, **fields: Any) -> None:
    """Start a run's working memory; prints the run's name, and on stderr how to make it the default
    (export MEMFILES_RUN=NAME).

    \b
    Example:
      memfiles working start --run fix-ci --goal "Make the hook tests pass offline" --stage explore
    """
    with errors_to_exit():
        service = _service(app)
        values = {k: (list(v) or None) if k in LISTS else v for k, v in fields.items()}
        state = service.start(run, goal, area, **values)
    _report(app, service, state, as_json, added=[state.id or ""], text=state.run)
    if os.environ.get("MEMFILES_RUN") != state.run:  # said on stderr: `RUN=$(memfiles working start ...)` still works
        click.echo(
            f"memfiles: to make {state.run} the default run of later commands: export MEMFILES_RUN={state.run}"
            f" (or pass --run {state.run} to each); without either, they take the one active run you started",
            err=True,
        )


@working.command("show")
@run_option
@json_option
@pass_app
def show(app: App, run: str | None, as_json: bool) -> None:
    """Print a run's working memory exactly as last saved (after a crash, a wait or a compaction).

    \b
    Example:
      memfiles working show --run fix-ci --json
    """
    from memfiles.services.agents import working as service

    with errors_to_exit():
        state = service.require(app.project, service.resolve_run(app.project, run))
    print_json({"working": state.as_json()}) if as_json else _print_state(state)


@working.command("list")
@json_option
@pass_app
def list_runs(app: App, as_json: bool) -> None:
    """List the runs that have working memory: name, status, `hooks` for a run the agents' hooks started
    (they end it; it is never a command's default run), last update, goal.

    \b
    Example:
      memfiles working list
      memfiles working list --json
    """
    from memfiles.services.agents.working import run_list

    with errors_to_exit():
        runs = run_list(app.project)
    if as_json:
        print_json({"runs": runs})
        return
    for item in runs:
        goal = item["goal"] if item["problem"] is None else item["problem"]
        by = "hooks" if item["hooks"] else ""  # the agents' hooks started it: never the default run
        click.echo(f"{item['run']:<28} {item['status']:<10} {by:<6} {item['updated'] or '':<21} {goal}")


@working.command("set")
@run_option
@click.option("--goal", help="Set the goal (one line).")
@_field_options
@click.option("--add-evidence", multiple=True, help="Add an evidence ref, keeping the others (repeatable).")
@click.option(
    "--clear", "clear", multiple=True, type=click.Choice([*SCALARS[1:], *LISTS]), help="Empty this field (repeatable)."
)
@json_option
@pass_app
def set_fields(
    app: App,
    run: str | None,
    add_evidence: tuple[str, ...],
    clear: tuple[str, ...],
    as_json: bool,
    **fields: Any,
) -> None:
    """Change fields of the working memory; the others stay as they are. List options replace the list.

    \b
    Example:
      memfiles working set --last-action "ran pytest -x" --last-observation "ImportError: yaml" \\
          --next-step "add pyyaml to the dev extra" --add-evidence tests/test_hooks.py
    """
    changes: dict[str, Any] = {name: None if name in SCALARS else [] for name in clear}
    given = [name for name, value in fields.items() if (value if name in LISTS else value is not None)]
    with errors_to_exit():
        conflicts = [name for name in clear if name in given or (name == "evidence_refs" and add_evidence)]
        if conflicts:  # empty it and set it: which one was meant, nobody can say
            name = conflicts[0]
            flags = {"blockers": "--blocker", "evidence_refs": "--evidence", "active_action_ids": "--action-id"}
            other = flags.get(name, "--" + name.replace("_", "-")) if name in given else "--add-evidence"
            raise click.UsageError(f"--clear {name} and {other} do not go together: give one")
        for name in given:
            changes[name] = list(fields[name]) if name in LISTS else fields[name]
        if not changes and not add_evidence:
            raise click.UsageError("nothing to set: give a field option (see --help)")
        service = _service(app)
        state = service.set(run, changes, list(add_evidence))
    _report(app, service, state, as_json, text=f"run {state.run} saved")


@working.group("todo")
def todo() -> None:
    """Task-level todos of a run: add, done, block, reopen (by id, or by the task's exact text).

    \b
    Example:
      memfiles working todo add "Write the try-repo test"
      memfiles working todo done W-004
    """


@todo.command("add")
@click.argument("task")
@click.option("--note", help="A line of context for the task.")
@run_option
@json_option
@pass_app
def todo_add(app: App, task: str, note: str | None, run: str | None, as_json: bool) -> None:
    """Add a task-level todo to the run; prints its id.

    \b
    Example:
      memfiles working todo add "Document the MCP registration"
    """
    with errors_to_exit():
        service = _service(app)
        state, new_id = service.todo_add(run, task, note)
    _report(app, service, state, as_json, added=[new_id], text=new_id)


def _todo_command(name: str, status: str, summary: str) -> click.Command:
    @click.command(name, help=f"{summary}\n\n\b\nExample:\n  memfiles working todo {name} W-004")
    @click.argument("todo_ref", metavar="TODO", shell_complete=complete_todo)
    @click.option("--note", help="Why (replaces the todo's note).")
    @run_option
    @json_option
    @pass_app
    def command(app: App, todo_ref: str, note: str | None, run: str | None, as_json: bool) -> None:
        with errors_to_exit():
            service = _service(app)
            state = service.todo_status(run, todo_ref, status, note)
            todo = find_todo(state, todo_ref)  # w-4 and the task's text name W-004
        _report(app, service, state, as_json, text=f"{todo.id} {todo.task}: {status}")

    return command


todo.add_command(_todo_command("done", "done", "Mark a todo done."))
todo.add_command(_todo_command("block", "blocked", "Mark a todo blocked (say why with --note)."))
todo.add_command(_todo_command("reopen", "active", "Make a done or blocked todo active again."))


@working.command("end")
@run_option
@click.option("--episode", is_flag=True, help="Record the run as an episode (kind episode) citing its evidence.")
@click.option("--outcome", help="One line: how the run ended (the episode's first sentence).")
@click.option("--title", help="The episode's title. Default: the goal.")
@json_option
@pass_app
def end(app: App, run: str | None, episode: bool, outcome: str | None, title: str | None, as_json: bool) -> None:
    """End a run; with --episode, turn it into an episode first (safe to repeat after a crash).

    \b
    Example:
      memfiles working end --episode --outcome "Fixed: the hooks run with language: system"
    """
    with errors_to_exit():
        service = _service(app)
        state, episode_id = service.end(run, episode, outcome, title)
    added = [episode_id] if episode_id else []
    text = f"run {state.run} ended" + (f"; recorded as {episode_id}" if episode_id else "")
    if service.unchanged:
        text = f"run {state.run} had already ended" + (f"; recorded as {episode_id}" if episode_id else "")
    _report(app, service, state, as_json, added=added, text=text, replayed=service.unchanged)
