"""Filtered dense search takes a route by selectivity; every route must give the exact filtered top."""

from __future__ import annotations

import numpy as np
import pytest

from memfiles.config import load_settings
from memfiles.index.catalog import Catalog, IndexDoc
from memfiles.index.chroma import open_store
from memfiles.index.search import Filters, Searcher

pytestmark = pytest.mark.integration

N = 3000


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("filtered")
    (root / "memory").mkdir()
    settings = load_settings(root)
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((N, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    kinds = ["decision", "friction", "lesson", "fact"]
    docs = {
        f"K-{n:04d}": IndexDoc(
            id=f"K-{n:04d}",
            text=f"t{n}\n\nb",
            kind=kinds[n % 4],
            area=f"a{n % 100}",
            status="open" if n % 3 else "resolved",
            path=f"memory/f{n % 10}.md",
            line=n,
            section="",
            date=f"2026-{1 + n % 12:02d}-01",
            title=f"t{n}",
            hash=str(n),
        )
        for n in range(N)
    }
    with open_store(settings, "memfiles-test-32") as store:
        ids = list(docs)
        store.upsert(ids, vectors, [docs[i].text for i in ids], [docs[i].metadata("m") for i in ids])
        yield store, Catalog(docs), vectors


class TestRoutes:
    @pytest.mark.parametrize(
        "filters",
        [
            Filters(area="a7"),  # 30 rows: vectors by id
            Filters(kind="lesson"),  # 25%: over-fetched unfiltered query
            Filters(kind="lesson", area="a2"),  # no row
            Filters(area="a7", status="open"),  # 20 rows
            Filters(path="memory/f[1-3].md", status="resolved"),  # 10%: boundary
            Filters(since="2026-12-01", kind="fact"),  # 2.7%: Chroma where
            Filters(area=" A7"),  # an area in another case, spaced: the same 30 rows, as `list --area` finds them
            Filters(since="2026-12-01", area=("A3", "a7", "A11")),  # ... and pushed down to Chroma
        ],
    )
    def test_each_route_returns_the_exact_filtered_top(self, indexed, filters: Filters) -> None:
        """The ids and scores equal a brute-force search over exactly the rows the filter keeps."""
        store, catalog, vectors = indexed
        searcher = Searcher(store, catalog, None)
        query = vectors[11] * 0.5 + vectors[42] * 0.5
        query /= np.linalg.norm(query)
        got = searcher.dense_scores(query, filters, depth=20)
        keep = [n for n, doc_id in enumerate(catalog.order) if filters.accepts(catalog.docs[doc_id])]
        assert filters.mask(catalog).sum() == len(keep)
        exact = sorted(((catalog.order[n], float(vectors[n] @ query)) for n in keep), key=lambda x: -x[1])[:20]
        assert [doc_id for doc_id, _ in exact] == list(got)
        assert np.allclose([s for _, s in exact], list(got.values()), atol=1e-4)
        if filters.area is not None:  # the case of an area does not matter, on any route
            lower = Filters(**{**filters.as_json(), "area": [a.strip().lower() for a in filters.area]})
            assert list(searcher.dense_scores(query, lower, depth=20)) == list(got) and keep
            assert filters.where(catalog) == lower.where(catalog)


def test_a_candidate_without_evidence_neither_caps_nor_takes_a_place() -> None:
    """The ranking can put a candidate with no evidence (no query word, a cosine under the unrelated
    level) above one with a real lexical signal; the score cap then brought that one to 0.00 (and the
    first was dropped as no hit afterwards), or it took one of the k places. It is skipped before both."""
    from memfiles.index.search import Signals

    def doc(entry_id: str) -> IndexDoc:
        return IndexDoc(entry_id, "text", "decision", "a", "open", "memory/d.md", 1, "", "2026-01-01", "t", "h")

    catalog = Catalog({"D-001": doc("D-001"), "D-002": doc("D-002")})
    searcher = Searcher(None, catalog, None, lexical_weight=0.4)
    found = Signals(lexical={"D-002": 2.0}, dense={"D-001": 0.15, "D-002": 0.10}, query_weight=4.0)
    hits = searcher.scored(found, limit=1)
    assert [hit.doc.id for hit in hits] == ["D-002"]
    assert hits[0].score > 0.1 and hits[0].signals["lexical"] > 0.1
