"""An experiment (twelfth session, not shipped): two ways to lean harder on an entry's neighbours.

Score regularisation (index/score.py `neighbourly`, D-089) was the largest held-out gain of any idea
tried. This replays the shipped ranking (docs/retrieval.md) with two extensions of it, on the cached
backfills `eval_retrieval.py` makes, and prints each one's mean nDCG@10 with its ratio to the shipped
ranking:

- **steps, power**: the regularisation step applied `steps` times (each on the ranks the last one
  moved: a longer walk on the candidates' neighbour graph, towards the closed form of Diaz, 2005), and
  each neighbour's share taken as cosine**power before normalising (power 3: the closest count most);
  for the neighbour settings of the grid (k neighbours, share a).
- **corpus neighbours**: before the candidates are chosen, each entry's lexical and dense signals gain
  gamma times the share-weighted signals of its k nearest entries in the whole collection (by stored
  vector), i.e. document expansion by nearest neighbours, computed at index time in a real index. A
  SeaMonkey query's own report contributes nothing to its neighbours.

    python scripts/try_neighbours.py
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
from eval_retrieval import NAMES
from replay import SHIPPED, shipped_collection
from retrieval_sweep import evaluate

import memfiles.index.score as score

WALKS = ((1, 1), (2, 1), (3, 1), (1, 3), (2, 3))  # (steps, power); (1, 1) is the shipped step
NEIGHBOURS = ((10, 0.5), (10, 0.3), (5, 0.5))  # (k, share) of the regularisation
EXPANSIONS = ((0.2, 0.0), (0.5, 0.0), (0.0, 0.2), (0.0, 0.5), (0.2, 0.2), (0.5, 0.5))  # (lexical, dense) gamma
CORPUS_K = (5, 10)


SHIPPED_STEP = score.neighbourly


def walked(steps: int, power: float):  # type: ignore[no-untyped-def]
    """`neighbourly` taken `steps` times with shares sharpened by `power` (always around the shipped step)."""

    def neighbourly(ranks, near, weight=None, pool=None):  # type: ignore[no-untyped-def]
        rows, shares = near
        if power != 1:
            sharp = shares**power
            total = sharp.sum(axis=1, keepdims=True)
            shares = np.divide(sharp, total, out=np.zeros_like(sharp), where=total > 0)
        for _ in range(steps):
            ranks = SHIPPED_STEP(ranks, (rows, shares), weight, pool)
        return ranks

    return neighbourly


def corpus_graph(matrix: np.ndarray, k: int) -> np.ndarray:
    """Row i: the shares of entry i's k most similar entries (by cosine, negative counts 0), else 0."""
    similar = matrix @ matrix.T
    np.fill_diagonal(similar, -np.inf)
    rows = np.argpartition(-similar, k - 1, axis=1)[:, :k]
    close = np.take_along_axis(similar, rows, axis=1).clip(0)
    close /= np.maximum(close.sum(axis=1, keepdims=True), 1e-12)
    graph = np.zeros_like(similar)
    np.put_along_axis(graph, rows, close, axis=1)
    return graph


def ndcg(collection, setting) -> float:  # type: ignore[no-untyped-def]
    return float(evaluate(collection, setting)[setting][:, 0].mean())


def main() -> None:
    for name in NAMES:
        started = time.perf_counter()
        collection, _, _ = shipped_collection(name)
        base = ndcg(collection, SHIPPED)
        lines = [f"{name}: shipped {base:.3f}"]
        try:
            for steps, power in WALKS:
                score.neighbourly = walked(steps, power)
                for k, share in NEIGHBOURS:
                    figure = ndcg(collection, replace(SHIPPED, neighbours=k, neighbour_weight=share))
                    lines.append(
                        f"  steps={steps} power={power:g} k={k} share={share:g}: {figure:.3f} ({figure / base:.3f}x)"
                    )
        finally:
            score.neighbourly = SHIPPED_STEP
        key = (SHIPPED.framing, SHIPPED.k1, SHIPPED.b, SHIPPED.title_weight)
        lexical, dense = collection.lexical[key].copy(), collection.dense[SHIPPED.framing].copy()
        spread_lexical, spread_dense = lexical.copy(), dense.copy()  # what an entry passes to its neighbours
        row_of = {corpus_id: n for n, corpus_id in enumerate(collection.corpus_ids)}
        for n, qid in enumerate(collection.qids):
            own = row_of.get(collection.exclude.get(qid, ""))
            if own is not None:
                spread_lexical[n, own] = spread_dense[n, own] = 0.0
        try:
            for k in CORPUS_K:
                graph = corpus_graph(collection.matrix.astype(np.float64), k)
                for gamma_lexical, gamma_dense in EXPANSIONS:
                    collection.lexical[key] = lexical + gamma_lexical * spread_lexical @ graph.T
                    collection.dense[SHIPPED.framing] = dense + gamma_dense * spread_dense @ graph.T
                    figure = ndcg(collection, SHIPPED)
                    label = f"corpus k={k} lexical={gamma_lexical:g} dense={gamma_dense:g}"
                    lines.append(f"  {label}: {figure:.3f} ({figure / base:.3f}x)")
        finally:
            collection.lexical[key], collection.dense[SHIPPED.framing] = lexical, dense
        print(*lines, f"  ({time.perf_counter() - started:.0f} s)", sep="\n", flush=True)


if __name__ == "__main__":
    main()
