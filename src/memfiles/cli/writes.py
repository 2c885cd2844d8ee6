"""Commands that write: add, set, retire, prune, import, renumber. Each builds ops; one write path applies
them, and with --json each prints the contract's write object (docs/json.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from memfiles import jsonin
from memfiles.cli.app import App, errors_to_exit, json_option, pass_app, print_json, warn
from memfiles.cli.complete import complete_id
from memfiles.cli.infile import read_input
from memfiles.errors import BatchError, OpError, ParseError
from memfiles.services.upkeep.refs import write_warnings
from memfiles.services.upkeep.unique import check_adds
from memfiles.services.write import write_json, write_ops
from memfiles.store.batch import BatchResult, Guard
from memfiles.store.ops import check_ops
from memfiles.store.project import Project


def notify_index(project: Project, result: BatchResult) -> str | None:
    """The write path's message to the index (a no-op until an index exists)."""
    from memfiles.services.indexing.index_client import notify

    return notify(project, result)


def _body(body: str | None, body_file: Path | None, required: bool) -> str | None:
    if body is not None and body_file is not None:
        raise click.UsageError("give --body or --body-file, not both")
    if body_file is not None:
        return read_input(body_file, what="body")
    if body is None and required and not sys.stdin.isatty():
        return read_input(Path("-"), what="body", hint="; or give it with --body or --body-file")
    return body


def _apply(
    app: App,
    ops_data: list[dict[str, Any]],
    request_id: str | None = None,
    allow_dangling: bool = False,
    guard: Guard | None = None,
) -> tuple[BatchResult, list[str]]:
    """Apply ops built from options; the result and every warning (also printed on stderr)."""
    settings = app.settings
    try:
        ops, problems = check_ops(ops_data, settings.schema, settings.wrap)
        result, warning = write_ops(
            app.project,
            ops,
            request_id=request_id,
            notify=notify_index,
            allow_dangling=allow_dangling,
            problems=problems,
            guard=guard,
        )
    except BatchError as error:  # ops from options: say what is wrong without "op 1:"
        raise BatchError([OpError(None, p.message, p.field) for p in error.problems]) from error
    return result, _warn_all(app, result, [warning] if warning else [])


def _warn_all(app: App, result: BatchResult, extra: list[str]) -> list[str]:
    """Says every warning of a write on stderr; returns those beyond the batch's own (for write_json)."""
    more = write_warnings(app.project, result, extra)
    for message in [*result.warnings, *more]:
        warn(message)
    return more


def _report(app: App, result: BatchResult, warnings: list[str], as_json: bool, text: str | None = None) -> None:
    if as_json:
        print_json(write_json(app.project, result, warnings))
    else:
        click.echo(text if text is not None else ("already applied: " if result.replayed else "") + result.summary())


def _single(ops_data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in ops_data.items() if value not in (None, ())}


body_options = [
    click.option("--body", help="The body text: what was found, why, and what follows. Markdown."),
    click.option(
        "--body-file",
        type=click.Path(path_type=Path, allow_dash=True),
        help="Read the body from this file ('-' for standard input).",
    ),
]


def with_body(function: Any) -> Any:
    for option in reversed(body_options):
        function = option(function)
    return function


allow_dangling_option = click.option(
    "--allow-dangling",
    is_flag=True,
    help="Keep a --ref to an id that does not exist (refused otherwise: a typo would lead nowhere).",
)


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
@click.option("--ref", "refs", multiple=True, help="Id of a related entry (repeatable); it must exist.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option(
    "--evidence",
    multiple=True,
    help="What confirms it (repeatable): an id, a file path, commit:SHA or run:ID; audit checks each.",
)
@click.option("--date", help="YYYY-MM-DD. Default: today.")
@click.option("--unique", is_flag=True, help="Refuse (exit 1) instead of warning when a near-duplicate exists.")
@allow_dangling_option
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
    evidence: tuple[str, ...],
    date: str | None,
    unique: bool,
    allow_dangling: bool,
    as_json: bool,
) -> None:
    """Add an entry and print its new id.

    The body comes from --body, --body-file, or standard input. A --ref to a retired id is kept with a
    warning naming its successor; to an id that does not exist, refused (exit 2) unless --allow-dangling.

    \b
    Example:
      memfiles add --kind friction --title "Chroma hangs with two writers" --area index \\
          --body "Two PersistentClients on one folder hang for minutes; route writes through one."
    """
    with errors_to_exit():
        project = app.project  # a wrong root is said before the body is awaited on standard input
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
                "evidence": list(evidence) or None,
                "date": date,
            }
        )
        op.setdefault("body", "")
        duplicates, guard = check_adds(project, [op], unique)
        result, warnings = _apply(app, [op], allow_dangling=allow_dangling, guard=guard)
        for message in duplicates:
            warn(message)
        _report(app, result, [*warnings, *duplicates], as_json, text=result.added[0])


@click.command("set")
@click.argument("entry_id", metavar="ID", shell_complete=complete_id)
@click.option("--title", "-t", help="New title (one line, at most 120 characters).")
@click.option("--area", "-a", help="New area.")
@click.option("--status", "-s", help="New status (one of the kind's; retire with `memfiles retire`).")
@with_body
@click.option("--ref", "refs", multiple=True, help="Replace the refs with these ids (repeatable); they must exist.")
@click.option("--tag", "tags", multiple=True, help="Replace the tags with these (repeatable).")
@click.option(
    "--evidence", multiple=True, help="Replace the evidence with these (repeatable): ids, paths, commit:SHA, run:ID."
)
@click.option("--section", help="Move the entry to this section of its file.")
@click.option("--file", "file_", help="Move the entry to this memory file (it keeps its id).")
@allow_dangling_option
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
    evidence: tuple[str, ...],
    section: str | None,
    file_: str | None,
    allow_dangling: bool,
    as_json: bool,
) -> None:
    """Update an entry in place; what is not given stays as it is.

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
                "evidence": list(evidence) or None,
                "section": section,
                "file": file_,
            }
        )
        result, warnings = _apply(app, [op], allow_dangling=allow_dangling)
        _report(app, result, warnings, as_json)


@click.command()
@click.argument("entry_id", metavar="ID", shell_complete=complete_id)
@click.option("--successor", help="Id of the entry that replaces it; old references will name it.")
@click.option("--reason", required=True, help="Why it is retired (kept on the entry).")
@json_option
@pass_app
def retire(app: App, entry_id: str, successor: str | None, reason: str, as_json: bool) -> None:
    """Retire an entry: it keeps its id and its text, gains status retired, a reason and a successor.

    Retiring a retired entry again replaces the reason and keeps the successor unless a new one is given.
    A successor that would lead back to the entry (D-001 -> D-002 -> D-001) is refused.

    \b
    Example:
      memfiles retire D-003 --successor D-009 --reason "Superseded by the journal design"
    """
    with errors_to_exit():
        op = _single({"op": "retire", "id": entry_id, "successor": successor, "reason": reason})
        result, warnings = _apply(app, [op])
        _report(app, result, warnings, as_json)


@click.command()
@click.argument("entry_id", metavar="ID", shell_complete=complete_id)
@click.option("--reason", required=True, help="Why it is removed (recorded in memory/pruned.jsonl).")
@json_option
@pass_app
def prune(app: App, entry_id: str, reason: str, as_json: bool) -> None:
    """Remove an entry from its file. Its text, the date and the reason go to memory/pruned.jsonl, where
    audit reports them, and its number is never used again.

    An id that check reports missing (deleted by hand) can be pruned too: the record then says so.

    \b
    Example:
      memfiles prune T-007 --reason "Duplicate of T-004"
    """
    with errors_to_exit():
        result, warnings = _apply(app, [{"op": "prune", "id": entry_id, "reason": reason}])
        _report(app, result, warnings, as_json)


@click.command()
@click.argument("entry_id", metavar="ID")
@click.option(
    "--at",
    "at",
    required=True,
    help="Which entry gets a new id: PATH:LINE as check prints it (PATH alone if it holds only one of them).",
)
@click.option(
    "--follow",
    multiple=True,
    help="Id of an entry whose references to ID (refs, successor, mentions in the body) move to the new id"
    " (repeatable). Others stay.",
)
@json_option
@pass_app
def renumber(app: App, entry_id: str, at: str, follow: tuple[str, ...], as_json: bool) -> None:
    """Give one of two entries that carry the same id (by hand, or from a merge) a fresh id.

    Nothing says which entry an old reference to ID meant, so references stay as they are unless their
    entry is named with --follow; the command then lists every reference to ID left, in the memory files
    and in code (@@ID), for you to check.

    \b
    Example:
      memfiles check                     # memory/frictions.md:40: F-001 is used twice; also at ...:12
      memfiles renumber F-001 --at memory/frictions.md:40 --follow D-007
    """
    with errors_to_exit():
        op = _single({"op": "renumber", "id": entry_id, "at": at, "follow": list(follow) or None})
        result, warnings = _apply(app, [op])
        _report(app, result, warnings, as_json)


def _load_json(path: Path) -> Any:
    text = read_input(path, what="batch")
    try:
        return jsonin.loads(text)
    except json.JSONDecodeError as error:
        name = "<stdin>" if str(path) == "-" else path
        raise ParseError(name, error.lineno, f"invalid JSON at column {error.colno}: {error.msg}") from error


@click.command("import")
@click.argument("file", type=click.Path(path_type=Path, allow_dash=True))
@click.option("--request-id", help="Idempotency key: a batch with an id already applied changes nothing.")
@click.option(
    "--unique", is_flag=True, help="Refuse the batch (exit 1) if an add has a near-duplicate. Off by default."
)
@allow_dangling_option
@json_option
@pass_app
def import_ops(app: App, file: Path, request_id: str | None, unique: bool, allow_dangling: bool, as_json: bool) -> None:
    """Apply a batch of ops from a JSON file ('-': standard input), all or nothing, through the same path
    as add.

    \b
    The file holds {"ops": [...]}; each op is one of
      {"op": "add", "kind", "title", "area", "body", ["status", "date", "file", "section", "refs", "tags"]}
      {"op": "update", "id", ...fields to change}
      {"op": "retire", "id", "reason", ["successor"]}
      {"op": "prune", "id", "reason"}
      {"op": "renumber", "id", "at", ["follow"]}
    Every problem is reported at once, each with the op's position and field; then no file is touched.
    A request id already applied to the same batch changes nothing; to a different batch, it is refused.

    \b
    Example:
      memfiles import notes.json --request-id landing-42 --json
    """
    with errors_to_exit():
        document = _load_json(file)
        try:
            ops, problems = check_ops(document, app.settings.schema, app.settings.wrap)
        except OpError as error:  # the document's shape, not an op: name the file
            raise ParseError("<stdin>" if str(file) == "-" else file, None, error.message) from error
        duplicates: list[str] = []
        guard = None
        if unique and not problems:
            raw = document.get("ops", []) if isinstance(document, dict) else document
            duplicates, guard = check_adds(app.project, raw, True, positions=True)
        result, warning = write_ops(
            app.project,
            ops,
            request_id=request_id,
            notify=notify_index,
            allow_dangling=allow_dangling,
            problems=problems,
            guard=guard,
        )
        warnings = _warn_all(app, result, [warning] if warning else [])
        _report(app, result, [*warnings, *duplicates], as_json)
