"""Bringing the index in line with the files: a plan by id and content hash, then the least work that
carries it out. Backfill, the write path and the watcher all go through `apply_plan`; every reader
gets its catalog from `open_catalog`, which never hands out one that the store has moved past."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memfiles.index.catalog import Catalog, IndexDoc, lexical_index, same_tags
from memfiles.index.chroma import VectorStore
from memfiles.index.embedder import EMBED_BATCH, Embedder
from memfiles.index.encode_worker import EncoderProcess
from memfiles.index.vector_cache import VectorCache, entry_of

if TYPE_CHECKING:
    from memfiles.index.lexical import LexicalIndex

PROGRESS_FROM = 16  # texts to encode from which a terminal shows a progress bar (fewer: a write's own update)


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
    embedded: int = 0  # texts encoded here (the others of `indexed` had a vector already: a view's, the server's)
    reused: int = 0
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        took = f"{self.seconds:.1f}" if self.seconds >= 0.95 else f"{self.seconds:.3f}"  # a quick one: not "0.0 s"
        shared = f" ({self.reused:,} vectors reused, {self.embedded:,} embedded)" if self.reused else ""
        return (
            f"indexed {self.indexed:,}{shared}, retagged {self.retagged:,}, unchanged {self.unchanged:,}, "
            f"removed {self.removed:,} in {took} s"
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
    if total < PROGRESS_FROM or not sys.stderr.isatty():
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
    replace: bool = False,
    known: dict[str, Any] | None = None,
) -> SyncReport:
    """Carry `plan` out: embed and upsert, retag, delete; then update the catalog and save it with its lexical index.

    The store's generation is stamped before the first write and settled after the last (index/chroma.py).
    With `replace` (a rebuild: the plan embeds every entry) the store's rows are replaced by the plan's
    at once; `known` gives vectors by content hash that need no encoding (a rebuild's, encoded before
    the store was opened). A clone's view of a server (index/view.py) takes each text's vector from
    itself or the server when either has it, and embeds only the rest (index/shared.py).
    `catalog` is a copy the plan updates, or with `complete` already every document the store holds
    after the plan (a backfill's, built from the files). It keeps the new generation only when it
    mirrored the store before (no write it missed) and no other writer began meanwhile; else it is
    saved unstamped and the next reader rebuilds it from the store.
    With a `deadline` (time.monotonic()), gives up before writing anything once it has passed.
    """
    start = time.perf_counter()
    model = embedder.name
    ids = [d.id for d in plan.embed]
    documents = [d.text for d in plan.embed]
    metadatas = [d.metadata(model) for d in plan.embed]
    # A backfill's catalog is final before any vector: its lexical index is built while a child encodes.
    prebuilt: list[LexicalIndex] = []
    final = catalog if complete and save else None

    def meanwhile() -> None:
        if final is not None:
            prebuilt.append(lexical_index([final.docs[i] for i in final.order]))

    report = SyncReport(len(plan.embed), len(plan.retag), plan.unchanged, len(plan.orphans))
    vectors = _vectors(store, embedder, plan.embed, meanwhile, known, report, quick=deadline is not None)
    if deadline is not None and time.monotonic() > deadline:
        raise TimeoutError("the index update ran out of time before writing")
    if writing is not None:
        writing.set()  # from here on, stopping half-way could leave the store torn: the caller waits
    stamped = None
    if replace or plan.drift or (complete and not store.stamp().steady):  # a backfill also settles a write that died
        before, generation = store.begin_write()
        if replace:
            store.replace_all(generation, ids, vectors, documents, metadatas)
        elif plan.embed:
            store.upsert(ids, vectors, documents, metadatas)
        if plan.retag:
            store.update_metadata([d.id for d in plan.retag], [d.metadata(model) for d in plan.retag])
        if plan.orphans:
            store.delete(plan.orphans)
        settled = store.finish_write(generation)
        if catalog is not None:
            _mirror_vectors(catalog, plan, ids, vectors, metadatas)
        mirrored = complete or (before.steady and before.generation == (catalog.generation if catalog else None))
        stamped = generation if settled and mirrored else None
    if catalog is not None:
        if complete and catalog.vectors is None:
            catalog.vectors = store_vectors(store)  # a backfill given no vectors to start from
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
            catalog.save(store.sidecar, prebuilt[0] if prebuilt else None)
    report.seconds = time.perf_counter() - start
    return report


def _vectors(
    store: Any,
    embedder: Embedder,
    docs: list[IndexDoc],
    meanwhile: Callable[[], object],
    known: dict[str, Any] | None,
    report: SyncReport,
    quick: bool = False,
) -> Any:
    """The vectors of `docs`: encoded, or for a view of a server (and for `known` ones) reused where they
    exist; `report` learns how many were embedded and reused, and any warning. `quick`: a write's own
    update (index/shared.py resolve)."""
    import numpy as np

    texts = [d.text for d in docs]
    local = getattr(store, "vectors_by_hash", None)
    if local is None and not known:
        report.embedded = len(docs)
        return encode_texts(embedder, texts, meanwhile)
    from memfiles.index.shared import resolve

    ran: list[bool] = []

    def encode(missing: list[str]) -> Any:
        ran.append(True)
        return encode_texts(embedder, missing, meanwhile)

    resolved = resolve(
        texts,
        [d.hash for d in docs],
        encode,
        local or (lambda _hashes: {}),
        getattr(store, "shared", None),
        embedder.name,
        getattr(embedder, "dimension", None),
        known,
        quick,
    )
    if not ran:  # nothing to encode: the work meant to overlap the encoder runs now
        meanwhile()
    if resolved.unshared:  # the next backfill (or a watcher's reconcile) shares them: its touch is due
        from memfiles.index.shared import TOUCH_FILE

        (store.sidecar / TOUCH_FILE).unlink(missing_ok=True)
    report.embedded, report.reused, report.warnings = resolved.embedded, resolved.reused, resolved.warnings
    return resolved.vectors if docs else np.zeros((0, 0), dtype=np.float32)


def encode_texts(embedder: Embedder, texts: list[str], meanwhile: Callable[[], object] | None = None) -> Any:
    """The unit vectors of `texts`, in their order, with a progress bar on a terminal for a long list.
    The embedder orders the texts for batching itself (by token count for the BERT recipe).

    `meanwhile` is work of this process that does not need the vectors: with an encoder in a child
    process (index/encode_worker.py) it runs while the child encodes; otherwise after the encode."""
    import numpy as np

    if not texts:
        if meanwhile is not None:
            meanwhile()
        return np.zeros((0, 0), dtype=np.float32)
    bar = _progress(len(texts), "embedding")
    update = bar.update if bar is not None else None
    try:
        if isinstance(embedder, EncoderProcess):
            embedder.submit(texts)  # in batches of the child's choice for its precision
            try:
                if meanwhile is not None:
                    meanwhile()
                return embedder.collect(progress=update)
            except BaseException:
                embedder.close()  # its reply to this request must never answer a later one
                raise
        vectors = embedder.encode(texts, batch_size=EMBED_BATCH, progress=update)
        if meanwhile is not None:
            meanwhile()
        return vectors
    finally:
        if bar is not None:
            bar.close()


def _mirror_vectors(
    catalog: Catalog, plan: Plan, ids: list[str], vectors: Any, metadatas: list[dict[str, Any]]
) -> None:
    """Carry the store writes just made over to the catalog's vectors, so that both stay one generation.
    A catalog without vectors is left so: whoever needs them next reads them from the store."""
    cache = catalog.vectors
    if cache is not None:
        entries = [entry_of(i, m) for i, m in zip(ids, metadatas, strict=True)]
        cache.replace_entries([d.id for d in plan.embed], ids, entries, vectors)
        cache.drop_entries(plan.orphans)


def store_vectors(store: VectorStore, ids: list[str] | None = None) -> VectorCache:
    """Every vector the store holds (or those of `ids`), as a cache."""
    if ids is not None and not ids:
        return VectorCache.empty(0)
    result = store.get(ids, include=["embeddings", "metadatas"])
    return VectorCache.from_rows(result["ids"], result["embeddings"], result["metadatas"])


def store_docs(store: VectorStore, ids: list[str] | None = None) -> dict[str, IndexDoc]:
    """The documents the store holds (all, or those of `ids` that it has), as the catalog keeps them."""
    return store_rows(store, ids)[0]


def store_rows(
    store: VectorStore, ids: list[str] | None = None, vectors: bool = False
) -> tuple[dict[str, IndexDoc], VectorCache | None]:
    """The documents the store holds (all, or those of `ids`), and with `vectors` its vectors, in one read.

    Each entry's document is its first passage's (the row stored under the entry's own id)."""
    if ids is not None and not ids:
        return {}, None
    include = ["documents", "metadatas", *(["embeddings"] if vectors else [])]
    result = store.get(ids, include=include)
    docs = {
        doc_id: IndexDoc.from_store(doc_id, text, meta)
        for doc_id, text, meta in zip(result["ids"], result["documents"], result["metadatas"], strict=True)
        if entry_of(doc_id, meta) == doc_id
    }
    cache = VectorCache.from_rows(result["ids"], result["embeddings"], result["metadatas"]) if vectors else None
    return docs, cache


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
    docs, vectors = store_rows(store, vectors=True) if store.exists() else ({}, None)
    catalog = Catalog(docs, broken=broken, vectors=vectors)
    if before.steady and store.stamp() == before:
        catalog.generation = before.generation
        catalog.save(store.sidecar)
    return catalog
