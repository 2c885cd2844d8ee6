"""Commands for agents: promote episodes, print the persona, serve the memory over MCP."""

from __future__ import annotations

import click

from memfiles.cli.app import App, errors_to_exit, json_option, pass_app, print_json, refuse_a_terminal, warn
from memfiles.cli.complete import complete_id
from memfiles.errors import ConfigError


@click.command()
@click.argument("ids", nargs=-1, required=True, metavar="ID [ID...]", shell_complete=complete_id)
@click.option("--to", "to", type=click.Choice(["procedure", "insight"]), required=True, help="The new entry's kind.")
@click.option("--reason", required=True, help="Why these episodes deserve it (recorded on the new entry).")
@click.option(
    "--title",
    help="The new entry's title. Default: the task the episodes share (their goal, or their titles up to the failure).",
)
@click.option(
    "--body", help="The new entry's body (what to do, or what it means). Default: the reason and the sources."
)
@click.option("--area", help="Default: the first episode's area.")
@click.option(
    "--again",
    is_flag=True,
    help="Promote episodes already promoted to an entry of that kind (refused without it: exit 1).",
)
@json_option
@pass_app
def promote(
    app: App,
    ids: tuple[str, ...],
    to: str,
    reason: str,
    title: str | None,
    body: str | None,
    area: str | None,
    again: bool,
    as_json: bool,
) -> None:
    """Promote one or more episodes to a procedure or an insight: a new entry citing them as evidence.

    Each episode gets status `promoted` and records the new id. An episode promoted before is refused
    (exit 1, naming what it became) unless --again. `memfiles audit` lists episodes repeated often
    enough to be worth promoting.

    \b
    Example:
      memfiles promote E-003 E-007 --to procedure --reason "The same yaml import failure in three runs" \\
          --title "Install the dev extra before running the hook tests" --body "Run make install first ..."
    """
    from memfiles.cli.writes import notify_index
    from memfiles.services.agents.promote import promote as promote_service

    with errors_to_exit():
        done = promote_service(
            app.project, list(ids), to, reason, title=title, body=body, area=area, notify=notify_index, again=again
        )
    for warning in done.warnings:
        warn(warning)
    if as_json:
        print_json(done.as_json(app.project))
    else:
        again = " (already done: nothing changed)" if done.replayed else ""
        click.echo(f"{done.new_id} (promoted from {', '.join(done.sources)}){again}")


@click.command()
@json_option
@pass_app
def persona(app: App, as_json: bool) -> None:
    """Print the persona: behaviour configuration for agents, in memory/persona.md.

    It is never indexed and never a search hit; agents read it on request (or as the MCP resource
    memfiles://persona).

    \b
    Example:
      memfiles persona --json
    """
    from memfiles.services.agents.persona import persona as read_persona

    with errors_to_exit():
        data = read_persona(app.project)
    if as_json:
        print_json({"persona": data})
    elif data["exists"]:
        click.echo(data["text"], nl=False)
    else:
        click.echo(f"no persona: write one in {data['path']}", err=True)


@click.command()
@click.option(
    "--no-watch", is_flag=True, help="Do not start a watcher in this process when none runs (open the store per call)."
)
@pass_app
def mcp(app: App, no_watch: bool) -> None:
    """Serve the project's memory over the Model Context Protocol on standard input and output.

    Tools: search, recall, show, add, import, working_get, working_set, promote. Entries are
    resources too (memfiles://D-005). Needs the mcp extra: pip install 'memfiles[mcp]'.

    \b
    Example:
      memfiles --root /path/to/project mcp
    """
    refuse_a_terminal("mcp", "an MCP client registered with it (docs/agents.md)")
    try:
        from memfiles.mcp.server import serve, serve_unconfigured
    except ImportError as error:
        raise click.ClickException(
            f"the MCP server needs the mcp extra: pip install 'memfiles[mcp]' ({error})"
        ) from error
    try:
        settings = app.settings
    except ConfigError as error:
        if error.path is None:  # no project at all (the client's registration points elsewhere): refuse
            with errors_to_exit():
                raise
        # a project whose config file is broken: the client would only see the connection close, so the
        # tools say it, naming the file and the key, until the server is restarted
        warn(f"{error}; every tool will answer with this until the server is restarted")
        serve_unconfigured(error)
        return
    serve(settings, watch=not no_watch)
