"""Atomic file writes: a temp file in the same folder, fsync, rename; nothing half-written is ever seen."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from memfiles.errors import ParseError, ReadError


class NotUtf8Error(ParseError):
    """A file that is not UTF-8 text, at the line and column of its first undecodable byte."""


def identity(path: Path) -> tuple[int, int] | None:
    """The file's or folder's device and inode, None when it is not there: a path deleted and made again
    is another file, which a long-lived process must not take for the one it opened."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def read_text(path: Path) -> str:
    """The file's text exactly as stored (no newline translation); UnicodeDecodeError when not UTF-8."""
    # Decoding the whole byte string (not a stream) makes the error's offset count from the file's start.
    return path.read_bytes().decode("utf-8")


def read_state(path: Path) -> str | None:
    """The text of a file memfiles keeps (memory/ids.txt, memory/pruned.jsonl), None when it does not
    exist; a ParseError naming it when it is a folder, unreadable or not UTF-8 (check reports that as a
    finding, and a write refuses: both would otherwise stop on a traceback)."""
    try:
        return read_text(path)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ParseError(path, None, "is a folder, where memfiles keeps a file: move it away") from None
    except UnicodeDecodeError as error:
        raise not_utf8(str(path), error) from None
    except OSError as error:
        raise ParseError(path, None, f"cannot be read: {error.strerror or error}") from None


def not_utf8(shown: str, error: UnicodeDecodeError) -> NotUtf8Error:
    """The decode error of read_text as a ParseError naming the real line and column of the bad byte."""
    data = error.object if isinstance(error.object, bytes) else b""
    line = data.count(b"\n", 0, error.start) + 1
    line_start = data.rfind(b"\n", 0, error.start) + 1
    column = len(data[line_start : error.start].decode("utf-8", errors="replace")) + 1  # in characters
    byte = data[error.start : error.start + 1].hex() or "??"
    return NotUtf8Error(
        shown, line, f"not UTF-8 text: byte 0x{byte} at column {column} ({error.reason}); save the file as UTF-8"
    )


def read_memory_text(path: Path, shown: str) -> str:
    """read_text for a memory file: a file that is not UTF-8 raises NotUtf8Error naming `shown` and the line."""
    try:
        return read_text(path)
    except UnicodeDecodeError as error:
        raise not_utf8(shown, error) from None


def atomic_write(path: Path, text: str) -> None:
    """Replace `path` with `text` so that readers see the old file or the new one, never a mix. A symlink
    is written through, as editors do: its target gets the text and the link stays a link (a rename over
    the link would have made it a copy, and the file it shared would no longer see the edits)."""
    shown = path
    if path.is_symlink():
        # as far as it resolves: a loop of links gives up where it loops (the file there is replaced, as
        # before), and the folder a dangling link points into is not made here
        path = Path(os.path.realpath(path))
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(shown)) from error
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(temp, path.stat().st_mode & 0o777)
        else:
            os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        if isinstance(error, OSError) and error.errno is not None and error.filename != str(shown):
            # the file being written is what a message must name, not the temp file beside it
            raise OSError(error.errno, error.strerror, str(shown)) from error
        raise
    _fsync_dir(path.parent)


def write_if_changed(path: Path, text: str) -> bool:
    """Write only when the text differs, so a watcher is never woken by a no-op; True when written."""
    try:
        if read_text(path) == text:
            return False
    except FileNotFoundError:
        pass
    atomic_write(path, text)
    return True


def remove_debris(folder: Path) -> int:
    """Delete temp files a killed writer left (`.NAME.*.tmp`); call only while holding the write lock."""
    removed = 0
    for temp in folder.rglob(".*.tmp"):
        with contextlib.suppress(OSError):
            temp.unlink()
            removed += 1
    return removed


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def ensure_private_dir(folder: Path) -> Path:
    """A tool-owned folder (state, index) that git ignores by itself: it carries its own .gitignore."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file where the folder should be
        raise ReadError(folder, "is a file, where memfiles keeps a folder of its own: move it away") from None
    ignore = folder / ".gitignore"
    if not ignore.exists():
        with contextlib.suppress(OSError):
            ignore.write_text("# made by memfiles: nothing in this folder belongs in git\n*\n", encoding="utf-8")
    return folder


def empty_or_missing(path: Path) -> str | bool | None:
    """None for a file that does not exist, its text for one that holds only whitespace (a new memory file
    is written over it), False for any other file (Markdown that is not a memory file: never overwritten)."""
    if not path.exists():
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return False
    return data.decode("utf-8", errors="replace") if not data.strip() else False
