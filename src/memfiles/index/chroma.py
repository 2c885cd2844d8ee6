"""The vector store: chromadb, embedded in .memsearch/ (one process at a time, under a lock), or with a
Chroma server a clone's own view (index/view.py) whose vectors are shared through the server
(index/shared.py). Both are opened here, under the same lock, and answer the same calls.

chromadb's default embedding function downloads a model, so vectors are always passed in; and its
embedded client is not safe with two processes on one folder, so every session holds the store lock.
see @@D-012

The collection's metadata carries a generation stamp: every write first sets `generation` to a new
value, and once the write is done sets `settled` to the same value. A catalog saved beside the store
names the generation it mirrors; any write it did not see (a watcher killed before its catalog save,
another client of a server) leaves the two different, and the reader rebuilds its catalog.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlparse

from memfiles.config import Settings
from memfiles.errors import IndexUnavailable, LockTimeout, MemfilesError
from memfiles.store.fileio import ensure_private_dir, identity
from memfiles.store.lock import FileLock

if TYPE_CHECKING:
    import sqlite3

    import numpy as np

Read = TypeVar("Read")

UPSERT_BATCH = 5000  # Chroma refuses batches above 5,461 (its SQLite variable limit)
# Chroma's default HNSW settings (ef_search 100, 16 neighbours) returned 69% of the true top 100 in a
# test of 5,000 vectors; these return 99.8%, at a few milliseconds more per query. see @@F-004
HNSW = {"space": "cosine", "ef_search": 400, "ef_construction": 200, "max_neighbors": 32}
GENERATION = "memfiles_generation"
SETTLED = "memfiles_settled"


@dataclass(frozen=True)
class Stamp:
    """The store's generation, and the last generation whose write finished (equal when none is under way)."""

    generation: str | None
    settled: str | None

    @property
    def steady(self) -> bool:
        """No write begun and not finished: a writer in progress, or one that died half-way."""
        return self.generation == self.settled


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

    def create(self) -> None:
        """Make the collection now if it does not exist (a project of no entries still has an index)."""
        _ = self.collection

    def exists(self) -> bool:
        return any(getattr(c, "name", c) == self.name for c in self.client.list_collections())

    def reset(self) -> None:
        if self.exists():
            self.client.delete_collection(self.name)
        self._collection = None

    def stamp(self) -> Stamp:
        """The generation stamp as the store holds it now (read afresh: another client may have written)."""
        if not self.exists():
            return Stamp(None, None)
        self._collection = None
        metadata = self.collection.metadata or {}
        return Stamp(metadata.get(GENERATION) or None, metadata.get(SETTLED) or None)

    def begin_write(self) -> tuple[Stamp, str]:
        """Stamp a new generation before writing; returns the stamp before it and the new generation."""
        before = self.stamp()
        generation = uuid.uuid4().hex
        self.collection.modify(metadata={GENERATION: generation, SETTLED: before.settled or ""})
        return before, generation

    def finish_write(self, generation: str) -> bool:
        """Mark `generation`'s write finished; False when another writer began one meanwhile (then it settles)."""
        if self.stamp().generation != generation:
            return False
        self.collection.modify(metadata={GENERATION: generation, SETTLED: generation})
        return True

    def count(self) -> int:
        return int(self.collection.count())

    def close(self) -> None:
        """Nothing to let go: chromadb keeps its client for the process."""

    def get(
        self, ids: list[str] | None = None, include: list[str] | tuple[str, ...] = ("metadatas",)
    ) -> dict[str, Any]:
        """Rows as `collection.get` returns them (the call a view answers too)."""
        return self.collection.get(ids=ids, include=list(include))

    def replace_all(
        self, generation: str, ids: list[str], vectors: np.ndarray, documents: list[str], metadatas: list[dict]
    ) -> None:
        """Every row at once (a rebuild): the collection made again, stamped with the write's generation."""
        self.reset()
        self.collection.modify(metadata={GENERATION: generation, SETTLED: ""})
        self.upsert(ids, vectors, documents, metadatas)

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


def read_stamp(settings: Settings, name: str) -> Stamp | None:
    """The generation stamp of collection `name` of the embedded store, read from its SQLite file with
    the standard library (with a server, of this clone's view): a reader that finds its catalog and
    vectors in step needs no chromadb (~2 s to import). None when it cannot tell (no store, another
    Chroma layout): ask the store then.

    Call it under the store lock, as every writer holds it while writing.
    """
    if settings.index_url:
        from memfiles.index.view import VIEW_FILE, read_view_stamp, view_folder

        return read_view_stamp(view_folder(settings.index_dir) / VIEW_FILE, name)

    def read(connection: sqlite3.Connection) -> Stamp | None:
        rows = connection.execute(
            "SELECT m.key, m.str_value FROM collection_metadata m JOIN collections c ON c.id = m.collection_id"
            " WHERE c.name = ? AND m.key IN (?, ?)",
            (name, GENERATION, SETTLED),
        ).fetchall()
        if not connection.execute("SELECT COUNT(*) FROM collections WHERE name = ?", (name,)).fetchone()[0]:
            return None
        values = dict(rows)
        return Stamp(values.get(GENERATION) or None, values.get(SETTLED) or None)

    return read_only(settings.index_dir / "chroma" / "chroma.sqlite3", read)


def read_only(path: Path, read: Callable[[sqlite3.Connection], Read]) -> Read | None:
    """`read`'s answer from the SQLite file at `path`, opened read-only (a writer may hold it); None when
    there is no such file or anything in it fails to read (the caller then asks the store)."""
    if not path.is_file():
        return None
    import sqlite3

    try:
        connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return None
    try:
        return read(connection)
    except sqlite3.Error:
        return None
    finally:
        connection.close()


def store_lock(settings: Settings, timeout: float) -> FileLock:
    """The lock every process holds while it has the embedded store open (see @@D-012)."""
    return FileLock(settings.index_dir / "store.lock", timeout, busy="the index is busy")


def server_address(url: str) -> str:
    """index_url as chromadb's client takes it whole: scheme, host (an IPv6 one in brackets), port (when none
    is given: Chroma's 8000 over http, 443 over https, a server behind a proxy) and path (a proxy's prefix).
    Given the host alone, chromadb dropped the path and broke on `::1`."""
    parsed = urlparse(url if "://" in url else f"http://{url}")
    host = parsed.hostname or "127.0.0.1"
    host = f"[{host}]" if ":" in host else host
    port = parsed.port or (443 if parsed.scheme == "https" else 8000)
    return f"{parsed.scheme}://{host}:{port}{parsed.path.rstrip('/')}"


def _client(settings: Settings, url: str | None) -> Any:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if url:
        return chromadb.HttpClient(host=server_address(url), settings=chroma_settings)
    path = ensure_private_dir(settings.index_dir) / "chroma"
    key = str(path)
    if key in _OPENED and _OPENED[key] != identity(path / "chroma.sqlite3"):
        # The store was deleted and built again (by a backfill of another process) since this process
        # opened it: chromadb's cached client still holds the old database ("attempt to write a readonly
        # database") and must not be reused. A long-lived process (the MCP server) met exactly that.
        _forget_clients()
    client = chromadb.PersistentClient(path=key, settings=chroma_settings)
    _OPENED[key] = identity(path / "chroma.sqlite3")
    return client


# The identity of each embedded store this process opened: its chroma.sqlite3's (fileio.identity).
_OPENED: dict[str, tuple[int, int] | None] = {}


def store_exists(settings: Settings) -> bool:
    """False when no index was ever built here: no embedded store, or with a server no view of this clone."""
    if settings.index_url:
        from memfiles.index.view import VIEW_FILE, view_folder

        return (view_folder(settings.index_dir) / VIEW_FILE).is_file()
    return (settings.index_dir / "chroma").is_dir()


def store_place(settings: Settings) -> str:
    """Where the index of this clone lives, as status names it: the embedded store's folder, or its view."""
    if settings.index_url:
        from memfiles.index.view import VIEW_FILE, view_folder

        return str(view_folder(settings.index_dir) / VIEW_FILE)
    return str(settings.index_dir / "chroma")


def sidecar_folder(settings: Settings, name: str) -> Path:
    """Where the catalog, lexical index and vectors of collection `name` are saved beside the store."""
    if settings.index_url:
        from memfiles.index.view import view_folder

        return view_folder(settings.index_dir) / name
    return settings.index_dir / name


def no_index(settings: Settings) -> str:
    """What a command says when there is no index here yet."""
    if settings.index_url:
        return (
            "this clone has no index yet: run `memfiles backfill` to build it (it reuses the vectors other clones"
            f" shared on the Chroma server at {settings.index_url})"
        )
    return "there is no index yet: run `memfiles backfill` to build it"


@contextmanager
def open_store(
    settings: Settings, name: str, timeout: float = 10.0, create: bool = True, server_timeout: float | None = None
) -> Iterator[Any]:
    """The store for collection `name` under the store lock: the embedded one, or with a server
    (index_url) this clone's view, whose vectors are shared through the server (index/view.py).

    With `create` False, a project without an index gets IndexUnavailable and no folder is made.
    Raises IndexUnavailable when the store stays busy or cannot be opened. The server itself is reached
    only when vectors are looked up or published (index/shared.py), each wait at most `server_timeout`
    (default: `timeout`, which with a lock waited for in slices is only the slice): never by a search.
    """
    url = settings.index_url
    if not create and not store_exists(settings):
        raise IndexUnavailable(no_index(settings))
    ensure_private_dir(settings.index_dir)
    lock = store_lock(settings, timeout)
    if not url:
        import chromadb  # noqa: F401  (seconds on a busy machine: paid before the lock, not while holding it)
    try:
        lock.acquire()
    except LockTimeout as error:
        raise IndexUnavailable(str(error)) from error
    where = settings.index_dir / ("view" if url else "chroma")
    store: Any = None
    try:
        try:
            if url:
                from memfiles.index.shared import SharedVectors
                from memfiles.index.view import VIEW_FILE, ViewStore, view_folder

                store = ViewStore(
                    view_folder(settings.index_dir) / VIEW_FILE,
                    name,
                    sidecar_folder(settings, name),
                    SharedVectors(settings, name, timeout if server_timeout is None else server_timeout),
                )
            else:
                store = VectorStore(_client(settings, None), name, sidecar_folder(settings, name))
        except Exception as error:  # chromadb raises many types for "cannot open"
            if not url:  # a client half-made of damaged files stays cached: the next open in this process
                _forget_clients()  # would fail with an AttributeError of chromadb's instead of the cause
            raise IndexUnavailable(f"cannot open the index at {where}: {_said(error)}; {recovery(settings)}") from error
        try:
            yield store
        except (MemfilesError, TimeoutError):
            raise
        except Exception as error:  # a damaged store: a message, never a traceback
            raise IndexUnavailable(f"the index at {where} failed: {_said(error)}; {recovery(settings)}") from error
    finally:
        try:
            if store is not None:
                store.close()
        finally:
            lock.release()


# A Chroma server that accepts the connection and never answers would hold a command for ever: chromadb's
# HTTP session has no timeout, and its client asks the server who the user is as it is made. Making it
# waits at most the caller's timeout (index_timeout for a write, search_timeout for a search; at least
# SERVER_CONNECT_MIN, at most SERVER_CONNECT_MAX), and so does each request after that (at least
# SERVER_REQUEST_MIN). A slow server (a proxy holding every chunk 1.5 s: tests/reliability) takes more than
# 10 s to make a client; search_timeout (120 s) is how long a search waits for writers, and a search or an
# agent's recall held that long by a server that never answers stalled every turn for two minutes.
SERVER_CONNECT_MIN = 2.0
SERVER_CONNECT_MAX = 30.0
SERVER_REQUEST_MIN = 10.0


def _server_client(settings: Settings, url: str, timeout: float) -> Any:
    """A client of the server at `url` that answered a heartbeat, made within a bounded wait."""
    import threading

    made: dict[str, Any] = {}

    def connect() -> None:
        try:
            client = _client(settings, url)
            client.heartbeat()
            made["client"] = client
        except Exception as error:
            made["error"] = error

    wait = round(min(max(SERVER_CONNECT_MIN, timeout), SERVER_CONNECT_MAX), 1)
    worker = threading.Thread(target=connect, name="memfiles-chroma-connect", daemon=True)
    worker.start()
    worker.join(wait)
    if worker.is_alive():  # left behind, a daemon: it cannot keep the process from ending
        raise TimeoutError(f"the server did not answer within {wait:g} s")
    if "error" in made:
        raise made["error"]
    session = getattr(getattr(made["client"], "_server", None), "_session", None)
    if session is not None and hasattr(session, "timeout"):  # chromadb's httpx session: timeout=None
        session.timeout = max(timeout, SERVER_REQUEST_MIN)
    return made["client"]


def _forget_clients() -> None:
    import contextlib

    from chromadb.api.client import SharedSystemClient

    with contextlib.suppress(Exception):
        SharedSystemClient.clear_system_cache()


def _said(error: BaseException) -> str:
    text = " ".join(str(error).split())
    if not text:  # chromadb re-raises some failures as a bare ValueError(): the reason is in its cause
        inner = error.__cause__ or error.__context__
        if inner is not None and inner is not error:
            return f"{type(error).__name__}: {_said(inner)}"
    return f"{type(error).__name__}: {text[:300]}" if text else type(error).__name__


def recovery(settings: Settings) -> str:
    """What to do about an index that cannot be used; the memory files are never affected."""
    return "run `memfiles backfill --rebuild` to build it again from the memory files (they are unaffected)"


def discard_store(settings: Settings, timeout: float) -> None:
    """Delete the embedded store (or this clone's view) and its sidecars, derived from the files, under the
    store lock: what `backfill --rebuild` does when the store is too damaged to open."""
    import shutil

    from chromadb.api.client import SharedSystemClient

    with FileLock(settings.index_dir / "store.lock", timeout, busy="the index is busy"):
        SharedSystemClient.clear_system_cache()  # this process must not reuse a client of the old files
        for child in settings.index_dir.iterdir():
            if child.is_dir() and (child.name in ("chroma", "view") or child.name.startswith("memfiles-")):
                shutil.rmtree(child, ignore_errors=True)
