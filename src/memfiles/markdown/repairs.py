"""What the write path must change in a body so that it can stand in an entry, each change said in a note.

A body is stored as given, but for what would break the entry or the file, read with markdown-it-py:

- a heading of level 1 or 2 would end the entry (a `##` line is a section): the body's headings are
  demoted together, so that the highest is level 4, under the entry's own level 3 (their levels
  relative to each other kept, at most 6); a setext heading becomes an ATX one on the way;
- a `##` line that is no heading (in an HTML block) would still start a section: indented by a space;
- a line shaped like an entry heading (`### D-12: x`) would start an entry: the id's hyphen is escaped
  (`D\\-12`, which shows the same); a heading of an id with a metadata list under it gets an invisible
  `<!-- -->` between the two;
- a git conflict marker pair would make the file read as mid-merge: the marker lines are indented by
  a space, and outside a fence the conflict is fenced as code;
- a generated-index marker would end or start the file's index: its colon is escaped;
- a code fence left open would run on into the next entries: it is closed at the end of the body (one a
  list item or quote ends is closed there, which shows the same and keeps the format's reading with it).

Each repair is a note for the writer's warnings (but `separate_lists`, which changes nothing a reader
sees). `body_problem` (format/validate.py) is the format's own judgement of the result; the write path
asks it last (see body.py).
"""

from __future__ import annotations

import re

from memfiles.format.grammar import (
    ANY_CASE_PREFIX_PATTERN,
    Fence,
    Grammar,
    closes_fence,
    conflict_lines,
    heading_at_margin,
    outside_fences,
    section_name,
)
from memfiles.format.toc import INDEX_END, INDEX_START_PREFIX
from memfiles.markdown.reader import blocks

MAX_LEVEL = 6
LOWEST_TOP = 4  # the highest heading a body may hold: one under the entry's level 3

Notes = list[str]


def demote_headings(lines: list[str], notes: Notes) -> list[str]:
    """Headings shifted together so that the highest is level 4, when one is of level 1 or 2."""
    tokens = blocks("\n".join(lines))
    headings = [(index, token) for index, token in enumerate(tokens) if token.type == "heading_open" and token.map]
    if not headings:
        return lines
    top = min(int(token.tag[1]) for _, token in headings)
    if top > 2:
        return lines
    shift = LOWEST_TOP - top
    out = list(lines)
    # bottom up, so that a setext heading folded into one line moves no line above it
    for index, token in reversed(headings):
        level = min(MAX_LEVEL, int(token.tag[1]) + shift)
        first, end = token.map  # type: ignore[misc]
        if token.markup.startswith("#"):
            line = out[first]
            at = line.find("#")
            out[first] = line[:at] + "#" * level + line[at + len(token.markup) :]
        else:  # setext: the text's lines and the underline become one ATX line
            inline = tokens[index + 1]
            text = " ".join(part.strip() for part in inline.content.split("\n"))
            head = inline.content.split("\n", 1)[0].strip()
            at = out[first].find(head) if head else -1
            prefix = out[first][:at] if at >= 0 else ""
            out[first:end] = [f"{prefix}{'#' * level} {text}".rstrip()]
    at = min(token.map[0] for _, token in headings if int(token.tag[1]) == top) + 1  # type: ignore[index]
    notes.append(
        f"its headings were demoted {shift} level{'s' if shift > 1 else ''} (the level-{top} heading at line {at}"
        f" became level {min(MAX_LEVEL, top + shift)}): a body stands under its entry's level-3 heading, and a"
        " level-1 or 2 one would end the entry"
    )
    return out


_ID_HYPHEN = re.compile(rf"(\b{ANY_CASE_PREFIX_PATTERN})-(\d)")  # an id's hyphen, escaped so it reads as none


def escape_entry_headings(lines: list[str], grammar: Grammar, notes: Notes) -> list[str]:
    """Lines the format would read as an entry (or a broken one) made plain headings again."""
    out = list(lines)
    changed: list[int] = []
    for number, line in outside_fences(out):
        index = number - 1
        bare = heading_at_margin(line)  # ` ### D-1: x` is a heading too, and the linter moves it to the margin
        out[index] = bare  # read as it will stand (put back below)
        unknown = grammar.unknown_entry(out, index)
        out[index] = line
        if grammar.entry_heading(bare) or grammar.broken_heading(bare) or unknown:
            out[index] = _ID_HYPHEN.sub(r"\1\\-\2", line, count=1)
            changed.append(number)
    for number, _line in reversed(list(outside_fences(out))):
        if grammar.stray_heading(out, number - 1):
            out.insert(number, "<!-- -->")  # its metadata list is then no entry's (invisible, as CommonMark reads it)
            changed.append(number)
    if changed:
        shown = ", ".join(str(number) for number in sorted(changed)[:5])
        notes.append(f"line {shown} would read as an entry heading: its id's hyphen is escaped (it shows the same)")
    return out


def indent_section_lines(lines: list[str], notes: Notes) -> list[str]:
    """A `## ...` line at the margin that is no heading to CommonMark (inside an HTML block) would still
    start a section of the file: indented by a space, which shows the same there."""
    out = list(lines)
    found = [number for number, line in outside_fences(out) if section_name(line) is not None]
    for number in found:
        out[number - 1] = " " + out[number - 1]
    if found:
        notes.append(f"line {found[0]} would start a section of the file: indented by a space (it shows the same)")
    return out


def indent_conflict_markers(lines: list[str], notes: Notes) -> list[str]:
    """A pasted git conflict: its marker lines indented by a space (so the file does not read as mid-merge,
    a fence's code included), and, outside a fence, the conflict fenced as code (its `=======` would
    otherwise underline the line above as a heading)."""
    marked = conflict_lines(lines)
    if not marked:
        return lines
    out = [(" " + line if index in marked else line) for index, line in enumerate(lines)]
    first, last = min(marked), max(marked)
    fence = Fence()
    inside = False
    for index, line in enumerate(out[: last + 1]):
        if fence.feed(line, index + 1) and first <= index:
            inside = True
    if not inside:
        run = out[first : last + 1]
        longest = max((len(ticks) for line in run for ticks in re.findall(r"`+", line)), default=0)
        marker = "`" * max(3, longest + 1)
        out[first : last + 1] = ["", marker, *run, marker, ""]
    notes.append(
        f"line {first + 1} is a git conflict marker: the marker lines are indented by a space, so that the file"
        " does not read as the middle of a merge" + ("" if inside else ", and the conflict is stored as a code block")
    )
    return out


def escape_index_markers(lines: list[str], notes: Notes) -> list[str]:
    out = list(lines)
    found = []
    for index, line in enumerate(out):
        if line.strip().startswith(INDEX_START_PREFIX) or line.strip() == INDEX_END:
            out[index] = line.replace("memfiles:index:", "memfiles\\:index:", 1)
            found.append(index + 1)
    if found:
        notes.append(
            f"line {found[0]} is a generated-index marker: its colon is escaped, so the index stays the tool's"
        )
    return out


_LIST_MARKER = re.compile(r"[-*+]|\d{1,9}[.)]")


def _container_prefix(line: str, marker: str) -> str:
    """What stands before `marker` (a fence's) on its opening line, as a line under it continues it:
    quote markers kept, a list marker and the spaces around it turned into spaces."""
    at = line.find(marker)
    before = line[: max(at, 0)]
    out = []
    for part in re.split(r"(>)", before):
        out.append(part if part == ">" else _LIST_MARKER.sub(lambda m: " " * len(m.group(0)), part))
    return "".join(out)


def close_fences(lines: list[str], notes: Notes) -> list[str]:
    """Every fence closed where it ends: one that a list item or a quote ends gets its closing line there
    (it shows the same, and the format's own reading of fences then agrees with it); one that runs to the
    end of the body is closed there, and said. Then the format's reading: a fence it still sees open is
    closed at the end."""
    out = list(lines)
    opened = []
    for token in reversed(blocks("\n".join(out))):
        if token.type != "fence" or token.map is None:
            continue
        first, end = token.map
        last = out[end - 1].split(">")[-1].lstrip(" ")  # past its quote markers and a list item's indent
        if end - 1 > first and closes_fence(last, token.markup):
            continue
        out.insert(end, _container_prefix(out[first], token.markup) + token.markup)
        if end == len(lines):
            opened.append(first + 1)
    fence = Fence()
    for number, line in enumerate(out, start=1):
        fence.feed(line, number)
    if fence.marker is not None and not fence.quoted:
        out.append(fence.marker)
        opened.append(fence.opened_at)
    if opened:
        notes.append(
            f"the code fence opened at line {min(opened)} was never closed: it is closed at the end of the body"
        )
    return out


def separate_lists(lines: list[str]) -> list[str]:
    """Two bullet lists one after the other with different markers (`*` then `+`) are two lists; once
    both are `-` (the rule set's bullet) they would read as one. An invisible `<!-- -->` between them
    (CommonMark's way to end a list) keeps them two. Changes nothing a reader sees: no note."""
    tokens = blocks("\n".join(lines))
    ends: list[tuple[int, int, str]] = []  # (level, end line, marker) of each bullet list closed
    splits: list[tuple[int, str]] = []  # (line, indent) to put a separator before
    for token in tokens:
        if token.type == "bullet_list_open" and token.map is not None:
            before = next((end for level, end, _ in reversed(ends) if level == token.level), None)
            marker = next((m for level, end, m in reversed(ends) if level == token.level), "")
            gap = lines[before : token.map[0]] if before is not None else None
            if gap is not None and all(not line.strip() for line in gap) and marker and marker != token.markup:
                start = token.map[0]
                splits.append((start, lines[start][: len(lines[start]) - len(lines[start].lstrip(" "))]))
            ends.append((token.level, token.map[1], token.markup))
    out = list(lines)
    for start, indent in reversed(splits):
        out[start:start] = ["", f"{indent}<!-- -->", ""]
    return out
