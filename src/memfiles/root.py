"""Which folder is the project root: the one --root or MEMFILES_ROOT names (checked), else the topmost
folder holding memory/ from the current one up to the repository top. Stdlib only."""

from __future__ import annotations

import os
from pathlib import Path

from memfiles.errors import ConfigError

MEMORY_DIR = "memory"
INDEX_DIR = ".memsearch"  # the derived index, beside memory/ (config.Settings.index_dir)


def _is_root(folder: Path) -> bool:
    """A folder that holds memory/ (memory/memfiles.toml included) or a pyproject.toml with [tool.memfiles]."""
    if (folder / MEMORY_DIR).is_dir():
        return True
    pyproject = folder / "pyproject.toml"
    try:
        return pyproject.is_file() and "[tool.memfiles" in pyproject.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def find_root(start: Path | None = None, given: str | Path | None = None) -> Path:
    """The project root: `given` (or MEMFILES_ROOT) when set, which must be an existing folder; else the
    TOPMOST folder from `start` (default: the current one) upward that holds memory/ or a pyproject.toml
    with [tool.memfiles], looking no higher than the repository top (the nearest folder with .git).

    Topmost, so that `pkg/memory/` is never a root of its own while an ancestor is one: every folder of a
    project resolves to the same root, and ids are allocated from the whole project.
    """
    given = given or os.environ.get("MEMFILES_ROOT") or None
    if given is not None:
        return _given_root(given)
    here = (start or Path.cwd()).resolve()
    found = _topmost_root(here)
    if found is None:
        raise ConfigError(
            f"no memory/ folder at or above {here}: run memfiles in a project that has one, or pass --root DIR"
        )
    return found


def _topmost_root(here: Path) -> Path | None:
    """The topmost folder from `here` up to the repository top (the nearest with .git) that is a root."""
    found: Path | None = None
    for folder in (here, *here.parents):
        if _is_root(folder):
            found = folder
        if (folder / ".git").exists():  # the repository top bounds the walk
            break
    return found


def _given_root(given: str | Path) -> Path:
    """The root named by --root or MEMFILES_ROOT, which must be a project's root: an existing folder that
    holds memory/ (or a marker), not inside another project's tree. Otherwise a write there would start a
    second id space beside the project's, handing out ids the project already uses."""
    from_env = os.environ.get("MEMFILES_ROOT") == str(given)
    label = f"MEMFILES_ROOT={given}" if from_env else f"--root {given}"
    folder = Path(given).expanduser()
    if not folder.exists():
        raise ConfigError(f"{label}: no such folder (it must name the project root)", key="root")
    if not folder.is_dir():
        raise ConfigError(f"{label}: not a folder (it must name the project root)", key="root")
    folder = folder.resolve()
    if not _is_root(folder):
        raise ConfigError(
            f"{label}: no {MEMORY_DIR}/ folder in {given}; run `mkdir {Path(given) / MEMORY_DIR}` to start a project"
            " there",
            key="root",
        )
    above = _topmost_root(folder.parent) if not (folder / ".git").exists() else None
    if above is not None:
        raise ConfigError(
            f"{label}: {given} is inside the project rooted at {above} (it holds {MEMORY_DIR}/); use --root"
            f" {above}, so that ids are handed out from the whole project",
            key="root",
        )
    return folder
