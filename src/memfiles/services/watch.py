"""`memfiles watch`: one process owns the index, follows the files, and answers queries warm.

watchdog reports changes; the handler only records which memory files changed (see @@D-016). A worker
syncs each file once it has been quiet for the debounce window, in batches, so an editor's save or a
branch switch becomes one sync per file. A timer reconciles the whole tree by hash. A local socket
serves memsearch, the write path's updates, backfill and status with the model already loaded.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memfiles.errors import LockTimeout, MemfilesError, ParseError
from memfiles.services.index import embedder_for
from memfiles.services.ipc import pid_path, serve, socket_path
from memfiles.store.fileio import ensure_private_dir, read_text
from memfiles.store.lock import FileLock
from memfiles.store.project import Project

log = logging.getLogger("memfiles.watch")
_QUIET = {"opened", "closed_no_write"}
IDLE_BEFORE_REBUILD = 1.0  # seconds without a sync before BM25 is rebuilt


class WatcherRunning(MemfilesError):
    """Another watcher owns this project's index."""

    exit_code = 1


@dataclass
class WatchState:
    started: float = field(default_factory=time.time)
    last_sync: float | None = None
    syncs: int = 0
    last_drift: str = "none"
    bad_files: dict[str, str] = field(default_factory=dict)


class _Handler:
    """watchdog's handler: forwards memory-file paths to the watcher, nothing else."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def dispatch(self, event: Any) -> None:
        if event.event_type in _QUIET:
            return
        paths = [event.src_path, getattr(event, "dest_path", "") or ""]
        if event.is_directory:
            if event.event_type in ("created", "moved"):
                self.watcher.rediscover_soon()
            if event.event_type in ("deleted", "moved"):
                self.watcher.forget_folder(Path(os.fsdecode(event.src_path)))
            return
        for raw in paths:
            if raw:
                self.watcher.touched(Path(os.fsdecode(raw)))


class Watcher:
    """The one owner of a project's embedded index while it runs."""

    def __init__(self, project: Project, debounce: float = 0.15, reconcile_every: float = 30.0) -> None:
        self.project = project
        self.settings = project.settings
        self.debounce = debounce
        self.reconcile_every = reconcile_every
        self.state = WatchState()
        self.mutex = threading.RLock()
        self.stopping = threading.Event()
        self.ready = threading.Event()
        self._pending: dict[str, float] = {}
        self._pending_lock = threading.Lock()
        self._wake = threading.Event()
        self._rediscover = threading.Event()
        self._watched: set[Path] = set()
        self._threads: list[threading.Thread] = []
        self._lexical_dirty = threading.Event()
        self._exit = contextlib.ExitStack()

    # --- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        """Take ownership, open the index, catch up, then watch and serve. Raises WatcherRunning."""
        ensure_private_dir(self.settings.index_dir)
        owner = FileLock(self.settings.index_dir / "watch.lock", timeout=0.0, what="the watcher")
        try:
            owner.acquire()
        except LockTimeout:
            pid = read_text(pid_path(self.settings)).strip() if pid_path(self.settings).exists() else "?"
            raise WatcherRunning(f"a watcher is already running for {self.project.root} (pid {pid})") from None
        self._exit.callback(owner.release)
        pid_path(self.settings).write_text(f"{os.getpid()}\n")
        self._exit.callback(lambda: pid_path(self.settings).unlink(missing_ok=True))
        self._serve()
        from memfiles.services.index import open_index

        # The watcher holds the store lock for its whole life: no other process opens the embedded store.
        self.session = self._exit.enter_context(open_index(self.settings, timeout=self.settings.lock_timeout))
        from memfiles.index.search import Searcher

        self.catalog = self.session.catalog
        self.searcher = Searcher(self.session.store, self.catalog, self.session.embedder)
        self.catch_up()
        self._observe()
        self.ready.set()
        for target, name in (
            (self._work, "sync"),
            (self._reconcile_loop, "reconcile"),
            (self._lexical_loop, "lexical"),
        ):
            thread = threading.Thread(target=target, name=f"memfiles-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        log.info("watching %s (%d entries indexed)", self.project.root, len(self.catalog.docs))

    def stop(self) -> None:
        self.stopping.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(timeout=5)
        try:
            with self.mutex:
                if hasattr(self, "session"):
                    self._persist()
        except Exception:  # the catalog is derived: losing this save costs a rebuild, never the shutdown
            log.exception("could not save the catalog on the way out")
        finally:
            self._exit.close()
        log.info("stopped")

    def serve_forever(self) -> None:
        while not self.stopping.wait(0.5):
            pass

    # --- the socket -------------------------------------------------------------------------------

    def _serve(self) -> None:
        server = serve(socket_path(self.settings), self.answer)
        self._exit.callback(lambda: socket_path(self.settings).unlink(missing_ok=True))
        self._exit.callback(server.server_close)
        self._exit.callback(server.shutdown)

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "ping":
            return {"ok": True, "pid": os.getpid()}
        if not self.ready.wait(timeout=600):
            return {"ok": False, "error": "the watcher is still catching up"}
        if op == "search":
            from memfiles.index.search import Filters

            filters = Filters(**request.get("filters", {}))
            with self.mutex:
                results = [
                    [hit.as_json() for hit in self.searcher.search(q, k, filters, request.get("mode", "hybrid"))]
                    for q, k in request["queries"]
                ]
            return {"ok": True, "results": results}
        if op == "similar":
            from memfiles.index.search import Filters
            from memfiles.services.index import nearest

            with self.mutex:
                results = nearest(
                    self.searcher, request["texts"], Filters(**request.get("filters", {})), int(request.get("k", 5))
                )
            return {"ok": True, "results": results}
        if op == "vectors":  # for `dupes`: every stored vector at once (services/vectors.py)
            from memfiles.services.vectors import encode_vectors

            with self.mutex:
                got = self.session.store.collection.get(include=["embeddings", "metadatas"])
            hashes = [(m or {}).get("hash", "") for m in got["metadatas"]]
            return {"ok": True, **encode_vectors(list(got["ids"]), hashes, got["embeddings"])}
        if op == "sync":
            self.sync_paths(set(request.get("paths", [])), set(request.get("pruned", [])))
            return {"ok": True}
        if op == "backfill":
            return {"ok": True, **self.backfill(bool(request.get("rebuild")), bool(request.get("check")))}
        if op == "status":
            return {"ok": True, **self.status()}
        return {"ok": False, "error": f"unknown op {op!r}"}

    # --- events -----------------------------------------------------------------------------------

    def touched(self, path: Path) -> None:
        if not self.project.is_memory_path(path):
            return
        with self._pending_lock:
            self._pending[self.project.rel(path)] = time.monotonic()
        self._wake.set()

    def forget_folder(self, folder: Path) -> None:
        """A folder deleted or moved away: every indexed file below it is gone (or elsewhere now)."""
        prefix = self.project.rel(folder).rstrip("/") + "/"
        with self.mutex:
            paths = {doc.path for doc in self.catalog.docs.values() if doc.path.startswith(prefix)}
        for rel in paths:
            self.touched(self.project.root / rel)
        self._watched = {w for w in self._watched if not str(w).startswith(str(folder))}

    def rediscover_soon(self) -> None:
        self._rediscover.set()
        self._wake.set()

    def _observe(self) -> None:
        from watchdog.observers import Observer

        self.observer = Observer()
        self.handler = _Handler(self)
        # The root itself, not recursively: a new package folder shows up as a created directory.
        self.observer.schedule(self.handler, str(self.project.root), recursive=False)
        self._schedule_memory_dirs()
        self.observer.start()

        def stop_observer() -> None:
            self.observer.stop()
            self.observer.join(timeout=5)

        self._exit.callback(stop_observer)

    def _schedule_memory_dirs(self) -> list[Path]:
        added = []
        for folder in self.project.memory_dirs():
            if folder not in self._watched:
                self.observer.schedule(self.handler, str(folder), recursive=True)
                self._watched.add(folder)
                added.append(folder)
        return added

    def _take_quiet(self) -> set[str]:
        now = time.monotonic()
        with self._pending_lock:
            ready = {rel for rel, at in self._pending.items() if now - at >= self.debounce}
            for rel in ready:
                del self._pending[rel]
            if self._pending:
                self._wake.set()
        return ready

    def _work(self) -> None:
        while not self.stopping.is_set():
            self._wake.wait(timeout=1.0)
            self._wake.clear()
            if self._rediscover.is_set():
                self._rediscover.clear()
                for folder in self._schedule_memory_dirs():
                    log.info("watching new memory folder %s", self.project.rel(folder))
                    for path in folder.rglob("*.md"):
                        self.touched(path)
            time.sleep(min(self.debounce / 3, 0.05))
            paths = self._take_quiet()
            if paths:
                try:
                    self.sync_paths(paths)
                except Exception:  # an index fault is logged; the loop goes on
                    log.exception("sync of %d files failed", len(paths))

    # --- syncing ----------------------------------------------------------------------------------

    def sync_paths(self, paths: set[str], pruned: set[str] | frozenset[str] = frozenset()) -> None:
        """Bring the entries of `paths` (relative) in line; a file that does not parse keeps its old entries."""
        from memfiles.index.sync import apply_plan, make_plan

        with self.mutex:
            docs, good = self._docs_of(paths)
            scope = {i for i, d in self.catalog.docs.items() if d.path in good} | set(docs) | set(pruned)
            moved = self._moved_elsewhere(scope - set(docs), paths)
            if moved:
                extra, _ = self._docs_of(moved)
                docs.update(extra)
            plan = make_plan(docs, self._stored(scope), self.session.embedder.name, scope=scope)
            if plan.drift:
                report = apply_plan(
                    self.session.store, embedder_for(self.session, plan), plan, self.catalog, save=False
                )
                self._lexical_dirty.set()
                log.info("synced %s: %s", ", ".join(sorted(paths))[:200], report.summary())
            self.state.last_sync = time.time()
            self.state.syncs += 1

    def _docs_of(self, paths: set[str]) -> tuple[dict[str, Any], set[str]]:
        """The index documents of the files in `paths` that parse, and which paths those were."""
        from memfiles.index.catalog import index_doc

        docs: dict[str, Any] = {}
        good: set[str] = set()
        schema = self.settings.schema
        for rel in paths:
            path = self.project.root / rel
            try:
                loaded = self.project.load_file(path) if path.is_file() else None
            except ParseError as error:
                if self.state.bad_files.get(rel) != str(error):
                    log.warning("%s; keeping its last good entries in the index", error)
                self.state.bad_files[rel] = str(error)
                continue
            except (OSError, UnicodeDecodeError) as error:
                log.warning("%s: cannot read (%s); keeping its last good entries", rel, error)
                continue
            self.state.bad_files.pop(rel, None)
            good.add(rel)
            if loaded is not None:
                for located in self.project.entries([loaded]):
                    docs[located.entry.id] = index_doc(located, schema)
        return docs, good

    def _moved_elsewhere(self, leaving: set[str], paths: set[str]) -> set[str]:
        """Files outside `paths` whose text holds one of the `leaving` ids' headings: a move, not a delete."""
        if not leaving:
            return set()
        pattern = re.compile(r"^### (" + "|".join(re.escape(i) for i in leaving) + r"): ", re.MULTILINE)
        found = set()
        for path in self.project.markdown_files():
            rel = self.project.rel(path)
            if rel not in paths:
                with contextlib.suppress(OSError, UnicodeDecodeError):
                    if pattern.search(read_text(path)):
                        found.add(rel)
        return found

    def _stored(self, ids: set[str]) -> dict[str, dict[str, Any]]:
        model = self.session.embedder.name
        return {i: self.catalog.docs[i].metadata(model) for i in ids if i in self.catalog.docs}

    def catch_up(self) -> None:
        """Changes made while no watcher ran: an incremental backfill against the store itself."""
        result = self.backfill(rebuild=False, check=False)
        log.info("caught up: %s", result["summary"])

    def backfill(self, rebuild: bool, check: bool) -> dict[str, Any]:
        from memfiles.index.lexical import LexicalIndex
        from memfiles.services.index import backfill_session

        with self.mutex:
            result, saved = backfill_session(self.project, self.session, self.catalog, rebuild, check)
            if saved is not None:
                self.catalog.docs, self.catalog.order = saved.docs, saved.order
                self.searcher.set_lexical(LexicalIndex.load(self.session.store.sidecar))
            if not check:
                self.state.last_sync = time.time()
            return result

    def reconcile(self) -> None:
        """The whole tree against the catalog, by hash only; logs any drift it had to fix."""
        from memfiles.index.sync import apply_plan, make_plan
        from memfiles.services.index import entry_docs

        self._rediscover.set()
        self._wake.set()
        docs = entry_docs(self.project)  # outside the lock: parsing needs no index
        with self.mutex:
            plan = make_plan(docs, self._stored(set(self.catalog.docs)), self.session.embedder.name)
            if plan.drift:
                self.state.last_drift = (
                    f"{time.strftime('%H:%M:%S')}: fixed {len(plan.embed)} missing or stale, "
                    f"{len(plan.retag)} retagged, {len(plan.orphans)} orphaned"
                )
                log.warning("reconcile %s", self.state.last_drift)
                apply_plan(self.session.store, embedder_for(self.session, plan), plan, self.catalog, save=False)
                self._lexical_dirty.set()

    def _reconcile_loop(self) -> None:
        while not self.stopping.wait(self.reconcile_every):
            try:
                self.reconcile()
            except ParseError:
                pass  # a file mid-edit: its own sync will report it
            except Exception:
                log.exception("reconcile failed")

    def _lexical_loop(self) -> None:
        """Rebuild BM25 and save the catalog once the watcher has been idle for a second.

        The rebuild takes about a second of pure-Python work at 10,000 entries; done during a run of
        saves it would hold the GIL against the syncs and searches that matter more. see @@D-018
        """
        while not self.stopping.is_set():
            if not self._lexical_dirty.wait(timeout=0.5):
                continue
            last = self.state.last_sync or 0.0
            if time.time() - last < IDLE_BEFORE_REBUILD:
                self.stopping.wait(0.2)
                continue
            self._lexical_dirty.clear()
            try:
                with self.mutex:
                    snapshot = [self.catalog.docs[i] for i in self.catalog.order]
                from memfiles.index.catalog import lexical_index

                index = lexical_index(snapshot)
                with self.mutex:
                    self.searcher.set_lexical(index)
                self._persist(index, snapshot)
            except Exception:
                log.exception("lexical rebuild failed")

    def _persist(self, index: Any = None, docs: list[Any] | None = None) -> None:
        """The catalog and lexical index on disk, for the commands that run while no watcher does."""
        from memfiles.index.catalog import Catalog

        if docs is None:
            docs = [self.catalog.docs[i] for i in self.catalog.order]
        Catalog({d.id: d for d in docs}).save(self.session.store.sidecar, index)

    def status(self) -> dict[str, Any]:
        with self.mutex:
            count = self.session.store.count()
            return {
                "watcher": {
                    "running": True,
                    "pid": os.getpid(),
                    "since": self.state.started,
                    "watched_folders": sorted(self.project.rel(p) for p in self._watched),
                },
                "entries_indexed": count,
                "catalog": len(self.catalog.docs),
                "last_sync": self.state.last_sync,
                "last_reconcile_drift": self.state.last_drift,
                "files_not_parsing": self.state.bad_files,
                "model": self.session.embedder.name,
                "store": str(self.settings.index_dir / "chroma"),
                "pending_files": len(self._pending),
            }
