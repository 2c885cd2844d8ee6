"""What a hit's score means, in one place (docs/json.md, "What a score means").

Two things are computed for every candidate, from the same two raw signals (BM25 and cosine):

- its **rank**: BM25 and cosine each min-max normalised over the query's candidates and combined as
  LEXICAL_WEIGHT x lexical + the rest x dense (see @@D-013). Relative to the query on purpose: it is
  what ranks best (CACM nDCG@10 0.595, where fixed transforms reached 0.585 at most).
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
    from memfiles.index.catalog import IndexDoc

DENSE_ZERO = 0.2
DENSE_ONE = 0.8
LEXICAL_SCALE = 1.0
LEXICAL_WEIGHT = 0.6  # chosen on SeaMonkey first; its held-out standing: docs/retrieval.md (eval_retrieval.py loco)
FUSION = "minmax"  # how the ranking puts the two signals on one scale (see relative)
EXACT_FLOOR = 0.9
ID_SCORE = 1.0


def dense_signal(cosine: float) -> float:
    return min(1.0, max(0.0, (cosine - DENSE_ZERO) / (DENSE_ONE - DENSE_ZERO)))


def lexical_signal(bm25: float, query_weight: float) -> float:
    if bm25 <= 0 or query_weight <= 0:
        return 0.0
    return 1.0 - math.exp(-bm25 / query_weight / LEXICAL_SCALE)


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
