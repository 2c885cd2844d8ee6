"""The text of working memory: the state entry's field list, and the episode a run becomes."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from memfiles.errors import MemfilesError

if TYPE_CHECKING:
    from memfiles.services.working import WorkingState

SCALARS = ("goal", "stage", "hypothesis", "last_action", "last_observation", "next_step")
LISTS = ("blockers", "evidence_refs", "active_action_ids")
# The fields the state entry's body lists (evidence_refs is its `evidence` metadata instead).
BODY_FIELDS = tuple(name for name in (*SCALARS, *LISTS) if name != "evidence_refs")
_FIELD_LINE = re.compile(r"^- \*\*([a-z_]+)\*\*:(?: (.*))?$")
_ITEM_LINE = re.compile(r"^  - (.*)$")


class WorkingError(MemfilesError):
    """A working-memory request that cannot be done (no such run, several runs, a bad value)."""


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
        raise WorkingError(
            f"{where}: line {number} of the state is not '- **field**: value' (fields: {', '.join(BODY_FIELDS)})"
        )
    return values


def episode_op(state: WorkingState, outcome: str | None, title: str | None) -> dict[str, Any]:
    """The add op of the episode a run becomes: what it tried, what it saw, what it did, its error signature."""
    from memfiles.services.recall import error_signature

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
    text = (
        " ".join(str(state.get(name) or "") for name in ("last_observation", "hypothesis"))
        + " "
        + " ".join(state.get("blockers"))
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
