"""What a hit's score means, in one place: fixed transforms of the raw signals into [0, 1], the same for
every query, so that a score of 0.5 says the same thing whatever was asked (docs/json.md, "What a score
means"). Per-query min-max normalisation, which made every query's best hit 1.0, is gone: an unrelated
query now scores low.

- dense: the cosine of the query's and the entry's embeddings, mapped linearly from DENSE_ZERO (what
  unrelated texts reach with MiniLM) to DENSE_ONE (a paraphrase) and clipped.
- lexical: the entry's BM25 divided by the BM25 an average-length entry holding each query term once
  would get (the query's summed idf), saturated as 1 - exp(-x / LEXICAL_SCALE).
- fused: a convex combination of the two, LEXICAL_WEIGHT on the lexical side.
- an entry holding a code-like query verbatim is lifted to at least EXACT_FLOOR; an id named in the query
  scores 1.0.
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
LEXICAL_WEIGHT = 0.6
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
    """A verbatim hit stays ordered by its fused score, above every hit that is not verbatim."""
    return EXACT_FLOOR + (1.0 - EXACT_FLOOR) * score


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
