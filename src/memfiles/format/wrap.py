"""Body text as the write path stores it: trailing space trimmed, prose paragraphs wrapped.

Only plain paragraphs are re-wrapped. Lists, quotes, tables, headings, indented and fenced code and
lines ending in a hard break are left exactly as written: re-flowing them would change what they mean.
"""

from __future__ import annotations

import re
import textwrap

_BLOCK_START = re.compile(r"^(\s{4}|\t|[-*+] |\d+[.)] |>|#|\||<|`{3}|~{3}|={3}|-{3})")


def _wrappable(paragraph: list[str]) -> bool:
    return all(not _BLOCK_START.match(line) and not line.endswith(("  ", "\\")) for line in paragraph)


def normalize_body(text: str, width: int = 100) -> str:
    """Trim, collapse runs of blank lines and wrap prose at `width` (0: no wrapping)."""
    lines = [line.rstrip() if not line.endswith("  ") else line for line in text.replace("\r\n", "\n").split("\n")]
    out: list[str] = []
    paragraph: list[str] = []
    in_fence: str | None = None

    def flush() -> None:
        if not paragraph:
            return
        if width and _wrappable(paragraph):
            joined = " ".join(line.strip() for line in paragraph)
            wrapped = textwrap.wrap(joined, width=width, break_long_words=False, break_on_hyphens=False)
            # A wrapped line that starts like a list item or heading would change the meaning: keep as written.
            if _wrappable(wrapped) and not any(_BLOCK_START.match(line) for line in wrapped):
                out.extend(wrapped)
            else:
                out.extend(paragraph)
        else:
            out.extend(paragraph)
        paragraph.clear()

    for line in lines:
        stripped = line.lstrip()
        if in_fence is not None:
            out.append(line)
            if stripped.startswith(in_fence):
                in_fence = None
            continue
        if stripped.startswith(("```", "~~~")):
            flush()
            in_fence = stripped[:3]
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


def one_line(text: str) -> str:
    """Whitespace, newlines included, collapsed to single spaces."""
    return " ".join(text.split())


def clip(text: str, limit: int) -> str:
    """`text` at most `limit` characters: cut at a word boundary past the middle, else hard, ending in `…`."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"
