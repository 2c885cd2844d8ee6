"""Benchmark of the semantic index: backfill throughput, query latency, memory.

  python scripts/bench_index.py [--sizes 1000,10000] [--json-out PATH]

Every figure comes with a baseline measured in the same run: raw `model.encode` throughput (the
limit for a cold backfill), `grep -ril` over the memory folder (the floor for a lexical lookup), and
a bare `python -c pass`. Entries are CACM titles and abstracts (cycled to reach the size), read from
../shared/data; nothing is copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from eval_retrieval import CONFIG, DATA, as_body, read_jsonl

BIN = Path(sys.executable).parent
# Figures by corpus size, written by --json-out for notebooks/benchmarks.ipynb.
RESULTS: dict[int, dict[str, float]] = {}


def measured(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(seconds, peak RSS in MB, stdout) of one command, from wait4's resource usage."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        _pid, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{command} failed: {err.read().decode()}")
        return seconds, usage.ru_maxrss / 1024, out.read().decode()


def percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def texts(count: int) -> list[tuple[str, str]]:
    corpus = read_jsonl(DATA / "cacm" / "corpus.jsonl")
    out = []
    for n in range(count):
        doc = corpus[n % len(corpus)]
        suffix = f" (variant {n // len(corpus)})" if n >= len(corpus) else ""
        title = " ".join(doc["title"].split())[:250] or f"Untitled {doc['_id']}"
        out.append((title + suffix, as_body(doc["text"]) or title))
    return out


def build(folder: Path, items: list[tuple[str, str]]) -> None:
    (folder / "memory").mkdir()
    (folder / "memory" / "memfiles.toml").write_text(CONFIG)
    ops = [
        {"op": "add", "kind": "fact", "area": f"area{n % 20}", "title": t, "body": b, "file": f"memory/part{n % 10}.md"}
        for n, (t, b) in enumerate(items)
    ]
    (folder / "ops.json").write_text(json.dumps({"ops": ops}))
    measured([str(BIN / "memfiles"), "--root", str(folder), "import", str(folder / "ops.json")])


def encode_baseline(items: list[tuple[str, str]]) -> float:
    """Texts per second of a bare model.encode in a warm process: the ceiling for embedding."""
    from memfiles.index.embedder import load_embedder

    model = load_embedder(None, light=False)
    model.encode(["warm up"])
    start = time.perf_counter()
    model.encode([f"{t}\n\n{b}" for t, b in items], batch_size=64)
    return len(items) / (time.perf_counter() - start)


def bench(size: int) -> list[str]:
    rows = []
    items = texts(size)
    queries = [q["text"] for q in read_jsonl(DATA / "cacm" / "queries.jsonl")][:40]
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        build(folder, items)
        env = {**os.environ, "MEMFILES_ROOT": str(folder)}
        cold, cold_rss, _ = measured([str(BIN / "memfiles"), "backfill"], env)
        again, _, _ = measured([str(BIN / "memfiles"), "backfill"], env)
        limit = encode_baseline(items)
        RESULTS[size] = {"backfill_s": cold, "backfill_rate": size / cold, "encode_rate": limit}
        rows.append(
            f"| backfill {size:,}, cold | {cold:.1f} s | {size / cold:,.0f} entries/s | "
            f"bare model.encode: {limit:,.0f} texts/s | {size / cold / limit:.2f}x | {cold_rss:,.0f} MB |"
        )
        rows.append(f"| backfill {size:,}, no change | {again:.2f} s | {size / again:,.0f} entries/s | | | |")

        from memfiles.config import load_settings
        from memfiles.index.search import Filters, Searcher
        from memfiles.services.index_session import open_index

        with open_index(load_settings(folder)) as session:
            searcher = Searcher(session.store, session.catalog, session.embedder)
            searcher.search("warm up")
            timings = []
            for query in queries:
                start = time.perf_counter()
                searcher.search(query, 10)
                timings.append((time.perf_counter() - start) * 1000)
            p50, p95 = percentiles(timings)
            rows.append(f"| query {size:,}, in-process (warm) | p50 {p50:.1f} ms | p95 {p95:.1f} ms | | | |")
            RESULTS[size].update(warm_p50_ms=p50, warm_p95_ms=p95)
            timings = []
            for query in queries[:20]:
                start = time.perf_counter()
                searcher.search(query, 10, Filters(area="area3"))
                timings.append((time.perf_counter() - start) * 1000)
            p50, p95 = percentiles(timings)
            rows.append(f"| query {size:,}, in-process, --area filter | p50 {p50:.1f} ms | p95 {p95:.1f} ms | | | |")
        cli, grep, bare, rss = [], [], [], 0.0
        for query in queries[:10]:
            seconds, peak, _ = measured([str(BIN / "memsearch"), query], env)
            cli.append(seconds)
            rss = max(rss, peak)
            word = max(query.split(), key=len).strip("?,.()")
            start = time.perf_counter()
            subprocess.run(["grep", "-ril", word, str(folder / "memory")], capture_output=True, check=False)
            grep.append(time.perf_counter() - start)
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            bare.append(time.perf_counter() - start)
        c50, c95 = percentiles(cli)
        g50, _ = percentiles(grep)
        b50, _ = percentiles(bare)
        RESULTS[size].update(cold_p50_ms=c50 * 1000, cold_p95_ms=c95 * 1000, grep_ms=g50 * 1000, bare_ms=b50 * 1000)
        rows.append(
            f"| memsearch {size:,}, cold CLI | p50 {c50:.2f} s | p95 {c95:.2f} s | grep -ril: {g50 * 1000:.0f} ms,"
            f" python -c pass: {b50 * 1000:.0f} ms | {c50 / g50:.0f}x grep | {rss:,.0f} MB |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--json-out", type=Path, help="also write the figures by size as JSON here")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| what | time | rate | baseline (same run) | ratio | peak RSS |")
    print("|---|---|---|---|---|---|")
    for size in sizes:
        for row in bench(size):
            print(row, flush=True)
        if args.json_out:  # after each size: a run cut short keeps what it measured
            document = {"script": "bench_index", "command": " ".join(sys.argv), "sizes": RESULTS}
            args.json_out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
