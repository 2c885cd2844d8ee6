"""The watcher under stress: a storm of file events, a SIGSTOP while files change, a branch switch that
replaces every memory file; and its life as a background process: the log rotates, `watch --stop`
returns once the process is gone, a failed start is reported at once."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from memfiles.config import load_settings
from memfiles.services.indexing.ipc import pid_path
from tests.reliability.conftest import cli, drift, intact, no_traceback, ops_file
from tests.reliability.faults import copy_project, index_state, record, wait_for_watcher

pytestmark = pytest.mark.integration


def entry(entry_id: str, title: str, body: str) -> str:
    return f"### {entry_id}: {title}\n\n- date: 2026-11-01\n- area: storm\n- status: active\n\n{body}\n"


def converge(root: Path, timeout: float = 600) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        d = drift(root)
        if not (d["missing_or_stale"] or d["retag"] or d["orphaned"]):
            return d
        time.sleep(0.5)
    raise AssertionError(f"no convergence: {d}")


def equals_rebuild(root: Path, tmp: Path) -> bool:
    cli(root, "watch", "--stop", check=False)
    state = index_state(root)
    # Beside the project, never inside it: a copy under the root would be a nested project (refused as
    # --root) whose memory/ the root's discovery reads too (every id twice).
    outside = Path(tempfile.mkdtemp(prefix="rebuilt-", dir=root.parent if tmp == root else tmp))
    try:
        rebuilt = copy_project(root, outside / "project")
        cli(rebuilt, "backfill", "--rebuild")
        wanted = index_state(rebuilt)
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    return state["in_step"] and state["store"] == wanted["store"] and state["catalog"] == wanted["catalog"]


@pytest.fixture
def watched(root: Path, tmp_path: Path):
    cli(root, "import", str(ops_file(tmp_path / "seed.json", 20)))
    cli(root, "backfill")
    cli(root, "watch", "--debounce", "0.1")
    wait_for_watcher(root)
    yield root
    cli(root, "watch", "--stop", check=False)


def storm(root: Path, files: int, rounds: int) -> int:
    """Rewrite `files` memory files `rounds` times as fast as possible; returns how many writes were made."""
    folder = root / "memory" / "storm"
    folder.mkdir(exist_ok=True)
    writes = 0
    for n in range(rounds):
        for f in range(files):
            number = 9000 + f
            text = "# Storm\n\n" + entry(f"K-{number}", f"Storm fact {f}", f"Round {n} of the storm, file {f}.")
            (folder / f"f{f}.md").write_text(text)
            writes += 1
    return writes


def run_storm(root: Path, tmp: Path, files: int, rounds: int) -> dict:
    start = time.monotonic()
    writes = storm(root, files, rounds)
    seconds = time.monotonic() - start
    settle = time.monotonic()
    converge(root)
    settle = time.monotonic() - settle
    assert equals_rebuild(root, tmp)
    return {"writes": writes, "write_seconds": round(seconds, 1), "converged_after_s": round(settle, 1)}


def test_event_storm(watched: Path, tmp_path: Path) -> None:
    """2,000 rewrites of 50 files in a burst: the index ends equal to a rebuild of the last contents."""
    record("watch-storm", **run_storm(watched, tmp_path, files=50, rounds=40))


@pytest.mark.heavy
def test_event_storm_heavy(watched: Path, tmp_path: Path) -> None:
    """10,000 rewrites of 100 files (each several inotify events) within a minute or so: equal to a rebuild."""
    record("watch-storm", **run_storm(watched, tmp_path, files=100, rounds=100))


def run_sigstop(root: Path, tmp: Path, seconds: float) -> dict:
    pid = int(pid_path(load_settings(root)).read_text())
    os.kill(pid, signal.SIGSTOP)
    try:
        quick = {"MEMFILES_INDEX_TIMEOUT": "2"}
        added = []
        for n in range(5):  # the write path does not wait for a stopped watcher beyond its bound
            done = cli(root, "add", "-k", "L", "-t", f"Added while stopped {n}", "-a", "s", "--body", "x.", env=quick)
            no_traceback(done.stderr)
            added.append(done.stdout.split()[-1])
        storm(root, 10, 3)
        time.sleep(max(0.0, seconds - 1))
    finally:
        os.kill(pid, signal.SIGCONT)
    converge(root)
    assert equals_rebuild(root, tmp)
    return {"stopped_s": seconds, "writes_while_stopped": 5 + 30, "lost": 0}


def test_sigstop_then_sigcont(watched: Path, tmp_path: Path) -> None:
    """SIGSTOP for 5 s while entries are added and files rewritten, then SIGCONT: it catches up to a rebuild."""
    record("watch-sigstop", **run_sigstop(watched, tmp_path, 5))


@pytest.mark.heavy
def test_sigstop_sixty_seconds(watched: Path, tmp_path: Path) -> None:
    """The same with the watcher stopped for 60 s."""
    record("watch-sigstop", **run_sigstop(watched, tmp_path, 60))


def test_branch_switch_replaces_every_file(root: Path, tmp_path: Path) -> None:
    """git checkout of a branch whose memory files all differ: the watcher ends equal to a rebuild."""
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", "-b", "main", str(root)], check=True)
    cli(root, "import", str(ops_file(tmp_path / "main.json", 40)))
    subprocess.run([*git, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(root), "commit", "-qm", "main"], check=True)
    # An unrelated history (ids.txt included): deleting main's files on a branch of main would be entries
    # deleted by hand, which `check` rightly reports.
    subprocess.run([*git, "-C", str(root), "checkout", "-q", "--orphan", "other"], check=True)
    subprocess.run([*git, "-C", str(root), "rm", "-rqf", "."], check=True)
    (root / "memory").mkdir(exist_ok=True)
    cli(root, "import", str(ops_file(tmp_path / "other.json", 40, start=500, kinds=("fact", "todo"))))
    subprocess.run([*git, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(root), "commit", "-qm", "other"], check=True)
    subprocess.run([*git, "-C", str(root), "checkout", "-q", "main"], check=True)
    cli(root, "backfill")
    cli(root, "watch", "--debounce", "0.1")
    try:
        wait_for_watcher(root)
        subprocess.run([*git, "-C", str(root), "checkout", "-q", "other"], check=True)
        d = converge(root)
        assert d["indexed"] == 40
        assert equals_rebuild(root, tmp_path)
    finally:
        cli(root, "watch", "--stop", check=False)
    intact(root)


def test_log_rotates_and_stop_waits(root: Path, tmp_path: Path) -> None:
    """With a 2 KB log limit, watch.log rotates (at most 3 old files); `watch --stop` returns once the pid is gone."""
    cli(root, "import", str(ops_file(tmp_path / "seed.json", 10)))
    cli(root, "backfill")
    env = {"MEMFILES_WATCH_LOG_BYTES": "2048"}
    cli(root, "watch", "--debounce", "0.05", env=env)
    pid = int(pid_path(load_settings(root)).read_text())
    try:
        for n in range(12):
            cli(root, "import", str(ops_file(tmp_path / f"b{n}.json", 3, start=100 + 10 * n)))
        converge(root)
    finally:
        stopped = cli(root, "watch", "--stop", check=False)
    assert stopped.returncode == 0, stopped.stderr
    assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    logs = sorted(p.name for p in (root / ".memsearch").glob("watch.log*"))
    assert "watch.log.1" in logs and len(logs) <= 4, logs
    assert all(p.stat().st_size <= 2048 + 1024 for p in (root / ".memsearch").glob("watch.log*"))
    assert cli(root, "watch", "--stop", check=False).returncode == 1  # nothing left to stop


def test_failed_start_is_reported_at_once(root: Path, tmp_path: Path) -> None:
    """A watcher that cannot start (no model; the store held by another process) makes `memfiles watch`
    exit 2 with the reason it printed, instead of waiting for an answer that never comes."""
    cli(root, "import", str(ops_file(tmp_path / "seed.json", 5)))
    cli(root, "backfill")
    failed = cli(root, "watch", env={"MEMFILES_MODEL": str(tmp_path / "no-model")}, check=False, timeout=300)
    no_traceback(failed.stderr)
    assert failed.returncode == 2 and "exited" in failed.stderr and "model" in failed.stderr, failed.stderr
    holder = subprocess.Popen(
        [
            str(Path(__import__("sys").executable)),
            "-c",
            "import sys, time; from memfiles.config import load_settings; from memfiles.store.lock import FileLock;"
            "s = load_settings(sys.argv[1]); l = FileLock(s.index_dir / 'store.lock', 5); l.acquire();"
            "print('held', flush=True); time.sleep(120)",
            str(root),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        busy = cli(root, "watch", env={"MEMFILES_LOCK_TIMEOUT": "2"}, check=False, timeout=300)
        no_traceback(busy.stderr)
        assert busy.returncode == 2 and "busy" in busy.stderr, busy.stderr
    finally:
        holder.kill()
        holder.wait()
