"""Settings, frozen. Precedence: flag > environment MEMFILES_* > [tool.memfiles] in pyproject.toml or
memory/memfiles.toml > defaults. Stdlib only, so every command can read it without cost."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memfiles.errors import ConfigError
from memfiles.format.ids import DEFAULT_KINDS, RETIRED, Kind, Schema

MEMORY_DIR = "memory"
STATE_DIR = ".memfiles"
INDEX_DIR = ".memsearch"


@dataclass(frozen=True)
class Settings:
    """Everything a command needs to know about the project it runs in."""

    root: Path
    schema: Schema = field(default_factory=Schema)
    wrap: int = 100
    stale_days: int = 90
    open_statuses: tuple[str, ...] = ("open", "proposed")
    index_timeout: float = 2.0
    index_url: str | None = None
    model: str | None = None
    docs_dir: str = "docs"
    skills_dir: str = "skills"
    exclude: tuple[str, ...] = ()
    refs_exclude: tuple[str, ...] = ()
    lock_timeout: float = 30.0
    llm_url: str | None = None
    llm_model: str | None = None

    @property
    def memory_dir(self) -> Path:
        return self.root / MEMORY_DIR

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @property
    def index_dir(self) -> Path:
        return self.root / INDEX_DIR


_SCALARS: dict[str, type] = {
    "wrap": int,
    "stale_days": int,
    "index_timeout": float,
    "index_url": str,
    "model": str,
    "docs_dir": str,
    "skills_dir": str,
    "lock_timeout": float,
    "llm_url": str,
    "llm_model": str,
    "id_width": int,
    "title_limit": int,
    "body_limit": int,
}
_LISTS = {"open_statuses", "exclude", "refs_exclude"}
_SCHEMA_KEYS = {"id_width", "title_limit", "body_limit"}
_ENV = {
    "MEMFILES_LLM_URL": "llm_url",
    "MEMFILES_CHROMA_URL": "index_url",
    "MEMFILES_MODEL": "model",
    "MEMFILES_INDEX_TIMEOUT": "index_timeout",
}


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
        folder = Path(given).expanduser()
        if not folder.exists():
            raise ConfigError(f"--root {given}: no such folder (MEMFILES_ROOT or --root must name an existing one)")
        if not folder.is_dir():
            raise ConfigError(f"--root {given}: not a folder (MEMFILES_ROOT or --root must name the project root)")
        return folder.resolve()
    here = (start or Path.cwd()).resolve()
    found: Path | None = None
    for folder in (here, *here.parents):
        if _is_root(folder):
            found = folder
        if (folder / ".git").exists():  # the repository top bounds the walk
            break
    if found is None:
        raise ConfigError(
            f"no memory/ folder at or above {here}: run memfiles in a project that has one, or pass --root DIR"
        )
    return found


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: {error}") from error


def _file_config(root: Path) -> tuple[dict[str, Any], Path | None]:
    own = root / MEMORY_DIR / "memfiles.toml"
    if own.is_file():
        return _read_toml(own), own
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        table = _read_toml(pyproject).get("tool", {}).get("memfiles")
        if table is not None:
            return table, pyproject
    return {}, None


def _kinds(table: dict[str, Any], source: Path | None) -> tuple[Kind, ...]:
    kinds = {kind.name: kind for kind in DEFAULT_KINDS}
    for name, spec in table.items():
        if not isinstance(spec, dict):
            raise ConfigError(f"{source}: kinds.{name} must be a table with prefix, statuses, file")
        unknown = set(spec) - {"prefix", "statuses", "file"}
        if unknown:
            raise ConfigError(f"{source}: kinds.{name}: unknown keys {', '.join(sorted(unknown))}")
        base = kinds.get(name)
        prefix = spec.get("prefix", base.prefix if base else None)
        if not prefix or not str(prefix).isupper() or not str(prefix).isalnum():
            raise ConfigError(f"{source}: kinds.{name}: prefix must be capital letters (like D), got {prefix!r}")
        statuses = tuple(spec.get("statuses", base.statuses if base else ("active",)))
        if RETIRED not in statuses:
            statuses = (*statuses, RETIRED)
        file = spec.get("file", base.file if base else f"{name}s.md")
        kinds[name] = Kind(name, str(prefix), statuses, str(file))
    prefixes = [kind.prefix for kind in kinds.values()]
    duplicated = {prefix for prefix in prefixes if prefixes.count(prefix) > 1}
    if duplicated:
        raise ConfigError(f"{source}: two kinds share the prefix {', '.join(sorted(duplicated))}")
    return tuple(kinds.values())


def load_settings(root: Path | None = None, **overrides: Any) -> Settings:
    """Settings for the project at `root` (found from the current folder when None)."""
    root = find_root(given=root)
    table, source = _file_config(root)
    values: dict[str, Any] = {}
    schema_values: dict[str, Any] = {}
    kinds = DEFAULT_KINDS
    for key, value in table.items():
        if key == "kinds":
            kinds = _kinds(value, source)
        elif key in _SCALARS:
            try:
                converted = _SCALARS[key](value)
            except (TypeError, ValueError) as error:
                raise ConfigError(f"{source}: {key} must be {_SCALARS[key].__name__}, got {value!r}") from error
            (schema_values if key in _SCHEMA_KEYS else values)[key] = converted
        elif key in _LISTS:
            if not isinstance(value, list):
                raise ConfigError(f"{source}: {key} must be a list")
            values[key] = tuple(str(item) for item in value)
        else:
            raise ConfigError(f"{source}: unknown setting {key!r}")
    for variable, key in _ENV.items():
        if os.environ.get(variable):
            values[key] = _SCALARS[key](os.environ[variable])
    for key, value in overrides.items():
        if value is not None:
            values[key] = value
    settings = Settings(root=root, schema=Schema(kinds=kinds, **schema_values))
    return replace(settings, **values)
