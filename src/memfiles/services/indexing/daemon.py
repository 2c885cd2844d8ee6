"""The watcher as a background process: start it and wait until it answers (or say at once why it did not),
stop it and wait until it is gone, and keep its log from growing forever.

The child logs through a rotating handler to .memsearch/watch.log (at most LOG_BYTES, LOG_BACKUPS old
files kept); what it prints outside logging (a crash at start-up) goes to .memsearch/watch.out, which
each start truncates and a failed start quotes.
"""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from memfiles.config import Settings
from memfiles.errors import IndexUnavailable, MemfilesError
from memfiles.services.indexing import protocol
from memfiles.services.indexing.ipc import request
from memfiles.store.fileio import ensure_private_dir

LOG_BACKUPS = 3
START_WAIT = 600.0  # a catch-up of a large project can take minutes; a failed start is reported at once
STOP_WAIT = 60.0


class StartFailed(MemfilesError):
    """The background watcher exited or reported a failure before it answered."""


def log_path(settings: Settings) -> Path:
    return settings.index_dir / "watch.log"


def out_path(settings: Settings) -> Path:
    return settings.index_dir / "watch.out"


def starting_path(settings: Settings) -> Path:
    """The pid of a watcher spawned in the background that may not answer yet (`watch --stop` reads it)."""
    return settings.index_dir / "watch.starting"


def setup_logging(path: Path | None, max_bytes: int = 1_000_000) -> None:
    """Log to `path` through a rotating handler (the background child), else to stderr (--foreground)."""
    handler: logging.Handler
    if path is None:
        handler = logging.StreamHandler(sys.stderr)
    else:
        handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=max_bytes, backupCount=LOG_BACKUPS, encoding="utf-8"
        )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)


def _tail(path: Path, lines: int = 6) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def watcher_env() -> dict[str, str]:
    """The environment of a background watcher: this one's, with glibc's malloc held to two arenas unless
    the caller chose. The socket answers each request on a thread of its own, and each new thread may get
    an arena of its own that keeps its freed memory: at 1,000 entries, 40 queries left a watcher at 236 MB
    with the default arenas and 215 MB with two (docs/reliability.md)."""
    return {**os.environ, "MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", "2")}


def watch_command(settings: Settings, *options: str) -> list[str]:
    """The command line of a detached watcher: `memfiles watch --foreground` logging to the rotated log."""
    root = str(settings.root)
    return [
        sys.executable,
        "-m",
        "memfiles.cli",
        "--root",
        root,
        "watch",
        "--foreground",
        "--log-file",
        str(log_path(settings)),
        *options,
    ]


def start_background(settings: Settings, debounce: float, reconcile_every: float, idle_exit: float = 0.0) -> int:
    """Start `memfiles watch --foreground` detached and return its pid once it answers; StartFailed at once
    when it exits or reports a failure (with what it printed), never a silent wait. When another watcher
    took the project first (one spawned a moment ago by memsearch or a hook), the pid of that one once it
    answers."""
    folder = ensure_private_dir(settings.index_dir)
    command = watch_command(
        settings,
        "--debounce",
        str(debounce),
        "--reconcile-every",
        str(reconcile_every),
        "--idle-exit",
        f"{idle_exit:g}",
    )
    with open(folder / "watch.out", "wb") as out:
        child = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True, env=watcher_env()
        )
    deadline = time.monotonic() + START_WAIT
    while time.monotonic() < deadline:
        code = child.poll()
        if code is not None and not live_watchers(settings):  # else it lost the project to one spawned just before
            said = _tail(out_path(settings)) or _tail(log_path(settings))
            raise StartFailed(f"the watcher exited (code {code}) before it answered" + (f":\n{said}" if said else ""))
        try:
            answer = request(settings, protocol.ping(), timeout=5)
        except IndexUnavailable:
            answer = None  # listening but not answering yet
        if answer is not None:
            if answer.get("failed"):
                raise StartFailed(f"the watcher could not start: {answer['failed']} (log: {log_path(settings)})")
            if answer.get("ready", True):
                return int(answer.get("pid") or child.pid)
        time.sleep(0.1)
    raise StartFailed(f"the watcher did not answer within {START_WAIT:g} s; see {log_path(settings)}")


def spawn_background(settings: Settings, by: str) -> int | None:
    """Start the watcher detached without waiting for it (memsearch, a write and the hooks leave one behind
    this way: `by` says which, for `memfiles status`), with the defaults of `memfiles watch` but for its
    idle exit (the `watch_idle_exit` setting); its pid, or None when it could not be started. A second
    one started at the same moment exits on its own: one watcher per project (WatcherRunning)."""
    try:
        ensure_private_dir(settings.index_dir)
        # the idle exit is read again at each start (a change of config restarts it)
        command = watch_command(settings, "--idle-exit-setting", "--started-by", by)
        # appended, not truncated: a second spawn racing a running watcher must not wipe what it printed
        with open(out_path(settings), "ab") as out:
            child = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True, env=watcher_env()
            )
    except OSError:
        return None
    with contextlib.suppress(OSError):  # until it owns watch.pid, `memfiles watch --stop` finds it here
        starting_path(settings).write_text(f"{child.pid}\n")
    return child.pid


def live_watchers(settings: Settings) -> list[int]:
    """Watchers of this project whose process runs, answering on the socket or not (yet): the pids in
    watch.pid and watch.starting whose process is alive and is `memfiles ... --root ROOT watch`. Read from
    files only: probing watch.lock instead could take it from a watcher in the middle of starting."""
    pids = []
    for path in (settings.index_dir / "watch.pid", starting_path(settings)):
        try:
            pid = int(path.read_text().strip())
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        if b"watch" in command and os.fsencode(str(settings.root)) in command and pid not in pids:
            pids.append(pid)
    return [pid for pid in pids if not _gone(pid)]


def _gone(pid: int) -> bool:
    """True once `pid` no longer runs (a zombie waiting for its parent counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def stop_running(pid: int, wait: float = STOP_WAIT) -> bool:
    """SIGTERM the watcher and wait until the process is gone; False when it still runs after `wait` seconds."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.05)
    return _gone(pid)
