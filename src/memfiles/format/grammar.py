"""The one place that knows the text grammar of a memory file: ids, headings, fences, line endings.

Parse, validate, the wrapper, discovery, references, audit and the watcher ask this module; none of
them writes its own regex for these rules.

**Ids.** `PREFIX-NUMBER`: the prefix is an upper-case letter then up to 7 upper-case letters or digits,
the number 1 to 9 digits (`D-476`). Any such token is an id for `refs`; in the files only ids of a
*known* prefix (a kind of the project's Schema) make entries.

**Entry heading.** `### D-476: Title`: a line starting with `###`, whitespace, an id with a known
prefix, a colon, whitespace and a non-empty title. fmt writes one space in each place (a tab is
whitespace there, as CommonMark says; inside titles and bodies a tab is content and is kept).

**Broken entry heading** (a ParseError, because it would otherwise swallow an entry into the one
above it): a line that starts with `###` (then optional whitespace) followed by an id of a known prefix
and then a colon, whitespace or the end of the line, but is not an entry heading. So, with the default
kinds, `### D-12 Title`, `### D-12:Title`, `### D-12:`, `### D-12` and `###D-12: Title` are broken;
`### UTF-8 handling`, `### Step-1 of the fix`, `### RFC-9110: semantics`, `### D-12a` and
`#### D-12: x` (without an entry's metadata under it) are ordinary sub-headings of a body.

**Stray entry heading** (a ParseError too): a heading of a known kind's id, with an entry's metadata
list next (`- key:` lines of the format's keys, date, area or status among them), that is not at level
3 at the margin in upper case with a hyphen (`## D-12: x`, `#### D-12: x`, `  ### D-12: x`,
`### d-12: x`, `### D–12: x`, `### [D-12]: x`). Without such a list under it, the line is an ordinary
heading (`#### D-2 as first proposed` over `- pros: fast` is body text).

**Entry of an unknown kind**: a line shaped like an entry heading whose prefix is not known
(`### X-001: Title`) and whose next non-blank line is a metadata line (`- date: ...`). It is not an
entry (it stays text where it stands) but `check` reports it (`unknown-prefix`) and the write path
refuses it in a body, so an entry is never lost silently when a kind leaves the configuration.

**References.** `@@` then an id (in any case), `@@doc:path#anchor` and `@@skill:name#anchor`, anywhere
in the project's files: REF_RE.

**Sections.** `## Name` (a tab may stand for the space); `##` alone is an empty one. `## Manual` (in
any case) starts the user's own section, which runs to the end of the file. A body that the write path is given
is judged with its headings at the margin (`heading_at_margin`): ` ## Name`, indented by up to 3
spaces, is a heading to CommonMark and to the lint fixer, which moves it to the margin.

**Fences** (CommonMark): up to 3 spaces of indentation, then at least 3 backticks or 3 tildes; a
backtick fence's info string holds no backtick (`` ```x``` `` is inline code, not a fence). The fence
closes at a line of up to 3 spaces, the same character at least as many times, and only whitespace
after. Inside a fence nothing is structure. A tab-indented line is indented code, never a fence. An id
inside a fence or a code span is an example, not a mention: audit does not follow it.

**Conflict markers.** git leaves an unfinished merge as a line of seven or more `<` at the margin
(`<<<<<<< HEAD`), the two sides, and a line of as many `>` (`>>>>>>> branch`). A memory file holding
such an opening line followed, anywhere below, by such a closing line is in the middle of a merge: a
ParseError at the opening line, inside a code fence too (a conflict in a fenced snippet is the common
case for notes that hold code), in the generated index and in the Manual. So it is never read,
written or indexed, and a body may not hold one. To show a conflict in a note, indent its marker
lines by a space. A lone `>>>>>>> text` (a deep email quote) is text. ids.txt, which holds no
Markdown, reads any marker line, `=======` included (store/id_marks.py).

**Body separator.** An entry's body follows its metadata list after a blank line, and CommonMark
reads a `-` item there as more of that list, and a line indented two columns or more as more of its
last item. So when a body opens with either, canonical form puts an empty HTML comment, `<!-- -->`
(CommonMark's own way to end a list), on a line of its own between the metadata and the body, and
parse drops it again: it belongs to the layout, not to the body.

**Line endings.** A line ends at LF; CRs before it are part of the line ending, not of the line. A
file's newline is its first line's (CRLF or LF) and canonical form writes that newline throughout,
the Manual included, so a checkout with core.autocrlf stays as git wrote it. A file mixing the two,
or holding a CR that ends no line, is reported by check. A UTF-8 byte-order mark at the start is
kept as the file had it; one anywhere else is reported.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

PREFIX_PATTERN = r"[A-Z][A-Z0-9]{0,7}"
ID_PATTERN = rf"{PREFIX_PATTERN}-\d{{1,9}}"
ANY_CASE_PREFIX_PATTERN = r"[A-Za-z][A-Za-z0-9]{0,7}"  # a prefix as typed (`t` is T)
ANY_CASE_ID_PATTERN = rf"{ANY_CASE_PREFIX_PATTERN}-\d{{1,9}}"  # an id as typed (`t-1` is T-001): references
ID_RE = re.compile(rf"\b({PREFIX_PATTERN})-(\d{{1,9}})\b")
FULL_ID_RE = re.compile(rf"^({PREFIX_PATTERN})-(\d{{1,9}})$")
# A reference, in any file: `@@ID` (an id in any case, as every command takes ids: `@@t-1` is T-001),
# `@@doc:path#anchor` or `@@skill:name#anchor` (services/upkeep/refs.py resolves them).
REF_RE = re.compile(
    rf"@@(?:(?P<id>{ANY_CASE_ID_PATTERN})\b"
    r"|doc:(?P<doc>[A-Za-z0-9_./-]+?)(?:#(?P<doc_anchor>[\w-]+))?(?=[\s)\]'\",;]|$)"
    r"|skill:(?P<skill>[\w.-]+?)(?:#(?P<skill_anchor>[\w-]+))?(?=[\s)\]'\",;]|$))"
)

MANUAL_NAME = "Manual"
MANUAL_HEADING = f"## {MANUAL_NAME}"
BOM = "\ufeff"

# An entry heading's shape for any syntactically valid prefix; Grammar narrows it to the known ones.
# A value runs to its last character that is not trailing blank, said greedily (`.*[^ \t]`): the lazy
# `(.*?)[ \t]*$` it replaces tried the trailing blank from every position, quadratic in a line holding a
# long run of spaces (issue 34; tests/reliability/test_regex_linear.py).
_ANY_ENTRY_RE = re.compile(rf"^###[ \t]+({ID_PATTERN}):[ \t]+(\S(?:.*[^ \t\n])?)[ \t]*$")
_SECTION_RE = re.compile(r"^##(?:[ \t]+((?:.*[^ \t\n])?))?[ \t]*$")
META_RE = re.compile(r"^-[ \t]+([a-z][a-z-]*):[ \t]*((?:.*\S)?)\s*$")
_FENCE_OPEN_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_FENCE_CLOSE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")
_BLANK_LINE_RE = re.compile(r"\n[ \t]*\n")


CONFLICT_RE = re.compile(r"^(<{7}|>{7}|\|{7})(?:\s|$)")  # any marker line: ids.txt's reading
CONFLICT_MIDDLE_RE = re.compile(r"^={7}\s*$")  # read as a marker only where no Markdown is (ids.txt)
_CONFLICT_OPEN_RE = re.compile(r"^<{7,}(?:[ \t]|$)")
_CONFLICT_CLOSE_RE = re.compile(r"^>{7,}(?:[ \t]|$)")
CONFLICT_FIX = (
    "a git conflict marker: the file is in the middle of a merge. Keep the lines you want, delete the"
    " <<<<<<<, ======= and >>>>>>> lines, then run memfiles check (inside the generated index either side"
    " will do: the next write rewrites it)"
)


def conflict_marker(lines: Iterable[str], start: int = 1) -> int | None:
    """The number of the first opening conflict marker that a closing one follows (see the module's
    note), fences included; None when there is no such pair."""
    opened: int | None = None
    for number, line in enumerate(lines, start=start):
        if opened is None and _CONFLICT_OPEN_RE.match(line):
            opened = number
        elif opened is not None and _CONFLICT_CLOSE_RE.match(line):
            return opened
    return None


def conflict_lines(lines: list[str]) -> list[int]:
    """The indexes of the conflict marker lines (opening and closing) of `lines`, when conflict_marker
    finds a pair; [] otherwise."""
    if conflict_marker(lines) is None:
        return []
    return [
        index for index, line in enumerate(lines) if _CONFLICT_OPEN_RE.match(line) or _CONFLICT_CLOSE_RE.match(line)
    ]


# --- lines and line endings -----------------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """The lines of `text` without their endings: split at LF, CRs just before it dropped."""
    return [line.rstrip("\r") for line in text.split("\n")]


def newline_of(text: str) -> str:
    """The file's newline: its first line's ending, CRLF or LF (LF for a file of one line)."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


@dataclass(frozen=True)
class LineEndings:
    """How the lines of a file end: the first line ending in CRLF and in bare LF, and stray CRs."""

    first_crlf: int | None
    first_lf: int | None
    stray_cr: int | None  # a CR that ends no line (old Mac line end or a paste): viewers split there

    @property
    def mixed(self) -> bool:
        return self.first_crlf is not None and self.first_lf is not None


def line_endings(text: str) -> LineEndings:
    first_crlf = first_lf = stray = None
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        ended = number < len(lines)  # the last piece has no LF after it
        if ended and line.endswith("\r"):
            first_crlf = first_crlf or number
        elif ended:
            first_lf = first_lf or number
        if "\r" in (line[:-1] if ended and line.endswith("\r") else line):
            stray = stray or number
    return LineEndings(first_crlf, first_lf, stray)


# --- code spans ------------------------------------------------------------------------------------


def code_spans(text: str) -> list[tuple[int, int]]:
    """Where the inline code spans of `text` are, (start, end), as CommonMark reads them: a run of
    backticks not escaped by a backslash (`\\`` is a backtick; after `\\\\` it is not escaped) up to the
    next run of the same length; inside a span a backslash is text. A span may go on to the next line,
    never past a blank one (the paragraph ends there); a run with no closing run is literal backticks.
    The one reading of code spans: the write path's wrap and the id grammar both use it."""
    spans, index = [], 0
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char != "`":
            index += 1
            continue
        after = index
        while after < len(text) and text[after] == "`":
            after += 1
        run, search = after - index, after
        while (close := text.find("`" * run, search)) >= 0:
            end = close
            while end < len(text) and text[end] == "`":
                end += 1
            if end - close == run:
                break
            search = end
        if close >= 0 and not _BLANK_LINE_RE.search(text, after, close):
            spans.append((index, close + run))
            index = close + run
        else:
            index = after
    return spans


# --- fences -----------------------------------------------------------------------------------------


_QUOTE_MARKER_RE = re.compile(r" {0,3}> ?")


def unquoted(line: str, most: int = -1) -> tuple[int, str]:
    """(how many block quote markers `line` starts with, at most `most` of them if it is not -1; the
    text after them). `> > x` is (2, "x"); a marker is `>` up to three spaces in, with the one space
    after it that belongs to it."""
    depth = at = 0
    while depth != most:
        marker = _QUOTE_MARKER_RE.match(line, at)  # matched in place: a slice per marker is quadratic
        if marker is None:
            break
        at, depth = marker.end(), depth + 1
    return depth, line[at:]


class Fence:
    """Tracks CommonMark fenced code blocks line by line, so that nothing inside one is taken for structure.

    A fence may stand inside a block quote at the margin (`> ```py`): its lines are then read past as many
    quote markers as its opening line had, and a line with fewer ends the quote, and with it the fence
    (code is never a lazy continuation), and is read afresh. Such a fence cannot run past its quote, so
    one left open at the end of a body is no danger to the file (`quoted`)."""

    def __init__(self) -> None:
        self.marker: str | None = None
        self.opened_at = 0
        self.depth = 0  # the block quote markers before the open fence's lines
        self.opened = False  # the last line fed opened a fence

    @property
    def quoted(self) -> bool:
        """The open fence stands in a quote: the quote's end closes it."""
        return self.marker is not None and self.depth > 0

    def feed(self, line: str, lineno: int = 0) -> bool:
        """True when `line` is inside a fence, or opens or closes one."""
        self.opened = False
        if self.marker is not None:
            depth, text = unquoted(line, self.depth)
            if depth < self.depth:
                self.marker = None  # the quote it stood in has ended
            else:
                close = _FENCE_CLOSE_RE.match(text)
                if close and close.group(1)[0] == self.marker[0] and len(close.group(1)) >= len(self.marker):
                    self.marker = None
                return True
        # A quote at the margin only: `  > ```` under a list item is the item's, which this does not track
        depth, text = unquoted(line) if line.startswith(">") else (0, line)
        match = _FENCE_OPEN_RE.match(text)
        if match is None or (match.group(1)[0] == "`" and "`" in match.group(2)):
            return False
        self.marker, self.depth, self.opened = match.group(1), depth, True
        self.opened_at = lineno
        return True


def opens_fence(line: str) -> bool:
    """True when `line` would open a fenced code block."""
    return Fence().feed(line)


def closes_fence(text: str, marker: str) -> bool:
    """True when `text` (a line without its containers' markers) closes a fence opened with `marker`."""
    close = _FENCE_CLOSE_RE.match(text)
    return bool(close) and close.group(1)[0] == marker[0] and len(close.group(1)) >= len(marker)


def outside_fences(lines: Iterable[str], start: int = 1) -> Iterator[tuple[int, str]]:
    """(line number, line) for every line that is not inside, opening or closing a fence."""
    fence = Fence()
    for number, line in enumerate(lines, start=start):
        if not fence.feed(line, number):
            yield number, line


# --- headings ---------------------------------------------------------------------------------------


def heading_at_margin(line: str) -> str:
    """`line` with the up to 3 spaces before a `#` heading removed (CommonMark reads ` ## Name` as a
    heading, and the lint fixer moves it to the margin); any other line as it is."""
    bare = line.lstrip(" ")
    return bare if bare.startswith("#") and len(line) - len(bare) <= 3 else line


def section_name(line: str) -> str | None:
    """The name of a level-2 heading (`## Name` -> "Name", `##` -> ""), or None for any other line."""
    match = _SECTION_RE.match(line) if line.startswith("##") else None
    return None if match is None else (match.group(1) or "")


def is_manual_name(name: str | None) -> bool:
    """A section name that starts the user's own Manual: `Manual` in any case (`## manual` typed by hand
    is the user's too; no tool lints, reflows or writes into it)."""
    return name is not None and name.casefold() == MANUAL_NAME.casefold()


def is_manual_heading(line: str) -> bool:
    return is_manual_name(section_name(line))


def section_heading(name: str) -> str:
    """A level-2 heading as fmt writes it."""
    return f"## {name}".rstrip()


def any_entry_heading(line: str) -> tuple[str, str] | None:
    """(id, title) when `line` is shaped like an entry heading of any prefix, known or not (a lint chunker or
    an editor looking for headings; entry_heading of a Grammar also checks the prefix is known)."""
    match = _ANY_ENTRY_RE.match(line) if line.startswith("###") else None
    return (match.group(1), match.group(2)) if match else None


BODY_SEPARATOR = "<!-- -->"
_DASH_ITEM_RE = re.compile(r" ?-(?:[ \t]|$)")  # two columns in or more is caught as an indent


def body_needs_separator(body: str) -> bool:
    """Whether canonical form puts BODY_SEPARATOR above `body`: its first line, right under the metadata
    list, would render as more of it (a `-` item, or a line indented two columns or more, tabs counted
    to the next multiple of 4), or is the separator itself (so that parse, which drops one, gives the
    body back as it was)."""
    first = body.split("\n", 1)[0]
    columns = first.expandtabs(4)
    indent = len(columns) - len(columns.lstrip(" "))
    return indent >= 2 or bool(_DASH_ITEM_RE.match(first)) or first.rstrip() == BODY_SEPARATOR


def without_separator(body: str) -> str:
    """`body` (trimmed) without the one separator line canonical form may have put above it."""
    head, _, rest = body.partition("\n")
    return rest.strip("\n") if head.rstrip() == BODY_SEPARATOR else body


_CLOSING_HASHES_RE = re.compile(r"(?:^|[ \t])#+[ \t]*$")


def title_loses_its_end(title: str) -> bool:
    """Whether an entry heading would not show all of `title`: CommonMark drops a closing run of `#`
    after a space (`### D-1: Use C ##` shows "D-1: Use C")."""
    return bool(_CLOSING_HASHES_RE.search(title))


def entry_heading(entry_id: str, title: str) -> str:
    """An entry heading as fmt writes it: `### D-476: Title`."""
    return f"### {entry_id}: {title}"


class Grammar:
    """The entry-heading rules for one set of known id prefixes (a Schema's kinds)."""

    def __init__(self, prefixes: Iterable[str]) -> None:
        self.prefixes = frozenset(prefixes)
        known = "|".join(re.escape(prefix) for prefix in sorted(self.prefixes, key=len, reverse=True))
        known_id = rf"((?:{known})-\d+)" if known else r"((?!))"
        self._broken = re.compile(rf"^###[ \t]*{known_id}(?=[:\s]|$)")
        # Any heading of a known kind's id in any case, with any dash or none, or in brackets
        # (stray_heading): prefix, number, the rest. Without a dash only at level 3 with the colon right
        # after the number (`### D002: x`): `#### P1 bugs` over a `- status:` line is a body's sub-heading.
        prefix = known or "(?!)"
        self._stray = re.compile(
            rf"^(?:#{{1,6}}[ \t]+\[?({prefix})[ \t]*[-\u2010-\u2015][ \t]*(\d{{1,9}})\]?(?=[:\s]|$)"
            rf"|###[ \t]+({prefix})[ \t]*(\d{{1,9}})(?=:))(.*)$",
            re.IGNORECASE,
        )

    def entry_heading(self, line: str) -> tuple[str, str] | None:
        """(id, title) when `line` is an entry heading of a known kind."""
        match = _ANY_ENTRY_RE.match(line) if line.startswith("###") else None
        if match is None or match.group(1).split("-", 1)[0] not in self.prefixes:
            return None
        return match.group(1), match.group(2)

    def broken_heading(self, line: str) -> str | None:
        """What is wrong with a line that starts like a known kind's entry heading but is not one, said as
        the fix (`### D-12 Title` -> "write it as '### D-12: Title' ..."); None for any other line."""
        if not line.startswith("###"):
            return None
        match = self._broken.match(line)
        if match is None or self.entry_heading(line) is not None:
            return None
        if len(match.group(1).split("-", 1)[1]) > 9:
            return "an id's number has at most 9 digits"
        title = line[match.end() :].strip(" \t").lstrip(":").strip(" \t")
        return f"write it as '### {match.group(1)}: {title or 'Title'}' (id, colon, space, title)"

    def stray_heading(self, lines: list[str], index: int) -> str | None:
        """What is wrong with lines[index] when it is a heading of a known kind's id, with metadata under
        it, that is neither an entry heading nor a broken one: at another level (`## D-2: x`,
        `#### D-2: x`), indented, lower-case (`### d-2: x`), with another dash (`D–2`) or none (`D2`),
        or in brackets (`[D-2]`). Said as the fix; None for any other line. Without this an entry so written was read as
        a section or as text of the entry above, and its id was handed out again."""
        line = lines[index]
        match = self._stray.match(heading_at_margin(line))
        if match is None:
            return None
        if line.startswith("###") and (self.entry_heading(line) or self.broken_heading(line)):
            return None
        if not _metadata_follows(lines, index):
            return None
        prefix, number = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        entry_id = f"{prefix.upper()}-{number}"
        title = match.group(5).strip(" \t").lstrip(":").strip(" \t") or "Title"
        return f"{entry_id} has metadata under it but no entry heading: write it as '### {entry_id}: {title}'"

    def unknown_entry(self, lines: list[str], index: int) -> str | None:
        """The id when lines[index] is shaped like an entry heading of an unknown kind and metadata follows."""
        match = _ANY_ENTRY_RE.match(lines[index]) if lines[index].startswith("###") else None
        if match is None or match.group(1).split("-", 1)[0] in self.prefixes:
            return None
        for following in lines[index + 1 :]:
            if following.strip():
                return match.group(1) if META_RE.match(following) else None
        return None

    def has_entry(self, text: str) -> bool:
        """True when `text` holds, outside fences, an entry heading: a known kind's, a broken one, or one of an
        unknown kind with metadata under it (so that check can name what is wrong with it)."""
        lines = split_lines(text)
        for number, line in outside_fences(lines):
            index = number - 1
            if (
                self.entry_heading(line)
                or self.broken_heading(line)
                or self.unknown_entry(lines, index)
                or self.stray_heading(lines, index)
            ):
                return True
        return False

    def ids_in(self, text: str) -> list[str]:
        """The ids of known prefixes that `text` mentions, in order (repeats kept). An id in a fenced code
        block or an inline code span is an example shown, not a mention (`D-999` as a format sample)."""
        prose = "\n".join(line for _, line in outside_fences(split_lines(text)))
        kept, last = [], 0
        for start, end in code_spans(prose):
            kept += [prose[last:start], " "]
            last = end
        prose = "".join(kept) + prose[last:]
        return [match.group(0) for match in ID_RE.finditer(prose) if match.group(1) in self.prefixes]


def _metadata_follows(lines: list[str], index: int) -> bool:
    """Whether an entry's metadata list follows lines[index] (blank lines between): a list of `- key:`
    lines of the format's keys holding one it requires (date, area or status). A list of other pairs
    (`- pros: fast`) under a body's sub-heading is body text."""
    from memfiles.format.model import META_KEYS, REQUIRED_KEYS  # model imports this module

    keys = []
    for later in lines[index + 1 :]:
        if not later.strip():
            if keys:
                break
            continue
        match = META_RE.match(later)
        if match is None:
            break
        keys.append(match.group(1))
    return bool(keys) and keys[0] in META_KEYS and any(key in REQUIRED_KEYS for key in keys)


@lru_cache(maxsize=32)
def grammar_for(prefixes: tuple[str, ...]) -> Grammar:
    """The Grammar of a set of prefixes (cached: every file of a project shares one)."""
    return Grammar(prefixes)


def headings_of(ids: Iterable[str]) -> re.Pattern[str]:
    """A multiline pattern that finds the entry heading of any of `ids` in a file's text."""
    alternatives = "|".join(re.escape(entry_id) for entry_id in sorted(ids))
    return re.compile(rf"^###[ \t]+(?:{alternatives}):[ \t]+\S", re.MULTILINE)
