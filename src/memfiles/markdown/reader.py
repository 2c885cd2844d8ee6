"""markdown-it-py configured as memfiles reads Markdown: CommonMark, GitHub tables and strikethrough.

`blocks` gives the block tokens of a text, each with the lines it spans (`map`); `render` gives the
HTML; `renders_alike` says whether two texts show a reader the same thing (the test every change the
write path makes without saying so must pass).
"""

from __future__ import annotations

import functools
import html
import re
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.token import Token


@functools.cache
def parser() -> MarkdownIt:
    """CommonMark with raw HTML (as GitHub renders notes), plus GitHub's tables and strikethrough."""
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


@functools.cache
def _block_parser() -> MarkdownIt:
    """The same reader with inline parsing off: the blocks and their lines, for a third of the cost."""
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    md.core.ruler.disable(["inline", "text_join"])
    return md


@functools.lru_cache(maxsize=16)
def _blocks(text: str) -> tuple[tuple[Token, ...], bool]:
    """The block tokens of `text`, and whether it defines link references (`[x]: url`)."""
    env: dict = {}
    tokens = tuple(_block_parser().parse(text, env))
    return tokens, bool(env.get("references"))


def blocks(text: str) -> list[Token]:
    """The block tokens of `text`; `token.map` is [first, end) in lines, an `inline` token's `content` its
    text (its inline children are not read). The last few texts are remembered: the write path's steps
    read one body in turn, and most change nothing. The tokens are shared: read them, never change them."""
    return list(_blocks(text)[0])


def render(text: str) -> str:
    return parser().render(text)


_PRE = re.compile(r"<pre>.*?</pre>", re.DOTALL)
_SPACE = re.compile(r"\s+")
# <a href="X">X</a> that an autolink (`<https://x>`) renders: GitHub links a bare URL the same way.
_AUTOLINK = re.compile(r'<a href="([^"<>]*)">([^<>]*)</a>')
_SEPARATOR = "<!-- -->"  # CommonMark's way to end a list; invisible
_LINK_OPEN = re.compile(r"(<a [^<>]*>) ")


def _unlinked(match: re.Match[str]) -> str:
    href, text = unquote(html.unescape(match.group(1))), unquote(html.unescape(match.group(2)))
    shown = (text, f"mailto:{text}", f"http://{text}", f"https://{text}")
    return match.group(2) if href in shown else match.group(0)


def normalized(rendered: str) -> str:
    """HTML as a reader sees it: runs of white space one space (but inside <pre>, where they are the
    text), autolinks as the bare URL GitHub links anyway, percent-escapes decoded, and no `<!-- -->`
    separators."""
    rendered = _AUTOLINK.sub(_unlinked, rendered.replace(_SEPARATOR, ""))
    out, last = [], 0
    for match in _PRE.finditer(rendered):
        out += [_SPACE.sub(" ", rendered[last : match.start()]), match.group(0)]
        last = match.end()
    out.append(_SPACE.sub(" ", rendered[last:]))
    # the white space at the edges of a link's text shows nothing (`[x ](y)` and `[x](y)` look alike)
    out = [part if part.startswith("<pre>") else _LINK_OPEN.sub(r"\1", part).replace(" </a>", "</a>") for part in out]
    # escapes decoded everywhere: markdown-it shows an autolink's `%20` as a space, GitHub as `%20`
    return html.unescape(unquote("".join(out).strip()))


@functools.lru_cache(maxsize=256)
def _seen(text: str) -> str:
    return normalized(render(text))


@functools.lru_cache(maxsize=4096)  # small: a batch's bodies are compared again after the next stage
def _top_level(text: str) -> tuple[tuple[tuple[str, int, int], ...], bool]:
    """(type, first line, end line) of each top-level block of `text`, and whether it defines references."""
    tokens, references = _blocks(text)
    found = tuple(
        (token.type, token.map[0], token.map[1])
        for token in tokens
        if token.level == 0 and token.nesting >= 0 and token.map is not None
    )
    return found, references


def remember(text: str) -> None:
    """Read `text`'s blocks now, while its parse is likely at hand, for a later renders_alike."""
    _top_level(text)


def renders_alike(first: str, second: str) -> bool:
    """Whether `first` and `second` show a reader the same thing (normalized HTML is equal).

    Read block by block: when both are the same top-level blocks in the same order and neither defines a
    link reference (which any block may use), the blocks whose lines differ are rendered and compared,
    each on its own (a top-level block renders the same alone); otherwise the whole texts are."""
    if first == second:
        return True
    before, defined = _top_level(first)
    after, defined_after = _top_level(second)
    if defined or defined_after or [kind for kind, *_ in before] != [kind for kind, *_ in after]:
        return _seen(first) == _seen(second)
    first_lines, second_lines = first.split("\n"), second.split("\n")
    for (_, start, end), (_, start_after, end_after) in zip(before, after, strict=True):
        one = "\n".join(first_lines[start:end])
        other = "\n".join(second_lines[start_after:end_after])
        if one != other and _seen(one) != _seen(other):
            return False
    return True
