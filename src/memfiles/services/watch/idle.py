"""The watcher's idle work: rebuild BM25 and save the catalog once no sync has happened for a while.

The rebuild takes about a second of pure-Python work at 10,000 entries; done during a run of saves it
would hold the GIL against the syncs and searches that matter more. see @@D-018
Until the save, the store is a generation ahead of the catalog on disk: a watcher killed then leaves
a catalog that the next reader sees is stale and rebuilds (index/sync.py, open_catalog).
"""

from __future__ import annotations

import logging
import threading
import time

from memfiles.services.watch.keeper import IndexKeeper

log = logging.getLogger("memfiles.watch")


def rebuild_when_idle(keeper: IndexKeeper, stopping: threading.Event, idle: float) -> None:
    """Loop until `stopping`: after `idle` seconds without a sync, rebuild BM25 and save the catalog."""
    from memfiles.index.catalog import lexical_index

    while not stopping.is_set():
        if not keeper.lexical_dirty.wait(timeout=0.5):
            continue
        last = keeper.state.last_sync or 0.0
        if time.time() - last < idle:
            stopping.wait(min(0.2, max(0.01, idle - (time.time() - last))))
            continue
        keeper.lexical_dirty.clear()
        try:
            snapshot = keeper.snapshot()
            index = lexical_index([snapshot.docs[i] for i in snapshot.order])
            with keeper.mutex:
                keeper.searcher.set_lexical(index)
            keeper.persist(snapshot, index)
        except Exception:
            keeper.lexical_dirty.set()
            log.exception("lexical rebuild failed")
            stopping.wait(5)
