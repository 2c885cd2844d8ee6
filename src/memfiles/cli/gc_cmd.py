"""`memfiles gc`: the shared vectors no clone has used for a while, removed from the Chroma server."""

from __future__ import annotations

import click

from memfiles.cli.app import App, Number, errors_to_exit, json_option, pass_app, print_json


@click.command()
@click.option(
    "--unused-for",
    "days",
    type=Number(1, 36_500),
    required=True,
    metavar="DAYS",
    help="Remove the vectors no clone has marked used for this many days (at least 1).",
)
@click.option("--dry-run", is_flag=True, help="Count them; remove nothing.")
@json_option
@pass_app
def gc(app: App, days: float, dry_run: bool, as_json: bool) -> None:
    """Remove from the Chroma server (index_url) the shared vectors no clone has used for DAYS days.

    Every clone marks the vectors its own entries use at most once a day (on backfill, and while a
    watcher runs); nothing else removes a shared vector, never another clone's backfill. A clone whose
    vectors were removed keeps searching (its view holds them) and shares them again at its next mark.

    \b
    Example:
      memfiles gc --unused-for 30 --dry-run
      memfiles gc --unused-for 30
    """
    from memfiles.services.indexing.sharing import collect_garbage

    with errors_to_exit():
        result = collect_garbage(app.settings, days, dry_run)
    if as_json:
        print_json(result)
        return
    verb = "would remove" if dry_run else "removed"
    click.echo(
        f"{verb} {result['removed']:,} vectors unused for {days:g} days; {result['kept']:,} kept"
        f" ({result['collection']} on {result['server']})"
    )
