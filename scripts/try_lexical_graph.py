"""An experiment (thirteenth session): score regularisation over a neighbour graph that also reads words.

Score regularisation (index/score.py `nearest`, `neighbourly`, D-089) moves each candidate's rank towards
its most similar fellow candidates', similarity being the cosine of their stored MiniLM vectors. MiniLM
is the weaker signal on CACM's and CISI's technical text (0.43 and 0.42 nDCG@10 alone, against the
hybrid's 0.60 and 0.47), so its graph may join entries that share a topic in general words and miss
entries that share the rare terms. This replays the shipped ranking (docs/retrieval.md) with the
neighbours chosen, and their shares taken, by

- `lexical`: the cosine of the candidates' BM25 weight vectors (the index's own postings, every term's
  BM25 weight in the entry, title counted as the ranking counts it), instead of the stored vectors';
- `mixed λ`: (1 - λ) x the stored vectors' cosine + λ x that lexical cosine.

The rule, written down before any of its numbers were seen: the idea goes on to a leave-one-collection-out
run only if some variant of this screen lifts the shipped ranking's nDCG@10 on all three collections;
it ships only if that LOCO run raises the held-out ratio on every collection against the same run's
grid without it.

    python scripts/try_lexical_graph.py
"""

from __future__ import annotations

import time

import numpy as np
from eval_retrieval import NAMES
from replay import SHIPPED, shipped_collection, shipped_signals
from retrieval_sweep import candidates, fused, per_query
from scipy import sparse

from memfiles.index.lexical import LexicalIndex, document_tokens
from memfiles.index.score import neighbourly

MIXES = (1.0, 0.5, 0.25)  # λ: the lexical cosine's share of the similarity (1: lexical alone)
NEIGHBOURS = ((10, 0.5), (5, 0.5), (10, 0.3))


def weight_vectors(docs, setting) -> sparse.csr_matrix:  # type: ignore[no-untyped-def]
    """Each entry's BM25 weight of every term (rows of unit length), in catalog order."""
    index = LexicalIndex.build(
        [document_tokens(d.title, d.body(), setting.title_weight) for d in docs], setting.k1, setting.b
    )
    by_term = sparse.csc_matrix((index.weights, index.rows, index.indptr), shape=(index.size, len(index.vocab)))
    rows = by_term.tocsr().astype(np.float64)
    norms = np.sqrt(np.asarray(rows.multiply(rows).sum(axis=1))).ravel()
    return sparse.diags(1 / np.maximum(norms, 1e-12)) @ rows


def nearest_of(similar: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """`score.nearest` on a given similarity matrix of the candidates."""
    similar = similar.copy()
    k = min(k, len(similar) - 1)
    np.fill_diagonal(similar, -np.inf)
    rows = np.argpartition(-similar, k - 1, axis=1)[:, :k]
    close = np.take_along_axis(similar, rows, axis=1).clip(0)
    total = close.sum(axis=1, keepdims=True)
    return rows, np.divide(close, total, out=np.zeros_like(close), where=total > 0)


def main() -> None:
    setting = SHIPPED
    for name in NAMES:
        started = time.perf_counter()
        collection, _, docs = shipped_collection(name)
        lexical, dense, ids, row_of = shipped_signals(collection)
        matrix = collection.matrix.astype(np.float64)
        words = weight_vectors(docs, setting)
        variants = [(None, k, a) for k, a in NEIGHBOURS] + [(mix, k, a) for mix in MIXES for k, a in NEIGHBOURS]
        figures = {v: np.zeros(len(collection.qids)) for v in variants}
        for n, qid in enumerate(collection.qids):
            skip = row_of.get(collection.exclude.get(qid, ""))
            rows = candidates(lexical[n], dense[n], setting.depth, skip)
            lex, den = fused(lexical[n][rows], dense[n][rows], setting.method)
            ranks = setting.weight * lex + (1 - setting.weight) * den
            vectors = matrix[rows]
            by_meaning = vectors @ vectors.T
            sub = words[rows]
            by_words = (sub @ sub.T).toarray()
            for variant in variants:
                mix, k, a = variant
                similar = by_meaning if mix is None else (1 - mix) * by_meaning + mix * by_words
                moved = neighbourly(ranks, nearest_of(similar, k), a)
                top = ids[rows[np.argsort(-moved, kind="stable")[:10]]]
                figures[variant][n] = per_query(list(top), collection.qrels[qid])[0]
        lines = [f"{name}:"]
        for k, a in NEIGHBOURS:
            base = figures[(None, k, a)].mean()
            lines.append(f"  k={k} share={a:g}, stored vectors (shipped graph): {base:.3f}")
            for mix in MIXES:
                value = figures[(mix, k, a)].mean()
                label = "lexical" if mix == 1 else f"mixed λ={mix:g}"
                lines.append(f"    {label}: {value:.3f} ({value / base:.3f}x)")
        print(*lines, f"  ({time.perf_counter() - started:.0f} s)", sep="\n", flush=True)


if __name__ == "__main__":
    main()
