"""What a hit's score means, in one place (docs/json.md, "What a score means").

Two things are computed for every candidate, from the same two raw signals (BM25 and cosine):

- its **rank**: BM25 and cosine each min-max normalised over the query's candidates and combined as
  LEXICAL_WEIGHT x lexical + the rest x dense. Relative to the query on purpose: it ranks better than
  fixed transforms (@@D-040). Then each candidate's rank is moved towards the ranks of its nearest
  fellow candidates (`neighbourly`, @@D-089): an entry whose close neighbours also answer the query is
  more likely to answer it too.
- its **score**, in [0, 1] and the same scale for every query: fixed transforms of the raw signals
  combined with the same weight. An unrelated query scores low (its best hit too); an id named in the
  query scores 1.0; an entry holding a code-like query verbatim at least EXACT_FLOOR. A score never
  rises down the list: each hit's is capped by the one above it.

The transforms:
- dense: the cosine, mapped linearly from DENSE_ZERO (unrelated texts, for MiniLM) to DENSE_ONE (a
  close paraphrase) and clipped to [0, 1].
- lexical: the entry's BM25 divided by the query's weight (the BM25 an average-length entry holding
  each query term once would get), saturated as 1 - exp(-x / LEXICAL_SCALE): 0.63 for every term once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from memfiles.index.catalog import IndexDoc

DENSE_ZERO = 0.2
DENSE_ONE = 0.8
LEXICAL_SCALE = 1.0
# The ranking's parameters, chosen by one rule over three judged collections (docs/retrieval.md,
# `python scripts/eval_retrieval.py loco`); each collection's held-out figure is there too.
LEXICAL_WEIGHT = 0.5
FUSION = "minmax"  # how the ranking puts the two signals on one scale (see relative)
NEIGHBOURS = 10  # how many of a candidate's most similar fellow candidates `neighbourly` reads
NEIGHBOUR_WEIGHT = 0.5  # the share of a candidate's rank that comes from those neighbours
# Fewer candidates than this and the ranks stay as fused: it was chosen and measured on pools of 50 and
# more (each ranking 50 deep), and in a small pool (a small project, a narrow filter) every candidate is
# every other's neighbour, so moving ranks towards them only blurs the order (two candidates would tie).
NEIGHBOUR_POOL = 50
EXACT_FLOOR = 0.9
ID_SCORE = 1.0


# A candidate whose every signal is below this carries no evidence: it shares no word with the query and
# its meaning is no nearer than unrelated text (a cosine under DENSE_ZERO). It would show as score 0.00, so
# it is no hit at all (docs/json.md, "What a score means"): every search path leaves it out.
NO_EVIDENCE = 0.01


def carries_evidence(score: float, signals: dict[str, Any]) -> bool:
    """True for a candidate that names the query's id, holds it verbatim, or has a signal worth a 0.01."""
    if signals.get("id") or signals.get("exact") or score >= NO_EVIDENCE:
        return True
    return any((signals.get(name) or 0.0) >= NO_EVIDENCE for name in ("lexical", "dense"))


def dense_signal(cosine: float) -> float:
    return min(1.0, max(0.0, (cosine - DENSE_ZERO) / (DENSE_ONE - DENSE_ZERO)))


def lexical_signal(bm25: float, query_weight: float) -> float:
    if bm25 <= 0 or query_weight <= 0:
        return 0.0
    return 1.0 - math.exp(-bm25 / query_weight / LEXICAL_SCALE)


def words_signal(share: float) -> float:
    """The lexical signal with no index (no BM25, no model): `share` is the part of the query's words the
    entry holds, read as lexical_signal reads an average entry holding that part of the terms once (0.63
    for all of them). With no dense signal the score is then at most 0.32: evidence of words only."""
    return lexical_signal(share, 1.0)


def fused_score(lexical: float, dense: float, weight: float = LEXICAL_WEIGHT) -> float:
    return weight * lexical + (1.0 - weight) * dense


def exact_score(score: float) -> float:
    """A verbatim hit stays ordered by its own score, above every score that is not verbatim."""
    return EXACT_FLOOR + (1.0 - EXACT_FLOOR) * score


def relative(scores: dict[str, float], method: str = "minmax") -> dict[str, float]:
    """The ranking's view of a signal, relative to the query's candidates (never shown as a score):
    min-max, z-score (mean and spread of the candidates' values) or reciprocal rank (k=60)."""
    if not scores:
        return {}
    values = list(scores.values())
    if method == "rrf":
        order = sorted(scores, key=lambda key: (-scores[key], key))
        return {key: 1.0 / (60 + rank) for rank, key in enumerate(order)}
    if method == "zscore":
        mean = sum(values) / len(values)
        spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        return {key: (value - mean) / spread if spread > 0 else 0.0 for key, value in scores.items()}
    low, high = min(values), max(values)
    span = high - low
    return {key: (value - low) / span if span > 0 else 1.0 for key, value in scores.items()}


def nearest(vectors: np.ndarray, neighbours: int = NEIGHBOURS) -> tuple[np.ndarray, np.ndarray]:
    """For each candidate (a row of unit `vectors`): its `neighbours` most similar fellow candidates (row
    numbers) and each one's share of its neighbourhood, by cosine (a negative cosine counts nothing)."""
    import numpy as np

    neighbours = min(neighbours, len(vectors) - 1)
    if neighbours < 1:
        return np.zeros((len(vectors), 0), dtype=np.intp), np.zeros((len(vectors), 0))
    similar = vectors @ vectors.T
    np.fill_diagonal(similar, -np.inf)
    rows = np.argpartition(-similar, neighbours - 1, axis=1)[:, :neighbours]
    closeness = np.take_along_axis(similar, rows, axis=1).clip(0).astype(np.float64)
    total = closeness.sum(axis=1, keepdims=True)
    return rows, np.divide(closeness, total, out=np.zeros_like(closeness), where=total > 0)


def neighbourly(
    ranks: np.ndarray,
    near: tuple[np.ndarray, np.ndarray],
    weight: float | None = None,
    pool: int | None = None,
) -> np.ndarray:
    """Score regularisation over the query's candidates: each rank becomes (1 - weight) x its own plus
    weight x the share-weighted mean rank of its neighbours (`near`, from `nearest`); a candidate none of
    whose neighbours has a positive cosine keeps its rank. `weight` 0, no neighbours, or fewer ranks
    than `pool`: the ranks unchanged. Defaults: NEIGHBOUR_WEIGHT, NEIGHBOUR_POOL."""
    import numpy as np

    rows, shares = near
    weight = NEIGHBOUR_WEIGHT if weight is None else weight
    pool = NEIGHBOUR_POOL if pool is None else pool
    if weight <= 0 or not rows.shape[1] or len(ranks) < pool:
        return ranks
    moved = (1 - weight) * ranks + weight * (shares * ranks[rows]).sum(axis=1)
    return np.where(shares.sum(axis=1) > 0, moved, ranks)  # no similar neighbour: its own rank stays


@dataclass(frozen=True)
class Hit:
    """One search result: the document, its score in [0, 1] and the signals behind it (raw cosine, BM25 ratio)."""

    score: float
    signals: dict[str, Any]
    doc: IndexDoc

    @property
    def id(self) -> str:
        return self.doc.id

    def as_json(self, rank: int) -> dict[str, Any]:
        """The contract's hit object (docs/json.md)."""
        from memfiles.contract import hit_object

        return hit_object(self.doc.entry_object(), self.score, self.signals, rank)
