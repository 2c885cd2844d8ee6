"""Bringing the index in line with the files: a plan by id and content hash, then the least work that
carries it out. Backfill, the write path and the watcher all go through `apply_plan`."""

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
) -> SyncReport:
    """Carry `plan` out: embed and upsert, retag, delete; then save the catalog (and lexical index).

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
    if plan.embed:
        store.upsert(
            [d.id for d in plan.embed], vectors, [d.text for d in plan.embed], [d.metadata(model) for d in plan.embed]
        )
    if plan.retag:
        store.update_metadata([d.id for d in plan.retag], [d.metadata(model) for d in plan.retag])
    if plan.orphans:
        store.delete(plan.orphans)
    if catalog is not None:
        for doc in (*plan.embed, *plan.retag):
            catalog.docs[doc.id] = doc
        for doc_id in plan.orphans:
            catalog.docs.pop(doc_id, None)
        catalog.order = list(catalog.docs)
        if save and (plan.drift or not (store.sidecar / "catalog.json").exists()):
            catalog.save(store.sidecar)
    return SyncReport(len(plan.embed), len(plan.retag), plan.unchanged, len(plan.orphans), time.perf_counter() - start)


def load_catalog(store: VectorStore) -> Catalog:
    """The saved catalog, or one rebuilt from the store's own documents (after a move, or on another host)."""
    try:
        return Catalog.load(store.sidecar)
    except (OSError, ValueError, TypeError, KeyError):
        pass
    result = store.collection.get(include=["documents", "metadatas"])
    docs = {}
    for doc_id, text, meta in zip(result["ids"], result["documents"], result["metadatas"], strict=True):
        fields = {
            key: meta.get(key) for key in ("kind", "area", "status", "path", "line", "section", "date", "title", "hash")
        }
        docs[doc_id] = IndexDoc(id=doc_id, text=text or "", **fields)  # type: ignore[arg-type]
    catalog = Catalog(docs)
    catalog.save(store.sidecar)
    return catalog
