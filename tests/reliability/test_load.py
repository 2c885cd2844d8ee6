"""Load: writers adding entries through the CLI while the watcher runs and readers query it in a loop.

Every entry lands once with an id of its own, no query fails, and the index converges to no drift.
CI runs 4 writers x 10 entries and 2 readers; `pytest -m heavy tests/reliability/test_load.py -s` runs
8 x 200 and 4 readers, and reports throughput and the readers' p95 (docs/reliability.md).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.reliability.conftest import BIN, cli, drift, intact, ops_file
from tests.reliability.faults import record, wait_for_watcher

pytestmark = pytest.mark.integration

WRITER = """
import subprocess, sys
root, worker, count, memfiles, own = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
where = ["--file", f"memory/load/writer{worker}.md"] if own == "own" else []
for n in range(count):
    done = subprocess.run([memfiles, "--root", root, "add", "-k", "lesson", "-t", f"Writer {worker} lesson {n}",
                           "-a", "load", "--body", f"Written under load by writer {worker}, number {n}.", *where],
                          capture_output=True, text=True)
    if done.returncode != 0 or "Traceback" in done.stderr:
        print("FAILED", done.returncode, done.stderr.strip()[-300:], flush=True)
        sys.exit(1)
    print(done.stdout.strip(), flush=True)
"""

READER = """
import json, sys, time
from memfiles.config import load_settings
from memfiles.index.filters import Filters
from memfiles.services.indexing.index_client import connect
root, stop = sys.argv[1], sys.argv[2]
settings = load_settings(root)
queries = ["subsystem stalls when the queue is full", "F-002", "cap the queue and retry", "writer lesson under load"]
latencies, failures, n = [], [], 0
import os
while not os.path.exists(stop):
    start = time.perf_counter()
    try:
        hits = connect(settings).search([(queries[n % len(queries)], 5)], Filters())[0]
        # the seed answers the first three; the writers' lessons answer the last once indexed (before that,
        # no candidate has evidence and an empty answer is right: services/indexing/searches.py)
        assert hits or n % len(queries) == 3, "no hits"
        latencies.append(time.perf_counter() - start)
    except Exception as error:
        failures.append(f"{type(error).__name__}: {error}"[:300])
    n += 1
print(json.dumps({"latencies": latencies, "failures": failures}))
"""


def run_load(root: Path, tmp: Path, writers: int, per_writer: int, readers: int, own_files: bool = True) -> dict:
    cli(root, "import", str(ops_file(tmp / "seed.json", 50)))
    cli(root, "backfill")
    cli(root, "watch")  # the background watcher, as a user starts it
    try:
        wait_for_watcher(root)
        stop = tmp / "stop-readers"
        reader_procs = [
            subprocess.Popen([sys.executable, "-c", READER, str(root), str(stop)], stdout=subprocess.PIPE, text=True)
            for _ in range(readers)
        ]
        start = time.monotonic()
        writer_procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    WRITER,
                    str(root),
                    str(w),
                    str(per_writer),
                    str(BIN / "memfiles"),
                    "own" if own_files else "shared",
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            for w in range(writers)
        ]
        printed = []
        for proc in writer_procs:
            out, _ = proc.communicate(timeout=7200)
            assert proc.returncode == 0, out[-2000:]
            printed.extend(line for line in out.split() if line)
        seconds = time.monotonic() - start
        stop.write_text("stop")
        latencies, failures = [], []
        for proc in reader_procs:
            out, _ = proc.communicate(timeout=600)
            result = json.loads(out)
            latencies += result["latencies"]
            failures += result["failures"]
        converged = time.monotonic()
        deadline = converged + 600
        while time.monotonic() < deadline:
            d = drift(root)
            if not (d["missing_or_stale"] or d["retag"] or d["orphaned"]):
                break
            time.sleep(1)
        else:
            raise AssertionError(f"the index did not converge: {d}")
        converged = time.monotonic() - converged
    finally:
        cli(root, "watch", "--stop", check=False)
    total = writers * per_writer
    ids = intact(root)
    written = [i for i in printed if i.startswith("L-")]
    assert len(written) == total and len(set(written)) == total
    assert len(ids) == 50 + total and len(set(ids)) == len(ids)
    assert failures == [], failures[:5]
    latencies.sort()
    return {
        "writers": writers,
        "files": writers if own_files else 1,
        "entries": total,
        "distinct_ids": len(set(written)),
        "seconds": round(seconds, 1),
        "entries_per_second": round(total / seconds, 2),
        "queries": len(latencies) + len(failures),
        "failed_queries": len(failures),
        "query_p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "query_p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))] * 1000, 1) if latencies else None,
        "converged_after_s": round(converged, 1),
    }


def test_writers_and_readers_while_watching(root: Path, tmp_path: Path) -> None:
    """4 writers x 10 adds (one file each) and 2 readers in a loop, watcher running: 40 distinct ids, 0 failed
    queries, no drift."""
    record("load", **run_load(root, tmp_path, writers=4, per_writer=10, readers=2))


@pytest.mark.heavy
def test_writers_and_readers_heavy(root: Path, tmp_path: Path) -> None:
    """8 writers x 200 adds (one file each) and 4 readers: 1,600 entries, 1,600 distinct ids, 0 failed queries,
    no drift."""
    record("load", **run_load(root, tmp_path, writers=8, per_writer=200, readers=4))
