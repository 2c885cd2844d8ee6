"""Backfill: bring the whole index in line with the files, or (--check) only say how far apart they are.

A backfill also repairs the sidecar: when the store already matches the files but the saved catalog
does not mirror the store (a watcher killed before its save, another client of a server), the
catalog is rewritten from the files and stamped with the store's generation.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from memfiles.store.project import Project

if TYPE_CHECKING:
    from memfiles.index.catalog import Catalog
    from memfiles.index.sync import Plan, SyncReport
    from memfiles.services.index_session import FileDocs, IndexSession


def backfill_session(
    project: Project, session: IndexSession, catalog: Catalog | None, rebuild: bool, check: bool
) -> tuple[dict[str, Any], Catalog | None]:
    """The backfill itself, in an open session (the local client's, or the watcher's).

    `catalog` is the one the caller holds (None: read the saved one). Entries of files that do not
    parse keep what the index has for them. Returns the result and, when anything was written, the
    catalog now saved beside the store.
    """
    from memfiles.index.catalog import Catalog
    from memfiles.index.lexical import saved_is_current
    from memfiles.index.sync import apply_plan, make_plan, mirrored_catalog, store_docs
    from memfiles.index.vector_cache import VectorCache
    from memfiles.services.behind import mark_checked, reading_starts
    from memfiles.services.index_session import encoder_for, entry_docs

    started = reading_starts()  # every file modified before this is compared below
    began = time.perf_counter()  # the report's seconds are the whole backfill's, reading and comparing too
    found = entry_docs(project)
    store = session.store
    if rebuild and not check:
        store.reset()
    stored = store.all_metadata() if store.exists() else {}
    kept = sorted(i for i, meta in stored.items() if meta.get("path") in found.broken and i not in found.docs)
    plan = make_plan(found.docs, stored, session.embedder.name, scope=set(stored) - set(kept))
    drift = plan_json(plan, len(stored), found)
    if check:
        return {"drift": drift, "summary": "check only"}, None
    held = catalog if catalog is not None else mirrored_catalog(store)
    docs = dict(found.docs)
    known = held.docs if held is not None else {}
    docs.update({i: known[i] for i in kept if i in known})
    docs.update(store_docs(store, [i for i in kept if i not in known]))
    target = Catalog(docs, broken=found.broken)
    stamp = store.stamp()
    mirrors = held is not None and stamp.steady and held.generation == stamp.generation
    in_step = mirrors and held.docs == target.docs and held.broken == target.broken
    if in_step and held.vectors is None:
        held.load_vectors(store.sidecar)
    if (
        not plan.drift
        and not rebuild
        and in_step
        and held.vectors is not None
        and saved_is_current(store.sidecar, held.saved_as)  # else: saved again below (a stale BM25 recipe)
    ):
        report = apply_plan(store, session.embedder, plan)  # nothing to do: an empty report
        report.seconds = time.perf_counter() - began
        mark_checked(store.sidecar, started)
        return {"drift": drift, "summary": report.summary(), "report": report_json(report)}, None
    # The vectors the new catalog starts from, updated by the plan: none yet in an empty store; the
    # held catalog's when it mirrors the store; else apply_plan reads them from the store.
    if not stored:
        target.vectors = VectorCache.empty(0)
        store.create()  # made now even with nothing to embed: a project of no entries has an index
    elif mirrors and (held.vectors is not None or held.load_vectors(store.sidecar) is not None):
        target.vectors = held.vectors.copy()
    with encoder_for(session, plan) as encoder:
        report = apply_plan(store, encoder, plan, target, complete=True)
    report.seconds = time.perf_counter() - began
    mark_checked(store.sidecar, started)
    return {"drift": drift, "summary": report.summary(), "report": report_json(report)}, target


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
    from memfiles.services.index_session import entry_docs

    found = entry_docs(project)
    return plan_json(Plan(embed=list(found.docs.values())), 0, found)


def report_json(report: SyncReport) -> dict[str, Any]:
    return {
        "indexed": report.indexed,
        "retagged": report.retagged,
        "unchanged": report.unchanged,
        "removed": report.removed,
        "seconds": round(report.seconds, 3),
    }
