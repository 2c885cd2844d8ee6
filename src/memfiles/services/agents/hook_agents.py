"""`memfiles hooks install|uninstall`: memfiles' entries in an agent's settings file, and only those.

Both agents keep hooks the same way: `{"hooks": {"Event": [{"matcher": "...", "hooks": [{"type":
"command", "command": "...", "timeout": N}]}]}}`. Install adds a group of its own per event (or
updates its own entry in place); uninstall removes exactly the entries whose command runs
`memfiles ... hook EVENT`, and the groups and events it leaves empty. Everything else in the file,
other people's hooks included, keeps its place and value. Both are idempotent, and a settings file
that does not parse, or whose `hooks` is not the agent's shape, is refused naming it: nothing written.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memfiles import jsonin
from memfiles.errors import MemfilesError, ParseError
from memfiles.store.fileio import atomic_write


@dataclass(frozen=True)
class Hook:
    event: str  # the agent's name for it
    matcher: str | None  # None: the event takes no matcher (or every source)
    timeout: float  # seconds


@dataclass(frozen=True)
class Agent:
    name: str
    scopes: dict[str, str]  # scope -> settings file (relative to the project root, or ~ for the user's)
    hooks: tuple[Hook, ...]
    timeout_unit: float  # what the settings file's timeout counts: 1 (seconds) or 1000 (milliseconds)
    named: bool  # the agent's entries take a "name" (Gemini CLI lists and disables hooks by it)


# Short timeouts: memfiles keeps its own, shorter bound (hooks_timeout); these only stop a hook the
# agent would otherwise wait on for minutes. The writing events get more room.
CLAUDE_CODE = Agent(
    name="claude-code",
    scopes={
        "project": ".claude/settings.json",
        "local": ".claude/settings.local.json",
        "user": "~/.claude/settings.json",
    },
    hooks=(
        Hook("SessionStart", None, 10),
        Hook("UserPromptSubmit", None, 10),
        Hook("PreToolUse", "Bash", 10),
        Hook("PostToolUse", "Bash", 10),
        Hook("PostToolUseFailure", "Bash", 10),
        Hook("PreCompact", None, 60),
        Hook("Stop", None, 10),
        Hook("SessionEnd", None, 60),
    ),
    timeout_unit=1,
    named=False,
)
# Gemini CLI: BeforeTool takes no context (only a decision), so procedures before a command and risky
# actions' episodes are Claude Code's; the rest maps one to one (docs/hooks.md).
GEMINI_CLI = Agent(
    name="gemini-cli",
    scopes={"project": ".gemini/settings.json", "user": "~/.gemini/settings.json"},
    hooks=(
        Hook("SessionStart", None, 10),
        Hook("BeforeAgent", None, 10),
        Hook("AfterTool", "run_shell_command", 10),
        Hook("PreCompress", None, 60),
        Hook("AfterAgent", None, 10),
        Hook("SessionEnd", None, 60),
    ),
    timeout_unit=1000,
    named=True,
)
AGENTS = {agent.name: agent for agent in (CLAUDE_CODE, GEMINI_CLI)}


# Gemini CLI keeps switches beside the events in "hooks" (hooks.enabled, hooks.disabled: names of hooks).
SWITCHES = ("enabled", "disabled")


class SettingsError(ParseError):
    """An agent's settings file that cannot be read or is not the agent's shape; nothing is written."""


def settings_path(agent: Agent, scope: str, root: Path) -> Path:
    if scope not in agent.scopes:
        raise MemfilesError(f"{agent.name} has no {scope!r} scope (scopes: {', '.join(agent.scopes)})")
    where = agent.scopes[scope]
    return Path(where).expanduser() if where.startswith("~") else root / where


def default_command() -> str:
    """How the settings file runs memfiles: `memfiles` when that is this installation on PATH, else its full path."""
    here = Path(sys.executable).parent / ("memfiles.exe" if os.name == "nt" else "memfiles")
    found = shutil.which("memfiles")
    if found and here.exists() and Path(found).resolve() == here.resolve():
        return "memfiles"
    return shlex.quote(str(here)) if here.exists() else "memfiles"


def is_ours(command: Any) -> bool:
    """A command that runs `memfiles [--root DIR] hook EVENT` and nothing after it (a path or a wrapper
    like `uv run` before `memfiles` is fine; a pipe or anything after the event makes it someone else's)."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    for position, word in enumerate(words):
        if Path(word).name not in ("memfiles", "memfiles.exe"):
            continue
        rest = words[position + 1 :]
        at = 0
        while at < len(rest) and rest[at] != "hook":
            if rest[at] == "--root":
                at += 2
            elif rest[at].startswith("--root="):
                at += 1
            else:
                return False
        return at + 2 == len(rest)
    return False


def read_settings(path: Path, shown: str) -> dict[str, Any]:
    """The settings object ({} for a file not there yet); SettingsError naming the file when it is not valid."""
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise SettingsError(shown, None, f"not UTF-8 text ({error.reason}); nothing written") from None
    except OSError as error:
        raise SettingsError(shown, None, f"cannot read: {error.strerror}; nothing written") from None
    if not text.strip():
        return {}
    try:
        data = jsonin.loads(text)
    except json.JSONDecodeError as error:
        message = f"not valid JSON: {error.msg} (column {error.colno}); nothing written"
        raise SettingsError(shown, error.lineno, message) from None
    if not isinstance(data, dict):
        raise SettingsError(shown, 1, "the settings must be a JSON object; nothing written")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError(shown, None, '"hooks" must be an object of events; nothing written')
    for event, groups in hooks.items():
        if event in SWITCHES:
            continue
        if not isinstance(groups, list):
            raise SettingsError(shown, None, f'"hooks.{event}" must be a list of matcher groups; nothing written')
        for number, group in enumerate(groups, start=1):
            if not isinstance(group, dict) or not isinstance(group.get("hooks", []), list):
                raise SettingsError(
                    shown,
                    None,
                    f'"hooks.{event}" group {number} must be an object with a "hooks" list; nothing written',
                )
    return data


def _entry(agent: Agent, hook: Hook, command: str) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if agent.named:
        entry["name"] = f"memfiles-{hook.event}"
    entry.update(type="command", command=f"{command} hook {hook.event}")
    timeout = hook.timeout * agent.timeout_unit
    entry["timeout"] = int(timeout) if float(timeout).is_integer() else timeout
    if agent.named:
        entry["description"] = "memfiles: recall this project's memory (docs/hooks.md)"
    return entry


def installed(data: dict[str, Any], agent: Agent, command: str) -> dict[str, Any]:
    """`data` with memfiles' entries for `agent` in it (a copy; others' hooks untouched)."""
    out = json.loads(json.dumps(data))
    hooks = out.setdefault("hooks", {})
    for hook in agent.hooks:
        want = _entry(agent, hook, command)
        groups = hooks.setdefault(hook.event, [])
        placed = False
        for group in groups:
            entries = group.get("hooks", [])
            mine = [n for n, item in enumerate(entries) if isinstance(item, dict) and is_ours(item.get("command"))]
            if not mine:
                continue
            if not placed and group.get("matcher") == hook.matcher:
                entries[mine[0]] = want  # our entry, brought up to date in place
                for n in reversed(mine[1:]):
                    del entries[n]
                placed = True
            else:  # a stale entry of ours (another matcher, a second copy): replaced by the one below
                for n in reversed(mine):
                    del entries[n]
        hooks[hook.event] = [group for group in groups if group.get("hooks") or "hooks" not in group]
        if not placed:
            group = {"matcher": hook.matcher, "hooks": [want]} if hook.matcher is not None else {"hooks": [want]}
            hooks[hook.event].append(group)
    return out


def uninstalled(data: dict[str, Any]) -> dict[str, Any]:
    """`data` without memfiles' hook entries, and without the groups and events that leaves empty."""
    out = json.loads(json.dumps(data))
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event in list(hooks):
        groups = hooks[event]
        if event in SWITCHES or not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            entries = group.get("hooks", [])
            left = [item for item in entries if not (isinstance(item, dict) and is_ours(item.get("command")))]
            if len(left) == len(entries):
                kept.append(group)
            elif left:
                kept.append({**group, "hooks": left})
        if kept:
            hooks[event] = kept
        elif groups:
            del hooks[event]
    if not hooks and "hooks" in data and data["hooks"] != {}:
        del out["hooks"]
    return out


def ours(data: dict[str, Any]) -> dict[str, list[Any]]:
    """Memfiles' entries in `data`, by event (with their groups' matchers), to tell what a change did."""
    hooks = data.get("hooks")
    found: dict[str, list[Any]] = {}
    for event, groups in hooks.items() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) and event not in SWITCHES else ():
            for item in group.get("hooks", []):
                if isinstance(item, dict) and is_ours(item.get("command")):
                    found.setdefault(event, []).append([group.get("matcher"), item])
    return found


def render_settings(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def apply(agent: Agent, scope: str, root: Path, remove: bool, command: str | None, dry_run: bool) -> dict[str, Any]:
    """Install (or remove) memfiles' hooks in the agent's settings file for `scope`; what changed.

    Returns {"agent", "scope", "path", "changed", "added", "removed", "dry_run", "diff"}: the events
    that gained or lost a memfiles entry, and the unified diff of the file (empty when unchanged). An
    uninstall that leaves the file empty ({}) deletes it: it held nothing but memfiles' hooks.
    """
    import difflib

    path = settings_path(agent, scope, root)
    shown = agent.scopes[scope]  # as the agent's documentation spells it: relative to the project, or ~
    data = read_settings(path, shown)  # first: it refuses a file that is not UTF-8 JSON, naming it
    before_text = path.read_text(encoding="utf-8") if path.is_file() else ""
    after = uninstalled(data) if remove else installed(data, agent, command or default_command())
    changed = after != data
    # A file that held only memfiles' hooks goes with them, rather than stay behind as {}.
    emptied = remove and changed and after == {}
    after_text = "" if emptied else render_settings(after) if changed else before_text
    had, has = ours(data), ours(after)
    diff = "".join(
        difflib.unified_diff(
            before_text.splitlines(keepends=True),
            after_text.splitlines(keepends=True),
            shown if path.is_file() else "/dev/null",  # as git labels a file created or deleted
            "/dev/null" if emptied else shown,
        )
    )
    if changed and not dry_run:
        if emptied:
            path.unlink()
        else:
            atomic_write(path, after_text)
    return {
        "agent": agent.name,
        "scope": scope,
        "path": shown,
        "changed": changed,
        "added": [event for event in has if has[event] != had.get(event)],
        "removed": [event for event in had if event not in has],
        "dry_run": dry_run,
        "diff": diff,
    }
