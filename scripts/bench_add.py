"""Benchmark of `memfiles add` on a project with an index and no watcher, against `add` with no index.

  python scripts/bench_add.py [--sizes 1000] [--runs 7]

The rows of scripts/bench_index.py (`add_rows`) without the rest of that benchmark: a project of CACM
titles and abstracts is indexed, and `add` runs in turns, in the same run, on a copy of its memory with
no index (the baseline), on the project with search_watch on (the default: the add leaves a watcher,
stopped after each run) and with search_watch off (the store is updated in the command). The goal
(issue 34): with search_watch on, at most 2x the add with no index.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_common import compile_memfiles
from bench_index import BIN, RESULTS, add_rows, build, texts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    compile_memfiles()
    for size in [int(s) for s in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder) / "project"
            root.mkdir()
            build(root, texts(size))
            env = {**os.environ, "MEMFILES_ROOT": str(root), "MEMFILES_SEARCH_WATCH": "0"}
            subprocess.run([str(BIN / "memfiles"), "backfill"], env=env, check=True, capture_output=True)
            RESULTS.setdefault(size, {})
            for row in add_rows(root, env, size, args.runs):
                print(row, flush=True)
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
