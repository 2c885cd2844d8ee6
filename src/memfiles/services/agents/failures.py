"""How a tool's output says that it failed, and the error line two runs failing the same way share.

A command fails by its exit code, and also by what it prints: `psql -f x.sql` exits 0 after
`ERROR:  column users.last_login does not exist`, curl exits 0 with an API's error object, and an agent
may report no exit code at all (Claude Code's PostToolUse does not). The shapes of common tools' error
lines are known here, once: the hooks read a failure by them, and the signature prefers them.
Stdlib only: the hook path imports it.
"""

from __future__ import annotations

import json
import re

# Each pattern below that reads a run of word characters starts only where such a run starts (a
# lookbehind), and skips its leading digits and dots possessively: a pattern free to start anywhere in the
# run rescanned the rest of it from each position, which is quadratic in a long token (issue 34;
# tests/reliability/test_regex_linear.py holds every pattern of the package to linear time).
_TYPED_ERROR = re.compile(
    r"(?<![\w.])[\d.]*+\b(?P<name>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure|Warning))\b"
)
_TYPED_RAISED = re.compile(
    r"Traceback \(most recent call last\)|(?<![\w.])[\d.]*+\b[A-Za-z_][\w.]*(?:Error|Exception): "
)
_ERROR_WORD = re.compile(
    r"\b(error|fatal|failed|failure|panic|traceback|denied|refused|not found|timed out|segmentation fault"
    r"|core dumped|aborted|killed|out of memory)\b|\bERR!",  # npm's `npm ERR! code E404`
    re.I,
)
# A tool's error line: the mark at the start of the line, or after a program's or file's prefix
# (`psql:x.sql:3: ERROR:`, `==41877== ERROR:`, terraform's `│ Error:`). Postgres and MySQL (`ERROR 1064
# (42000):`), git (`fatal:`), rustc and cargo (`error[E0425]:`), gcc, node and terraform (`Error:`), kubectl
# (`Error from server`), npm, apt (`E:`), Go's panic, make, Python's traceback, Rust's panic.
_MARK = (
    r"(?:ERROR|FATAL|PANIC)(?:\s+\d+\s+\(\w+\)(?: at line \d+)?)?:|(?:error|fatal)(?:\[[A-Z]?\d+\])?:"
    r"|Error:|Error from server\b"
    r"|npm ERR!|E: |panic:|make: \*\*\*|Traceback \(most recent call last\)|thread '[^'\n]*' panicked at\b"
)
# (An `Error ...` line of its own is one too: musl's `Error relocating ./x: ...`.)
_FAILED_LINE = re.compile(rf"^(?:[^\n]*?[:│|=][ \t]*|[ \t]*)(?P<mark>{_MARK})|^(?P<word>Error)\b", re.M)
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{12,64}\b")
# a URL is its host: the rest changes per run
_URL = re.compile(r"(?<![\w+.-])(?P<lead>[\d+.-]*+)\b[a-zA-Z][\w+.-]*://(?P<host>[^/\s:]+)\S*")
_PATH = re.compile(r"(?<![\w.~/\\-])(?:[A-Za-z]:)?(?:[\w.~-]*[/\\])+([\w.-]+)")  # POSIX or Windows: its last part
# A number, dotted ones whole (10.0.0.12, 30.5, 1.2.3), with a unit of up to 3 letters kept (30.5s: Ns).
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)*(?=[a-zA-Z%]{0,3}(?!\w))")
_STAMP = re.compile(r"^\[?\d{4}-\d{2}-\d{2}[T ][\d:.,]+Z?\]?\s*")


def error_lines(text: str) -> list[str]:
    """The lines of `text` in the shape of a tool's error (`ERROR:  ...`, `fatal: ...`, `error[E0425]:
    ...`), each from its mark on, and the lines naming a raised error (`KeyError: 'x'`)."""
    found = []
    for match in _FAILED_LINE.finditer(text):
        start = match.start("mark") if match.group("mark") else match.start("word")
        end = text.find("\n", start)
        found.append(text[start : end if end >= 0 else len(text)].strip())
    return found + [line.strip() for line in text.splitlines() if _TYPED_RAISED.search(line)]


def api_error(text: str) -> bool:
    """Whether `text` is an API's error object (`{"error": ...}`, `{"code": ..., "message": ...}`), as
    curl prints it and exits 0."""
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")) or len(text) > 100_000:
        return False
    try:
        data = json.loads(text)
    except ValueError:
        return False
    if not isinstance(data, dict):
        return False
    return bool(data.get("error") or data.get("errors")) or ("message" in data and "code" in data)


def failed_by_output(stderr: str, stdout: str = "") -> bool:
    """Whether a tool's output says it failed, whatever its exit code: an error line on stderr, or an
    API's error object on stdout."""
    return bool(error_lines(stderr)) or api_error(stdout)


def error_signature(text: str) -> str | None:
    """The error line of `text`, with what changes between runs (paths, numbers, addresses) wiped.

    The last line naming a typed error (`ModuleNotFoundError: ...`) wins, else the first line in a tool's
    error shape (from its mark: `psql:x.sql:3: ERROR:  ...` is `ERROR: ...`), else the first line with an
    error word. Two runs failing the same way give the same signature; None when no line looks like one.
    """
    lines = [line.strip() for line in text.replace("\r", "\n").split("\n") if line.strip()]
    typed = [line for line in lines if _TYPED_ERROR.search(line)]
    if typed:
        line = _STAMP.sub("", typed[-1])
        match = _TYPED_ERROR.search(line)
        line = line[match.start("name") :] if match else line
    else:
        shaped = [match for line in lines if (match := _FAILED_LINE.match(line))]
        worded = [line for line in lines if _ERROR_WORD.search(line)]
        if shaped:
            first = shaped[0]
            line = first.string[first.start("mark") if first.group("mark") else first.start("word") :]
            after = lines.index(first.string) + 1
            if line.endswith(":") and after < len(lines):  # Rust's panic: its message is on the next line
                line = f"{line} {lines[after]}"
        elif worded:
            line = _STAMP.sub("", worded[0])
        else:
            return None
    line = _HEX.sub("<hex>", line)
    line = _URL.sub(lambda m: m.group("lead") + m.group("host"), line)
    line = _PATH.sub(lambda m: m.group(1), line)
    line = _NUMBER.sub("N", line)
    return " ".join(line.split())[:200] or None
