"""Commands that read: show and list. A memory file that does not parse is named and set aside."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import click

from memfiles.cli.app import App, errors_to_exit, json_option, pass_app, print_json, warn
from memfiles.cli.complete import complete_id
from memfiles.errors import MemfilesError
from memfiles.format.render import render_entry
from memfiles.services.read import (
    EntryFilter,
    PrunedEntry,
    Reading,
    entry_json,
    find_entry,
    normalize_id,
    pruned_json,
    pruned_origin,
    read_project,
)


def read_with_warnings(app: App) -> Reading:
    """The project as the read commands see it; each file set aside gets a warning line on stderr."""
    reading = read_project(app.project)
    warn_skipped(reading)
    return reading


def warn_skipped(reading: Reading, but: str = "") -> None:
    """A warning line for each file set aside (`memfiles: warning: memory/x.md:18: ... (skipped)`), except
    those an error message `but` already names."""
    for problem in reading.problems:
        if not (problem.path and problem.path in but):
            warn(f"{problem} (skipped)")


def on_terminal() -> bool:
    """True when standard input and output are a terminal (vi needs one)."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def open_in_editor(path: Path, line: int) -> None:
    """Run $VISUAL (else $EDITOR, else vi when on a terminal) at `line` of `path`; MemfilesError when it
    cannot be started or fails, so a missing editor is a message and exit 2, never a traceback."""
    for variable in ("VISUAL", "EDITOR"):
        value = os.environ.get(variable, "").strip()
        if value:
            break
    else:
        if not on_terminal():
            # vi without a terminal prints escape codes and can wait for keys forever (an agent would hang)
            raise MemfilesError(
                f"--open: neither $VISUAL nor $EDITOR is set and there is no terminal to run vi in; set one"
                f" (EDITOR='code --wait'), or read the entry where it lives: {path}:{line}"
            )
        variable, value = "", "vi"
    source = f"${variable} ({value!r})" if variable else "vi (neither $VISUAL nor $EDITOR is set)"
    try:
        words = shlex.split(value)
    except ValueError as error:
        raise MemfilesError(f"cannot read {source} as a command: {error}") from error
    try:
        code = subprocess.call([*words, f"+{line}", str(path)])
    except OSError as error:
        raise MemfilesError(f"cannot start the editor {source}: {error.strerror or error}") from error
    if code != 0:
        raise MemfilesError(f"the editor {source} exited with status {code}")


@click.command()
@click.argument("entry_id", metavar="ID", shell_complete=complete_id)
@click.option("--open", "open_", is_flag=True, help="Open the file in $VISUAL or $EDITOR at the entry's line.")
@json_option
@pass_app
def show(app: App, entry_id: str, open_: bool, as_json: bool) -> None:
    """Print one entry, with the file and line it lives at. ID is case-insensitive and may be written
    @@D-002; a pruned id prints the entry as it was, with the date and the reason.

    \b
    Example:
      memfiles show D-002
      memfiles show @@d-2 --json
      memfiles show D-002 --open
    """
    with errors_to_exit(as_json):
        if open_ and as_json:
            raise MemfilesError("--open starts an editor; it prints no JSON (leave out --json)")
        schema = app.settings.schema
        normalize_id(entry_id)  # "not an id" before any file is read
        reading = read_project(app.project)
        try:
            found = find_entry(reading, entry_id, schema)
        except MemfilesError as error:
            warn_skipped(reading, but=str(error))
            raise
        warn_skipped(reading)
        if isinstance(found, PrunedEntry):
            if open_:
                raise MemfilesError(f"{found.entry.id} was pruned; it lives only in {found.ledger_rel}")
            if as_json:
                print_json({"entry": pruned_json(found, schema), "skipped": [f.as_json() for f in reading.skipped]})
                return
            record = found.record
            where = f"{found.ledger_rel}:{found.ledger_line}" if found.ledger_line else found.ledger_rel
            click.echo(
                f"{where}: {found.entry.id} was pruned on {record.get('date', '?')}: {record.get('reason', '')};"
                f" {pruned_origin(record)}"
            )
            if record.get("entry"):
                click.echo(str(record["entry"]).rstrip("\n"))
            return
        if open_:
            open_in_editor(found.file.path, found.entry.line)
            return
        if as_json:
            print_json({"entry": entry_json(found, schema), "skipped": [f.as_json() for f in reading.skipped]})
            return
        click.echo(found.where)
        click.echo(render_entry(found.entry))


@click.command("list")
@click.option("--kind", "-k", "kinds", multiple=True, help="Only this kind (name or prefix); repeat for several.")
@click.option("--area", "-a", "areas", multiple=True, help="Only this area; repeat for several.")
@click.option("--status", "-s", "statuses", multiple=True, help="Only this status; repeat for several.")
@click.option("--path", "path_glob", help="Only files matching this glob (relative to the root), e.g. 'pkg/*'.")
@click.option(
    "--body", "with_body", is_flag=True, help="Include each entry's body (text: each entry whole, as show prints it)."
)
@json_option
@pass_app
def list_entries(
    app: App,
    kinds: tuple[str, ...],
    areas: tuple[str, ...],
    statuses: tuple[str, ...],
    path_glob: str | None,
    with_body: bool,
    as_json: bool,
) -> None:
    """List entries, one line each: id, status, area, title, where.

    A repeated filter matches any of its values; different filters must all match. A memory file that
    does not parse is named on stderr (and in the JSON's "skipped") and the others are listed.

    \b
    Example:
      memfiles list --kind friction --kind todo --status open
      memfiles list --json | jq '.entries[].id'
    """
    with errors_to_exit(as_json):
        schema = app.settings.schema
        wanted = EntryFilter.build(schema, kinds=kinds, areas=areas, statuses=statuses, path_glob=path_glob)
        reading = read_with_warnings(app)
        rows = [located for located in reading.loaded.entries() if wanted.matches(located)]
    if as_json:
        print_json(
            {
                "entries": [entry_json(located, schema, body=with_body) for located in rows],
                "skipped": [f.as_json() for f in reading.skipped],
            }
        )
        return
    for number, located in enumerate(rows):
        entry = located.entry
        if with_body:  # each entry whole, as show prints it
            click.echo(("\n" if number else "") + f"{located.where}\n{render_entry(entry)}".rstrip("\n"))
            continue
        click.echo(f"{entry.id:<7} {entry.status:<10} {entry.area:<12} {entry.title}  ({located.where})")
