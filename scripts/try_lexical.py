"""Two experiments on the lexical side (eighth session, neither shipped), each replayed on the shipped
ranking with the rest unchanged. Rule for both, written before the numbers: worth adding to the grid
(and to the index) only if some value lifts the shipped ranking on all three collections. Prints the
mean nDCG@10 for each value and its ratio to 0 (the shipped ranking). Needs the backfilled projects
`eval_retrieval.py` caches.

    python scripts/try_lexical.py

**Word pairs** (μ): the ordered-pair part of Metzler and Croft's sequential dependence model, without
positions. Each entry's adjacent token pairs (the index's own tokens: stemmed, stop words out, the title's pairs
counted as often as its words) form a second BM25 index; a query's adjacent pairs are scored against
it, and the lexical signal becomes BM25(words) + μ · BM25(pairs).

**BM25+** (δ): Lv and Zhai's lower bound on the term-frequency part, idf · (tf (k1 + 1) / (tf + norm) + δ),
so a long entry holding a query term is never scored as if it held almost none.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter

import numpy as np
from eval_retrieval import NAMES
from replay import SHIPPED, shipped_collection
from retrieval_sweep import evaluate

from memfiles.index.lexical import LexicalIndex, document_tokens
from memfiles.index.text import tokenize

MUS = (0.0, 0.1, 0.25, 0.5, 1.0)
DELTAS = (0.0, 0.25, 0.5, 1.0)


def pairs(tokens: list[str]) -> list[str]:
    return [f"{a} {b}" for a, b in itertools.pairwise(tokens)]


def bm25_plus(documents: list[list[str]], k1: float, b: float, delta: float) -> LexicalIndex:
    """LexicalIndex.build with δ added to every posting's term-frequency part."""
    index = LexicalIndex.build(documents, k1=k1, b=b)
    size = index.size
    for n in range(len(index.vocab)):
        start, end = index.indptr[n], index.indptr[n + 1]
        df = end - start
        index.weights[start:end] += delta * math.log(1 + (size - df + 0.5) / (df + 0.5))
    return index


def score_all(index: LexicalIndex, terms_of_queries: list[list[str]]) -> np.ndarray:
    out = np.zeros((len(terms_of_queries), index.size), dtype=np.float32)
    for n, terms in enumerate(terms_of_queries):
        for term, count in Counter(terms).items():
            row = index.vocab.get(term)
            if row is not None:
                start, end = index.indptr[row], index.indptr[row + 1]
                out[n, index.rows[start:end]] += count * index.weights[start:end]
    return out


def report(name: str, started: float, symbol: str, values, means: list[float]) -> None:
    figures = " | ".join(f"{symbol}={m:g}: {v:.3f} ({v / means[0]:.3f}x)" for m, v in zip(values, means, strict=True))
    print(f"{name} ({time.perf_counter() - started:.0f} s) | {figures}", flush=True)


def main() -> None:
    for name in NAMES:
        started = time.perf_counter()
        collection, queries, docs = shipped_collection(name)
        bm25 = (SHIPPED.k1, SHIPPED.b, SHIPPED.title_weight)
        documents = [pairs(tokenize(d.title)) * SHIPPED.title_weight + pairs(tokenize(d.body())) for d in docs]
        index = LexicalIndex.build(documents, k1=SHIPPED.k1, b=SHIPPED.b)
        by_pair = score_all(index, [list(set(pairs(tokenize(queries[q])))) for q in collection.qids])
        key = (SHIPPED.framing, *bm25)
        words = collection.lexical[key].copy()
        means = []
        for mu in MUS:
            collection.lexical[key] = words + mu * by_pair
            means.append(float(evaluate(collection, SHIPPED)[SHIPPED][:, 0].mean()))
        report(name, started, "μ", MUS, means)
        tokens = [document_tokens(d.title, d.body()) for d in docs]
        means = []
        for delta in DELTAS:
            plus = bm25_plus(tokens, SHIPPED.k1, SHIPPED.b, delta)
            collection.lexical[key] = score_all(plus, [tokenize(queries[q]) for q in collection.qids])
            means.append(float(evaluate(collection, SHIPPED)[SHIPPED][:, 0].mean()))
        report(name, started, "δ", DELTAS, means)


if __name__ == "__main__":
    main()
