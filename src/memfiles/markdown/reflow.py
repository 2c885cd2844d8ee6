"""Prose wrapped at the write path's width: only paragraphs with a line past it, and only between words.

A paragraph (at the margin, in a list item or in a quote) with a line longer than `width` is re-flowed
under its own container's markers (`- ` then two spaces, `> ` on every line). Never re-flowed: code,
tables, headings, HTML, and anything that is not a paragraph. A code span is never broken, nor a link's
`<destination>`. A word that would open a block at the start of a line (`#`, `-`, `1.`, `>`, `<div`,
a fence, a table row) is kept on the line before it, so the wrap needs no escapes; a hard break (two
spaces, or a backslash, at a line's end) stays where it was.
"""

from __future__ import annotations

import re

from memfiles.format.grammar import code_spans, opens_fence
from memfiles.markdown.reader import blocks

# The HTML blocks that may interrupt a paragraph (CommonMark 4.6, kinds 1-6), by how a line opens them.
_BLOCK_TAGS = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|"
    "div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h[1-6]|head|header|hr|html|iframe|"
    "legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|section|source|summary|"
    "table|tbody|td|tfoot|th|thead|title|tr|track|ul|script|pre|style|textarea"
)
# A word that would open a block at a line's start and has no plain escape: kept on the line before it.
_RISKY = re.compile(
    r"^(?:\*{3,}$|_{3,}$" rf"|<(?:!--|\?|![A-Za-z]|!\[CDATA\[|/?(?:{_BLOCK_TAGS})(?:[\s/>\x00]|$)))",
    re.IGNORECASE,
)
# A word that would open a block at a line's start (or that a linter would read so: `2.` after a
# paragraph's line, `#tag`), but shows the same escaped: escaped where a wrap puts it first.
_ESCAPED = re.compile(r"^(?:(#|>|\||[-+*](?=\x00|$))|\d{1,9}(?=[.)](?:\x00|$)))")
# A word that is a setext underline when alone on its line: kept with the word after it.
_UNDERLINE = re.compile(r"^(?:=+|-+)$")
_GLUE = "\x00"  # stands for a space that must not become a line break
_MARKER = re.compile(r"[-*+]|\d{1,9}[.)]")


def _continuation(prefix: str) -> str:
    """The prefix of a paragraph's later lines from its first line's: quote markers kept, a list
    marker (and the text before it) turned into spaces."""
    out = []
    for part in re.split(r"(>)", prefix):
        out.append(part if part == ">" else _MARKER.sub(lambda m: " " * len(m.group(0)), part))
    return "".join(out)


def _units(text: str) -> list[str]:
    """The words of `text`, a code span or a `<destination>` one unit, a risky word glued to the one before."""
    chars = list(text)
    for start, end in code_spans(text):
        for at in range(start, end):
            if chars[at] == " ":
                chars[at] = _GLUE
    for match in re.finditer(r"\]\(<[^<>\n]*>", text):
        for at in range(match.start(), match.end()):
            if chars[at] == " ":
                chars[at] = _GLUE
    words = [word for word in "".join(chars).split(" ") if word]
    units: list[str] = []
    carry = ""  # an underline-like word waiting for the word after it
    for word in words:
        if carry:
            word, carry = carry + _GLUE + word, ""
        if _UNDERLINE.match(word):
            carry = word
        elif units and (_RISKY.match(word) or opens_fence(word)):
            units[-1] += _GLUE + word
        else:
            units.append(word)
    if carry:
        if units:
            units[-1] += _GLUE + carry
        else:
            units.append(carry)
    return units


def _escaped(unit: str) -> str:
    match = _ESCAPED.match(unit)
    if match is None:
        return unit
    return "\\" + unit if match.group(1) else unit[: match.end()] + "\\" + unit[match.end() :]


def _fill(units: list[str], first: str, rest: str, width: int) -> list[str]:
    lines: list[str] = []
    current = ""
    for unit in units:
        prefix = rest if lines else first
        if current and len(prefix) + len(current) + 1 + len(unit) > width:
            lines.append(prefix + current)
            current = _escaped(unit)
        else:
            current = f"{current} {unit}" if current else unit
    if current:
        lines.append((rest if lines else first) + current)
    return [line.replace(_GLUE, " ") for line in lines]


def _hard_break(line: str) -> str | None:
    """The hard break that ends a line (a backslash, or two spaces or more), if any; no pattern reads
    back through a run of spaces."""
    if line.endswith("\\"):
        return "\\"
    return "  " if line.endswith("  ") else None


def _rewrap(source: list[str], content: list[str], width: int) -> list[str] | None:
    """The paragraph whose lines are `source` (markdown-it's `content` lines: the text without its
    containers' markers), wrapped; None when it is better left alone."""
    if len(source) != len(content):
        return None
    at = source[0].find(content[0].strip()) if content[0].strip() else -1
    if at < 0 or "\t" in source[0][:at]:
        return None
    first = source[0][:at]
    rest = _continuation(first)
    segments: list[tuple[str, str]] = []  # (text, the hard break that ends it)
    words: list[str] = []
    for number, line in enumerate(content):
        stripped = line.strip(" ")
        brk = _hard_break(line.rstrip("\n")) if number < len(content) - 1 else None
        if brk:
            stripped = stripped.rstrip(" ") if brk == "  " else stripped
            words.append(stripped)
            segments.append((" ".join(words), brk if brk == "  " else ""))
            words = []
        else:
            words.append(stripped)
    segments.append((" ".join(words), ""))
    out: list[str] = []
    for text, brk in segments:
        filled = _fill(_units(text), first if not out else rest, rest, width)
        if not filled:
            return None
        # a hard break's spaces past the width would read as prose left unwrapped (md013): a backslash breaks alike
        filled[-1] += "\\" if brk and len(filled[-1]) + len(brk) > width else brk
        out.extend(filled)
    return out


def wrap_paragraphs(lines: list[str], width: int) -> list[str]:
    """`lines` with every paragraph that has a line past `width` re-flowed at `width` (0: none)."""
    if width <= 0 or all(len(line) <= width for line in lines):
        return lines
    tokens = blocks("\n".join(lines))
    found = []
    for index, token in enumerate(tokens):
        if token.type != "paragraph_open" or token.map is None:
            continue
        first, end = token.map
        if any(len(line) > width for line in lines[first:end]):
            found.append((first, end, tokens[index + 1].content.split("\n")))
    out = list(lines)
    for first, end, content in reversed(found):
        wrapped = _rewrap(out[first:end], content, width)
        if wrapped is not None:
            out[first:end] = wrapped
    return out
