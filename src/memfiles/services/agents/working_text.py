"""The text of working memory: its fields' values checked, the state entry's field list, and the episode a
run becomes."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from memfiles.errors import MemfilesError
from memfiles.format.wrap import control_character
from memfiles.jsonin import json_type
from memfiles.services.hook_text import strip_injected

if TYPE_CHECKING:
    from memfiles.services.agents.working import WorkingState

SCALARS = ("goal", "stage", "hypothesis", "last_action", "last_observation", "next_step")
LISTS = ("blockers", "evidence_refs", "active_action_ids")
# The fields the state entry's body lists (evidence_refs is its `evidence` metadata instead).
BODY_FIELDS = tuple(name for name in (*SCALARS, *LISTS) if name != "evidence_refs")
_FIELD_LINE = re.compile(r"^- \*\*([a-z_]+)\*\*:(?: (.*))?$")
_ITEM_LINE = re.compile(r"^  - (.*)$")


class WorkingError(MemfilesError):
    """A working-memory request that cannot be done (no such run, several runs, a bad value). One about a
    field's value names the field and is an `op` error, as an option of `add` with a bad value is."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        if field is not None:
            self.code = "op"


def one_line_field(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise WorkingError(f"{name} must be text, got {json_type(value)}", name)
    value = strip_injected(value).strip()  # what a hook injected is memory already, not the run's state
    if "\n" in value or "\r" in value:
        raise WorkingError(f"{name} must be one line: put long output in a file and cite it in evidence_refs", name)
    control = control_character(value)
    if control is not None:
        raise WorkingError(f"{name} holds {control}; write it with spaces (one line of printable text)", name)
    return value or None


def list_field(name: str, value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise WorkingError(f"{name} must be a list of text", name)
    items = [text for item in value if (text := strip_injected(item).strip())]
    for item in items:
        if "\n" in item or "\r" in item:
            raise WorkingError(f"{name}: each item must be one line", name)
        if control_character(item):
            raise WorkingError(f"{name}: {item!r} holds {control_character(item)}; write it with spaces", name)
        if name == "evidence_refs" and "," in item:
            raise WorkingError(f"evidence_refs: {item!r} holds a comma; give each ref on its own", name)
    return items


def checked_changes(changes: dict[str, Any]) -> dict[str, Any]:
    """`changes` with every name known and every value the right shape; WorkingError otherwise."""
    settable = (*SCALARS, *LISTS)
    unknown = sorted(set(changes) - set(settable))
    if unknown:
        raise WorkingError(
            f"unknown field {', '.join(unknown)} (fields: {', '.join(settable)}; todos have their own commands)"
        )
    out: dict[str, Any] = {}
    for name, value in changes.items():
        out[name] = list_field(name, value) if name in LISTS else one_line_field(name, value)
    if "goal" in out and not out["goal"]:
        raise WorkingError("goal cannot be empty: a run is for something", "goal")
    return out


def render_fields(values: dict[str, Any]) -> str:
    """The state entry's body: one list item per field, list fields as nested items (never re-wrapped)."""
    lines = []
    for name in BODY_FIELDS:
        value = values.get(name)
        if name in LISTS:
            lines.append(f"- **{name}**:")
            lines.extend(f"  - {item}" for item in value or ())
        else:
            lines.append(f"- **{name}**:" + (f" {value}" if value else ""))
    return "\n".join(lines)


def parse_fields(body: str, where: str) -> dict[str, Any]:
    """The fields of a state entry's body; WorkingError naming the file for a line that is not one."""
    values: dict[str, Any] = {}
    current: str | None = None
    for number, line in enumerate(body.split("\n"), start=1):
        if not line.strip():
            continue
        match = _FIELD_LINE.match(line)
        if match and match.group(1) in BODY_FIELDS:
            current = match.group(1)
            text = (match.group(2) or "").strip()
            values[current] = [] if current in LISTS else (text or None)
            continue
        item = _ITEM_LINE.match(line)
        if item and current in LISTS:
            values[current].append(item.group(1).strip())
            continue
        if current is not None and line.startswith("  ") and not line.lstrip().startswith("- "):
            # a value the write path's line-length rule (md013) wrapped, or an editor did: one value still
            if current in LISTS and values[current] and line.startswith("    "):
                values[current][-1] += " " + line.strip()
                continue
            if current not in LISTS and values[current]:
                values[current] += " " + line.strip()
                continue
        raise WorkingError(
            f"{where}: line {number} of the state is not '- **field**: value' (fields: {', '.join(BODY_FIELDS)})"
        )
    return values


def episode_op(state: WorkingState, outcome: str | None, title: str | None) -> dict[str, Any]:
    """The add op of the episode a run becomes: what it tried, what it saw, what it did, its error signature."""
    from memfiles.services.agents.recall import error_signature

    lines = [outcome or f"Run {state.run} ended at stage {state.get('stage') or 'unknown'}.", ""]
    for name in ("goal", "stage", "hypothesis", "last_action", "last_observation", "next_step"):
        if state.get(name):
            lines.append(f"- **{name}**: {state.get(name)}")
    for name in ("blockers",):
        if state.get(name):
            lines.append(f"- **{name}**: " + "; ".join(state.get(name)))
    done = [todo.task for todo in state.get("todo_done")]
    if done:
        lines.append("- **done**: " + "; ".join(done))
    blocked = [todo.task for todo in state.get("todo_blocked")]
    if blocked:
        lines.append("- **blocked**: " + "; ".join(blocked))
    # one line each: error_signature picks a line, and the hypothesis must not become part of the error's
    text = "\n".join(
        [*(str(state.get(name) or "") for name in ("last_observation", "hypothesis")), *state.get("blockers")]
    )
    signature = error_signature(text)
    if signature:
        lines.append(f"- **signature**: `{signature}`")
    return {
        "op": "add",
        "kind": "episode",
        "title": title or state.get("goal") or f"Run {state.run}",
        "area": state.area,
        "body": "\n".join(lines),
        "evidence": [*state.get("evidence_refs"), f"run:{state.run}"],
        "source": f"run:{state.run}",
    }
