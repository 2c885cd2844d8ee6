"""Commands that read: show and list."""

from __future__ import annotations

import os
import shlex
import subprocess

import click

from memfiles.cli.app import App, errors_to_exit, json_option, pass_app, print_json
from memfiles.cli.complete import complete_id
from memfiles.errors import MemfilesError
from memfiles.format.render import render_entry
from memfiles.store.project import Located


def entry_json(located: Located, kind: str | None) -> dict[str, object]:
    entry = located.entry
    return {
        "id": entry.id,
        "kind": kind,
        "title": entry.title,
        "area": entry.area,
        "status": entry.status,
        "date": entry.date,
        "path": located.file.rel,
        "line": entry.line,
        "section": located.section,
        "refs": list(entry.refs),
        "tags": list(entry.tags),
        "successor": entry.successor,
    }


@click.command()
@click.argument("entry_id", metavar="ID", shell_complete=complete_id)
@click.option("--open", "open_", is_flag=True, help="Open the file in $EDITOR at the entry's line.")
@json_option
@pass_app
def show(app: App, entry_id: str, open_: bool, as_json: bool) -> None:
    """Print one entry, with the file and line it lives at.

    \b
    Example:
      memfiles show D-002
      memfiles show D-002 --open
    """
    with errors_to_exit():
        located = app.project.find(entry_id)
        if located is None:
            raise MemfilesError(f"no entry {entry_id}")
        if open_:
            editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
            command = [*shlex.split(editor), f"+{located.entry.line}", str(located.file.path)]
            raise SystemExit(subprocess.call(command))
        kind = app.settings.schema.kind_of(entry_id)
        if as_json:
            data = entry_json(located, kind.name if kind else None)
            data["body"] = located.entry.body
            print_json(data)
            return
        click.echo(f"{located.where}")
        click.echo(render_entry(located.entry))


@click.command("list")
@click.option("--kind", "-k", help="Only this kind (name or prefix).")
@click.option("--area", "-a", help="Only this area.")
@click.option("--status", "-s", help="Only this status.")
@click.option("--path", "path_glob", help="Only files matching this glob (relative to the root), e.g. 'pkg/*'.")
@json_option
@pass_app
def list_entries(
    app: App, kind: str | None, area: str | None, status: str | None, path_glob: str | None, as_json: bool
) -> None:
    """List entries, one line each: id, status, area, title, where.

    \b
    Example:
      memfiles list --kind friction --status open
      memfiles list --json | jq '.[].id'
    """
    import fnmatch

    with errors_to_exit():
        schema = app.settings.schema
        wanted = schema.kind(kind) if kind else None
        if kind and wanted is None:
            raise MemfilesError(f"unknown kind {kind!r} (known: {', '.join(k.name for k in schema.kinds)})")
        rows = []
        for located in app.project.entries():
            entry = located.entry
            entry_kind = schema.kind_of(entry.id)
            if wanted and entry_kind != wanted:
                continue
            if (area and entry.area != area) or (status and entry.status != status):
                continue
            if path_glob and not fnmatch.fnmatch(located.file.rel, path_glob):
                continue
            rows.append((located, entry_kind.name if entry_kind else None))
        if as_json:
            print_json([entry_json(located, name) for located, name in rows])
            return
        for located, _name in rows:
            entry = located.entry
            click.echo(f"{entry.id:<7} {entry.status:<10} {entry.area:<12} {entry.title}  ({located.where})")
