"""The vector store: chromadb, embedded in .memsearch/ (one process at a time, under a lock) or a server.

chromadb's default embedding function downloads a model, so vectors are always passed in; and its
embedded client is not safe with two processes on one folder, so every session holds the store lock.
see @@D-012
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from memfiles.config import Settings
from memfiles.errors import IndexUnavailable, LockTimeout
from memfiles.store.fileio import ensure_private_dir
from memfiles.store.lock import FileLock

if TYPE_CHECKING:
    import numpy as np

UPSERT_BATCH = 2000
# Chroma's default HNSW settings (ef_search 100, 16 neighbours) returned 69% of the true top 100 in a
# test of 5,000 vectors; these return 99.8%, at a few milliseconds more per query. see @@F-004
HNSW = {"space": "cosine", "ef_search": 400, "ef_construction": 200, "max_neighbors": 32}


class VectorStore:
    """One collection of one store, opened for the length of a `with open_store(...)` block."""

    def __init__(self, client: Any, name: str, sidecar: Path) -> None:
        self.client = client
        self.name = name
        self.sidecar = sidecar
        self._collection: Any = None

    @property
    def collection(self) -> Any:
        if self._collection is None:
            self._collection = self.client.get_or_create_collection(
                self.name, configuration={"hnsw": HNSW}, embedding_function=None
            )
        return self._collection

    def exists(self) -> bool:
        return any(getattr(c, "name", c) == self.name for c in self.client.list_collections())

    def reset(self) -> None:
        if self.exists():
            self.client.delete_collection(self.name)
        self._collection = None

    def count(self) -> int:
        return int(self.collection.count())

    def all_metadata(self) -> dict[str, dict[str, Any]]:
        result = self.collection.get(include=["metadatas"])
        return dict(zip(result["ids"], result["metadatas"], strict=True))

    def upsert(self, ids: list[str], vectors: np.ndarray, documents: list[str], metadatas: list[dict]) -> None:
        for start in range(0, len(ids), UPSERT_BATCH):
            end = start + UPSERT_BATCH
            self.collection.upsert(
                ids=ids[start:end],
                embeddings=vectors[start:end],
                documents=documents[start:end],
                metadatas=metadatas[start:end],
            )

    def update_metadata(self, ids: list[str], metadatas: list[dict]) -> None:
        for start in range(0, len(ids), UPSERT_BATCH):
            self.collection.update(
                ids=ids[start : start + UPSERT_BATCH], metadatas=metadatas[start : start + UPSERT_BATCH]
            )

    def delete(self, ids: list[str]) -> None:
        for start in range(0, len(ids), UPSERT_BATCH):
            self.collection.delete(ids=ids[start : start + UPSERT_BATCH])

    def vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        """The stored vectors of `ids` (those that exist)."""
        if not ids:
            return {}
        result = self.collection.get(ids=ids, include=["embeddings"])
        return dict(zip(result["ids"], result["embeddings"], strict=True))

    def query(self, vector: np.ndarray, n: int, where: dict | None = None) -> list[tuple[str, float]]:
        """(id, cosine similarity) of the `n` nearest documents that pass `where`."""
        if n <= 0:
            return []
        result = self.collection.query(
            query_embeddings=[vector], n_results=n, where=where or None, include=["distances"]
        )
        return [
            (doc_id, 1.0 - float(distance))
            for doc_id, distance in zip(result["ids"][0], result["distances"][0], strict=True)
        ]


def _client(settings: Settings, url: str | None) -> Any:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if url:
        parsed = urlparse(url if "://" in url else f"http://{url}")
        return chromadb.HttpClient(
            host=parsed.hostname or "127.0.0.1",
            port=parsed.port or 8000,
            ssl=parsed.scheme == "https",
            settings=chroma_settings,
        )
    path = ensure_private_dir(settings.index_dir) / "chroma"
    return chromadb.PersistentClient(path=str(path), settings=chroma_settings)


@contextmanager
def open_store(settings: Settings, name: str, timeout: float = 10.0) -> Iterator[VectorStore]:
    """The store for collection `name`: the server at index_url, else the embedded one under its lock.

    Raises IndexUnavailable when the server does not answer or the embedded store stays busy.
    """
    url = settings.index_url
    sidecar = ensure_private_dir(settings.index_dir) / name
    lock = None if url else FileLock(settings.index_dir / "store.lock", timeout, what="the index")
    try:
        if lock is not None:
            lock.acquire()
    except LockTimeout as error:
        raise IndexUnavailable(f"index busy: {error}") from error
    try:
        try:
            client = _client(settings, url)
            if url:
                client.heartbeat()
        except Exception as error:  # chromadb raises many types for "cannot reach"
            where = url or settings.index_dir
            raise IndexUnavailable(f"cannot open the index at {where}: {type(error).__name__}: {error}") from error
        yield VectorStore(client, name, sidecar)
    finally:
        if lock is not None:
            lock.release()
