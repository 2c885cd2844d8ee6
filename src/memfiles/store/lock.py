"""The project lock: one writer at a time across processes (fcntl.flock on a file in .memfiles/)."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from types import TracebackType

from memfiles.errors import LockTimeout
from memfiles.store.fileio import ensure_private_dir


class FileLock:
    """An exclusive advisory lock held for a `with` block, waited for at most `timeout` seconds."""

    def __init__(self, path: Path, timeout: float = 30.0, busy: str = "the memory files are busy") -> None:
        self.path = path
        self.timeout = timeout
        self.busy = busy  # what the timeout's message starts with
        self._fd: int | None = None

    def acquire(self) -> None:
        ensure_private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + self.timeout
        delay = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                    os.close(fd)
                    raise LockTimeout(self.busy, holder, str(self.path), self.timeout) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        try:  # the holder's pid is for the busy message only: a full disk must not stop the lock
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        except OSError:
            pass
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.release()
