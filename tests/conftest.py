"""Shared fixtures: a fresh project in a temp folder, and a way to run the CLI against it."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memfiles.cli.main import cli

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parent.parent
# Four unrelated entries (kind, title, area, body), one per kind, for the index and thin-client tests.
SAMPLE_ENTRIES = [
    ("decision", "Release builds are signed on the build host only", "release", "Keys never leave the host."),
    ("fact", "The staging database is restored every night", "ops", "A job copies the backup at 02:00 UTC."),
    ("friction", "Chroma hangs when two processes open one folder", "index", "One process must own the store."),
    ("lesson", "Timing closes with --max-fanout 16", "synthesis", "Hold violations went away at sixteen sinks."),
]


@pytest.fixture(autouse=True)
def no_watcher_left_by_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """A memsearch with no watcher starts one (search_watch); tests start theirs explicitly, so that none
    outlives its test. tests/test_quick_search.py turns it back on where that is the behaviour tested."""
    monkeypatch.setenv("MEMFILES_SEARCH_WATCH", "0")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "memory").mkdir()
    return tmp_path


Run = Callable[..., Result]


@pytest.fixture
def run(root: Path) -> Run:
    """Invoke `memfiles --root ROOT args...`; returns click's Result (exit_code, stdout, stderr)."""

    def invoke(*args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(cli, ["--root", str(root), *args], input=input, catch_exceptions=False)

    return invoke


@contextlib.contextmanager
def watching(root: Path, **options: float) -> Iterator:
    """A watcher on the project at `root`, in this process, for the block (debounce 0.1 s unless given)."""
    from memfiles.config import load_settings
    from memfiles.services.watch import Watcher
    from memfiles.store.project import Project

    watcher = Watcher(Project(load_settings(root)), **{"debounce": 0.1, **options})
    watcher.start()
    try:
        yield watcher
    finally:
        watcher.stop()


@contextlib.contextmanager
def store_held(root: Path) -> Iterator[None]:
    """Another process holding the project's store lock (a backfill, say) for the length of the block."""
    import subprocess
    import sys

    code = (
        "import sys, time\nfrom memfiles.config import load_settings\n"
        "from memfiles.index.chroma import store_lock\n"
        "with store_lock(load_settings(sys.argv[1]), 5):\n    print('held', flush=True)\n    time.sleep(120)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.kill()
        holder.wait()


def snapshot(root: Path) -> dict[str, str]:
    """Every file under memory/ and its hash, to prove a failed command touched nothing."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted((root / "memory").rglob("*"))
        if path.is_file()
    }


def add_ops(count: int, kind: str = "decision", **extra: str) -> str:
    ops = [
        {
            "op": "add",
            "kind": kind,
            "title": f"Entry number {n}",
            "area": "bulk",
            "body": f"Body of entry {n}.",
            **extra,
        }
        for n in range(count)
    ]
    return json.dumps({"ops": ops})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """tests/reliability/ (crashes, faults, load, hostile input: minutes of processes) is in the slow tier:
    `make test-fast` leaves it out, `make test` (CI) runs it."""
    for item in items:
        if "reliability" in item.path.parts:
            item.add_marker(pytest.mark.slow)
