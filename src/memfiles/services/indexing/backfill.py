"""Backfill: bring the whole index in line with the files, or (--check) only say how far apart they are.

A backfill also repairs the sidecar: when the store already matches the files but the saved catalog
does not mirror the store (a watcher killed before its save), the catalog is rewritten from the files
and stamped with the store's generation. A rebuild encodes before it opens the store (`prepare_rebuild`)
and then replaces the store's rows at once: searches answer from the old index until then.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memfiles.store.project import Project

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from memfiles.index.catalog import Catalog
    from memfiles.index.embedder import Embedder
    from memfiles.index.shared import SharedVectors
    from memfiles.index.sync import Plan, SyncReport
    from memfiles.services.indexing.index_session import FileDocs, IndexSession


@dataclass
class Prepared:
    """A rebuild's work done before the store is opened: the files as read, and every text's vector by
    content hash (encoded afresh, and with a server published again). Searches go on meanwhile."""

    started: int  # the staleness mark of that reading (services/indexing/staleness.py)
    found: FileDocs
    vectors: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0  # what the reading and encoding took (a rebuild's report counts it)


def prepare_rebuild(
    project: Project, encoder: Callable[[int], AbstractContextManager[Embedder]], shared: SharedVectors | None
) -> Prepared:
    """Read the files and encode every entry's text (`encoder(count)` gives the encoder for that many, for
    a block: index_session.sized_encoder), with
    no lock held; with a server (`shared`), publish the vectors, replacing what the server held for them:
    a rebuild is how a vector in doubt is made again."""
    import numpy as np

    from memfiles.index.shared import ServerUnavailable
    from memfiles.index.sync import encode_texts
    from memfiles.services.indexing.index_session import entry_docs
    from memfiles.services.indexing.staleness import reading_starts

    began = time.perf_counter()
    started = reading_starts()
    found = entry_docs(project)
    texts = {doc.hash: doc.text for doc in found.docs.values()}
    with encoder(len(texts)) as embedder:
        encoded = encode_texts(embedder, list(texts.values()))
    vectors = dict(zip(texts, np.asarray(encoded, dtype=np.float32), strict=True)) if texts else {}
    warnings = []
    if shared is not None and texts:
        try:
            shared.publish(list(texts), encoded, embedder.name)
        except ServerUnavailable as error:
            warnings.append(f"{error}: the rebuilt vectors were not shared (a later `memfiles backfill` shares them)")
    return Prepared(started, found, vectors, warnings, time.perf_counter() - began)


def backfill_session(
    project: Project,
    session: IndexSession,
    catalog: Catalog | None,
    rebuild: bool,
    check: bool,
    prepared: Prepared | None = None,
) -> tuple[dict[str, Any], Catalog | None]:
    """The backfill itself, in an open session (the local client's, or the watcher's).

    `catalog` is the one the caller holds (None: read the saved one). Entries of files that do not
    parse keep what the index has. A rebuild replaces the store's rows at once (index/sync.py), from
    the vectors `prepared` before the store was opened when given. Returns the result and, when
    anything was written, the catalog now saved beside the store.
    """
    from memfiles.index.catalog import Catalog
    from memfiles.index.lexical import saved_is_current
    from memfiles.index.sync import Plan, apply_plan, make_plan, mirrored_catalog, store_docs
    from memfiles.index.vector_cache import VectorCache
    from memfiles.services.indexing.index_session import encoder_for, entry_docs
    from memfiles.services.indexing.staleness import reading_starts

    began = time.perf_counter()  # the report's seconds are the whole backfill's, reading and comparing too
    started = prepared.started if prepared is not None else reading_starts()  # files modified before: compared
    found = prepared.found if prepared is not None else entry_docs(project)
    store = session.store
    if rebuild and not check:
        plan = Plan(embed=list(found.docs.values()))
        target = Catalog(dict(found.docs), broken=found.broken, vectors=VectorCache.empty(0))
        known = prepared.vectors if prepared is not None else None
        with encoder_for(session, plan) as encoder:
            report = apply_plan(store, encoder, plan, target, complete=True, replace=True, known=known)
        return _done(project, session, target, report, plan_json(plan, 0, found), began, started, prepared), target
    stored = store.all_metadata() if store.exists() else {}
    kept = sorted(i for i, meta in stored.items() if meta.get("path") in found.broken and i not in found.docs)
    plan = make_plan(found.docs, stored, session.embedder.name, scope=set(stored) - set(kept))
    drift = plan_json(plan, len(stored), found)
    if check:
        return {"drift": drift, "summary": "check only"}, None
    held = catalog if catalog is not None else mirrored_catalog(store)
    docs = dict(found.docs)
    known_docs = held.docs if held is not None else {}
    docs.update({i: known_docs[i] for i in kept if i in known_docs})
    docs.update(store_docs(store, [i for i in kept if i not in known_docs]))
    target = Catalog(docs, broken=found.broken)
    stamp = store.stamp()
    mirrors = held is not None and stamp.steady and held.generation == stamp.generation
    in_step = mirrors and held.docs == target.docs and held.broken == target.broken
    if in_step and held.vectors is None:
        held.load_vectors(store.sidecar)
    if (
        not plan.drift
        and in_step
        and held.vectors is not None
        and saved_is_current(store.sidecar, held.saved_as)  # else: saved again below (a stale BM25 recipe)
    ):
        report = apply_plan(store, session.embedder, plan)  # nothing to do: an empty report
        return _done(project, session, held, report, drift, began, started, prepared), None
    # The vectors the new catalog starts from, updated by the plan: none yet in an empty store; the
    # held catalog's when it mirrors the store; else apply_plan reads them from the store.
    if not stored:
        target.vectors = VectorCache.empty(0)
        store.create()  # made now even with nothing to embed: a project of no entries has an index
    elif mirrors and (held.vectors is not None or held.load_vectors(store.sidecar) is not None):
        target.vectors = held.vectors.copy()
    with encoder_for(session, plan) as encoder:
        report = apply_plan(store, encoder, plan, target, complete=True)
    return _done(project, session, target, report, drift, began, started, prepared), target


def _done(
    project: Project,
    session: IndexSession,
    catalog: Catalog,
    report: SyncReport,
    drift: dict[str, Any],
    began: float,
    started: int,
    prepared: Prepared | None,
) -> dict[str, Any]:
    """A backfill's result, once the store holds what the files say: the staleness mark moved, and with
    a server this clone's vectors marked used there (at most once a day, index/shared.py)."""
    from memfiles.services.indexing.staleness import mark_checked

    warnings = [*(prepared.warnings if prepared is not None else []), *report.warnings]
    if not warnings:  # (each says the server failed already: the touch waits for the next backfill)
        warnings += touch_shared(session.store, catalog, session.embedder.name)
    report.seconds = time.perf_counter() - began + (prepared.seconds if prepared is not None else 0.0)
    mark_checked(session.store.sidecar, started)
    return {"drift": drift, "summary": report.summary(), "report": report_json(report), "warnings": warnings}


def touch_shared(store: Any, catalog: Catalog | Callable[[], Catalog], model: str, force: bool = False) -> list[str]:
    """With a server: mark this clone's vectors used there (and share again the ones it lacks) when that
    was last done more than a day ago, or `force`d; the warning when the server could not be reached.
    `catalog` may be a function that gives it (a snapshot taken only when the touch is due)."""
    from memfiles.index.shared import ServerUnavailable, touch, touch_due

    shared = getattr(store, "shared", None)
    if shared is None or not (force or touch_due(store.sidecar, shared)):
        return []
    if callable(catalog):
        catalog = catalog()

    def vectors_of(hashes: list[str]) -> dict[str, Any]:
        """From the catalog's copy of the vectors (a snapshot: no store read, on any thread)."""
        if catalog.vectors is None:
            return store.vectors_by_hash(hashes)
        wanted, ids = set(hashes), {}
        for doc in catalog.docs.values():
            if doc.hash in wanted:
                ids.setdefault(doc.hash, doc.id)
        found = catalog.vectors.vectors_of(list(ids.values()))
        return {content: found[doc_id] for content, doc_id in ids.items() if doc_id in found}

    try:
        touch(store.sidecar, shared, [d.hash for d in catalog.docs.values()], vectors_of, model)
    except ServerUnavailable as error:
        return [f"{error}: this clone's vectors were not marked used there (the next `memfiles backfill` does it)"]
    return []


def plan_json(plan: Plan, stored: int, found: FileDocs | None = None) -> dict[str, Any]:
    """The drift of a plan as --check prints it; `indexed` is how many entries the store held,
    `on_disk` how many the files hold, `unreadable` the files that did not parse (their entries were
    left as the index had them), `duplicate_ids` each id two entries carry with their places (the index
    holds one of them)."""
    return {
        "missing_or_stale": sorted(d.id for d in plan.embed),
        "retag": sorted(d.id for d in plan.retag),
        "orphaned": plan.orphans,
        "unchanged": plan.unchanged,
        "indexed": stored,
        "on_disk": found.entries if found is not None else None,
        "unreadable": sorted(found.broken) if found is not None else [],
        "duplicate_ids": dict(sorted(found.twice.items())) if found is not None else {},
    }


def has_drift(drift: dict[str, Any]) -> bool:
    return bool(drift["missing_or_stale"] or drift["retag"] or drift["orphaned"])


def no_index_drift(project: Project) -> dict[str, Any]:
    """The drift when there is no index at all: every entry is missing (and nothing is created to say so)."""
    from memfiles.index.sync import Plan
    from memfiles.services.indexing.index_session import entry_docs

    found = entry_docs(project)
    return plan_json(Plan(embed=list(found.docs.values())), 0, found)


def report_json(report: SyncReport) -> dict[str, Any]:
    return {
        "indexed": report.indexed,
        "embedded": report.embedded,
        "reused": report.reused,
        "retagged": report.retagged,
        "unchanged": report.unchanged,
        "removed": report.removed,
        "seconds": round(report.seconds, 3),
    }
