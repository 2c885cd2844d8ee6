"""memsearch's output, in the standard library alone: the full command (cli/search.py) and the thin
client (cli/quick_search.py) print through these, so both print the same bytes for the same hits."""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False  # not typing's: importing typing would cost the thin client time
if TYPE_CHECKING:
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


def split_values(values: tuple[str, ...] | list[str]) -> tuple[str, ...] | None:
    """Repeated options, each of which may also be a comma-separated list."""
    found = tuple(part.strip() for value in values for part in value.split(",") if part.strip())
    return found or None
