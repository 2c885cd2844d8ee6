"""Every promise of the format, checked over a set of files; problems are collected, never raised."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from memfiles.format.ids import FULL_ID_RE, RETIRED, Schema, canonical_id
from memfiles.format.model import MemoryFile
from memfiles.format.render import render
from memfiles.format.toc import INDEX_END, INDEX_START_PREFIX


@dataclass(frozen=True, order=True)
class Problem:
    """One broken promise, at `path:line`."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def is_date(text: str) -> bool:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


def body_problem(body: str) -> str | None:
    """Why `body` cannot stand in an entry (it would end the entry or break the file), or None."""
    from memfiles.format.parse import ENTRY_HEADING_RE, LOOKS_LIKE_ENTRY_RE, Fence

    fence = Fence()
    for number, line in enumerate(body.split("\n"), start=1):
        if fence.feed(line, number):
            continue
        if line.startswith("## ") or line.rstrip() == "##":
            return f"body line {number} is a level-2 heading, which would end the entry: use ### or deeper"
        if ENTRY_HEADING_RE.match(line) or LOOKS_LIKE_ENTRY_RE.match(line):
            return f"body line {number} looks like an entry heading ('### ID: ...'): reword it"
        if line.strip().startswith(INDEX_START_PREFIX) or line.strip() == INDEX_END:
            return f"body line {number} is a generated-index marker"
    if fence.marker is not None:
        return f"body line {fence.opened_at} opens a code fence {fence.marker} that is never closed"
    return None


def first_difference(a: str, b: str) -> int:
    """The 1-based line where two texts first differ."""
    for number, (left, right) in enumerate(zip(a.split("\n"), b.split("\n"), strict=False), start=1):
        if left != right:
            return number
    return min(a.count("\n"), b.count("\n")) + 1


def validate_file(path: str, memory: MemoryFile, text: str, schema: Schema) -> list[Problem]:
    """The problems of one file that can be seen without the others."""
    problems: list[Problem] = []

    def add(line: int, message: str) -> None:
        problems.append(Problem(path, line, message))

    for entry in memory.entries:
        kind = schema.kind_of(entry.id)
        if kind is None:
            known = ", ".join(f"{k.prefix} ({k.name})" for k in schema.kinds)
            add(entry.line, f"{entry.id}: unknown id prefix {entry.prefix!r}; known: {known}")
        else:
            if entry.id != canonical_id(entry.id, schema.id_width):
                add(entry.line, f"{entry.id}: write the id as {canonical_id(entry.id, schema.id_width)}")
            if entry.status not in kind.statuses:
                add(entry.line, f"{entry.id}: status {entry.status!r} is not one of {', '.join(kind.statuses)}")
        if not is_date(entry.date):
            add(entry.line, f"{entry.id}: date {entry.date!r} is not a date (YYYY-MM-DD)")
        if len(entry.title) > schema.title_limit:
            add(entry.line, f"{entry.id}: title is {len(entry.title)} characters; at most {schema.title_limit}")
        if not entry.body.strip():
            add(entry.line, f"{entry.id}: body is empty; an entry's body says what was found and why")
        elif len(entry.body) > schema.body_limit:
            add(entry.line, f"{entry.id}: body is {len(entry.body)} characters; at most {schema.body_limit}")
        for ref in (*entry.refs, *(x for x in (entry.successor,) if x)):
            if not FULL_ID_RE.match(ref):
                add(entry.line, f"{entry.id}: {ref!r} is not an id (refs and successor name ids like D-476)")
        if entry.successor and entry.status != RETIRED:
            add(entry.line, f"{entry.id}: has a successor but status {entry.status!r}; only retired entries have one")
        if entry.status == RETIRED and not entry.reason:
            add(entry.line, f"{entry.id}: retired without a reason; give one with memfiles retire --reason")
    if memory.manual is not None:
        for offset, line in enumerate(memory.manual.split("\n")[1:], start=1):
            if line.startswith("### ") and FULL_ID_RE.match(line[4:].split(":")[0]):
                add(memory.manual_line + offset, "an entry heading inside ## Manual is not an entry: move it above")
    canonical = render(memory, schema)
    if canonical != text:
        line = first_difference(text, canonical)
        if _index_block(text) != _index_block(canonical):
            add(line, "the generated index is missing or stale: run memfiles fmt")
        else:
            add(line, "not in canonical form: run memfiles fmt")
    return problems


def _index_block(text: str) -> str | None:
    start = text.find(INDEX_START_PREFIX)
    if start < 0:
        return None
    end = text.find(INDEX_END, start)
    return text[start : end + len(INDEX_END)] if end >= 0 else None


def validate_ids(located: Iterable[tuple[str, MemoryFile]]) -> list[Problem]:
    """Ids used twice anywhere in the project: each place is named."""
    first: dict[str, tuple[str, int]] = {}
    problems: list[Problem] = []
    for path, memory in located:
        for entry in memory.entries:
            if entry.id in first:
                where = f"{first[entry.id][0]}:{first[entry.id][1]}"
                problems.append(Problem(path, entry.line, f"{entry.id} is used twice; also at {where}"))
            else:
                first[entry.id] = (path, entry.line)
    return problems
