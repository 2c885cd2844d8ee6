"""The linter's fixes, applied only where the text shows a reader what it showed before.

rumdl offers a fix (a byte range and its replacement) for most findings. They are applied together;
where the rendering changes, rule by rule, and within a rule in halves, so that one fix that would
change what a body says (a hard break's spaces dropped, `#tag` made a heading) costs only itself.
Where rumdl's fix for a finding changes the rendering, or it offers none, memfiles has its own for a
few rules, tried in its place:

- md009: a hard break's three spaces become two (rumdl drops them all, and the break with them);
- md018: `#word` at a line's start is escaped (`\\#word`), never made a heading;
- md027: the spaces after a quote's `>` are one (in a quoted HTML block rumdl offers nothing);
- md010: a line's tabs become spaces, to the same columns;
- md034: a bare `www.` address becomes a link that shows the same words (rumdl's adds `https://`);
- md030, md032: `1.Select` or `4. happens` under a paragraph's line, which are text to CommonMark (no
  space; a list that may not interrupt a paragraph), get their `.` escaped rather than made a list;
- md032: a list with no blank line after it, where rumdl offers no fix, gets one (kept where it renders
  as before: not where rumdl reads a table under a list's lazy last line, which is more of that line).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

Fix = tuple[int, int, str]  # (start, end, replacement): a byte range of the document


@dataclass(frozen=True)
class Candidate:
    """A finding's fix, and memfiles' own for it (tried where the first changes the rendering)."""

    rule: str
    fix: Fix | None
    own: Fix | None = None


class _Lines:
    """A document's lines with the byte offset each starts at."""

    def __init__(self, document: str) -> None:
        self.lines = document.split("\n")
        self.starts: list[int] = []
        at = 0
        for line in self.lines:
            self.starts.append(at)
            at += len(line.encode("utf-8")) + 1

    def span(self, number: int, first: int, last: int, replacement: str) -> Fix:
        """A fix replacing characters [first, last) of line `number` (1-based)."""
        line = self.lines[number - 1]
        start = self.starts[number - 1]
        return (start + len(line[:first].encode("utf-8")), start + len(line[:last].encode("utf-8")), replacement)


_URL = re.compile(r"'([^'\s]+)'\s*$")
_NUMBERED = re.compile(r"^[ >]*(\d{1,9})[.)]")


def own_fix(lines: _Lines, rule: str, line: int, message: str) -> Fix | None:
    """memfiles' own fix for a finding of `rule` at `line`, or None."""
    if not 0 < line <= len(lines.lines):
        return None
    text = lines.lines[line - 1]
    if rule == "md009":
        kept = text.rstrip(" ")
        if not kept.strip():
            return lines.span(line, 0, len(text), "") if text else None
        return lines.span(line, len(kept), len(text), "  ") if len(text) - len(kept) > 2 else None
    if rule == "md032" and "followed by" in message:  # where rumdl offers none: a blank line after the list
        return lines.span(line, len(text), len(text), "\n")
    if rule in ("md030", "md032"):  # `1.Select`, or `4. happens` after a paragraph's line: text, not a list
        match = _NUMBERED.match(text)
        return lines.span(line, match.end(1), match.end(1), "\\") if match else None
    if rule == "md018":
        at = text.find("#")
        return lines.span(line, at, at, "\\") if at >= 0 else None
    if rule == "md027":
        match = re.match(r"^((?: {0,3}>)+)( {2,})", text)
        return lines.span(line, len(match.group(1)), match.end(), " ") if match else None
    if rule == "md010" and "\t" in text:
        return lines.span(line, 0, len(text), text.expandtabs(4))
    if rule == "md034":
        url = _URL.search(message)
        if url and url.group(1).startswith("www."):
            at = text.find(url.group(1))
            found = url.group(1)
            return lines.span(line, at, at + len(found), f"[{found}](http://{found})") if at >= 0 else None
    return None


OWN = frozenset(["md009", "md018", "md027", "md010", "md030", "md032", "md034"])


def candidates(document: str, findings: list[tuple[int, str, str]], fixes: list[Fix | None]) -> list[Candidate]:
    """The candidates of one document's findings ((line, rule, message) with rumdl's fix or None)."""
    lines = _Lines(document)
    out = []
    for (line, rule, message), fix in zip(findings, fixes, strict=True):
        own = own_fix(lines, rule, line, message) if rule in OWN else None
        if own is not None and _own_first(lines, rule, line, message):
            fix, own = own, fix  # rumdl's would change what the line shows: memfiles' first
        if fix is not None or own is not None:
            out.append(Candidate(rule, fix, own if own != fix else None))
    return out


def _own_first(lines: _Lines, rule: str, line: int, message: str) -> bool:
    """Where rumdl's fix is known to change what a line shows: a hard break's spaces (a line ending in two
    or more before a line of text), `#word` made a heading, `1.x` or `4. x` under prose made a list, and a
    `www.` address given `https://`."""
    if rule == "md009":
        following = lines.lines[line] if line < len(lines.lines) else ""
        return bool(lines.lines[line - 1].strip()) and bool(following.strip())
    if rule == "md032":
        return "non-1" in message
    if rule == "md030":
        return "Actual: 0" in message
    return rule in ("md018", "md034")


def _applied(data: bytes, fixes: list[Fix]) -> bytes:
    pieces, last = [], 0
    for start, end, replacement in sorted(fixes):
        pieces += [data[last:start], replacement.encode("utf-8")]
        last = end
    pieces.append(data[last:])
    return b"".join(pieces)


def _fits(kept: list[Fix], fix: Fix) -> bool:
    """Whether `fix` can join `kept`: it overlaps none of them (the same insertion twice: once is enough)."""
    for start, end, replacement in kept:
        if fix == (start, end, replacement) or (fix[0] < end and start < fix[1]):
            return False
        if fix[0] == fix[1] and start < fix[0] < end:
            return False
    return True


def apply(document: str, found: list[Candidate], alike: Callable[[str, str], bool] | None = None) -> str:
    """`document` with the fixes of `found` that keep it alike (`alike(before, after)`); all of them when
    `alike` is None."""
    data = document.encode("utf-8")
    kept: list[Fix] = []

    def take(group: list[Fix]) -> bool:
        group = [fix for fix in group if 0 <= fix[0] <= fix[1] <= len(data)]
        usable: list[Fix] = []
        for fix in group:
            if _fits(kept + usable, fix):
                usable.append(fix)
        if not usable:
            return False
        if alike is None or alike(document, _applied(data, kept + usable).decode("utf-8", "replace")):
            kept.extend(usable)
            return True
        return False

    def halves(group: list[Candidate]) -> None:
        if take([c.fix for c in group if c.fix is not None]):
            return
        if len(group) > 1:
            halves(group[: len(group) // 2])
            halves(group[len(group) // 2 :])
        elif group[0].own is not None:
            take([group[0].own])

    primary = [c.fix for c in found if c.fix is not None]
    if not (primary and take(primary) and len(primary) == len(found)):
        taken = set(kept)
        rest = [c for c in found if c.fix is None or c.fix not in taken]
        for rule in dict.fromkeys(c.rule for c in rest):
            group = [c for c in rest if c.rule == rule]
            own_only = [c for c in group if c.fix is None]
            if len(own_only) < len(group):
                halves([c for c in group if c.fix is not None])
            for candidate in own_only:
                if candidate.own is not None:
                    take([candidate.own])
    return _applied(data, kept).decode("utf-8", "replace")
