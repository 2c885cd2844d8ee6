"""Every promise of the format, checked over a set of files; findings are collected, never raised.

A finding is the contract's Finding (code, severity, path, line, message, id, target); its code is one
of contract.FINDING_CODES, the one registry of codes and severities, which
docs/json.md documents.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from memfiles.contract import FINDING_CODES, Finding, entry_ref
from memfiles.format.grammar import (
    BODY_SEPARATOR,
    BOM,
    FULL_ID_RE,
    Fence,
    conflict_marker,
    heading_at_margin,
    line_endings,
    newline_of,
    outside_fences,
    section_name,
    split_lines,
)
from memfiles.format.ids import RETIRED, Schema, canonical_id, id_key
from memfiles.format.model import Entry, MemoryFile
from memfiles.format.render import render
from memfiles.format.toc import INDEX_END, INDEX_START_PREFIX
from memfiles.format.wrap import stray_control


def finding(
    code: str,
    path: str | None,
    line: int | None,
    message: str,
    entry_id: str | None = None,
    target: dict[str, object] | None = None,
    **detail: object,
) -> Finding:
    """A Finding of one of contract.FINDING_CODES, at its registered severity."""
    return Finding(code, FINDING_CODES[code], path, line, message, entry_id, target, dict(detail))


def finding_order(item: Finding) -> tuple[str, int, str, str]:
    return (item.path or "", item.line or 0, item.code, item.message)


def is_date(text: str) -> bool:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


def body_problem(body: str, schema: Schema | None = None) -> str | None:
    """Why `body` cannot stand in an entry (it would end the entry or break the file), or None."""
    grammar = (schema or Schema()).grammar
    # A heading indented by up to 3 spaces is a heading all the same (CommonMark), and the lint fixer
    # (md023) moves it to the margin: judge each line as it will stand. A section is a `##` line at the
    # margin only: the write path demotes every heading of level 2, so one left indented is no heading
    # (in an HTML block, say), and the fixer leaves it where it is.
    lines = [heading_at_margin(line) for line in body.split("\n")]
    conflict = conflict_marker(body.split("\n"))
    if conflict is not None:
        return (
            f"body line {conflict} opens a git conflict (<<<<<<< ... >>>>>>>): resolve the merge it came from;"
            " to show one as an example, indent its marker lines by a space"
        )
    given = body.split("\n")
    fence = Fence()
    for number, line in enumerate(lines, start=1):
        if fence.feed(line, number):
            continue
        if section_name(given[number - 1]) is not None:
            return f"body line {number} is a level-2 heading, which would end the entry: use ### or deeper"
        if grammar.entry_heading(line) or grammar.broken_heading(line):
            return f"body line {number} looks like an entry heading ('### ID: ...'): reword it"
        if grammar.stray_heading(lines, number - 1):
            return f"body line {number} is a heading of an id with metadata under it, like an entry: reword it"
        if grammar.unknown_entry(lines, number - 1):
            return f"body line {number} is an entry heading with metadata under it: reword it"
        if line.strip().startswith(INDEX_START_PREFIX) or line.strip() == INDEX_END:
            return f"body line {number} is a generated-index marker"
    if fence.marker is not None and not fence.quoted:  # a quote's fence ends with the quote
        return f"body line {fence.opened_at} opens a code fence {fence.marker} that is never closed"
    return None


def first_difference(a: list[str], b: list[str]) -> int:
    """The 1-based line where two lists of lines first differ."""
    for number, (left, right) in enumerate(zip(a, b, strict=False), start=1):
        if left != right:
            return number
    return min(len(a), len(b)) + 1 if len(a) != len(b) else 1


def validate_file(path: str, memory: MemoryFile, text: str, schema: Schema) -> list[Finding]:
    """The findings of one file that can be seen without the others."""
    found: list[Finding] = []
    grammar = schema.grammar
    lines = split_lines(text[len(BOM) :] if text.startswith(BOM) else text)
    manual_index = memory.manual_line - 1 if memory.manual is not None else len(lines)

    for number, _line in outside_fences(lines[:manual_index]):
        unknown = grammar.unknown_entry(lines, number - 1)
        if unknown:
            known = ", ".join(f"{k.prefix} ({k.name})" for k in schema.kinds)
            message = f"{unknown} is not read as an entry: its prefix is not a known kind's ({known})"
            found.append(finding("unknown-prefix", path, number, message, unknown))

    for entry in memory.entries:
        found.extend(_entry_findings(path, entry, schema))

    if memory.manual is not None:
        for number, line in outside_fences(lines[manual_index + 1 :], start=memory.manual_line + 1):
            if grammar.entry_heading(line) or grammar.broken_heading(line):
                message = "an entry heading inside ## Manual is not an entry: move it above"
                found.append(finding("entry-in-manual", path, number, message))

    found.extend(_text_findings(path, text))
    canonical = render(memory, schema)
    if canonical != text:
        canonical_lines = split_lines(canonical[len(BOM) :] if memory.bom else canonical)
        if canonical_lines != lines:
            line = first_difference(lines, canonical_lines)
            if _index_block(lines) != _index_block(canonical_lines):
                found.append(finding("stale-index", path, line, "the generated index is missing or stale: run fmt"))
            elif line <= len(canonical_lines) and canonical_lines[line - 1] == BODY_SEPARATOR:
                message = f"a body that opens with a list or an indented line needs {BODY_SEPARATOR} above it"
                found.append(finding("not-canonical", path, line, f"{message}: run memfiles fmt"))
            else:
                found.append(finding("not-canonical", path, line, "not in canonical form: run memfiles fmt"))
        elif not any(item.code in ("mixed-line-endings", "stray-cr") for item in found):
            found.append(finding("not-canonical", path, 1, "line endings differ from canonical: run memfiles fmt"))
    return found


def _entry_findings(path: str, entry: Entry, schema: Schema) -> list[Finding]:
    found: list[Finding] = []

    def add(code: str, message: str, key: str | None = None, **detail: object) -> None:
        """A finding about the entry, at the line of its metadata `key` when it is about that value."""
        line = entry.line_of(key) if key else entry.line
        found.append(finding(code, path, line, f"{entry.id}: {message}", entry.id, **detail))

    kind = schema.kind_of(entry.id)
    if kind is not None:
        if entry.id != canonical_id(entry.id, schema.id_width):
            add("id-format", f"write the id as {canonical_id(entry.id, schema.id_width)}")
        if entry.status not in kind.statuses:
            add("bad-status", f"status {entry.status!r} is not one of {', '.join(kind.statuses)}", "status")
    if not is_date(entry.date):
        add("bad-date", f"date {entry.date!r} is not a date (YYYY-MM-DD)", "date")
    if len(entry.title) > schema.title_limit:
        add(
            "title-too-long",
            f"title is {len(entry.title)} characters; at most {schema.title_limit}",
            length=len(entry.title),
            limit=schema.title_limit,
        )
    if not entry.body.strip():
        add("body-empty", "body is empty; an entry's body says what was found and why")
    elif len(entry.body) > schema.body_limit:
        add(
            "body-too-long",
            f"body is {len(entry.body)} characters; at most {schema.body_limit}",
            length=len(entry.body),
            limit=schema.body_limit,
        )
    for ref in (*entry.refs, *(x for x in (entry.successor,) if x)):
        if not FULL_ID_RE.match(ref):
            where = "refs" if ref in entry.refs else "successor"
            add("bad-ref", f"{ref!r} is not an id (refs and successor name ids like D-476)", where)
    # what the write path refuses, written by hand: a reference to the entry itself, one id named twice
    seen: dict[object, str] = {}
    for ref in entry.refs:
        key = id_key(ref)
        if key is None:
            continue
        if key == id_key(entry.id):
            add("bad-ref", f"refs names {ref}, the entry itself", "refs")
        elif key in seen:
            add("bad-ref", f"refs names {seen[key]} twice ({ref})", "refs")
        seen.setdefault(key, ref)
    if entry.successor and id_key(entry.successor) == id_key(entry.id):
        add("bad-ref", f"successor {entry.successor} is the entry itself", "successor")
    if entry.successor and entry.status != RETIRED:
        add(
            "successor-not-retired",
            f"has a successor but status {entry.status!r}; only retired entries have one",
            "successor",
        )
    if entry.status == RETIRED and not entry.reason:
        add("retired-without-reason", "retired without a reason; give one with memfiles retire --reason")
    return found


def _text_findings(path: str, text: str) -> list[Finding]:
    """Line endings and byte-order marks: what an editor hides and a Markdown viewer does not."""
    found: list[Finding] = []
    endings = line_endings(text)
    if endings.mixed:
        first = "CRLF" if newline_of(text) == "\r\n" else "LF"
        other, line = ("LF", endings.first_lf) if first == "CRLF" else ("CRLF", endings.first_crlf)
        message = f"mixed line endings: the file's lines end in {first} but this one in {other}: run memfiles fmt"
        found.append(finding("mixed-line-endings", path, line, message))
    if endings.stray_cr is not None:
        line = text.split("\n")[endings.stray_cr - 1]
        if "\r" in line.rstrip("\r"):
            message = "a carriage return (CR) inside the line: viewers break the line there; delete it"
        else:
            message = "more than one carriage return (CR) ends the line: run memfiles fmt"
        found.append(finding("stray-cr", path, endings.stray_cr, message))
    control = stray_control(text.replace("\r", ""))  # carriage returns are stray-cr's
    if control is not None:
        message = f"{control[1]} inside the text: viewers do not show it; delete it"
        found.append(finding("control-character", path, control[0], message))
    stray_bom = text.find(BOM, 1)
    if stray_bom >= 0:
        line = text.count("\n", 0, stray_bom) + 1
        message = "an invisible byte-order mark (U+FEFF) inside the file: delete it (it can hide a heading)"
        found.append(finding("stray-bom", path, line, message))
    return found


def _index_block(lines: list[str]) -> list[str] | None:
    starts = [n for n, line in enumerate(lines) if line.strip().startswith(INDEX_START_PREFIX)]
    if not starts:
        return None
    ends = [n for n, line in enumerate(lines) if n > starts[0] and line.strip() == INDEX_END]
    return lines[starts[0] : ends[0] + 1] if ends else None


def validate_ids(located: Iterable[tuple[str, MemoryFile]]) -> list[Finding]:
    """Ids used twice anywhere in the project: each place is named, the other as the target."""
    first: dict[object, tuple[str, int, str, str, str]] = {}
    found: list[Finding] = []
    for path, memory in located:
        for entry in memory.entries:
            key = id_key(entry.id) or entry.id  # `### D-2:` and `### D-002:` are one id twice
            if key in first:
                other_path, other_line, other_title, other_id, other_status = first[key]
                spelled = "" if other_id == entry.id else f" (as {other_id})"
                message = f"{entry.id} is used twice; also at {other_path}:{other_line}{spelled}"
                target = entry_ref(other_id, title=other_title, status=other_status, path=other_path, line=other_line)
                found.append(finding("duplicate-id", path, entry.line, message, entry.id, target))
            else:
                first[key] = (path, entry.line, entry.title, entry.id, entry.status)
    return found
