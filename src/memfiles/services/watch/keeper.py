"""The watcher's hold on the index: one open session, the catalog in memory, and every change to the
store made holding the index alone (file syncs, backfills, the reconcile timer), while searches share it
(services/watch/sharing.py). see @@D-017"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memfiles.contract import iso_instant
from memfiles.errors import ParseError
from memfiles.format.grammar import headings_of
from memfiles.services.indexing.index_session import IndexSession, encoder_for
from memfiles.services.watch.sharing import SharedLock
from memfiles.store.fileio import read_text
from memfiles.store.project import Project

if TYPE_CHECKING:
    from memfiles.index.catalog import IndexDoc

log = logging.getLogger("memfiles.watch")


@dataclass
class WatchState:
    started: float = field(default_factory=time.time)
    last_sync: float | None = None
    syncs: int = 0
    last_drift: str | None = None


class IndexKeeper:
    """Keeps the store, the in-memory catalog and the searcher in step with the files."""

    def __init__(self, project: Project, session: IndexSession) -> None:
        from memfiles.index.search import Searcher

        self.project = project
        self.session = session
        self.state = WatchState()
        self.mutex = SharedLock()  # searches share it (`with mutex.shared()`); changes hold it alone
        self.lexical_dirty = threading.Event()  # the catalog changed since the last save
        self.catalog = session.catalog
        self.searcher = Searcher(session.store, self.catalog, session.embedder, vectors=session.vectors())
        self._torch_queries: threading.Thread | None = None
        self._reaching: threading.Thread | None = None
        if getattr(session.store, "shared", None) is not None:  # with a server: chromadb imported and the
            # server reached now, not in the first sync that needs a vector from it (a checkout's): 1-2 s
            self._reaching = threading.Thread(target=self._reach_server, name="memfiles-server", daemon=True)
            self._reaching.start()
        self._torch_gate = threading.Lock()  # one loader, and none once the watcher stops
        self._torch_closed = False

    def _reach_server(self) -> None:
        try:
            self.session.store.shared.count()
        except Exception as error:  # said again by the sync that needs it
            log.warning("%s", error)

    def torch_for_queries(self) -> None:
        """Once, in the background: answer queries with the torch form of the bundled model's encoder.

        A query's products are a few rows wide; numpy's BLAS spends most of such a product copying the
        weight matrix into its own layout, torch's does not: one CACM query (20 word pieces) took 20 ms in
        numpy and 10.5 ms in torch, both on one thread (L-059). torch is imported and warmed outside the
        mutex, so queries go on in numpy meanwhile (about 2 s), and only the swap takes the mutex. The
        two encoders' vectors agree to 1e-5 (tests/test_embedder.py), so a score may differ in its sixth
        decimal before and after. Off with the `watch_torch` setting, and for a model the torch recipe
        does not take (it is already sentence-transformers). Called by every op that encodes a query:
        searches, hooks' recall and a write's near-duplicate check."""
        if not self.project.settings.watch_torch:
            return
        with self._torch_gate:
            if self._torch_queries is not None or self._torch_closed:
                return
            self._torch_queries = threading.Thread(target=self._load_torch_queries, name="memfiles-torch", daemon=True)
            self._torch_queries.start()

    def query_encoder(self) -> str:
        """Which encoder answers queries: "torch", "numpy", "loading torch" (numpy answers meanwhile), or
        "sentence-transformers" (a model the BERT recipes do not take)."""
        from memfiles.index.bert_torch import TorchBertEmbedder  # imports no torch until used
        from memfiles.index.embedder import NumpyBertEmbedder

        embedder = self.searcher.embedder
        if isinstance(embedder, TorchBertEmbedder):
            return "torch"
        if not isinstance(embedder, NumpyBertEmbedder):
            return "sentence-transformers"
        loader = self._torch_queries
        return "loading torch" if loader is not None and loader.is_alive() else "numpy"

    def settle(self, timeout: float) -> None:
        """Before the watcher stops: start no loader from now on, and wait for one that runs (an exit in
        the middle of importing torch can crash the interpreter's shutdown)."""
        with self._torch_gate:
            self._torch_closed = True
            loader = self._torch_queries
        if loader is not None:
            loader.join(timeout)
        if self._reaching is not None:  # (an import cut short by the exit can crash it, as torch's can)
            self._reaching.join(timeout)

    def _load_torch_queries(self) -> None:
        from memfiles.index.embedder import NumpyBertEmbedder

        light = self.session.embedder
        if type(light) is not NumpyBertEmbedder:
            return
        try:
            fast = self._torch_encoder(light)
        except Exception as error:  # the numpy encoder answers as before
            log.warning("queries stay on the numpy encoder: torch could not be loaded (%s)", error)
            return
        with self.mutex:
            self.searcher.embedder = fast
            if self.session.bulk is None:
                self.session.bulk = fast  # a large sync uses the same one
        log.info("queries now use the torch encoder")

    def _torch_encoder(self, light: Any) -> Any:
        """The torch encoder, loaded and warmed on this (the loader's) thread without the mutex: the one a
        large sync already loaded, else one over `light`'s arrays."""
        from memfiles.index.bert_torch import TorchBertEmbedder

        bulk = self.session.bulk  # set once, under the mutex, by a large sync; never unset
        if isinstance(bulk, TorchBertEmbedder):
            return bulk
        fast = TorchBertEmbedder.sharing(light)
        fast.warm_up()
        return fast

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
                with encoder_for(self.session, plan) as encoder:
                    report = apply_plan(self.session.store, encoder, plan, self.catalog, save=False)
                self.lexical_dirty.set()
                log.info("synced %s: %s", ", ".join(sorted(paths))[:200], report.summary())
            self.state.last_sync = time.time()
            self.state.syncs += 1

    def _docs_of(self, paths: set[str]) -> tuple[dict[str, IndexDoc], set[str]]:
        """The index documents of the files in `paths` that parse, and which paths those were."""
        from memfiles.index.catalog import index_doc

        docs: dict[str, IndexDoc] = {}
        good: set[str] = set()
        schema = self.project.settings.schema
        for rel in paths:
            path = self.project.root / rel
            try:
                loaded = self.project.load_file(path) if path.is_file() else None
            except ParseError as error:
                if self.catalog.broken.get(rel) != error.located():
                    log.warning("%s; keeping its last good entries in the index", error)
                self.catalog.broken[rel] = error.located()
                continue
            except (OSError, UnicodeDecodeError) as error:
                log.warning("%s: cannot read (%s); keeping its last good entries", rel, error)
                self.catalog.broken[rel] = f"{rel}: cannot read ({error})"
                continue
            self.catalog.broken.pop(rel, None)
            good.add(rel)
            if loaded is not None:
                for located in self.project.entries([loaded]):
                    docs[located.entry.id] = index_doc(located, schema)
        return docs, good

    def _moved_elsewhere(self, leaving: set[str], paths: set[str]) -> set[str]:
        """Files outside `paths` whose text holds one of the `leaving` ids' headings: a move, not a delete."""
        if not leaving:
            return set()
        pattern = headings_of(leaving)
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

    def backfill(self, rebuild: bool, check: bool) -> dict[str, Any]:
        try:
            return self._backfill(rebuild, check)
        finally:
            give_back_memory()  # it read every entry's metadata from the store

    def _backfill(self, rebuild: bool, check: bool) -> dict[str, Any]:
        from memfiles.services.indexing.backfill import backfill_session, prepare_rebuild
        from memfiles.services.indexing.index_session import sized_encoder

        prepared = None
        if rebuild and not check:  # encoded before the mutex: searches answer from the old index meanwhile
            shared = getattr(self.session.store, "shared", None)
            prepared = prepare_rebuild(self.project, lambda count: sized_encoder(self.session, count), shared)
        # a check writes nothing: it reads beside the searches (status asks one), a backfill holds the index alone
        with self.mutex.shared() if check else self.mutex:
            result, saved = backfill_session(self.project, self.session, self.catalog, rebuild, check, prepared)
            if saved is not None:
                self.catalog.docs, self.catalog.order = saved.docs, saved.order
                self.catalog.generation, self.catalog.broken = saved.generation, saved.broken
                self.catalog.saved_as = saved.saved_as
                self.catalog.vectors = saved.vectors
                self.searcher.vectors = saved.vectors
                self.searcher.set_lexical(self.searcher_lexical_from_disk())
                self.lexical_dirty.clear()
            if not check:
                self.state.last_sync = time.time()
            return result

    def searcher_lexical_from_disk(self) -> Any:
        """The lexical index the backfill just saved; built from the catalog if it cannot be read."""
        from memfiles.index.catalog import lexical_index
        from memfiles.index.lexical import LexicalIndex

        try:
            return LexicalIndex.load(self.session.store.sidecar)
        except (OSError, ValueError, KeyError):
            return lexical_index([self.catalog.docs[i] for i in self.catalog.order])

    def reconcile(self) -> None:
        """The whole tree against the catalog, by hash only; logs any drift it had to fix."""
        from memfiles.index.sync import apply_plan, make_plan
        from memfiles.services.indexing.backfill import touch_shared
        from memfiles.services.indexing.index_session import entry_docs
        from memfiles.services.indexing.staleness import mark_checked, reading_starts

        started = reading_starts()
        found = entry_docs(self.project)  # outside the lock: parsing needs no index
        with self.mutex:
            known = {i for i, d in self.catalog.docs.items() if d.path not in found.broken}
            plan = make_plan(found.docs, self._stored(known | set(found.docs)), self.session.embedder.name, known)
            if plan.drift:
                self.state.last_drift = (
                    f"{iso_instant(time.time())}: fixed {len(plan.embed)} missing or stale, "
                    f"{len(plan.retag)} retagged, {len(plan.orphans)} orphaned"
                )
                log.warning("reconcile %s", self.state.last_drift)
                with encoder_for(self.session, plan) as encoder:
                    apply_plan(self.session.store, encoder, plan, self.catalog, save=False)
                self.lexical_dirty.set()
        give_back_memory()  # the whole tree was parsed again
        mark_checked(self.session.store.sidecar, started)  # for searches once no watcher runs
        for warning in touch_shared(self.session.store, self.snapshot, self.session.embedder.name):
            log.warning("%s", warning)  # with a server, once a day: outside the mutex (a snapshot's vectors)

    def snapshot(self) -> Any:
        """The catalog as it stands, copied with the generation it mirrors (taken together, under the mutex)."""
        from memfiles.index.catalog import Catalog

        with self.mutex.shared():
            docs = {i: self.catalog.docs[i] for i in self.catalog.order}
            vectors = self.catalog.vectors.copy() if self.catalog.vectors is not None else None
            return Catalog(docs, self.catalog.generation, self.catalog.broken, vectors)

    def persist(self, snapshot: Any = None, index: Any = None) -> None:
        """The catalog and lexical index on disk, for the commands that run while no watcher does."""
        (snapshot or self.snapshot()).save(self.session.store.sidecar, index)

    def index_status(self) -> dict[str, Any]:
        from memfiles.services.indexing.index_client import index_facts
        from memfiles.services.indexing.sharing import server_facts

        with self.mutex.shared():
            facts = index_facts(self.session, self.catalog)
            facts["catalog"]["saved"] = not self.lexical_dirty.is_set()
        facts["server"] = server_facts(self.project.settings, self.session.store.name)  # no mutex held
        return facts


def give_back_memory() -> None:
    """Return the heap's free pages to the system (glibc's malloc_trim), after work that read the whole
    store. Reading every entry's metadata for a catch-up took 100 MB at 5,000 entries (chromadb's core and
    the Python objects), freed at once and kept by the allocator for the watcher's whole life; trimmed,
    the process went from 150 MB to 83 MB (docs/reliability.md). Nothing to do off glibc."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
