"""The watcher's hold on its index, shared by readers: searches run side by side, a change waits for them.

Before, one mutex served every request in turn: a search that took 40 s held up every hook and editor
of the project (issue 34). Now any number of searches hold the index at once; a sync, a backfill or the
reconcile timer holds it alone. A change that waits keeps new searches out until it has had its turn
(searches are bounded by their budget, memfiles.limits.REQUEST_BUDGET, so it never waits long), and
the one holding it alone may take it again, or read, without waiting for itself.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class SharedLock:
    """Shared for readers (`with lock.shared():`), exclusive and reentrant for a writer (`with lock:`)."""

    def __init__(self) -> None:
        self._state = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer: int | None = None  # the thread that holds it alone
        self._depth = 0  # how many times that thread took it
        self._waiting = 0  # writers waiting for their turn
        self._mine = threading.local()  # this thread's shared holds (a reader may read again)

    def __enter__(self) -> SharedLock:
        me = threading.get_ident()
        with self._state:
            if self._writer == me:
                self._depth += 1
                return self
            self._waiting += 1
            try:
                while self._writer is not None or self._readers > getattr(self._mine, "count", 0):
                    self._state.wait()
            finally:
                self._waiting -= 1
            self._writer, self._depth = me, 1
        return self

    def __exit__(self, *_exc: object) -> None:
        with self._state:
            self._depth -= 1
            if self._depth == 0:
                self._writer = None
                self._state.notify_all()

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the lock as one of its readers for the block."""
        me = threading.get_ident()
        held = getattr(self._mine, "count", 0)
        with self._state:
            if self._writer != me and not held:  # a writer reading, or a reader reading again: no wait
                while self._writer is not None or self._waiting:
                    self._state.wait()
            self._readers += 1
        self._mine.count = held + 1
        try:
            yield
        finally:
            self._mine.count = held
            with self._state:
                self._readers -= 1
                if self._readers == 0:
                    self._state.notify_all()
