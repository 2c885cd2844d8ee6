"""Filtered queries at 100,000 entries: memsearch's route (the vectors saved beside the catalog, exact,
index/vector_cache.py) against the product over every row and Chroma's own `where`.

  python scripts/bench_filter.py [--size 100000] [--store DIR] [--skip-chroma]

Vectors are random unit vectors (the cost of a filter does not depend on what the vectors mean), tagged
as memfiles tags entries. Building the Chroma store takes minutes; --store DIR keeps it for another run,
--skip-chroma leaves Chroma out. Every row reports p50/p95 over 40 queries; the baseline of the same run
is one unfiltered product over all rows (`matrix @ query` and a top-100 partition), the floor of an exact
dense search.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from memfiles.config import load_settings
from memfiles.index.catalog import Catalog, IndexDoc
from memfiles.index.chroma import open_store
from memfiles.index.search import Filters, Searcher
from memfiles.index.vector_cache import VectorCache

KINDS = ["decision", "friction", "lesson", "fact"]


def catalog_of(size: int) -> Catalog:
    return Catalog(
        {
            f"K-{n:06d}": IndexDoc(
                id=f"K-{n:06d}",
                text="t\n\nb",
                kind=KINDS[n % 4],
                area=f"area{n % 500}",
                status="open" if n % 3 else "resolved",
                path=f"memory/f{n % 50}.md",
                line=n,
                section="",
                date=f"2026-{1 + n % 12:02d}-{1 + n % 28:02d}",
                title="t",
                hash=str(n),
            )
            for n in range(size)
        }
    )


def timed(function, queries) -> tuple[float, float]:
    times = []
    for query in queries:
        start = time.perf_counter()
        function(query)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))]


def floor(matrix: np.ndarray, query: np.ndarray) -> None:
    scores = matrix @ query
    np.argpartition(-scores, 100)[:100]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--store", type=Path)
    parser.add_argument("--skip-chroma", action="store_true")
    args = parser.parse_args()
    catalog = catalog_of(args.size)
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((args.size, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    queries = rng.standard_normal((40, 384)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    cache = VectorCache(list(catalog.order), list(catalog.order), matrix)
    searcher = Searcher(None, catalog, None, vectors=cache)
    searcher.dense_scores(queries[0], Filters(area="area7"))  # the entry codes, computed once per catalog
    base = timed(lambda q: floor(matrix, q), queries)
    print(
        f"baseline (same run): one product over all {args.size:,} rows + top 100:"
        f" p50 {base[0]:.1f} / p95 {base[1]:.1f} ms"
    )
    filters_list = [
        ("none", Filters()),
        ("--area area7", Filters(area="area7")),
        ("--area area7 --status open", Filters(area="area7", status="open")),
        ("--kind lesson", Filters(kind="lesson")),
        ("--status resolved", Filters(status="resolved")),
        ("--path 'memory/f1*.md'", Filters(path="memory/f1*.md")),
        ("--since 2026-12-20 --kind fact", Filters(since="2026-12-20", kind="fact")),
    ]
    print(
        f"\n| filter ({args.size:,} entries) | rows kept | memsearch (vector cache) p50 / p95 | ratio to baseline p50 |"
    )
    print("|---|---|---|---|")
    for label, filters in filters_list:
        kept = int(filters.mask(catalog).sum())
        ours = timed(lambda q, f=filters: searcher.dense_scores(q, f), queries)
        print(f"| {label} | {kept:,} | {ours[0]:.1f} / {ours[1]:.1f} ms | {ours[0] / base[0]:.2f}x |", flush=True)
    if args.skip_chroma:
        return
    root = args.store or Path(tempfile.mkdtemp(prefix="memfiles-bench-"))
    (root / "memory").mkdir(parents=True, exist_ok=True)
    settings = load_settings(root)
    with open_store(settings, "memfiles-bench-384") as store:
        if store.exists() and store.count() == args.size:
            print(f"reusing {args.size:,} vectors in {root}")
        else:
            store.reset()
            start = time.perf_counter()
            ids = catalog.order
            for offset in range(0, len(ids), 5000):
                chunk = ids[offset : offset + 5000]
                rows = matrix[offset : offset + len(chunk)]
                store.upsert(chunk, rows, ["t\n\nb"] * len(chunk), [catalog.docs[i].metadata("m") for i in chunk])
            print(f"built {args.size:,} vectors in {time.perf_counter() - start:.0f} s ({root})")
        through_chroma = Searcher(store, catalog, None)
        print(
            f"\n| filter ({args.size:,} entries) | rows kept | Chroma route (no cache) p50 / p95 |"
            " Chroma where p50 / p95 |"
        )
        print("|---|---|---|---|")
        for label, filters in filters_list[1:]:
            kept = int(filters.mask(catalog).sum())
            route = timed(lambda q, f=filters: through_chroma.dense_scores(q, f), queries[:15])
            where = filters.where(catalog)
            theirs = timed(lambda q, w=where: store.query(q, 100, w), queries[:15])
            print(f"| {label} | {kept:,} | {route[0]:.1f} / {route[1]:.1f} ms | {theirs[0]:.1f} / {theirs[1]:.1f} ms |")


if __name__ == "__main__":
    main()
