"""Commands that write: add, set, retire, prune, import. Each builds ops; one write path applies them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from memfiles.cli.app import App, errors_to_exit, json_option, pass_app, print_json, warn
from memfiles.errors import OpError, ParseError
from memfiles.services.write import write_ops
from memfiles.store.batch import BatchResult
from memfiles.store.ops import parse_op, parse_ops
from memfiles.store.project import Project


def notify_index(project: Project, result: BatchResult) -> str | None:
    """The write path's message to the index (a no-op until an index exists)."""
    from memfiles.services.index import notify

    return notify(project, result)


def _check_duplicates(app: App, ops: list[dict[str, Any]], unique: bool, always: bool) -> list[str]:
    """Refuse (with --unique) adds that say what an existing entry says; otherwise return the warnings,
    which the caller prints only once the write has succeeded."""
    from memfiles.errors import RefusedError
    from memfiles.services.dedupe import many_near_duplicates

    adds = [op for op in ops if isinstance(op, dict) and op.get("op") == "add"]
    if not adds or not (unique or always):
        return []
    warnings = []
    items = [(str(op.get("title", "")), str(op.get("body", "")), frozenset()) for op in adds]
    found, mode = many_near_duplicates(app.project, items)
    hits = [(op, candidates) for op, candidates in zip(adds, found, strict=True) if candidates]
    for op, candidates in hits:
        names = ", ".join(f"{c.id} {c.title!r} ({c.score:.2f})" for c in candidates[:3])
        message = f"{op.get('title')!r} is close to {names}" + (
            " (by word overlap; no index)" if mode == "lexical" else ""
        )
        if unique:
            raise RefusedError(f"refused, a near-duplicate exists: {message}")
        warnings.append(f"near-duplicate: {message}")
    return warnings


def _body(body: str | None, body_file: Path | None, required: bool) -> str | None:
    if body is not None and body_file is not None:
        raise click.UsageError("give --body or --body-file, not both")
    if body_file is not None:
        return body_file.read_text(encoding="utf-8") if str(body_file) != "-" else sys.stdin.read()
    if body is None and required and not sys.stdin.isatty():
        return sys.stdin.read()
    return body


def _apply(app: App, ops_data: list[dict[str, Any]], request_id: str | None = None) -> BatchResult:
    settings = app.settings
    try:
        ops = [parse_op(value, position, settings.schema, settings.wrap) for position, value in enumerate(ops_data, 1)]
        result, warning = write_ops(app.project, ops, request_id=request_id, notify=notify_index)
    except OpError as error:  # one op from options: say what is wrong without "op 1:"
        raise OpError(None, error.message) from error
    if warning:
        warn(warning)
    return result


def _single(ops_data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in ops_data.items() if value not in (None, ())}


body_options = [
    click.option("--body", help="The body text: what was found, why, and what follows. Markdown."),
    click.option(
        "--body-file",
        type=click.Path(dir_okay=False, path_type=Path, allow_dash=True),
        help="Read the body from this file ('-' for standard input).",
    ),
]


def with_body(function: Any) -> Any:
    for option in reversed(body_options):
        function = option(function)
    return function


@click.command()
@click.option(
    "--kind",
    "-k",
    required=True,
    help="decision, friction, todo, lesson, fact, procedure, episode, insight (or its prefix: D, F, T, L, K, P, E, I).",
)
@click.option("--title", "-t", required=True, help="One line, at most 120 characters, that someone would search for.")
@click.option("--area", "-a", required=True, help="The part of the project it is about (format, index, cli...).")
@click.option("--status", "-s", help="Default: the kind's first status (proposed, open, active...).")
@with_body
@click.option("--file", "file_", help="Memory file to add to, relative to the root. Default: memory/<kind>s.md.")
@click.option("--section", help="Level-2 section of the file to put the entry under (created if missing).")
@click.option("--ref", "refs", multiple=True, help="Id of a related entry (repeatable).")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--date", help="YYYY-MM-DD. Default: today.")
@click.option("--unique", is_flag=True, help="Refuse (exit 1) instead of warning when a near-duplicate exists.")
@json_option
@pass_app
def add(
    app: App,
    kind: str,
    title: str,
    area: str,
    status: str | None,
    body: str | None,
    body_file: Path | None,
    file_: str | None,
    section: str | None,
    refs: tuple[str, ...],
    tags: tuple[str, ...],
    date: str | None,
    unique: bool,
    as_json: bool,
) -> None:
    """Add an entry and print its new id.

    The body comes from --body, --body-file, or standard input.

    \b
    Example:
      memfiles add --kind friction --title "Chroma hangs with two writers" --area index \\
          --body "Two PersistentClients on one folder hang for minutes; route writes through one."
    """
    with errors_to_exit():
        text = _body(body, body_file, required=True)
        op = _single(
            {
                "op": "add",
                "kind": kind,
                "title": title,
                "area": area,
                "status": status,
                "body": text,
                "file": file_,
                "section": section,
                "refs": list(refs) or None,
                "tags": list(tags) or None,
                "date": date,
            }
        )
        op.setdefault("body", "")
        duplicates = _check_duplicates(app, [op], unique, always=True)
        result = _apply(app, [op])
        for line in duplicates:  # only now: a write that failed has nothing to be a duplicate of
            warn(line)
        new_id = result.added[0]
        if as_json:
            located = app.project.find(new_id)
            print_json(
                {
                    "id": new_id,
                    "path": located.file.rel if located else None,
                    "line": located.entry.line if located else None,
                }
            )
        else:
            click.echo(new_id)


@click.command("set")
@click.argument("entry_id", metavar="ID")
@click.option("--title", "-t", help="New title (one line, at most 120 characters).")
@click.option("--area", "-a", help="New area.")
@click.option("--status", "-s", help="New status (one of the kind's; retire with `memfiles retire`).")
@with_body
@click.option("--ref", "refs", multiple=True, help="Replace the refs with these ids (repeatable).")
@click.option("--tag", "tags", multiple=True, help="Replace the tags with these (repeatable).")
@click.option("--section", help="Move the entry to this section of its file.")
@click.option("--file", "file_", help="Move the entry to this memory file (it keeps its id).")
@json_option
@pass_app
def set_entry(
    app: App,
    entry_id: str,
    title: str | None,
    area: str | None,
    status: str | None,
    body: str | None,
    body_file: Path | None,
    refs: tuple[str, ...],
    tags: tuple[str, ...],
    section: str | None,
    file_: str | None,
    as_json: bool,
) -> None:
    """Update an entry in place.

    \b
    Example:
      memfiles set F-014 --status resolved
    """
    with errors_to_exit():
        op = _single(
            {
                "op": "update",
                "id": entry_id,
                "title": title,
                "area": area,
                "status": status,
                "body": _body(body, body_file, required=False),
                "refs": list(refs) or None,
                "tags": list(tags) or None,
                "section": section,
                "file": file_,
            }
        )
        result = _apply(app, [op])
        print_json(result.as_json()) if as_json else click.echo(result.summary())


@click.command()
@click.argument("entry_id", metavar="ID")
@click.option("--successor", help="Id of the entry that replaces it; old references will name it.")
@click.option("--reason", required=True, help="Why it is retired (kept on the entry).")
@json_option
@pass_app
def retire(app: App, entry_id: str, successor: str | None, reason: str, as_json: bool) -> None:
    """Retire an entry: it keeps its id and its text, gains status retired, a reason and a successor.

    \b
    Example:
      memfiles retire D-003 --successor D-009 --reason "Superseded by the journal design"
    """
    with errors_to_exit():
        result = _apply(app, [_single({"op": "retire", "id": entry_id, "successor": successor, "reason": reason})])
        print_json(result.as_json()) if as_json else click.echo(result.summary())


@click.command()
@click.argument("entry_id", metavar="ID")
@click.option("--reason", required=True, help="Why it is removed (recorded in memory/pruned.jsonl).")
@json_option
@pass_app
def prune(app: App, entry_id: str, reason: str, as_json: bool) -> None:
    """Remove an entry from its file. Its text, the date and the reason go to memory/pruned.jsonl, where
    audit reports them, and its number is never used again.

    \b
    Example:
      memfiles prune T-007 --reason "Duplicate of T-004"
    """
    with errors_to_exit():
        result = _apply(app, [{"op": "prune", "id": entry_id, "reason": reason}])
        print_json(result.as_json()) if as_json else click.echo(result.summary())


def _load_json(path: Path) -> Any:
    text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ParseError(path, error.lineno, f"invalid JSON at column {error.colno}: {error.msg}") from error


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path, allow_dash=True))
@click.option("--request-id", help="Idempotency key: a batch with an id already applied changes nothing.")
@click.option(
    "--unique", is_flag=True, help="Refuse the batch (exit 1) if an add has a near-duplicate. Off by default."
)
@json_option
@pass_app
def import_ops(app: App, file: Path, request_id: str | None, unique: bool, as_json: bool) -> None:
    """Apply a batch of ops from a JSON file, all or nothing, through the same path as add.

    \b
    The file holds {"ops": [...]}; each op is one of
      {"op": "add", "kind", "title", "area", "body", ["status", "date", "file", "section", "refs", "tags"]}
      {"op": "update", "id", ...fields to change}
      {"op": "retire", "id", "reason", ["successor"]}
      {"op": "prune", "id", "reason"}
    An error names the op's position and field; then no file is touched.

    \b
    Example:
      memfiles import notes.json --request-id landing-42 --json
    """
    with errors_to_exit():
        document = _load_json(file)
        ops = parse_ops(document, app.settings.schema, app.settings.wrap)
        if unique:
            _check_duplicates(app, document.get("ops", []) if isinstance(document, dict) else document, True, False)
        result, warning = write_ops(app.project, ops, request_id=request_id, notify=notify_index)
        if warning:
            warn(warning)
        if as_json:
            print_json(result.as_json())
        else:
            click.echo(("already applied: " if result.replayed else "") + result.summary())
