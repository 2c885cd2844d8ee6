"""Benchmark of the write path on text the world writes: real bug reports imported as they come.

Each corpus is imported twice into fresh projects, in the same run: its bodies raw (control characters
removed, nothing else) and the same bodies reduced to plain words (the floor: the write path's own cost
with nothing to repair, tidy or wrap). It prints the ratio of the two, how many ops were refused, what
the write path said it changed (its warnings, by kind), and whether `memfiles check` is clean on what
was written.

Corpora: the 1,076 SeaMonkey reports of ../shared/data/seamonkey (the set the clean-up was developed
on), and the 2,503 Hadoop reports (Jira markup, Java stack traces) of the GitBugs dataset
(github.com/av9ash/gitbugs, hadoop/hadoop_bugs.csv) when `--hadoop FILE` names a copy: its even rows
(A) were looked at after a first import of all of it, its odd rows (B) never were (held out).

Run: python scripts/bench_import.py [--hadoop /path/to/hadoop_bugs.csv] [--runs 3]
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import compile_memfiles

from memfiles.format.wrap import clip, one_line, printable_body

HERE = Path(__file__).resolve().parent
SEAMONKEY = HERE.parent.parent / "shared" / "data" / "seamonkey" / "corpus.jsonl"
TITLE_LIMIT = 120


def seamonkey(path: Path) -> list[tuple[str, str]]:
    reports = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(report["title"], report["text"]) for report in reports]


def hadoop(path: Path) -> list[tuple[str, str]]:
    csv.field_size_limit(sys.maxsize)
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        return [(row["Summary"], row["Description"]) for row in csv.DictReader(handle)]


def _title(text: str) -> str:
    title = clip(one_line(text), TITLE_LIMIT).rstrip(" #") or "Untitled report"
    return title


def ops(reports: list[tuple[str, str]], plain: bool) -> dict:
    """An add op per report with a body (a report without one has no finding to keep)."""
    out = []
    for title, text in reports:
        body = printable_body(text).strip()
        if plain:
            body = " ".join(re.findall(r"\w+", body))
        if body.strip():
            out.append({"op": "add", "kind": "friction", "title": _title(title), "area": "bugs", "body": body})
    return {"ops": out}


def _project(folder: Path) -> Path:
    (folder / "memory").mkdir(parents=True)
    # the reports are longer than the default body limit of 2,000 characters
    (folder / "memory" / "memfiles.toml").write_text("body_limit = 100000\n", encoding="utf-8")
    return folder


def memfiles(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMFILES_SEARCH_WATCH": "0"}
    command = [sys.executable, "-m", "memfiles.cli", "--root", str(root), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed_import(batch: dict, scratch: Path, name: str) -> tuple[float, float, subprocess.CompletedProcess[str], Path]:
    """(CPU seconds, wall seconds, the result, the project) of one `memfiles import` in a fresh project.
    CPU time (the process and the linter it starts) is what a loaded machine changes least."""
    root = _project(scratch / name)
    source = scratch / f"{name}.json"
    source.write_text(json.dumps(batch), encoding="utf-8")
    cpu, start = _cpu(), time.perf_counter()
    done = memfiles(root, "import", str(source), "--json")
    return _cpu() - cpu, time.perf_counter() - start, done, root


def _kind(warning: str) -> str:
    for word in (
        "demoted",
        "log or traceback",
        "Jira",
        "unified diff",
        "never closed",
        "conflict marker",
        "entry heading",
        "control",
        "index",
    ):
        if word in warning:
            return word
    return warning.split(":")[-1][:60]


def measure(label: str, reports: list[tuple[str, str]], runs: int) -> dict:
    raw, plain = ops(reports, plain=False), ops(reports, plain=True)
    raw_times, plain_times, raw_walls, plain_walls = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="memfiles-bench-import-") as name:
        scratch = Path(name)
        for run in range(runs):
            cpu, wall, _plain, _ = timed_import(plain, scratch, f"plain{run}")
            plain_times.append(cpu)
            plain_walls.append(wall)
            cpu, wall, raw_done, raw_root = timed_import(raw, scratch, f"raw{run}")
            raw_times.append(cpu)
            raw_walls.append(wall)
        if raw_done.returncode != 0:
            print(raw_done.stdout[-2000:], raw_done.stderr[-2000:], file=sys.stderr)
        answer = json.loads(raw_done.stdout) if raw_done.returncode == 0 else {"warnings": [], "added": []}
        check = memfiles(raw_root, "check", "--json")
        findings = json.loads(check.stdout).get("findings", []) if check.stdout.strip() else []
    kinds = collections.Counter(_kind(warning) for warning in answer.get("warnings", []))
    codes = collections.Counter(finding["code"] for finding in findings)
    result = {
        "corpus": label,
        "ops": len(raw["ops"]),
        "written": len(answer.get("added", [])),
        "refused": len(raw["ops"]) - len(answer.get("added", [])),
        "raw_s": statistics.median(raw_times),
        "plain_s": statistics.median(plain_times),
        "raw_wall": statistics.median(raw_walls),
        "plain_wall": statistics.median(plain_walls),
        "check_exit": check.returncode,
        "check_findings": dict(codes),
        "warnings": dict(kinds),
    }
    result["ratio"] = result["raw_s"] / result["plain_s"]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seamonkey", type=Path, default=SEAMONKEY)
    parser.add_argument("--hadoop", type=Path, help="hadoop_bugs.csv of the GitBugs dataset (held out)")
    parser.add_argument("--runs", type=int, default=3, help="imports of each kind; the median is reported")
    args = parser.parse_args()
    compile_memfiles()
    corpora = [("SeaMonkey (developed on)", seamonkey(args.seamonkey))]
    if args.hadoop:
        reports = hadoop(args.hadoop)
        # Half A was looked at while fixing what its first import showed; half B never was.
        corpora.append(("Hadoop A (looked at)", reports[0::2]))
        corpora.append(("Hadoop B (held out)", reports[1::2]))
    print("CPU seconds of `memfiles import` (and the linter it runs), median of the runs; wall clock in brackets.")
    print("| corpus | ops | refused | raw import | plain-words import | ratio | check | warnings |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, reports in corpora:
        r = measure(label, reports, args.runs)
        shown = ", ".join(f"{kind} {count}" for kind, count in sorted(r["warnings"].items()))
        check = "clean" if r["check_exit"] == 0 else f"exit {r['check_exit']}: {r['check_findings']}"
        print(
            f"| {label} | {r['ops']:,} | {r['refused']} | {r['raw_s']:.1f} s ({r['raw_wall']:.1f} s) |"
            f" {r['plain_s']:.1f} s ({r['plain_wall']:.1f} s) |"
            f" {r['ratio']:.2f}x | {check} | {shown} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
