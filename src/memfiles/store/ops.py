"""The ops of a write batch, parsed and checked one by one; errors name the op's position and field.

`add`, `set`, `retire`, `prune` and `import` all become ops, so every write follows one code path.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from memfiles.errors import OpError
from memfiles.format.ids import FULL_ID_RE, Schema
from memfiles.format.model import MANUAL_HEADING
from memfiles.format.validate import body_problem, is_date
from memfiles.format.wrap import clip, normalize_body, one_line

OPS = ("add", "update", "retire", "prune", "section")
TEXT_FIELDS = (
    "file",
    "kind",
    "title",
    "area",
    "status",
    "date",
    "body",
    "section",
    "successor",
    "reason",
    "source",
    "confirmed",
    "last_seen",
    "contradicted",
)
LIST_FIELDS = ("refs", "tags", "evidence", "failed")
# What an entry op may set: everything of an entry but its id, plus where it lives (file, section).
_ENTRY_FIELDS = frozenset(
    "file title area status date body section refs tags source confirmed last_seen evidence failed contradicted".split()  # noqa: SIM905
)
ALLOWED = {
    "add": _ENTRY_FIELDS | {"kind"},
    "update": _ENTRY_FIELDS | {"id"},
    "retire": {"id", "successor", "reason"},
    "prune": {"id", "reason"},
    "section": {"file", "section", "intro"},  # sets the free text under a section heading (e.g. Notes)
}


@dataclass
class Op:
    """One checked op. `fields` holds only what the op sets; `position` is 1-based, as errors say it."""

    position: int
    op: str
    id: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)


def _text(position: int, name: str, value: Any, *, one_line_only: bool = True) -> str:
    if not isinstance(value, str):
        raise OpError(position, f"{name} must be text, got {type(value).__name__}")
    value = value.strip()
    if not value:
        raise OpError(position, f"{name} is empty")
    if one_line_only and "\n" in value:
        raise OpError(position, f"{name} must be one line")
    return value


def _ids(position: int, name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [part for part in value.split(",")]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise OpError(position, f"{name} must be a list of text")
    items = tuple(item.strip() for item in value if item.strip())
    if name in ("refs",):
        for item in items:
            if not FULL_ID_RE.match(item):
                raise OpError(position, f"{name}: {item!r} is not an id (like D-476)")
    elif any("," in item or "\n" in item for item in items):
        raise OpError(position, f"{name}: items cannot hold commas or newlines")
    return items


def parse_op(value: Any, position: int, schema: Schema, wrap: int = 100) -> Op:
    """`value` (a decoded JSON object) as a checked Op; OpError naming `position` for anything wrong."""
    if not isinstance(value, dict):
        raise OpError(position, f"expected an object, got {type(value).__name__}")
    name = value.get("op")
    if name not in OPS:
        raise OpError(position, f"op must be one of {', '.join(OPS)}, got {name!r}")
    keys = {key.replace("-", "_") for key in value if key != "op"}
    unknown = keys - ALLOWED[name]
    if unknown:
        allowed = ", ".join(sorted(ALLOWED[name]))
        raise OpError(position, f"{name} does not take {', '.join(sorted(unknown))} (it takes {allowed})")
    data = {key.replace("-", "_"): item for key, item in value.items() if key != "op"}
    op = Op(position, name)
    if name not in ("add", "section"):
        if "id" not in data:
            raise OpError(position, f"{name} needs the id of an entry")
        op.id = _text(position, "id", data.pop("id"))
        if not FULL_ID_RE.match(op.id):
            raise OpError(position, f"id: {op.id!r} is not an id (like D-476)")
    for key, item in data.items():
        if key in LIST_FIELDS:
            op.fields[key] = _ids(position, key, item)
        elif key == "intro":
            if not isinstance(item, str):
                raise OpError(position, "intro must be text")
            intro = normalize_body(item, wrap)
            problem = body_problem(intro)
            if problem:
                raise OpError(position, problem.replace("body", "intro"))
            op.fields[key] = intro
        elif key == "body":
            if not isinstance(item, str):
                raise OpError(position, f"body must be text, got {type(item).__name__}")
            body = normalize_body(item, wrap)
            if not body:
                raise OpError(position, "body is empty")
            problem = body_problem(body)
            if problem:
                raise OpError(position, problem)
            if len(body) > schema.body_limit:
                raise OpError(
                    position,
                    f"body is {len(body)} characters; at most {schema.body_limit}: shorten it or split it",
                )
            op.fields[key] = body
        else:
            op.fields[key] = _text(position, key, item)
    _check_fields(op, schema)
    return op


def _check_fields(op: Op, schema: Schema) -> None:
    position = op.position
    title = op.get("title")
    if title is not None and len(title) > schema.title_limit:
        raise OpError(
            position,
            f"title is {len(title)} characters; at most {schema.title_limit}: shorten it and move detail into the body",
        )
    for name in ("date", "last_seen"):
        if op.get(name) is not None and not is_date(op.get(name)):
            raise OpError(position, f"{name}: {op.get(name)!r} is not a date (YYYY-MM-DD)")
    if op.get("kind") is not None and schema.kind(op.get("kind")) is None:
        known = ", ".join(kind.name for kind in schema.kinds)
        raise OpError(position, f"kind: unknown kind {op.get('kind')!r} (known: {known})")
    if op.get("section") is not None and f"## {op.get('section')}" == MANUAL_HEADING:
        raise OpError(position, "section: Manual is the user's own; no tool writes there")
    if op.get("successor") is not None and not FULL_ID_RE.match(op.get("successor")):
        raise OpError(position, f"successor: {op.get('successor')!r} is not an id (like D-476)")
    if op.get("file") is not None and not op.get("file").endswith(".md"):
        raise OpError(position, f"file: {op.get('file')!r} must be a Markdown file (.md)")
    if op.op == "add":
        for required in ("kind", "title", "area", "body"):
            if op.get(required) is None:
                raise OpError(position, f"add needs {required}")
    elif op.op == "update" and not op.fields:
        raise OpError(position, "update changes nothing")
    elif op.op == "section" and (op.get("file") is None or op.get("section") is None or "intro" not in op.fields):
        raise OpError(position, "section needs file, section and intro")
    elif op.op in ("retire", "prune") and op.get("reason") is None:
        raise OpError(position, f"{op.op} needs a reason (it is recorded where audit reports it)")


def parse_ops(document: Any, schema: Schema, wrap: int = 100) -> list[Op]:
    """The ops of `{"ops": [...]}` (or a bare list), all checked before anything is written."""
    ops = document.get("ops") if isinstance(document, dict) else document
    if isinstance(document, dict) and set(document) - {"ops"}:
        raise OpError(None, f'unexpected keys {", ".join(sorted(set(document) - {"ops"}))}; expected {{"ops": [...]}}')
    if not isinstance(ops, list):
        raise OpError(None, 'expected {"ops": [...]} or a list of ops')
    return [parse_op(value, position, schema, wrap) for position, value in enumerate(ops, start=1)]


def normalize_automated(value: Any, schema: Schema) -> Any:
    """An op as an automated writer's is taken: title collapsed to one line and clipped, body clipped.

    Nobody corrects a machine's batch by hand, so a shortened entry beats a lost one; every other
    violation is still refused by parse_op.
    """
    if not isinstance(value, dict):
        return value
    fixed = dict(value)
    if isinstance(fixed.get("title"), str):
        fixed["title"] = clip(one_line(fixed["title"]), schema.title_limit)
    if isinstance(fixed.get("body"), str):
        fixed["body"] = clip(fixed["body"].strip(), schema.body_limit)
    return fixed


def today() -> str:
    return dt.date.today().isoformat()
