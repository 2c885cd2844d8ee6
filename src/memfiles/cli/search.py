"""The `memsearch` command: search the project's memory by meaning, exact ids and rare terms included."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from memfiles.cli.app import CommandError, errors_to_exit, print_json, root_option
from memfiles.errors import ParseError


def _batch(path: Path) -> list[tuple[str, str, int]]:
    text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    queries = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise ParseError(path, number, f"invalid JSON: {error.msg}") from error
        if not isinstance(item, dict) or not isinstance(item.get("query"), str):
            raise ParseError(path, number, 'expected {"id": ..., "query": "...", "k": 10}')
        k = item.get("k", 10)
        if not isinstance(k, int) or k < 1:
            raise ParseError(path, number, "k must be a positive whole number")
        queries.append((item.get("id", number), item["query"], k))
    return queries


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.argument("query", required=False)
@click.option("-k", "k", default=10, show_default=True, help="How many hits.")
@click.option("--kind", help="Only this kind (decision, friction, ... or its prefix).")
@click.option("--area", help="Only this area.")
@click.option("--status", help="Only this status.")
@click.option("--path", "path_glob", help="Only entries in files matching this glob, e.g. 'pkg/*'.")
@click.option("--since", help="Only entries dated on or after YYYY-MM-DD.")
@click.option(
    "--batch",
    "batch_file",
    type=click.Path(dir_okay=False, path_type=Path, allow_dash=True),
    help='JSON lines {"id", "query", "k"} in; one {"id", "hits"} line out per query.',
)
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "lexical", "dense"]),
    default="hybrid",
    show_default=True,
    help="Ranking: fused (default), BM25 only, or embeddings only.",
)
@click.option("--chroma-url", envvar="MEMFILES_CHROMA_URL", help="Use the Chroma server at this URL.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
@root_option
def memsearch(
    query: str | None,
    k: int,
    kind: str | None,
    area: str | None,
    status: str | None,
    path_glob: str | None,
    since: str | None,
    batch_file: Path | None,
    mode: str,
    chroma_url: str | None,
    as_json: bool,
    root: Path | None,
) -> None:
    """Search the project's memory for the entries closest in meaning to QUERY.

    An id (F-014) comes first; flags and error strings are matched verbatim as well as by meaning.
    Exit 0 with no hits when nothing matches; 2 when there is no index yet (run memfiles backfill).

    \b
    Examples:
      memsearch "coverage aggregation"
      memsearch "why two writers hang" --kind friction --since 2026-01-01 --json
      memsearch --batch queries.jsonl > hits.jsonl
    """
    from memfiles.config import load_settings
    from memfiles.format.validate import is_date
    from memfiles.index.search import Filters
    from memfiles.services.index import search

    if (query is None) == (batch_file is None):
        raise click.UsageError("give a QUERY or --batch FILE")
    if since is not None and not is_date(since):
        raise click.BadParameter(f"{since!r} is not a date (YYYY-MM-DD)", param_hint="--since")
    with errors_to_exit():
        settings = load_settings(root, index_url=chroma_url)
        if kind is not None:
            found = settings.schema.kind(kind)
            if found is None:
                raise CommandError(f"unknown kind {kind!r}")
            kind = found.name
        filters = Filters(kind=kind, area=area, status=status, path=path_glob, since=since)
        if batch_file is not None:
            items = _batch(batch_file)
            results = search(settings, [(q, n) for _, q, n in items], filters, mode)
            for (item_id, _, _), hits in zip(items, results, strict=True):
                sys.stdout.write(json.dumps({"id": item_id, "hits": [h.as_json() for h in hits]}, ensure_ascii=False))
                sys.stdout.write("\n")
            return
        assert query is not None
        hits = search(settings, [(query, k)], filters, mode)[0]
    if as_json:
        print_json([hit.as_json() for hit in hits])
        return
    if not hits:
        click.echo("no entries match", err=True)
    for hit in hits:
        click.echo(f"{hit.id}  {hit.title}")
        click.echo(f"    {hit.kind}/{hit.area}/{hit.status}  {hit.path}:{hit.line}  score {hit.score:.3f}")
        click.echo(f"    {hit.snippet(query)}")
