"""Benchmark of the write path: `memfiles import` and `memfiles check` on 1,000 and 10,000 entries, and
`memfiles add` while the index server hangs (the write must return once index_timeout has passed).

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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import compile_memfiles

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


def bench_hanging_index(repeats: int = 3) -> tuple[float, float, float]:
    """(add with a server that accepts and never answers, add without an index, index_timeout), medians."""
    import socket

    from memfiles.config import Settings

    timeout = Settings(root=Path.cwd()).index_timeout
    hanging, plain = [], []
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)  # never accepted: a connect succeeds, the request never gets an answer
        url = f"http://127.0.0.1:{server.getsockname()[1]}"
        for n in range(repeats):
            with tempfile.TemporaryDirectory() as folder:
                root = Path(folder)
                (root / "memory").mkdir()
                add = [sys.executable, "-m", "memfiles.cli", "add", "-k", "D", "-t", f"Finding {n}", "-a", "a"]
                plain.append(_time([*add, "--body", "b"], root))
                hanging.append(_time([*add[:3], "--chroma-url", url, *add[3:], "--body", "b"], root))
    return statistics.median(hanging), statistics.median(plain), timeout


def main() -> None:
    compile_memfiles()  # measured as installed (scripts/bench_common.py)
    print("| what (cold CLI process, median of 3) | seconds | entries/s | baseline (same run) | seconds | ratio |")
    print("|---|---|---|---|---|---|")
    for count in (1_000, 10_000):
        for what, seconds, baseline, base in bench(count):
            print(
                f"| {what} | {seconds:.2f} | {count / seconds:,.0f} | {baseline} | {base:.2f} | {seconds / base:.1f}x |"
            )
    hanging, plain, timeout = bench_hanging_index()
    print(
        f"| add, index server hangs | {hanging:.2f} | | add without an index + index_timeout {timeout:g} s | "
        f"{plain + timeout:.2f} | {hanging / (plain + timeout):.1f}x |"
    )


if __name__ == "__main__":
    main()
