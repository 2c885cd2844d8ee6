"""Benchmark of the lint rule set in `memfiles check`: a cold check (no lint cache, as on a fresh clone or
a CI run) against `check --no-lint` on the same files, in the same run, at 1,000 and 20,000 entries.

The entries hold real text: the bodies of the SeaMonkey bug reports (../shared/data), as the write path
would store them without the linter's fixes (so the linter has findings to report), cycled and numbered
to fill 20,000 entries, spread over files of 250 entries. Each figure is the median of the runs, in CPU
seconds of the command and the linter it starts (what a loaded machine changes least), with the wall
clock beside it.

Run: python scripts/bench_lint.py [--entries 1000 20000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import compile_memfiles

from memfiles.format.ids import Schema
from memfiles.format.model import Entry, MemoryFile, Section
from memfiles.format.render import render
from memfiles.format.wrap import printable_body
from memfiles.markdown.body import prepare

HERE = Path(__file__).resolve().parent
SEAMONKEY = HERE.parent.parent / "shared" / "data" / "seamonkey" / "corpus.jsonl"
PER_FILE = 250


def bodies() -> list[str]:
    reports = [json.loads(line) for line in SEAMONKEY.read_text(encoding="utf-8").splitlines() if line.strip()]
    schema = Schema(body_limit=1_000_000)
    texts = [printable_body(report["text"]).strip() for report in reports]
    return [prepare(text, 100, schema).text for text in texts if text]


def make_project(root: Path, count: int, pool: list[str]) -> None:
    memory = root / "memory"
    memory.mkdir(parents=True)
    (memory / "memfiles.toml").write_text("body_limit = 1000000\n", encoding="utf-8")
    for start in range(0, count, PER_FILE):
        entries = tuple(
            Entry(
                f"F-{n + 1:05d}",
                f"Report {n + 1}",
                "2026-12-06",
                "bugs",
                "open",
                f"{pool[n % len(pool)]}\n\nCopy {n // len(pool)}.",  # a distinct chunk every time
            )
            for n in range(start, min(count, start + PER_FILE))
        )
        text = render(MemoryFile("Frictions", sections=(Section(None, "", entries),)), Schema(body_limit=1_000_000))
        (memory / f"frictions{start // PER_FILE:03d}.md").write_text(text, encoding="utf-8")


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(command: list[str], before: Path | None = None) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of `command`; `before`, a file deleted first (the lint cache)."""
    if before is not None:
        before.unlink(missing_ok=True)
    env = {**os.environ, "MEMFILES_SEARCH_WATCH": "0"}
    cpu, start = _cpu(), time.perf_counter()
    subprocess.run(command, capture_output=True, check=False, env=env)
    return _cpu() - cpu, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, nargs="+", default=[1_000, 20_000])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    compile_memfiles()
    pool = bodies()
    print("| entries | check, cold lint cache | check --no-lint | ratio (CPU) | ratio (wall) |")
    print("| --- | --- | --- | --- | --- |")
    for count in args.entries:
        with tempfile.TemporaryDirectory(prefix="memfiles-bench-lint-") as name:
            root = Path(name)
            make_project(root, count, pool)
            check = [sys.executable, "-m", "memfiles.cli", "--root", str(root), "check"]
            cache = root / ".memfiles" / "lint-cache.json"
            cold, off = [], []
            for _ in range(args.runs):
                cold.append(timed(check, before=cache))
                off.append(timed([*check, "--no-lint"]))
            cold_cpu, cold_wall = (statistics.median(x) for x in zip(*cold, strict=True))
            off_cpu, off_wall = (statistics.median(x) for x in zip(*off, strict=True))
            print(
                f"| {count:,} | {cold_cpu:.2f} s ({cold_wall:.2f} s) | {off_cpu:.2f} s ({off_wall:.2f} s) |"
                f" {cold_cpu / off_cpu:.2f}x | {cold_wall / off_wall:.2f}x |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
