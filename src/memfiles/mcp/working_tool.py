"""The working_set tool: start, update, todo changes and end of a run's working memory in one call."""

from __future__ import annotations

from typing import Any

from memfiles.errors import MemfilesError
from memfiles.services import working


def working_set(
    tools: Any,
    run: str | None,
    values: dict[str, Any],
    add_evidence: list[str],
    todos: dict[str, list[str]],
    end: bool,
    episode: bool,
) -> dict[str, Any]:
    """Apply the call's parts in order (start or set, todos, end); returns {"working", "added"}."""
    project = tools.project
    service = working.Working(project, notify=tools._notify)
    changes = {name: value for name, value in values.items() if value is not None}
    added: list[str] = []
    name = run
    try:
        name = working.resolve_run(project, run)
        exists = working.load(project, name) is not None
    except working.WorkingError:
        exists = False  # no run named and none active: this call may start one
    if not exists:
        if not changes.get("goal"):
            raise MemfilesError("this run has no working memory yet: give goal to start it")
        goal = changes.pop("goal")
        state = service.start(name, goal, **changes)
        name = state.run
        if add_evidence:
            service.set(name, {}, add_evidence)
    elif changes or add_evidence:
        service.set(name, changes, add_evidence)
    for task in todos.get("add", []):
        _state, new_id = service.todo_add(name, task)
        added.append(new_id)
    for which in todos.get("done", []):
        service.todo_status(name, which, "done")
    for which in todos.get("blocked", []):
        service.todo_status(name, which, "blocked")
    if end:
        _state, episode_id = service.end(name, episode)
        added += [episode_id] if episode_id else []
    elif episode:
        raise MemfilesError("episode records the run when it ends: pass end too")
    state = working.require(project, name or "")
    return {"working": state.as_json(), "added": added, "warnings": service.warnings}
