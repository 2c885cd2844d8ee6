"""Atomic file writes: a temp file in the same folder, fsync, rename; nothing half-written is ever seen."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def read_text(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def atomic_write(path: Path, text: str) -> None:
    """Replace `path` with `text` so that readers see the old file or the new one, never a mix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
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
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
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
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        with contextlib.suppress(OSError):
            ignore.write_text("# made by memfiles: nothing in this folder belongs in git\n*\n", encoding="utf-8")
    return folder
