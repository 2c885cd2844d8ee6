"""Settings, frozen. Precedence: flag > environment MEMFILES_* > [tool.memfiles] in pyproject.toml or
memory/memfiles.toml > defaults. Stdlib only, so every command can read it without cost."""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlparse

from memfiles.errors import ConfigError
from memfiles.format.ids import DEFAULT_KINDS, RETIRED, Kind, Schema, is_id
from memfiles.hook_events import HOOKS_TIMEOUT
from memfiles.root import CONFIG_FILES, PERSONA_FILE, WORKING_FOLDER, find_root
from memfiles.root import INDEX_DIR as INDEX_DIR  # re-exported, as MEMORY_DIR
from memfiles.root import MEMORY_DIR as MEMORY_DIR  # re-exported: callers import it from here
from memfiles.root import STATE_DIR as STATE_DIR  # re-exported, as MEMORY_DIR

# The score a hit needs, per layer, before recall shows it and a hook injects it: calibrated on labelled
# agent situations of three made-up projects and checked on a fourth (scripts/eval_situations.py,
# docs/hooks.md). A layer has its own floor because its entries are written differently: a procedure
# names the commands of its task, an episode tells one run's story in other words.
RECALL_FLOORS = (("procedure", 0.5), ("episode", 0.4), ("lesson", 0.4), ("insight", 0.4))
FLOOR_LAYERS = tuple(layer for layer, _floor in RECALL_FLOORS)
WATCH_IDLE_EXIT_MAX = 7 * 86400  # a week: the longest idle exit, for the setting and `watch --idle-exit`
# Commands that delete, force, deploy or migrate: a hook recalls the episodes of similar actions first.
HOOKS_RISKY = (
    r"\brm\s+-[a-zA-Z]*[rf]",
    # read up to the next `git push` only: `.*` rescanned the rest of the text from each one (issue 34)
    r"\bgit\s+push\b(?:(?!\bgit\s+push\b).)*?(?:--force|\s-f\b)",
    r"\bgit\s+(reset\s+--hard|clean\s+-[a-zA-Z]*f|branch\s+-D)",
    r"\b(drop|truncate)\s+(table|database|schema)\b",
    r"\bdeploy",
    r"\bmigrat",
    r"\b(kubectl|helm)\s+(delete|apply|upgrade|uninstall)\b",
    r"\bterraform\s+(apply|destroy)\b",
    r"\b(npm|twine|cargo|poetry)\s+publish\b",
)


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
    # With a Chroma server (index_url): the pool of shared vectors this project's clones use, by name
    # (`memfiles-vectors-<model>-<dim>-<index_collection>`); default: the one pool of the model on that server,
    # which every project there shares (vectors are keyed by their text: index/shared.py).
    index_collection: str | None = None
    model: str | None = None
    docs_dir: str = "docs"
    skills_dir: str = "skills"
    exclude: tuple[str, ...] = ()
    refs_exclude: tuple[str, ...] = ()
    lock_timeout: float = 30.0
    # How long a search waits for the index while writers (backfill, the write path) hold it: a reader
    # must not fail because writers are busy; see docs/reliability.md.
    search_timeout: float = 120.0
    # A memsearch that found no watcher starts one in the background, so that the next query is warm;
    # false, or MEMFILES_SEARCH_WATCH=0, turns that off.
    search_watch: bool = True
    # Such a watcher (and one a write or the agent hooks start) exits after this many seconds without a
    # query or a change to the memory files; 0: never. `memfiles watch` started by hand stays (its
    # --idle-exit: 0). 15 minutes: an agent at work fires a hook at every prompt and command, and a person's
    # searches come minutes apart, so a watcher in use stays; one nobody asks for 15 minutes costs the next
    # search one cold answer (about 0.3 s), and its memory is free again (every project searched leaves
    # one: with 2 h, four projects searched once held four watchers for two hours). docs/search.md
    watch_idle_exit: float = 900.0  # at most WATCH_IDLE_EXIT_MAX
    # true: a watcher asked its first query loads the torch form of the bundled model's encoder in the
    # background and encodes queries with it, about 2x faster a query than the numpy form, for about
    # 190 MB more memory held for the watcher's life. Off by default: a watcher every search and hook
    # may leave behind stays small (docs/search.md, issue 34); MEMFILES_WATCH_TORCH=1 turns it on.
    watch_torch: bool = False
    # Seconds without a sync before a watcher rebuilds BM25 and saves its catalog (services/watch/idle.py).
    watch_save_after: float = 1.0
    # Bytes of .memsearch/watch.log before it rotates (3 old files kept).
    watch_log_bytes: int = 1_000_000
    # The precision of the encoder child a first backfill or a rebuild starts (index/encode_worker.py;
    # queries and a watcher's encodes stay float32): "auto" computes in bfloat16 where the CPU has AMX
    # (the encode about 2x faster here, vectors within a cosine of 0.9999 of float32's; docs/search.md),
    # "float32" never does; "bfloat16" forces it.
    bulk_precision: str = "auto"
    llm_url: str | None = None
    llm_model: str | None = None
    # How long `distil --drafter llm` waits for the model's answer to one request; a model that does not
    # answer in that time is not asked again (a hung endpoint held distil 8 minutes over 4 attempts).
    llm_timeout: float = 120.0
    # Agent hooks (services/agents/hooks.py, docs/hooks.md).
    hooks_enabled: bool = True
    hooks_budget: int = 1500  # characters of injected context, the marker included
    recall_floors: tuple[tuple[str, float], ...] = RECALL_FLOORS
    hooks_floor: float | None = None  # one floor for every layer of the hooks, in place of recall_floors
    hooks_risky: tuple[str, ...] = HOOKS_RISKY
    hooks_timeout: float = HOOKS_TIMEOUT  # seconds a context-giving hook call may take before it gives up
    hooks_watch: bool = True  # SessionStart starts the watcher when an index exists and none runs
    hooks_episode: bool = False  # SessionEnd records a run the hooks started as an episode
    hooks_drafter: str = "deterministic"  # or "llm": the episode's title and outcome drafted at llm_url

    def floor(self, layer: str, hooks: bool = False) -> float:
        """The score a hit of `layer` needs (recall_floors; for a hook, hooks_floor when it is set)."""
        if hooks and self.hooks_floor is not None:
            return self.hooks_floor
        return dict(self.recall_floors).get(layer, 0.0)

    @property
    def memory_dir(self) -> Path:
        return self.root / MEMORY_DIR

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @property
    def index_dir(self) -> Path:
        return self.root / INDEX_DIR


_SCHEMA_KEYS = {"id_width", "title_limit", "body_limit"}


# Validation: one rule per setting, here and nowhere else. A rule returns the value to use or raises
# _Invalid saying what the setting takes; the caller adds the file and key (or the variable) and the value.


class _Invalid(ValueError):
    """A value that breaks its setting's rule; the message says what the setting takes."""


Rule = Callable[[Any, Path], Any]
_WORD_RE = re.compile(r"^[a-z][a-z0-9_-]*$")


def _shown(value: Any) -> str:
    """A value as TOML would spell it (true, 1.9, "x"), so the message shows what the user wrote."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(item) for item in value) + "]"
    return repr(value)


def _whole(low: int, high: int, *, off: bool = False) -> Rule:
    expected = f"a whole number from {low} to {high}"
    expected = f"0 (off) or {expected}" if off else expected

    def rule(value: Any, _base: Path) -> int:
        # bool is an int to Python, never to a user: `wrap = true` must not mean width 1
        if isinstance(value, int) and not isinstance(value, bool) and ((off and value == 0) or low <= value <= high):
            return value
        raise _Invalid(f"must be {expected}")

    return rule


def _seconds(high: float, *, zero: bool) -> Rule:
    expected = f"a number of seconds {'from 0' if zero else 'above 0'} up to {high:g}"

    def rule(value: Any, _base: Path) -> float:
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and (value >= 0 if zero else value > 0)
            and value <= high
        ):
            return float(value)
        raise _Invalid(f"must be {expected}")

    return rule


def _text(value: Any, _base: Path) -> str:
    if isinstance(value, str) and value.strip() and "\n" not in value:
        return value.strip()
    raise _Invalid("must be a non-empty string on one line")


def _url(*, bare_host: bool) -> Rule:
    expected = "an http:// or https:// URL" + (" (or host:port)" if bare_host else "")

    def rule(value: Any, base: Path) -> str:
        try:
            text = _text(value, base)
        except _Invalid:
            raise _Invalid(f"must be {expected}") from None
        parsed = urlparse(text if "://" in text or not bare_host else f"http://{text}")
        try:
            port_ok = parsed.port is None or parsed.port > 0
        except ValueError:
            port_ok = False
        if parsed.scheme in ("http", "https") and parsed.hostname and port_ok and not re.search(r"\s", text):
            if bare_host and (parsed.username is not None or parsed.query or parsed.fragment):
                raise _Invalid(f"must be {expected}, with no user, query or fragment (a Chroma server is its address)")
            return text
        raise _Invalid(f"must be {expected}")

    return rule


COLLECTION_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,38}[A-Za-z0-9])?$")


def _collection(value: Any, base: Path) -> str:
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, str) and COLLECTION_RE.match(text) and ".." not in text:
        return text
    raise _Invalid(
        "must be 1-40 letters, digits, '.', '_' or '-' (no '..'), starting and ending with a letter or digit"
    )


def _folder(value: Any, base: Path) -> str:
    text = _text(value, base)
    path = PurePosixPath(text.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or text.startswith("~"):
        raise _Invalid("must be a folder relative to the project root, inside it")
    return text


def _model(value: Any, base: Path) -> str:
    """A sentence-transformers folder (relative to `base`) or a model name.

    A folder that does not exist is not refused here: it is the index's problem, not the files', so
    writes and checks go on and the index commands say what to fix (see index/embedder.resolve_model).
    """
    text = _text(value, base)
    if not text.startswith(("/", "./", "../", "~", ".\\", "..\\")) and not (base / text).is_dir():
        return text  # a name sentence-transformers knows
    try:
        path = Path(text).expanduser()
    except RuntimeError:  # ~user that does not exist
        raise _Invalid("names a home folder that does not exist") from None
    return str((path if path.is_absolute() else base / path).resolve())


def _strings(what: str) -> Rule:
    def rule(value: Any, _base: Path) -> tuple[str, ...]:
        if isinstance(value, list) and all(isinstance(item, str) and item.strip() for item in value):
            return tuple(value)
        raise _Invalid(f"must be a list of {what}")

    return rule


def _flag(value: Any, _base: Path) -> bool:
    if isinstance(value, bool):
        return value
    raise _Invalid(
        "must be true or false"
        + (" (unquoted in a file; a variable also takes 1/0, on/off, yes/no)" if isinstance(value, str) else "")
    )


# How an environment variable spells a flag; in TOML only true and false are a flag.
_FLAG_WORDS = {"1": True, "true": True, "on": True, "yes": True, "0": False, "false": False, "off": False, "no": False}


def _fraction(value: Any, _base: Path) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= 1:
        return float(value)
    raise _Invalid("must be a number from 0 to 1 (a hit's score, docs/json.md)")


def _floors(value: Any, base: Path) -> tuple[tuple[str, float], ...]:
    """A table of layer = floor; the layers it leaves out keep their calibrated floor."""
    expected = f"a table of layer = floor, like {{procedure = 0.35}} (layers: {', '.join(FLOOR_LAYERS)})"
    if not isinstance(value, dict):
        raise _Invalid(f"must be {expected}")
    unknown = sorted(set(value) - set(FLOOR_LAYERS))
    if unknown:
        raise _Invalid(f"has no layer {', '.join(unknown)}: must be {expected}")
    given = {}
    for layer, floor in value.items():
        try:
            given[layer] = _fraction(floor, base)
        except _Invalid as error:
            raise _Invalid(f"{layer} {error}") from None
    return tuple((layer, given.get(layer, default)) for layer, default in RECALL_FLOORS)


def _patterns(value: Any, base: Path) -> tuple[str, ...]:
    patterns = _strings('regular expressions, like ["\\\\bdeploy"]')(value, base)
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as error:
            raise _Invalid(f"{json.dumps(pattern)} is not a regular expression ({error})") from None
    return patterns


def _choice(*choices: str) -> Rule:
    def rule(value: Any, _base: Path) -> str:
        if value in choices:
            return value
        raise _Invalid("must be " + " or ".join(json.dumps(choice) for choice in choices))

    return rule


@dataclass(frozen=True)
class Setting:
    """One setting, declared once: its rule, what it does, and the variable and flag that set it. The
    field and its default are Settings' (or Schema's, for id_width, title_limit and body_limit); the
    loader, the environment, the flags and docs/format.md's settings table are all made from this."""

    rule: Rule
    help: str
    env: str | None = None
    flag: str | None = None
    number: bool = False  # a number: a variable's text is read as one (a flag's as true/false by its rule)


SETTINGS: dict[str, Setting] = {
    "wrap": Setting(_whole(20, 1000, off=True), "Body wrapping width: 0 (off) or 20 to 1000.", number=True),
    "stale_days": Setting(_whole(1, 36500), "audit: an open entry older than this is stale (1 to 36500).", number=True),
    "open_statuses": Setting(
        _strings('statuses, like ["open", "proposed"]'), "Statuses audit counts as open; [] turns stale off."
    ),
    "id_width": Setting(_whole(1, 9), "Digits of a new id (1 to 9).", number=True),
    "title_limit": Setting(_whole(10, 1000), "Characters of a title (10 to 1000).", number=True),
    "body_limit": Setting(_whole(100, 1_000_000), "Characters of a body (100 to 1,000,000).", number=True),
    "exclude": Setting(_strings('glob patterns, like ["vendor/*"]'), "Folders not searched for memory/."),
    "refs_exclude": Setting(_strings('glob patterns, like ["tests/*"]'), "Files `refs` does not scan."),
    "docs_dir": Setting(_folder, "Where `@@doc:` references point, relative to the root."),
    "skills_dir": Setting(_folder, "Where `@@skill:` references point, relative to the root."),
    "index_url": Setting(
        _url(bare_host=True),
        "A Chroma server (`http(s)://host:port` or `host:port`) whose vectors the clones share.",
        env="MEMFILES_CHROMA_URL",
        flag="--chroma-url",
    ),
    "index_collection": Setting(
        _collection,
        "A pool of vectors of its own on that server (default: the model's one pool there).",
        env="MEMFILES_INDEX_COLLECTION",
    ),
    "model": Setting(
        _model,
        "A sentence-transformers folder (relative to the root) or name; default: the bundled all-MiniLM-L6-v2.",
        env="MEMFILES_MODEL",
    ),
    "index_timeout": Setting(
        _seconds(600, zero=False),
        "Seconds the write path gives the index (above 0, up to 600).",
        env="MEMFILES_INDEX_TIMEOUT",
        number=True,
    ),
    "lock_timeout": Setting(
        _seconds(3600, zero=True),
        "Seconds a writer waits for the lock (0 to 3600).",
        env="MEMFILES_LOCK_TIMEOUT",
        number=True,
    ),
    "search_timeout": Setting(
        _seconds(3600, zero=True),
        "Seconds a search waits while writers hold the index (0 to 3600).",
        env="MEMFILES_SEARCH_TIMEOUT",
        number=True,
    ),
    "search_watch": Setting(
        _flag, "A memsearch or write that finds no watcher starts one.", env="MEMFILES_SEARCH_WATCH"
    ),
    "watch_idle_exit": Setting(
        _seconds(WATCH_IDLE_EXIT_MAX, zero=True),
        "Seconds without a query or a change before a watcher left behind exits"
        f" (0: never, up to {WATCH_IDLE_EXIT_MAX:g}).",
        env="MEMFILES_WATCH_IDLE_EXIT",
        number=True,
    ),
    "watch_torch": Setting(
        _flag,
        "A watcher encodes queries in torch once asked one: about 2x faster, about 190 MB more.",
        env="MEMFILES_WATCH_TORCH",
    ),
    "watch_save_after": Setting(
        _seconds(3600, zero=True),
        "Seconds without a sync before a watcher rebuilds BM25 and saves its catalog.",
        env="MEMFILES_WATCH_SAVE_AFTER",
        number=True,
    ),
    "watch_log_bytes": Setting(
        _whole(1024, 1_000_000_000),
        "Bytes of .memsearch/watch.log before it rotates (1024 or more; 3 old files kept).",
        env="MEMFILES_WATCH_LOG_BYTES",
        number=True,
    ),
    "bulk_precision": Setting(
        _choice("auto", "float32", "bfloat16"),
        'A first backfill or rebuild: bfloat16 where the CPU has AMX ("auto"), never ("float32"), or always.',
        env="MEMFILES_BULK_PRECISION",
    ),
    "llm_url": Setting(
        _url(bare_host=False), "The model `distil --drafter llm` asks (OpenAI-style API).", env="MEMFILES_LLM_URL"
    ),
    "llm_model": Setting(_text, "The model name sent to llm_url."),
    "llm_timeout": Setting(
        _seconds(3600, zero=False),
        "Seconds the drafter waits for one answer; not asked again after.",
        env="MEMFILES_LLM_TIMEOUT",
        number=True,
    ),
    "hooks_enabled": Setting(_flag, "Agent hooks answer (false: every hook answers `{}`).", env="MEMFILES_HOOKS"),
    "hooks_budget": Setting(
        _whole(200, 100_000), "Characters of context a hook injects, the marker included.", number=True
    ),
    "recall_floors": Setting(_floors, "The score a hit of each layer needs, like {procedure = 0.5} (docs/hooks.md)."),
    "hooks_floor": Setting(
        _fraction, "One floor for every layer of the hooks, in place of recall_floors.", number=True
    ),
    "hooks_risky": Setting(_patterns, "Regular expressions of commands that bring procedures and past failures first."),
    "hooks_timeout": Setting(_seconds(60, zero=False), "Seconds a context-giving hook call may take.", number=True),
    "hooks_watch": Setting(_flag, "SessionStart starts the watcher when an index exists and none runs."),
    "hooks_episode": Setting(_flag, "SessionEnd records a run the hooks started as an episode."),
    "hooks_drafter": Setting(_choice("deterministic", "llm"), "Who drafts that episode's title and outcome."),
}
_RULES: dict[str, Rule] = {key: setting.rule for key, setting in SETTINGS.items()}
_ENV = {setting.env: key for key, setting in SETTINGS.items() if setting.env}


def environment_variables() -> tuple[str, ...]:
    """The MEMFILES_* variables a setting is read from (settings_memo.py keys its memo on them)."""
    return tuple(_ENV)


_NUMBERS = {key for key, setting in SETTINGS.items() if setting.number}
_FLAGS = {key: setting.flag for key, setting in SETTINGS.items() if setting.flag}
KNOWN_SETTINGS = (*SETTINGS, "kinds")


def setting_default(key: str) -> Any:
    """The default of setting `key`, from the Settings field (or Schema's, for the schema keys)."""
    if key in _SCHEMA_KEYS:
        return getattr(Schema(), key)
    return getattr(Settings(root=Path(".")), key)


def settings_markdown() -> str:
    """docs/format.md's settings table, made from SETTINGS (tests/test_config.py holds the page to it)."""
    rows = ["| setting | default | environment | what it does |", "|---|---|---|---|"]
    for key, setting in SETTINGS.items():
        default = setting_default(key)
        if key == "recall_floors":
            shown = ", ".join(f"{layer} {floor:g}" for layer, floor in default)
        elif key == "hooks_risky":
            shown = f"{len(default)} patterns"
        elif key == "model":
            shown = "the bundled model"
        else:
            shown = "unset" if default is None else _shown(list(default) if isinstance(default, tuple) else default)
        env = f"`{setting.env}`" + (f", `{setting.flag}`" if setting.flag else "") if setting.env else ""
        rows.append(f"| `{key}` | `{shown}` | {env} | {setting.help.replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def _checked(
    rule: Rule, value: Any, base: Path, label: str, *, key: str, path: str | None, typed: str | None = None
) -> Any:
    """The value its rule makes of it; ConfigError naming `label` and the value as written (`typed`)."""
    try:
        return rule(value, base)
    except _Invalid as error:
        shown = _shown(typed if typed is not None else value)
        raise ConfigError(f"{label}: {error}, got {shown}", key=key, path=path) from None


def _from_env(key: str, text: str) -> Any:
    """An environment variable's text as the setting's type would read it in TOML (a number for numbers)."""
    if _RULES.get(key) is _flag:
        return _FLAG_WORDS.get(text.strip().lower(), text)
    if key in _NUMBERS:
        for convert in (int, float):
            try:
                return convert(text)
            except ValueError:
                continue
    return text


def _shown_path(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path)


def read_toml(path: Path, shown: str) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"\(at line (\d+)", str(error))
        # "at end of document" names no line: the last one is where the file stopped making sense
        line = int(found.group(1)) if found else max(1, len(text.splitlines()))
        raise ConfigError(f"{shown}:{line}: not valid TOML: {error}", path=shown, line=line) from error
    except UnicodeDecodeError as error:
        raise ConfigError(f"{shown}: not UTF-8 text ({error.reason})", path=shown) from error
    except OSError as error:
        raise ConfigError(f"{shown}: cannot read: {error.strerror}", path=shown) from error


def config_files(root: Path) -> tuple[Path, Path]:
    """The files settings are read from, in the order they win: memory/memfiles.toml, pyproject.toml."""
    own, pyproject = CONFIG_FILES
    return root / own, root / pyproject


def config_stamp(root: Path) -> tuple[bytes | None, ...]:
    """The config files' contents (None for one that is missing or unreadable): a long-running process
    (the watcher) compares them to know its settings are stale. The bytes, not the times: a file saved
    again unchanged changes nothing. Cheap: two small reads."""
    stamps: list[bytes | None] = []
    for path in config_files(root):
        try:
            stamps.append(path.read_bytes())
        except OSError:
            stamps.append(None)
    return tuple(stamps)


def _file_config(root: Path) -> tuple[dict[str, Any], str | None]:
    """The settings table and the file it came from (relative to the root): memfiles.toml wins."""
    own, pyproject = config_files(root)
    if own.is_file():
        shown = _shown_path(own, root)
        return _own_table(read_toml(own, shown), shown), shown
    if own.is_symlink() or own.exists():  # a folder, a link to nothing: meant as the settings, not readable
        shown = f"{MEMORY_DIR}/{own.name}"  # as named: a link is not followed to say where it points
        what = "a folder" if own.is_dir() else "a link to nothing" if not own.exists() else "not a regular file"
        raise ConfigError(f"{shown}: cannot be read as settings: it is {what}", path=shown)
    if pyproject.is_file():
        shown = _shown_path(pyproject, root)
        table = _pyproject_table(read_toml(pyproject, shown), shown)
        if table is not None:
            return table, shown
    return {}, None


def _pyproject_table(document: dict[str, Any], shown: str) -> dict[str, Any] | None:
    """pyproject.toml's [tool.memfiles] table, or None when it has none."""
    tool = document.get("tool", {})
    table = tool.get("memfiles") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{shown}: tool.memfiles must be a table", key="tool.memfiles", path=shown)
    return table


# The line where pyproject.toml's [tool.memfiles] table begins (or [tool], or a dotted key of it).
# Anchored: read from a line's start only (a pattern free to start at every blank is quadratic in a run of them).
_TABLE_HEADER = re.compile(
    r"^(?:\s*\[\[?\s*tool\s*\.\s*memfiles\s*[\].]|\s*\[\s*tool\s*\]|\s*tool\s*\.\s*memfiles\s*=)"
)


def _settings_table_line(pyproject: Path) -> int | None:
    """The line where `pyproject`'s [tool.memfiles] table starts, when the file reads and the table sets
    anything (an empty one only marks a root: nothing is lost if it is not read); else None, also for a
    file that cannot be read (not this tool's file to judge)."""
    try:
        text = pyproject.read_text(encoding="utf-8")
        table = _pyproject_table(tomllib.loads(text), pyproject.name)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ConfigError):
        return None
    if not table:
        return None
    return next((n for n, row in enumerate(text.splitlines(), 1) if _TABLE_HEADER.match(row)), 1)


def shadowed_table(root: Path) -> tuple[str, int, str] | None:
    """Where pyproject.toml's [tool.memfiles] table starts (its path as shown, and the line), and the
    file that shadows it, when memory/memfiles.toml exists too and so wins: every key of that table is
    then ignored, which `check` says. None when nothing is shadowed."""
    own, pyproject = config_files(root)
    if not own.is_file() or not pyproject.is_file():
        return None
    line = _settings_table_line(pyproject)
    return None if line is None else (_shown_path(pyproject, root), line, _shown_path(own, root))


def ignored_configs(root: Path, memory_dirs: list[Path]) -> list[tuple[str, int]]:
    """Configuration below the root that nothing reads (path as shown, line): a package memory folder's
    memfiles.toml, or its package's pyproject.toml with a [tool.memfiles] table. Settings come from the
    root alone (one id space, one schema), so `check` names these rather than let them look obeyed."""
    found: list[tuple[str, int]] = []
    root_memory = root / MEMORY_DIR
    for folder in memory_dirs:
        if folder == root_memory:
            continue
        own, pyproject = config_files(folder.parent)
        if own.is_file():
            try:
                settings = tomllib.loads(own.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                settings = {"unreadable": True}  # not read either way: named all the same
            if settings:  # an empty file sets nothing, so nothing is lost
                found.append((_shown_path(own, root), 1))
        line = _settings_table_line(pyproject) if pyproject.is_file() else None
        if line is not None:
            found.append((_shown_path(pyproject, root), line))
    return found


def _own_table(table: dict[str, Any], shown: str) -> dict[str, Any]:
    """memory/memfiles.toml's settings: at the top level, or under a [tool.memfiles] header (the form
    pyproject.toml takes, which the README shows; copied as it is, it means the same here)."""
    tool = table.get("tool")
    if not isinstance(tool, dict) or "memfiles" not in tool:
        return table
    nested = tool["memfiles"]
    if not isinstance(nested, dict):
        raise ConfigError(f"{shown}: tool.memfiles must be a table", key="tool.memfiles", path=shown)
    others = sorted({*table} - {"tool"} | {f"tool.{key}" for key in tool if key != "memfiles"})
    if others:
        raise ConfigError(
            f"{shown}: settings both under [tool.memfiles] and outside it ({', '.join(others)}): in"
            " memfiles.toml write them at the top level, without the [tool.memfiles] header",
            key=others[0],
            path=shown,
        )
    return nested


# Statuses memfiles' own commands write to entries of a kind, the first the one a new entry gets; a
# [kinds.NAME] table may add statuses to these kinds, never take these away or put another first.
WRITTEN_STATUSES = {"episode": ("recorded", "promoted"), "working": ("active", "done", "blocked", "ended")}
WRITTEN_STATUSES_WHY = {
    "episode": "`memfiles promote` reads recorded episodes and marks them promoted",
    "working": "`memfiles working` marks todos done or blocked and a run ended",
}


def _kinds(table: Any, source: str | None) -> tuple[Kind, ...]:
    """The default kinds with the file's [kinds.NAME] tables laid over them (a new name adds a kind)."""

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(f"{source}: {key}: {message}", key=key, path=source)

    if not isinstance(table, dict):
        raise fail("kinds", "must be a table of [kinds.NAME] tables with prefix, statuses, file")
    kinds = {kind.name: kind for kind in DEFAULT_KINDS}
    for name, spec in table.items():
        key = f"kinds.{name}"
        if not _WORD_RE.match(name):
            raise fail(key, "a kind's name must be a lowercase word, like risk")
        if not isinstance(spec, dict):
            raise fail(key, "must be a table with prefix, statuses, file")
        unknown = set(spec) - {"prefix", "statuses", "file"}
        if unknown:
            raise fail(key, f"unknown keys {', '.join(sorted(unknown))} (known: prefix, statuses, file)")
        base = kinds.get(name)
        prefix = spec.get("prefix", base.prefix if base else None)
        if prefix is None:
            raise fail(f"{key}.prefix", "a new kind needs a prefix: capital letters, like R")
        if not isinstance(prefix, str) or not is_id(f"{prefix}-1"):
            raise fail(
                f"{key}.prefix",
                f"must be 1 to 8 capital letters or digits, first a letter (like R), got {_shown(prefix)}",
            )
        statuses = spec.get("statuses", base.statuses if base else ("active",))
        if (
            not isinstance(statuses, list | tuple)
            or not statuses
            or not all(isinstance(status, str) and _WORD_RE.match(status) for status in statuses)
            or len(set(statuses)) != len(statuses)
        ):
            raise fail(
                f"{key}.statuses",
                f'must be a list of distinct lowercase words, like ["open", "done"], got {_shown(statuses)}',
            )
        statuses = tuple(statuses) if RETIRED in statuses else (*statuses, RETIRED)
        needed = [status for status in WRITTEN_STATUSES.get(name, ()) if status not in statuses]
        if needed:  # else the command that sets one refuses half-way, after its first write
            raise fail(
                f"{key}.statuses",
                f"must keep {', '.join(repr(status) for status in needed)}: {WRITTEN_STATUSES_WHY[name]},"
                f" got {_shown(list(spec['statuses']))}",
            )
        if name in WRITTEN_STATUSES and statuses[0] != WRITTEN_STATUSES[name][0]:  # the status a new one gets
            raise fail(
                f"{key}.statuses",
                f"must start with {WRITTEN_STATUSES[name][0]!r}, the status a new {name} gets, got"
                f" {_shown(list(spec['statuses']))}",
            )
        file = spec.get("file", base.file if base else f"{name}s.md")
        path = PurePosixPath(file.replace("\\", "/")) if isinstance(file, str) else None
        if path is None or path.suffix != ".md" or path.is_absolute() or ".." in path.parts or not path.stem:
            raise fail(f"{key}.file", f"must be a .md file name inside memory/, like risks.md, got {_shown(file)}")
        if str(path) == PERSONA_FILE or (path.parts[0] == WORKING_FOLDER) != (name == "working"):
            reserved = (
                f"{MEMORY_DIR}/{PERSONA_FILE} is the agents' persona"
                if str(path) == PERSONA_FILE
                else f"{MEMORY_DIR}/{WORKING_FOLDER}/ holds runs' working memory only"
            )
            raise fail(f"{key}.file", f"{reserved}: give another file, like risks.md, got {_shown(file)}")
        kinds[name] = Kind(name, prefix, statuses, file)
    prefixes = [kind.prefix for kind in kinds.values()]
    duplicated = {prefix for prefix in prefixes if prefixes.count(prefix) > 1}
    if duplicated:
        raise fail("kinds", f"two kinds share the prefix {', '.join(sorted(duplicated))}")
    return tuple(kinds.values())


def _unknown(key: str, source: str | None) -> ConfigError:
    close = difflib.get_close_matches(key.replace("-", "_"), KNOWN_SETTINGS, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(sorted(KNOWN_SETTINGS))})"
    return ConfigError(f"{source}: unknown setting {key!r}{hint}", key=key, path=source)


def _file_values(table: dict[str, Any], source: str | None, root: Path) -> tuple[dict[str, Any], tuple[Kind, ...]]:
    values: dict[str, Any] = {}
    kinds = DEFAULT_KINDS
    for key, value in table.items():
        if key == "kinds":
            kinds = _kinds(value, source)
        elif key in _RULES:
            values[key] = _checked(_RULES[key], value, root, f"{source}: {key}", key=key, path=source)
        else:
            raise _unknown(key, source)
    return values, kinds


_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")


def key_line(path: Path, key: str) -> int | None:
    """The line of settings key `key` (`wrap`, `kinds.risk.prefix`, or the table `kinds.risk`) in `path`,
    under [tool.memfiles] in a pyproject.toml (or in a memfiles.toml that copied that header); for a key
    missing from its table (a new kind's prefix), the table's header. None when it cannot be told (the
    file unreadable, the key written another way)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    parts = key.split(".")
    tables = [tuple(parts[:-1]), ("tool", "memfiles", *parts[:-1])]
    leaf = re.compile(rf"^\s*[\"']?{re.escape(parts[-1])}[\"']?\s*=")
    current: tuple[str, ...] = ()
    holder = None  # the header of the table the key belongs in: the place of a key that is missing
    for number, line in enumerate(lines, 1):
        header = _HEADER.match(line)
        if header:
            current = tuple(part.strip().strip("\"'") for part in header.group(1).split("."))
            if current in (tuple(parts), ("tool", "memfiles", *parts)):
                return number  # the key is a table: its header
            if current in tables and len(parts) > 1 and holder is None:
                holder = number
            continue
        if current in tables and leaf.match(line):
            return number
    return holder


def load_settings(
    root: Path | None = None, environ: Mapping[str, str] | None = None, cwd: Path | None = None, **overrides: Any
) -> Settings:
    """Settings for the project at `root` (found from the current folder when None; it must exist).

    Every value is checked against its rule; a bad one raises ConfigError naming the file and key (or the
    environment variable, or the flag) and the value. An empty environment variable counts as unset.
    `environ` and `cwd` are the caller's when another process asks (the watcher answering a hook);
    by default this process's own.
    """
    environ = os.environ if environ is None else environ
    here = Path.cwd() if cwd is None else cwd
    root = find_root(given=root)
    table, source = _file_config(root)
    try:
        values, kinds = _file_values(table, source, root)
        statuses = Schema(kinds=kinds).status_order
        for status in values.get("open_statuses", ()):
            if status not in statuses or status == RETIRED:
                raise ConfigError(
                    f"{source}: open_statuses: {status!r} is not a status any kind has"
                    f" (known: {', '.join(s for s in statuses if s != RETIRED)})",
                    key="open_statuses",
                    path=source,
                )
    except ConfigError as error:  # the line of the key at fault, for an editor or an agent to go to
        if error.line is None and error.path is not None and error.key is not None:
            error.line = key_line(root / error.path, error.key)
        raise
    for variable, key in _ENV.items():
        text = environ.get(variable)
        if text:
            values[key] = _checked(
                _RULES[key], _from_env(key, text), here, variable, key=variable, path=None, typed=text
            )
    for key, value in overrides.items():
        if value is None:
            continue
        if key in _RULES:
            # a flag with envvar= gets the variable's value: name the variable when that is where it came from
            variable = next((v for v, k in _ENV.items() if k == key and environ.get(v) == value), None)
            label = variable or _FLAGS.get(key, f"--{key.replace('_', '-')}")
            given = _from_env(key, value) if isinstance(value, str) else value
            value = _checked(_RULES[key], given, here, label, key=label, path=None, typed=value)
        values[key] = value
    schema_values = {key: values.pop(key) for key in _SCHEMA_KEYS if key in values}
    settings = Settings(root=root, schema=Schema(kinds=kinds, **schema_values))
    return replace(settings, **values)
