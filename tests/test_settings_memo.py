"""memfiles/settings_memo.py: what the thin hook client knows of the settings, read in full once per change."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import memfiles
from memfiles.settings_memo import MEMO_FILE, remembered

SECRET = "http://chroma.internal:8000/sk-do-not-write-me"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memfiles.toml").write_text("hooks_timeout = 3\n")
    for name in [n for n in os.environ if n.startswith("MEMFILES_")]:
        monkeypatch.delenv(name)
    return tmp_path


def memo(root: Path) -> dict:
    return json.loads((root / ".memfiles" / MEMO_FILE).read_text())


def full_reads(root: Path, env: dict[str, str] | None = None) -> bool:
    """Whether a fresh process asking the memo loads config.py (reads the settings in full)."""
    code = (
        "import sys\nfrom memfiles.settings_memo import remembered\n"
        f"print(remembered({str(root)!r}), 'memfiles.config' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return done.stdout.split()[-1] == "True"


def test_the_memo_keeps_no_variables_value_and_is_its_owners_alone(project: Path, monkeypatch) -> None:
    """A variable's value may be a secret (a server's URL): only a digest of it is written, in a file
    only its owner reads, in a folder git ignores."""
    monkeypatch.setenv("MEMFILES_CHROMA_URL", SECRET)
    assert remembered(str(project)) == {"hooks_timeout": 3.0}
    text = (project / ".memfiles" / MEMO_FILE).read_text()
    assert "sk-do-not-write-me" not in text and "chroma.internal" not in text
    assert stat.S_IMODE((project / ".memfiles" / MEMO_FILE).stat().st_mode) == 0o600
    assert (project / ".memfiles" / ".gitignore").read_text().strip().endswith("*")
    assert "MEMFILES_CHROMA_URL" in memo(project)["variables"]


def test_only_a_change_of_what_settings_are_read_from_reads_them_again(project: Path) -> None:
    """The config's text and the variables a setting is read from: a variable no setting reads
    (MEMFILES_RUN, which each agent sets its own) costs no full read."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("MEMFILES_")}
    assert full_reads(project, env)  # no memo yet
    assert not full_reads(project, env)
    assert not full_reads(project, {**env, "MEMFILES_RUN": "agent-2"})
    assert full_reads(project, {**env, "MEMFILES_SEARCH_TIMEOUT": "9"})
    (project / "memory" / "memfiles.toml").write_text("hooks_timeout = 4\n")
    assert full_reads(project, env)
    assert remembered(str(project)) == {"hooks_timeout": 4.0}


def test_another_version_of_memfiles_reads_them_again(project: Path, monkeypatch) -> None:
    """A release may change a default or a rule: its memo is its own."""
    assert remembered(str(project)) == {"hooks_timeout": 3.0}
    key = memo(project)["key"]
    monkeypatch.setattr(memfiles, "__version__", "99.0")
    (project / "memory" / "memfiles.toml").write_text("hooks_timeout = 3\n")
    assert remembered(str(project)) == {"hooks_timeout": 3.0}
    assert memo(project)["key"] != key


@pytest.mark.parametrize(
    "kept",
    ["not json", '{"variables": [], "key": "x", "values": {}}', '{"variables": 1}', "[]"],
)
def test_a_memo_that_does_not_hold_the_answer_is_read_again(project: Path, kept: str) -> None:
    (project / ".memfiles").mkdir()
    (project / ".memfiles" / MEMO_FILE).write_text(kept)
    assert remembered(str(project)) == {"hooks_timeout": 3.0}
    assert memo(project)["values"] == {"hooks_timeout": 3.0}


@pytest.mark.parametrize("shape", ["folder", "dangling link"])
def test_a_config_file_that_is_not_a_file_is_left_to_the_settings_reader(project: Path, shape: str) -> None:
    """memory/memfiles.toml a folder or a link to nothing: no memo answers (made while it was absent
    or not); the full command says what is wrong."""
    own = project / "memory" / "memfiles.toml"
    own.unlink()
    assert remembered(str(project)) == {"hooks_timeout": 2.0}  # remembered with no file
    if shape == "folder":
        own.mkdir()
    else:
        own.symlink_to(project / "nowhere.toml")
    assert remembered(str(project)) is None


def test_a_bad_value_is_not_remembered(project: Path) -> None:
    (project / "memory" / "memfiles.toml").write_text('hooks_timeout = "soon"\n')
    assert remembered(str(project)) is None
    assert not (project / ".memfiles" / MEMO_FILE).exists()
