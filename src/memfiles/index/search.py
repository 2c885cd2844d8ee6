"""Hybrid search: exact ids first, then BM25 and dense similarity fused by a convex combination of
min-max normalised scores, with a boost for documents holding a code-like query verbatim. see @@D-013
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from memfiles.format.ids import HIDDEN_KINDS, ID_RE
from memfiles.index.catalog import Catalog, IndexDoc
from memfiles.index.chroma import VectorStore
from memfiles.index.embedder import Embedder
from memfiles.index.lexical import LexicalIndex
from memfiles.index.text import strip_framing

if TYPE_CHECKING:
    import numpy as np

DEPTH = 100  # how deep each ranking goes before fusion: fusing only the top 10 loses relevant hits
LEXICAL_WEIGHT = 0.6  # the best MRR on SeaMonkey duplicate retrieval (scripts/eval_retrieval.py calibrate)
EXACT_BOOST = 1.0
BY_ID_LIMIT = 256  # a filter matching this few rows reads their vectors by id (7.6 ms for 200 at 100k)
BROAD_FRACTION = 0.1  # a filter matching this share of rows over-fetches an unfiltered query
ID_BOOST = 2.0
_CODE_LIKE = re.compile(r"[-_./:=`\"']|\w+\(")


@dataclass(frozen=True)
class Filters:
    """Restrictions that combine (AND); pushed down to Chroma as a `where` clause."""

    kind: str | None = None
    area: str | None = None
    status: str | None = None
    path: str | None = None  # a glob over paths relative to the root
    since: str | None = None  # YYYY-MM-DD
    # Kinds left out unless `kind` names one: run-scoped working memory is not a default search hit.
    hidden: tuple[str, ...] = HIDDEN_KINDS

    @property
    def hides(self) -> tuple[str, ...]:
        return tuple(self.hidden) if self.kind is None else ()

    def accepts(self, doc: IndexDoc) -> bool:
        return (
            (self.kind is None or doc.kind == self.kind)
            and doc.kind not in self.hides
            and (self.area is None or doc.area == self.area)
            and (self.status is None or doc.status == self.status)
            and (self.path is None or fnmatch.fnmatch(doc.path, self.path))
            and (self.since is None or doc.date_num >= int(self.since.replace("-", "")))
        )

    def where(self, catalog: Catalog) -> dict[str, Any] | None:
        clauses: list[dict[str, Any]] = []
        for key in ("kind", "area", "status"):
            if getattr(self, key) is not None:
                clauses.append({key: getattr(self, key)})
        if self.hides:
            clauses.append({"kind": {"$nin": list(self.hides)}})
        if self.path is not None:
            paths = sorted({d.path for d in catalog.docs.values() if fnmatch.fnmatch(d.path, self.path)})
            clauses.append({"path": {"$in": paths or ["\0none"]}})
        if self.since is not None:
            clauses.append({"date_num": {"$gte": int(self.since.replace("-", ""))}})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def mask(self, catalog: Catalog) -> np.ndarray:
        """Which catalog rows pass, computed on columns (no Python loop over the rows)."""
        import numpy as np

        keep = np.ones(len(catalog.order), dtype=bool)
        for key in ("kind", "area", "status"):
            wanted = getattr(self, key)
            if wanted is not None:
                codes, values = catalog.column(key)
                keep &= codes == (values.index(wanted) if wanted in values else -1)
        if self.hides:
            codes, values = catalog.column("kind")
            hidden = [n for n, value in enumerate(values) if value in self.hides]
            if hidden:
                keep &= ~np.isin(codes, hidden)
        if self.path is not None:
            codes, values = catalog.column("path")
            matching = [n for n, value in enumerate(values) if fnmatch.fnmatch(value, self.path)]
            keep &= np.isin(codes, matching)
        if self.since is not None:
            codes, values = catalog.column("date_num")
            keep &= np.asarray(values)[codes] >= int(self.since.replace("-", ""))
        return keep

    @property
    def active(self) -> bool:
        keys = ("kind", "area", "status", "path", "since")
        return bool(self.hides) or any(getattr(self, key) is not None for key in keys)


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    title: str
    kind: str
    area: str
    status: str
    date: str
    path: str
    line: int
    section: str
    text: str

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def snippet(self, query: str, width: int = 160) -> str:
        body = " ".join(self.text.split("\n\n", 1)[-1].split())
        words = [w for w in re.findall(r"\w[\w-]+", query.lower()) if len(w) > 2]
        at = min((body.lower().find(w) for w in words if w in body.lower()), default=0)
        start = max(0, at - width // 3)
        piece = body[start : start + width]
        return ("…" if start else "") + piece + ("…" if start + width < len(body) else "")


def _normalise(scores: dict[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    span = high - low
    return {key: (value - low) / span if span > 0 else 1.0 for key, value in scores.items()}


class Searcher:
    """Answers queries against one open store and its catalog; the embedder is loaded on first need."""

    def __init__(
        self,
        store: VectorStore | None,
        catalog: Catalog,
        embedder: Embedder | None,
        lexical_weight: float = LEXICAL_WEIGHT,
    ) -> None:
        self.lexical_weight = lexical_weight
        self.store = store
        self.catalog = catalog
        self.embedder = embedder
        self._lexical: LexicalIndex | None = None
        self._texts: list[str] | None = None

    @property
    def lexical(self) -> LexicalIndex:
        if self._lexical is None:
            try:
                self._lexical = LexicalIndex.load(self.store.sidecar) if self.store else None
            except (OSError, ValueError, KeyError):
                self._lexical = None
            if self._lexical is None or set(self._lexical.ids) != set(self.catalog.docs):
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

    def _top_rows(self, scores: np.ndarray, depth: int = DEPTH) -> list[int]:
        import numpy as np

        rows = np.argpartition(-scores, depth)[:depth] if len(scores) > depth else np.arange(len(scores))
        return [int(r) for r in rows if scores[r] > 0]

    def dense_scores(self, vector: np.ndarray, filters: Filters, depth: int = DEPTH) -> dict[str, float]:
        """Cosine similarity of the `depth` nearest entries that pass `filters`.

        Chroma's `where` costs ~130 ms at 100,000 entries however few rows match, so a filter is served
        by the cheapest exact route its selectivity allows (see @@D-015): few matching rows, their
        vectors by id; a broad filter, an over-fetched unfiltered query cut by the mask; else `where`.
        """
        import numpy as np

        if self.store is None or not self.catalog.docs:
            return {}
        total = len(self.catalog.order)
        if not filters.active:
            return dict(self.store.query(vector, min(depth, total)))
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
        return dict(self.store.query(vector, wanted, filters.where(self.catalog)))

    def exact_matches(self, query: str, filters: Filters, lexical: dict[str, float]) -> dict[str, float]:
        """Documents that hold a code-like query (a flag, an error string, a path) verbatim."""
        phrase = query.strip().strip("`\"'").lower()
        if len(phrase) < 3 or not _CODE_LIKE.search(query):
            return {}
        if self._texts is None:
            self._texts = [self.catalog.docs[i].text.lower() for i in self.catalog.order]
        found = {}
        for row, text in enumerate(self._texts):
            if phrase in text:
                doc_id = self.catalog.order[row]
                if filters.accepts(self.catalog.docs[doc_id]):
                    found[doc_id] = 1.0 + lexical.get(doc_id, 0.0) * 1e-6
        return found

    def search(self, query: str, k: int = 10, filters: Filters | None = None, mode: str = "hybrid") -> list[Hit]:
        """The k best entries for `query`. Each ranking goes DEPTH deep; in hybrid mode every candidate of
        either ranking is then scored by both (no missing values), min-max normalised, and combined."""
        import numpy as np

        filters = filters or Filters()
        fused: dict[str, float] = {}
        for match in ID_RE.finditer(query):
            doc = self.catalog.docs.get(match.group(0))
            if doc is not None and filters.accepts(doc):
                fused[doc.id] = ID_BOOST + 1.0 - 0.01 * len(fused)
        cleaned = strip_framing(query)
        lexical_all = self.lexical_scores(cleaned, filters) if mode in ("hybrid", "lexical") else None
        lexical = (
            {self.catalog.order[r]: float(lexical_all[r]) for r in self._top_rows(lexical_all)}
            if lexical_all is not None
            else {}
        )
        dense: dict[str, float] = {}
        if mode in ("hybrid", "dense") and self.embedder is not None:
            vector = self.embedder.encode([cleaned])[0]
            dense = self.dense_scores(vector, filters)
            if mode == "hybrid" and self.store is not None:
                missing = [doc_id for doc_id in lexical if doc_id not in dense]
                for doc_id, stored in self.store.vectors(missing).items():
                    dense[doc_id] = float(np.dot(np.asarray(stored, dtype=np.float32), vector))
                for doc_id in dense:
                    if doc_id not in lexical and lexical_all is not None:
                        lexical[doc_id] = float(lexical_all[self.catalog.row[doc_id]])
        weight = {"hybrid": self.lexical_weight, "lexical": 1.0, "dense": 0.0}[mode]
        for doc_id, value in _normalise(lexical).items():
            fused[doc_id] = fused.get(doc_id, 0.0) + weight * value
        for doc_id, value in _normalise(dense).items():
            fused[doc_id] = fused.get(doc_id, 0.0) + (1 - weight) * value
        if mode == "hybrid":
            for doc_id, value in self.exact_matches(query, filters, lexical).items():
                fused[doc_id] = fused.get(doc_id, 0.0) + EXACT_BOOST * value
        ranked = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]
        return [self._hit(doc_id, score) for doc_id, score in ranked]

    def _hit(self, doc_id: str, score: float) -> Hit:
        d = self.catalog.docs[doc_id]
        return Hit(d.id, round(score, 6), d.title, d.kind, d.area, d.status, d.date, d.path, d.line, d.section, d.text)
