"""Reading a file the user names on the command line (a batch, a body): every way it can fail becomes one
ReadError naming the file (and the line, for a byte that is not UTF-8), never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path

from memfiles.errors import ReadError

STDIN = "<stdin>"


def read_input(path: Path, what: str = "input") -> str:
    """The text of `path` ('-': standard input), UTF-8 with or without a byte-order mark.

    ReadError when it is missing, a folder, unreadable, not UTF-8, or empty (`what` says what was expected).
    """
    name = STDIN if str(path) == "-" else str(path)
    try:
        data = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
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
