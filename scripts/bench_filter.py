"""Filtered queries at 100,000 entries: memsearch's route by selectivity against Chroma's `where`.

  python scripts/bench_filter.py [--size 100000] [--store DIR]

Vectors are random unit vectors (the cost of a filter does not depend on what the vectors mean), tagged
as memfiles tags entries. Building the store takes a few minutes; --store DIR keeps it for another run.
Every row reports p50/p95 over 40 queries, beside Chroma's own `where` for the same filter in the same run.
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--store", type=Path)
    args = parser.parse_args()
    root = args.store or Path(tempfile.mkdtemp(prefix="memfiles-bench-"))
    (root / "memory").mkdir(parents=True, exist_ok=True)
    settings = load_settings(root)
    catalog = catalog_of(args.size)
    rng = np.random.default_rng(0)
    with open_store(settings, "memfiles-bench-384") as store:
        if store.exists() and store.count() == args.size:
            print(f"reusing {args.size:,} vectors in {root}")
        else:
            store.reset()
            start = time.perf_counter()
            ids = catalog.order
            for offset in range(0, len(ids), 5000):
                chunk = ids[offset : offset + 5000]
                vectors = rng.standard_normal((len(chunk), 384)).astype(np.float32)
                store.upsert(chunk, vectors, ["t\n\nb"] * len(chunk), [catalog.docs[i].metadata("m") for i in chunk])
            print(f"built {args.size:,} vectors in {time.perf_counter() - start:.0f} s ({root})")
        searcher = Searcher(store, catalog, None)
        queries = rng.standard_normal((40, 384)).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        print(f"\n| filter ({args.size:,} entries) | rows kept | memsearch route p50 / p95 | Chroma where p50 / p95 |")
        print("|---|---|---|---|")
        p50, p95 = timed(lambda q: searcher.dense_scores(q, Filters()), queries)
        print(f"| none | {args.size:,} | {p50:.1f} / {p95:.1f} ms | (no where) |")
        for label, filters in [
            ("--area area7", Filters(area="area7")),
            ("--area area7 --status open", Filters(area="area7", status="open")),
            ("--kind lesson", Filters(kind="lesson")),
            ("--status resolved", Filters(status="resolved")),
            ("--path 'memory/f1*.md'", Filters(path="memory/f1*.md")),
            ("--since 2026-12-20 --kind fact", Filters(since="2026-12-20", kind="fact")),
        ]:
            kept = int(filters.mask(catalog).sum())
            ours = timed(lambda q, f=filters: searcher.dense_scores(q, f), queries)
            where = filters.where(catalog)
            theirs = timed(lambda q, w=where: store.query(q, 100, w), queries[:15])
            print(f"| {label} | {kept:,} | {ours[0]:.1f} / {ours[1]:.1f} ms | {theirs[0]:.1f} / {theirs[1]:.1f} ms |")


if __name__ == "__main__":
    main()
