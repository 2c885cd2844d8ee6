"""One hook call from stdin to stdout, within a hard deadline, never failing the agent.

`run_hook` reads the input, finds the project, does what the event asks (hooks.py says what each
event means) and returns the JSON to print. Whatever happens (no project, a bad setting, no watcher,
a broken file, a timeout) the answer is a JSON object and the exit code is 0: a hook that exits 2
would block the user's prompt, and a traceback is noise in the agent's transcript.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from memfiles.config import Settings
from memfiles.errors import IndexUnavailable, MemfilesError
from memfiles.hook_events import WRITING, WRITING_DEADLINE
from memfiles.services.agents import hook_state, hooks, situation
from memfiles.services.hook_text import Item, one_line
from memfiles.store.project import Project


def run_hook(
    event: str | None,
    read_input: Callable[[], str],
    root: str | Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    ask: hooks.Ask | None = None,
) -> dict[str, Any]:
    """The hook's output for the input `read_input` gives; {} when there is nothing to inject or a problem.

    `env` and `cwd` are the calling process's when the watcher answers for it (default: this process's);
    `ask` is then the watcher's own search."""
    box: dict[str, Any] = {"settings": None, "call": None, "out": {}, "writing": False}
    done = threading.Event()
    # gave_up: set when the answer {} has gone back at the deadline. A one-shot process exits then; the
    # watcher does not, so its worker must not save what the agent never saw (injected ids, a pending write).
    origin = {"env": os.environ if env is None else env, "cwd": cwd, "ask": ask, "gave_up": threading.Event()}

    def work() -> None:
        try:
            box["out"] = _handle(event, read_input, root, box, origin)
        except BaseException as problem:  # never to the agent: one log line
            hooks.guard(box["settings"] or quiet_settings(root, box["call"]), box["call"], problem, event)
        finally:
            done.set()

    started = time.monotonic()
    worker = threading.Thread(target=work, name="memfiles-hook", daemon=True)
    worker.start()
    deadline = _deadline(event)
    while not done.wait(0.05):
        call, settings = box["call"], box["settings"]
        if call is not None and settings is not None:
            deadline = settings.hooks_timeout if call.meaning not in WRITING else WRITING_DEADLINE
        if box["writing"]:
            deadline = max(deadline, WRITING_DEADLINE)  # a write begun is never cut off half-way
        if time.monotonic() - started > deadline:
            origin["gave_up"].set()
            hooks.guard(settings, call, TimeoutError(f"gave up after {deadline:g} s (hooks_timeout); no context"))
            return {}
    return box["out"]


def quiet_settings(root: str | Path | None, call: hooks.Call | None) -> Settings | None:
    """The project's settings for a log line about input that could not be read; None when there are none."""
    from memfiles.config import find_root, load_settings

    try:
        environ = call.env if call else None
        return load_settings(find_root(start=hooks.project_start(call), given=root), environ=environ)
    except MemfilesError:
        try:  # a bad setting: the log still belongs in this project's .memfiles/
            return Settings(root=find_root(start=hooks.project_start(call), given=root))
        except MemfilesError:
            return None


def _deadline(event: str | None) -> float:
    """The bound before the settings are read: the default, or the writing events' longer one."""
    meaning = hooks.EVENTS.get(event or "", "")
    return WRITING_DEADLINE if meaning in WRITING else Settings.hooks_timeout


def _handle(
    event: str | None,
    read_input: Callable[[], str],
    root: str | Path | None,
    box: dict[str, Any],
    origin: dict[str, Any],
) -> dict[str, Any]:
    from memfiles.config import find_root, load_settings

    call = hooks.parse_call(event, read_input())
    call.env, call.cwd, call.ask = origin["env"], origin["cwd"], origin["ask"]
    box["call"] = call
    try:
        found = find_root(start=hooks.project_start(call), given=root)
    except MemfilesError:
        return {}  # not a memfiles project: nothing to say, and nowhere to log it
    settings = load_settings(found, environ=call.env, cwd=Path(call.cwd) if call.cwd else None)
    box["settings"] = settings
    if not settings.hooks_enabled:
        return {}
    for note in call.cut:  # a text past HOOK_TEXT_LIMIT was read cut: said where the hooks say things
        hook_state.log(settings.state_dir, call.event, call.session, f"input {note}")
    project = Project(settings)
    # In the watcher, calls of one session take turns, and a failure's write may finish after the answer.
    turn = session_turn(settings.state_dir, call.session) if call.ask is not None else None
    handed_over = False
    try:
        state = hook_state.load(settings.state_dir, call.session)
        handler = HANDLERS[call.meaning]
        if call.meaning in WRITING:
            box["writing"] = True
        call.writing = lambda: box.__setitem__("writing", True)
        later: list[Callable[[], None]] = []
        if turn is not None:
            call.defer = later.append
        context = handler(call, settings, project, state)
        if origin["gave_up"].is_set():
            return {}  # the agent was answered {} already: nothing of this call is kept
        if later:
            _after_answer(settings, call, state, later, turn)
            handed_over = True
        elif call.meaning == "session_end":
            hook_state.forget(settings.state_dir, call.session)
        else:
            hook_state.save(settings.state_dir, state)
    finally:
        if turn is not None and not handed_over:
            turn.release()
    return hooks.output(call, context)


_TURNS: dict[str, threading.Lock] = {}
_TURNS_GUARD = threading.Lock()


def session_turn(state_dir: Path, session: str) -> threading.Lock:
    """The session's turn, taken: an earlier call of the session (and the write it left running) goes first.
    The watcher's `hook_settle` op takes and gives it back for a call its client answers itself."""
    key = f"{os.path.realpath(state_dir)}\n{session}"
    with _TURNS_GUARD:
        turn = _TURNS.setdefault(key, threading.Lock())
    if not turn.acquire(timeout=WRITING_DEADLINE):
        raise TimeoutError(f"an earlier call of session {session} has been writing for {WRITING_DEADLINE:g} s")
    return turn


def _after_answer(
    settings: Settings,
    call: hooks.Call,
    state: hook_state.SessionState,
    jobs: list[Callable[[], None]],
    turn: threading.Lock,
) -> None:
    """Run `jobs` (the writes a call deferred), then save the session's state and give the turn back,
    in a thread of the watcher's that the process waits for on exit: the agent has its answer already."""

    def work() -> None:
        try:
            for job in jobs:
                job()
            hook_state.save(settings.state_dir, state)
        except BaseException as problem:
            hooks.guard(settings, call, problem)
        finally:
            turn.release()

    threading.Thread(target=work, name="memfiles-hook-write", daemon=False).start()


def _searched(settings: Settings, call: hooks.Call, wanted: list[tuple[str, str]]) -> dict[str, list[dict[str, Any]]]:
    """hooks.search, with no index or no watcher logged and answered by nothing. With no watcher, one is
    started in the background (hooks_watch), so that the session's next call is warm: a watcher the hooks
    left exits after watch_idle_exit without a call, and a session that went quiet longer than that would
    otherwise get no context until its next SessionStart."""
    try:
        return hooks.search(settings, wanted, call.ask)
    except IndexUnavailable as problem:
        hooks.guard(settings, call, problem)
        if settings.hooks_watch and call.ask is None:
            start_watcher(settings, call)
        return {}


def _asked(layers: tuple[str, ...], query: str, reading: situation.Reading) -> list[tuple[str, str]]:
    """Each layer with the situation's own text and the queries read from it (situation.py)."""
    return [(layer, text) for layer in layers for text in dict.fromkeys([query, *reading.queries(layer)]) if text]


def vocab(project: Project) -> situation.Vocabulary:
    from memfiles.services.agents.layers import vocabulary

    return vocabulary(project)


def session_start(call: hooks.Call, settings: Settings, project: Project, state: hook_state.SessionState) -> str:
    """The run's working memory first, whole and as saved; then procedures for its goal and next step."""
    from memfiles.services.agents import hook_working, working

    source = call.text("source") or call.text("trigger") or "startup"
    hook_state.sweep(settings.state_dir)
    # the runs of sessions that never reached SessionEnd: ended after the answer (in the watcher), or with the
    # writing deadline (a write begun is never cut off)

    def expire() -> None:
        hook_working.expire_runs(project, settings, writing=call.writing)

    if call.defer is not None:
        call.defer(expire)
    else:
        expire()
    if settings.hooks_watch and call.ask is None:  # with `ask`, the watcher itself is answering
        start_watcher(settings, call)
    if source in ("clear", "compact"):
        state.injected = []  # what was injected before is gone from the context: it may come again
    preface = ""
    query = ""
    run = hook_working.find_run(project, state, adopt_active=source in ("resume", "compact"), env=call.env)
    current = working.load(project, run) if run else None
    if current is not None:
        preface = hook_working.working_block(current)
        query = " ".join(str(current.get(name) or "") for name in ("goal", "next_step")).strip()
    elif state.saved and source == "compact":
        preface = hook_working.working_block(state.saved)  # the file went away: what PreCompact saved
    found = _searched(settings, call, _asked(("procedure",), query, situation.read(query, vocab(project))))
    items = hooks.pick(settings, found.get("procedure", []), set(state.injected), "procedure")
    return hooks.inject(settings, state, [(hooks.HEADERS["start"], items)], preface)


def prompt(call: hooks.Call, settings: Settings, project: Project, state: hook_state.SessionState) -> str:
    """Procedures, episodes, lessons and insights for the prompt, after the insights left by the last Stop."""
    text = call.text("prompt").strip()
    pending = [
        Item(**item)
        for item in state.pending
        if isinstance(item, dict) and _item_fields(item) and item["id"] not in state.injected
    ]
    state.pending = []
    if text and not state.goal and not text.startswith("/"):
        state.goal = one_line(text, 200)
    if not text or (text.startswith("/") and len(text.split()) == 1):
        return hooks.inject(settings, state, [(hooks.HEADERS["pending"], pending)])  # a bare slash command
    query = hooks.clip(text, 2000)
    found = _searched(settings, call, _asked(hooks.LAYERS, query, situation.read(query, vocab(project))))
    seen = set(state.injected)
    items = hooks.layered(settings, found, seen | {item.id for item in pending})
    return hooks.inject(settings, state, [(hooks.HEADERS["pending"], pending), (hooks.HEADERS["prompt"], items)])


def _item_fields(item: dict[str, Any]) -> bool:
    return set(item) == {"id", "title", "body", "path", "line"}


def pre_tool(call: hooks.Call, settings: Settings, project: Project, state: hook_state.SessionState) -> str:
    """Before a command: the procedures for it, and the episodes and lessons of the same task (each layer
    over its floor); the command is also read for what it does (situation.py). A risky one (hooks_risky)
    is said to be so."""
    import re

    text = hooks.tool_text(call)
    if not text.strip():
        return ""
    tool = call.data.get("tool_name") if isinstance(call.data.get("tool_name"), str) else "tool"
    state.last_action = one_line(f"{tool}: {text}")
    risky = any(re.search(pattern, text, re.IGNORECASE) for pattern in settings.hooks_risky)
    query = hooks.clip(text, 2000)
    command = hooks.command_text(call)
    reading = situation.read(command, vocab(project), command=True, prose=False) if command else situation.Reading()
    found = _searched(settings, call, _asked(("procedure", "episode", "lesson"), query, reading))
    items = hooks.layered(settings, found, set(state.injected))
    return hooks.inject(settings, state, [(hooks.HEADERS["risky" if risky else "act"], items)])


def post_tool(call: hooks.Call, settings: Settings, project: Project, state: hook_state.SessionState) -> str:
    """A failure: procedures and lessons for it, episodes of its error signature; it goes to working memory."""
    from memfiles.services.agents import hook_working
    from memfiles.services.agents.recall import error_signature

    failed = hooks.failure(call)
    if failed is None:
        return ""
    text = hooks.tail(failed)
    signature = error_signature(text)
    command = hooks.tool_text(call)
    # The command and the error's signature say what a procedure must be about; the rest of the output is
    # mostly paths and frames, and every word of a query costs time on the prompt's path.
    problem = signature or hooks.clip(text, 2000)
    # lessons as procedures: what was done and how it failed (recall's failure trigger: the whole text)
    asked = hooks.clip(f"{command}\n{problem}", 2000)
    wanted = [("procedure", asked), ("episode", problem), ("lesson", asked)]
    found = _searched(settings, call, wanted)
    items = hooks.layered(settings, found, set(state.injected))
    header = hooks.HEADERS["failure"].format(signature=f"`{signature}`" if signature else "this failure")
    injected = hooks.inject(settings, state, [(header, items)])
    tool = call.data.get("tool_name") if isinstance(call.data.get("tool_name"), str) else "tool"
    observation = signature or next((line for line in reversed(text.splitlines()) if line.strip()), "failed")
    action = f"{tool}: {command or '(no input)'}"

    def write() -> None:
        try:
            hook_working.record_failure(project, state, action, observation, signature, env=call.env)
        except MemfilesError as problem:  # the context is still worth giving
            hooks.guard(settings, call, problem)

    if call.defer is not None:  # in the watcher: written right after the answer, before the session's next call
        call.defer(write)
    else:
        call.writing()
        write()
    return injected


def pre_compact(call: hooks.Call, settings: Settings, project: Project, state: hook_state.SessionState) -> str:
    """Bring the working memory up to date and save it, so that SessionStart `compact` gives it back."""
    from memfiles.services.agents import hook_working, working

    run = hook_working.find_run(project, state, adopt_active=True, env=call.env)
    if run is None and (state.goal or state.last_action):
        run = hook_working.ensure_run(project, state, call.env, last_action=state.last_action)
    if run is None:
        return ""
    current = working.require(project, run)
    if state.run_started and state.last_action and current.get("last_action") != state.last_action:
        current = working.Working(project).set(run, {"last_action": state.last_action})
    state.saved = current.as_json()
    return ""


def stop(call: hooks.Call, settings: Settings, project: Project, state: hook_state.SessionState) -> str:
    """Insights bearing on the answer just given, kept for the next prompt (Stop cannot take context)."""
    answer = call.text("last_assistant_message") or call.text("prompt_response")
    if not answer.strip():
        return ""
    found = _searched(settings, call, [("insight", hooks.clip(answer, 2000))])
    waiting = {item["id"] for item in state.pending if isinstance(item, dict)}
    items = hooks.pick(settings, found.get("insight", []), set(state.injected) | waiting, "insight")
    state.pending += [
        {"id": item.id, "title": item.title, "body": item.body[:400], "path": item.path, "line": item.line}
        for item in items
    ]
    return ""


def session_end(call: hooks.Call, settings: Settings, project: Project, state: hook_state.SessionState) -> str:
    """End the run the hooks started (as an episode with hooks_episode); the session's state goes."""
    from memfiles.services.agents import hook_working

    hook_working.end_run(project, settings, state, call.text("reason"))
    return ""


def start_watcher(settings: Settings, call: hooks.Call) -> None:
    """Start the watcher in the background when an index exists and none runs: every later hook is warm."""
    from memfiles.services.indexing.daemon import spawn_background
    from memfiles.services.indexing.index_client import index_exists, running_watcher

    if not index_exists(settings):
        return
    try:
        if running_watcher(settings, timeout=1) is not None:
            return
    except IndexUnavailable:
        return  # one is there, busy: leave it
    if spawn_background(settings, "hook") is None:
        hook_state.log(settings.state_dir, call.event, call.session, "could not start the watcher")
        return
    hook_state.log(settings.state_dir, call.event, call.session, "started the watcher in the background")


HANDLERS = {
    "session_start": session_start,
    "prompt": prompt,
    "pre_tool": pre_tool,
    "post_tool": post_tool,
    "pre_compact": pre_compact,
    "stop": stop,
    "session_end": session_end,
}


def main(event: str | None, root: str | Path | None, stdin: TextIO, stdout: TextIO) -> int:
    """Read, answer, print one JSON object; always 0."""
    out = run_hook(event, stdin.read, root)
    stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    stdout.flush()
    return 0
