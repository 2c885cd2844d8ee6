"""`memfiles watch`: one process owns the index, follows the files, and answers queries warm.

watchdog reports changes; the handler only records which memory files changed (events.py, see @@D-016).
A worker syncs each file once it has been quiet for the debounce window, in batches, so an editor's
save or a branch switch becomes one sync per file; a timer reconciles the whole tree by hash
(keeper.py); BM25 is rebuilt and the catalog saved when idle (idle.py); a local socket serves
memsearch, the write path's updates, backfill and status with the model already loaded (dispatch.py).
The process's life, threads and observer are in watcher.py.
"""

from memfiles.services.watch.watcher import Watcher, WatcherRunning

__all__ = ["Watcher", "WatcherRunning"]
