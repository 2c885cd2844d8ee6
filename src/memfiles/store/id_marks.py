"""memory/ids.txt: the highest id number ever handed out per prefix, committed, so a number is never handed
out twice, even after its entry or its whole file was deleted by hand.

One line per prefix, `D 476`, optionally followed by the numbers at or below the mark that were never
handed out (`F 14 never 3,7-9`: gaps of hand-numbered files, or numbers skipped by a hand-written higher
id), so that `check` can tell an id deleted by hand from one that never existed.

Merges: `memory/.gitattributes` says `ids.txt merge=union`, so git keeps both branches' lines instead of a
conflict; the reader takes each prefix's highest mark (and the `never` numbers no line says were handed
out), and the next write
rewrites the file with one line per prefix. Without the attribute, a conflicted file still reads: the
conflict markers are skipped and reported by `check`.

ids.txt is versioned, so whatever lowers the files lowers it too: `git revert` of a commit that added
an entry, `git stash`, a switch to a branch without it. Each clone therefore also keeps its own
highest marks, out of git, in `.memfiles/handed.txt` (`CloneMarks`): a write hands out numbers above
both, and the numbers it so skips are recorded in ids.txt as never handed out there. Two clones can
still hand out one number each on their own: `check` finds that after the merge (`duplicate-id`), and
`renumber` settles it. Stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from memfiles.errors import ParseError
from memfiles.format.grammar import CONFLICT_MIDDLE_RE, CONFLICT_RE, PREFIX_PATTERN
from memfiles.format.ids import split_id
from memfiles.store.fileio import atomic_write, ensure_private_dir, read_state, read_text

MARKS_FILE = "ids.txt"
ATTRIBUTES_FILE = ".gitattributes"
ATTRIBUTES_LINE = f"{MARKS_FILE} merge=union"
HEADER = (
    "# Written by memfiles: the highest id number handed out per prefix, so that none is handed out twice.\n"
    "# Never lower a number. After a merge keep every line: memfiles takes the highest per prefix.\n"
    "# `never` lists numbers at or below the mark that no entry ever had (check does not report them).\n"
)
_LINE_RE = re.compile(rf"^({PREFIX_PATTERN}) +(\d{{1,9}})(?: +never +([\d,-]+))?\s*$")


@dataclass
class Marks:
    """The marks of one project: `high[prefix]`, `never[prefix]`, and where conflict markers were seen."""

    high: dict[str, int] = field(default_factory=dict)
    never: dict[str, set[int]] = field(default_factory=dict)
    conflicts: list[int] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)  # the line each prefix was first read from

    def numbers(self, prefix: str) -> range:
        return range(1, self.high.get(prefix, 0) + 1)


def _ranges(numbers: Iterable[int]) -> str:
    """`1,3-5,9` for {1, 3, 4, 5, 9}."""
    parts: list[str] = []
    ordered = sorted(numbers)
    start = previous = None
    for number in [*ordered, None]:
        if start is not None and (number is None or number != previous + 1):
            parts.append(str(start) if start == previous else f"{start}-{previous}")
            start = None
        if number is not None and start is None:
            start = number
        previous = number
    return ",".join(parts)


def _parse_ranges(text: str) -> set[int]:
    numbers: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise ValueError(part)
        numbers.update(range(int(low), int(high or low) + 1))
    return numbers


def parse_marks(text: str, path: str | Path) -> Marks:
    """The marks in `text`; repeated prefixes (a union merge) take the highest. ParseError on a bad line."""
    marks = Marks()
    claims: dict[str, list[tuple[int, set[int]]]] = {}  # per prefix, each line's mark and never list
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if CONFLICT_RE.match(line) or CONFLICT_MIDDLE_RE.match(line):
            marks.conflicts.append(number)
            continue
        match = _LINE_RE.match(stripped)
        if not match:
            raise ParseError(path, number, f"expected 'PREFIX NUMBER [never N,M-K]' (like 'D 476'), got {line!r}")
        prefix, high = match.group(1), int(match.group(2))
        try:
            never = _parse_ranges(match.group(3)) if match.group(3) else set()
        except ValueError:
            raise ParseError(path, number, f"the never list must be numbers and ranges (3,7-9), got {line!r}") from None
        marks.high[prefix] = max(high, marks.high.get(prefix, 0))
        marks.lines.setdefault(prefix, number)
        marks.never.setdefault(prefix, set()).update(never)
        claims.setdefault(prefix, []).append((high, never))
    for prefix, never in marks.never.items():
        # A number one line says was handed out was: after a union merge, `D 2` (branch A gave out D-002)
        # beside `D 11 never 2-9` (branch B skipped 2-9) leaves 3-9 never used, and a lost D-002 reported.
        # A line hands out 1 to its mark but its own never list (told by comparison: a mark of 9 digits
        # must not cost a set of that many numbers).
        never.intersection_update(marks.numbers(prefix))
        never.difference_update(
            {n for n in never if any(n <= high and n not in own for high, own in claims.get(prefix, []))}
        )
    return marks


def render_marks(marks: Marks) -> str:
    lines = [HEADER]
    for prefix in sorted(marks.high):
        never = marks.never.get(prefix)
        lines.append(f"{prefix} {marks.high[prefix]}" + (f" never {_ranges(never)}" if never else "") + "\n")
    return "".join(lines)


def used_numbers(ids: Iterable[str]) -> dict[str, set[int]]:
    """{prefix: numbers} of the ids that are real ids; anything else is left to check to report."""
    used: dict[str, set[int]] = {}
    for entry_id in ids:
        try:
            prefix, number = split_id(entry_id)
        except ValueError:
            continue
        used.setdefault(prefix, set()).add(number)
    return used


def advance(marks: Marks | None, used: dict[str, set[int]]) -> Marks:
    """The marks after a write whose project now uses `used` (files, pruned ledger, ids just handed out).

    Each mark rises to the highest number in use; the numbers a rise skips that nothing uses were never
    handed out, and are recorded so. With no marks yet (a project from before ids.txt) every gap below the
    highest number in use counts as never handed out: it cannot be told from a deletion, so it is not
    reported.
    """
    new = Marks()
    old = marks or Marks()
    for prefix in sorted(set(old.high) | set(used)):
        numbers = used.get(prefix, set())
        before = old.high.get(prefix, 0)
        high = max(before, max(numbers, default=0))
        if high == 0:
            continue
        skipped = set(range(before + 1, high + 1)) - numbers
        never = (old.never.get(prefix, set()) | skipped) - numbers
        new.high[prefix] = high
        if never:
            new.never[prefix] = never
    return new


class MarksFile:
    """The marks file of a project (in its root memory/ folder) and the attributes that make it merge."""

    def __init__(self, memory_dir: Path) -> None:
        self.path = memory_dir / MARKS_FILE
        self.attributes = memory_dir / ATTRIBUTES_FILE

    def text(self) -> str | None:
        return read_state(self.path)

    def read(self) -> Marks | None:
        """The marks, or None when the project has none yet; ParseError for a line that is not a mark."""
        text = self.text()
        return None if text is None else parse_marks(text, f"{self.path.parent.name}/{self.path.name}")

    def attributes_text(self) -> tuple[str | None, str]:
        """The .gitattributes text now, and with the union-merge line (the same when it is there)."""
        try:
            old: str | None = read_text(self.attributes)
        except FileNotFoundError:
            old = None
        if old is not None and any(line.split() == ATTRIBUTES_LINE.split() for line in old.splitlines()):
            return old, old
        prefix = (old or "") + ("\n" if old and not old.endswith("\n") else "")
        comment = "# memfiles: a merge keeps both sides' id marks; memfiles takes the highest\n"
        return old, f"{prefix}{comment}{ATTRIBUTES_LINE}\n"


CLONE_FILE = "handed.txt"
CLONE_HEADER = (
    "# Written by memfiles: the highest id number this clone handed out per prefix. It stays out of git,\n"
    "# so a revert, a stash or a branch switch that lowers memory/ids.txt cannot hand a number out again.\n"
)


class CloneMarks:
    """This clone's own highest marks, in the state folder (git ignores it). Unreadable is as absent: it
    only ever raises the next number, and ids.txt stays the record that check reads."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.path = state_dir / CLONE_FILE

    def read(self) -> dict[str, int]:
        try:
            text = read_state(self.path)
            return {} if text is None else dict(parse_marks(text, self.path).high)
        except (ParseError, OSError, UnicodeDecodeError):
            return {}

    def raise_to(self, high: dict[str, int]) -> None:
        """Raise the marks to `high` (never lower one); an error to write is the caller's to report."""
        old = self.read()
        new = {prefix: max(number, old.get(prefix, 0)) for prefix, number in high.items()}
        merged = {**old, **new}
        if merged == old:
            return
        ensure_private_dir(self.state_dir)
        atomic_write(self.path, CLONE_HEADER + "".join(f"{p} {n}\n" for p, n in sorted(merged.items())))
