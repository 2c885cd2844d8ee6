"""The index's vectors beside its catalog: one float32 row per Chroma id, memory-mapped, searched exactly.

Chroma stays the store of record. This is a copy of its vectors, written by the same syncs that save the
catalog and tied to that save by the catalog's token, so it mirrors the same store generation (see
index/chroma.py): a reader that finds the catalog in step finds these vectors in step too, and answers
a query with numpy alone (no chromadb), every filter as a mask and one matrix product.

Rows are keyed by Chroma id with the entry each belongs to: an entry may be stored as several passages
(`ID`, `ID#2`, ...; metadata `entry`), and a dense search reduces them to the best passage per entry.
The cosines are those Chroma returns (1 - its cosine distance) on the same vectors.

On disk: `vectors-<token>.npy` (the matrix) and `vectors.json` (ids, entries, token, file name). The
matrix file carries the token in its name, so a crash between the two writes can never pair one save's
ids with another save's rows.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

VECTORS_VERSION = 1
INDEX_FILE = "vectors.json"
# How a filtered search multiplies only the rows it keeps (scripts/bench_filter.py): kept rows in runs of
# RUN_ROWS or more on average (a file's entries, usually a kind's: rows follow the files) are multiplied
# run by run, in place; else, below GATHER_BELOW of the rows, they are copied out first (a copy costs
# about five times a product per row); above it, the whole matrix is multiplied and then masked.
RUN_ROWS = 32
GATHER_BELOW = 0.15


def entry_of(chroma_id: str, metadata: dict[str, Any] | None = None) -> str:
    """The entry a stored row belongs to: its `entry` metadata, else the id before any `#n` suffix."""
    entry = (metadata or {}).get("entry")
    return str(entry) if entry else chroma_id.split("#", 1)[0]


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the runs of True in `mask`, in order."""
    import numpy as np

    edges = np.flatnonzero(np.diff(mask.astype(np.int8), prepend=0, append=0))
    return edges[0::2], edges[1::2]


class VectorCache:
    """Rows of unit vectors, keyed by Chroma id, each tagged with its entry. Its lists and matrix are never
    changed in place: a change builds new ones, so a copy taken under a lock stays a consistent snapshot."""

    def __init__(self, ids: list[str], entries: list[str], matrix: np.ndarray, token: str | None = None) -> None:
        if len(ids) != len(entries) or len(ids) != len(matrix):
            raise ValueError(f"{len(ids)} ids, {len(entries)} entries and {len(matrix)} rows do not match")
        self.ids = ids
        self.entries = entries
        self.matrix = matrix
        self.token = token
        self._codes: tuple[Any, Any, bool] | None = None  # (catalog order it was computed for, codes, one row each)
        self._rows: tuple[list[str], dict[str, list[int]]] | None = None  # (entries it was computed for, rows)

    @property
    def dimension(self) -> int:
        return int(self.matrix.shape[1]) if self.matrix.ndim == 2 else 0

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def empty(cls, dimension: int) -> VectorCache:
        import numpy as np

        return cls([], [], np.zeros((0, dimension), dtype=np.float32))

    @classmethod
    def from_rows(cls, ids: list[str], vectors: Any, metadatas: list[dict[str, Any] | None]) -> VectorCache:
        """The cache of rows read from the store (ids, embeddings, metadatas in one order)."""
        import numpy as np

        matrix = np.asarray(vectors, dtype=np.float32)
        if not len(ids):
            matrix = matrix.reshape(0, matrix.shape[1] if matrix.ndim == 2 else 0)
        entries = [entry_of(i, m) for i, m in zip(ids, metadatas, strict=True)]
        return cls(list(ids), entries, np.ascontiguousarray(matrix))

    def copy(self) -> VectorCache:
        """A copy that later changes to this cache do not reach: cheap, as rows are never changed in place
        (every change builds new lists and a new matrix)."""
        return VectorCache(self.ids, self.entries, self.matrix, self.token)

    # --- keeping it in step with the store --------------------------------------------------------

    def replace_entries(self, entries_gone: list[str], ids: list[str], entries: list[str], vectors: Any) -> None:
        """Drop every row of `entries_gone` (all their passages), then add the given rows."""
        import numpy as np

        gone = set(entries_gone) | set(entries)
        added = set(ids)
        pairs = zip(self.ids, self.entries, strict=True)
        keep = [n for n, (i, e) in enumerate(pairs) if e not in gone and i not in added]
        new = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1) if len(ids) else None
        if len(keep) == len(self.ids) and new is None:
            return
        kept = self.matrix if len(keep) == len(self.ids) else self.matrix[keep]
        if new is None:
            self.matrix = np.ascontiguousarray(kept)
        elif not len(kept):
            self.matrix = np.ascontiguousarray(new)
        else:
            if new.shape[1] != kept.shape[1]:
                raise ValueError(f"vectors of dimension {new.shape[1]} for a cache of {kept.shape[1]}")
            self.matrix = np.concatenate([kept, new])
        self.ids = [self.ids[n] for n in keep] + list(ids)
        self.entries = [self.entries[n] for n in keep] + list(entries)
        self._codes = None

    def drop_entries(self, entries: list[str]) -> None:
        if entries:
            self.replace_entries(entries, [], [], [])

    # --- on disk ----------------------------------------------------------------------------------

    def save(self, folder: Path, token: str) -> None:
        """Write the matrix under a name carrying `token`, then the ids; older matrices are removed."""
        import numpy as np

        from memfiles.store.fileio import atomic_write

        folder.mkdir(parents=True, exist_ok=True)
        name = f"vectors-{token}.npy"
        temp = folder / f".{name}.tmp"
        with temp.open("wb") as handle:
            np.save(handle, np.ascontiguousarray(self.matrix, dtype=np.float32))
            # On disk before the index below names it: after a crash, a named matrix of unwritten (zero)
            # pages would load as vectors, where a missing one is rebuilt.
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, folder / name)
        data = {"version": VECTORS_VERSION, "token": token, "file": name, "ids": self.ids}
        if self.entries != self.ids:
            data["entries"] = self.entries
        atomic_write(folder / INDEX_FILE, json.dumps(data, ensure_ascii=False, separators=(",", ":")))
        self.token = token
        for old in folder.glob("vectors-*.npy"):
            if old.name != name:
                old.unlink(missing_ok=True)

    @classmethod
    def load(cls, folder: Path, token: str | None) -> VectorCache:
        """The saved cache, memory-mapped; ValueError (or OSError) unless it belongs to the save `token`."""
        import numpy as np

        data = json.loads((folder / INDEX_FILE).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("version") != VECTORS_VERSION:
            raise ValueError("vector cache of another version")
        if token is None or data.get("token") != token:
            raise ValueError("the vector cache belongs to another catalog save")
        name = str(data["file"])
        if "/" in name or not name.startswith("vectors-"):
            raise ValueError("not a vector cache file name")
        matrix = np.asarray(np.load(folder / name, mmap_mode="r"))  # a plain view of the map
        ids = list(data["ids"])
        entries = list(data.get("entries") or ids)
        if matrix.ndim != 2 or matrix.dtype != np.float32:
            raise ValueError("the vector cache is not a float32 matrix")
        return cls(ids, entries, matrix, token)

    # --- search -----------------------------------------------------------------------------------

    def _entry_codes(self, order: list[str]) -> tuple[Any, bool]:
        """For each row, the catalog row of its entry (-1: not in the catalog); and whether every entry
        has exactly one row (then no reduction to the best passage is needed)."""
        import numpy as np

        if self._codes is None or self._codes[0] is not order:
            position = {entry: n for n, entry in enumerate(order)}
            codes = np.fromiter((position.get(e, -1) for e in self.entries), dtype=np.int64, count=len(self.entries))
            single = len(set(self.entries)) == len(self.entries) and bool((codes >= 0).all())
            self._codes = (order, codes, single)
        return self._codes[1], self._codes[2]

    def _rows_of(self) -> dict[str, list[int]]:
        """Each entry's rows (its passages), computed once per version of the rows."""
        cached = self._rows
        if cached is None or cached[0] is not self.entries:
            rows: dict[str, list[int]] = {}
            for n, entry in enumerate(self.entries):
                rows.setdefault(entry, []).append(n)
            cached = (self.entries, rows)
            self._rows = cached
        return cached[1]

    def entry_scores(self, vector: np.ndarray, order: list[str], allowed: np.ndarray | None = None) -> np.ndarray:
        """Cosine of each catalog row's entry (its best passage) to `vector`; -inf for entries without
        vectors or that `allowed` (a mask over the catalog rows) excludes."""
        import numpy as np

        codes, single = self._entry_codes(order)
        best = np.full(len(order), -np.inf, dtype=np.float32)
        if not len(self.ids):
            return best
        query = np.asarray(vector, dtype=np.float32)
        present = codes >= 0
        rows_kept = present if allowed is None else present & allowed[np.where(present, codes, 0)]
        kept = int(rows_kept.sum())
        if kept == 0:
            return best
        runs = _runs(rows_kept) if kept < len(codes) else None
        if runs is not None and len(runs[0]) * RUN_ROWS <= kept:
            scores = np.concatenate([self.matrix[a:b] @ query for a, b in zip(*runs, strict=True)])
            targets = codes[rows_kept]
        elif kept < GATHER_BELOW * len(codes):
            rows = np.flatnonzero(rows_kept)
            scores = self.matrix[rows] @ query
            targets = codes[rows]
        else:
            scores = self.matrix @ query
            if kept == len(codes):
                targets = codes
            else:
                scores, targets = scores[rows_kept], codes[rows_kept]
        if single:
            best[targets] = scores
        else:
            np.maximum.at(best, targets, scores)
        return best

    def search(
        self, vector: np.ndarray, order: list[str], depth: int, allowed: np.ndarray | None = None
    ) -> dict[str, float]:
        """The `depth` entries nearest `vector` among those `allowed`, best first, with their cosine."""
        import numpy as np

        best = self.entry_scores(vector, order, allowed)
        finite = int(np.isfinite(best).sum())
        depth = min(depth, finite)
        if depth <= 0:
            return {}
        top = np.argpartition(-best, depth - 1)[:depth] if depth < len(best) else np.arange(len(best))
        top = top[np.lexsort((top, -best[top]))]  # by score, ties by row: the same order every time
        return {order[r]: float(best[r]) for r in top if np.isfinite(best[r])}

    def scores_of(self, vector: np.ndarray, entries: list[str]) -> dict[str, float]:
        """The cosine of each of `entries` (its best passage) that has vectors here."""
        import numpy as np

        if not entries or not len(self.ids):
            return {}
        rows_of = self._rows_of()
        rows = [n for entry in dict.fromkeys(entries) for n in rows_of.get(entry, ())]
        if not rows:
            return {}
        scores = self.matrix[rows] @ np.asarray(vector, dtype=np.float32)
        found: dict[str, float] = {}
        for n, score in zip(rows, scores.tolist(), strict=True):
            entry = self.entries[n]
            if entry not in found or score > found[entry]:
                found[entry] = score
        return found

    def vectors_of(self, entries: list[str]) -> dict[str, np.ndarray]:
        """One vector per entry of `entries` held here: the row under the entry's own id, else its first."""
        rows_of = self._rows_of()
        found = {}
        for entry in entries:
            rows = rows_of.get(entry)
            if rows:
                found[entry] = self.matrix[next((n for n in rows if self.ids[n] == entry), rows[0])]
        return found
