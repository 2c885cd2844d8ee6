"""Text to MemoryFile. Strict where structure matters (headings, metadata), verbatim everywhere else.

What is a heading, an id, a fence or a line end is format/grammar.py's to say; this module walks the
lines with it. Errors are ParseError(path, line, message) with the 1-based line where the file stopped
making sense. Given a `problems` list, parse goes on past the errors a reader can step over (an entry's
heading or metadata line) and collects them all, for `check`: the entry they broke is left out of what
it returns. A conflict, a broken generated index or an unclosed fence still raises: past one of those,
nothing of the file can be read as it was meant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from memfiles.errors import ParseError
from memfiles.format.grammar import (
    BOM,
    CONFLICT_FIX,
    META_RE,
    Fence,
    conflict_marker,
    is_manual_name,
    newline_of,
    section_name,
    split_lines,
    without_separator,
)
from memfiles.format.ids import Schema
from memfiles.format.model import LIST_KEYS, META_KEYS, REQUIRED_KEYS, Entry, MemoryFile, Section
from memfiles.format.toc import INDEX_END, INDEX_START_PREFIX


@dataclass
class _EntryDraft:
    id: str
    title: str
    line: int
    meta: dict[str, str] = field(default_factory=dict)
    body: list[str] = field(default_factory=list)
    meta_lines: dict[str, int] = field(default_factory=dict)
    broken: bool = False  # collecting problems: one was found in this entry, which is left out
    said: set[str] = field(default_factory=set)  # required keys a problem named already (`- Area:`)
    unknown_said: bool = False  # an unknown key was named: the next ones are most likely the same mistake


@dataclass
class _SectionDraft:
    name: str | None
    line: int
    intro: list[str] = field(default_factory=list)
    entries: list[_EntryDraft] = field(default_factory=list)


def _trim(lines: list[str]) -> str:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[start:end])


def _body(lines: list[str]) -> str:
    """An entry's body lines as its text: trimmed, without the separator canonical form may put above it."""
    return _trim(without_separator(_trim(lines)).split("\n"))


# A metadata line with a key in another case (`- Status: open`): named as such, not read as body text
# (after which the entry "lacked" the status it had).
_CASED_META = re.compile(r"^-[ \t]+([A-Za-z][A-Za-z-]*):")


def parse(
    text: str, path: str | Path | None = None, schema: Schema | None = None, problems: list[ParseError] | None = None
) -> MemoryFile:
    """Parse a memory file; raises ParseError naming the line for anything structurally wrong.

    `schema` says which id prefixes make entries (the default kinds when None). `problems`: every error
    an entry's heading or metadata holds is added to it instead of raised, and the file without those
    entries is returned (check's view of a broken file; nothing may be written from it).
    """

    def fail(lineno: int, message: str, draft: _EntryDraft | None = None) -> None:
        error = ParseError(path, lineno, message)
        if problems is None:
            raise error
        if draft is not None:
            draft.broken = True
        problems.append(error)

    grammar = (schema or Schema()).grammar
    newline = newline_of(text)
    lines = split_lines(text)
    # A byte-order mark before the first text (blank lines aside) is the file's: render writes it first.
    first = next((n for n, line in enumerate(lines) if line.strip()), None)
    bom = first is not None and lines[first].startswith(BOM)
    if bom:
        lines[first] = lines[first][len(BOM) :]
    marker = conflict_marker(lines)
    if marker is not None:  # a file mid-merge: nothing of it is read as entries, so nothing is written over it
        raise ParseError(path, marker, CONFLICT_FIX)
    title: str | None = None
    preamble: list[str] = []
    sections: list[_SectionDraft] = [_SectionDraft(None, 0)]
    entry: _EntryDraft | None = None
    in_meta = False
    seen_index = False
    started = False
    fence = Fence()
    manual: str | None = None
    manual_line = 0
    i = 0
    n = len(lines)

    while i < n:
        line = lines[i]
        lineno = i + 1
        if fence.feed(line, lineno):
            in_meta = False
            _body_target(entry, sections, preamble, seen_index).append(line)
            i += 1
            continue
        if not started:
            if not line.strip():
                i += 1
                continue
            started = True
            if line.startswith("# "):
                title = line[2:].strip()
                i += 1
                continue
        if line.strip().startswith(INDEX_START_PREFIX):
            if seen_index:
                raise ParseError(path, lineno, "a second generated index; a file has one, at the top")
            if entry is not None or len(sections) > 1 or sections[0].intro:
                raise ParseError(path, lineno, "the generated index must come before the first section and entry")
            end = i + 1
            while end < n and lines[end].strip() != INDEX_END:
                end += 1
            if end >= n:
                raise ParseError(path, lineno, f"generated index opened here is never closed with {INDEX_END}")
            seen_index = True
            i = end + 1
            continue
        if line.strip() == INDEX_END:  # its start marker deleted by hand: the stale index above would stay
            raise ParseError(
                path,
                lineno,
                f"{INDEX_END} closes no generated index (its start marker is gone): delete the old index"
                " down to this line, and the next write puts a new one at the top",
            )
        stray = grammar.stray_heading(lines, i)
        if stray:
            fail(lineno, stray)
            entry, in_meta = _EntryDraft("", "", lineno, broken=True), True  # its metadata goes with it
            i += 1
            continue
        name = section_name(line)
        if is_manual_name(name):
            manual = "\n".join(lines[i:])
            manual_line = lineno
            break
        if name is not None:
            entry = None
            in_meta = False
            sections.append(_SectionDraft(name, lineno))
            i += 1
            continue
        heading = grammar.entry_heading(line)
        if heading:
            entry = _EntryDraft(heading[0], heading[1], lineno)
            sections[-1].entries.append(entry)
            in_meta = True
            i += 1
            continue
        broken = grammar.broken_heading(line)
        if broken:
            fail(lineno, f"broken entry heading: {broken}")
            entry, in_meta = _EntryDraft("", "", lineno, broken=True), True  # its metadata goes with it
            i += 1
            continue
        if entry is not None and in_meta:
            if not line.strip():
                if entry.meta:
                    in_meta = False
                i += 1
                continue
            meta = META_RE.match(line)
            cased = None if meta else _CASED_META.match(line)
            if cased and cased.group(1).lower() in META_KEYS:  # `- Status: open`: a key the format has, cased
                key = cased.group(1)
                if entry.id:  # not the metadata of a heading already reported
                    fail(
                        lineno,
                        f"{entry.id}: metadata keys are lower case: write '- {key.lower()}:' for '- {key}:'",
                        entry,
                    )
                    entry.said.add(key.lower())
                i += 1
                continue
            if not meta:
                if not entry.meta and not entry.broken:
                    fail(lineno, f"{entry.id} has no metadata: expected '- date: YYYY-MM-DD' after its heading", entry)
                    entry.said.update(REQUIRED_KEYS)
                in_meta = False  # the body starts without the blank line canonical form puts before it
                entry.body.append(line)
                i += 1
                continue
            key, value = meta.group(1), meta.group(2)
            problem = None
            if key not in META_KEYS:  # once per entry: `- pro: fast`, `- con: ...` is a body missing its blank line
                if not entry.unknown_said:
                    problem = f"{entry.id}: unknown metadata key {key!r} (known: {', '.join(META_KEYS)})"
                entry.unknown_said = True
            elif key in entry.meta:
                problem = f"{entry.id}: {key} given twice"
            elif not value:
                problem = f"{entry.id}: {key} is empty"
            if problem is not None or entry.broken:
                if problem is not None and entry.id:  # not the metadata of a heading already reported
                    fail(lineno, problem, entry)
                entry.meta.setdefault(key, value)
                i += 1
                continue
            entry.meta[key] = value
            entry.meta_lines[key] = lineno
            i += 1
            continue
        _body_target(entry, sections, preamble, seen_index).append(line)
        i += 1

    if fence.marker is not None and not fence.quoted:  # a quote's fence ends with the quote
        raise ParseError(path, fence.opened_at, f"code fence {fence.marker} opened here is never closed")
    for section in sections:  # collecting problems: an entry that lacks a required key is one more
        for draft in section.entries:
            missing = [key for key in REQUIRED_KEYS if key not in draft.meta and key not in draft.said]
            if missing and draft.id and problems is not None:
                fail(draft.line, _lacks(draft, missing), draft)
        section.entries = [draft for draft in section.entries if not draft.broken]
    return MemoryFile(
        title=title,
        preamble=_trim(preamble),
        sections=tuple(_freeze_section(section, path) for section in sections if _keep(section)),
        manual=manual,
        manual_line=manual_line,
        newline=newline,
        bom=bom,
    )


def _lacks(draft: _EntryDraft, missing: list[str]) -> str:
    return f"{draft.id} lacks {', '.join(missing)} (every entry has date, area, status)"


def _keep(section: _SectionDraft) -> bool:
    return section.name is not None or bool(section.entries) or bool(_trim(section.intro))


def _body_target(
    entry: _EntryDraft | None, sections: list[_SectionDraft], preamble: list[str], seen_index: bool
) -> list[str]:
    if entry is not None:
        return entry.body
    if len(sections) == 1 and not seen_index:
        return preamble
    return sections[-1].intro


def _freeze_section(section: _SectionDraft, path: str | Path | None) -> Section:
    return Section(
        name=section.name,
        intro=_trim(section.intro),
        entries=tuple(_freeze_entry(entry, path) for entry in section.entries),
        line=section.line,
    )


def _freeze_entry(draft: _EntryDraft, path: str | Path | None) -> Entry:
    missing = [key for key in REQUIRED_KEYS if key not in draft.meta]
    if missing:
        raise ParseError(path, draft.line, _lacks(draft, missing))
    fields: dict[str, object] = {}
    for key, value in draft.meta.items():
        name = key.replace("-", "_")
        if key in LIST_KEYS:
            fields[name] = tuple(part.strip() for part in value.split(",") if part.strip())
        else:
            fields[name] = value
    return Entry(  # type: ignore[arg-type]
        id=draft.id,
        title=draft.title,
        body=_body(draft.body),
        line=draft.line,
        meta_lines=tuple(draft.meta_lines.items()),
        **fields,
    )
