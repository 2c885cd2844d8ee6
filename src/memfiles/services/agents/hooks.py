"""`memfiles hook EVENT`: an agent's hook in, the context to inject out; push, not pull.

The memory-manager seed's mandatory retrieval triggers, fired by the agent itself (Claude Code, Gemini
CLI, or any agent speaking the same JSON), so recall happens whether or not the agent remembers to ask:

    SessionStart        the run's working memory (whole, as saved), then procedures for its goal
    UserPromptSubmit    procedures, episodes, lessons, insights for the prompt (BeforeAgent in Gemini CLI)
    PreToolUse          procedures, episodes and lessons of the command's task (situation.py); risky ones said
    PostToolUse(Failure) a failure: procedures, episodes of its error signature, lessons; written to working memory
    PreCompact          the working memory brought up to date and saved for SessionStart `compact`
    Stop                insights bearing on the answer, shown with the next prompt (Stop takes no context)
    SessionEnd          a run the hooks started is ended (an episode with hooks_episode); state removed

Every search goes through the watcher (recall's seam, watcher only): a hook answers in milliseconds and
applies each layer's score floor, which word overlap without an index could not honour. No watcher, no
index, a broken file or bad input: no context and one line in .memfiles/hooks.log, never an error to the
agent.
The run-facing parts are in hook_run.py; the session's memory is hook_state.py.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memfiles.config import Settings
from memfiles.errors import IndexUnavailable, MemfilesError
from memfiles.hook_events import EVENTS, project_folder, session_of
from memfiles.jsonin import json_type
from memfiles.limits import HOOK_TEXT_LIMIT, cut_text
from memfiles.services.agents import hook_state
from memfiles.services.agents.layers import LAYERS
from memfiles.services.hook_text import Item, Section, render, strip_injected

# Events whose output may carry hookSpecificOutput.additionalContext, by the agents' own references.
# Claude Code's validator refuses it on Stop, PreCompact and SessionEnd; Gemini CLI reads it on these three.
CONTEXT_EVENTS = frozenset(
    {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "BeforeAgent", "AfterTool"}
)
K = 3  # entries per layer at most
_ASK = K + 4  # asked of the index, so that entries already injected or retired leave enough
_QUERY_LIMIT = 2000  # characters of prompt or tool output a query keeps
_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code", "status_code")
_EXIT_TEXT = re.compile(r"\bExit Code: (-?\d+)")
# Gemini CLI's shell result, `Command: ...\nStdout: ...\nStderr: ...\nExit Code: N`: its stderr part.
_STDERR_TEXT = re.compile(r"^Stderr: (.*?)(?=^(?:Error|Exit Code|Signal|Background PIDs): |\Z)", re.M | re.S)
HEADERS = {
    "prompt": "memfiles recall for this prompt (open a path for the whole entry):",
    "pending": "memfiles: insights that bear on your last answer:",
    "act": "memfiles: procedures for this command, and what came of the same task before:",
    "risky": "memfiles: a risky or irreversible command; procedures, episodes and lessons of similar actions:",
    "failure": "memfiles: seen before with this error ({signature}):",
    "start": "memfiles: procedures for this run's goal:",
}


# Several filtered searches answered in place: [{"query", "k", "filters"}] -> hits per item (searches.search_many).
Ask = Callable[[list[dict[str, Any]]], list[list[dict[str, Any]]]]


class HookInputError(MemfilesError):
    """The hook's input is not what the agent's contract says (not JSON, not an object)."""


@dataclass
class Call:
    """One hook call: the agent's event name (echoed back), what it means, the input and the session."""

    event: str
    meaning: str
    data: dict[str, Any]
    session: str
    writing: Callable[[], None] = field(default=lambda: None, repr=False)  # says a write begins
    # Where the call came from: the caller's environment and folder (the watcher answers for another
    # process), and, inside the watcher, its own search in place of the socket (services/watch/dispatch.py).
    env: Mapping[str, str] = field(default_factory=lambda: os.environ, repr=False)
    cwd: str | None = None
    ask: Ask | None = field(default=None, repr=False)
    defer: Callable[[Callable[[], None]], None] | None = field(default=None, repr=False)  # run after the answer
    cut: list[str] = field(default_factory=list)  # the texts of the input cut at HOOK_TEXT_LIMIT, said in the log

    def text(self, key: str) -> str:
        value = self.data.get(key)
        return strip_injected(value) if isinstance(value, str) else ""


def parse_call(event: str | None, raw: str) -> Call:
    """The call for `raw` (the hook's stdin); the event named on the command line wins over the input's."""
    try:
        data = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as error:
        raise HookInputError(f"the hook input is not JSON (line {error.lineno}: {error.msg})") from None
    if not isinstance(data, dict):
        raise HookInputError(f"the hook input must be a JSON object, got {json_type(data)}")
    named = data.get("hook_event_name") if isinstance(data.get("hook_event_name"), str) else None
    event = event or named
    if not event:
        raise HookInputError("no event: name it (memfiles hook UserPromptSubmit) or send hook_event_name")
    canonical = next((name for name in EVENTS if name.lower() == event.lower()), None)
    if canonical is None:
        raise HookInputError(f"unknown hook event {event!r} (events: {', '.join(EVENTS)})")
    # The output must name the event the agent fired; the input says which when it says (PostToolUseFailure
    # arriving at a hook installed as PostToolUse).
    if named in EVENTS and EVENTS[named] == EVENTS[canonical]:
        canonical = named
    call = Call(canonical, EVENTS[canonical], data, session_of(data))
    call.cut = cut_input(data)
    return call


# Where a tool's output is: its end is kept when it is cut (the error is at the end), every other text's start.
_OUTPUT_KEYS = frozenset({"tool_response", "stderr", "stdout", "output", "error", "llmContent"})


def cut_input(data: Any, keep_end: bool = False, where: str = "") -> list[str]:
    """Cut, in place, every text of the hook's input longer than HOOK_TEXT_LIMIT characters (docs/json.md
    #limits): every later step (injected markers taken out, error patterns, the query) reads at most that.
    Returns what was cut, one note each, for the log."""
    notes: list[str] = []
    if isinstance(data, dict):
        items: Any = data.items()
    elif isinstance(data, list):
        items = enumerate(data)
    else:
        return notes
    for key, value in list(items):
        name = f"{where}.{key}" if where else str(key)
        end = keep_end or key in _OUTPUT_KEYS
        if isinstance(value, str) and len(value) > HOOK_TEXT_LIMIT:
            data[key] = cut_text(value, keep_end=end)
            notes.append(
                f"{name} cut to its {'last' if end else 'first'} {HOOK_TEXT_LIMIT:,} characters (of {len(value):,})"
            )
        elif isinstance(value, dict | list):
            notes += cut_input(value, end, name)
    return notes


def project_start(call: Call | None) -> Path:
    """Where to look for the project: the input's cwd, else the agent's project folder, else the caller's folder."""
    if call is None:
        return Path(project_folder(None, os.environ, os.getcwd()))
    return Path(project_folder(call.data.get("cwd"), call.env, call.cwd or os.getcwd()))


def output(call: Call, context: str) -> dict[str, Any]:
    """The hook's JSON output: the context for events that take one, else nothing ({})."""
    if context and call.event in CONTEXT_EVENTS:
        return {"hookSpecificOutput": {"hookEventName": call.event, "additionalContext": context}}
    return {}


# --- searching ------------------------------------------------------------------------------------


def search(
    settings: Settings, wanted: list[tuple[str, str]], ask: Ask | None = None
) -> dict[str, list[dict[str, Any]]]:
    """For each layer: the live entries of that kind for its queries (a layer may come with several: the
    best score of each entry counts), best first, as contract hits; a promoted episode gives way to the
    procedure it became (layers.give_way).

    One round trip to the watcher (or `ask`, inside the watcher); IndexUnavailable when none answers
    (the caller logs it)."""
    from memfiles.services.agents.layers import give_way, merged
    from memfiles.services.agents.recall import EntryReader, filtered_search, to_hits
    from memfiles.store.project import Project

    wanted = [(layer, query) for layer, query in wanted if query.strip()]
    if not wanted:
        return {}
    raw, _source = filtered_search(
        settings, [(query, {"kind": layer}, _ASK) for layer, query in wanted], watcher_only=True, local=ask
    )
    reader = EntryReader(Project(settings))
    found: dict[str, list[dict[str, Any]]] = {}
    for (layer, query), hits in zip(wanted, raw, strict=True):
        found[layer] = merged(found.get(layer, []), to_hits(reader, hits, query, _ASK, drop_retired=True))
    return give_way(reader, found)


def pick(settings: Settings, hits: list[dict[str, Any]], seen: set[str], layer: str) -> list[Item]:
    """The hits worth injecting: at or above the layer's floor, not injected before in this session, K at most."""
    floor = settings.floor(layer, hooks=True)
    items = []
    for hit in hits:
        entry = hit["entry"]
        if hit["score"] < floor or entry["id"] in seen:
            continue
        items.append(Item(entry["id"], entry["title"], entry.get("body") or "", entry["path"], entry.get("line")))
        if len(items) == K:
            break
    return items


def inject(settings: Settings, state: hook_state.SessionState, sections: list[Section], preface: str = "") -> str:
    """Render `sections` within the budget and remember the ids shown, so that none comes twice."""
    text, shown = render([(header, items) for header, items in sections if items], settings.hooks_budget, preface)
    state.injected = list(dict.fromkeys([*state.injected, *shown]))
    return text


def layered(settings: Settings, found: dict[str, list[dict[str, Any]]], seen: set[str]) -> list[Item]:
    """The picked items of every layer found, in recall's order (procedure, episode, lesson, insight)."""
    items: list[Item] = []
    for layer in LAYERS:
        picked = pick(settings, found.get(layer, []), seen | {item.id for item in items}, layer)
        items.extend(picked)
    return items


# --- what a tool call did -------------------------------------------------------------------------


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def tool_text(call: Call) -> str:
    """What the tool is about to do, as a query: the shell command (and its description), else its input."""
    tool_input = call.data.get("tool_input")
    if not isinstance(tool_input, dict):
        return ""
    command = tool_input.get("command")
    if isinstance(command, list):
        command = " ".join(str(part) for part in command)
    if isinstance(command, str) and command.strip():
        description = tool_input.get("description")
        extra = f" ({description})" if isinstance(description, str) and description.strip() else ""
        return strip_injected(command + extra)
    strings = [value for value in tool_input.values() if isinstance(value, str) and len(value) < 500]
    return strip_injected(" ".join(strings))


def command_text(call: Call) -> str:
    """The shell command a tool call runs, as written ("" for another tool)."""
    tool_input = call.data.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if isinstance(command, list):
        command = " ".join(str(part) for part in command)
    return strip_injected(command)[:_QUERY_LIMIT] if isinstance(command, str) else ""


def failure(call: Call) -> str | None:
    """The failure's text when the tool call failed (a non-zero exit, an error, a typed error in
    stderr), else None. An interrupt by the user is not a failure."""
    data = call.data
    if data.get("is_interrupt") is True:
        return None
    response = data.get("tool_response")
    if call.event == "PostToolUseFailure":  # failed by the event's own word: its error, else what the tool said
        said = strip_injected(response) if isinstance(response, str) else _response_text(response)
        return call.text("error") or said.strip() or "the tool failed"
    if isinstance(response, str):
        code = _EXIT_TEXT.search(response)
        return strip_injected(response) if code and code.group(1) != "0" else None
    if not isinstance(response, dict) or response.get("interrupted") is True:
        return None
    text = _response_text(response)
    error = response.get("error")
    if (isinstance(error, str) and error.strip()) or (isinstance(error, dict) and error):
        return text or json.dumps(error)[:_QUERY_LIMIT]
    if response.get("is_error") is True or response.get("isError") is True or response.get("success") is False:
        return text or "the tool reported a failure"
    for key in _EXIT_KEYS:
        code = response.get(key)
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            return f"{text}\n(exit {code})".strip()
    shown = _EXIT_TEXT.search(text)
    if shown and shown.group(1) != "0":
        return text
    from memfiles.services.agents.failures import failed_by_output

    stderr, stdout = response.get("stderr"), response.get("stdout")
    if not isinstance(stderr, str):  # Gemini CLI: `Stderr: ...` within llmContent
        content = response.get("llmContent")
        shown = _STDERR_TEXT.search(content) if isinstance(content, str) else None
        stderr = shown.group(1) if shown else ""
    if failed_by_output(stderr, stdout if isinstance(stdout, str) else ""):  # psql -f exits 0 after ERROR:
        return text
    return None


def _response_text(response: Any) -> str:
    """What a tool's response object says, error first (markers of injected context removed)."""
    if not isinstance(response, dict):
        return ""
    return "\n".join(
        strip_injected(value)
        for key in ("error", "stderr", "llmContent", "output", "stdout")
        if isinstance(value := response.get(key), str) and value.strip()
    )


def tail(text: str, limit: int = _QUERY_LIMIT) -> str:
    """The end of a long output, where the error usually is."""
    return text if len(text) <= limit else text[-limit:]


def guard(settings: Settings | None, call: Call | None, problem: BaseException, event: str | None = None) -> None:
    """Log what went wrong: one line, never to the agent."""
    where = settings.state_dir if settings else None
    kind = "" if isinstance(problem, MemfilesError | IndexUnavailable) else f"{type(problem).__name__}: "
    name = call.event if call else (event or "-")
    hook_state.log(where, name, call.session if call else None, f"{kind}{problem}")
