"""Pasted logs and tracebacks, found in a body's paragraphs and fenced as code, so they read as written.

A traceback pasted as prose is a paragraph to Markdown: its lines run together when rendered, `__init__`
turns bold, `*` and `_` in paths become emphasis, and the write path's wrap would re-flow it. So where
a paragraph holds lines of a known log shape (a Python or Java traceback, a JavaScript or gdb stack, a
compiler's `file:line:col: error:`, timestamped or levelled log lines, the error console's fields),
the run of them is fenced as code, and the prose around it stays prose. One such line alone is a
sentence that quotes an error, not a pasted log: a run needs two of them, or a traceback's first line.

Every pattern is anchored at a line's start and has at most one unbounded run: linear in the line.
"""

from __future__ import annotations

import re

from memfiles.format.grammar import Fence
from memfiles.markdown.reader import blocks

_LOG_LINES = re.compile(
    "|".join(
        (
            r"\s*Traceback \(most recent call last\):",  # Python
            r"\s+File \"[^\"\n]*\", line \d+",
            r"\s*at [^\s(]+(?: \S+)?[ ]?\([^()\n]*\)\s*$",  # Java, JavaScript (V8)
            r"\s*at \S+:\d+:\d+\s*$",
            r"\s*Caused by: \S",
            r"\s*\.\.\. \d+ more\s*$",
            r"\s*(?:Exception in thread \"[^\"\n]*\" )?(?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable)\b",
            r"[A-Z][\w.]*(?:Error|Exception|Warning|Interrupt)(?::|$)",  # Python's last line: ValueError: ...
            r"#\d+\s+(?:0x[0-9a-fA-F]+\s|\S+\s+\()",  # gdb
            r"(?>\S*@)\S+:\d+:\d+\s*$",  # SpiderMonkey: fn@file.js:12:3
            r"\s*\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d",  # timestamped log lines
            r"\s*\[?\d\d:\d\d:\d\d[.,]\d",
            r"\s*\[\s*\d+\.\d+\]",  # kernel
            r"\s*\[?(?:ERROR|WARN|WARNING|INFO|DEBUG|FATAL|TRACE|SEVERE|CRITICAL)\]?(?::|\s)",
            r"\S+:\d+:(?:\d+:)? (?:fatal )?(?:error|warning|note):",  # compilers
            r"(?:error|warning)(?:\[\w+\])?: \S",  # rustc, cargo
            r"\s*(?:--> )?/?[\w.~@+-]*(?:/[\w.~@+-]+)+:\d+(?::\d+)?(?:[\s:|,)]|$)",  # a path:line at a line's start
            r"\s*\S+ \S+:\d+:\d+\s*$",  # Firefox's console: `fn file.js:12:3`
            r".*<<< (?:FAILURE|ERROR)!\s*$",  # Maven surefire
            r"\s*Tests run: \d+, Failures: \d+",
            r"\s*(?:npm ERR!|E: |make(?:\[\d+\])?: \*\*\*)",
            r"(?:Timestamp|Source File|Line|Column|Source Code|Error|Warning): \S.*\n?",  # the error console
        )
    ).join(("^(?:", ")"))
)
_HEADS = re.compile(r"^\s*(?:Traceback \(most recent call last\):|Exception in thread )")
_FIELD = re.compile(r"^(?:Line|Column|Error|Warning): ")  # an error console field, which alone is prose


def _is_log(line: str) -> bool:
    return bool(_LOG_LINES.match(line))


def _runs(lines: list[str]) -> list[tuple[int, int]]:
    """[start, end) runs of `lines` (one paragraph's) that are a pasted log: from a log line to the last
    log line after it, indented lines between them included, holding two log lines or a traceback's head."""
    found: list[tuple[int, int]] = []
    index = 0
    while index < len(lines):
        if not _is_log(lines[index]):
            index += 1
            continue
        start = last = index
        count = 0 if _FIELD.match(lines[index]) else 1
        head = bool(_HEADS.match(lines[index]))
        index += 1
        while index < len(lines):
            line = lines[index]
            if _is_log(line):
                last = index
                count += 0 if _FIELD.match(line) else 1
            elif not line[:1].isspace():
                break
            index += 1
        if count >= 2 or head:
            found.append((start, last + 1 if not head or last + 1 >= index else index))
    return found


def _fence_for(lines: list[str]) -> str:
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    return "`" * max(3, longest + 1)


_JIRA_OPEN = re.compile(r"^\s*\{(code|noformat)(?::[^}\n]*)?\}")
_PIPE_ROW = re.compile(r"^[ \t]*+\|.*\|[ \t]*+$")
# possessive: runs of blanks and dashes are never split two ways (a line of spaces was quadratic)
_DELIMITER_ROW = re.compile(r"^[ \t]*+\|?[ \t]*+:?-++:?[ \t]*+(?:\|[ \t]*+:?-++:?[ \t]*+)*+\|?[ \t]*+$")
_DIFF_START = re.compile(r"^(?:diff --git |Index: \S|--- \S|@@ -\d)")
_DIFF_LINE = re.compile(r"^(?:[ +\\-]|@@ |diff |index |Index: |={5,}|$)")


def _pasted_code(lines: list[str]) -> list[tuple[int, int, str]]:
    """[start, end) runs of `lines` that are code pasted with another tool's markers, outside fences: a
    Jira `{code}` or `{noformat}` block (its markers kept, inside the fence), a table of pipes with no
    delimiter row (Jira's, which Markdown reads as one paragraph), and a unified diff."""
    found: list[tuple[int, int, str]] = []
    fence = Fence()
    index = 0
    while index < len(lines):
        line = lines[index]
        if fence.feed(line, index + 1):
            index += 1
            continue
        jira = _JIRA_OPEN.match(line)
        if jira:
            closer = "{" + jira.group(1) + "}"
            end = next((n for n in range(index + 1, len(lines)) if closer in lines[n]), None)
            if end is None and closer in line[jira.end() :]:
                end = index
            if end is not None:
                found.append((index, end + 1, ""))
                index = end + 1
                continue
        if _PIPE_ROW.match(line):  # a table without a delimiter row (Jira's `||a||b||`): no table to Markdown
            end = index + 1
            while end < len(lines) and _PIPE_ROW.match(lines[end]):
                end += 1
            if end - index >= 2 and not _DELIMITER_ROW.match(lines[index + 1]):
                found.append((index, end, ""))
                index = end
                continue
            index = end
            continue
        if _DIFF_START.match(line):
            end = index + 1
            while end < len(lines) and _DIFF_LINE.match(lines[end]):
                end += 1
            while end > index + 1 and not lines[end - 1].strip():
                end -= 1
            if any(lines[n].startswith("@@ ") for n in range(index, end)):
                found.append((index, end, "diff"))
                index = end
                continue
        index += 1
    return found


def fence_pasted_code(lines: list[str], notes: list[str]) -> list[str]:
    """`lines` with each Jira code block and unified diff fenced as code (a note says where)."""
    out = list(lines)
    found = _pasted_code(out)
    for start, end, info in reversed(found):
        fence = _fence_for(out[start:end])
        out[start:end] = ["", fence + info, *out[start:end], fence, ""]
    if found:
        start, end, info = found[0]
        what = "a unified diff" if info else "a Jira {code} or {noformat} block, or a table Markdown cannot read"
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        notes.append(
            f"lines {start + 1}-{end} are {what}: they are stored as a code block, so they read as written{more}"
        )
    return out


def fence_logs(lines: list[str], notes: list[str]) -> list[str]:
    """`lines` with each pasted log in a top-level paragraph fenced as code (a note says where)."""
    paragraphs = [
        token.map
        for token in blocks("\n".join(lines))
        if token.type == "paragraph_open" and token.level == 0 and token.map is not None
    ]
    out = list(lines)
    fenced: list[tuple[int, int]] = []
    for first, end in reversed(paragraphs):
        for start, stop in reversed(_runs(out[first:end])):
            start, stop = first + start, first + stop
            run = out[start:stop]
            fence = _fence_for(run)
            before = [""] if start > first else []
            after = [""] if stop < end else []
            out[start:stop] = [*before, fence, *run, fence, *after]
            fenced.append((start + 1, stop))
    if fenced:
        first_line, last_line = min(fenced)
        notes.append(
            f"lines {first_line}-{last_line} look like a pasted log or traceback: they are stored as a code block,"
            " so they read as written"
            + (f" (and {len(fenced) - 1} more such run{'s' if len(fenced) > 2 else ''})" if len(fenced) > 1 else "")
        )
    return out
