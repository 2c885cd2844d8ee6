"""Vectors shared through a Chroma server: one row per (model, embedded text), for every clone and branch.

A clone's entries live in its own view (index/view.py); what the server holds is the expensive part,
each text's vector, keyed by the text's content hash in a collection per model and dimension (the
"pool": `memfiles-vectors-all-minilm-l6-v2-384`, or with `-<index_collection>` when one is set). Before
embedding, a sync looks for each text's vector in its own view, then in the pool, and embeds only what
neither holds; what it embeds it publishes. So a clone that joins embeds only what nobody has embedded.

Nothing here ever deletes a vector but `memfiles gc`: every row carries `used` (unix seconds), set when
it is published and refreshed (at most once a day per clone, `touch`) for every vector a clone's view
holds; gc removes the rows no clone refreshed for the given time. A clone never depends on the pool
for what it already has (its view keeps its vectors), so gc costs at most a republish, never a search;
a clone's touch also republishes what its view holds and the pool lacks (after a gc, a lost server).

A server that cannot be reached while vectors are looked up or published costs no entry: they are
embedded here and the sync goes on, saying so (`SharedVectors.problem`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memfiles.config import Settings
from memfiles.errors import IndexUnavailable
from memfiles.index.chroma import UPSERT_BATCH, _said, _server_client

if TYPE_CHECKING:
    import numpy as np

POOL_PREFIX = "memfiles-vectors-"
# The pool is never queried (a clone's view answers its searches), so its HNSW graph is kept small: it
# costs every upsert. With Chroma's defaults (16 neighbours, ef_construction 100) publishing cost more.
POOL_HNSW = {"space": "cosine", "ef_construction": 32, "max_neighbors": 8}
REFRESH_SECONDS = 86_400  # a clone refreshes `used` (and republishes what is missing) at most once a day
TOUCH_FILE = "touched.json"
NORM_TOLERANCE = 1e-3  # a stored vector whose norm is further from 1 is not trusted (a half-written row)
# A write's own update (bounded by index_timeout, in a process with no connection to the server yet)
# embeds up to this many texts itself rather than import chromadb and reach the server (1-2 s), and
# leaves sharing them to the next touch (which it makes due).
QUICK_LIMIT = 64


class ServerUnavailable(IndexUnavailable):
    """The Chroma server could not be reached or failed; the clone's view is unaffected."""


def pool_name(settings: Settings, collection: str) -> str:
    """The pool of `collection` (one model and dimension, `memfiles-<model>-<dim>`) on the server."""
    base = POOL_PREFIX + collection.removeprefix("memfiles-")
    return f"{base}-{settings.index_collection}" if settings.index_collection else base


class SharedVectors:
    """The pool of one model on the server at index_url, reached on first use (never by a search)."""

    def __init__(self, settings: Settings, collection: str, timeout: float) -> None:
        self.settings = settings
        self.url = str(settings.index_url)
        self.name = pool_name(settings, collection)
        self.timeout = timeout
        self._collection: Any = None
        self.problem: str | None = None  # why the last lookup or publish could not reach the server

    def _failed(self, error: BaseException) -> ServerUnavailable:
        if isinstance(error, TimeoutError):  # "the server did not answer within 2 s" (index/chroma.py)
            said = str(error).replace("the server", f"the Chroma server at {self.url}", 1)
        else:
            said = f"the Chroma server at {self.url} failed: {_said(error)}"
        return ServerUnavailable(f"{said}; check that it runs (this clone's index and the memory files are unaffected)")

    def _call(self, action: Callable[[Any], Any]) -> Any:
        try:
            if self._collection is None:
                # chromadb's HTTP library logs every request at INFO: a watcher's log was nothing else
                logging.getLogger("httpx").setLevel(max(logging.WARNING, logging.getLogger("httpx").level))
                client = _server_client(self.settings, self.url, self.timeout)
                self._collection = client.get_or_create_collection(
                    self.name, configuration={"hnsw": POOL_HNSW}, embedding_function=None
                )
            return action(self._collection)
        except ServerUnavailable:
            raise
        except Exception as error:  # chromadb raises many types for "cannot reach", "failed"
            self._collection = None
            raise self._failed(error) from error

    def count(self) -> int:
        return int(self._call(lambda c: c.count()))

    def fetch(self, hashes: list[str], dimension: int | None = None) -> dict[str, np.ndarray]:
        """The pool's vector of each of `hashes` it holds whole: a row of another dimension, or not of unit
        length (not finite: a half-written one), is left out, so that it is embedded and published again."""
        import numpy as np

        found: dict[str, np.ndarray] = {}
        for start in range(0, len(hashes), UPSERT_BATCH):
            part = hashes[start : start + UPSERT_BATCH]
            got = self._call(lambda c, part=part: c.get(ids=part, include=["embeddings"]))
            if not got["ids"]:
                continue
            matrix = np.asarray(got["embeddings"], dtype=np.float32)
            if matrix.ndim != 2 or (dimension is not None and matrix.shape[1] != dimension):
                continue
            norms = np.linalg.norm(matrix, axis=1)
            good = np.isfinite(norms) & (np.abs(norms - 1.0) < NORM_TOLERANCE)
            for n, content in enumerate(got["ids"]):
                if good[n]:
                    found[content] = matrix[n]
        return found

    def held(self, hashes: list[str]) -> dict[str, int]:
        """{hash: used} of the `hashes` the pool holds."""
        found: dict[str, int] = {}
        for start in range(0, len(hashes), UPSERT_BATCH):
            part = hashes[start : start + UPSERT_BATCH]
            got = self._call(lambda c, part=part: c.get(ids=part, include=["metadatas"]))
            for content, meta in zip(got["ids"], got["metadatas"], strict=True):
                found[content] = int((meta or {}).get("used") or 0)
        return found

    def publish(self, hashes: list[str], vectors: Any, model: str) -> None:
        """Upsert each vector under its text's hash, marked used now."""
        import numpy as np

        matrix = np.asarray(vectors, dtype=np.float32)
        now = int(time.time())
        for start in range(0, len(hashes), UPSERT_BATCH):
            end = start + UPSERT_BATCH
            part = hashes[start:end]
            metas = [{"model": model, "used": now} for _ in part]
            self._call(
                lambda c, part=part, rows=matrix[start:end], metas=metas: c.upsert(
                    ids=part, embeddings=rows, metadatas=metas
                )
            )

    def refresh(self, hashes: list[str]) -> None:
        now = int(time.time())
        for start in range(0, len(hashes), UPSERT_BATCH):
            part = hashes[start : start + UPSERT_BATCH]
            self._call(lambda c, part=part: c.update(ids=part, metadatas=[{"used": now} for _ in part]))

    def unused(self, before: int) -> list[str]:
        """The rows no clone has used since `before` (unix seconds), read a page at a time."""
        found: list[str] = []
        while True:
            offset = len(found)
            got = self._call(
                lambda c, offset=offset: c.get(
                    where={"used": {"$lt": before}}, include=[], limit=UPSERT_BATCH, offset=offset
                )
            )
            found += got["ids"]
            if len(got["ids"]) < UPSERT_BATCH:
                return found

    def remove_unused(self, hashes: list[str], before: int) -> None:
        """Delete those of `hashes` still unused since `before`: a row a clone refreshed meanwhile stays
        (the condition is the server's, checked as it deletes)."""
        for start in range(0, len(hashes), UPSERT_BATCH):
            part = hashes[start : start + UPSERT_BATCH]
            self._call(lambda c, part=part: c.delete(ids=part, where={"used": {"$lt": before}}))


@dataclass
class Resolved:
    """The vectors of a list of texts, and where they came from."""

    vectors: Any
    reused: int = 0  # texts whose vector was taken from this view or the pool
    embedded: int = 0  # texts encoded by this command (here, or before: `known`)
    warnings: list[str] = field(default_factory=list)
    unshared: bool = False  # some were embedded here and not published (the next touch shares them)


def resolve(
    texts: list[str],
    hashes: list[str],
    encode: Callable[[list[str]], Any],
    local: Callable[[list[str]], dict[str, Any]],
    shared: SharedVectors | None,
    model: str,
    dimension: int | None,
    known: dict[str, Any] | None = None,
    quick: bool = False,
) -> Resolved:
    """The vector of each text, in order: `known` ones (a rebuild encoded them already), then the view's
    own (`local`), then the pool's, and only the rest encoded (and published). A pool that cannot be
    reached leaves the rest to be encoded here, with a warning. `quick` (a write's update, in a hurry):
    up to QUICK_LIMIT texts are encoded here without asking the pool, and not published."""
    import numpy as np

    unique = list(dict.fromkeys(hashes))
    found: dict[str, Any] = {h: known[h] for h in unique if known and h in known}
    rest = [h for h in unique if h not in found]
    if rest:
        found.update(local(rest))
    rest = [h for h in unique if h not in found]
    warnings: list[str] = []
    unshared = bool(rest) and shared is not None and quick and len(rest) <= QUICK_LIMIT
    if unshared:
        shared = None
    if rest and shared is not None:
        try:
            found.update(shared.fetch(rest, dimension))
        except ServerUnavailable as error:
            warnings.append(
                f"{error}: the vectors it lacked were embedded here (a later `memfiles backfill` shares them)"
            )
            shared, unshared = None, True
    text_of = {h: t for h, t in zip(hashes, texts, strict=True)}
    missing = [h for h in unique if h not in found]
    if missing:
        encoded = encode([text_of[h] for h in missing])
        found.update(zip(missing, np.asarray(encoded, dtype=np.float32), strict=True))
        if shared is not None:
            try:
                shared.publish(missing, encoded, model)
            except ServerUnavailable as error:
                warnings.append(
                    f"{error}: what was embedded here was not shared (a later `memfiles backfill` shares it)"
                )
                unshared = True
    if not hashes:
        return Resolved(np.zeros((0, 0), dtype=np.float32), warnings=warnings)
    matrix = np.vstack([np.asarray(found[h], dtype=np.float32) for h in hashes])
    fresh = set(missing) | {h for h in unique if known and h in known}
    embedded = sum(1 for h in hashes if h in fresh)  # counted by entry, as a backfill reports them
    return Resolved(matrix, len(hashes) - embedded, embedded, warnings, unshared)


def touch_due(sidecar: Path, shared: SharedVectors) -> bool:
    """Whether this clone's vectors were last refreshed in this pool more than REFRESH_SECONDS ago."""
    try:
        data = json.loads((sidecar / TOUCH_FILE).read_text(encoding="utf-8"))
        fresh = data["url"] == shared.url and data["pool"] == shared.name
        return not fresh or time.time() - float(data["at"]) > REFRESH_SECONDS
    except (OSError, ValueError, KeyError, TypeError):
        return True


def touch(
    sidecar: Path,
    shared: SharedVectors,
    hashes: list[str],
    vectors_of: Callable[[list[str]], dict[str, Any]],
    model: str,
) -> tuple[int, int]:
    """Mark every vector of this clone's view used now where the pool says otherwise (not in the last
    REFRESH_SECONDS), and publish again the ones the pool lacks (`vectors_of` gives them from the view);
    (refreshed, republished). Recorded beside the view, so that it runs at most once a day."""
    import numpy as np

    from memfiles.store.fileio import atomic_write

    unique = sorted(set(hashes))
    held = shared.held(unique)
    stale = [h for h in unique if h in held and held[h] < time.time() - REFRESH_SECONDS]
    if stale:
        shared.refresh(stale)
    lacking = [h for h in unique if h not in held]
    vectors = vectors_of(lacking) if lacking else {}
    have = [h for h in lacking if h in vectors]
    if have:
        shared.publish(have, np.vstack([vectors[h] for h in have]), model)
    sidecar.mkdir(parents=True, exist_ok=True)
    record = {
        "url": shared.url,
        "pool": shared.name,
        "at": time.time(),
        "refreshed": len(stale),
        "republished": len(have),
    }
    atomic_write(sidecar / TOUCH_FILE, json.dumps(record) + "\n")
    return len(stale), len(have)
