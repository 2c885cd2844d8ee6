"""The working_set tool: start, update, todo changes and end of a run's working memory in one call."""

from __future__ import annotations

from typing import Any

from memfiles.errors import MemfilesError
from memfiles.services.agents import working


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
        current = working.load(project, name)
    except working.WorkingError:
        current = None  # no run named and none active: this call may start one
    exists = current is not None
    _check_first(current, changes, add_evidence, todos, end, episode, project.settings.schema.title_limit)
    if not exists:
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
    state = working.require(project, name or "")
    return {"working": state.as_json(), "added": added, "warnings": service.warnings}


def _check_first(
    current: working.WorkingState | None,
    changes: dict[str, Any],
    add_evidence: list[str],
    todos: dict[str, list[str]],
    end: bool,
    episode: bool,
    title_limit: int,
) -> None:
    """Every part of the call that can be refused, refused before anything is written: a bad call writes
    nothing (not the run it would have started, nor the todos before the one it could not find)."""
    from memfiles.services.agents.working_text import checked_changes, list_field, one_line_field

    if episode and not end:
        raise MemfilesError("episode records the run when it ends: pass end too")
    if current is None and not changes.get("goal"):
        raise MemfilesError("this run has no working memory yet: give goal to start it")
    changing = bool(changes or add_evidence or any(todos.values()))
    if current is not None and changing and current.status == "ended":
        working.live_state(current)  # raises, naming the run and its episode
    checked_changes(changes)
    list_field("evidence_refs", add_evidence)
    tasks = [one_line_field("task", task) or "" for task in todos.get("add", [])]
    if "" in tasks:
        raise MemfilesError("todo_add: a task is empty: say what is to be done")
    for task in tasks:
        if len(task) > title_limit:  # a todo's task is its title
            raise MemfilesError(f"todo_add: a task is {len(task)} characters; at most {title_limit}")
    existing = current.todos if current is not None else []
    for which in [*todos.get("done", []), *todos.get("blocked", [])]:
        text = which.strip().casefold()
        added = [task for task in tasks if task.casefold() == text]
        if added:  # a todo this call adds, named by its text: it must name one todo only
            if len(added) > 1 or any(todo.task.casefold() == text for todo in existing):
                raise MemfilesError(f"todo {which!r}: several todos have that text; name one by its id")
            continue
        if current is None:
            raise MemfilesError(f"todo {which!r} is neither a todo of this run nor one this call adds")
        working.find_todo(current, which)
