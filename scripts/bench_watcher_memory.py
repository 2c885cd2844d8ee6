"""How big a watcher stays: its resident memory as a search leaves it, after ten queries (issue 34).

  python scripts/bench_watcher_memory.py [--sizes 1000,20000] [--queries 10] [--keep DIR] [--json-out PATH]

For each size, a project of CACM titles and abstracts (cycled to the size, read from ../shared/data) is
indexed with `memfiles backfill` (the bulk encoder runs in a child process of its own), then:

1. `memsearch` with no watcher running leaves one behind (search_watch, as a new user meets it);
2. once it answers, `--queries` CACM queries go through `memsearch` (the thin client, as a person types
   them), one after another;
3. the watcher's resident set (VmRSS) and its peak (VmHWM) are read from /proc, and whether torch was
   ever loaded in it (its shared objects in /proc/PID/maps).

The goal: at most 250 MB after ten queries at 1,000 entries. The figure is the process's own; the
model file is a memory map shared with every process that reads it, counted here once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_common import compile_memfiles
from bench_index import build, texts
from eval_retrieval import DATA, read_jsonl

BIN = Path(sys.executable).parent
GOAL_MB = 250


def proc_status(pid: int) -> dict[str, float]:
    """VmRSS, VmHWM, RssAnon (its own memory) and RssFile (mapped files: the model's pages, libraries,
    shared with other processes) of `pid`, in MB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            found[key] = int(value.split()[0]) / 1024
    return found


def measure(root: Path, queries: list[str], count: int) -> dict[str, Any]:
    env = {**os.environ, "MEMFILES_SEARCH_WATCH": "1", "MEMFILES_ROOT": str(root)}
    first = subprocess.run([str(BIN / "memsearch"), queries[0]], env=env, capture_output=True, text=True, check=True)
    assert "started a watcher" in first.stderr, first.stderr
    pid_file = root / ".memsearch" / "watch.pid"
    deadline = time.monotonic() + 3600
    while time.monotonic() < deadline:  # it catches up with the files before it answers
        done = subprocess.run([str(BIN / "memfiles"), "status", "--json"], env=env, capture_output=True, text=True)
        if done.returncode == 0 and json.loads(done.stdout)["watcher"]["running"]:
            break
        time.sleep(1)
    pid = int(pid_file.read_text())
    idle = proc_status(pid)
    for query in queries[1 : count + 1]:
        subprocess.run([str(BIN / "memsearch"), query], env=env, capture_output=True, check=True)
    after = proc_status(pid)
    maps = Path(f"/proc/{pid}/maps").read_text()
    status = json.loads(
        subprocess.run([str(BIN / "memfiles"), "status", "--json"], env=env, capture_output=True, text=True).stdout
    )["watcher"]
    subprocess.run([str(BIN / "memfiles"), "watch", "--stop"], env=env, capture_output=True)
    return {
        "rss_before_queries_mb": idle["VmRSS"],
        "rss_after_queries_mb": after["VmRSS"],
        "anon_after_queries_mb": after["RssAnon"],
        "file_after_queries_mb": after["RssFile"],
        "peak_mb": after["VmHWM"],
        "torch_loaded": "libtorch" in maps,
        "chromadb_loaded": "chromadb" in maps or "chroma" in maps,
        "started_by": status["started_by"],
        "idle_exit": status["idle_exit"],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,20000")
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--keep", type=Path, help="build the projects under this folder and keep them")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    compile_memfiles()
    queries = [" ".join(q["text"].split()) for q in read_jsonl(DATA / "cacm" / "queries.jsonl")]
    figures: dict[str, Any] = {}
    for size in [int(s) for s in args.sizes.split(",")]:
        place = contextlib.nullcontext(str(args.keep)) if args.keep else tempfile.TemporaryDirectory()
        with place as folder:
            root = Path(folder) / f"project-{size}"
            root.mkdir(parents=True)
            build(root, texts(size))
            started = time.perf_counter()
            env = {**os.environ, "MEMFILES_SEARCH_WATCH": "0"}
            subprocess.run([str(BIN / "memfiles"), "--root", str(root), "backfill"], env=env, check=True)
            built = time.perf_counter() - started
            found = measure(root, queries, args.queries)
            found["backfill_s"] = built
            figures[str(size)] = found
            verdict = "met" if found["rss_after_queries_mb"] <= GOAL_MB or size != 1000 else "NOT met"
            print(
                f"| {size:,} | {found['rss_before_queries_mb']:.0f} MB | {found['rss_after_queries_mb']:.0f} MB"
                f" ({found['anon_after_queries_mb']:.0f} MB its own,"
                f" {found['file_after_queries_mb']:.0f} MB mapped files)"
                f" | {found['peak_mb']:.0f} MB | torch loaded: {found['torch_loaded']} | started by"
                f" {found['started_by']}, idle exit {found['idle_exit']} s | goal at 1,000: {GOAL_MB} MB"
                f" ({verdict if size == 1000 else 'n/a'}) |",
                flush=True,
            )
    print(f"load average: {os.getloadavg()[0]:.1f}")
    if args.json_out:
        args.json_out.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
