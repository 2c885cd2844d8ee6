"""`memfiles hook EVENT` (an agent's hook) and `memfiles hooks install|uninstall` (its settings file).

The executable sends `memfiles hook` down a path without click (cli/hook_entry.py); this command is
the same call for `--help`, shell completion and in-process tests.
"""

from __future__ import annotations

import sys

import click

from memfiles.cli.app import App, errors_to_exit, json_option, pass_app, print_json, warn
from memfiles.services.agents.hook_agents import AGENTS, apply, default_command
from memfiles.services.agents.hooks import EVENTS


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("event", required=False)
@pass_app
def hook(app: App, event: str | None) -> None:
    """Answer an agent's hook: read its JSON input on stdin, print its JSON output.

    EVENT is the agent's event name (default: the input's hook_event_name): SessionStart,
    UserPromptSubmit, PreToolUse, PostToolUse, PostToolUseFailure, PreCompact, Stop, SessionEnd, or
    Gemini CLI's BeforeAgent, BeforeTool, AfterTool, PreCompress, AfterAgent. What it injects is this
    project's procedures, episodes, lessons and insights for the moment (docs/hooks.md), in at most
    hooks_budget characters, each entry once per session. Always exits 0: with no index, no watcher,
    a broken file or bad input it prints {} and logs one line in .memfiles/hooks.log.

    \b
    Example:
      echo '{"session_id": "s1", "prompt": "run the migration"}' | memfiles hook UserPromptSubmit
    """
    from memfiles.cli.hook_entry import answer

    given = app.root_option
    later: list = []
    click.echo(answer(event, str(given) if given is not None else None, sys.stdin.read(), later))
    for job in later:
        job()


@click.group()
def hooks() -> None:
    """Install memfiles' hooks into a coding agent's settings, or remove them.

    \b
    Example:
      memfiles hooks install --agent claude-code --scope project --dry-run
      memfiles hooks uninstall --agent claude-code --scope project
    """


agent_option = click.option(
    "--agent",
    type=click.Choice(sorted(AGENTS)),
    default="claude-code",
    show_default=True,
    help="The agent whose settings file to change.",
)
scope_option = click.option(
    "--scope",
    type=click.Choice(["project", "local", "user"]),
    default="project",
    show_default=True,
    help=(
        "project: .claude/settings.json (shared; .gemini/settings.json for gemini-cli); local:"
        " .claude/settings.local.json (yours, not committed); user: ~/.claude/settings.json (every project)."
    ),
)
dry_run_option = click.option("--dry-run", is_flag=True, help="Print the change as a diff; write nothing.")


def _report(result: dict, as_json: bool, verb: str) -> None:
    if as_json:
        print_json(result)
        return
    if result["dry_run"] and result["diff"]:
        click.echo(result["diff"], nl=False)
    events = result["added"] if verb == "installed" else result["removed"]
    if not result["changed"]:
        click.echo(f"nothing to change in {result['path']}: memfiles' hooks are already {verb.split()[0]}")
    else:
        done = f"would be {verb}" if result["dry_run"] else verb
        click.echo(f"memfiles hooks {done} in {result['path']}: {', '.join(events) or 'none'}")


@hooks.command()
@agent_option
@scope_option
@click.option(
    "--command",
    "command",
    help="How the agent runs memfiles (default: `memfiles` when it is this one on PATH, else its full path).",
)
@dry_run_option
@json_option
@pass_app
def install(app: App, agent: str, scope: str, command: str | None, dry_run: bool, as_json: bool) -> None:
    """Add memfiles' hooks to the agent's settings file, beside any hooks already there.

    Run again, it changes nothing (or brings memfiles' own entries up to date). A settings file that
    is not valid JSON, or not the agent's shape, is refused naming it: exit 2, nothing written.
    """
    with errors_to_exit():
        result = apply(AGENTS[agent], scope, app.project.root, remove=False, command=command, dry_run=dry_run)
    _report(result, as_json, "installed")
    used = command or default_command()
    if scope == "project" and not as_json and (used.startswith(("/", "'")) or ":\\" in used):
        warn(
            f"{result['path']} is shared, and it now runs {used}, a path on this machine; if memfiles is on"
            " everyone's PATH, install with --command memfiles (or use --scope local)"
        )
    if not as_json and agent == "gemini-cli" and result["changed"] and not dry_run:
        click.echo("gemini-cli runs hooks only with its hooks system on: /settings, Advanced, Enable Hooks System")


@hooks.command()
@agent_option
@scope_option
@dry_run_option
@json_option
@pass_app
def uninstall(app: App, agent: str, scope: str, dry_run: bool, as_json: bool) -> None:
    """Remove memfiles' hooks (and only those) from the agent's settings file."""
    with errors_to_exit():
        result = apply(AGENTS[agent], scope, app.project.root, remove=True, command=None, dry_run=dry_run)
    _report(result, as_json, "uninstalled")


__all__ = ["EVENTS", "hook", "hooks"]
