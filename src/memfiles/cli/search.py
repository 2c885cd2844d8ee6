"""The `memsearch` command (search only)."""

from __future__ import annotations

import click


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("query")
def memsearch(query: str) -> None:
    """Search the project's memory by meaning.

    \b
    Example:
      memsearch "coverage aggregation"
    """
    raise click.ClickException("the semantic index is not built yet in this version; use `memfiles list`")
