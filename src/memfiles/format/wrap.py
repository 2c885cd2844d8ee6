"""Body text as the write path stores it: trailing space trimmed, prose paragraphs wrapped.

Only plain paragraphs are re-wrapped. Code (fenced, by the fence rule of format/grammar.py, and
indented), lists, quotes, tables, HTML, headings, thematic breaks, link definitions, paragraphs holding
a tab and lines ending in a hard break are left exactly as written: re-flowing them would change what
they mean.
"""

from __future__ import annotations

import re
import textwrap
import unicodedata

from memfiles.format.grammar import Fence, code_lines, opens_fence

_BLOCK_START = re.compile(
    r"^(?:\s{4}|\t"  # indented code
    r"| {0,3}(?:[-*+](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)"  # list items, up to three spaces in (CommonMark)
    r"|>|#|\||<)"  # quotes, headings, table rows, HTML
    r"| {0,3}(?:=+|-+)[ \t]*$"  # setext underlines
    r"| {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$"  # thematic breaks
    r"| {0,3}\[[^\]]+\]:)"  # link reference definitions
)
# A table's delimiter row (`--|--`, `| :-- | --: |`): the paragraph around it is a table, pipes or not.
_TABLE_DELIMITER = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)+(?:[ \t]*:?-+:?[ \t]*)?\|?[ \t]*$")


def _starts_block(line: str) -> bool:
    return _BLOCK_START.match(line) is not None or opens_fence(line)


def _wrappable(paragraph: list[str]) -> bool:
    if paragraph[0][:1] in (" ", "\t"):  # indented: a list item's continuation or code; keep its place
        return False
    return all(
        not _starts_block(line)
        and not line.endswith(("  ", "\\"))
        and "\t" not in line
        and "  " not in line.strip()  # spaces someone lined up (or a code span's): re-flowing moves them
        and not _TABLE_DELIMITER.match(line)
        for line in paragraph
    )


def normalize_body(text: str, width: int = 100) -> str:
    """Trim, collapse runs of blank lines and wrap prose at `width` (0: no wrapping).

    A lone CR is a line end, as Markdown viewers take it, so the checks that follow see the same lines.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    given = text.split("\n")
    code = code_lines(given)  # a code line keeps its trailing spaces: they are the code's
    lines = [line if index in code or line.endswith("  ") else line.rstrip() for index, line in enumerate(given)]
    out: list[str] = []
    paragraph: list[str] = []
    fence = Fence()

    def flush() -> None:
        if not paragraph:
            return
        if width and _wrappable(paragraph):
            joined = " ".join(line.strip() for line in paragraph)
            wrapped = textwrap.wrap(joined, width=width, break_long_words=False, break_on_hyphens=False)
            # A wrapped line that starts like a list item or heading would change the meaning: keep as written.
            out.extend(wrapped if _wrappable(wrapped) else paragraph)
        else:
            out.extend(paragraph)
        paragraph.clear()

    for line in lines:
        was_open = fence.marker is not None
        if fence.feed(line):
            if not was_open:
                flush()
            out.append(line)
            continue
        if not line.strip():
            flush()
            if out and out[-1] != "":
                out.append("")
            continue
        paragraph.append(line)
    flush()
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out)


# Bidirectional embeddings and overrides: invisible, they reorder how the text around them displays, so
# a title or body can show one thing and say another ("Trojan Source", CVE-2021-42574). The isolates
# (U+2066-2069) are left alone: they are how Unicode has right-to-left names embedded in other text, and
# what chat and system copy-paste put around one.
_BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e"


def _is_control(char: str) -> bool:
    """A control character (tab, line ends and NUL included), a Unicode line or paragraph separator, or a
    bidirectional control."""
    return unicodedata.category(char) == "Cc" or char in "\u2028\u2029" or char in _BIDI_CONTROLS


def _named(char: str) -> str:
    name = f"U+{ord(char):04X}"
    return (
        name + " (a bidirectional control: it reorders how the text around it displays)"
        if char in _BIDI_CONTROLS
        else name
    )


def control_character(text: str) -> str | None:
    """How to name the first control character of `text` (`a tab`, `U+001B`), or None when it has none.

    One-line fields (title, area, status, section ...) refuse them: a tab in a title fails the lint rule
    set (md010) in a way fmt cannot repair, and other control characters do not display at all.
    """
    for char in text:
        if _is_control(char):
            return {"\t": "a tab", "\n": "a newline", "\r": "a carriage return"}.get(char, _named(char))
    return None


# A terminal's colour or cursor sequence (ANSI CSI, or a two-character escape), as pasted from a log.
_TERMINAL_ESCAPE_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


def stray_control(text: str) -> tuple[int, str] | None:
    """(line, name) of the first control character of multi-line `text` other than a tab or a line end,
    or None. Markdown viewers do not show them, and a NUL or an escape is no text at all."""
    for number, line in enumerate(text.split("\n"), start=1):
        for char in line.rstrip("\r"):
            if char != "\t" and _is_control(char):
                name = _named(char)
                if char == "\x1b":
                    name += " (an escape: colour codes pasted from a terminal?)"
                elif char == "\r":
                    name = "a carriage return"
                return number, name
    return None


def printable_body(text: str) -> str:
    """`text` with terminal escape sequences removed and every other control character but tabs and line
    ends dropped: an automated writer's way with a pasted log (people are told instead)."""
    text = _TERMINAL_ESCAPE_RE.sub("", text)
    return "".join(char for char in text if char in "\t\n\r" or not _is_control(char))


def one_line(text: str) -> str:
    """Whitespace and control characters, newlines included, collapsed to single spaces (the automated
    writers' way with a one-line field; people are told instead); terminal escape sequences go whole."""
    text = _TERMINAL_ESCAPE_RE.sub("", text)
    cleaned = "".join(" " if _is_control(char) else char for char in text)
    return " ".join(cleaned.split())


def with_article(noun: str) -> str:
    """`noun` after "a" or "an" as it is spoken ("an insight", "a decision", "an episode")."""
    return f"{'an' if noun[:1].lower() in 'aeio' else 'a'} {noun}"


def clip(text: str, limit: int) -> str:
    """`text` at most `limit` characters: cut at a word boundary past the middle, else hard, ending in `…`."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"
