"""A watcher nobody started by hand does not outstay its use (issue 34): one a search, a write or a hook left
behind exits after `watch_idle_exit` (900 s by default) without a query or a change, one started by hand
stays, `memfiles status` says which is which and when it will go, and a hook that finds none starts one.

Real background watchers, real `memsearch`, `memfiles hook` and `memfiles status` processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from memfiles.cli.main import cli
from memfiles.config import Settings, load_settings
from memfiles.services.indexing.daemon import live_watchers
from memfiles.services.indexing.ipc import request
from tests.reliability.conftest import BIN
from tests.reliability.conftest import cli as run_cli


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "life"
    (root / "memory").mkdir(parents=True)
    ops = [
        {"op": "add", "kind": "procedure", "title": "Run make install before the test suite", "area": "tooling",
         "body": "The dev extra brings pyyaml and pre-commit."},
        {"op": "add", "kind": "friction", "title": "Chroma hangs when two processes open one folder", "area": "index",
         "body": "One process must own the store."},
    ]  # fmt: skip
    assert CliRunner().invoke(cli, ["--root", str(root), "import", "-"], input=json.dumps({"ops": ops})).exit_code == 0
    assert CliRunner().invoke(cli, ["--root", str(root), "backfill"]).exit_code == 0
    return root


def until(predicate: object, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"not true within {seconds} s")


def answering(settings: Settings) -> bool:
    try:
        return request(settings, {"op": "ping"}, timeout=5) is not None
    except Exception:
        return False


def status(root: Path) -> dict:
    return json.loads(run_cli(root, "status", "--json").stdout)["watcher"]


@pytest.mark.slow
def test_a_watcher_left_by_a_search_says_so_and_exits_when_idle_one_started_by_hand_stays(project: Path) -> None:
    """memsearch leaves a watcher that says who started it and when it will exit, and exits then; one started
    with `memfiles watch` says it stays, and outlives the idle time that stopped the other."""
    (project / "memory" / "memfiles.toml").write_text("watch_idle_exit = 4\n")
    settings = load_settings(project)
    searched = subprocess.run(
        [str(BIN / "memsearch"), "--root", str(project), "two processes hang"],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMFILES_SEARCH_WATCH": "1"},
        timeout=600,
    )
    assert searched.returncode == 0, searched.stderr
    assert "started a watcher in the background" in searched.stderr
    assert "it exits after 4 s without a query or a change" in searched.stderr
    until(lambda: answering(settings))
    left = status(project)
    assert left["running"] and left["started_by"] == "search" and left["idle_exit"] == 4
    assert left["exits_at"] is not None and left["exits_at"] >= left["since"]
    assert "started by memsearch" in run_cli(project, "status").stdout
    until(lambda: not live_watchers(settings))  # nothing asked it anything for 4 s: gone

    run_cli(project, "watch")
    try:
        by_hand = status(project)
        assert by_hand["started_by"] == "hand" and by_hand["idle_exit"] is None and by_hand["exits_at"] is None
        assert "stays until stopped" in run_cli(project, "status").stdout
        time.sleep(8)  # twice the idle time that stopped the other
        assert answering(settings)
    finally:
        run_cli(project, "watch", "--stop", check=False)


def test_the_default_idle_exit_is_shorter_than_a_hand_started_watchers() -> None:
    """A watcher left behind exits after 15 minutes without use; one started by hand never (its --idle-exit 0)."""
    assert Settings(root=Path("/")).watch_idle_exit == 900


@pytest.mark.slow
def test_a_hook_that_finds_no_watcher_starts_one(project: Path) -> None:
    """With an index and no watcher, a prompt's hook answers `{}` at once (it never loads the model itself)
    and starts a watcher, so that the session's next hook is warm (a watcher the hooks left exits when idle)."""
    settings = load_settings(project)
    assert not live_watchers(settings)
    prompt = json.dumps({"session_id": "s1", "prompt": "how do I run the test suite?", "cwd": str(project)})
    first = subprocess.run(
        [str(BIN / "memfiles"), "--root", str(project), "hook", "UserPromptSubmit"],
        input=prompt,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert first.returncode == 0 and json.loads(first.stdout) == {}
    try:
        until(lambda: answering(settings))
        assert status(project)["started_by"] == "hook"
        again = subprocess.run(
            [str(BIN / "memfiles"), "--root", str(project), "hook", "UserPromptSubmit"],
            input=prompt.replace("s1", "s2"),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert "P-001" in json.loads(again.stdout)["hookSpecificOutput"]["additionalContext"]
    finally:
        run_cli(project, "watch", "--stop", check=False)


@pytest.mark.slow
def test_an_add_with_no_watcher_does_not_load_the_model(project: Path) -> None:
    """With an index and no watcher, a plain add checks near-duplicates by word overlap (saying so), leaves a
    watcher (started by "write") and never opens the store or loads the model itself: what kept such an add
    at 11x an add with no index (issue 34; the ratio is in docs/benchmarks.md). With the watcher there, the
    next add is checked by meaning; `--unique` always is."""
    settings = load_settings(project)
    env = {**os.environ, "MEMFILES_SEARCH_WATCH": "1", "PYTHONPROFILEIMPORTTIME": "1"}
    added = subprocess.run(
        [str(BIN / "memfiles"), "--root", str(project), "add", "-k", "friction", "-a", "index",
         "-t", "Chroma hangs when two processes open one folder at once", "--body", "One process must own the store."],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    try:
        assert added.returncode == 0, added.stderr
        assert "by word overlap: no watcher was running" in added.stderr and "F-001" in added.stderr
        imported = {line.rsplit("|", 1)[-1].strip() for line in added.stderr.splitlines() if "import time:" in line}
        assert not {"chromadb", "tokenizers", "threadpoolctl"} & imported  # no store, no model, no encode
        assert "started a watcher in the background" in added.stderr
        until(lambda: answering(settings))
        assert status(project)["started_by"] == "write"
        again = run_cli(
            project, "add", "-k", "friction", "-a", "index", "-t", "Two processes on one Chroma folder hang",
            "--body", "The store needs one owner process.", env={"MEMFILES_SEARCH_WATCH": "1"},
        )  # fmt: skip
        assert "near-duplicate" in again.stderr and "by word overlap" not in again.stderr
    finally:
        run_cli(project, "watch", "--stop", check=False)
