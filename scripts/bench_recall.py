"""How long `memfiles recall` takes end to end, as an agent calls it on every turn (a fresh process).

Builds a temporary project (procedures, episodes, insights and other entries), indexes it, starts a
watcher, and times `memfiles recall ... --json` as a subprocess: warm (watcher running) for several
triggers, then cold (no watcher: the store opened by the command). Every figure is a median, printed
with its ratio to a baseline measured in the same run (`python -c pass`), since the machine's speed varies.

    python scripts/bench_recall.py [--entries 1000] [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
MEMFILES = str(BIN / "memfiles")
KINDS = ("procedure", "episode", "insight", "decision", "friction", "lesson")
TOPICS = [
    "the test suite fails on a missing module",
    "a migration waits on a table lock",
    "the watcher misses an editor's atomic save",
    "two writers hang on the vector store",
    "a deploy needs the signing key",
    "the hook environment cannot reach the index",
    "a flaky test times out under load",
    "the cache grows without bound",
]
QUERIES = {
    "turn": ("fix the failing hook tests", []),
    "act": ("run the database migration", []),
    "failure": ("Traceback ...\nModuleNotFoundError: No module named 'yaml'", []),
    "resume": ("", ["--run", "bench"]),
}


def median_seconds(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def build(root: Path, count: int) -> None:
    (root / "memory").mkdir(parents=True)
    ops = []
    for n in range(count):
        topic = TOPICS[n % len(TOPICS)]
        ops.append(
            {
                "op": "add",
                "kind": KINDS[n % len(KINDS)],
                "title": f"{topic.capitalize()} (case {n})",
                "area": ["ci", "db", "index", "release"][n % 4],
                "body": f"Seen in run {n}: {topic}. What helped: read the log first, then change one thing at a time.",
            }
        )
    batch = root / "ops.json"
    batch.write_text(json.dumps({"ops": ops}))
    subprocess.run([MEMFILES, "--root", str(root), "import", str(batch)], check=True, capture_output=True)
    subprocess.run(
        [
            MEMFILES,
            "--root",
            str(root),
            "working",
            "start",
            "--run",
            "bench",
            "--goal",
            "Fix the failing hook tests",
            "--next-step",
            "pin pyyaml",
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run([MEMFILES, "--root", str(root), "backfill"], check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        build(root, args.entries)
        base = median_seconds([sys.executable, "-c", "pass"], args.runs)
        rows = [("python -c pass (baseline)", base)]
        subprocess.run([MEMFILES, "--root", str(root), "watch"], check=True, capture_output=True)
        try:
            for trigger, (query, extra) in QUERIES.items():
                command = [MEMFILES, "--root", str(root), "recall", query, "--trigger", trigger, "--json", *extra]
                subprocess.run(command, check=True, capture_output=True)  # the watcher's first query warms it
                rows.append((f"recall --trigger {trigger}, warm (watcher)", median_seconds(command, args.runs)))
        finally:
            subprocess.run([MEMFILES, "--root", str(root), "watch", "--stop"], capture_output=True)
        command = [MEMFILES, "--root", str(root), "recall", "fix the failing hook tests", "--json"]
        rows.append(("recall --trigger turn, cold (no watcher)", median_seconds(command, max(3, args.runs // 5))))
    print(f"memfiles recall, {args.entries} entries, median of {args.runs} runs (a fresh process each)\n")
    print("| what | median | ratio to baseline |")
    print("|---|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds * 1000:.0f} ms | {seconds / base:.1f}× |")


if __name__ == "__main__":
    main()
