"""What a hook remembers between calls of one agent session, and the hooks' log.

One small JSON file per session, `.memfiles/hooks/<session>.json`: the run the session writes to, the
ids already injected (never injected twice in a session), the first prompt (a goal for a run the hooks
start), the last command, the insights waiting for the next prompt. SessionEnd deletes it; a session
that never ended is swept after STALE_DAYS at the next SessionStart. Writes replace the file whole
(temp file, then rename), so a hook killed mid-way leaves the old state, never half a file.

Problems go to `.memfiles/hooks.log`, one line each, never to the agent: a hook must not block a prompt.
Stdlib only, like everything on the hook path.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

STATE_FOLDER = "hooks"  # under .memfiles/
LOG_NAME = "hooks.log"  # in .memfiles/
STALE_DAYS = 7
LOG_LIMIT = 256 * 1024  # bytes; past it the log keeps its newer half
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass
class SessionState:
    session: str
    run: str | None = None
    run_started: bool = False  # the hooks started the run (SessionEnd may end it); a user's run is never ended
    injected: list[str] = field(default_factory=list)
    goal: str | None = None  # the session's first prompt, the goal of a run the hooks start
    last_action: str | None = None
    pending: list[dict[str, Any]] = field(default_factory=list)  # insights found at Stop, for the next prompt
    saved: dict[str, Any] | None = None  # the working object as PreCompact saved it
    updated: str = ""


def _file_name(session: str) -> str:
    """A session id as a file name: kept when it is plain, else hashed (never a path outside the folder)."""
    if session and len(session) <= 100 and not _SAFE.search(session) and session not in (".", ".."):
        return f"{session}.json"
    import hashlib

    return "s-" + hashlib.sha256(session.encode("utf-8", "replace")).hexdigest()[:32] + ".json"


def state_path(state_dir: Path, session: str) -> Path:
    return state_dir / STATE_FOLDER / _file_name(session)


def load(state_dir: Path, session: str) -> SessionState:
    """The session's state; a fresh one when there is none or it cannot be read (logged by the caller)."""
    path = state_path(state_dir, session)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return SessionState(session=session)
    if not isinstance(data, dict):
        return SessionState(session=session)
    known = SessionState.__dataclass_fields__
    values = {key: value for key, value in data.items() if key in known and key != "session"}
    state = SessionState(session=session)
    for key, value in values.items():
        default = getattr(state, key)
        if isinstance(default, list) and not isinstance(value, list):
            continue
        if key == "injected" and not all(isinstance(item, str) for item in value):
            continue
        if isinstance(default, bool) and not isinstance(value, bool):
            continue
        setattr(state, key, value)
    return state


def save(state_dir: Path, state: SessionState) -> None:
    from memfiles.store.fileio import ensure_private_dir

    folder = ensure_private_dir(state_dir) / STATE_FOLDER
    folder.mkdir(exist_ok=True)
    state.updated = _now()
    path = state_path(state_dir, state.session)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(asdict(state), ensure_ascii=False), encoding="utf-8")
    os.replace(temp, path)


def forget(state_dir: Path, session: str) -> None:
    state_path(state_dir, session).unlink(missing_ok=True)


def sweep(state_dir: Path, days: float = STALE_DAYS) -> int:
    """Delete the states of sessions untouched for `days` (they never reached SessionEnd); how many."""
    folder = state_dir / STATE_FOLDER
    if not folder.is_dir():
        return 0
    cutoff = time.time() - days * 86400
    swept = 0
    for path in folder.iterdir():
        try:
            if path.suffix in (".json", ".tmp") and path.stat().st_mtime < cutoff:
                path.unlink()
                swept += 1
        except OSError:
            continue
    return swept


def log(state_dir: Path | None, event: str, session: str | None, message: str) -> None:
    """One line in .memfiles/hooks.log; silent when even that fails (a hook never fails the agent)."""
    if state_dir is None:
        return
    line = f"{_now()} {event} session={session or '-'} {' '.join(message.split())}\n"
    try:
        from memfiles.store.fileio import ensure_private_dir

        path = ensure_private_dir(state_dir) / LOG_NAME
        if path.exists() and path.stat().st_size > LOG_LIMIT:
            data = path.read_bytes()
            keep = data[len(data) // 2 :]
            path.write_bytes(keep[keep.find(b"\n") + 1 :])
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line)
    except OSError:
        pass


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
