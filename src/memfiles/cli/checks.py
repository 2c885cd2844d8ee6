"""Commands that check: check, fmt, audit, refs. Each exits 1 when it finds what it looks for."""

from __future__ import annotations

from pathlib import Path

import click

from memfiles.cli.app import App, errors_to_exit, json_option, pass_app, print_json
from memfiles.services.audit import SEVERE, audit_project, layer_findings
from memfiles.services.check import check_project, format_project
from memfiles.services.refs import scan_references


@click.command()
@json_option
@pass_app
def check(app: App, as_json: bool) -> None:
    """Check every promise of the format; print problems as path:line: message, exit 1 if any.

    Parseable files, unique ids, known kinds and statuses, valid dates, the title and body limits,
    indexes up to date, the Manual section left alone, canonical form.

    \b
    Example:
      memfiles check && echo ok
    """
    with errors_to_exit():
        problems, count = check_project(app.project)
    if as_json:
        print_json({"files": count, "problems": [p.__dict__ for p in problems]})
    else:
        for problem in problems:
            click.echo(str(problem))
        click.echo(f"{count} files, {len(problems)} problems" if problems else f"{count} files ok", err=True)
    raise SystemExit(1 if problems else 0)


@click.command()
@click.option("--check", "check_only", is_flag=True, help="Change nothing; exit 1 if a file would change.")
@json_option
@pass_app
def fmt(app: App, check_only: bool, as_json: bool) -> None:
    """Rewrite memory files in canonical form, with fresh indexes. Bodies are left as written.

    \b
    Example:
      memfiles fmt --check || memfiles fmt
    """
    with errors_to_exit():
        result = format_project(app.project, write=not check_only)
    if as_json:
        print_json(
            {"changed": result.changed, "unchanged": result.unchanged, "errors": [str(e) for e in result.errors]}
        )
    else:
        for error in result.errors:
            click.echo(str(error), err=True)
        verb = "would reformat" if check_only else "reformatted"
        for rel in result.changed:
            click.echo(f"{verb} {rel}")
        click.echo(f"{len(result.changed)} {verb}, {result.unchanged} unchanged", err=True)
    if result.errors:
        raise SystemExit(2)
    raise SystemExit(1 if check_only and result.changed else 0)


@click.command()
@click.option("--stale-days", type=int, help="Open entries older than this are reported (default from config).")
@json_option
@pass_app
def audit(app: App, stale_days: int | None, as_json: bool) -> None:
    """Report the leftovers of edits: references to missing or retired ids, repeated titles, entries open
    for too long, and pruned entries with their reasons. Exit 1 if anything but pruned entries is found.

    \b
    Example:
      memfiles audit --stale-days 30
    """
    import dataclasses

    with errors_to_exit():
        project = app.project
        if stale_days is not None:
            project.settings = dataclasses.replace(project.settings, stale_days=stale_days)
        findings = audit_project(project)
        layers = layer_findings(project)
    if as_json:
        print_json([finding.as_json() for finding in [*findings, *layers]])
    else:
        for finding in findings:
            click.echo(f"{finding.kind}: {finding}")
        for layer_finding in layers:
            click.echo(str(layer_finding))
    severe = any(f.kind in SEVERE for f in findings) or any(f.severity != "info" for f in layers)
    raise SystemExit(1 if severe else 0)


@click.command()
@click.option("--dangling", is_flag=True, help="Only references that do not resolve to a live target; exit 1 if any.")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@json_option
@pass_app
def refs(app: App, dangling: bool, paths: tuple[Path, ...], as_json: bool) -> None:
    """Find @@ID, @@doc:<path>#<anchor> and @@skill:<name>#<anchor> references in the project's files.

    Scans PATHS, or every file git tracks (or would track). A retired id names its successor.

    \b
    Example:
      memfiles refs --dangling src/
    """
    with errors_to_exit():
        found = scan_references(app.project, list(paths) or None)
    if dangling:
        found = [ref for ref in found if ref.state != "ok"]
    if as_json:
        print_json([ref.as_json() for ref in found])
    else:
        for ref in found:
            click.echo(f"{ref.state}: {ref}")
    raise SystemExit(1 if dangling and found else 0)
