"""Text as the write path takes it from people and machines: printable bodies, one-line fields, clipping.

Control characters are found here (a body may hold tabs and line ends, a one-line field nothing of the
kind); what a body needs to stand in its file is markdown/body.py's to do. Stdlib only.
"""

from __future__ import annotations

import re
import unicodedata

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


# Every control character _is_control knows but tab and line feed (category Cc is U+0000-001F, U+007F-009F).
_STRAY_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029" + _BIDI_CONTROLS + "]")


def stray_control(text: str) -> tuple[int, str] | None:
    """(line, name) of the first control character of multi-line `text` other than a tab or a line end,
    or None. Markdown viewers do not show them, and a NUL or an escape is no text at all."""
    if not _STRAY_CONTROL_RE.search(text.replace("\r\n", "\n")):
        return None
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
