"""Shell completion of ids and todos (click's own completion calls these with what has been typed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from click.shell_completion import CompletionItem


def _project(ctx: click.Context) -> Any:
    from memfiles.config import load_settings
    from memfiles.store.project import Project

    root = None
    while ctx is not None:  # --root is an option of the group, above this command
        root = root or ctx.params.get("root")
        ctx = ctx.parent  # type: ignore[assignment]
    return Project(load_settings(Path(root) if root else None))


def complete_id(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Ids of the project's entries starting with what was typed (`D-0` -> D-001, D-002 ...), titles as help."""
    try:
        project = _project(ctx)
        files, _errors = project.load_all()
        typed = incomplete.upper().removeprefix("@@")
        return [
            CompletionItem(located.entry.id, help=located.entry.title)
            for located in project.entries(files)
            if located.entry.id.startswith(typed)
        ]
    except Exception:  # completion must never print a traceback into the user's shell
        return []


def complete_todo(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Todo ids of the run named by --run (or the one active run) that are not done."""
    try:
        from memfiles.services.agents import working

        project = _project(ctx)
        state = working.require(project, working.resolve_run(project, ctx.params.get("run")))
        return [
            CompletionItem(todo.id, help=todo.task)
            for todo in state.todos
            if todo.id.startswith(incomplete.upper()) and todo.status != "done"
        ]
    except Exception:
        return []
