"""The index as commands use it: open it, backfill it, tell it about a write, search it.

Everything here imports the heavy libraries lazily, inside the functions, so that `memfiles --help`,
`check` and `fmt` never pay for them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from memfiles.config import Settings
from memfiles.errors import IndexUnavailable
from memfiles.store.batch import BatchResult
from memfiles.store.project import Project

if TYPE_CHECKING:
    from memfiles.index.catalog import Catalog, IndexDoc
    from memfiles.index.chroma import VectorStore
    from memfiles.index.embedder import Embedder
    from memfiles.index.search import Filters, Hit
    from memfiles.index.sync import Plan, SyncReport

# Below this many entries to embed, the numpy encoder (0.2 s to load) beats sentence-transformers (~5 s).
LIGHT_LIMIT = 64


@dataclass
class IndexSession:
    store: VectorStore
    embedder: Embedder
    settings: Settings

    @property
    def catalog(self) -> Catalog:
        from memfiles.index.sync import load_catalog

        if not hasattr(self, "_catalog"):
            self._catalog = load_catalog(self.store)
        return self._catalog


def _embedder(settings: Settings, light: bool) -> Embedder:
    from memfiles.index.embedder import load_embedder

    return load_embedder(settings.model, light=light)


@contextmanager
def open_index(settings: Settings, timeout: float = 10.0, light: bool = True) -> Iterator[IndexSession]:
    from memfiles.index.chroma import open_store
    from memfiles.index.embedder import collection_name

    embedder = _embedder(settings, light)
    with open_store(settings, collection_name(embedder.name, embedder.dimension), timeout) as store:
        yield IndexSession(store, embedder, settings)


def entry_docs(project: Project, paths: set[str] | None = None) -> dict[str, IndexDoc]:
    """The index documents of every entry (or of the entries in `paths`), by id."""
    from memfiles.index.catalog import index_doc

    schema = project.settings.schema
    files = project.load()
    if paths is not None:
        files = [f for f in files if f.rel in paths]
    return {located.entry.id: index_doc(located, schema) for located in project.entries(files)}


def embedder_for(session: IndexSession, plan: Plan) -> Embedder:
    """The session's light encoder for a few entries; sentence-transformers, loaded once, for more."""
    from memfiles.index.embedder import NumpyBertEmbedder

    if len(plan.embed) <= LIGHT_LIMIT or not isinstance(session.embedder, NumpyBertEmbedder):
        return session.embedder
    if getattr(session, "_bulk", None) is None:
        session._bulk = _embedder(session.settings, light=False)
    return session._bulk


def backfill_session(
    project: Project, session: IndexSession, catalog: Catalog, rebuild: bool, check: bool
) -> tuple[dict[str, Any], Catalog | None]:
    """The backfill itself, in an open session (the command's own, or the watcher's).

    Returns the result and, when the store changed, the catalog now saved beside it.
    """
    from memfiles.index.catalog import Catalog
    from memfiles.index.sync import apply_plan, make_plan

    docs = entry_docs(project)
    if rebuild and not check:
        session.store.reset()
    stored = session.store.all_metadata() if session.store.exists() else {}
    plan = make_plan(docs, stored, session.embedder.name)
    drift = plan_json(plan, len(stored))
    if check:
        return {"drift": drift, "summary": "check only"}, None
    changed = plan.drift or rebuild
    target = Catalog(dict(docs)) if changed else catalog
    report = apply_plan(session.store, embedder_for(session, plan), plan, target)
    return {"drift": drift, "summary": report.summary(), "report": report_json(report)}, target if changed else None


def backfill(project: Project, rebuild: bool = False, check: bool = False) -> dict[str, Any]:
    """Upsert every entry, delete ids no longer in the files; `check` only plans; `rebuild` starts empty.

    Returns {"drift": {...}, "summary": str, "report": {...}} (no report with check). A running watcher
    does the work itself, since it owns the store.
    """
    from memfiles.services.ipc import request

    answer = request(project.settings, {"op": "backfill", "rebuild": rebuild, "check": check}, timeout=3600)
    if answer is not None:
        return answer
    with open_index(project.settings, timeout=project.settings.lock_timeout) as session:
        result, _ = backfill_session(project, session, session.catalog, rebuild, check)
        return result


def plan_json(plan: Plan, stored: int) -> dict[str, Any]:
    """The drift of a plan as --check prints it; `indexed` is how many entries the store held."""
    return {
        "missing_or_stale": sorted(d.id for d in plan.embed),
        "retag": sorted(d.id for d in plan.retag),
        "orphaned": plan.orphans,
        "unchanged": plan.unchanged,
        "indexed": stored,
    }


def report_json(report: SyncReport) -> dict[str, Any]:
    return {
        "indexed": report.indexed,
        "retagged": report.retagged,
        "unchanged": report.unchanged,
        "removed": report.removed,
        "seconds": round(report.seconds, 3),
    }


def index_exists(settings: Settings) -> bool:
    """False when no index was ever built here (embedded mode): the write path then has nothing to tell."""
    return bool(settings.index_url) or (settings.index_dir / "chroma").is_dir()


def notify(project: Project, result: BatchResult) -> str | None:
    """Tell the index about a write, within index_timeout seconds; a warning when it could not.

    The work runs in a thread so that the bound holds even while chromadb loads or a server hangs;
    it never starts writing to the store after the deadline. see @@D-002
    """
    import threading

    settings = project.settings
    if not index_exists(settings):
        return None
    deadline = time.monotonic() + settings.index_timeout
    outcome: list[str | None] = []
    writing = threading.Event()

    def work() -> None:
        try:
            outcome.append(_notify(project, result, deadline, writing))
        except IndexUnavailable as error:
            outcome.append(f"{error}; the files are written: run memfiles backfill later")
        except TimeoutError:
            outcome.append(f"the index took longer than {settings.index_timeout:g} s: run memfiles backfill later")
        except Exception as error:  # an index fault must never fail a write
            outcome.append(f"index not updated ({type(error).__name__}: {error}): run memfiles backfill later")

    worker = threading.Thread(target=work, name="memfiles-index-notify", daemon=True)
    worker.start()
    worker.join(settings.index_timeout)
    if worker.is_alive() and writing.is_set():
        worker.join(60)  # a store write has begun: never cut it off half-way
    if worker.is_alive() or not outcome:
        return f"the index did not answer within {settings.index_timeout:g} s: run memfiles backfill later"
    return outcome[0]


def _notify(project: Project, result: BatchResult, deadline: float, writing: Any = None) -> str | None:
    from memfiles.index.sync import apply_plan, make_plan
    from memfiles.services.ipc import request

    settings = project.settings
    paths = {p for p in result.paths if p.endswith(".md")}
    payload = {"op": "sync", "paths": sorted(paths), "pruned": result.pruned}
    if request(settings, payload, timeout=max(0.05, deadline - time.monotonic())) is not None:
        return None  # the watcher owns the store and has synced
    docs = entry_docs(project, paths)
    remaining = max(0.05, deadline - time.monotonic())
    with open_index(settings, timeout=remaining) as session:
        if not session.store.exists():
            return None  # no index yet: nothing to keep in step; backfill builds it
        catalog = session.catalog
        scope = {i for i, d in catalog.docs.items() if d.path in paths} | set(result.pruned) | set(docs)
        stored = {}
        if scope:
            got = session.store.collection.get(ids=sorted(scope), include=["metadatas"])
            stored = dict(zip(got["ids"], got["metadatas"], strict=True))
        plan = make_plan(docs, stored, session.embedder.name, scope=scope)
        apply_plan(session.store, session.embedder, plan, catalog, deadline=deadline, writing=writing)
    return None


def similar(settings: Settings, texts: list[str], filters: Filters, k: int = 5) -> list[list[tuple[dict, float]]]:
    """For each text, the k nearest entries that pass `filters`, as (document fields, cosine).

    Raises IndexUnavailable when there is no index or it cannot be reached.
    """
    from memfiles.index.search import Searcher
    from memfiles.services.ipc import request

    if not index_exists(settings):
        raise IndexUnavailable("there is no index yet")
    payload = {
        "op": "similar",
        "texts": texts,
        "k": k,
        "filters": {key: v for key, v in asdict(filters).items() if v is not None},
    }
    answer = request(settings, payload, timeout=max(settings.index_timeout, 5.0))
    if answer is not None:
        return [[(doc, score) for doc, score in hits] for hits in answer["results"]]
    with open_index(settings, timeout=max(settings.index_timeout, 5.0)) as session:
        if not session.store.exists():
            raise IndexUnavailable("there is no index yet")
        searcher = Searcher(session.store, session.catalog, session.embedder)
        return nearest(searcher, texts, filters, k)


def nearest(searcher: Any, texts: list[str], filters: Filters, k: int) -> list[list[tuple[dict, float]]]:
    """The k nearest catalog documents of each text, by cosine, as (fields, score)."""
    out = []
    for vector in searcher.embedder.encode(texts):
        scores = searcher.dense_scores(vector, filters, depth=k)
        out.append([(asdict(searcher.catalog.docs[i]), s) for i, s in scores.items() if i in searcher.catalog.docs])
    return out


def search(
    settings: Settings, queries: list[tuple[str, int]], filters: Filters, mode: str = "hybrid", timeout: float = 10.0
) -> list[list[Hit]]:
    """Answer each (query, k) with the model and store opened once."""
    from memfiles.index.search import Hit, Searcher
    from memfiles.services.ipc import request

    answer = request(
        settings,
        {
            "op": "search",
            "queries": queries,
            "mode": mode,
            "filters": {k: v for k, v in asdict(filters).items() if v is not None},
        },
        timeout=60,
    )
    if answer is not None:
        return [[Hit(**hit) for hit in hits] for hits in answer["results"]]
    with open_index(settings, timeout=timeout) as session:
        if not session.store.exists():
            raise IndexUnavailable("there is no index yet: run `memfiles backfill` to build it")
        searcher = Searcher(session.store, session.catalog, session.embedder)
        return [searcher.search(query, k, filters, mode) for query, k in queries]
