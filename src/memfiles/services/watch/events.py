"""From watchdog's events to quiet files: the handler only records paths, the debouncer hands the worker
each memory file once it has been quiet for the debounce window. see @@D-016"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_QUIET = {"opened", "closed_no_write"}  # reading a file must not wake the indexer that reads it


class Debouncer:
    """Changed paths with the time of their last event; `take_quiet` returns those quiet long enough."""

    def __init__(self, window: float) -> None:
        self.window = window
        self.wake = threading.Event()
        self.rediscover = threading.Event()
        self._pending: dict[str, float] = {}
        self._lock = threading.Lock()

    def touched(self, rel: str) -> None:
        with self._lock:
            self._pending[rel] = time.monotonic()
        self.wake.set()

    def rediscover_soon(self) -> None:
        self.rediscover.set()
        self.wake.set()

    def take_quiet(self) -> set[str]:
        now = time.monotonic()
        with self._lock:
            ready = {rel for rel, at in self._pending.items() if now - at >= self.window}
            for rel in ready:
                del self._pending[rel]
            if self._pending:
                self.wake.set()
        return ready

    def __len__(self) -> int:
        return len(self._pending)


class Handler:
    """watchdog's handler: forwards memory-file paths and folder changes, nothing else."""

    def __init__(
        self,
        touched: Callable[[Path], None],
        folder_created: Callable[[], None],
        folder_gone: Callable[[Path], None],
    ) -> None:
        self.touched = touched
        self.folder_created = folder_created
        self.folder_gone = folder_gone

    def dispatch(self, event: Any) -> None:
        if event.event_type in _QUIET:
            return
        paths = [event.src_path, getattr(event, "dest_path", "") or ""]
        if event.is_directory:
            if event.event_type in ("created", "moved"):
                self.folder_created()
            if event.event_type in ("deleted", "moved"):
                self.folder_gone(Path(os.fsdecode(event.src_path)))
            return
        for raw in paths:
            if raw:
                self.touched(Path(os.fsdecode(raw)))
