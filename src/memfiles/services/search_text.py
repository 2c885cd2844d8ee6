"""memsearch's output, in the standard library alone: the full command (cli/search.py) prints through
these, and so does the watcher when it answers the thin client (cli/quick_search.py) with the text to
print, so both paths print the same bytes for the same hits."""

from __future__ import annotations

import json
import re
from typing import Any


def snippet(body: str, query: str, width: int = 160) -> str:
    """The part of `body` around the first query word it holds, on one line."""
    flat = " ".join(body.split())
    words = [w for w in re.findall(r"\w[\w-]+", query.lower()) if len(w) > 2]
    at = min((flat.lower().find(w) for w in words if w in flat.lower()), default=0)
    start = max(0, at - width // 3)
    piece = flat[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")


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
