"""The pre-commit hooks this repository offers, checked by pre-commit itself on a temporary repository."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

BIN = Path(sys.executable).parent
GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]


def test_the_manifest_is_valid_and_offers_the_three_hooks() -> None:
    """pre-commit's own loader accepts .pre-commit-hooks.yaml: check, fmt --check and refs --dangling."""
    from pre_commit.clientlib import load_manifest

    hooks = {hook["id"]: hook for hook in load_manifest(str(REPO / ".pre-commit-hooks.yaml"))}
    assert {hook["entry"] for hook in hooks.values()} == {
        "memfiles check",
        "memfiles fmt --check",
        "memfiles refs --dangling",
    }
    assert all(hook["pass_filenames"] is False for hook in hooks.values())


def _committed_hooks() -> bool:
    done = subprocess.run(["git", "ls-files", ".pre-commit-hooks.yaml"], cwd=REPO, capture_output=True, text=True)
    return bool(done.stdout.strip())


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.skipif(not _committed_hooks(), reason="try-repo reads the hooks file from git")
def test_try_repo_runs_the_hooks_on_a_temporary_repository(tmp_path: Path) -> None:
    """`pre-commit try-repo` installs memfiles into its own venv and the hooks pass, then fail on real faults."""
    project = tmp_path / "project"
    (project / "memory").mkdir(parents=True)
    env = {key: value for key, value in os.environ.items() if key not in ("MEMFILES_ROOT", "MEMFILES_RUN")}
    env["PRE_COMMIT_HOME"] = str(tmp_path / "cache")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(
        [
            str(BIN / "memfiles"),
            "--root",
            str(project),
            "add",
            "-k",
            "decision",
            "-t",
            "Keep notes",
            "-a",
            "x",
            "--body",
            "Because.",
        ],
        check=True,
        capture_output=True,
    )
    (project / "notes.txt").write_text("see @@D-001\n")
    subprocess.run([*GIT, "add", "-A"], cwd=project, check=True)
    subprocess.run([*GIT, "commit", "-qm", "init"], cwd=project, check=True)

    def try_repo() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "pre-commit"), "try-repo", str(REPO), "--all-files"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )

    clean = try_repo()
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.count("Passed") == 3

    dangling = "@@" + "D-404"  # spelled in two parts, so this file does not hold a dangling reference itself
    (project / "notes.txt").write_text(f"see {dangling}\n")
    decisions = project / "memory" / "decisions.md"
    decisions.write_text(decisions.read_text().replace("- status: proposed", "- status: someday"))
    broken = try_repo()
    assert broken.returncode == 1
    assert "memfiles refs --dangling" in broken.stdout and dangling in broken.stdout
    assert "status 'someday'" in broken.stdout
