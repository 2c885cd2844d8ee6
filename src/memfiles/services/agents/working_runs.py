"""Which runs have working memory, and which one a command means when it names none.

A command without --run (or $MEMFILES_RUN) takes the one active run that was started with `working
start` (by a person, or an agent on purpose). The runs the agents' hooks start on their own (one per
agent session with something to record: services/agents/hook_working.py) never stand in the way: they end at
SessionEnd, expire after a day without a hook call of their session, and a command takes one of them
only when it is the only active run there is. Before, a day of agent sessions that never reached
SessionEnd left 34 `session-*` runs, and `working todo add` without --run refused, listing all of them.
"""

from __future__ import annotations

import os
from typing import Any

from memfiles.errors import MemfilesError
from memfiles.store.project import Project


def runs(project: Project) -> list[tuple[str, str]]:
    """Every run with a working file, as (run, status), by name."""
    return [
        (item["run"], f"unreadable: {item['problem']}" if item["problem"] else item["status"])
        for item in _runs(project)
    ]


def run_list(project: Project) -> list[dict[str, Any]]:
    """Every run with a working file, by name: {"run", "path", "status", "goal", "updated", "hooks",
    "problem"} (`updated`: the file's last change, ISO 8601 UTC; `hooks`: the agents' hooks started it; a
    file that cannot be read has status "unreadable" and says why in `problem`)."""
    from memfiles.contract import iso_instant

    return [{**item, "updated": iso_instant(item["updated"])} for item in _runs(project)]


def _runs(project: Project) -> list[dict[str, Any]]:
    from memfiles.services.agents import working

    folder = project.settings.memory_dir / working.FOLDER
    found = []
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        if not working.RUN_RE.match(path.stem):
            continue
        item: dict[str, Any] = {"run": path.stem, "path": project.rel(path), "status": "unreadable", "goal": None}
        item["updated"] = path.stat().st_mtime
        item["hooks"] = False
        item["problem"] = None
        try:
            state = working.load(project, path.stem)
        except (MemfilesError, UnicodeDecodeError) as error:
            item["problem"] = str(error)
        else:
            if state is not None:
                item["status"], item["goal"], item["hooks"] = state.status, state.get("goal"), state.hooks
        found.append(item)
    return found


def resolve_run(project: Project, run: str | None) -> str:
    """--run, else $MEMFILES_RUN, else the one active run started with `working start`, else the one active
    run at all; a clear error saying how to choose when that is not one."""
    from memfiles.services.agents.working import RUN_ENV, WorkingError, check_run

    run = run or os.environ.get(RUN_ENV) or None
    if run:
        return check_run(run)
    found = _runs(project)
    active = [item for item in found if item["status"] == "active"]
    started = [item["run"] for item in active if not item["hooks"]]
    if len(started) == 1:
        return started[0]
    if len(started) > 1:
        raise WorkingError(f"several runs are active ({', '.join(started)}): pass --run or set {RUN_ENV}")
    if len(active) == 1:
        return active[0]["run"]
    broken = "".join(f"; {item['run']}: unreadable: {item['problem']}" for item in found if item["problem"])
    if not active:
        raise WorkingError(
            f"no active run: start one with `memfiles working start --goal ...`, or pass --run (or set {RUN_ENV})"
            + broken
        )
    newest = sorted(active, key=lambda item: -item["updated"])
    named = ", ".join(item["run"] for item in newest[:3]) + (", ..." if len(newest) > 3 else "")
    raise WorkingError(
        f"no run started with `memfiles working start` is active, and {len(active)} runs the agents' hooks"
        f" started are (newest: {named}): pass --run NAME (or set {RUN_ENV}), or start one with"
        " `memfiles working start --goal ...`; `memfiles working list` shows them all"
    )
