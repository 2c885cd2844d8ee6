"""The `memfiles` command group."""

from __future__ import annotations

from pathlib import Path

import click

from memfiles import __version__
from memfiles.cli.agent_cmds import mcp, persona, promote
from memfiles.cli.app import App, JsonErrorsGroup, chroma_url_option, root_option
from memfiles.cli.checks import audit, check, fmt, refs
from memfiles.cli.distill_cmds import distil, dupes
from memfiles.cli.gc_cmd import gc
from memfiles.cli.hook_cmds import hook, hooks
from memfiles.cli.index_cmds import backfill, status, watch
from memfiles.cli.lsp_cmd import lsp
from memfiles.cli.reads import list_entries, show
from memfiles.cli.recall_cmd import recall
from memfiles.cli.working_cmds import working
from memfiles.cli.writes import add, import_ops, prune, renumber, retire, set_entry


@click.group(cls=JsonErrorsGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@root_option
@click.version_option(__version__, prog_name="memfiles")
@click.pass_context
@chroma_url_option
def cli(ctx: click.Context, root: Path | None, chroma_url: str | None) -> None:
    """Keep a project's working notes as Markdown files in memory/, and check them.

    Decisions, frictions, todos, lessons, facts, procedures: one entry per finding, each with a
    stable id (D-476), a title, a date, an area and a status. Write through these commands; read
    the files in review.

    \b
    Exit codes: 0 done; 1 the answer is no (check found problems, --unique refused);
    2 bad input or usage (the message names the file and line, or the op).

    \b
    Examples:
      memfiles add --kind decision --title "Ids are never reused" --area format --body "Why ..."
      memfiles list --kind friction --status open
      memfiles check
    """
    ctx.obj = App(root, chroma_url)


for command in (
    add,
    set_entry,
    retire,
    prune,
    import_ops,
    renumber,
    check,
    fmt,
    audit,
    refs,
    show,
    list_entries,
    backfill,
    watch,
    status,
    gc,
    distil,
    dupes,
    lsp,
    working,
    recall,
    promote,
    persona,
    mcp,
    hook,
    hooks,
):
    cli.add_command(command)
