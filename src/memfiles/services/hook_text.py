"""The text a hook injects into an agent's context, and the marker that keeps it from coming back.

What memfiles injects is wrapped in `<memfiles-context>` ... `</memfiles-context>`. Everything that
captures text later (the working memory's fields, the distiller's experience records, the hooks' own
reading of prompts and tool output) drops what stands between the two tags, so an injected entry is
never written back into memory as if someone had said it. Stdlib only: the hook path imports it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memfiles.format.wrap import one_line as printable_line

OPEN = "<memfiles-context>"
CLOSE = "</memfiles-context>"
# An injection cut short (a transcript clipped mid-way) has no closing tag: drop to the end.
_INJECTED = re.compile(re.escape(OPEN) + r".*?(?:" + re.escape(CLOSE) + r"|\Z)", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_MIN_SENTENCE = 40  # a first sentence clipped below this says too little to be worth its line


def strip_injected(text: str) -> str:
    """`text` without anything memfiles injected (the marker and what it wraps)."""
    if OPEN not in text:
        return text
    return _INJECTED.sub("", text)


def one_line(text: str, limit: int = 300) -> str:
    """`text` on one line, without injected context, clipped at `limit` characters (a working-memory value)."""
    text = printable_line(strip_injected(text))  # a tool's output: colour codes and other control characters
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def first_sentence(body: str, width: int = 160) -> str:
    """The body's first sentence on one line, clipped at `width` characters with an ellipsis."""
    text = " ".join(body.split())
    match = _SENTENCE_END.search(text)
    if match and match.start() <= width:
        text = text[: match.start()]
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


@dataclass(frozen=True)
class Item:
    """One entry as a hook shows it: `ID title — first sentence (path:line)`."""

    id: str
    title: str
    body: str
    path: str
    line: int | None

    def render(self, width: int = 160) -> str:
        """The line; `width` bounds the first sentence, and 0 leaves it out."""
        where = f"{self.path}:{self.line}" if self.line else self.path
        sentence = first_sentence(self.body, width) if width > 0 else ""
        return f"- {self.id} {self.title} — {sentence} ({where})" if sentence else f"- {self.id} {self.title} ({where})"


Section = tuple[str, list[Item]]  # a header line and its items


def render(sections: list[Section], budget: int, preface: str = "") -> tuple[str, list[str]]:
    """The context to inject and the ids it holds: `preface` (a run's working memory, whole), then each
    section's header and as many of its items as fit in `budget` characters (marker included), in order.

    The preface is what the agent must get back exactly after a compaction, so the budget bounds only
    the entries. A header is shown only above an item. Returns ("", []) when nothing is to be shown.
    """
    used = len(OPEN) + len(CLOSE) + 1
    lines: list[str] = []
    shown: list[str] = []
    for header, items in sections:
        cost = len(header) + 1  # paid once, with the section's first item
        for item in items:
            room = budget - used - cost - 1  # the newline after the line
            line = item.render()
            if len(line) > room:
                # A shorter first sentence, else none: the id, title and path are what the agent needs most.
                width = room - (len(item.render(width=1)) - 1)
                line = item.render(width=width if width >= _MIN_SENTENCE else 0)
                if len(line) > room:
                    break
            if cost:
                lines.append(header)
                used += cost
                cost = 0
            lines.append(line)
            shown.append(item.id)
            used += len(line) + 1
    if not lines and not preface:
        return "", []
    parts = [OPEN, preface.rstrip("\n")] if preface else [OPEN]
    return "\n".join([*parts, *lines, CLOSE]), shown
