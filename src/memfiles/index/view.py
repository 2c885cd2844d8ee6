"""A clone's view of a shared index: the entries its own working tree holds, with their vectors, in a
local SQLite file (`.memsearch/view/view.sqlite3`). With a Chroma server (`index_url`) this is the store
every search, sync and backfill of the clone works on; the server holds the vectors themselves, keyed by
content, for every clone to reuse (index/shared.py).

It answers what index/chroma.py's VectorStore answers (the two are interchangeable for index/sync.py,
index/search.py and the services), so a view has every protection of the embedded store: the generation
stamp and the catalog beside it, the store lock, the watcher, the staleness check (services/indexing/staleness.py).
Unlike a collection on a server, no other clone writes here: a clone sees exactly its own entries,
whatever the others add, prune or backfill.

A write (begin_write ... finish_write) is one SQLite transaction, so a reader sees the view before it or
after it, never half of it; a process killed in between leaves the view as it was. A rebuild replaces
every row in one such transaction: the old view answers until the new one is complete.
Only the standard library and numpy: a search that reads a view never imports chromadb.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memfiles.index.chroma import Stamp, read_only

if TYPE_CHECKING:
    import numpy as np

    from memfiles.index.shared import SharedVectors

VIEW_FILE = "view.sqlite3"
FORMAT = 1  # PRAGMA user_version of a view file this code reads and writes
_CHUNK = 500  # ids per `IN (...)` (SQLite's variable limit is 999 on older builds)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS collections (
    name TEXT PRIMARY KEY, generation TEXT NOT NULL DEFAULT '', settled TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS rows (
    collection TEXT NOT NULL, id TEXT NOT NULL, hash TEXT NOT NULL, document TEXT NOT NULL,
    metadata TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (collection, id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS rows_by_hash ON rows (collection, hash);
"""


class ViewError(Exception):
    """A view file that cannot be read as one (another format, a damaged file)."""


def view_folder(index_dir: Path) -> Path:
    return index_dir / "view"


def read_view_stamp(path: Path, name: str) -> Stamp | None:
    """The generation stamp of collection `name` in the view file at `path`, read-only; None when there is
    no such file or collection (or it cannot be read, or is of another format: ask the store then)."""

    def read(connection: sqlite3.Connection) -> Stamp | None:
        if connection.execute("PRAGMA user_version").fetchone()[0] != FORMAT:
            return None
        row = connection.execute("SELECT generation, settled FROM collections WHERE name = ?", (name,)).fetchone()
        return Stamp(row[0] or None, row[1] or None) if row else None

    return read_only(path, read)


def _vector(blob: bytes) -> np.ndarray:
    import numpy as np

    return np.frombuffer(blob, dtype=np.float32)


def _where(meta: dict[str, Any], where: dict[str, Any] | None) -> bool:
    """Whether a row's metadata passes a Chroma `where` clause of the forms index/filters.py writes."""
    if not where:
        return True
    for key, condition in where.items():
        if key == "$and":
            if not all(_where(meta, part) for part in condition):
                return False
            continue
        if key == "$or":
            if not any(_where(meta, part) for part in condition):
                return False
            continue
        value = meta.get(key)
        if not isinstance(condition, dict):
            condition = {"$eq": condition}
        for op, wanted in condition.items():
            if op == "$eq" and value != wanted:
                return False
            if op == "$ne" and value == wanted:
                return False
            if op == "$in" and value not in wanted:
                return False
            if op == "$nin" and value in wanted:
                return False
            if op in ("$gt", "$gte", "$lt", "$lte"):
                if value is None:
                    return False
                if not {"$gt": value > wanted, "$gte": value >= wanted, "$lt": value < wanted, "$lte": value <= wanted}[
                    op
                ]:
                    return False
    return True


class ViewStore:
    """One collection (a model and dimension) of a clone's view file, open for a `with open_store(...)` block."""

    def __init__(self, path: Path, name: str, sidecar: Path, shared: SharedVectors | None = None) -> None:
        self.path = path
        self.name = name
        self.sidecar = sidecar
        self.shared = shared  # the server's content-keyed vectors this view reuses and publishes
        self._guard = threading.RLock()  # a watcher's threads share the one connection
        self._in_write = False
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), timeout=30.0, isolation_level=None, check_same_thread=False)
        try:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, FORMAT):
                raise ViewError(f"{path} is a view of another format ({version})")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.executescript(_SCHEMA)
            if version == 0:
                self._db.execute(f"PRAGMA user_version = {FORMAT}")
        except sqlite3.Error as error:
            self._db.close()
            raise ViewError(f"{path} cannot be read as a view: {error}") from error

    # --- the collection -------------------------------------------------------------------------------

    def close(self) -> None:
        with self._guard:
            if self._in_write:  # a write that never finished leaves the view as it was before it
                self._db.execute("ROLLBACK")
                self._in_write = False
            self._db.close()

    def exists(self) -> bool:
        with self._guard:
            return self._db.execute("SELECT 1 FROM collections WHERE name = ?", (self.name,)).fetchone() is not None

    def create(self) -> None:
        with self._guard:
            self._db.execute("INSERT OR IGNORE INTO collections (name) VALUES (?)", (self.name,))

    def reset(self) -> None:
        with self._guard:
            self._db.execute("DELETE FROM rows WHERE collection = ?", (self.name,))
            self._db.execute("DELETE FROM collections WHERE name = ?", (self.name,))

    def stamp(self) -> Stamp:
        with self._guard:
            row = self._db.execute(
                "SELECT generation, settled FROM collections WHERE name = ?", (self.name,)
            ).fetchone()
        return Stamp(row[0] or None, row[1] or None) if row else Stamp(None, None)

    def begin_write(self) -> tuple[Stamp, str]:
        """Open the write's transaction and stamp a new generation in it."""
        with self._guard:
            if self._in_write:  # one that failed half-way in this process: it never happened
                self._db.execute("ROLLBACK")
            self._db.execute("BEGIN IMMEDIATE")
            self._in_write = True
            self.create()
            before = self.stamp()
            generation = uuid.uuid4().hex
            self._db.execute("UPDATE collections SET generation = ? WHERE name = ?", (generation, self.name))
            return before, generation

    def finish_write(self, generation: str) -> bool:
        """Settle `generation` and commit: the whole write becomes visible at once."""
        with self._guard:
            self._db.execute(
                "UPDATE collections SET generation = ?, settled = ? WHERE name = ?", (generation, generation, self.name)
            )
            if self._in_write:
                self._db.execute("COMMIT")
                self._in_write = False
            return True

    def count(self) -> int:
        with self._guard:
            return int(self._db.execute("SELECT COUNT(*) FROM rows WHERE collection = ?", (self.name,)).fetchone()[0])

    # --- rows -----------------------------------------------------------------------------------------

    def all_metadata(self) -> dict[str, dict[str, Any]]:
        with self._guard:
            rows = self._db.execute("SELECT id, metadata FROM rows WHERE collection = ?", (self.name,)).fetchall()
        return {doc_id: json.loads(meta) for doc_id, meta in rows}

    def get(
        self, ids: list[str] | None = None, include: list[str] | tuple[str, ...] = ("metadatas",)
    ) -> dict[str, Any]:
        """Rows as Chroma's `collection.get` returns them: "ids", and the `include`d "documents", "metadatas",
        "embeddings" (a float32 matrix) in the same order; ids the view does not hold are left out."""
        import numpy as np

        columns = "id, document, metadata" + (", vector" if "embeddings" in include else "")
        found: list[tuple[Any, ...]] = []
        with self._guard:
            if ids is None:
                found = self._db.execute(f"SELECT {columns} FROM rows WHERE collection = ?", (self.name,)).fetchall()
            else:
                for start in range(0, len(ids), _CHUNK):
                    part = ids[start : start + _CHUNK]
                    marks = ",".join("?" * len(part))
                    found += self._db.execute(
                        f"SELECT {columns} FROM rows WHERE collection = ? AND id IN ({marks})",
                        (self.name, *part),
                    ).fetchall()
        result: dict[str, Any] = {"ids": [row[0] for row in found]}
        if "documents" in include:
            result["documents"] = [row[1] for row in found]
        if "metadatas" in include:
            result["metadatas"] = [json.loads(row[2]) for row in found]
        if "embeddings" in include:
            result["embeddings"] = (
                np.vstack([_vector(row[3]) for row in found]) if found else np.zeros((0, 0), dtype=np.float32)
            )
        return result

    def upsert(self, ids: list[str], vectors: np.ndarray, documents: list[str], metadatas: list[dict]) -> None:
        import numpy as np

        matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        rows = [
            (
                self.name,
                doc_id,
                str(meta.get("hash") or ""),
                text,
                json.dumps(meta, ensure_ascii=False),
                matrix[n].tobytes(),
            )
            for n, (doc_id, text, meta) in enumerate(zip(ids, documents, metadatas, strict=True))
        ]
        with self._guard:
            self.create()
            self._db.executemany(
                "INSERT OR REPLACE INTO rows (collection, id, hash, document, metadata, vector)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )

    def replace_all(
        self, generation: str, ids: list[str], vectors: np.ndarray, documents: list[str], metadatas: list[dict]
    ) -> None:
        """Every row at once (a rebuild), inside the write's transaction: readers keep the old view until
        finish_write commits the new one."""
        with self._guard:
            self._db.execute("DELETE FROM rows WHERE collection = ?", (self.name,))
            self.upsert(ids, vectors, documents, metadatas)

    def update_metadata(self, ids: list[str], metadatas: list[dict]) -> None:
        rows = [
            (json.dumps(meta, ensure_ascii=False), str(meta.get("hash") or ""), self.name, doc_id)
            for doc_id, meta in zip(ids, metadatas, strict=True)
        ]
        with self._guard:
            self._db.executemany("UPDATE rows SET metadata = ?, hash = ? WHERE collection = ? AND id = ?", rows)

    def delete(self, ids: list[str]) -> None:
        with self._guard:
            self._db.executemany("DELETE FROM rows WHERE collection = ? AND id = ?", [(self.name, i) for i in ids])

    # --- vectors --------------------------------------------------------------------------------------

    def vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        if not ids:
            return {}
        got = self.get(ids, include=["embeddings"])
        return {doc_id: got["embeddings"][n] for n, doc_id in enumerate(got["ids"])}

    def vectors_by_hash(self, hashes: list[str]) -> dict[str, np.ndarray]:
        """A vector this view already holds for each content hash it has (a renumbered or moved entry, an
        entry copied within the files: the same text, so the same vector)."""
        found: dict[str, np.ndarray] = {}
        with self._guard:
            for start in range(0, len(hashes), _CHUNK):
                part = hashes[start : start + _CHUNK]
                marks = ",".join("?" * len(part))
                for content, blob in self._db.execute(
                    f"SELECT hash, vector FROM rows WHERE collection = ? AND hash IN ({marks})",
                    (self.name, *part),
                ):
                    found.setdefault(content, _vector(blob))
        return found

    def query(self, vector: np.ndarray, n: int, where: dict | None = None) -> list[tuple[str, float]]:
        """(id, cosine) of the `n` nearest rows that pass `where`, exactly (a product over the view's rows).
        Searches normally answer from the catalog's copy of these vectors (index/vector_cache.py)."""
        import numpy as np

        if n <= 0:
            return []
        got = self.get(None, include=["metadatas", "embeddings"])
        keep = [k for k, meta in enumerate(got["metadatas"]) if _where(meta, where)]
        if not keep:
            return []
        scores = got["embeddings"][keep] @ np.asarray(vector, dtype=np.float32)
        order = np.argsort(-scores, kind="stable")[:n]
        return [(got["ids"][keep[k]], float(scores[k])) for k in order]
