"""A `memfiles` group holding only `recall`, with the full group's options: the per-turn fast path."""

from __future__ import annotations

from pathlib import Path

import click

from memfiles.cli.app import App, JsonErrorsGroup, chroma_url_option, root_option
from memfiles.cli.recall_cmd import recall


# JsonErrorsGroup, as the full group: `recall --root DIR` says where --root goes (it said "No such option")
@click.group(cls=JsonErrorsGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@root_option
@chroma_url_option
@click.pass_context
def thin(ctx: click.Context, root: Path | None, chroma_url: str | None) -> None:
    """memfiles, recall only (the full group has every command)."""
    ctx.obj = App(root, chroma_url)


thin.add_command(recall)
