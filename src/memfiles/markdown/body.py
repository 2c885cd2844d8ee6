"""A body (or a section's intro) as the write path stores it: every printable finding is taken.

Three stages, each read with markdown-it-py (reader.py):

1. `repair`: what would break the entry or the file is changed, and said (repairs.py); a pasted log,
   traceback, Jira code block or diff is fenced as code (logs.py). These change what a reader sees, on
   purpose, each with a note.
2. the linter's fixes (rumdl, run once per batch by services/lint.py): blank lines around blocks, `-`
   bullets, bare URLs in `<...>`, trailing spaces... kept only where the body renders as before.
3. `wrap`: prose wrapped at the width (reflow.py), kept only where it renders as before; then `settle`:
   the format's own judgement (`body_problem`), and if anything is still wrong, the body is stored whole
   in a code fence, with a note, rather than refused.

services/lint.py runs them for a batch: the wrap first (a linter reads lines as they will be), the
fixes, the wrap again, all compared with stage 1's text at once; only a body where that shows a change
takes the careful way, each stage kept on its own. So a body is refused only when it cannot be stored
at all (empty, or past the body limit).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memfiles.format.ids import Schema
from memfiles.format.validate import body_problem
from memfiles.markdown.logs import fence_logs, fence_pasted_code
from memfiles.markdown.reader import remember, renders_alike
from memfiles.markdown.reflow import wrap_paragraphs
from memfiles.markdown.repairs import (
    close_fences,
    demote_headings,
    escape_entry_headings,
    escape_index_markers,
    indent_conflict_markers,
    indent_section_lines,
    separate_lists,
)


@dataclass
class Prepared:
    """A body on its way to the file, and what was changed in it that a reader may see."""

    text: str
    notes: list[str] = field(default_factory=list)


def _trimmed(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def repair(text: str, schema: Schema) -> Prepared:
    """Stage 1: `text` (line ends LF, no control characters) changed only where it would break the entry
    or the file, and its pasted logs and code fenced as code."""
    notes: list[str] = []
    lines = _trimmed(text.split("\n"))
    lines = indent_conflict_markers(lines, notes)
    lines = escape_index_markers(lines, notes)
    lines = close_fences(lines, notes)
    lines = indent_section_lines(demote_headings(lines, notes), notes)
    lines = fence_logs(fence_pasted_code(lines, notes), notes)
    lines = escape_entry_headings(lines, schema.grammar, notes)
    lines = separate_lists(lines)
    text = "\n".join(_trimmed(lines))
    remember(text)  # the next stages compare with it
    return Prepared(text, notes)


def keep_if_alike(before: str, after: str) -> str:
    """`after` (a tidied `before`) when it renders as `before` did, else `before`."""
    return after if renders_alike(before, after) else before


def wrapped(text: str, width: int) -> str:
    """`text` with its prose wrapped at `width` (reflow.py), not yet compared with it."""
    return "\n".join(wrap_paragraphs(text.split("\n"), width)) if width > 0 else text


def wrap(prepared: Prepared, width: int) -> Prepared:
    """Stage 3: prose wrapped at `width` where it renders as before."""
    return Prepared(keep_if_alike(prepared.text, wrapped(prepared.text, width)), prepared.notes)


def settle(prepared: Prepared, schema: Schema) -> Prepared:
    """The format's last word: a body it would still refuse is stored whole in a code fence, with a note."""
    text = "\n".join(_trimmed(prepared.text.split("\n")))
    problem = body_problem(text, schema)
    if problem is not None:
        text = fenced_whole(text)
        prepared.notes.append(f"{problem}; the body is stored as a code block instead")
    return Prepared(text, prepared.notes)


def finish(prepared: Prepared, width: int, schema: Schema) -> Prepared:
    """Stage 3: wrap, then settle."""
    return settle(wrap(prepared, width), schema)


def prepare(text: str, width: int, schema: Schema) -> Prepared:
    """Stages 1 and 3, without the linter's fixes (which need the linter and a batch): what a body is,
    at least, once it is written."""
    return finish(repair(text, schema), width, schema)


def fenced_whole(text: str) -> str:
    """`text` inside one code fence, longer than any run of backticks in it, its conflict markers indented."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    lines = [(" " + line if re.match(r"^(?:<{7}|>{7})", line) else line) for line in text.split("\n")]
    return "\n".join([fence, *lines, fence])
