"""memsearch's output, in the standard library alone: the full command (cli/search.py) prints through
these, and so does the watcher when it answers the thin client (cli/quick_search.py) with the text to
print, so both paths print the same bytes for the same hits."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any


def snippet(body: str, query: str, width: int = 160) -> str:
    """The part of `body` around the first query word it holds, on one line."""
    flat = " ".join(body.split())
    words = [w for w in re.findall(r"\w[\w-]+", query.lower()) if len(w) > 2]
    at = min((flat.lower().find(w) for w in words if w in flat.lower()), default=0)
    start = max(0, at - width // 3)
    piece = flat[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")


PRUNED_NOTES = 3  # at most this many ids named in one query are looked up in the ledger


def pruned_notes(memory_dir: Path, prefixes: Any, query: str, hits: list[dict[str, Any]]) -> list[str]:
    """For each id of a known kind (`prefixes`) the query names that no hit carries and the pruned ledger
    holds: a warning saying so (a search for a pruned id gave unrelated hits matched on its digits, and no
    word of the prune). `UTF-8` or `SHA-256` is no id unless U or SHA is a kind's prefix; the ledger is read
    once per change of the file."""
    from memfiles.format.ids import id_key, id_keys_in

    found = {id_key(hit["entry"]["id"]) for hit in hits}
    named = [key for key in dict.fromkeys(id_keys_in(query)) if key is not None and key[0] in prefixes]
    missing = [key for key in named if key not in found][:PRUNED_NOTES]
    if not missing:
        return []
    records = _pruned(memory_dir / "pruned.jsonl")
    notes = []
    for key in missing:
        record = records.get(key)
        if record is not None:
            reason = f" ({record['reason']})" if record.get("reason") else ""
            notes.append(f"{record['id']} was pruned{reason}: memfiles show {record['id']} gives it as it was")
    return notes


_PRUNED: dict[str, tuple[tuple[int, int], dict[Any, dict[str, Any]]]] = {}  # path -> (mtime, size), records


def _pruned(path: Path) -> dict[Any, dict[str, Any]]:
    """The pruned ledger's records by id key, read again only when the file changed (a watcher answers many
    searches); {} when there is none or it does not read (check names a broken ledger)."""
    from memfiles.errors import ParseError
    from memfiles.format.ids import id_key
    from memfiles.store.pruned_ledger import Ledger

    try:
        stat = path.stat()
    except OSError:
        return {}
    stamp = (stat.st_mtime_ns, stat.st_size)
    known = _PRUNED.get(str(path))
    if known is not None and known[0] == stamp:
        return known[1]
    try:
        records = {id_key(str(record["id"])): record for record in Ledger(path).read()}
    except (ParseError, OSError):
        records = {}
    _PRUNED[str(path)] = (stamp, records)
    return records


def json_text(value: Any) -> str:
    """One JSON object as every --json output prints it (cli/app.py print_json), newline included."""
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


def hit_lines(hits: list[dict[str, Any]], query: str) -> list[str]:
    """The text form of the hits: three lines each (id and title; kind, place and score; snippet)."""
    lines = []
    for hit in hits:
        entry = hit["entry"]
        lines.append(f"{entry['id']}  {entry['title']}")
        where = f"{entry['path']}:{entry['line']}"
        lines.append(f"    {entry['kind']}/{entry['area']}/{entry['status']}  {where}  score {hit['score']:.2f}")
        lines.append(f"    {snippet(entry['body'], query)}")
    return lines


NO_HITS = "no entries match"  # on stderr: nothing matched is an answer, not output


def rendered(
    query: str, hits: list[dict[str, Any]], as_json: bool, warnings: list[str], notes: tuple[str, ...] = ()
) -> tuple[str, str]:
    """(stdout, stderr) of a single memsearch query, as the full command prints them: its warnings, then
    its notes (a watcher it started), then "no entries match" when nothing did."""
    err = "".join(f"memfiles: warning: {message}\n" for message in warnings)
    err += "".join(f"memfiles: {note}\n" for note in notes)
    if as_json:
        return json_text({"query": query, "hits": hits, "warnings": list(warnings)}), err
    if not hits:
        err += NO_HITS + "\n"
    return "".join(line + "\n" for line in hit_lines(hits, query)), err
