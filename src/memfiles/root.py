"""Which folder is the project root: the one --root or MEMFILES_ROOT names (checked), else the topmost
folder holding memory/ from the current one up to the repository top. Stdlib only."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: the thin memsearch client imports this module and nothing heavier
if TYPE_CHECKING:
    from pathlib import Path

MEMORY_DIR = "memory"
INDEX_DIR = ".memsearch"  # the derived index, beside memory/ (config.Settings.index_dir)
STATE_DIR = ".memfiles"  # run-time state beside memory/: locks, journal, hook sessions (config.Settings.state_dir)
PERSONA_FILE = "persona.md"  # behaviour configuration in the root memory/: never a memory file, never indexed
CONFIG_FILES = (f"{MEMORY_DIR}/memfiles.toml", "pyproject.toml")  # where settings are read from, the winner first
WORKING_FOLDER = "working"  # memory/working/<run>.md: runs' working memory (services/agents/working.py), nothing else

# The rule works on plain strings with os.path, so that the thin memsearch client (cli/quick_search.py)
# finds the same root without importing pathlib; find_root wraps the answer in a Path.


def _is_root(folder: str) -> bool:
    """A folder that holds memory/ (memory/memfiles.toml included) or a pyproject.toml with [tool.memfiles]."""
    if os.path.isdir(os.path.join(folder, MEMORY_DIR)):
        return True
    pyproject = os.path.join(folder, "pyproject.toml")
    try:
        if not os.path.isfile(pyproject):
            return False
        with open(pyproject, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return False
    return _may_declare(text) and declares_memfiles(text)  # a look first: parsing TOML costs 18 ms of imports


def _may_declare(pyproject: str) -> bool:
    """Whether a line could open or set a tool.memfiles table (`[tool.memfiles...]`, `tool.memfiles.x =`,
    `memfiles = ...` under `[tool]`): a package that only depends on memfiles is not parsed."""
    for line in pyproject.splitlines():
        line = line.strip()
        if "memfiles" in line and ((line.startswith(("[", "tool")) and "tool" in line) or line.startswith("memfiles")):
            return True
    return False


def declares_memfiles(pyproject: str) -> bool:
    """Whether the text of a pyproject.toml has a tool.memfiles table (in any TOML spelling). A file that
    is not TOML counts when it has a `[tool.memfiles` header: reading its settings then says what is wrong
    and where, rather than the project going unfound."""
    import tomllib

    try:
        tool = tomllib.loads(pyproject).get("tool")
    except tomllib.TOMLDecodeError:
        return "[tool.memfiles" in pyproject
    return isinstance(tool, dict) and "memfiles" in tool


def root_folder(start: str | None = None, given: str | None = None) -> str:
    """find_root's answer as a string (ConfigError the same way)."""
    given = given or os.environ.get("MEMFILES_ROOT") or None
    if given is not None:
        return _given_root(given)
    here = os.path.realpath(start or os.getcwd())
    found = _topmost_root(here)
    if found is None:
        from memfiles.errors import ConfigError

        raise ConfigError(
            f"no memory/ folder at or above {here}: run memfiles in a project that has one, or pass --root DIR"
            " (to start one here: mkdir memory)"
        )
    return found


def _holds_notes(folder: str) -> bool:
    """True when `folder` holds what a memory folder holds (Markdown, ids.txt, memfiles.toml): given as the
    root, it is a project's memory folder, not a new project's root (an empty one could be either)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return any(name.endswith(".md") or name in ("ids.txt", "memfiles.toml") for name in names)


def find_root(start: Path | None = None, given: str | Path | None = None) -> Path:
    """The project root: `given` (or MEMFILES_ROOT) when set, which must be an existing folder; else the
    TOPMOST folder from `start` (default: the current one) upward that holds memory/ or a pyproject.toml
    with [tool.memfiles], looking no higher than the repository top (the nearest folder with .git).

    Topmost, so that `pkg/memory/` is never a root of its own while an ancestor is one: every folder of a
    project resolves to the same root, and ids are allocated from the whole project.
    """
    from pathlib import Path

    return Path(root_folder(str(start) if start is not None else None, str(given) if given is not None else None))


def _topmost_root(here: str) -> str | None:
    """The topmost folder from `here` up to the repository top (the nearest with .git) that is a root."""
    found: str | None = None
    folder = here
    while True:
        if _is_root(folder):
            found = folder
        if os.path.exists(os.path.join(folder, ".git")):  # the repository top bounds the walk
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return found


def _given_root(given: str) -> str:
    """The root named by --root or MEMFILES_ROOT, which must be a project's root: an existing folder that
    holds memory/ (or a marker), not inside another project's tree. Otherwise a write there would start a
    second id space beside the project's, handing out ids the project already uses."""
    folder = os.path.expanduser(given)
    problem = None
    if not os.path.exists(folder):
        problem = "no such folder (it must name the project root)"
    elif not os.path.isdir(folder):
        problem = "not a folder (it must name the project root)"
    else:
        folder = os.path.realpath(folder)
        if not _is_root(folder):
            from pathlib import Path

            problem = (
                f"no {MEMORY_DIR}/ folder in {given}; run `mkdir {Path(given) / MEMORY_DIR}` to start a project there"
            )
            if os.path.basename(folder) == MEMORY_DIR and _holds_notes(folder):
                parent = os.path.relpath(os.path.dirname(folder))
                problem = f"{given} is the memory folder itself; give the project root: --root {parent}"
        else:
            parent = os.path.dirname(folder)
            above = (
                _topmost_root(parent) if parent != folder and not os.path.exists(os.path.join(folder, ".git")) else None
            )
            if above is not None:
                problem = (
                    f"{given} is inside the project rooted at {above} (it holds {MEMORY_DIR}/); use --root"
                    f" {above}, so that ids are handed out from the whole project"
                )
    if problem is None:
        return folder
    from memfiles.errors import ConfigError

    from_env = os.environ.get("MEMFILES_ROOT") == str(given)
    label = f"MEMFILES_ROOT={given}" if from_env else f"--root {given}"
    raise ConfigError(f"{label}: {problem}", key="root")
