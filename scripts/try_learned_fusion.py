"""An experiment (thirteenth session): the fusion's weights learned by leave-one-collection-out, not picked.

The shipped ranking is a linear function of four numbers per candidate, all relative to the query's
candidates: its min-max BM25 (`lex`), its min-max cosine (`dense`), and the share-weighted means of
those two over its 10 most similar fellow candidates (`lex~`, `dense~`, index/score.py `nearest`). With
the lexical weight 0.5 and the neighbours' share 0.5 it is 0.25 of each. The grid of
retrieval_sweep.py picks the two weights from 7 x 4 values (and the rest of its 42,336 points); a fold
then takes the single best point of that grid on its two training collections, and that choice is noisy
(docs/retrieval.md, the bootstrap). Here every coefficient is fitted instead, on the two training
collections' judged queries, by a pairwise logistic loss (RankNet: every relevant candidate of a query
against every other, each query weighing the same, each collection weighing the same, an L2 penalty of
1e-3), over six features: the four above and the two signals' z-scores over the candidates. The BM25
setting (k1, b, title weight; framing off, each ranking 50 deep as shipped) is chosen per fold like the
grid's: the one whose fitted model has the best mean nDCG@10 on the two training collections.

The rule, written down before any of its numbers were seen: the learned fusion is worth building into
the index only if, held out, it beats the same run's grid LOCO (`eval_retrieval.py loco`) on every
collection; its shipped coefficients would then be fitted on all three.

    python scripts/try_learned_fusion.py
"""

from __future__ import annotations

import itertools
import time

import numpy as np
from eval_retrieval import NAMES, load, project
from retrieval_sweep import BS, K1S, TITLE_WEIGHTS, candidates, fused, per_query, prepare
from scipy.optimize import minimize
from scipy.special import expit

from memfiles.index import score, search

NEIGHBOURS = score.NEIGHBOURS
DEPTH = search.DEPTH
PENALTY = 1e-3
FEATURES = ("lex", "dense", "lex~", "dense~", "lex z", "dense z")
SHIPPED_WEIGHTS = np.array([0.25, 0.25, 0.25, 0.25, 0.0, 0.0])  # the shipped ranking in these features


def features(lexical: np.ndarray, dense: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """(candidates, 6): the features of one query's candidates. The neighbours' means are the index's own
    score regularisation with its whole weight on the neighbours (a small pool keeps its values)."""
    lex, den = fused(lexical, dense, "minmax")
    near = score.nearest(vectors, NEIGHBOURS)
    lex_near, den_near = score.neighbourly(lex, near, 1.0), score.neighbourly(den, near, 1.0)
    return np.stack([lex, den, lex_near, den_near, *fused(lexical, dense, "zscore")], axis=1)


class Queries:
    """One collection under one BM25 setting: each judged query's candidate features and relevance."""

    def __init__(self, collection, key) -> None:  # type: ignore[no-untyped-def]
        lexical, dense = collection.lexical[key], collection.dense[False]
        row_of = {c: n for n, c in enumerate(collection.corpus_ids)}
        ids = np.asarray(collection.corpus_ids)
        self.items = []
        for n, qid in enumerate(collection.qids):
            skip = row_of.get(collection.exclude.get(qid, ""))
            rows = candidates(lexical[n], dense[n], DEPTH, skip)
            x = features(lexical[n][rows], dense[n][rows], collection.matrix[rows])
            relevant = collection.qrels[qid]
            labels = np.array([relevant.get(i, 0) > 0 for i in ids[rows]])
            self.items.append((x, labels, ids[rows], relevant))

    def ndcg(self, weights: np.ndarray) -> float:
        values = []
        for x, _, ids, relevant in self.items:
            top = ids[np.argsort(-(x @ weights), kind="stable")[:10]]
            values.append(per_query(list(top), relevant)[0])
        return float(np.mean(values))

    def pairs(self) -> list[np.ndarray]:
        """Per query: x(relevant) - x(other) for every such pair among its candidates (none: left out)."""
        out = []
        for x, labels, _, _ in self.items:
            if labels.any() and not labels.all():
                out.append((x[labels][:, None, :] - x[~labels][None, :, :]).reshape(-1, x.shape[1]))
        return out


def fit(training: list[Queries]) -> np.ndarray:
    """The weights minimising the mean over collections of the mean over queries of the pairwise loss."""
    stacked, shares = [], []
    for queries in training:
        pairs = queries.pairs()
        for d in pairs:
            stacked.append(d)
            shares.append(np.full(len(d), 1.0 / (len(training) * len(pairs) * len(d))))
    d, share = np.concatenate(stacked), np.concatenate(shares)

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        margin = d @ w
        total = PENALTY * float(w @ w) + float(share @ np.logaddexp(0, -margin))
        grad = 2 * PENALTY * w - d.T @ (share * expit(-margin))
        return total, grad

    return minimize(loss, SHIPPED_WEIGHTS, jac=True, method="L-BFGS-B").x


def main() -> None:
    started = time.perf_counter()
    collections = {}
    for name in NAMES:
        corpus, queries, qrels, exclude = load(name, False)
        folder, to_corpus = project(name, corpus, False)
        collections[name] = prepare(name, folder, to_corpus, queries, qrels, exclude, False, False)
    keys = [(False, k1, b, tw) for k1, b, tw in itertools.product(K1S, BS, TITLE_WEIGHTS)]
    prepared = {key: {name: Queries(c, key) for name, c in collections.items()} for key in keys}
    shipped_key = (False, 1.2, 0.3, 3)
    print(f"prepared in {time.perf_counter() - started:.0f} s", flush=True)
    print("shipped ranking (these features, weights 0.25 x 4):")
    for name in NAMES:
        print(f"  {name}: {prepared[shipped_key][name].ndcg(SHIPPED_WEIGHTS):.3f}")
    print(
        "| held out | BM25 chosen (k1, b, title) | weights ("
        + ", ".join(FEATURES)
        + ") | held-out nDCG@10 | ÷ shipped |"
    )
    print("|---|---|---|---|---|")
    for held in NAMES:
        train = [n for n in NAMES if n != held]
        best = None
        for key in keys:
            weights = fit([prepared[key][n] for n in train])
            objective = np.mean([prepared[key][n].ndcg(weights) for n in train])
            if best is None or objective > best[0]:
                best = (objective, key, weights)
        _, key, weights = best
        value = prepared[key][held].ndcg(weights)
        shipped = prepared[shipped_key][held].ndcg(SHIPPED_WEIGHTS)
        shown = ", ".join(f"{w:.2f}" for w in weights / np.abs(weights).sum())
        print(f"| {held} | {key[1]}, {key[2]}, {key[3]} | {shown} | {value:.3f} | {value / shipped:.3f}x |", flush=True)
    print("with the shipped BM25 setting fixed (held out, weights fitted on the other two):")
    for held in NAMES:
        weights = fit([prepared[shipped_key][n] for n in NAMES if n != held])
        print(f"  {held}: {prepared[shipped_key][held].ndcg(weights):.3f}")
    weights = fit([prepared[shipped_key][n] for n in NAMES])
    shown = ", ".join(f"{f} {w:.3f}" for f, w in zip(FEATURES, weights / np.abs(weights).sum(), strict=True))
    print(f"fitted on all three, shipped BM25 setting: {shown}")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
