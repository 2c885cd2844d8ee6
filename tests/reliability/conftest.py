"""What the reliability tests share: real CLI processes against temp projects, and the integrity check
every fault ends with (every file parses, ids unique, nothing half-written, the index equal to a rebuild).

Heavy variants carry the `heavy` marker: deselected by default, run with
`.venv/bin/python -m pytest -m heavy tests/reliability -s` (docs/reliability.md has their figures).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memfiles.config import load_settings
from memfiles.services.upkeep.check import check_project
from memfiles.store.project import Project

BIN = Path(sys.executable).parent


@pytest.fixture(autouse=True)
def patient_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a loaded 2-core machine the write path waits for the index instead of printing a timeout warning
    (the 2 s bound is a speed figure, measured in benchmarks)."""
    monkeypatch.setenv("MEMFILES_INDEX_TIMEOUT", "300")


def cli(root: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 600, check: bool = True) -> Any:
    """`memfiles --root ROOT args...` in a real process; CompletedProcess (text)."""
    result = subprocess.run(
        [str(BIN / "memfiles"), "--root", str(root), *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check:
        assert result.returncode == 0, (args, result.stdout[-2000:], result.stderr[-2000:])
    return result


def memsearch(root: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 600) -> Any:
    return subprocess.run(
        [str(BIN / "memsearch"), "--root", str(root), *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def spawn(root: Path, *args: str, env: dict[str, str] | None = None, program: str = "memfiles") -> subprocess.Popen:
    return subprocess.Popen(
        [str(BIN / program), "--root", str(root), *args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def no_traceback(*outputs: str) -> None:
    for text in outputs:
        assert "Traceback (most recent call last)" not in (text or ""), text[-3000:]


def intact(root: Path) -> list[str]:
    """Every memory file parses, no entry is torn, ids are unique and `check` finds no error; returns the ids."""
    project = Project(load_settings(root))
    files, problems = project.load_all()
    assert problems == [], [p.located() for p in problems]
    ids = [located.entry.id for located in project.entries(files)]
    duplicates = [i for i, n in Counter(ids).items() if n > 1]
    assert duplicates == [], duplicates
    findings, _count = check_project(project)
    errors = [f for f in findings if f.severity == "error"]
    assert errors == [], [str(f) for f in errors][:10]
    return ids


def drift(root: Path) -> dict[str, Any]:
    result = cli(root, "backfill", "--check", "--json", check=False)
    no_traceback(result.stderr)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def ops_file(
    path: Path, count: int, start: int = 0, kinds: tuple[str, ...] = ("decision", "friction", "lesson")
) -> Path:
    """A batch of `count` adds with distinct titles and bodies, spread over several files."""
    ops = [
        {
            "op": "add",
            "kind": kinds[n % len(kinds)],
            "title": f"Finding {n} about subsystem {n % 37}",
            "area": f"area{n % 7}",
            "body": f"Finding {n}: subsystem {n % 37} stalls once its queue holds {n} items; cap the queue and retry.",
        }
        for n in range(start, start + count)
    ]
    path.write_text(json.dumps({"ops": ops}))
    return path
