"""Working memory: the run-scoped state an agent needs to resume after a crash, a wait or a compaction.

One memory file per run, `memory/working/<run>.md`, written through the one write path like every other:
a `## State` section with one entry (kind `working`, its title the goal) whose body lists the seed's
fields, and a `## Todo` section with one entry per task-level todo (status active, done or blocked).
The evidence refs are the state entry's `evidence` metadata, so `audit` checks them like any other.
The folder carries its own `.gitignore`: run state is not committed unless the user deletes it.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memfiles.errors import OpError
from memfiles.format.ids import evidence_id, same_id
from memfiles.format.wrap import clip
from memfiles.services.agents.working_text import (
    LISTS,
    SCALARS,
    WorkingError,
    checked_changes,
    episode_op,
    list_field,
    one_line_field,
    parse_fields,
    render_fields,
)
from memfiles.services.write import IndexNotifier, write_ops
from memfiles.store.batch import BatchResult, Guard
from memfiles.store.batch_files import BatchFiles
from memfiles.store.ops import normalize_automated, parse_op
from memfiles.store.project import WORKING_FOLDER, WORKING_KIND, WORKING_SECTIONS, LoadedFile, Project

KIND = WORKING_KIND
FOLDER = WORKING_FOLDER  # below the root memory/
STATE_SECTION, TODO_SECTION = WORKING_SECTIONS
# The seed's working-memory contract, in its order.
TODOS = ("todo_active", "todo_done", "todo_blocked")
__all__ = [
    "LISTS",
    "SCALARS",
    "WorkingError",
    "checked_changes",
    "episode_op",
    "parse_fields",
    "render_fields",
    "resolve_run",
    "run_list",
    "runs",
]
FIELDS = (*SCALARS, *LISTS, *TODOS)
TODO_STATUS = {"todo_active": "active", "todo_done": "done", "todo_blocked": "blocked"}
RUN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
GITIGNORE = (
    "# Working memory is run-scoped state and is not committed. To commit it, delete this file:\n"
    "# memfiles writes it only when it creates memory/working/.\n*\n!.gitignore\n"
)
RUN_ENV = "MEMFILES_RUN"
# The tag on the state entry of a run the agents' hooks started (services/agents/hook_working.py): such a run is
# ended at SessionEnd, expires when its session goes quiet, and is never a command's default run. A run
# named `session-...` (the hooks' names) counts as theirs too: runs they started before the tag have no tag.
HOOKS_TAG = "hooks"


@dataclass
class Todo:
    id: str
    task: str
    status: str
    note: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "task": self.task, "note": self.note}


@dataclass
class WorkingState:
    """A run's working memory as the seed defines it, and where it lives."""

    run: str
    path: str
    id: str | None = None
    status: str = "active"
    area: str = KIND
    values: dict[str, Any] = field(default_factory=dict)
    todos: list[Todo] = field(default_factory=list)
    promoted: list[str] = field(default_factory=list)  # the episode the run became, once ended
    hooks: bool = False  # the agents' hooks started it (working_runs.py): never a command's default run

    def get(self, name: str) -> Any:
        if name in TODOS:
            return [todo for todo in self.todos if todo.status == TODO_STATUS[name]]
        return self.values.get(name, [] if name in LISTS else None)

    def as_json(self) -> dict[str, Any]:
        """The working object of docs/json.md: run, path, id, status, then the twelve fields in order."""
        data: dict[str, Any] = {
            "run": self.run,
            "path": self.path,
            "id": self.id,
            "status": self.status,
            "promoted": list(self.promoted),
        }
        for name in FIELDS:
            value = self.get(name)
            data[name] = [todo.as_json() for todo in value] if name in TODOS else value
        return data


def check_run(run: str) -> str:
    if not RUN_RE.match(run):
        raise WorkingError(f"run {run!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
    return run


def run_rel(run: str) -> str:
    return f"memory/{FOLDER}/{check_run(run)}.md"


def default_note(run: str) -> str:
    return f"A task of run {run}."


# --- reading ----------------------------------------------------------------------------------------


def load(project: Project, run: str) -> WorkingState | None:
    """The run's working memory, or None when the run has no file."""
    rel = run_rel(run)
    path = project.root / rel
    if not path.is_file():
        return None
    loaded = project.load_file(path)
    if loaded is None:
        raise WorkingError(f"{rel} is not a memory file (no index and no entries)")
    return state_of(project, run, loaded)


def state_of(project: Project, run: str, loaded: LoadedFile) -> WorkingState:
    state = WorkingState(run=run, path=loaded.rel)
    for located in project.entries([loaded]):
        entry = located.entry
        if located.section == STATE_SECTION and state.id is None:
            state.id, state.status, state.area = entry.id, entry.status, entry.area
            state.values = parse_fields(entry.body, f"{loaded.rel}:{entry.line}")
            state.values["evidence_refs"] = list(entry.evidence)
            state.values.setdefault("goal", entry.title)
            state.promoted = list(entry.promoted)
            # tagged since issue 34; before, known by the name the hooks give (hook_working.session_run)
            state.hooks = HOOKS_TAG in entry.tags or run.startswith("session-")
        elif located.section == TODO_SECTION:
            note = None if entry.body == default_note(run) else entry.body
            state.todos.append(Todo(entry.id, entry.title, entry.status, note))
    if state.id is None:
        raise WorkingError(f"{loaded.rel} has no entry under '## {STATE_SECTION}': not a run's working memory")
    return state


def live(project: Project, run: str) -> WorkingState:
    """The run's working memory, which must not have ended (an ended run is a record, not a workspace)."""
    return live_state(require(project, run))


def live_state(state: WorkingState) -> WorkingState:
    """`state`, unless its run has ended (WorkingError naming the run and its episode)."""
    run = state.run
    if state.status == "ended":
        episode = f" (recorded as {', '.join(state.promoted)})" if state.promoted else ""
        raise WorkingError(
            f"run {run} ended{episode}: its working memory no longer changes; start a new run with"
            " `memfiles working start --goal ...`"
        )
    return state


def require(project: Project, run: str) -> WorkingState:
    state = load(project, run)
    if state is None:
        known = ", ".join(name for name, _ in runs(project)) or "none"
        raise WorkingError(f"no working memory for run {run!r} (runs: {known}); start it with `memfiles working start`")
    return state


# --- writing ----------------------------------------------------------------------------------------


class Working:
    """The working-memory commands over one project; every write goes through write_ops."""

    def __init__(self, project: Project, notify: IndexNotifier | None = None) -> None:
        self.project = project
        self.notify = notify
        self.warnings: list[str] = []
        self.unchanged = False  # nothing was written: a set or todo to the values there, an end after an end
        self.written: list[BatchResult] = []  # every batch this command wrote, for its write object

    def _write(
        self, ops: list[dict[str, Any]], request_id: str | None = None, guard: Guard | None = None
    ) -> BatchResult:
        settings = self.project.settings
        parsed = []
        for position, value in enumerate(ops, start=1):
            try:
                parsed.append(parse_op(value, position, settings.schema, wrap=0))
            except OpError as error:
                field = "evidence_refs" if error.field == "evidence" else error.field
                raise WorkingError(error.message.replace("evidence:", "evidence_refs:"), field) from error
        result, warning = write_ops(self.project, parsed, request_id=request_id, notify=self.notify, guard=guard)
        if warning:
            self.warnings.append(warning)
        self.written.append(result)
        return result

    def _state_op(self, state: WorkingState, values: dict[str, Any], **extra: Any) -> dict[str, Any]:
        title_limit = self.project.settings.schema.title_limit
        op: dict[str, Any] = {
            "title": clip(values["goal"], title_limit),
            "body": render_fields(values),
            "evidence": list(values.get("evidence_refs") or []),
            **extra,
        }
        if state.id is None:
            op.update(op="add", kind=KIND, area=state.area, file=state.path, section=STATE_SECTION)
        else:
            op.update(op="update", id=state.id)
        return op

    def start(
        self, run: str | None, goal: str, area: str | None = None, by_hooks: bool = False, **fields: Any
    ) -> WorkingState:
        """Start `run` (default: $MEMFILES_RUN, else a new name); `by_hooks` marks a run the agents' hooks
        started (HOOKS_TAG)."""
        run = check_run(run) if run is not None else (os.environ.get(RUN_ENV) or _new_run_name())
        check_run(run)
        existing = load(self.project, run)
        if existing is not None:
            raise WorkingError(
                f"run {run} already has working memory (status {existing.status}): "
                f"`memfiles working show --run {run}` restores it"
            )
        values = checked_changes({"goal": goal, **{k: v for k, v in fields.items() if v is not None}})
        _ensure_folder(self.project)
        state = WorkingState(run=run, path=run_rel(run), area=area or KIND)
        rel, root = state.path, self.project.root

        def fresh_run(work: BatchFiles) -> None:  # under the write lock: two starts of one run add one
            if rel in work.drafts or (root / rel).exists():
                raise WorkingError(
                    f"run {run} already has working memory ({rel}): `memfiles working show --run {run}` restores"
                    " it; start another with a --run of its own"
                )

        extra = {"tags": [HOOKS_TAG]} if by_hooks else {}
        self._write([self._state_op(state, values, **extra)], guard=fresh_run)
        return require(self.project, run)

    def set(self, run: str | None, changes: dict[str, Any], add_evidence: list[str] | None = None) -> WorkingState:
        state = live(self.project, resolve_run(self.project, run))
        values = {**state.values, **checked_changes(changes)}
        if add_evidence:
            new = list_field("evidence_refs", add_evidence)
            values["evidence_refs"] = list(dict.fromkeys([*values.get("evidence_refs", []), *new]))
        if "evidence_refs" in values:  # as the write stores them (E-1 is E-001), so that the same ones compare equal
            schema = self.project.settings.schema
            spelled = (evidence_id(item, schema.prefixes, schema.id_width) or item for item in values["evidence_refs"])
            values["evidence_refs"] = list(dict.fromkeys(spelled))
        if values == state.values:  # set --stage x twice
            self._nothing(f"nothing changed: run {state.run} already holds these values")
            return state
        self._write([self._state_op(state, values)])
        return require(self.project, state.run)

    def todo_add(self, run: str | None, task: str, note: str | None = None) -> tuple[WorkingState, str]:
        state = live(self.project, resolve_run(self.project, run))
        task = one_line_field("task", task) or ""
        if not task:
            raise WorkingError("task is empty: say what is to be done")
        op = {
            "op": "add",
            "kind": KIND,
            "title": task,
            "area": state.area,
            "body": (note or "").strip() or default_note(state.run),
            "file": state.path,
            "section": TODO_SECTION,
        }
        result = self._write([op])
        return require(self.project, state.run), result.added[0]

    def todo_status(self, run: str | None, which: str, status: str, note: str | None = None) -> WorkingState:
        state = live(self.project, resolve_run(self.project, run))
        todo = find_todo(state, which)
        op: dict[str, Any] = {"op": "update", "id": todo.id, "status": status}
        if note and note.strip():
            op["body"] = note.strip()
        if todo.status != status or "body" in op:
            self._write([op])
        else:
            self._nothing(f"nothing changed: {todo.id} is {status} already")
        return require(self.project, state.run)

    def _nothing(self, warning: str) -> None:
        self.warnings.append(warning)
        self.unchanged = True

    def end(
        self, run: str | None, episode: bool = False, outcome: str | None = None, title: str | None = None
    ) -> tuple[WorkingState, str | None]:
        """Close the run; with `episode`, record it as an episode first (idempotent on a re-run)."""
        state = require(self.project, resolve_run(self.project, run))
        outcome = one_line_field("outcome", outcome)
        episode_id = next((i for i in state.promoted if i.startswith(self._episode_prefix())), None)
        if state.status == "ended" and (episode_id is not None or not episode):
            # ended before: nothing to write (a repeat after a crash lands here); say what was not recorded
            self.unchanged = True
            if outcome or title:
                where = f"edit {episode_id} with memfiles set" if episode_id else "it has no episode"
                note = f"run {state.run} had already ended; --outcome/--title were not recorded ({where})"
                self.warnings.append(note)
            return state, episode_id  # the episode it was recorded as, asked for or not: the first run's ids
        if episode and episode_id is None:
            op = normalize_automated(episode_op(state, outcome, title), self.project.settings.schema)
            result = self._write([op], request_id=f"working-end-{state.run}-{state.id}")
            episode_id = result.added[0]
        promoted = list(dict.fromkeys([*state.promoted, *([episode_id] if episode_id else [])]))
        extra: dict[str, Any] = {"status": "ended"}
        if promoted:
            extra["promoted"] = promoted
        if state.status != "ended" or promoted != state.promoted:
            self._write([self._state_op(state, state.values, **extra)])
        return require(self.project, state.run), episode_id if episode else None

    def _episode_prefix(self) -> str:
        kind = self.project.settings.schema.kind("episode")
        return f"{kind.prefix}-" if kind else "E-"


def find_todo(state: WorkingState, which: str) -> Todo:
    which = which.strip()
    by_id = [todo for todo in state.todos if same_id(todo.id, which)]  # w-2 and W-0002 are W-002
    if by_id:
        return by_id[0]
    by_task = [todo for todo in state.todos if todo.task.casefold() == which.casefold()]
    if len(by_task) == 1:
        return by_task[0]
    listed = "; ".join(f"{todo.id} {todo.task} ({todo.status})" for todo in state.todos) or "none yet"
    many = " (several have that text: use the id)" if by_task else ""
    raise WorkingError(f"run {state.run} has no todo {which!r}{many}; todos: {listed}")


def _new_run_name() -> str:
    """`run-20261130-120636-3f9a`: the time for people, four random hex digits so that two runs started in
    the same second get names of their own (start refuses a name already taken, under the lock)."""
    return "run-" + dt.datetime.now().strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def _ensure_folder(project: Project) -> None:
    """memory/working/ with its .gitignore, written only when the folder is created (delete it to commit)."""
    folder: Path = project.settings.memory_dir / FOLDER
    if folder.is_dir():
        return
    try:
        folder.mkdir(parents=True)
    except FileExistsError:
        return  # another `working start` made it a moment ago (two at once), and writes its .gitignore
    (folder / ".gitignore").write_text(GITIGNORE, encoding="utf-8")


# Which runs there are and which one a command means: kept apart (working_runs.py), read through here too.
from memfiles.services.agents.working_runs import resolve_run, run_list, runs  # noqa: E402
