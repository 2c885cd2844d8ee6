"""BM25 over the index's documents, in numpy: built at sync time, saved beside the store, loaded per query.

Our own small implementation rather than bm25s: it costs nothing to import, and it lets the title count
twice (field weighting) and compounds like `--max-fanout` count whole.
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

K1 = 1.2
B = 0.75


def document_tokens(title: str, body: str) -> list[str]:
    """The title counts twice: a title is a summary someone chose, the body says more besides."""
    title_tokens = tokenize(title)
    return title_tokens + title_tokens + tokenize(body)


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

    def save(self, folder: Path) -> None:
        import numpy as np

        folder.mkdir(parents=True, exist_ok=True)
        np.savez(
            folder / "bm25.npz", indptr=self.indptr, rows=self.rows, weights=self.weights, size=np.array([self.size])
        )
        (folder / "bm25-vocab.json").write_text(json.dumps({"vocab": self.vocab, "ids": self.ids}), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> LexicalIndex:
        import numpy as np

        arrays = np.load(folder / "bm25.npz")
        data = json.loads((folder / "bm25-vocab.json").read_text(encoding="utf-8"))
        return cls(
            data["vocab"], arrays["indptr"], arrays["rows"], arrays["weights"], int(arrays["size"][0]), data["ids"]
        )
