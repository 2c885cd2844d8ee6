"""Benchmark of the semantic index: backfill throughput, query latency, memory.

  python scripts/bench_index.py [--sizes 1000,3204,10000] [--runs 5] [--backfill-runs 3] [--json-out PATH]

Every figure comes with a baseline measured in the same run: sentence-transformers' bare `model.encode`
of the same texts in a warm process (the limit for a cold backfill), `python -c 'import numpy'` for a
cold memsearch with no watcher, and `python -c pass` for a memsearch answered by a running watcher
(each timed interleaved with the command it is the baseline of, median of --runs; a cold backfill, median
of --backfill-runs up to 3,204 entries and one run above; each cold backfill runs once with the default
bulk_precision, bfloat16 on a CPU with AMX, and once in float32, against the same float32 baseline).
Entries are CACM
titles and abstracts (cycled to reach the size, with a variant suffix), read from
../shared/data; nothing is copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_common import compile_memfiles, warm_watcher
from eval_retrieval import CONFIG, DATA, as_body, printable, read_jsonl

BIN = Path(sys.executable).parent


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
        title = " ".join(printable(doc["title"]).split())[:250] or f"Untitled {doc['_id']}"
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


class EncodeBaseline:
    """sentence-transformers' bare model.encode of the same texts in a warm process (model loaded, one
    warm-up call): the ceiling the issue sets for a cold backfill, which pays its imports and load too."""

    def __init__(self, items: list[tuple[str, str]]) -> None:
        from memfiles.index.embedder import SentenceTransformerEmbedder, resolve_model

        self.model = SentenceTransformerEmbedder(*resolve_model(None)).model
        self.model.encode(["warm up"])
        self.texts = [f"{t}\n\n{b}" for t, b in items]

    def seconds(self) -> float:
        from memfiles.index.embedder import EMBED_BATCH

        start = time.perf_counter()
        # at the batch size memfiles encodes with (index/sync.py): like with like (--encode-batches compares sizes)
        self.model.encode(self.texts, batch_size=EMBED_BATCH, normalize_embeddings=True)
        return time.perf_counter() - start


def encode_batches(items: list[tuple[str, str]], sizes: list[int]) -> None:
    """Seconds of a bare encode of the same texts at each batch size, by sentence-transformers and by
    memfiles' torch recipe (index/bert_torch.py), warm; what index/embedder.py's EMBED_BATCH was chosen on."""
    from memfiles.index.bert_torch import TorchBertEmbedder
    from memfiles.index.embedder import SentenceTransformerEmbedder, resolve_model

    texts = [f"{t}\n\n{b}" for t, b in items]
    model = SentenceTransformerEmbedder(*resolve_model(None)).model
    recipe = TorchBertEmbedder(*resolve_model(None))
    model.encode(["warm up"])
    recipe.encode(["warm up"])
    lengths = [len(e.ids) for e in recipe.tokenizer.encode_batch(texts)]
    by_chars = sorted(range(len(texts)), key=lambda n: len(texts[n]))  # sentence-transformers' order
    by_tokens = sorted(range(len(texts)), key=lambda n: lengths[n])  # memfiles' order

    def padded(order: list[int], size: int) -> float:
        """Positions the batches pad to, per word piece of the texts."""
        cut = [order[n : n + size] for n in range(0, len(order), size)]
        return sum(len(batch) * max(lengths[n] for n in batch) for batch in cut) / sum(lengths)

    print(
        f"| batch size | sentence-transformers encode of {len(texts):,} texts | memfiles' torch recipe |"
        " padding, by characters | padding, by tokens |"
    )
    print("|---|---|---|---|---|")
    for size in sizes:
        start = time.perf_counter()
        model.encode(texts, batch_size=size, normalize_embeddings=True)
        middle = time.perf_counter()
        recipe.encode(texts, batch_size=size)
        print(
            f"| {size} | {middle - start:.1f} s | {time.perf_counter() - middle:.1f} s |"
            f" {padded(by_chars, size):.2f}x | {padded(by_tokens, size):.2f}x |",
            flush=True,
        )


def interleaved(commands: dict[str, list[str]], env: dict[str, str], runs: int) -> dict[str, float]:
    """Median seconds of each command, the commands taking turns so that load hits them alike."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            start = time.perf_counter()
            subprocess.run(command, env=env, capture_output=True, check=True)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


# Figures by corpus size, written by --json-out for notebooks/benchmarks.ipynb.
RESULTS: dict[int, dict[str, float]] = {}


def bench(size: int, runs: int, backfill_runs: int) -> list[str]:
    rows = []
    items = texts(size)
    queries = [q["text"] for q in read_jsonl(DATA / "cacm" / "queries.jsonl")][:40]
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        build(folder, items)
        env = {**os.environ, "MEMFILES_ROOT": str(folder), "MEMFILES_SEARCH_WATCH": "0"}
        from memfiles.config import load_settings

        # Cold backfills (the index deleted before each) taking turns with the bare encode: medians.
        baseline = EncodeBaseline(items)
        colds, floats, limits, peaks = [], [], [], []
        float32 = {**env, "MEMFILES_BULK_PRECISION": "float32"}
        for _ in range(backfill_runs):
            shutil.rmtree(load_settings(folder).index_dir, ignore_errors=True)
            cold, cold_rss, _ = measured([str(BIN / "memfiles"), "backfill"], env)
            colds.append(cold)
            peaks.append(cold_rss)
            limits.append(baseline.seconds())
            # the same in float32 (bulk_precision = "float32"): what a CPU without AMX gets
            shutil.rmtree(load_settings(folder).index_dir, ignore_errors=True)
            floats.append(measured([str(BIN / "memfiles"), "backfill"], float32)[0])
        del baseline
        cold, encode = statistics.median(colds), statistics.median(limits)
        in_float32 = statistics.median(floats)
        limit = size / encode
        RESULTS[size] = {"backfill_s": cold, "backfill_rate": size / cold, "encode_rate": limit}
        again, _, _ = measured([str(BIN / "memfiles"), "backfill"], env)
        spread = f" ({min(colds):.1f}-{max(colds):.1f})" if len(colds) > 1 else ""
        rows.append(
            f"| backfill {size:,}, cold, median of {len(colds)} | {cold:.1f} s{spread} | {size / cold:,.0f} entries/s"
            f" | bare model.encode: {limit:,.1f} texts/s ({encode:.1f} s, {min(limits):.1f}-{max(limits):.1f})"
            f" | {encode / cold:.2f}x | {max(peaks):,.0f} MB |"
        )
        rows.append(
            f"| backfill {size:,}, cold, bulk_precision float32, median of {len(floats)} | {in_float32:.1f} s"
            f" ({min(floats):.1f}-{max(floats):.1f}) | {size / in_float32:,.0f} entries/s | the same encode"
            f" | {encode / in_float32:.2f}x | |"
        )
        RESULTS[size]["backfill_float32_s"] = in_float32
        rows.append(f"| backfill {size:,}, no change | {again:.2f} s | {size / again:,.0f} entries/s | | | |")

        from memfiles.config import load_settings
        from memfiles.index.search import Filters
        from memfiles.services.indexing.index_session import open_reader

        with open_reader(load_settings(folder)) as reader:
            searcher = reader.searcher()
            searcher.search("warm up")
            for label, filters in (("", Filters()), (", --area filter", Filters(area="area3"))):
                timings = []
                for query in queries[:20]:
                    start = time.perf_counter()
                    searcher.search(query, 10, filters)
                    timings.append((time.perf_counter() - start) * 1000)
                p50, p95 = percentiles(timings)
                rows.append(f"| query {size:,}, in-process (warm){label} | p50 {p50:.1f} ms | p95 {p95:.1f} ms | | | |")
                if not label:
                    RESULTS[size].update(warm_p50_ms=p50, warm_p95_ms=p95)
        query = queries[0]
        cold_cli = interleaved(
            {"memsearch": [str(BIN / "memsearch"), query], "numpy": [sys.executable, "-c", "import numpy"]},
            env,
            runs,
        )
        rows.append(
            f"| memsearch {size:,}, no watcher | p50 {cold_cli['memsearch']:.2f} s | |"
            f" python -c 'import numpy': {cold_cli['numpy']:.2f} s |"
            f" {cold_cli['memsearch'] / cold_cli['numpy']:.1f}x | |"
        )
        RESULTS[size].update(cold_p50_ms=cold_cli["memsearch"] * 1000, numpy_ms=cold_cli["numpy"] * 1000)
        subprocess.run([str(BIN / "memfiles"), "watch"], env=env, capture_output=True, check=True)
        try:
            warm_watcher(folder, [str(BIN / "memsearch"), query])  # steady state: its torch encoder loaded
            warm = interleaved(
                {"memsearch": [str(BIN / "memsearch"), query], "pass": [sys.executable, "-c", "pass"]}, env, runs
            )
        finally:
            subprocess.run([str(BIN / "memfiles"), "watch", "--stop"], env=env, capture_output=True, check=False)
        RESULTS[size].update(watched_p50_ms=warm["memsearch"] * 1000, bare_ms=warm["pass"] * 1000)
        rows.append(
            f"| memsearch {size:,}, watcher running | p50 {warm['memsearch'] * 1000:.0f} ms | |"
            f" python -c pass: {warm['pass'] * 1000:.0f} ms | {warm['memsearch'] / warm['pass']:.1f}x | |"
        )
        rows += add_rows(folder, env, size, runs)
    return rows


def stop_watcher(said: str, env: dict[str, str]) -> None:
    """Stop the watcher an add said it started, and wait until it is gone: `watch --stop` right after the
    add can come before the watcher has registered, which left it running into the next timed command."""
    import re
    import signal

    subprocess.run([str(BIN / "memfiles"), "watch", "--stop"], env=env, capture_output=True)
    started = re.search(r"started a watcher in the background \(pid (\d+)\)", said)
    if started is None:
        return
    pid = int(started.group(1))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        time.sleep(0.1)


def add_rows(folder: Path, env: dict[str, str], size: int, runs: int) -> list[str]:
    """`memfiles add` with the index and no watcher, against `add` in a copy of the same memory with no
    index (the baseline), taking turns: with search_watch on (the default: the add leaves a watcher,
    stopped after each run) and off (the store updated in the command)."""
    import shutil

    bare = folder.parent / f"{folder.name}-no-index"
    shutil.copytree(folder / "memory", bare / "memory")
    times: dict[str, list[float]] = {"no index": [], "watch on": [], "watch off": []}
    roots = {"no index": bare, "watch on": folder, "watch off": folder}
    try:
        for n in range(runs):
            for name, root in roots.items():
                run_env = {
                    **env,
                    "MEMFILES_ROOT": str(root),
                    "MEMFILES_SEARCH_WATCH": "1" if name == "watch on" else "0",
                }
                title = f"Benchmark entry {n} added {name} about cold paths"
                command = [str(BIN / "memfiles"), "add", "-k", "fact", "-t", title, "-a", "bench", "--body", title]
                start = time.perf_counter()
                done = subprocess.run(command, env=run_env, capture_output=True, check=True, text=True)
                times[name].append(time.perf_counter() - start)
                if name == "watch on":
                    stop_watcher(done.stderr, run_env)
    finally:
        shutil.rmtree(bare, ignore_errors=True)
    base = statistics.median(times["no index"])
    RESULTS[size].update(add_no_index_ms=base * 1000)
    rows = []
    for name, label in (("watch on", "search_watch on (leaves a watcher)"), ("watch off", "search_watch off")):
        seconds = statistics.median(times[name])
        RESULTS[size][f"add_{name.replace(' ', '_')}_ms"] = seconds * 1000
        rows.append(
            f"| add {size:,}, index, no watcher, {label} | p50 {seconds:.2f} s | |"
            f" add with no index: {base:.2f} s | {seconds / base:.1f}x | |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,3204,10000")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--backfill-runs", type=int, default=3, help="cold backfills per size up to 3,204 entries (one above)"
    )
    parser.add_argument("--json-out", type=Path, help="also write the figures by size as JSON here")
    parser.add_argument(
        "--encode-batches", help="only time a bare encode of --sizes' first size at these batch sizes (16,32,64)"
    )
    args = parser.parse_args()
    if args.encode_batches:
        encode_batches(texts(int(args.sizes.split(",")[0])), [int(n) for n in args.encode_batches.split(",")])
        return
    compile_memfiles()  # measured as installed (scripts/bench_common.py)
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| what | time | rate | baseline (same run) | ratio | peak RSS |")
    print("|---|---|---|---|---|---|")
    for size in sizes:
        for row in bench(size, args.runs, max(1, args.backfill_runs) if size <= 3204 else 1):
            print(row, flush=True)
        if args.json_out:  # after each size: a run cut short keeps what it measured
            document = {"script": "bench_index", "command": " ".join(sys.argv), "sizes": RESULTS}
            args.json_out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
