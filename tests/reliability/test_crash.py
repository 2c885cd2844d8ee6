"""kill -9 at random points of an import of 5,000 entries, a distil, a backfill, the watcher's sync and its idle
catalog save. After each: every memory file parses, no entry is torn, ids stay unique, the import happened
whole or not at all (the receipt says which), and the index comes back to exactly what a rebuild gives.

CI runs a few points of each; `pytest -m heavy tests/reliability/test_crash.py -s` runs 200+ (figures in
docs/reliability.md). Kill points are random and reproducible (MEMFILES_FAULT_SEED).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from memfiles.config import load_settings
from memfiles.store.journal import Journal
from tests.reliability.conftest import cli, intact, memsearch, no_traceback, ops_file, spawn
from tests.reliability.faults import (
    copy_project,
    finish_pending,
    index_state,
    kill_after,
    record,
    rng,
    wait_for_watcher,
)

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
HEAVY = {
    "import": int(os.environ.get("MEMFILES_HEAVY_IMPORT", "100")),
    "distil": int(os.environ.get("MEMFILES_HEAVY_DISTIL", "40")),
    "backfill": int(os.environ.get("MEMFILES_HEAVY_BACKFILL", "30")),
    "sync": int(os.environ.get("MEMFILES_HEAVY_SYNC", "15")),
    "idle": int(os.environ.get("MEMFILES_HEAVY_IDLE", "15")),
}


def _fresh(tmp: Path, name: str) -> Path:
    root = tmp / name
    (root / "memory").mkdir(parents=True)
    return root


# --- import of 5,000 entries ------------------------------------------------------------------------


def crash_imports(tmp: Path, points: int) -> dict[str, int]:
    batch = ops_file(tmp / "batch.json", 5000)
    calibrate = _fresh(tmp, "calibrate")
    start = time.monotonic()
    cli(calibrate, "import", str(batch), "--request-id", "calibrate")
    span = time.monotonic() - start
    assert len(intact(calibrate)) == 5000
    shutil.rmtree(calibrate)
    random = rng("import")
    figures = {"points": 0, "inside_commit": 0, "applied_before_retry": 0, "corrupt_files": 0, "lost": 0, "dupes": 0}
    for point in range(points):
        root = _fresh(tmp, f"import-{point}")
        # Half the points anywhere in the run, half in its last third, where the files are written.
        delay = random.uniform(0.0, span * 1.1) if point % 2 else random.uniform(span * 0.66, span * 1.05)
        proc = spawn(root, "import", str(batch), "--request-id", "big")
        figures["points"] += kill_after(proc, delay)
        intact(root)  # every file parses as it stands, journal pending or not
        figures["inside_commit"] += finish_pending(root) == "inside"
        receipt = Journal(load_settings(root).state_dir, root).receipt("big")
        ids = intact(root)
        assert len(ids) == (5000 if receipt is not None else 0), (delay, len(ids))  # whole or nothing
        figures["applied_before_retry"] += receipt is not None
        again = cli(root, "import", str(batch), "--request-id", "big", "--json")
        assert json.loads(again.stdout)["replayed"] is (receipt is not None)
        ids = intact(root)
        figures["lost"] += 5000 - len(set(ids))
        figures["dupes"] += len(ids) - len(set(ids))
        shutil.rmtree(root)
    return figures


def test_import_killed_at_random_points(tmp_path: Path) -> None:
    """An import of 5,000 entries killed at 2 random points is whole or absent, and a retry completes it."""
    figures = crash_imports(tmp_path, 2)
    record("crash-import", **figures)
    assert figures["lost"] == 0 and figures["dupes"] == 0


@pytest.mark.heavy
def test_import_killed_heavy(tmp_path: Path) -> None:
    """The same, at many random points (MEMFILES_HEAVY_IMPORT, default 100)."""
    figures = crash_imports(tmp_path, HEAVY["import"])
    record("crash-import", **figures)
    assert figures["lost"] == 0 and figures["dupes"] == 0


# --- distil -------------------------------------------------------------------------------------------


def _distil_project(tmp: Path) -> Path:
    base = _fresh(tmp, "distil-base")
    for domain in ("synthesis", "sta"):
        (base / "memory" / domain).mkdir()
        shutil.copy(REPO / "memory" / domain / "experiences.jsonl", base / "memory" / domain / "experiences.jsonl")
    return base


def crash_distils(tmp: Path, points: int) -> dict[str, int]:
    base = _distil_project(tmp)
    reference = copy_project(base, tmp / "distil-reference")
    start = time.monotonic()
    cli(reference, "distil", "--all")
    span = time.monotonic() - start
    wanted = {p.relative_to(reference).as_posix(): p.read_text() for p in (reference / "memory").rglob("*.md")}
    random = rng("distil")
    figures = {"points": 0, "corrupt_files": 0, "differs_from_clean_run": 0}
    for point in range(points):
        root = copy_project(base, tmp / f"distil-{point}")
        figures["points"] += kill_after(spawn(root, "distil", "--all"), random.uniform(0.0, span * 1.05))
        intact(root)
        cli(root, "distil", "--all")  # the next run finishes what the killed one started, no more
        intact(root)
        got = {p.relative_to(root).as_posix(): p.read_text() for p in (root / "memory").rglob("*.md")}
        figures["differs_from_clean_run"] += got != wanted
        assert got == wanted
        shutil.rmtree(root)
    return figures


def test_distil_killed_at_random_points(tmp_path: Path) -> None:
    """A distil killed at a random point, then run again, leaves exactly what one clean run leaves."""
    record("crash-distil", **crash_distils(tmp_path, 1))


@pytest.mark.heavy
def test_distil_killed_heavy(tmp_path: Path) -> None:
    """The same, at many random points (MEMFILES_HEAVY_DISTIL, default 40)."""
    record("crash-distil", **crash_distils(tmp_path, HEAVY["distil"]))


# --- backfill ------------------------------------------------------------------------------------------


def _indexed_reference(tmp: Path, entries: int) -> tuple[Path, dict, float]:
    base = _fresh(tmp, "index-base")
    cli(base, "import", str(ops_file(tmp / "index-batch.json", entries)))
    reference = copy_project(base, tmp / "index-reference")
    start = time.monotonic()
    cli(reference, "backfill")
    span = time.monotonic() - start
    return base, index_state(reference), span


def _same_index(root: Path, reference: dict) -> None:
    state = index_state(root)
    assert state["in_step"], "the catalog a reader gets does not mirror the store"
    assert state["store"] == reference["store"]
    assert state["catalog"] == reference["catalog"]


def crash_backfills(tmp: Path, points: int) -> dict[str, int]:
    base, reference, span = _indexed_reference(tmp, 150)
    random = rng("backfill")
    figures = {"points": 0, "not_equal_to_rebuild": 0, "search_failures": 0}
    for point in range(points):
        root = copy_project(base, tmp / f"backfill-{point}")
        figures["points"] += kill_after(spawn(root, "backfill"), random.uniform(0.0, span * 1.05))
        intact(root)
        cli(root, "backfill")
        assert cli(root, "backfill", "--check", check=False).returncode == 0
        _same_index(root, reference)
        found = memsearch(root, "F-001", "--json")
        no_traceback(found.stderr)
        figures["search_failures"] += found.returncode != 0
        assert json.loads(found.stdout)["hits"][0]["entry"]["id"] == "F-001"
        shutil.rmtree(root)
    return figures


def test_backfill_killed_at_random_points(tmp_path: Path) -> None:
    """A backfill killed at a random point, then run again, gives the index a fresh build gives."""
    record("crash-backfill", **crash_backfills(tmp_path, 1))


@pytest.mark.heavy
def test_backfill_killed_heavy(tmp_path: Path) -> None:
    """The same, at many random points (MEMFILES_HEAVY_BACKFILL, default 30)."""
    record("crash-backfill", **crash_backfills(tmp_path, HEAVY["backfill"]))


# --- the watcher: its sync, and its idle catalog save ---------------------------------------------------------


def _watch(root: Path, idle: str) -> subprocess.Popen:
    proc = spawn(root, "watch", "--foreground", "--debounce", "0.05", env={"MEMFILES_WATCH_SAVE_AFTER": idle})
    wait_for_watcher(root)
    return proc


def crash_watcher(tmp: Path, points: int, idle_window: bool) -> dict[str, int]:
    """kill -9 the watcher while writes reach it (its sync), or in the idle window before its catalog save."""
    base = _fresh(tmp, "watch-base")
    cli(base, "import", str(ops_file(tmp / "watch-seed.json", 40)))
    cli(base, "backfill")
    random = rng("idle" if idle_window else "sync")
    figures = {"points": 0, "not_equal_to_rebuild": 0, "search_failures": 0, "lost": 0}
    for point in range(points):
        root = copy_project(base, tmp / f"watch-{point}")
        watcher = _watch(root, "4" if idle_window else "0.2")
        batches = [ops_file(tmp / f"w{point}-{n}.json", 10, start=1000 + 100 * n) for n in range(3)]
        if idle_window:
            for batch in batches:
                cli(root, "import", str(batch))  # the watcher syncs each; its catalog save waits 4 s of quiet
            delay = random.uniform(0.0, 3.5)
        else:
            writers = [spawn(root, "import", str(batch)) for batch in batches]
            delay = random.uniform(0.0, 6.0)
        figures["points"] += kill_after(watcher, delay)
        if not idle_window:
            for writer in writers:
                _out, err = writer.communicate(timeout=600)
                no_traceback(err)
                assert writer.returncode == 0, err  # a write never depends on the index
        ids = intact(root)
        figures["lost"] += 70 - len(ids)
        # Without a watcher: a search rebuilds the stale catalog from the store, never a KeyError.
        found = memsearch(root, "Finding 1001 about subsystem", "--json")
        no_traceback(found.stderr)
        figures["search_failures"] += found.returncode != 0
        # The watcher's restart catches up; then the index is what a rebuild gives.
        restarted = _watch(root, "0.2")
        assert cli(root, "backfill", "--check", check=False).returncode == 0
        restarted.terminate()
        restarted.wait(timeout=120)
        state = index_state(root)
        rebuilt = copy_project(root, tmp / f"watch-{point}-rebuilt")
        cli(rebuilt, "backfill", "--rebuild")
        wanted = index_state(rebuilt)
        equal = state["in_step"] and state["store"] == wanted["store"] and state["catalog"] == wanted["catalog"]
        figures["not_equal_to_rebuild"] += not equal
        assert equal
        shutil.rmtree(root)
        shutil.rmtree(rebuilt)
    return figures


def test_watcher_killed_during_sync(tmp_path: Path) -> None:
    """The watcher killed while three imports reach it: writes succeed, its restart equals a rebuild."""
    record("crash-watch-sync", **crash_watcher(tmp_path, 1, idle_window=False))


def test_watcher_killed_before_idle_save(tmp_path: Path) -> None:
    """The watcher killed inside its idle window (catalog not saved): searches work, restart equals a rebuild."""
    record("crash-watch-idle", **crash_watcher(tmp_path, 1, idle_window=True))


@pytest.mark.heavy
def test_watcher_killed_heavy(tmp_path: Path) -> None:
    """The same, at many random points of both (MEMFILES_HEAVY_SYNC and MEMFILES_HEAVY_IDLE, default 15 each)."""
    record("crash-watch-sync", **crash_watcher(tmp_path / "sync", HEAVY["sync"], idle_window=False))
    record("crash-watch-idle", **crash_watcher(tmp_path / "idle", HEAVY["idle"], idle_window=True))
