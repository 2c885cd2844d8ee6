"""BM25 over the index's documents, in numpy: built at sync time, saved beside the store, loaded per query.

Our own small implementation rather than bm25s: it costs nothing to import, and it lets the title count
more than once (field weighting) and compounds like `--max-fanout` count whole.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from memfiles.index.text import tokenize

if TYPE_CHECKING:
    import numpy as np

# Chosen with the rest of the ranking (index/score.py, docs/retrieval.md).
K1 = 1.2
B = 0.3
TITLE_WEIGHT = 3  # how many times the title's tokens count
# What a saved index was built with: one saved by another recipe is not loaded (the reader rebuilds it).
RECIPE = f"k1={K1} b={B} title={TITLE_WEIGHT}"


def document_tokens(title: str, body: str, title_weight: int = TITLE_WEIGHT) -> list[str]:
    """The title counts more than once: a title is a summary someone chose, the body says more besides."""
    return tokenize(title) * title_weight + tokenize(body)


class LexicalIndex:
    """Term -> (doc rows, BM25 weights), stored as three flat arrays and a vocabulary."""

    def __init__(
        self,
        vocab: dict[str, int],
        indptr: np.ndarray,
        rows: np.ndarray,
        weights: np.ndarray,
        size: int,
        ids: list[str] | None = None,
    ):
        self.ids = ids if ids is not None else [str(n) for n in range(size)]  # the document of each row
        self.vocab = vocab
        self.indptr = indptr
        self.rows = rows
        self.weights = weights
        self.size = size
        self.token: str | None = None  # the catalog save this index belongs to

    @classmethod
    def build(
        cls, documents: list[list[str]], k1: float = K1, b: float = B, ids: list[str] | None = None
    ) -> LexicalIndex:
        import numpy as np

        size = len(documents)
        lengths = np.array([len(doc) for doc in documents], dtype=np.float32)
        average = float(lengths.mean()) if size else 1.0
        postings: dict[str, list[tuple[int, int]]] = {}
        for row, doc in enumerate(documents):
            for term, count in Counter(doc).items():
                postings.setdefault(term, []).append((row, count))
        vocab = {term: n for n, term in enumerate(sorted(postings))}
        indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
        rows_list: list[int] = []
        weight_list: list[float] = []
        for term, n in vocab.items():
            items = postings[term]
            idf = math.log(1 + (size - len(items) + 0.5) / (len(items) + 0.5))
            for row, tf in items:
                norm = k1 * (1 - b + b * lengths[row] / average)
                rows_list.append(row)
                weight_list.append(idf * tf * (k1 + 1) / (tf + norm))
            indptr[n + 1] = len(rows_list)
        return cls(
            vocab, indptr, np.array(rows_list, dtype=np.int32), np.array(weight_list, dtype=np.float32), size, ids
        )

    def scores(self, query: str) -> np.ndarray:
        """A BM25 score for every document row (0 where no query term occurs).

        A term the query repeats counts as often as it appears: a long question that says "system"
        twice is mostly about systems.
        """
        import numpy as np

        scores = np.zeros(self.size, dtype=np.float32)
        for term, count in Counter(tokenize(query)).items():
            n = self.vocab.get(term)
            if n is None:
                continue
            start, end = self.indptr[n], self.indptr[n + 1]
            scores[self.rows[start:end]] += count * self.weights[start:end]  # rows are unique within a term
        return scores

    def idf(self, term: str) -> float:
        """BM25's idf of `term`; a term no document holds gets the highest idf there is."""
        n = self.vocab.get(term)
        df = int(self.indptr[n + 1] - self.indptr[n]) if n is not None else 0
        return math.log(1 + (self.size - df + 0.5) / (df + 0.5))

    def query_weight(self, query: str) -> float:
        """The BM25 of a document of average length holding each query term once: the sum of their idf.

        A document's BM25 divided by this is comparable across queries: about 1 when it holds every
        term of the query once, 0 when it holds none, up to k1 + 1 with many repeats.
        """
        return sum(count * self.idf(term) for term, count in Counter(tokenize(query)).items())

    def save(self, folder: Path, token: str | None = None) -> None:
        """Write the arrays and the vocabulary, each atomically; `token` ties them to one catalog save."""
        import io

        import numpy as np

        from memfiles.store.fileio import atomic_write

        folder.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        np.savez(buffer, indptr=self.indptr, rows=self.rows, weights=self.weights, size=np.array([self.size]))
        _replace_bytes(folder / "bm25.npz", buffer.getvalue())
        self.token = token
        atomic_write(
            folder / "bm25-vocab.json",
            json.dumps({"vocab": self.vocab, "ids": self.ids, "token": token, "recipe": RECIPE}),
        )

    @classmethod
    def load(cls, folder: Path) -> LexicalIndex:
        """The saved index; ValueError when its files are torn, truncated or of another recipe (the
        caller builds it anew: it is derived), OSError when they cannot be read."""
        import zipfile

        import numpy as np

        data = json.loads((folder / "bm25-vocab.json").read_text(encoding="utf-8"))
        if not _of_this_recipe(data):
            raise ValueError(f"{folder / 'bm25-vocab.json'} was not built by this recipe ({RECIPE})")
        try:
            with np.load(folder / "bm25.npz") as arrays:
                indptr, rows, weights = arrays["indptr"], arrays["rows"], arrays["weights"]
                size = int(arrays["size"][0])
            index = cls(data["vocab"], indptr, rows, weights, size, data["ids"])
        except (EOFError, zipfile.BadZipFile, KeyError, IndexError, TypeError) as error:
            raise ValueError(f"{folder / 'bm25.npz'} cannot be read ({type(error).__name__}: {error})") from error
        index.token = data.get("token")
        return index


def saved_is_current(folder: Path, token: str | None) -> bool:
    """Whether `folder` holds a lexical index of this recipe saved with the catalog save `token`: else
    a reader would rebuild it on every open, so the next save should write one."""
    try:
        data = json.loads((folder / "bm25-vocab.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not (_of_this_recipe(data) and data.get("token") == token):
        return False
    try:  # a torn or truncated array file is rewritten too: backfill is how one repairs the index
        LexicalIndex.load(folder)
    except (OSError, ValueError):
        return False
    return True


def _of_this_recipe(data: object) -> bool:
    """Whether a saved vocabulary file's contents say it was built by RECIPE (any other JSON: no)."""
    return isinstance(data, dict) and data.get("recipe") == RECIPE


def _replace_bytes(path: Path, data: bytes) -> None:
    """Derived data, so no fsync: a reader sees the old file or the new one, and a torn one is rebuilt."""
    import os
    import tempfile

    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
