"""Commands of the index: backfill."""

from __future__ import annotations

import click

from memfiles.cli.app import App, errors_to_exit, json_option, pass_app, print_json


@click.command()
@click.option("--rebuild", is_flag=True, help="Start from an empty collection.")
@click.option("--check", "check_only", is_flag=True, help="Write nothing; report drift and exit 1 if there is any.")
@json_option
@pass_app
def backfill(app: App, rebuild: bool, check_only: bool, as_json: bool) -> None:
    """Bring the semantic index in line with the files: upsert every entry, delete ids that left.

    Entries whose text and model are unchanged are not embedded again. The index lives in
    .memsearch/ (or the Chroma server at index_url / --chroma-url / MEMFILES_CHROMA_URL).

    \b
    Example:
      memfiles backfill            # after a clone, or whenever in doubt
      memfiles backfill --check    # drift? exit 1 and say which ids
    """
    from memfiles.services.index import backfill as run_backfill

    with errors_to_exit():
        plan, report = run_backfill(app.project, rebuild=rebuild, check=check_only)
    if check_only:
        drift = {
            "missing_or_stale": sorted(d.id for d in plan.embed),
            "retag": sorted(d.id for d in plan.retag),
            "orphaned": plan.orphans,
            "unchanged": plan.unchanged,
        }
        if as_json:
            print_json(drift)
        else:
            for key in ("missing_or_stale", "retag", "orphaned"):
                if drift[key]:
                    click.echo(f"{key.replace('_', ' ')}: {', '.join(drift[key])}")
            click.echo("no drift" if not plan.drift else "drift found: run memfiles backfill", err=True)
        raise SystemExit(1 if plan.drift else 0)
    assert report is not None
    if as_json:
        print_json(
            {
                "indexed": report.indexed,
                "retagged": report.retagged,
                "unchanged": report.unchanged,
                "removed": report.removed,
                "seconds": round(report.seconds, 3),
            }
        )
    else:
        click.echo(report.summary())
