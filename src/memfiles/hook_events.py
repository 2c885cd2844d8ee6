"""What the hook's thin client (cli/hook_entry.py) and the rest of the hook path agree on, on plain
strings and the standard library's os alone: the client imports this module on every hook call.

The agents' event names and what each means, the events that write (and so get the longer deadline and
run in the hook's own process), the default hard timeout, where a call's project is looked for, and
which of the caller's environment variables travel with a call the watcher answers.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: the thin client imports this module
if TYPE_CHECKING:
    from collections.abc import Mapping

# The agent's event name -> what it means here. Gemini CLI's names are its own (docs/hooks.md).
EVENTS = {
    "SessionStart": "session_start",
    "UserPromptSubmit": "prompt",
    "BeforeAgent": "prompt",
    "PreToolUse": "pre_tool",
    "BeforeTool": "pre_tool",
    "PostToolUse": "post_tool",
    "PostToolUseFailure": "post_tool",
    "AfterTool": "post_tool",
    "PreCompact": "pre_compact",
    "PreCompress": "pre_compact",
    "Stop": "stop",
    "AfterAgent": "stop",
    "SessionEnd": "session_end",
}
# PreCompact and SessionEnd write (and may ask a model for the episode's words): they are off the prompt's
# path, get WRITING_DEADLINE, and always run in the hook's own process.
WRITING = frozenset({"pre_compact", "session_end"})
WRITING_DEADLINE = 30.0
HOOKS_TIMEOUT = 2.0  # the default of the hooks_timeout setting (config.py)
# The caller's variables a watcher needs to answer as the caller's own process would: the settings'
# (MEMFILES_*, $MEMFILES_RUN included) and the agents' project folders.
PROJECT_VARIABLES = ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR")


def meaning(event: str | None) -> str | None:
    """What an event name means (any letter case), None for a name no agent sends."""
    if not event:
        return None
    wanted = event.lower()
    return next((value for name, value in EVENTS.items() if name.lower() == wanted), None)


def project_folder(cwd: object, environ: Mapping[str, str], here: str) -> str:
    """Where to look for the call's project: the input's cwd, else the agent's project folder, else `here`."""
    for candidate in (cwd, *(environ.get(name) for name in PROJECT_VARIABLES)):
        if isinstance(candidate, str) and candidate and os.path.isdir(candidate):
            return candidate
    return here


def session_of(data: dict[str, object]) -> str:
    """The call's session id: the input's session_id, or "no-session" when it has none."""
    session = data.get("session_id")
    return session if isinstance(session, str) and session.strip() else "no-session"


def forwarded(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that travel with a call answered by the watcher."""
    return {key: value for key, value in environ.items() if key.startswith("MEMFILES_") or key in PROJECT_VARIABLES}
