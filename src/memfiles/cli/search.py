"""The `memsearch` command: search the project's memory by meaning, exact ids and rare terms included."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from memfiles import jsonin
from memfiles.cli.app import JsonErrorsCommand, chroma_url_option, errors_to_exit, print_json, root_option, warn
from memfiles.cli.infile import STDIN, read_input
from memfiles.cli.quick_search import split_values
from memfiles.errors import ParseError
from memfiles.services.indexing.search_text import NO_HITS, hit_lines


def _batch(path: Path) -> list[tuple[Any, str, int]]:
    where = STDIN if str(path) == "-" else str(path)
    text = read_input(path, what='queries, one JSON object a line: {"id": ..., "query": "...", "k": 10}')
    queries = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = jsonin.loads(line)
        except json.JSONDecodeError as error:
            raise ParseError(where, number, f"invalid JSON: {error.msg}") from error
        if not isinstance(item, dict) or not isinstance(item.get("query"), str):
            raise ParseError(where, number, 'expected {"id": ..., "query": "...", "k": 10}')
        unknown = sorted(set(item) - {"id", "query", "k"})
        if unknown:  # as import refuses a key an op does not take: a filter here would be ignored in silence
            raise ParseError(where, number, f"a query line takes id, query and k, not {', '.join(unknown)}")
        if not item["query"].strip():
            raise ParseError(where, number, "the query is empty: give a query")
        k = item.get("k", 10)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ParseError(where, number, "k must be a positive whole number")
        queries.append((number if item.get("id") is None else item["id"], item["query"], k))
    return queries


def _declared_options(command: Any) -> Any:
    """The options of cli/memsearch_options.py as click options (the thin client reads the same table),
    and --chroma-url, the setting's own flag."""
    from memfiles.cli.memsearch_options import MODES, OPTIONS

    shapes: dict[str, dict[str, Any]] = {
        "int": {"type": click.IntRange(min=1), "show_default": True},
        "multi": {"multiple": True},
        "text": {},
        "choice": {"type": click.Choice(list(MODES)), "show_default": True},
        "flag": {"is_flag": True},
        "file": {"type": click.Path(dir_okay=False, path_type=Path, allow_dash=True)},
    }
    for name, flags, shape, default, help_text, _thin in reversed(OPTIONS):
        if name == "mode":  # --chroma-url sits between --mode and --json in --help, as it always did
            command = chroma_url_option(command)
        extra = {"default": default} if default is not None else {}
        command = click.option(*flags, name, help=help_text, **shapes[shape], **extra)(command)
    return command


class _SearchCommand(JsonErrorsCommand):
    """memsearch: --batch prints JSON lines, so a usage error with --batch is printed as JSON too."""

    json_lines_options = ("--batch",)


@click.command(cls=_SearchCommand, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.argument("query", required=False)
@_declared_options
@root_option
def memsearch(
    query: str | None,
    k: int,
    kind: tuple[str, ...],
    area: tuple[str, ...],
    status: tuple[str, ...],
    path_glob: str | None,
    since: str | None,
    batch_file: Path | None,
    mode: str,
    chroma_url: str | None,
    as_json: bool,
    root: Path | None,
) -> None:
    """Search the project's memory for the entries closest in meaning to QUERY.

    An id (F-014, or f-014) comes first; flags and error strings are matched verbatim as well as by
    meaning. Each hit has a score in [0, 1] that means the same for every query (0.5 and above: most
    likely about what was asked; see docs/json.md). Filters of one kind combine with OR
    (--kind F --kind D), of different kinds with AND. Exit 0 with no hits when nothing matches; 2 for
    an empty query or when there is no index yet (run memfiles backfill).

    \b
    Examples:
      memsearch "coverage aggregation"
      memsearch "why two writers hang" --kind friction --kind lesson --since 2026-01-01 --json
      memsearch --batch queries.jsonl > hits.jsonl
    """
    from memfiles.config import load_settings
    from memfiles.format.validate import is_date
    from memfiles.limits import cut_query
    from memfiles.services.indexing.index_client import connect, leave_watcher
    from memfiles.services.indexing.search_request import request_filters
    from memfiles.services.indexing.search_text import pruned_notes

    # --batch answers in JSON lines whatever the flags, so its refusals are JSON too
    with errors_to_exit(as_json or batch_file is not None, one_line=batch_file is not None):
        if (query is None) == (batch_file is None):
            raise click.UsageError("give a QUERY or --batch FILE")
        if query is not None and not query.strip():
            raise click.UsageError("the query is empty: give a query")
        if since is not None and not is_date(since):
            raise click.BadParameter(f"{since!r} is not a date (YYYY-MM-DD)", param_hint="--since")
        settings = load_settings(root, index_url=chroma_url)
        # kinds by name or prefix, statuses in any case, an unknown one refused (as list does): the rule the
        # watcher and the in-process plain path apply too
        wanted = {"kind": split_values(kind), "area": split_values(area), "status": split_values(status)}
        filters = request_filters(settings.schema, {**wanted, "path": path_glob, "since": since})
        asked = _batch(batch_file) if batch_file is not None else [(None, query or "", k)]
        cuts = [cut_query(text) for _, text, _ in asked]  # a query past QUERY_LIMIT: its start, and a warning
        items = [(item_id, text, n) for (item_id, _, n), (text, _) in zip(asked, cuts, strict=True)]
        client = connect(settings)
        results = client.search([(q, n) for _, q, n in items], filters, mode)
        prefixes = settings.schema.prefixes
        noted = [
            [*([said] if said else []), *pruned_notes(settings.memory_dir, prefixes, text, hits)]
            for (_, text, _), (_, said), hits in zip(items, cuts, results, strict=True)
        ]
        if batch_file is None:  # a pruned id asked for: said, not only unrelated hits on its digits
            client.warnings = [*client.warnings, *noted[0]]
        for message in client.warnings:
            warn(message)
        started = leave_watcher(settings, client, "so that the next search is fast")
        if started is not None:
            click.echo(f"memfiles: {started}", err=True)
        if batch_file is not None:
            for (item_id, text, _), hits, notes in zip(items, results, noted, strict=True):
                said = [*client.warnings, *notes]  # each line as a single query's JSON carries them
                line = json.dumps({"id": item_id, "query": text, "hits": hits, "warnings": said}, ensure_ascii=False)
                sys.stdout.write(line + "\n")
            return
    hits = results[0]
    query = items[0][1]  # as searched (cut at QUERY_LIMIT, said in the warnings)
    if as_json:
        print_json({"query": query, "hits": hits, "warnings": list(client.warnings)})
        return
    if not hits:
        click.echo(NO_HITS, err=True)
    for line in hit_lines(hits, query):
        click.echo(line)
