"""Benchmark of the watcher on a 10,000-entry project: save-to-visible latency, warm memsearch, a burst.

  python scripts/bench_watch.py [--size 10000]

Baselines in the same run: `memsearch` with no watcher (cold: it opens the store itself), and a bare
`python -c pass`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_index import BIN, build, percentiles, texts

from memfiles.config import load_settings
from memfiles.services.indexing.ipc import request

# Cold searches stay cold: a memsearch that finds no watcher would otherwise leave one behind.
os.environ.setdefault("MEMFILES_SEARCH_WATCH", "0")


def run(*args: str, env: dict[str, str], check: bool = True) -> str:
    command = [str(BIN / args[0]), *args[1:]]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=check).stdout


def timed_cli(command: list[str], env: dict[str, str], times: int) -> list[float]:
    out = []
    for _ in range(times):
        start = time.perf_counter()
        subprocess.run(command, env=env, capture_output=True, check=True)
        out.append(time.perf_counter() - start)
    return out


def save_latency(folder: Path, settings, rounds: int) -> list[float]:
    """Seconds from an editor-style save of one entry to the new text being returned for its id."""
    path = folder / "memory" / "part3.md"
    out = []
    for n in range(rounds):
        text = path.read_text()
        marker = f"edited-{n}-{time.time_ns()}"
        first = text.index("- status: active\n\n") + len("- status: active\n\n")
        entry_id = text[text.rfind("### ", 0, first) + 4 : text.find(":", text.rfind("### ", 0, first))]
        changed = text[:first] + marker + " " + text[first:]
        temp = path.with_name(".part3.md.swp")
        temp.write_text(changed)
        start = time.perf_counter()
        os.replace(temp, path)
        while True:
            answer = request(settings, {"op": "search", "queries": [[entry_id, 1]], "filters": {}, "mode": "lexical"})
            if answer and answer["results"][0] and marker in answer["results"][0][0]["entry"]["body"]:
                break
            time.sleep(0.005)
        out.append(time.perf_counter() - start)
        time.sleep(0.3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10_000)
    size = parser.parse_args().size
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        build(folder, texts(size))
        env = {**os.environ, "MEMFILES_ROOT": str(folder)}
        run("memfiles", "backfill", env=env)
        query = "parallel algorithms for sorting"
        cold = timed_cli([str(BIN / "memsearch"), query], env, 10)
        bare = timed_cli([sys.executable, "-c", "pass"], env, 10)
        run("memfiles", "watch", env=env)
        settings = load_settings(folder)
        try:
            warm = timed_cli([str(BIN / "memsearch"), query], env, 20)
            saves = save_latency(folder, settings, 30)
            burst = folder / "memory" / "burst"
            burst.mkdir()
            start = time.perf_counter()
            for n in range(1000):
                (burst / f"b{n:04d}.md").write_text(
                    f"# B\n\n### E-{n + 1:03d}: Burst entry {n}\n\n- date: 2026-11-01\n- area: burst\n"
                    f"- status: recorded\n\nWritten in a burst, number {n}.\n"
                )
            while True:
                drift = json.loads(
                    run("memfiles", "backfill", "--check", "--json", env=env, check=False).replace("\n", "")
                )
                if drift["indexed"] == size + 1000 and not (
                    drift["missing_or_stale"] or drift["orphaned"] or drift["retag"]
                ):
                    break
                time.sleep(0.5)
            converged = time.perf_counter() - start
        finally:
            run("memfiles", "watch", "--stop", env=env)
    w50, w95 = percentiles(warm)
    c50, c95 = percentiles(cold)
    s50, s95 = percentiles(saves)
    b50, _ = percentiles(bare)
    print(f"| what ({size:,} entries) | p50 | p95 | baseline (same run) |")
    print("|---|---|---|---|")
    print(f"| save → visible to memsearch (watcher, debounce 0.15 s) | {s50 * 1000:.0f} ms | {s95 * 1000:.0f} ms | |")
    print(
        f"| memsearch, watcher running | {w50 * 1000:.0f} ms | {w95 * 1000:.0f} ms |"
        f" python -c pass: {b50 * 1000:.0f} ms |"
    )
    print(
        f"| memsearch, no watcher (cold) | {c50 * 1000:.0f} ms | {c95 * 1000:.0f} ms | {c50 / w50:.1f}x the warm path |"
    )
    print(f"| 1,000-file burst → backfill --check reports no drift | {converged:.1f} s | | |")


if __name__ == "__main__":
    main()
