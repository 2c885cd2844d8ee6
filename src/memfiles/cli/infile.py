"""Reading a file the user names on the command line (a batch, a body): every way it can fail becomes one
ReadError naming the file (and the line, for a byte that is not UTF-8), never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path

from memfiles.errors import ReadError

STDIN = "<stdin>"


# Seconds standard input may stay silent before the reader says on stderr what it is waiting for.
STDIN_NOTICE_AFTER = 2.0


def _read_stdin(what: str, hint: str) -> bytes:
    """All of standard input; when nothing (not even its end) has come after STDIN_NOTICE_AFTER seconds,
    say on stderr what is awaited, once: a caller that left stdin open by mistake (an agent's tool that
    keeps the pipe) learns why the command waits instead of facing a silent hang."""
    import select

    stream = sys.stdin.buffer
    try:
        ready, _, _ = select.select([stream], [], [], STDIN_NOTICE_AFTER)
    except (OSError, ValueError):  # not a selectable stream (a closed or detached stdin): read as it is
        ready = [stream]
    if not ready:
        print(
            f"memfiles: waiting for the {what} on standard input (end it with Ctrl-D){hint}",
            file=sys.stderr,
            flush=True,
        )
    return stream.read()


def read_input(path: Path, what: str = "input", hint: str = "") -> str:
    """The text of `path` ('-': standard input), UTF-8 with or without a byte-order mark.

    ReadError when it is missing, a folder, unreadable, not UTF-8, or empty (`what` says what was expected).
    Standard input silent for a while gets a notice on stderr, ending with `hint`.
    """
    name = STDIN if str(path) == "-" else str(path)
    try:
        data = _read_stdin(what, hint) if str(path) == "-" else path.read_bytes()
    except FileNotFoundError:
        raise ReadError(name, "no such file") from None
    except IsADirectoryError:
        raise ReadError(name, f"is a folder; give the file that holds the {what}") from None
    except OSError as error:
        raise ReadError(name, f"cannot be read ({error.strerror or error})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        offset = error.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line = data[:offset].count(b"\n") + 1
        column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
        raise ReadError(
            name, f"not UTF-8 text: byte 0x{data[offset]:02x} at column {column}; save it as UTF-8", line
        ) from None
    if not text.strip():
        raise ReadError(name, f"is empty; expected the {what}")
    return text
