"""`memfiles hook EVENT` without click: the path an agent's hook takes on every prompt and tool call.

When a watcher runs for the call's project, this is a thin client: it imports os, sys, the C modules
_socket and _json and a few string-only modules of memfiles, sends the whole call (the event, the input
as read, the caller's folder and MEMFILES_*/agent variables) to the watcher, which answers it with the
same code (services/agents/hook_run.py) warm, and prints the answer. A watcher answers for its clone
whether or not a Chroma server shares the vectors, as for memsearch. Everything else runs here in full:
no watcher, the writing events (PreCompact, SessionEnd), input the thin path cannot read, settings that
do not read, a watcher that refuses the call. The deadline is hooks_timeout, read in full once per change
of the config files or MEMFILES_* variables (memfiles/settings_memo.py); a watcher that accepts the call
and never answers gets {} and a log line.

Whatever happens it prints one JSON object and exits 0 (exit 2 would block the user's prompt).
`memfiles hook --help` goes to the full command group instead.
"""

from __future__ import annotations

import os
import sys

from memfiles.cli.watcher_wire import Unanswered, exchange
from memfiles.hook_events import (
    WRITING,
    WRITING_DEADLINE,
    forwarded,
    meaning,
    project_folder,
    session_of,
)
from memfiles.jsonline import loads
from memfiles.root import INDEX_DIR, root_folder
from memfiles.services.indexing import protocol
from memfiles.services.indexing.sockpath import socket_address

MARGIN = 0.5  # seconds past hooks_timeout: the watcher's own deadline answers {} (and logs) first


def read_args(argv: list[str]) -> tuple[str | None, str | None]:
    """(--root, EVENT) from the command line, the group's options read by hand."""
    root: str | None = None
    event: str | None = None
    args = iter(argv)
    for arg in args:
        if arg == "--root":
            root = next(args, None)
        elif arg.startswith("--root="):
            root = arg.split("=", 1)[1]
        elif arg == "--chroma-url":
            next(args, None)  # a hook asks the watcher only (docs/hooks.md)
        elif arg == "hook" or arg.startswith("-"):
            continue
        elif event is None:
            event = arg
    return root, event


def hooks_timeout(root: str) -> float | None:
    """The hook's deadline as the settings say it (the config files; MEMFILES_* variables), read in
    full once per change of them (memfiles/settings_memo.py); None when the settings cannot be read."""
    from memfiles.settings_memo import remembered

    values = remembered(root)
    seconds = values.get("hooks_timeout") if values is not None else None
    return float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else None


Later = list  # what to do once the answer is printed (a log line)


def via_watcher(event: str | None, root: str | None, raw: str, later: Later | None = None) -> str | None:
    """The watcher's answer to the call, as the JSON text to print; None when this process must answer
    (never an exception: whatever goes wrong before the call reaches a watcher is answered here)."""
    try:
        return _via_watcher(event, root, raw, later if later is not None else [])
    except Exception:
        return None


def _via_watcher(event: str | None, root: str | None, raw: str, later: Later) -> str | None:
    try:
        data = loads(raw) if raw.strip() else {}
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    named = event or data.get("hook_event_name")
    what = meaning(named if isinstance(named, str) else None)
    if what is None:
        return None
    try:
        project = root_folder(start=project_folder(data.get("cwd"), os.environ, os.getcwd()), given=root)
    except Exception:
        return None
    path = socket_address(os.path.join(project, INDEX_DIR))
    if what in WRITING:
        _settle(path, project, session_of(data))
        return None
    if not os.path.exists(path):
        return None  # no watcher: nothing to wait for, no settings to read here
    timeout = hooks_timeout(project)
    if timeout is None:
        return None
    request = protocol.hook(event, raw, project, os.getcwd(), forwarded(os.environ))
    try:
        answer = exchange(path, request, timeout + MARGIN)
    except Unanswered as problem:  # the watcher has the call: never run it twice; {} now, the log line after
        said = str(problem)
        later.append(lambda: _log_unanswered(event, project, raw, timeout, said))
        return "{}"
    except OSError:
        return None  # nobody listens (a stale socket): answered here
    if not isinstance(answer, dict) or answer.get("ok") is not True or not isinstance(answer.get("text"), str):
        return None  # a watcher that does not take hook calls (an older one), or another project's
    return answer["text"]


def _settle(path: str, root: str, session: str) -> None:
    """Before a writing call runs here: let the watcher finish the session's write it may still be doing
    (a failure's, which it makes right after answering), so that this call reads it."""
    if not os.path.exists(path):
        return
    try:
        exchange(path, protocol.hook_settle(root, session), WRITING_DEADLINE)
    except Exception:
        return  # no watcher, or one that does not know the op: nothing is pending there


def _log_unanswered(event: str | None, root: str, raw: str, timeout: float, problem: str) -> None:
    """One log line for a call the watcher took and did not answer, as the hook's own deadline words it."""
    from memfiles.services.agents import hooks
    from memfiles.services.agents.hook_run import quiet_settings

    try:
        call = hooks.parse_call(event, raw)
    except Exception:
        call = None
    said = f"gave up after {timeout:g} s (hooks_timeout); no context" if "within" in problem else problem
    hooks.guard(quiet_settings(root, call), call, TimeoutError(said))


def answer(event: str | None, root: str | None, raw: str, later: Later | None = None) -> str:
    """The JSON text to print for one hook call: the watcher's, else this process's. What `later` gets
    is to be run once the text is printed."""
    text = via_watcher(event, root, raw, later)
    if text is not None:
        return text
    import json

    from memfiles.services.agents.hook_run import run_hook

    return json.dumps(run_hook(event, lambda: raw, root), ensure_ascii=False)


def main(argv: list[str]) -> None:
    later: Later = []
    try:
        root, event = read_args(argv)
        text = answer(event, root, sys.stdin.read(), later)
    except BaseException:
        text = "{}"
    for out in (text, "{}"):  # an answer stdout cannot encode: still one JSON object
        try:
            sys.stdout.write(out + "\n")
            sys.stdout.flush()
            break
        except BaseException:
            continue
    for job in later:
        try:  # noqa: SIM105 (contextlib is one more import on every hook call)
            job()
        except BaseException:
            pass
    sys.exit(0)
