"""Bringing the index in line with the files: a plan by id and content hash, then the least work that
carries it out. Backfill, the write path and the watcher all go through `apply_plan`; every reader
gets its catalog from `open_catalog`, which never hands out one that the store has moved past."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from memfiles.index.catalog import Catalog, IndexDoc, same_tags
from memfiles.index.chroma import VectorStore
from memfiles.index.embedder import Embedder

EMBED_BATCH = 64


@dataclass
class Plan:
    """What differs between the files and the store, by id."""

    embed: list[IndexDoc] = field(default_factory=list)  # new, or text (or model) changed
    retag: list[IndexDoc] = field(default_factory=list)  # same text, other tags (status, path, line...)
    unchanged: int = 0
    orphans: list[str] = field(default_factory=list)  # in the store, no longer in the files

    @property
    def drift(self) -> bool:
        return bool(self.embed or self.retag or self.orphans)


@dataclass
class SyncReport:
    indexed: int = 0
    retagged: int = 0
    unchanged: int = 0
    removed: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"indexed {self.indexed:,}, retagged {self.retagged:,}, unchanged {self.unchanged:,}, "
            f"removed {self.removed:,} in {self.seconds:.1f} s"
        )


def make_plan(
    docs: dict[str, IndexDoc], stored: dict[str, dict[str, Any]], model: str, scope: Iterable[str] | None = None
) -> Plan:
    """The plan for `docs` against `stored` metadata; orphans only among `scope` ids when given."""
    plan = Plan()
    for doc_id, doc in docs.items():
        meta = stored.get(doc_id)
        if meta is None or meta.get("hash") != doc.hash or meta.get("model") != model:
            plan.embed.append(doc)
        elif not same_tags(doc, meta, model):
            plan.retag.append(doc)
        else:
            plan.unchanged += 1
    candidates = stored if scope is None else [i for i in scope if i in stored]
    plan.orphans = sorted(i for i in candidates if i not in docs)
    return plan


def _progress(total: int, label: str) -> Any:
    if total < 2 * EMBED_BATCH or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit="entry", file=sys.stderr, leave=False)


def apply_plan(
    store: VectorStore,
    embedder: Embedder,
    plan: Plan,
    catalog: Catalog | None = None,
    deadline: float | None = None,
    save: bool = True,
    writing: Any = None,
    complete: bool = False,
) -> SyncReport:
    """Carry `plan` out: embed and upsert, retag, delete; then update the catalog and save it with its lexical index.

    The store's generation is stamped before the first write and settled after the last (index/chroma.py).
    `catalog` is a copy the plan updates, or with `complete` already every document the store holds
    after the plan (a backfill's, built from the files). It keeps the new generation only when it
    mirrored the store before (no write it missed) and no other writer began meanwhile; else it is
    saved unstamped and the next reader rebuilds it from the store.
    With a `deadline` (time.monotonic()), gives up before writing anything once it has passed.
    """
    import numpy as np

    start = time.perf_counter()
    model = embedder.name
    vectors = np.zeros((0, 0), dtype=np.float32)
    if plan.embed:
        bar = _progress(len(plan.embed), "embedding")
        chunks = []
        for offset in range(0, len(plan.embed), EMBED_BATCH * 4):
            batch = plan.embed[offset : offset + EMBED_BATCH * 4]
            chunks.append(embedder.encode([d.text for d in batch], batch_size=EMBED_BATCH))
            if bar is not None:
                bar.update(len(batch))
        if bar is not None:
            bar.close()
        vectors = np.concatenate(chunks)
    if deadline is not None and time.monotonic() > deadline:
        raise TimeoutError("the index update ran out of time before writing")
    if writing is not None:
        writing.set()  # from here on, stopping half-way could leave the store torn: the caller waits
    stamped = None
    if plan.drift or (complete and not store.stamp().steady):  # a backfill also settles a write that died
        before, generation = store.begin_write()
        if plan.embed:
            store.upsert(
                [d.id for d in plan.embed],
                vectors,
                [d.text for d in plan.embed],
                [d.metadata(model) for d in plan.embed],
            )
        if plan.retag:
            store.update_metadata([d.id for d in plan.retag], [d.metadata(model) for d in plan.retag])
        if plan.orphans:
            store.delete(plan.orphans)
        settled = store.finish_write(generation)
        mirrored = complete or (before.steady and before.generation == (catalog.generation if catalog else None))
        stamped = generation if settled and mirrored else None
    if catalog is not None:
        if not complete:
            for doc in (*plan.embed, *plan.retag):
                catalog.docs[doc.id] = doc
            for doc_id in plan.orphans:
                catalog.docs.pop(doc_id, None)
            catalog.order = list(catalog.docs)
        if stamped is not None or plan.drift:
            catalog.generation = stamped
        elif complete:
            catalog.generation = store.stamp().generation
        if save and (plan.drift or complete or not (store.sidecar / "catalog.json").exists()):
            catalog.save(store.sidecar)
    return SyncReport(len(plan.embed), len(plan.retag), plan.unchanged, len(plan.orphans), time.perf_counter() - start)


def store_docs(store: VectorStore, ids: list[str] | None = None) -> dict[str, IndexDoc]:
    """The documents the store holds (all, or those of `ids` that it has), as the catalog keeps them."""
    if ids is not None and not ids:
        return {}
    result = store.collection.get(ids=ids, include=["documents", "metadatas"])
    return {
        doc_id: IndexDoc.from_store(doc_id, text, meta)
        for doc_id, text, meta in zip(result["ids"], result["documents"], result["metadatas"], strict=True)
    }


def mirrored_catalog(store: VectorStore) -> Catalog | None:
    """The saved catalog when it mirrors the store as it is now (same generation, no write under way)."""
    try:
        catalog = Catalog.load(store.sidecar)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    stamp = store.stamp()
    return catalog if stamp.steady and catalog.generation == stamp.generation else None


def open_catalog(store: VectorStore) -> Catalog:
    """The saved catalog if it mirrors the store; else one rebuilt from the store's own documents.

    A rebuilt catalog is saved only when no write was under way while it was read, so that the next
    reader does not trust a copy of a half-written store.
    """
    catalog = mirrored_catalog(store)
    if catalog is not None:
        return catalog
    try:
        broken = Catalog.load(store.sidecar).broken
    except (OSError, ValueError, TypeError, KeyError):
        broken = {}
    before = store.stamp()
    catalog = Catalog(store_docs(store) if store.exists() else {}, broken=broken)
    if before.steady and store.stamp() == before:
        catalog.generation = before.generation
        catalog.save(store.sidecar)
    return catalog
