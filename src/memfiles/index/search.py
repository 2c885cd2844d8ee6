"""Hybrid search: ids named in the query first, then entries holding a code-like query verbatim, then
BM25 and dense similarity fused relative to the query's candidates, each candidate's rank
moved towards its nearest fellow candidates' (@@D-089). Every hit is scored on the fixed scale of
index/score.py, which means the same for every query."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memfiles.errors import BudgetExceeded
from memfiles.format.ids import id_key, id_keys_in
from memfiles.index import score as scoring
from memfiles.index.catalog import Catalog
from memfiles.index.chroma import VectorStore
from memfiles.index.embedder import Embedder
from memfiles.index.filters import Filters
from memfiles.index.lexical import LexicalIndex
from memfiles.index.score import Hit
from memfiles.index.text import strip_framing
from memfiles.limits import QUERY_LIMIT, REQUEST_BUDGET

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

    from memfiles.index.vector_cache import VectorCache

__all__ = ["Filters", "Hit", "Searcher"]

DEPTH = 50  # how deep each ranking goes before fusion: fusing only the top 10 loses relevant hits
# Whether question framing (index/text.py) is taken off the query before both rankings. Off: the rule
# that chose the ranking's parameters chose it off (docs/retrieval.md); the stop words still go.
STRIP_FRAMING = False
BY_ID_LIMIT = 256  # a filter matching this few rows reads their vectors by id (7.6 ms for 200 at 100k)
BROAD_FRACTION = 0.1  # a filter matching this share of rows over-fetches an unfiltered query
# A word character right before "(" is what "a word and its call" needs: `\w+\(` said the same and rescanned
# the rest of a long word from each of its positions (a 100k-character word took 42 s; issue 34).
_CODE_LIKE = re.compile(r"[-_./:=`\"']|\w\(")


@dataclass
class Signals:
    """The raw evidence for one query: ids it names, BM25 and cosine of every candidate, verbatim holders."""

    ids: list[str] = field(default_factory=list)
    lexical: dict[str, float] | None = None  # BM25 by id (None: the lexical ranking did not run)
    dense: dict[str, float] | None = None  # cosine by id (None: the dense ranking did not run)
    exact: set[str] = field(default_factory=set)
    query_weight: float = 0.0


class Searcher:
    """Answers queries against one open store and its catalog; the embedder is loaded on first need."""

    def __init__(
        self,
        store: VectorStore | None,
        catalog: Catalog,
        embedder: Embedder | None,
        lexical_weight: float = scoring.LEXICAL_WEIGHT,
        vectors: VectorCache | None = None,
        sidecar: Path | None = None,
    ) -> None:
        self.lexical_weight = lexical_weight
        self.store = store
        self.catalog = catalog
        self.embedder = embedder
        # The store's vectors as of the catalog's generation: when given, dense search is an exact
        # product over them (index/vector_cache.py) and Chroma is not asked at all.
        self.vectors = vectors
        self.sidecar = sidecar if sidecar is not None else (store.sidecar if store is not None else None)
        self._lexical: LexicalIndex | None = None
        self._texts: tuple[list[str], list[str]] | None = None
        self._ids: tuple[list[str], dict[tuple[str, int], str]] | None = None
        self.depth = DEPTH  # how deep each ranking goes (deeper while `hidden` entries take places)
        self.hidden: set[str] = set()  # never answered: no file holds them (indexing/staleness.py)

    @property
    def lexical(self) -> LexicalIndex:
        """The saved lexical index when it belongs to this catalog's save; else one built from the catalog."""
        if self._lexical is None:
            try:
                self._lexical = LexicalIndex.load(self.sidecar) if self.sidecar else None
            except (OSError, ValueError, KeyError):
                self._lexical = None
            if (
                self._lexical is None
                or self._lexical.token != self.catalog.saved_as
                or set(self._lexical.ids) != set(self.catalog.docs)
            ):
                from memfiles.index.catalog import lexical_index

                self._lexical = lexical_index([self.catalog.docs[i] for i in self.catalog.order])
        return self._lexical

    def set_lexical(self, index: LexicalIndex) -> None:
        """Swap in a lexical index built elsewhere (the watcher rebuilds it in the background)."""
        self._lexical = index

    def _mask(self, filters: Filters) -> np.ndarray | None:
        return filters.mask(self.catalog) if filters.active else None

    def lexical_scores(self, query: str, filters: Filters) -> np.ndarray:
        """BM25 of every catalog row; 0 for rows the filters exclude (and for rows the index lacks yet)."""
        import numpy as np

        lexical = self.lexical
        scores = lexical.scores(query)
        if lexical.ids != self.catalog.order:
            aligned = np.zeros(len(self.catalog.order), dtype=np.float32)
            row = self.catalog.row
            for n in np.flatnonzero(scores):
                target = row.get(lexical.ids[n])
                if target is not None:
                    aligned[target] = scores[n]
            scores = aligned
        mask = self._mask(filters)
        return np.where(mask, scores, 0.0) if mask is not None else scores

    def _top_rows(self, scores: np.ndarray, depth: int | None = None) -> list[int]:
        import numpy as np

        depth = self.depth if depth is None else depth
        rows = np.argpartition(-scores, depth)[:depth] if len(scores) > depth else np.arange(len(scores))
        return [int(r) for r in rows if scores[r] > 0]

    def _adopt(self, ids: list[str]) -> None:
        """Ids the store returned that the catalog lacks (written by a client it did not see): read them
        from the store, so that a hit is never an id without a document."""
        missing = [i for i in ids if i not in self.catalog.docs]
        if missing and self.store is not None:
            from memfiles.index.sync import store_docs

            self.catalog.add(list(store_docs(self.store, missing).values()))

    def dense_scores(self, vector: np.ndarray, filters: Filters, depth: int | None = None) -> dict[str, float]:
        """Cosine similarity of the `depth` nearest entries that pass `filters`.

        Chroma's `where` costs ~130 ms at 100,000 entries however few rows match, so a filter is served
        by the cheapest exact route its selectivity allows (see @@D-015): few matching rows, their
        vectors by id; a broad filter, an over-fetched unfiltered query cut by the mask; else `where`.
        """
        import numpy as np

        depth = self.depth if depth is None else depth
        if self.vectors is not None:
            allowed = filters.mask(self.catalog) if filters.active else None
            return self.vectors.search(vector, self.catalog.order, depth, allowed)
        if self.store is None or not self.catalog.docs:
            return {}
        total = len(self.catalog.order)
        if not filters.active:
            found = dict(self.store.query(vector, min(depth, total)))
            self._adopt(list(found))
            return {i: s for i, s in found.items() if i in self.catalog.docs}
        mask = filters.mask(self.catalog)
        allowed = int(mask.sum())
        if allowed == 0:
            return {}
        if allowed == total:  # nothing hidden is indexed: the unfiltered query is exact
            return dict(self.store.query(vector, min(depth, total)))
        if allowed <= BY_ID_LIMIT:
            ids = [self.catalog.order[r] for r in np.flatnonzero(mask)]
            stored = self.store.vectors(ids)
            scores = {i: float(np.dot(np.asarray(v, dtype=np.float32), vector)) for i, v in stored.items()}
            return dict(sorted(scores.items(), key=lambda item: -item[1])[:depth])
        fraction = allowed / total
        wanted = min(depth, allowed)
        if fraction >= BROAD_FRACTION:
            n = min(total, int(wanted / fraction * 1.5) + 10)
            row = self.catalog.row
            hits = [(i, s) for i, s in self.store.query(vector, n) if i in row and mask[row[i]]]
            if len(hits) >= wanted:
                return dict(hits[:depth])
        found = dict(self.store.query(vector, wanted, filters.where(self.catalog)))
        self._adopt(list(found))
        return {i: s for i, s in found.items() if i in self.catalog.docs and filters.accepts(self.catalog.docs[i])}

    def stored_scores(self, vector: np.ndarray, ids: list[str]) -> dict[str, float]:
        """The cosine of each of `ids` to `vector`, from the stored vectors (those the index has)."""
        import numpy as np

        if self.vectors is not None:
            return self.vectors.scores_of(vector, ids)
        if self.store is None:
            return {}
        stored = self.store.vectors(ids)
        return {i: float(np.dot(np.asarray(v, dtype=np.float32), vector)) for i, v in stored.items()}

    def entry_vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        """One stored vector per entry of `ids` that the index has: the row stored under the entry's own id
        (its first passage; the cache falls back to its first row if that id is missing)."""
        if self.vectors is not None:
            return self.vectors.vectors_of(ids)
        if self.store is None or not ids:
            return {}
        return self.store.vectors(ids)

    def fused_ranks(self, lexical: dict[str, float], dense: dict[str, float], weight: float) -> dict[str, float]:
        """The ranking's view of every candidate: both signals relative to the candidates, weighted, and,
        when both ran, moved towards the ranks of the nearest fellow candidates (score.neighbourly)."""
        import numpy as np

        lexical_rank, dense_rank = scoring.relative(lexical, scoring.FUSION), scoring.relative(dense, scoring.FUSION)
        ids = sorted({*lexical, *dense})
        ranks = {i: weight * lexical_rank.get(i, 0.0) + (1 - weight) * dense_rank.get(i, 0.0) for i in ids}
        if not lexical or not dense or len(ids) < max(2, scoring.NEIGHBOUR_POOL) or scoring.NEIGHBOUR_WEIGHT <= 0:
            return ranks  # (no store read for a pool neighbourly would leave as it is)
        vectors = self.entry_vectors(ids)
        known = [i for i in ids if i in vectors]  # an entry not indexed yet keeps its own rank
        matrix = np.asarray([vectors[i] for i in known], dtype=np.float32)
        moved = scoring.neighbourly(np.asarray([ranks[i] for i in known]), scoring.nearest(matrix, scoring.NEIGHBOURS))
        ranks.update(zip(known, moved.tolist(), strict=True))
        return ranks

    def _id_of(self, key: tuple[str, int]) -> str:
        """The catalog's id for (prefix, number), whatever number of digits its file wrote it with."""
        if self._ids is None or self._ids[0] is not self.catalog.order:
            self._ids = (self.catalog.order, {k: i for i in self.catalog.order if (k := id_key(i)) is not None})
        return self._ids[1].get(key, "")

    def exact_matches(self, query: str, filters: Filters) -> set[str]:
        """Documents that hold a code-like query (a flag, an error string, a path) verbatim."""
        phrase = query.strip().strip("`\"'").lower()
        if len(phrase) < 3 or not _CODE_LIKE.search(query):
            return set()
        if self._texts is None or self._texts[0] is not self.catalog.order:
            self._texts = (self.catalog.order, [self.catalog.docs[i].text.lower() for i in self.catalog.order])
        order, texts = self._texts
        return {
            order[row]
            for row, text in enumerate(texts)
            if phrase in text and filters.accepts(self.catalog.docs[order[row]])
        }

    def signals(
        self,
        query: str,
        filters: Filters | None = None,
        mode: str = "hybrid",
        deadline: float | None = None,
        embedder: Embedder | None = None,
    ) -> Signals:
        """The raw evidence for `query` (its first QUERY_LIMIT characters: the callers that take a query from
        outside say when they cut one). Each ranking goes DEPTH deep; in hybrid mode every candidate of
        either ranking is then scored by both (no missing values).

        `deadline` (time.monotonic()) is the request's budget: past it, BudgetExceeded at the next step.
        `embedder` encodes the query in place of the searcher's own (one shared by several searches of a
        request): given per call, so that searches running at once never swap the searcher's."""

        filters = filters or Filters()
        found = Signals()
        query = query[:QUERY_LIMIT]
        if not query.strip():
            return found
        encoder = embedder if embedder is not None else self.embedder
        for key in id_keys_in(query):  # `t-1`, `@@T-0001` name T-001 too
            doc = self.catalog.docs.get(self._id_of(key))
            if doc is not None and filters.accepts(doc) and doc.id not in found.ids:
                found.ids.append(doc.id)
        cleaned = strip_framing(query) if STRIP_FRAMING else query
        lexical_all = None
        if mode in ("hybrid", "lexical"):
            within(deadline)
            lexical_all = self.lexical_scores(cleaned, filters)
            found.query_weight = self.lexical.query_weight(cleaned)
            found.lexical = {self.catalog.order[r]: float(lexical_all[r]) for r in self._top_rows(lexical_all)}
        if mode in ("hybrid", "dense") and encoder is not None:
            within(deadline)
            vector = encoder.encode([cleaned])[0]
            within(deadline)
            found.dense = self.dense_scores(vector, filters)
            if mode == "hybrid" and (self.store is not None or self.vectors is not None) and found.lexical is not None:
                missing = [doc_id for doc_id in found.lexical if doc_id not in found.dense]
                found.dense.update(self.stored_scores(vector, missing))
                if lexical_all is not None:
                    row = self.catalog.row
                    for doc_id in found.dense:
                        if doc_id not in found.lexical and doc_id in row and row[doc_id] < len(lexical_all):
                            found.lexical[doc_id] = float(lexical_all[row[doc_id]])
        if mode == "hybrid":
            within(deadline)
            found.exact = self.exact_matches(query, filters)
        return found

    def scored(self, found: Signals, limit: int | None = None) -> list[Hit]:
        """Every candidate (or the first `limit`), ranked (ids named first, verbatim holders next, then the
        fused relative signals) and scored on the fixed scale of index/score.py; ties broken by id."""
        lexical = found.lexical or {}
        dense = found.dense or {}
        both = found.lexical is not None and found.dense is not None
        weight = self.lexical_weight if both else (1.0 if found.lexical is not None else 0.0)
        fused = self.fused_ranks(lexical, dense, weight)
        candidates = []
        for doc_id in {*found.ids, *lexical, *dense, *found.exact}:
            doc = self.catalog.docs.get(doc_id)
            if doc is None or doc_id in self.hidden:
                continue
            rank = fused.get(doc_id, 0.0)
            if doc_id in found.exact:
                rank += 2.0
            if doc_id in found.ids:
                rank = 4.0 - 0.01 * found.ids.index(doc_id)
            candidates.append((rank, doc))
        candidates.sort(key=lambda item: (-item[0], item[1].id))
        hits: list[Hit] = []
        cap = 1.0
        for _rank, doc in candidates:  # a hit's score depends only on the hits above it
            if limit is not None and len(hits) >= limit:
                break
            lex = scoring.lexical_signal(lexical.get(doc.id, 0.0), found.query_weight)
            den = scoring.dense_signal(dense.get(doc.id, -1.0))
            score = scoring.fused_score(lex, den, weight)
            if doc.id in found.exact:
                score = scoring.exact_score(score)
            if doc.id in found.ids:
                score = scoring.ID_SCORE
            signals = {
                "id": doc.id in found.ids,
                "exact": doc.id in found.exact,
                "lexical": round(lex, 6) if found.lexical is not None else None,
                "dense": round(den, 6) if found.dense is not None else None,
            }
            if not scoring.carries_evidence(score, signals):
                # no hit: it must neither take a place of the k nor cap the score of a real hit below it
                # (a lexical 0.19 scored 0.00 under one of these, then left out)
                continue
            cap = min(cap, score)  # a score never rises down the list
            hits.append(Hit(round(cap, 6), signals, doc))
        return hits

    def search(
        self,
        query: str,
        k: int = 10,
        filters: Filters | None = None,
        mode: str = "hybrid",
        deadline: float | None = None,
        embedder: Embedder | None = None,
    ) -> list[Hit]:
        """The k best entries for `query` (none for an empty query), best first; `deadline` and `embedder`
        as for `signals`."""
        found = self.signals(query, filters, mode, deadline, embedder)
        within(deadline)
        return self.scored(found, k)


def within(deadline: float | None) -> None:
    """BudgetExceeded once `deadline` (time.monotonic()) has passed; nothing without one."""
    if deadline is not None and time.monotonic() > deadline:
        raise BudgetExceeded(
            f"the request took longer than its budget of {REQUEST_BUDGET:g} s and was stopped"
            " (docs/json.md#limits): ask again with a shorter query or fewer filters"
        )
