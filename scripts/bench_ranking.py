"""What the ranking itself costs a query, in process: every CACM query through `Searcher.signals` and
`Searcher.scored` on the evaluation's backfilled CACM project, query vectors encoded beforehand (the
model's time is not the ranking's). Rows: the shipped ranking; the same without score regularisation
(the baseline of the same run); and deeper candidate pools, which the rule would pick without the
latency budget (docs/retrieval.md).

  python scripts/bench_ranking.py [--runs 5]

Needs the backfilled CACM project that `python scripts/eval_retrieval.py loco` leaves in its cache.
Rows are interleaved run by run; each figure is the median over runs of the mean time a query.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_retrieval import DATA, cache_folder, read_jsonl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    folder = cache_folder("cacm")
    if not (folder / "ready.json").exists():
        print(f"no backfilled CACM project in {folder}: run `eval_retrieval.py loco` first", file=sys.stderr)
        sys.exit(2)
    from memfiles.config import load_settings
    from memfiles.index import score, search
    from memfiles.services.indexing.index_session import open_index

    queries = [q["text"] for q in read_jsonl(DATA / "cacm" / "queries.jsonl")]
    shipped = (search.DEPTH, score.FUSION, score.NEIGHBOURS, score.NEIGHBOUR_WEIGHT)
    rows = {
        f"shipped: depth {shipped[0]}, {shipped[1]}, {shipped[2]} neighbours x {shipped[3]:g}": shipped,
        f"baseline: the same, no neighbours (depth {shipped[0]})": (shipped[0], shipped[1], shipped[2], 0.0),
        f"depth 100, z-score, 5 neighbours x {shipped[3]:g}": (100, "zscore", 5, shipped[3]),
        f"depth 200, z-score, 5 neighbours x {shipped[3]:g}": (200, "zscore", 5, shipped[3]),
    }
    times: dict[str, list[float]] = {label: [] for label in rows}
    with open_index(load_settings(folder)) as session:
        searcher = session.searcher()
        vectors = dict(zip(queries, session.embedder.encode(queries), strict=True))

        class Encoded:  # the ranking's time only: the query vectors are already known
            def encode(self, texts: list[str]):
                return [vectors[texts[0]]]

        searcher.embedder = Encoded()  # type: ignore[assignment]
        try:
            for _ in range(args.runs + 1):  # the first round warms the caches and is not counted
                for label, (depth, fusion, neighbours, weight) in rows.items():
                    search.DEPTH, score.FUSION, score.NEIGHBOURS, score.NEIGHBOUR_WEIGHT = (
                        depth,
                        fusion,
                        neighbours,
                        weight,
                    )
                    start = time.perf_counter()
                    for query in queries:
                        searcher.scored(searcher.signals(query), 10)
                    times[label].append((time.perf_counter() - start) / len(queries))
        finally:
            search.DEPTH, score.FUSION, score.NEIGHBOURS, score.NEIGHBOUR_WEIGHT = shipped
    base = statistics.median(times[list(rows)[1]][1:])
    print(f"{len(queries)} CACM queries ({len(session.catalog.order):,} entries), median of {args.runs} runs\n")
    print("| ranking | ms a query | ratio to the baseline |")
    print("|---|---|---|")
    for label, values in times.items():
        value = statistics.median(values[1:])
        print(f"| {label} | {value * 1000:.2f} | {value / base:.2f}x |")


if __name__ == "__main__":
    main()
