"""The write path's Markdown clean-up: rewrites that change how a body looks in a file, never what it says.

Applied to every body and section intro the write path stores (after the prose is wrapped), so that
what memfiles writes passes the lint rule set (docs/lint.md). Each step is one a reader of the rendered
Markdown cannot see: tabs become spaces, trailing spaces go, a bare URL gets the angle brackets that
make it the same link, `#tag` where a line's text starts (in a list item or quote too) is escaped so
it stays text, `*`/`+` bullets become the `-` the metadata uses, a list, heading or fence gets the
blank line around it that it has in the rendering anyway, and a long list item (its whole paragraph)
or quote line is wrapped under its own marker. Code (fenced or indented) is left as written apart from
trailing spaces. Stdlib only: no PyMarkdown on the write path.

`fix_markup` is every step but wrapping; fmt uses it (fmt never re-wraps a body: @@D-006).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from memfiles.format.grammar import Fence, code_lines, code_spans, opens_fence, unquoted

_LIST = re.compile(r"^( {0,3})([-*+]|\d{1,9}[.)])( +)(?=\S)")
_BULLET = re.compile(r"^(\s*)[*+]( +)(?=\S)")
_THEMATIC = re.compile(r"^ {0,3}([-*_])( *\1){2,} *$")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?: |$)")
# `#word` where a line's text starts, after the quote and list markers it sits in (md018)
_HASH_WORD = re.compile(r"^((?: {0,3}(?:>|[-*+] +|\d{1,9}[.)] +))* *)(#+)(?=[^\s#])")
_QUOTE = re.compile(r"^( {0,3}>+ ?)")
_URL = re.compile(r"(?:https?|ftps?)://[^\s<>`\"]+")
_RISKY = re.compile(r"^(?:#|[-*+]$|\d{1,9}[.)]$|>|\||=+$|-+$|\*{2,}$|_+$|\[\^?[^\]]*\]:)")

# The white space a wrap may break at or drop: a no-break space (U+00A0, U+202F) is text, not a gap.
_SPACES = " \t"


def _risky_start(word: str) -> bool:
    """A word that would start a block (heading, list, quote, table, fence...) if a wrap put it first."""
    return bool(_RISKY.match(word)) or opens_fence(word)


def _is_block_start(line: str) -> bool:
    stripped = line.lstrip()
    return bool(
        not stripped
        or _LIST.match(line)
        or _HEADING.match(line)
        or _QUOTE.match(line)
        or stripped.startswith("|")
        or opens_fence(line)
        or line.startswith(("    ", "\t"))
    )


def _is_paragraph(line: str) -> bool:
    return bool(line.strip()) and not _is_block_start(line)


def _continues(line: str, following: str) -> bool:
    """Whether `following` goes on with the paragraph `line` is in, so that a hard break at the end of
    `line` renders: read inside the quotes `line` stands in and from where its text starts (a list
    item's text column), a line four columns further in is text (indented code cannot interrupt a
    paragraph), and any other line is text unless it starts a block; a deeper quote starts one, and a
    line with fewer quote markers goes on only as a lazy continuation (text)."""
    if not following.strip():
        return False
    depth, text = unquoted(line)
    after, rest = unquoted(following)
    if after > depth:
        return False
    item = _LIST.match(text)
    column = len(item.group(0)) if item else len(text) - len(text.lstrip(" "))
    indent = len(rest.expandtabs(4)) - len(rest.expandtabs(4).lstrip(" "))
    rest = rest.lstrip(" \t")
    text = _is_paragraph(rest) or (bool(_LIST.match(rest)) and not _interrupts(rest))  # `2. two` goes on
    return indent >= (column if after == depth else 0) + 4 or text


def _outside(spans: list[tuple[int, int]], position: int) -> bool:
    return not any(start <= position < end for start, end in spans)


def _bracket_urls(line: str) -> str:
    spans = code_spans(line)
    out, last = [], 0
    for match in _URL.finditer(line):
        start, end = match.span()
        url = match.group(0)
        before = line[start - 1] if start else ""
        if (before and before in "<[=") or line[max(0, start - 2) : start] == "](" or not _outside(spans, start):
            continue
        while url and url[-1] in ".,;:!?'\"":
            url = url[:-1]
        if url.endswith(")") and url.count("(") < url.count(")"):
            url = url[:-1]
        end = start + len(url)
        out.append(line[last:start] + f"<{url}>")
        last = end
    out.append(line[last:])
    return "".join(out)


def _fence_roles(lines: list[str]) -> list[str]:
    """For each line: "open", "close" or "in" for the lines of a fenced code block, "" outside one."""
    return _blocks(lines).roles


def fix_markup(text: str) -> str:
    """Every clean-up step but wrapping; `text` is a body as the write path normalised it."""
    lines = text.split("\n")
    roles, html, html_starts, code = _blocks(lines)
    # fenced lines are in it too (`roles` comes first for those); a fence an HTML block hides is the block's
    indented_code = code - set(html)
    out: list[str] = []
    after_code = False  # the previous line belongs to an indented code block
    lazy = ""  # "list" or "quote": the paragraph the lines above make up is a list item's or a quote's
    spanned = _spanned_lines(lines, roles, indented_code, html)
    for index, line in enumerate(lines):
        role = roles[index]
        lazy_before = lazy
        lazy_quote = lazy == "quote"  # the line above is a quote's, or a lazy line of its paragraph
        if role or index in indented_code or index in html:
            lazy = ""
        if role:
            # A fence gets a blank line above and below it (md031). In a quote that line is the quote's
            # markers only, and only next to a line of the same quote: the line before may be a lazy
            # continuation, which the quote's fence goes on after.
            depth, text = unquoted(line)
            top_level = not line.startswith(" ") and not text.startswith(" ")  # not in a list item
            before = unquoted(out[-1]) if out else (0, "")
            if role == "open" and top_level and before[1].strip() and before[0] >= depth:
                out.append(">" * depth)
            elif role == "open" and depth and before[1].strip() and not lazy_quote and _blank_before(out[-1], line):
                out.append("")  # a quote opening with its fence, after a list or a table
            out.append(line if role == "in" else line.rstrip())  # a code line is kept as written
            after = unquoted(lines[index + 1]) if index + 1 < len(lines) else (0, "")
            if role == "close" and top_level and after[1].strip() and after[0] >= depth:
                out.append(">" * depth)
            continue
        if index in indented_code:
            if out and out[-1].strip() and _HEADING.match(out[-1]):
                out.append("")  # code right under a heading: md022's blank line, which renders the same
            out.append(line)  # as written: its tabs and trailing spaces are the code's
            after_code = True
            continue
        html_first = index in html_starts
        if index in html and not html_first:
            # as written: a bullet, a URL or a `#` in HTML is no Markdown; `<pre>`'s spaces are its text
            out.append(line if html[index] is None else line.rstrip())
            after_code = False
            continue
        # The first line of an HTML block, and a line a code span crosses a line end in, keep their text as
        # written; only a list marker before it is rewritten, and the blank lines around it are decided.
        verbatim = index in html or index in spanned
        if index in html and html[index] is not None:
            line = line.rstrip()
        elif not verbatim:
            line = line.expandtabs(4)
            following = lines[index + 1] if index + 1 < len(lines) else ""
            goes_on = _continues(line, following) or (
                lazy == "quote" and _kind(following) == "quote" and _is_paragraph(unquoted(following)[1].lstrip())
            )  # a lazy line's paragraph is the quote's, which the next quote line goes on with
            hard_break = line.endswith("  ") and not roles[min(index + 1, len(lines) - 1)] and goes_on
            line = line.rstrip() + ("  " if hard_break and line.strip() else "")
        # four columns in from a paragraph line's text, `* x` goes on with that paragraph: text, no bullet
        as_text = bool(out) and out[-1].strip() and not after_code and _continues(out[-1], line)
        as_text = as_text and not _HEADING.match(out[-1]) and not _is_paragraph(line.lstrip())
        if not _THEMATIC.match(line) and not as_text:
            line = _BULLET.sub(r"\1-\2", line)
        if not verbatim:
            line = _HASH_WORD.sub(lambda m: m.group(1) + "\\" + m.group(2), line)
            line = _bracket_urls(line)
        top_item = bool(_LIST.match(line)) and not line.startswith(" ")
        new_list = top_item and _marker(_open_list(out)) not in ("", _marker(line))
        # an indented line with no list item above it in its block continues a paragraph, not an item:
        # a list after it interrupts that paragraph (md032), as after any paragraph line
        after_prose = top_item and bool(out) and _kind(out[-1]) == "indented" and not _open_list(out)
        after_prose = after_prose and not _LIST.match(out[-1])  # an item one to three columns in is a list's
        # A text line after a list item's or a quote's line is a lazy continuation of its paragraph: the
        # next item or quote line goes on with that list or quote, and no blank line may split them.
        now = _kind(line)
        before = _open_list(out) if lazy == "list" else ">" if lazy == "quote" else out[-1] if out else ""
        lazy_goes_on = lazy == now and (now == "quote" or not new_list)
        # An HTML block at the margin ends a list, quote, table, heading or item text above it (md032,
        # md022, md058); never after an item that opens a fence the HTML ends (the blank line would be code).
        above = _kind(out[-1]) if out else "text"
        ends_block = html_first and line.startswith("<") and lazy_before in ("list", "quote")
        ends_block = ends_block or (html_first and line.startswith("<") and above in _ENDED_BY_HTML)
        # a list item one to three columns in, right after a paragraph's line, interrupts it as one at the
        # margin does (md032)
        indented_item = _interrupts(line) and line.startswith(" ") and not lazy and not _open_list(out)
        indented_item = indented_item and bool(out) and _kind(out[-1]) == "text" and not _EMPTY_ITEM.match(out[-1])
        if now == "quote" and out and out[-1].strip():
            # inside a quote the same rules hold between two of its lines (or a lazy line and the next):
            # the blank line between them is the quote's markers only
            depth, inner = unquoted(line)
            above_depth, above = unquoted(out[-1]) if _kind(out[-1]) == "quote" else (depth, out[-1].lstrip())
            same = _kind(out[-1]) == "quote" or lazy == "quote"
            above = _quoted_item(out, depth) or above  # a lazy line of an item in the quote is the item's
            lists = _kind(inner) in ("list", "heading") or _kind(above) == "heading"  # md032, md022 (not tables)
            lists = lists and not _item_opens_fence(above) and not _EMPTY_ITEM.match(above)  # (`>` would be code)
            if same and above_depth == depth and above.strip() and lists and _needs_blank(above, inner):
                out.append(">" * depth)
        if (
            out
            and not (html_first and _item_opens_fence(out[-1]))
            and out[-1].strip()
            and line.strip()
            and not lazy_goes_on
            and not _after_empty_item(out, line)
            and (
                _needs_blank(before if lazy else out[-1], line)
                or after_code
                or new_list
                or after_prose
                or ends_block
                or indented_item
            )
        ):
            out.append("")  # lists, quotes, headings and tables get a blank line around them (md032, md022, md058)
        if not line.strip() or now not in ("list", "quote", "text", "indented"):
            lazy = ""
        elif now in ("list", "quote") or (now == "indented" and _LIST.match(line)):
            lazy = "list" if now == "indented" else now
        after_code = False
        out.append(line)
    return "\n".join(out)


def _spanned_lines(lines: list[str], roles: list[str], code: frozenset[int], html: dict) -> set[int]:
    """The lines a code span crosses a line end in (its first and last line too): read paragraph by
    paragraph, runs of lines outside fences, code and HTML with no blank line between."""
    found: set[int] = set()
    run: list[int] = []
    for index in [*range(len(lines)), len(lines)]:
        inside = index < len(lines) and lines[index].strip() and not roles[index]
        if inside and index not in code and index not in html:
            # a span never crosses into another block: a heading, or a line that does not go on with the
            # paragraph above it (a list item, a quote, a table row), starts a run of its own
            if run and (_HEADING.match(lines[run[-1]]) or not _continues(lines[run[-1]], lines[index])):
                _crossed(lines, run, found)
                run = []
            run.append(index)
            continue
        _crossed(lines, run, found)
        run = []
    return found


def _crossed(lines: list[str], run: list[int], found: set[int]) -> None:
    """Add to `found` the lines of `run` (one paragraph's) that a code span crosses a line end in."""
    if len(run) < 2:
        return
    text = "\n".join(lines[n] for n in run)
    starts = [0]
    for n in run[:-1]:
        starts.append(starts[-1] + len(lines[n]) + 1)
    for start, end in code_spans(text):
        if "\n" in text[start:end]:
            found.update(n for n, at in zip(run, starts, strict=True) if at < end and start <= at + len(lines[n]))


def _after_empty_item(out: list[str], line: str) -> bool:
    """Whether `line`, an item, goes on with the list an empty item above it opened (`-` then `- b`): an
    empty item at the start of a block is a list's, not a paragraph line (after one, `-` would be a
    heading's underline), so no blank line goes between; one would make the list loose."""
    if not out or not _EMPTY_ITEM.match(out[-1]) or (len(out) > 1 and out[-2].strip()) or line.startswith(" "):
        return False
    # `line`'s bullet is `-` by now, so only a `-` (or the same ordered delimiter) above is its list's
    return out[-1].strip()[-1] in "-.)" and _marker(line) == out[-1].strip()[-1]


_ENDED_BY_HTML = ("list", "quote", "table", "heading", "indented")
_EMPTY_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]*$")  # `1.` alone: an item, not a paragraph line


def _blank_before(previous: str, line: str) -> bool:
    """_needs_blank, but never after an item that opens a fence, where the blank line would be code."""
    return not _item_opens_fence(previous) and _needs_blank(previous, line)


def _quoted_item(out: list[str], depth: int) -> str | None:
    """The text of the list item (in a quote `depth` deep) whose paragraph the last lines of `out` go
    on, when the last of them is not that item's own line; None when they go on no item."""
    for number, line in enumerate(reversed(out)):
        level, inner = unquoted(line)
        if not inner.strip() or level not in (depth, 0) or (level == 0 and _kind(line) != "text"):
            return None
        if _LIST.match(inner.lstrip(" ")):
            return inner if number else None
        if not _is_paragraph(inner.lstrip(" ")):
            return None
    return None


def _item_opens_fence(line: str) -> bool:
    """A list item whose text opens a fence (`- ```py`), or a line under an item that does: the lines
    after it, up to where the item ends, are that fence's, blank ones included."""
    item = _LIST.match(line)
    return opens_fence(line[item.end() :] if item else line.lstrip(" "))


def _kind(line: str) -> str:
    if line.startswith(" "):
        return "indented"
    if _LIST.match(line):
        return "list"
    if _HEADING.match(line):
        return "heading"
    if _QUOTE.match(line):
        return "quote"
    if line.startswith("|"):
        return "table"
    return "text"


def _open_list(out: list[str]) -> str:
    """The last top-level list item above, within the current block (no blank line between), or ""."""
    for line in reversed(out):
        if not line.strip():
            return ""
        if _LIST.match(line) and not line.startswith(" "):
            return line
    return ""


def _marker(line: str) -> str:
    """The kind of list a list line belongs to: `-` for bullets, `.` or `)` for ordered ones."""
    match = _LIST.match(line)
    return "" if match is None else match.group(2)[-1] if match.group(2)[-1] in ".)" else "-"


_ORDERED = re.compile(r"^ {0,3}(\d{1,9})[.)]")


def _interrupts(line: str) -> bool:
    """Whether the list item `line` opens may interrupt a paragraph (CommonMark): a bullet may, and an
    ordered item only when it is numbered 1; neither when it is empty."""
    ordered = _ORDERED.match(line)
    return bool(_LIST.match(line)) and (ordered is None or int(ordered.group(1)) == 1)


def _needs_blank(previous: str, line: str) -> bool:
    """Whether a blank line belongs between two non-blank lines; only where it changes no rendering: the
    second line starts a block that would interrupt the first anyway."""
    before, now = _kind(previous), _kind(line)
    if "heading" in (before, now):
        return True  # a heading is a block of one line: nothing before or after it can continue it
    if now == "list":
        if before == "text" and not _interrupts(line):
            return False  # `2023. Then it broke.` after a paragraph's line is that paragraph's text
        return before not in ("list", "indented") or (before == "list" and _marker(previous) != _marker(line))
    if now in ("quote", "table"):
        return before != now
    return before == "table"  # a line after a table without a pipe would be read as one more row


def _prefixes(line: str) -> tuple[str, str, str] | None:
    """(first-line prefix, continuation prefix, text) for a wrappable line, or None to leave it."""
    quote = _QUOTE.match(line)
    if quote:
        prefix = quote.group(1) if quote.group(1).endswith(" ") else quote.group(1) + " "
        return prefix, prefix, line[quote.end() :].strip(_SPACES)
    item = _LIST.match(line)
    if item:
        return item.group(0), " " * len(item.group(0)), line[item.end() :].strip(_SPACES)
    if _HEADING.match(line) or line.lstrip().startswith("|"):
        return None
    indent = line[: len(line) - len(line.lstrip(_SPACES))]
    return indent, indent, line.strip(_SPACES)


def _escape(word: str) -> str:
    """`word` as it can start a continuation line and stay text (`\\#12`, `1\\.`, `\\-`)."""
    if word[0] in "#>|=*+-_`~[":
        return "\\" + word
    match = re.match(r"^(\d{1,9})([.)])$", word)
    if match:
        return f"{match.group(1)}\\{match.group(2)}"
    return word


# A word that would open an HTML block if a wrap put it first, one of the kinds that interrupt a paragraph
# (CommonMark 4.6, kinds 1-6: `<div>`, `</p>`, `<pre`, `<!--`, `<?php`); never moved there.
_BLOCK_TAGS = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|"
    "div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h[1-6]|head|header|hr|html|iframe|"
    "legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|section|source|summary|"
    "table|tbody|td|tfoot|th|thead|title|tr|track|ul"
)

# The HTML blocks of CommonMark 4.6 as lines open them, each with what ends it: a line holding the end
# string (that line included), or, for kinds 6 and 7, a blank line (not included). Kind 7 (any lone
# complete tag) cannot interrupt a paragraph.
_HTML_KINDS: tuple[tuple[re.Pattern[str], str | None], ...] = (
    (re.compile(r"^<(?:script|pre|style|textarea)(?:[ \t>]|$)", re.I), "</"),
    (re.compile(r"^<!--"), "-->"),
    (re.compile(r"^<\?"), "?>"),
    (re.compile(r"^<![A-Za-z]"), ">"),
    (re.compile(r"^<!\[CDATA\["), "]]>"),
    (re.compile(rf"^</?(?:{_BLOCK_TAGS})(?:[ \t>]|/>|$)", re.I), None),
)
_LONE_TAG = re.compile(
    r"^(?:<[A-Za-z][A-Za-z0-9-]*(?:\s+[A-Za-z_:][\w.:-]*(?:\s*=\s*(?:[^\s\"'=<>`]+|'[^']*'|\"[^\"]*\"))?)*\s*/?>"
    r"|</[A-Za-z][A-Za-z0-9-]*\s*>)\s*$"
)
_KIND_ONE_END = re.compile(r"</(?:script|pre|style|textarea)>", re.I)


def _opens_html(text: str) -> bool:
    """Whether `text`, at a line's start, opens an HTML block of a kind that interrupts a paragraph (1-6):
    a word a wrap may not put first, or an item's text that is no paragraph."""
    return any(start.match(text) for start, _ in _HTML_KINDS)


_KIND_ONE_START = re.compile(r"<(?:script|pre|style|textarea)(?:[\s>]|$)", re.I)


class Blocks(NamedTuple):
    """What `_blocks` finds in a body's lines."""

    roles: list[str]  # each line's fence role: "open", "close", "in" or ""
    html: dict[int, tuple[str, str] | None]  # the lines of HTML blocks, each with its wrap's prefixes
    starts: set[int]  # the first line of each HTML block
    code: frozenset[int]  # code_lines: indented code, and fenced lines as grammar.py reads them


def _blocks(lines: list[str]) -> Blocks:
    """The fenced code and HTML blocks of `lines`, in one pass, since either hides the other's opening.

    HTML blocks are read past quote markers and a list item's marker or indent, never inside indented
    code, and end with the quote they stand in. Inside one nothing is Markdown, so a break between words
    changes nothing (a plain wrap, no escapes): each of its lines comes with the (first, other) prefixes a
    wrap of it keeps, its container's. None instead: the line is kept as written, because its block holds
    `<pre>`, `<textarea>`, `<script>` or `<style>`, whose line breaks are the text's, or is a comment or
    the like (kinds 2-5), or the line does not start with its container's prefix."""
    code = code_lines(lines)
    fence = Fence()
    roles: list[str] = []
    found: dict[int, tuple[str, str] | None] = {}
    starts: set[int] = set()  # the first line of each block
    block: list[int] = []
    end: str | None = None  # inside an HTML block: what ends it ("" for a blank line)
    depth, first, rest = 0, "", ""  # the block's quote depth, its first line's prefix and the others'
    paragraph = False  # the line before is prose, which a kind-7 tag cannot interrupt
    column = 0  # where the text of the list item the lines stand under starts (0: under none)
    block_column = 0  # where the open HTML block's text starts inside its quote
    quoted = 0  # the quote depth of the line before

    def close() -> None:
        loose = end in ("", "-->") and not any(_KIND_ONE_START.search(lines[n]) for n in block)
        for n in block:
            lead = first if n == block[0] else rest
            found[n] = (lead, rest) if loose and lines[n].startswith(lead) else None
        block.clear()

    for index, line in enumerate(lines):
        if end is not None and unquoted(line, depth)[0] < depth:
            close()  # the quote it stood in ended, and the block with it
            end = None
        if end is not None:
            inner = unquoted(line, depth)[1]
            if inner.strip() and len(inner) - len(inner.lstrip(" ")) < block_column:
                close()  # left of the item's text: the item it stood in ended, and the block with it
                end = None
        if end is None:
            if fence.feed(line, index + 1):
                roles.append("open" if fence.opened else "close" if fence.marker is None else "in")
                paragraph = False
                continue
            roles.append("")
            if index in code:
                paragraph = False
                continue
            depth, inner = unquoted(line)
            if depth > quoted:
                paragraph = False  # a quote starts here: its first line continues no paragraph
            quoted = depth
            text = inner.lstrip(" ")
            indent = len(inner) - len(text)
            if text and indent < column and not _LIST.match(text) and not paragraph:
                column = 0  # left of the item's text after a blank line: the item has ended
            listed = False
            while item := _LIST.match(text):  # `- - <div>`: the block is the inner item's
                text, listed = text[item.end() :], True
            if listed:
                column = len(inner) - len(text)
            if text.strip() and indent > column + 3:
                # four columns or more in from where the text stands: a paragraph's text, or code
                paragraph = paragraph or bool(text.strip())
                continue
            for start, closing in _HTML_KINDS:
                if start.match(text):
                    end = closing or ""
                    break
            else:
                if _LONE_TAG.match(text) and not paragraph:
                    end = ""
            paragraph = bool(text.strip()) and end is None
            if end is None:
                continue
            first = line[: len(line) - len(text)]
            rest = line[: len(line) - len(inner)] + " " * (len(inner) - len(text))
            if indent < column and not listed:
                column = 0  # an HTML block left of the item's text ends the item
            block_column = column  # under a list item, its text column; at the margin 0
        else:
            roles.append("")
            text = unquoted(line, depth)[1]
        if end == "" and not text.strip():
            close()
            end = None
            continue
        if end == "" and text.lstrip(" ").startswith("|") and block:
            # PyMarkdown, the rule set's judge, ends the block at a table row (CommonMark reads the row as
            # the block's): read as a table, the row gets the blank line md058 asks for
            close()
            end = None
            continue
        if not block:
            starts.add(index)
        block.append(index)
        paragraph = False
        if end and (_KIND_ONE_END.search(text) if end == "</" else end in text):
            close()
            end = None
    if block:
        close()
    return Blocks(roles, found, starts, code)


def _html_wrap(line: str, width: int, first: str, rest: str) -> list[str]:
    """A long line of an HTML block broken at spaces outside tags, its first line under `first` and the
    others under `rest` (its container's prefixes): in raw HTML a line break is a space."""
    pieces, depth, current = [], 0, ""
    text = line[len(first) :]
    comment = False  # inside `<!-- -->` there is no tag to keep whole: a break may fall anywhere
    for at, char in enumerate(text):
        if text.startswith("<!--", at):
            comment = True
        elif comment and text.endswith("-->", 0, at + 1):
            comment, depth = False, 0
            current += char
            continue
        if not comment:
            depth += char == "<"
            depth -= char == ">" and depth > 0
        if char == " " and not depth:
            pieces.append(current)
            current = ""
        else:
            current += char
    pieces.append(current)
    out, now = [], []
    for word in (p for p in pieces if p):
        lead = rest if out else first
        if now and len(lead) + len(" ".join([*now, word])) > width:
            out.append(lead + " ".join(now))
            now = []
        now.append(word)
    out.append((rest if out else first) + " ".join(now))
    return out


def _unmovable(word: str) -> bool:
    """A word no wrap may put at the start of a line: it would start a block there."""
    return _risky_start(word) or _opens_html(word)


# An angle-bracketed link destination, `[l](<u v>)`: a line end may not fall inside it.
_BRACKETED_DESTINATION = re.compile(r"\]\(<[^<>\n]*>")


def _words(text: str) -> list[tuple[str, bool]]:
    """`text` cut where a wrap may break it, each piece with whether it starts inside a code span: at
    every run of spaces or tabs outside code, and at single spaces inside it (a code span's longer runs of
    spaces are its content, and a line end there would render as one space); never inside an
    angle-bracketed link destination."""
    spans = code_spans(text)
    whole = [m.span() for m in _BRACKETED_DESTINATION.finditer(text)]
    pieces, begin = [], 0
    for gap in re.finditer(r"[ \t]+", text):
        if not _outside(whole, gap.start()):
            continue
        if _outside(spans, gap.start()) or gap.group(0) == " ":
            pieces.append((text[begin : gap.start()], not _outside(spans, begin)))
            begin = gap.end()
    pieces.append((text[begin:], not _outside(spans, begin)))
    return [(word, code) for word, code in pieces if word]


def wrap_line(line: str, width: int) -> list[str]:
    """A long list item, quote or paragraph line wrapped at `width` under its own marker.

    No line is made to start with a word that would open a block there, nor to end in a backslash (a
    hard break): the break moves as many words earlier as it takes, or a word outside code is escaped,
    or, where neither is safe, the line stays long. The hard break a line ends in stays, and fits in
    `width` too. A wrap that would turn the first line into a fence's opening is not made."""
    parts = _prefixes(line)
    if parts is None:
        return [line]
    first, rest, text = parts
    hard_break = line.endswith("  ")
    lines: list[str] = []
    prefix, current = first, []

    def length() -> int:
        return len(prefix) + sum(len(word) for word in current) + max(0, len(current) - 1)

    def safe_break() -> int | None:
        """The most words the current line can keep when the rest moves down: the first word moved
        may start a line and the last word kept may end one; None when no such break exists."""
        for keep in range(len(current) - 1, 0, -1):
            if not _unmovable(current[keep]) and not current[keep - 1].endswith("\\"):
                return keep
        return None

    def close(keep: int) -> None:
        nonlocal prefix, current
        lines.append(prefix + " ".join(current[:keep]))
        prefix, current = rest, current[keep:]

    for word, in_code in _words(text):
        if current and length() + 1 + len(word) > width:
            risky, ends_badly = _unmovable(word), current[-1].endswith("\\")
            keep = safe_break() if risky or ends_badly else len(current)
            if keep is not None:
                close(keep)  # the words after `keep` move down with `word`, so no line starts or ends badly
                current.append(word)
            elif ends_badly or in_code or _opens_html(word):
                current.append(word)  # no safe place to break here: the line stays long
            else:
                close(len(current))
                current.append(_escape(word))
        else:
            current.append(word)
    if hard_break and length() + 2 > width:
        keep = safe_break()  # the two spaces of the hard break must fit too
        if keep is not None:
            close(keep)
    lines.append(prefix + " ".join(current))
    if hard_break:
        lines[-1] += "  "
    if len(lines) > 1 and opens_fence(lines[0].lstrip(" ")) and not opens_fence(line.lstrip(" ")):
        return [line]  # cut before its closing backticks, a code span at the line's start would open a fence
    return lines


def clean_body(text: str, width: int) -> str:
    """`text` (a normalised body) as the write path stores it: `fix_markup`, then long lines wrapped."""
    cleaned = fix_markup(text)
    if width <= 0:
        return cleaned
    lines = cleaned.split("\n")
    roles, html, _, _ = _blocks(lines)
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        code = line.startswith("    ") and (not out or not out[-1].strip() or out[-1].startswith("    "))
        if index in html:
            prefixes = html[index]
            out.extend(_html_wrap(line, width, *prefixes) if prefixes and len(line) > width else [line])
            index += 1
            continue
        code = code or _opens_with_code(line) or _holds_a_line_block(line)
        end, prefix = _paragraph_run(lines, roles, index) if not roles[index] and not code else (index + 1, "")
        run = lines[index:end]
        if roles[index] or code or all(len(part) <= width for part in run) or " " not in " ".join(run).strip():
            out.extend(run)
        else:
            # A list item's or quote's paragraph is re-flowed whole: wrapping each of its lines alone would
            # leave a stub of a word or two under every long one. Joined by spaces, it renders the same.
            joined = " ".join([line.rstrip(_SPACES), *(part[len(prefix) :].strip(_SPACES) for part in run[1:])])
            out.extend(wrap_line(joined + _tail(run), width))
        index = end
    return "\n".join(out)


_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+) *$")


def _holds_a_line_block(line: str) -> bool:
    """A quote or list item line whose text is a heading or a table row: a block of one line, which a wrap
    would cut in two (the rest a paragraph); md013 does not ask it to fit."""
    text = unquoted(line)[1].lstrip(" ")
    while item := _LIST.match(text):
        text = text[item.end() :]
    inside = text != line.lstrip(" ")  # under a quote marker or a list marker
    return inside and (bool(_HEADING.match(text)) or text.startswith("|"))


def _tail(run: list[str]) -> str:
    """The hard break a run's last line ends with ("  "), kept through the re-flow."""
    return "  " if run[-1].endswith("  ") else ""


def _opens_with_code(line: str) -> bool:
    """A list item whose marker is followed by five spaces or more: its text is indented code (CommonMark)."""
    item = _LIST.match(line)
    return item is not None and len(item.group(3)) > 4


def _lined_up(text: str) -> bool:
    """Spaces someone lined up, or a code span's, inside `text` (a trailing hard break aside): joined to
    another line they would be re-flowed, so such a line ends a paragraph run."""
    return "  " in text.rstrip() or "\t" in text


def _paragraph_run(lines: list[str], roles: list[str], start: int) -> tuple[int, str]:
    """(past its last line, the prefix its other lines carry) of the paragraph a list item or quote
    line starts at `start`: the lines after it that go on with the same paragraph under the same prefix
    (for an item, the spaces that indent its text; for a quote, the same `>` marker), with no blank
    line, block, fence or hard break between. `(start + 1, "")` for any other line."""
    first = lines[start]
    item, quote = _LIST.match(first), _QUOTE.match(first)
    if item is not None:
        prefix, opening = " " * len(item.group(0)), first[item.end() :]
    elif quote is not None:
        prefix, opening = quote.group(1), first[quote.end() :]
    else:
        return start + 1, ""
    if not _is_paragraph(opening) or _opens_html(opening) or _lined_up(opening):
        return start + 1, ""  # it opens another block, or holds lined-up spaces: left to wrap_line
    end = start + 1
    while end < len(lines) and not roles[end] and not lines[end - 1].endswith(("  ", "\\")):
        line = lines[end]
        text = line[len(prefix) :]
        marker = _QUOTE.match(line)
        same = line.startswith(prefix) if item is not None else marker is not None and marker.group(1) == prefix
        if not same or text[:1] in ("", " ", "<") or not _is_paragraph(text):
            break  # a line starting with `<` may open an HTML block, which interrupts the paragraph
        if _lined_up(text):
            break
        if _UNDERLINE.match(text) or _THEMATIC.match(text):
            break
        end += 1
    return end, prefix


# --- when the clean-up's output can be trusted without PyMarkdown -------------------------------------

_AUTOLINK = re.compile(r"<(?:https?|ftps?)://[^\s<>]+>")
_SPAN = re.compile(r"(`+)(.+?)\1")
_MARKUP = re.compile(r"[\[\]!|<>\\~]")
_UNDERSCORE_EMPHASIS = re.compile(r"(?:^|[\s(])_|_(?:$|[\s).,;:!?])")
_LOOSE_STAR = re.compile(r"(?:^|\s)\*+(?:\s|$)")
_RISKY_LINE = re.compile(r"^(?:\s|#|\d{1,9}[.)]|-\s{2,}|[-=*_ ]{3,}$|[-*+]\s*$|[-=]+\s*$)")
# What a `- ` item's text may open with, besides what _RISKY_LINE says of a line, and not be vouched for:
# another item or a quote on the item's line (a fence is opens_fence's)
_NESTED_ON_LINE = re.compile(r"^[-+*>](?:\s|$)")


# _HASH_WORD's escape of a `#word`, in the two places needs_scan vouches for: the margin and a `- `
# item (a quote or an ordered item is always scanned)
_ESCAPED_HASH = re.compile(r"^(- )?\\#")
_NESTED_ITEM = re.compile(r"^  - (?=\S)")


def _flat_item(line: str, previous: str) -> str:
    """`line` as needs_scan reads it: a `-` item two columns in right under a `-` item (or another such
    one) is one level of nesting the default rules accept as it is (md005, md007), so it is read as the
    item it is, without its indent; any other line as it is."""
    if _NESTED_ITEM.match(line) and (previous.startswith("- ") or _NESTED_ITEM.match(previous)):
        return line[2:]
    return line


def needs_scan(text: str, width: int) -> bool:
    """False when `text`, as `clean_body` left it, provably passes the default rules: prose with inline
    code, `*`/`**` emphasis, links the clean-up made, flat `-` lists and top-level ``` fences. Anything
    else (headings, links, tables, quotes, nesting, ordered lists, ~~~ fences...) is for PyMarkdown to
    judge; the write path only pays for starting it then."""
    previous = ""
    for role, written in zip(_fence_roles(text.split("\n")), text.split("\n"), strict=True):
        line, previous = _flat_item(written, previous), written
        if width > 0 and len(written) > width and " " in written.strip() and not role:
            return True
        if role:
            if line.startswith((" ", "~", ">")) or unquoted(line)[0]:
                return True  # only a top-level ``` fence is vouched for; one in a quote or an item is not
            continue
        if not line.strip():
            continue
        if _RISKY_LINE.match(line) or (width > 0 and len(line) > width and " " in line.strip()):
            return True
        text = line[2:] if line.startswith("- ") else None  # a `- ` item's text, which may open a block too
        if text is not None and (_RISKY_LINE.match(text) or _NESTED_ON_LINE.match(text) or opens_fence(text)):
            return True
        line = _AUTOLINK.sub("", _ESCAPED_HASH.sub(r"\1", line))
        line = _SPAN.sub("", line)
        if _MARKUP.search(line) or _UNDERSCORE_EMPHASIS.search(line) or _LOOSE_STAR.search(line) or "`" in line:
            return True
        if _URL.search(line):
            return True  # a URL the clean-up left bare
    return False
