"""Hostile text and the one measure the linear-time tests use: how the cost grows with the input.

A test never asserts a wall-clock bound (a loaded 2-core CI makes those flaky): it times one input at two
sizes in the same process, one right after the other, best of a few runs, and holds the ratio. Linear
work grows about as the size does (10x the characters, 10x the time); work that rescans the input from
each position grows with its square (100x), which is what a stalled shared process looks like.
"""

from __future__ import annotations

import time
from collections.abc import Callable

# The list: single tokens, and long runs of what Markdown, regular expressions and shells treat
# specially; then what makes a pattern rescan a run (words joined by separators, repeated starts).
RUNS = ["a", "1", "(", "[", "`", "*", "_", "<", "\\", "#", " ", "\t", "-", ".", "/", ":", "@", "~", ">", "|"]
JOINED = ["a-", "a.", "a/", "a(", "a_", "a ", "1.", "--a", "`a", "**a", "a: ", "# ", "- ", "@@D-", "D-1 ", "Fix: a"]
MORE = ['"', "'", "=", "!", "?", ",", ";", "%", "{", "}", "\n", "\u00a0", "A", "Error", "git push ", "::", "a\t"]
# What a line of a memory file, a doc, a log or an error starts with: anchored patterns read past it first.
PREFIXES = [
    "# a",
    "## a",
    "### D-1: a",
    "- date: a",
    "- a",
    "> ",
    "```",
    "@@doc:",
    "@@skill:",
    "http://",
    "C:\\",
    "Traceback ",
    "Seen in 1 runs (",
    "2026-01-01 a: ",
    "**a",
    "Fix: ",
    "<!-- ",
    "E   a",
]
PREFIX_FILLERS = [" ", "\t", "a", "#", "a ", "-", "*", ".", "/", "`", "(", "[", "<", "\\", "_", ":", "@", "a."]


def hostile(size: int) -> dict[str, str]:
    """Every hostile shape at about `size` characters, by name: runs and joined pieces alone, each line
    start followed by a run, and each of those ending on a plain `b` (a failed match backtracks from there)."""
    shapes: dict[str, str] = {}
    for piece in (*RUNS, *JOINED, *MORE):
        body = piece * max(1, size // len(piece))
        shapes[repr(piece)] = body
        shapes[f"{piece!r}+b"] = body + "b"
    for prefix in PREFIXES:
        for piece in PREFIX_FILLERS:
            body = prefix + piece * max(1, size // len(piece))
            shapes[f"{prefix!r}{piece!r}"] = body
            shapes[f"{prefix!r}{piece!r}+b"] = body + "b"
    return shapes


def token(kind: str, size: int) -> str:
    """One of the issue's inputs for an entry point: a single token of `size` characters (`word`), or a run
    of one of `(`, `[`, backticks, `*`, `_`, `<`, `\\`, `#`."""
    return "a" * size if kind == "word" else kind * size


ENTRY_POINT_KINDS = ["word", "(", "[", "`", "*", "_", "<", "\\", "#"]


def best_time(call: Callable[[], object], repeats: int = 3) -> float:
    """The shortest of `repeats` timings of `call` (the least disturbed by the rest of the machine)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best
