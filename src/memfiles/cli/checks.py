"""Commands that check: check, fmt, audit, refs. Each exits 1 when it finds what it looks for."""

from __future__ import annotations

from pathlib import Path

import click

from memfiles.cli.app import App, errors_to_exit, json_option, pass_app, print_json, warn
from memfiles.cli.reads import read_with_warnings
from memfiles.format.validate import finding_order
from memfiles.services.upkeep.audit import audit_project, layer_findings
from memfiles.services.upkeep.check import check_project, fails, format_project, lint_findings
from memfiles.services.upkeep.refs import scan_references

no_lint_option = click.option("--no-lint", is_flag=True, help="Skip the Markdown lint rule set (docs/lint.md).")


@click.command()
@no_lint_option
@json_option
@pass_app
def check(app: App, no_lint: bool, as_json: bool) -> None:
    """Check every promise of the format; print findings as path:line: code message, exit 1 if any.

    Parseable UTF-8 files, unique ids, known kinds and statuses, valid dates, the title and body limits,
    indexes up to date, the Manual section left alone, one kind of line ending, canonical form; and the
    Markdown lint rule set (trailing spaces, tabs, blank lines, line length, bare URLs, headings...:
    docs/lint.md). With --json: {"files": n, "findings": [...]} (docs/json.md lists the codes).

    \b
    Example:
      memfiles check && echo ok
      memfiles check --no-lint
    """
    with errors_to_exit():
        findings, count = check_project(app.project)
        findings = sorted([*findings, *lint_findings(app.project, enabled=not no_lint)], key=finding_order)
    if as_json:
        print_json({"files": count, "findings": [item.as_json() for item in findings]})
    else:
        for item in findings:
            click.echo(str(item))
        files = f"{count} file{'s' * (count != 1)}"
        click.echo(
            f"{files}, {len(findings)} finding{'s' * (len(findings) != 1)}" if findings else f"{files} ok", err=True
        )
    raise SystemExit(1 if fails(findings) else 0)


@click.command()
@click.option("--check", "check_only", is_flag=True, help="Change nothing; exit 1 if a file would change.")
@no_lint_option
@json_option
@pass_app
def fmt(app: App, check_only: bool, no_lint: bool, as_json: bool) -> None:
    """Rewrite memory files in canonical form, with fresh indexes, and fix what the lint rule set can fix
    (trailing spaces, tabs, blank lines, list markers, bare URLs...). Prose is not re-wrapped, and
    `## Manual` and every entry's id, title and metadata are left as written, except an id written
    without its padding (`### D-2:`), which becomes D-002 (with the refs and successors naming it) when
    no other entry or pruned record has D-002.

    A file keeps its line ending (the first line's, CRLF or LF) throughout, Manual included. The index
    is told of the files rewritten, as after any write. Files that cannot be read are named (exit 2) and
    left alone. With --json: {"changed": [paths], "unchanged": n,
    "findings": [...]}.

    \b
    Example:
      memfiles fmt --check || memfiles fmt
    """
    with errors_to_exit():
        result = format_project(app.project, write=not check_only, lint=not no_lint)
    if result.changed and not check_only:
        # a write like any other: moved lines and respelled ids reach the index as add's changes do
        from memfiles.cli.writes import notify_index
        from memfiles.store.batch import BatchResult

        said = notify_index(app.project, BatchResult(paths=list(result.changed)))
        if said:
            warn(said)
    if as_json:
        print_json(
            {
                "changed": result.changed,
                "unchanged": result.unchanged,
                "findings": [item.as_json() for item in result.errors],
            }
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
@click.option(
    "--stale-days",
    type=click.IntRange(min=1),
    help="Open entries older than this many days are reported (default from config).",
)
@json_option
@pass_app
def audit(app: App, stale_days: int | None, as_json: bool) -> None:
    """Report the leftovers of edits: references to missing or retired ids, repeated titles, entries open
    for too long, and pruned entries with their reasons, as `path:line: code message`. Exit 1 if anything
    but pruned entries is found, or a memory file does not parse (it is named and the rest is audited).

    \b
    Example:
      memfiles audit --stale-days 30
    """
    import dataclasses

    with errors_to_exit(as_json):
        project = app.project
        if stale_days is not None:
            project.settings = dataclasses.replace(project.settings, stale_days=stale_days)
        reading = read_with_warnings(app)
        findings = audit_project(project, reading=reading)
        findings += layer_findings(project, reading)
    if as_json:
        print_json({"findings": [f.as_json() for f in findings], "skipped": [f.as_json() for f in reading.skipped]})
    else:
        for finding in findings:
            click.echo(str(finding))
        skipped = len(reading.problems)  # named above; they make the exit 1 too
        unread = "1 file that does not parse" if skipped == 1 else f"{skipped} files that do not parse"
        closing = _tally(findings, "finding", "0 findings") + (f"; skipped {unread}" if skipped else "")
        click.echo(closing if findings or skipped else "nothing to report", err=True)
    serious = any(f.severity != "info" for f in findings) or bool(reading.problems)
    raise SystemExit(1 if serious else 0)


@click.command()
@click.option("--dangling", is_flag=True, help="Only references that do not resolve to a live target; exit 1 if any.")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@json_option
@pass_app
def refs(app: App, dangling: bool, paths: tuple[Path, ...], as_json: bool) -> None:
    """Find @@ID, @@doc:<path>#<anchor> and @@skill:<name>#<anchor> references in the project's files.

    Scans PATHS, or every file git tracks (or would track). Each reference is printed as
    `path:line: code token: message`, code one of ref-ok, ref-retired (naming the successor), ref-pruned,
    ref-dangling, ref-ambiguous (two entries carry the id), ref-unreadable (its entry is in a memory file
    that does not parse).

    \b
    Example:
      memfiles refs --dangling src/
    """
    with errors_to_exit(as_json):
        reading = read_with_warnings(app)
        found = scan_references(app.project, list(paths) or None, reading=reading)
    if dangling:
        found = [ref for ref in found if ref.code != "ref-ok"]
    if as_json:
        print_json({"findings": [f.as_json() for f in found], "skipped": [f.as_json() for f in reading.skipped]})
    else:
        for ref in found:
            click.echo(str(ref))
        click.echo(
            _tally(found, "reference", "no references" if not dangling else "every reference resolves"), err=True
        )
    raise SystemExit(1 if dangling and found else 0)


def _tally(findings: list, noun: str, none: str) -> str:
    """The closing line of a long listing, on stderr: how many of each code, the most frequent first
    (a thousand `stale` lines must not hide the three that matter)."""
    if not findings:
        return none
    counts: dict[str, int] = {}
    for item in findings:
        counts[item.code] = counts.get(item.code, 0) + 1
    ordered = sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))
    kinds = ", ".join(f"{count:,} {code}" for code, count in ordered)
    return f"{len(findings):,} {noun}{'s' * (len(findings) != 1)}: {kinds}"
