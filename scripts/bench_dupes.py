"""How long `memfiles dupes` takes on 2,500 entries, against baselines measured in the same run.

  python scripts/bench_dupes.py [--entries 2500] [--repeat 3]

The entries are SeaMonkey's 1,076 bug reports and CACM abstracts to make up the number (public data in
../shared/data, never copied into the repository). After `memfiles backfill`, each command runs as a
cold CLI process: `memfiles dupes --json` (stored vectors, all-pairs cosine in numpy, the signals),
`memfiles list --json` (process start, parse every file) and `python -c "import chromadb"`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from eval_retrieval import DATA, _cli, make_project, read_jsonl


def _time(command: list[str], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=2500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    corpus = read_jsonl(DATA / "seamonkey" / "corpus.jsonl")
    corpus += [d for d in read_jsonl(DATA / "cacm" / "corpus.jsonl") if d.get("text")]
    corpus = corpus[: args.entries]
    binary = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        make_project(folder, corpus)
        start = time.perf_counter()
        _cli(["memfiles", "--root", str(folder), "backfill"])
        backfill = time.perf_counter() - start
        root = ["--root", str(folder)]
        dupes = _time([str(binary / "memfiles"), *root, "dupes", "--json"], args.repeat)
        listing = _time([str(binary / "memfiles"), *root, "list", "--json"], args.repeat)
        chroma = _time([sys.executable, "-c", "import chromadb"], args.repeat)
    print(f"{len(corpus):,} entries; backfill {backfill:.1f} s; cold CLI, median of {args.repeat}\n")
    print("| what | seconds | ratio to `memfiles list --json` |")
    print("|---|---|---|")
    print(f"| memfiles dupes --json | {dupes:.2f} | {dupes / listing:.1f}x |")
    print(f"| memfiles list --json (baseline) | {listing:.2f} | 1.0x |")
    print(f"| python -c 'import chromadb' (baseline) | {chroma:.2f} | {chroma / listing:.1f}x |")


if __name__ == "__main__":
    main()
