"""An experiment (thirteenth session): dense feedback taken from the hybrid ranking, not the dense one.

Dense pseudo-relevance feedback was tried in the second session with the query vector moved towards
the mean of its 3 nearest entries *by cosine* (the `--prf` rows of docs/retrieval.md): a little better
on CACM and SeaMonkey, nothing on CISI. The feedback there is only as good as MiniLM's own top 3 (MRR@10
0.62-0.65 on CACM and CISI), while the shipped hybrid's top 3 is much better (MRR@10 0.72-0.83). This
replays the shipped ranking (docs/retrieval.md), then moves the query vector towards the mean stored
vector of the *hybrid's* top `m` (Rocchio: q' = q + beta * mean, renormalised), scores every entry's
cosine to q' as the new dense signal, chooses the candidates again (BM25 unchanged) and fuses and
regularises them as before. A SeaMonkey query's own report is never a candidate, so never feedback.

The rule, written down before any of its numbers were seen: the idea goes on to a leave-one-collection-out
run (with m and beta free parameters of the grid, "off" among them) only if some (m, beta) of this
screen lifts the shipped ranking's nDCG@10 on all three collections; it ships only if that LOCO run
raises the held-out ratio on every collection against the same run's grid without it.

    python scripts/try_feedback.py
"""

from __future__ import annotations

import time

import numpy as np
from eval_retrieval import NAMES
from replay import SHIPPED, shipped_collection, shipped_signals
from retrieval_sweep import candidates, fused, per_query

from memfiles.index.score import nearest, neighbourly

FEEDBACK_DOCS = (3, 5, 10)
BETAS = (0.25, 0.5, 1.0)


def hybrid_ranking(lexical: np.ndarray, dense: np.ndarray, matrix: np.ndarray, setting, skip):  # type: ignore[no-untyped-def]
    """The shipped ranking of one query: its candidate rows, best first."""
    rows = candidates(lexical, dense, setting.depth, skip)
    lex, den = fused(lexical[rows], dense[rows], setting.method)
    ranks = setting.weight * lex + (1 - setting.weight) * den
    if setting.neighbours:
        ranks = neighbourly(ranks, nearest(matrix[rows], setting.neighbours), setting.neighbour_weight)
    return rows[np.argsort(-ranks, kind="stable")]


def fed_back(dense: np.ndarray, matrix: np.ndarray, top: np.ndarray, beta: float) -> np.ndarray:
    """Every entry's cosine to the query moved towards the mean stored vector of rows `top`.

    With q and every stored vector of unit length, cos(q + beta * c, d) = (q.d + beta * c.d) / |q + beta * c|
    and q.c is the mean of q.d over `top`, so the query vector itself is not needed."""
    centre = matrix[top].mean(axis=0)
    norm = np.sqrt(max(1e-12, 1 + 2 * beta * float(dense[top].mean()) + beta**2 * float(centre @ centre)))
    return (dense + beta * (matrix @ centre)) / norm


def main() -> None:
    setting = SHIPPED
    for name in NAMES:
        started = time.perf_counter()
        collection, _, _ = shipped_collection(name)
        lexical, dense, ids, row_of = shipped_signals(collection)
        matrix = collection.matrix.astype(np.float32)
        plain = np.zeros(len(collection.qids))
        fed = {(m, beta): np.zeros(len(collection.qids)) for m in FEEDBACK_DOCS for beta in BETAS}
        for n, qid in enumerate(collection.qids):
            skip = row_of.get(collection.exclude.get(qid, ""))
            first = hybrid_ranking(lexical[n], dense[n], matrix, setting, skip)
            relevant = collection.qrels[qid]
            plain[n] = per_query(list(ids[first[:10]]), relevant)[0]
            for (m, beta), figures in fed.items():
                second = hybrid_ranking(lexical[n], fed_back(dense[n], matrix, first[:m], beta), matrix, setting, skip)
                figures[n] = per_query(list(ids[second[:10]]), relevant)[0]
        base = plain.mean()
        lines = [f"{name}: shipped {base:.3f}"]
        for (m, beta), figures in fed.items():
            lines.append(f"  feedback m={m} beta={beta:g}: {figures.mean():.3f} ({figures.mean() / base:.3f}x)")
        print(*lines, f"  ({time.perf_counter() - started:.0f} s)", sep="\n", flush=True)


if __name__ == "__main__":
    main()
