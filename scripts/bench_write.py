"""Benchmark of the write path: `memfiles import` and `memfiles check` on 1,000 and 10,000 entries.

Figures are printed as ratios against a baseline measured in the same run: writing the same final
text with one plain `Path.write_text` (the floor for getting those bytes on disk), and, for check,
a bare `parse` of each file (the floor for reading them). Run: python scripts/bench_write.py
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memfiles import parse


def _ops(count: int) -> dict:
    kinds = ["decision", "friction", "lesson", "fact"]
    return {
        "ops": [
            {
                "op": "add",
                "kind": kinds[n % 4],
                "title": f"Finding number {n} about area {n % 37}",
                "area": f"area{n % 37}",
                "body": f"What was found in case {n}, and why it matters. " * 4,
            }
            for n in range(count)
        ]
    }


def _time(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def bench(count: int, repeats: int = 3) -> list[tuple[str, float, str, float]]:
    """(what, seconds, baseline, baseline seconds) rows for `count` entries, medians of `repeats` runs."""
    imports, checks, writes, parses = [], [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            (root / "memory").mkdir()
            (root / "ops.json").write_text(json.dumps(_ops(count)))
            imports.append(_time([sys.executable, "-m", "memfiles.cli", "import", "ops.json"], root))
            checks.append(_time([sys.executable, "-m", "memfiles.cli", "check"], root))
            texts = {p: p.read_text() for p in (root / "memory").glob("*.md")}
            start = time.perf_counter()
            for path, text in texts.items():
                path.with_suffix(".copy").write_text(text)
            writes.append(time.perf_counter() - start)
            start = time.perf_counter()
            for text in texts.values():
                parse(text)
            parses.append(time.perf_counter() - start)
    startup = _time([sys.executable, "-m", "memfiles.cli", "--help"], Path.cwd())
    median = statistics.median
    return [
        (
            f"import {count:,} entries",
            median(imports),
            "process start + write the same bytes",
            startup + median(writes),
        ),
        (f"check {count:,} entries", median(checks), "process start + parse only", startup + median(parses)),
    ]


def main() -> None:
    print("| what (cold CLI process, median of 3) | seconds | entries/s | baseline (same run) | seconds | ratio |")
    print("|---|---|---|---|---|---|")
    for count in (1_000, 10_000):
        for what, seconds, baseline, base in bench(count):
            print(
                f"| {what} | {seconds:.2f} | {count / seconds:,.0f} | {baseline} | {base:.2f} | {seconds / base:.1f}x |"
            )


if __name__ == "__main__":
    main()
