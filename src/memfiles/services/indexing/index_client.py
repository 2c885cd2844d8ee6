"""The one way commands reach the index: `connect()` picks, once, between the watcher (over its socket;
it owns the store and has the model loaded) and the store opened here, and both answer the same calls.

    client = connect(settings)
    client.search([("coverage aggregation", 10)], Filters(kind="friction"))  # hit objects, per query
    client.similar(["title\\n\\nbody"], Filters(), k=5)  # (document fields, cosine), per text
    client.notify({"memory/decisions.md"}, pruned=set(), deadline=time.monotonic() + 2)
    client.backfill(rebuild=False, check=True)  # {"drift", "summary", "report"?}
    client.status()  # {"watcher", "index", "drift"}

Search results are the contract's hit objects (docs/json.md), so the socket answer and the local one
are the same JSON. This module and ipc.py import only the standard library at the top: a memsearch
answered by the watcher never loads numpy, chromadb or torch.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from memfiles.config import Settings
from memfiles.errors import IndexUnavailable, NoWatcher
from memfiles.services.indexing import ipc, protocol
from memfiles.services.indexing.searches import hit_objects
from memfiles.services.indexing.staleness import behind
from memfiles.store.project import Project

if TYPE_CHECKING:
    from memfiles.index.filters import Filters
    from memfiles.store.batch import BatchResult

Hits = list[dict[str, Any]]
Neighbours = list[tuple[dict[str, Any], float]]
Embed = Callable[[list[str]], Any]


class IndexClient(Protocol):
    """What commands, agents and editors ask of the index."""

    where: str  # "watcher" or "local"
    warnings: list[str]  # what the last call found worth a warning (files that did not parse at the last sync)

    def search(self, queries: list[tuple[str, int]], filters: Filters, mode: str = "hybrid") -> list[Hits]:
        """For each (query, k), up to k hit objects, best first. IndexUnavailable when there is no index."""
        ...

    def search_many(self, items: list[dict[str, Any]]) -> list[Hits]:
        """Several searches with filters of their own ({"query", "k", "filters", "mode"}), each distinct
        query embedded once: recall's layers in one call (one socket round trip to a watcher)."""
        ...

    def similar(self, texts: list[str], filters: Filters, k: int = 5) -> list[Neighbours]:
        """For each text, the k nearest entries as (document fields incl. id, title, text; cosine)."""
        ...

    def notify(self, paths: set[str], pruned: set[str], deadline: float, writing: Any = None) -> None:
        """Bring the entries of the written `paths` (and the `pruned` ids) into the index before `deadline`."""
        ...

    def backfill(self, rebuild: bool = False, check: bool = False) -> dict[str, Any]:
        """{"drift", "summary", "report"} (no report with check); nothing is created by a check."""
        ...

    def status(self) -> dict[str, Any]:
        """{"watcher", "index", "drift"} with ISO 8601 instants."""
        ...

    def vectors(self) -> tuple[dict[str, tuple[str, Any]], Embed]:
        """{id: (content hash, vector)} of every entry the index holds, and a function that embeds texts with
        the index's model (for entries it lacks): services/indexing/vectors.py."""
        ...


def index_exists(settings: Settings) -> bool:
    """False when no index was ever built here (embedded mode): the write path then has nothing to tell."""
    from memfiles.index.chroma import store_exists

    return store_exists(settings)


NO_WATCHER = {
    "running": False,
    "starting": False,
    "pid": None,
    "since": None,
    "last_sync": None,
    "syncs": 0,
    "pending_files": 0,
    "started_by": None,
    "idle_exit": None,
    "exits_at": None,
}
# A local client waiting this long for the store lock asks whether a watcher has started meanwhile (it
# holds the store for its whole life): if one answers, the call goes to it instead of waiting it out.
HANDOVER_AFTER = 1.0
# After a busy store made a write's near-duplicate check wait its whole timeout, the write's own update
# (which follows within BUSY_AGAIN_WINDOW) looks this long more, not index_timeout again: one busy store,
# one wait.
BUSY_AGAIN_WAIT = 0.2
BUSY_AGAIN_WINDOW = 2.0
# When a near-duplicate check in this process last gave up on a busy store (or a server that does not
# answer), which of the two it was, and how long it waited.
_found_busy: list[tuple[float, str, float]] = []

Call = TypeVar("Call", bound=Callable[..., Any])


class _WatcherHere(Exception):
    """The store lock is held by a watcher that started after this client chose the local path."""


def _handed_over(method: Call) -> Call:
    """A LocalIndex call that finds a watcher took the store meanwhile is made through that watcher."""

    @functools.wraps(method)
    def call(self: LocalIndex, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except _WatcherHere:
            watcher = WatcherIndex(self.settings)
            result = getattr(watcher, method.__name__)(*args, **kwargs)
            self.warnings, self.where = watcher.warnings, "watcher"  # no second watcher is left behind
            return result

    return call  # type: ignore[return-value]


class LocalIndex:
    """The store opened in this process, for the length of each call, under the store lock."""

    where = "local"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.warnings: list[str] = []

    @property
    def project(self) -> Project:
        return Project(self.settings)

    def _open(self, timeout: float, create: bool = False) -> Any:
        from memfiles.services.indexing.index_session import open_index

        return self._waiting(
            lambda wait: open_index(self.settings, timeout=wait, create=create, server_timeout=timeout), timeout
        )

    def _read(self, timeout: float) -> Any:
        """For queries: the saved catalog and vectors when in step with the store (numpy only), else the store."""
        from memfiles.services.indexing.index_session import open_reader

        return self._waiting(lambda wait: open_reader(self.settings, timeout=wait), timeout)

    @contextlib.contextmanager
    def _waiting(self, opener: Callable[[float], Any], timeout: float) -> Iterator[Any]:
        """`opener(timeout)`'s session, waited for in slices of HANDOVER_AFTER: when the store is still
        locked after one and a watcher now answers, _WatcherHere (the call goes to that watcher, which
        holds the store for its whole life); else the wait goes on, `timeout` in all."""
        from memfiles.errors import LockTimeout

        deadline = time.monotonic() + timeout
        with contextlib.ExitStack() as stack:
            while True:
                left = deadline - time.monotonic()
                piece = min(left, HANDOVER_AFTER)
                try:
                    session = stack.enter_context(opener(max(0.0, piece)))
                    break
                except IndexUnavailable as error:
                    busy = error.__cause__
                    if not isinstance(busy, LockTimeout):
                        raise
                    try:
                        watcher = running_watcher(self.settings)
                    except IndexUnavailable:
                        watcher = None  # one that does not answer a ping is not one to hand over to
                    if watcher is not None:
                        raise _WatcherHere from error
                    if left <= HANDOVER_AFTER:  # said for the whole wait, not its last slice
                        raise IndexUnavailable(busy.said(timeout)) from busy
            yield session

    def _searcher(self, session: Any) -> Any:
        """The session's searcher, with the entries no file holds any more hidden, and what the index says
        of itself (files it could not read, or that it is behind the files) kept in `warnings`."""
        if not session.exists():
            from memfiles.index.chroma import no_index

            raise IndexUnavailable(no_index(self.settings))
        searcher = session.searcher()
        late = behind(self.project, session.catalog, searcher.sidecar)
        late.hide_gone(searcher)
        self.warnings = unreadable_warnings(session.catalog.broken) + _said(late.warning())
        return searcher

    @_handed_over
    def search(self, queries: list[tuple[str, int]], filters: Filters, mode: str = "hybrid") -> list[Hits]:
        with self._read(timeout=self.settings.search_timeout) as session:
            searcher = self._searcher(session)
            return [hit_objects(searcher.search(query, k, filters, mode)) for query, k in queries]

    @_handed_over
    def search_many(self, items: list[dict[str, Any]]) -> list[Hits]:
        from memfiles.services.indexing.searches import search_many

        with self._read(timeout=self.settings.search_timeout) as session:
            searcher = self._searcher(session)
            return search_many(searcher, items)

    @_handed_over
    def similar(self, texts: list[str], filters: Filters, k: int = 5) -> list[Neighbours]:
        from memfiles.errors import LockTimeout
        from memfiles.services.indexing.index_session import nearest

        forget_waits()
        started = time.monotonic()
        # A write's near-duplicate check: a busy store is waited for index_timeout (it waited at least 5 s,
        # so a 1 s index_timeout cost a write 6.5 s); the write's own update then does not wait it again.
        try:
            with self._read(timeout=self.settings.index_timeout) as session:
                if not session.exists():
                    raise IndexUnavailable("there is no index yet")
                return nearest(session.searcher(), texts, filters, k)
        except IndexUnavailable as error:
            if isinstance(error.__cause__, LockTimeout | TimeoutError):  # a busy store, a server that hangs
                said = "is busy" if isinstance(error.__cause__, LockTimeout) else "did not answer"
                now = time.monotonic()
                _found_busy[:] = [(now, said, now - started)]  # the write that follows need not wait again
            raise

    @_handed_over
    def notify(self, paths: set[str], pruned: set[str], deadline: float, writing: Any = None) -> None:
        from memfiles.services.indexing.index_session import sync_files

        with self._open(timeout=max(0.05, deadline - time.monotonic())) as session:
            sync_files(self.project, session, paths, pruned, deadline, writing)

    @_handed_over
    def backfill(self, rebuild: bool = False, check: bool = False) -> dict[str, Any]:
        from memfiles.services.indexing.backfill import backfill_session, no_index_drift
        from memfiles.services.indexing.index_session import early_encoder
        from memfiles.services.indexing.sharing import rebuild_vectors

        if check and not index_exists(self.settings):
            return {"drift": no_index_drift(self.project), "summary": "no index yet", "exists": False}
        # A first build or a rebuild starts its encoder now, in a child process, so that importing torch
        # overlaps importing chromadb here (index/encode_worker.py).
        bulk = None if check else early_encoder(self.project, rebuild)
        try:
            # A rebuild encodes before it takes the store: searches answer from the old index meanwhile.
            prepared = rebuild_vectors(self.project, bulk) if rebuild and not check else None
            try:
                with self._open(timeout=self.settings.lock_timeout, create=not check) as session:
                    session.bulk = bulk
                    result, _ = backfill_session(self.project, session, None, rebuild, check, prepared)
                    return result
            except IndexUnavailable as error:
                if not rebuild or check or not _damaged(error):
                    raise
            # --rebuild of a store too damaged to open or reset: it is derived, so start from nothing.
            from memfiles.index.chroma import discard_store

            discard_store(self.settings, self.settings.lock_timeout)
            with self._open(timeout=self.settings.lock_timeout, create=True) as session:
                session.bulk = bulk if bulk is not None and bulk.alive else None
                result, _ = backfill_session(self.project, session, None, rebuild, check, prepared)
                result["summary"] = f"{result['summary']} (the damaged store was discarded)"
                return result
        finally:
            if bulk is not None:
                bulk.close()

    @_handed_over
    def status(self) -> dict[str, Any]:
        from memfiles.index.chroma import store_place
        from memfiles.services.indexing.backfill import backfill_session
        from memfiles.services.indexing.sharing import server_facts

        index: dict[str, Any] = {
            "exists": index_exists(self.settings),
            "store": store_place(self.settings),
            "model": None,
            "entries": None,
            "generation": None,
            "catalog": None,
            "server": None,
            "error": None,
        }
        drift = None
        collection = None
        if index["exists"]:
            try:
                with self._open(timeout=self.settings.lock_timeout) as session:
                    index.update(index_facts(session, session.catalog))
                    collection = session.store.name
                    drift = backfill_session(self.project, session, session.catalog, rebuild=False, check=True)[0][
                        "drift"
                    ]
            except IndexUnavailable as error:  # said, beside what the files say: why one runs status
                if getattr(error, "key", None):  # a setting to fix (`model`): exit 2 naming it, as recall does
                    raise
                index["error"] = str(error)
        index["server"] = server_facts(self.settings, collection)
        return {"watcher": not_answering_watcher(self.settings), "index": index, "drift": drift}

    @_handed_over
    def vectors(self) -> tuple[dict[str, tuple[str, Any]], Embed]:
        from memfiles.services.indexing.vectors import session_vectors

        with self._open(timeout=max(self.settings.index_timeout, 5.0)) as session:
            if not session.store.exists():
                raise IndexUnavailable("there is no index yet")
            return session_vectors(session)


def not_answering_watcher(settings: Settings) -> dict[str, Any]:
    """The watcher object when none answered: a watcher process of this project that is alive but does not
    answer yet (one memsearch or a write spawned a moment ago, still loading) is `starting`, with its pid."""
    from memfiles.services.indexing.daemon import live_watchers

    pids = live_watchers(settings)
    return {**NO_WATCHER, "starting": True, "pid": pids[0]} if pids else dict(NO_WATCHER)


def _damaged(error: IndexUnavailable) -> bool:
    """True for a store that failed as a store (not one busy with another process, not a missing model,
    not an encoder process that died, not a Chroma server that did not answer)."""
    from memfiles.errors import LockTimeout
    from memfiles.index.embedder import ModelUnavailable
    from memfiles.index.encode_worker import EncoderFailed
    from memfiles.index.shared import ServerUnavailable

    return not isinstance(error, (ModelUnavailable, EncoderFailed, ServerUnavailable)) and not isinstance(
        error.__cause__, LockTimeout
    )


def _said(warning: str | None) -> list[str]:
    return [warning] if warning else []


def unreadable_warnings(broken: dict[str, str]) -> list[str]:
    return [f"{message}; its entries are searched as they were before" for _path, message in sorted(broken.items())]


def index_facts(session: Any, catalog: Any) -> dict[str, Any]:
    """What status says about an open index: its model, entries, generation, and whether the catalog mirrors it."""
    from memfiles.index.chroma import store_place

    stamp = session.store.stamp()
    exists = session.store.exists()
    return {
        "exists": exists,
        "store": store_place(session.settings),
        "model": session.embedder.name,
        "entries": session.store.count() if exists else 0,
        "generation": stamp.generation,
        "catalog": {
            "entries": len(catalog.docs),
            "in_step": stamp.steady and catalog.generation == stamp.generation,
            "unreadable": sorted(catalog.broken),
        },
        "error": None,  # an index open enough to say all this was read
    }


class WatcherIndex:
    """The watcher, over .memsearch/watch.sock; should it stop between two calls, the store is opened here,
    unless `only` (a hook, the editor): then NoWatcher, and no model is loaded in this process."""

    where = "watcher"

    def __init__(self, settings: Settings, pid: int | None = None, only: bool = False) -> None:
        self.settings = settings
        self.pid = pid
        self.only = only
        self.local = LocalIndex(settings)
        self.warnings: list[str] = []

    def _fallback(self) -> LocalIndex:
        if self.only:
            raise NoWatcher("no watcher is running here: start one with `memfiles watch`")
        return self.local

    def search(self, queries: list[tuple[str, int]], filters: Filters, mode: str = "hybrid") -> list[Hits]:
        payload = protocol.search(queries, filters.as_json(), mode)
        answer = ipc.request(self.settings, payload, timeout=60)
        if answer is None:
            results = self._fallback().search(queries, filters, mode)
            self.warnings = self.local.warnings
            return results
        self.warnings = unreadable_warnings(answer.get("unreadable", {}))
        return answer["results"]

    def search_many(self, items: list[dict[str, Any]]) -> list[Hits]:
        answer = ipc.request(self.settings, protocol.search_many(items), timeout=60)
        if answer is None:
            results = self._fallback().search_many(items)
            self.warnings = self.local.warnings
            return results
        self.warnings = unreadable_warnings(answer.get("unreadable", {}))
        return answer["results"]

    def similar(self, texts: list[str], filters: Filters, k: int = 5) -> list[Neighbours]:
        payload = protocol.similar(texts, k, filters.as_json())
        answer = ipc.request(self.settings, payload, timeout=max(self.settings.index_timeout, 5.0))
        if answer is None:
            return self._fallback().similar(texts, filters, k)
        return [[(doc, score) for doc, score in hits] for hits in answer["results"]]

    def notify(self, paths: set[str], pruned: set[str], deadline: float, writing: Any = None) -> None:
        payload = protocol.sync(paths, pruned)
        if ipc.request(self.settings, payload, timeout=max(0.05, deadline - time.monotonic())) is None:
            self.local.notify(paths, pruned, deadline, writing)

    def backfill(self, rebuild: bool = False, check: bool = False) -> dict[str, Any]:
        answer = ipc.request(self.settings, protocol.backfill(rebuild, check), timeout=3600)
        if answer is None:
            return self.local.backfill(rebuild, check)
        answer.pop("ok", None)
        return answer

    def status(self) -> dict[str, Any]:
        answer = ipc.request(self.settings, protocol.status(), timeout=60)
        if answer is None:
            return self.local.status()
        answer.pop("ok", None)
        return answer

    def vectors(self) -> tuple[dict[str, tuple[str, Any]], Embed]:
        from memfiles.services.indexing.vectors import answer_vectors

        answer = ipc.request(self.settings, protocol.vectors(), timeout=max(self.settings.index_timeout, 30.0))
        if answer is None:
            return self._fallback().vectors()
        return answer_vectors(self.settings, answer)


def leave_watcher(settings: Settings, client: IndexClient, purpose: str, by: str = "search") -> str | None:
    """When `client` opened the store here (no watcher answered) and `search_watch` allows it, start a
    watcher in the background; what to tell the user, or None when none was started. Used after a search
    (the next one is warm; `by` "search") and in place of a write's local update (the watcher indexes it;
    `by` "write"). Such a watcher exits after `watch_idle_exit` seconds without a query or a change."""
    if client.where != "local" or not settings.search_watch:
        return None
    from memfiles.index.embedder import model_problem
    from memfiles.services.indexing.daemon import spawn_background

    if model_problem(settings.model) is not None:
        return None  # a watcher would exit at once: the caller goes on here and says why the model fails

    pid = spawn_background(settings, by)
    if pid is None:
        return None
    idle = settings.watch_idle_exit
    lasts = f"; it exits after {duration(idle)} without a query or a change" if idle else ""
    return (
        f"started a watcher in the background (pid {pid}) {purpose}{lasts}; `memfiles watch --stop` stops"
        " it, search_watch = false (or MEMFILES_SEARCH_WATCH=0) turns this off"
    )


def duration(seconds: float) -> str:
    """`15 min`, `2 h`, `90 s`: how long an idle exit is, as a person says it."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def running_watcher(settings: Settings, timeout: float = 5.0) -> dict[str, Any] | None:
    """The watcher's answer to a ping (`pid`, `ready`, `failed`) when one listens for this project, else
    None: the one way every command, server and hook asks whether a watcher runs. IndexUnavailable when
    one listens and does not answer within `timeout` seconds."""
    return ipc.request(settings, protocol.ping(), timeout=timeout)


def connect(settings: Settings, watcher_only: bool = False) -> IndexClient:
    """The watcher when one answers here, else the store opened locally: chosen once, per command. With
    `watcher_only` (an agent's hook, the editor: they must answer in milliseconds and never load the
    model), the watcher without a ping first: its first call raises NoWatcher when none runs."""
    if watcher_only:
        return WatcherIndex(settings, only=True)
    answer = running_watcher(settings)
    if answer is not None:
        return WatcherIndex(settings, answer.get("pid"))
    return LocalIndex(settings)


def search(settings: Settings, queries: list[tuple[str, int]], filters: Filters, mode: str = "hybrid") -> list[Hits]:
    return connect(settings).search(queries, filters, mode)


def similar(
    settings: Settings, texts: list[str], filters: Filters, k: int = 5, load_model: bool = True
) -> list[Neighbours]:
    """For each text, the k nearest entries; IndexUnavailable when there is no index or it cannot be reached.
    With `load_model` False, NoWatcher when no watcher answers: the store is not opened here."""
    if not index_exists(settings):
        raise IndexUnavailable("there is no index yet")
    client = connect(settings)
    if not load_model and client.where != "watcher":
        raise NoWatcher("no watcher is running")
    return client.similar(texts, filters, k)


def backfill(project: Project, rebuild: bool = False, check: bool = False) -> dict[str, Any]:
    return connect(project.settings).backfill(rebuild, check)


def status(settings: Settings) -> dict[str, Any]:
    """{"root", "watcher", "index", "drift"}: the status command's object."""
    return {"root": str(settings.root), **connect(settings).status()}


def forget_waits() -> None:
    """Forget what an earlier near-duplicate check found of the index: a long-lived process (the MCP
    server) calls it at each request, so that a check whose write was then refused does not shorten
    the wait of the next request's write."""
    _found_busy.clear()


# The notify threads this process started; one still running when the command is done is left behind.
_notifiers: list[Any] = []


def abandoned() -> bool:
    """True while a write's index update, given up on after index_timeout, still runs in its thread (in
    chromadb or torch's C code, say). The command's process must then leave with os._exit: finalising
    the interpreter under such a thread crashed it (SIGSEGV, or SIGABRT "exception not rethrown") after
    the write had succeeded, turning exit 0 into a failure a caller would retry."""
    return any(thread.is_alive() for thread in _notifiers)


def notify(project: Project, result: BatchResult) -> str | None:
    """Tell the index about a write, within index_timeout seconds; a warning when it could not.

    The work runs in a thread so that the bound holds even while chromadb loads or a server hangs;
    it never starts writing to the store after the deadline. see @@D-002
    With no watcher running and `search_watch` on (the default), the write does not open the store: it
    starts a watcher in the background, which indexes it as it catches up with the files (and answers
    the next search warm), and says so; with `search_watch = false` the store is updated here.
    """
    import threading

    settings = project.settings
    if not index_exists(settings):
        return None
    wait, found, waited = settings.index_timeout, "did not answer", 0.0
    if _found_busy:
        when, found, waited = _found_busy.pop()
        if time.monotonic() - when < BUSY_AGAIN_WINDOW:
            wait = min(wait, BUSY_AGAIN_WAIT)  # this write waited for the index already (its dupe check)
    deadline = time.monotonic() + wait
    outcome: list[str | None] = []
    writing = threading.Event()
    paths = {p for p in result.paths if p.endswith(".md")}

    def work() -> None:
        try:
            client = connect(settings)
            started = leave_watcher(settings, client, "to index this write (none was running)", by="write")
            if started is not None:
                outcome.append(started)
                return
            client.notify(paths, set(result.pruned), deadline, writing)
            outcome.append(None)
        except IndexUnavailable as error:
            said = str(error)  # a damaged store's error already says what to run (`backfill --rebuild`)
            outcome.append(
                f"{said}; the files are written" + ("" if "backfill" in said else ": run memfiles backfill later")
            )
        except TimeoutError:
            outcome.append(f"the index took longer than {wait:g} s: run memfiles backfill later")
        except Exception as error:  # an index fault must never fail a write
            outcome.append(f"index not updated ({type(error).__name__}: {error}): run memfiles backfill later")

    worker = threading.Thread(target=work, name="memfiles-index-notify", daemon=True)
    _notifiers[:] = [thread for thread in _notifiers if thread.is_alive()]  # a long-lived server keeps few
    _notifiers.append(worker)
    worker.start()
    worker.join(wait)
    if worker.is_alive() and writing.is_set():
        worker.join(60)  # a store write has begun: never cut it off half-way
    if worker.is_alive() or not outcome:
        if wait < settings.index_timeout:
            return f"the index {found} (this write waited {waited:.0f} s for it already): run memfiles backfill later"
        return f"the index did not answer within {wait:g} s: run memfiles backfill later"
    return outcome[0]


__all__ = [
    "IndexClient",
    "LocalIndex",
    "WatcherIndex",
    "backfill",
    "connect",
    "index_exists",
    "notify",
    "search",
    "similar",
    "status",
]
