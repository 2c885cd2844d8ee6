"""Runs the agents' hooks start never stop a command (issue 34): a day of agent sessions that never reached
SessionEnd left 34 `session-*` runs, and `working todo add` and `recall --trigger resume` without --run
refused, listing them all. Now a command takes the one active run someone started with `working start`,
or says how to choose; a hook's run ends at SessionEnd and expires after a day without a hook call of its
session; and `working start` says how to make its run the default.

The hooks' runs are made by the real hook path (a failing command's PostToolUseFailure, in this process
as a hook with no watcher runs it), the commands by the real CLI.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memfiles.cli.main import cli
from memfiles.config import load_settings
from memfiles.services.agents.hook_run import run_hook
from memfiles.services.agents.hook_working import RUN_EXPIRY
from memfiles.store.project import Project


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "runs"
    (folder / "memory").mkdir(parents=True)
    monkeypatch.delenv("MEMFILES_RUN", raising=False)
    return folder


def memfiles(root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--root", str(root), *args], catch_exceptions=False)


def hook(root: Path, event: str, session: str, **data: Any) -> dict[str, Any]:
    raw = json.dumps({"session_id": session, "hook_event_name": event, "cwd": str(root), **data})
    return run_hook(event, lambda: raw, root)


def failing_sessions(root: Path, count: int) -> list[str]:
    """`count` agent sessions whose command failed: each leaves the run the hooks start for it."""
    for n in range(count):
        hook(
            root,
            "PostToolUseFailure",
            f"agent-{n}",
            tool_name="Bash",
            tool_input={"command": "pytest"},
            error=f"E   ModuleNotFoundError: No module named 'yaml{n}'",
        )
    runs = json.loads(memfiles(root, "working", "list", "--json").stdout)["runs"]
    made = [item["run"] for item in runs if item["hooks"]]
    assert len(made) == count and all(item["status"] == "active" for item in runs)
    return made


def test_a_command_without_run_takes_the_run_someone_started(root: Path) -> None:
    """Twelve hook runs and one started by hand: `working todo add` and `recall --trigger resume` without
    --run act on the one started by hand."""
    failing_sessions(root, 12)
    started = memfiles(root, "working", "start", "--run", "fix-ci", "--goal", "Make the hook tests pass offline")
    assert started.exit_code == 0 and started.stdout.strip() == "fix-ci"
    added = memfiles(root, "working", "todo", "add", "Pin pre-commit in the dev extra")
    assert added.exit_code == 0, added.output
    shown = json.loads(memfiles(root, "working", "show", "--json").stdout)["working"]
    assert shown["run"] == "fix-ci" and [t["task"] for t in shown["todo_active"]] == ["Pin pre-commit in the dev extra"]
    recalled = memfiles(root, "recall", "--trigger", "resume", "--json")
    assert recalled.exit_code == 0, recalled.output
    assert json.loads(recalled.stdout)["run"] == "fix-ci"


def test_with_only_hook_runs_a_command_says_how_to_choose(root: Path) -> None:
    """No run started by hand and several the hooks started: the command refuses (exit 2) naming a few of
    them, newest first, and how to choose (--run, MEMFILES_RUN, working start, working list); with one
    hook run only, that one is taken."""
    made = failing_sessions(root, 6)
    refused = memfiles(root, "working", "todo", "add", "Something")
    assert refused.exit_code == 2
    said = refused.stderr
    assert "6 runs the agents' hooks started" in said and "--run" in said and "MEMFILES_RUN" in said
    assert "memfiles working start" in said and "memfiles working list" in said
    assert sum(name in said for name in made) == 3  # a few, not all of them
    only = root.parent / "one"
    (only / "memory").mkdir(parents=True)
    (lone,) = failing_sessions(only, 1)
    assert memfiles(only, "working", "todo", "add", "Something").exit_code == 0
    shown = json.loads(memfiles(only, "working", "show", "--run", lone, "--json").stdout)["working"]
    assert [todo["task"] for todo in shown["todo_active"]] == ["Something"]


def test_a_hook_run_ends_at_session_end_and_expires_when_its_session_goes_quiet(root: Path) -> None:
    """SessionEnd ends its session's run; a run whose session no hook has heard from for a day is ended by the
    next SessionStart of any session; a session heard from an hour ago keeps its run."""
    made = failing_sessions(root, 3)
    hook(root, "SessionEnd", "agent-0", reason="exit")
    settings = load_settings(root)
    old = time.time() - RUN_EXPIRY - 3600
    for path in [root / "memory" / "working" / f"{made[1]}.md", *(settings.state_dir / "hooks").glob("agent-1*")]:
        os.utime(path, (old, old))
    hook(root, "SessionStart", "agent-new", source="startup")
    status = {
        item["run"]: item["status"] for item in json.loads(memfiles(root, "working", "list", "--json").stdout)["runs"]
    }
    assert status == {made[0]: "ended", made[1]: "ended", made[2]: "active"}
    log = (settings.state_dir / "hooks.log").read_text()
    assert f"run {made[1]} expired" in log


def test_working_start_says_how_to_make_its_run_the_default(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """stdout is the run's name (for `RUN=$(...)`); stderr says `export MEMFILES_RUN=...`, unless it is already."""
    started = memfiles(root, "working", "start", "--run", "fix-ci", "--goal", "Make it pass")
    assert started.stdout.strip() == "fix-ci"
    assert "export MEMFILES_RUN=fix-ci" in started.stderr
    monkeypatch.setenv("MEMFILES_RUN", "next-one")
    again = memfiles(root, "working", "start", "--goal", "Another")
    assert again.stdout.strip() == "next-one" and "export MEMFILES_RUN" not in again.stderr


def test_a_run_named_like_the_hooks_before_the_tag_counts_as_theirs(root: Path) -> None:
    """A `session-*` run a hook made before runs were tagged (no `hooks` tag) is the hooks' too: it does not
    compete with the run started by hand."""
    assert memfiles(root, "working", "start", "--run", "session-0123abcd", "--goal", "Old hook run").exit_code == 0
    assert memfiles(root, "working", "start", "--run", "mine", "--goal", "Mine").exit_code == 0
    state = Project(load_settings(root))
    from memfiles.services.agents.working import resolve_run

    assert resolve_run(state, None) == "mine"
