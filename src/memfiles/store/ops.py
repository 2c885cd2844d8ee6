"""The ops of a write batch, parsed and checked one by one; errors name the op's position and field.

`add`, `set`, `retire`, `prune` and `import` all become ops, so every write follows one code path.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from memfiles.errors import BatchError, OpError
from memfiles.format.grammar import is_manual_name, title_loses_its_end
from memfiles.format.ids import Schema, evidence_id, normalize_id
from memfiles.format.validate import is_date
from memfiles.format.wrap import clip, control_character, one_line, printable_body, stray_control
from memfiles.jsonin import json_type
from memfiles.store.project import WORKING_KIND

OPS = ("add", "update", "retire", "prune", "section", "renumber")
AUTOMATED = "_automated"  # the key normalize_automated marks an op with
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
LIST_FIELDS = ("refs", "tags", "evidence", "follow", "promoted", "failed")
ID_LIST_FIELDS = ("refs", "follow", "promoted")
# What an entry op may set: everything of an entry but its id, plus where it lives (file, section).
_ENTRY_FIELDS = frozenset(
    "file title area status date body section refs tags source confirmed last_seen evidence failed contradicted".split()  # noqa: SIM905
) | {"promoted"}
ALLOWED = {
    "add": _ENTRY_FIELDS | {"kind"},
    "update": _ENTRY_FIELDS | {"id"},
    "retire": {"id", "successor", "reason"},
    "prune": {"id", "reason"},
    "section": {"file", "section", "intro"},  # sets the free text under a section heading (e.g. Notes)
    # gives the entry at `at` (one of two carrying `id`) a fresh id; the entries in `follow` point at it
    "renumber": {"id", "at", "follow"},
}
REQUIRED = {
    "add": ("kind", "title", "area", "body"),
    "section": ("file", "section", "intro"),
    "retire": ("reason",),
    "prune": ("reason",),
    "renumber": ("at",),
}
_AT_RE = re.compile(r"^[^:\n]+\.md(?::[1-9][0-9]*)?$")


@dataclass
class Op:
    """One checked op. `fields` holds only what the op sets; `position` is 1-based, as errors say it."""

    position: int
    op: str
    id: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what was changed in a text as given (the writer is told)
    clip: bool = False  # an automated writer's: a body past the limit once prepared is clipped, not refused

    def get(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)


class _Problems:
    """The problems of one op, collected so that one run reports them all."""

    def __init__(self, position: int) -> None:
        self.position = position
        self.items: list[OpError] = []

    def add(self, message: str, field: str | None = None) -> None:
        self.items.append(OpError(self.position, message, field))


def _text(problems: _Problems, name: str, value: Any, *, one_line_only: bool = True) -> str | None:
    if not isinstance(value, str):
        problems.add(f"{name} must be text, got {json_type(value)}", name)
        return None
    value = value.strip()
    if not value:
        problems.add(f"{name} is empty", name)
        return None
    if one_line_only and "\n" in value:
        problems.add(f"{name} must be one line", name)
        return None
    control = control_character(value) if one_line_only else None
    if control is not None:
        problems.add(f"{name} holds {control}; write it with spaces (one line of printable text)", name)
        return None
    return value


def _id(problems: _Problems, name: str, value: str, width: int) -> str | None:
    """An id as given (`d-1`, `@@D-001`, `D-0001`) in canonical form (`D-001`); a problem if it is none."""
    try:
        return normalize_id(value, width)
    except ValueError as error:
        problems.add(f"{name}: {error}", name)
        return None


def _ids(
    problems: _Problems, name: str, value: Any, width: int, prefixes: tuple[str, ...] = ()
) -> tuple[str, ...] | None:
    if isinstance(value, str):
        value = [part for part in value.split(",")]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        problems.add(f"{name} must be a list of text", name)
        return None
    items = tuple(item.strip() for item in value if item.strip())
    if name in ID_LIST_FIELDS:
        ids = [_id(problems, name, item, width) for item in items]
        if None in ids:
            return None
        return tuple(dict.fromkeys(entry_id for entry_id in ids if entry_id))
    elif any("," in item or "\n" in item for item in items):
        problems.add(f"{name}: items cannot hold commas or newlines", name)
        return None
    elif any(control_character(item) for item in items):
        control = next(c for c in map(control_character, items) if c)
        problems.add(f"{name}: an item holds {control}; write it with spaces", name)
        return None
    if name == "tags":  # as refs are: `tags: a, a` says nothing `tags: a` does not
        return tuple(dict.fromkeys(items))
    if name == "evidence" and prefixes:  # an entry's id in any spelling is stored as ids are: E-1 is E-001
        return tuple(dict.fromkeys(evidence_id(item, prefixes, width) or item for item in items))
    return items


def _body(problems: _Problems, key: str, item: Any, schema: Schema, notes: list[str]) -> str | None:
    """A body or intro as given, its line ends LF and its control characters dropped (a note says so).
    What else it needs to stand in its file is the write path's to do (markdown/body.py, D-110)."""
    if not isinstance(item, str):
        problems.add(f"{key} must be text, got {json_type(item)}", key)
        return None
    text = item.replace("\r\n", "\n").replace("\r", "\n")
    control = stray_control(text)
    if control is not None:
        text = printable_body(text)
        notes.append(f"line {control[0]} held {control[1]}, which no Markdown viewer shows: control characters dropped")
    text = text.strip("\n")
    if key == "body" and not text.strip():
        problems.add("body is empty", key)
        return None
    if key == "body" and len(text) > schema.body_limit:
        problems.add(f"body is {len(text)} characters; at most {schema.body_limit}: shorten it or split it", key)
        return None
    return text


def parse_op(value: Any, position: int, schema: Schema, wrap: int = 100) -> Op:
    """`value` (a decoded JSON object) as a checked Op. Anything wrong raises BatchError listing every
    problem of the op, each naming `position` and the field."""
    problems = _Problems(position)
    op = _parse_op(value, problems, schema, wrap)
    if problems.items or op is None:
        raise BatchError(problems.items)
    return op


def _parse_op(value: Any, problems: _Problems, schema: Schema, wrap: int) -> Op | None:
    position = problems.position
    if not isinstance(value, dict):
        problems.add(f"expected an object, got {json_type(value)}")
        return None
    name = value.get("op")
    if name not in OPS:
        problems.add(f"op must be one of {', '.join(OPS)}, got {name!r}", "op")
        return None
    clipped = value.get(AUTOMATED) is True  # normalize_automated's mark, not a field of the op
    keys = {key.replace("-", "_") for key in value if key not in ("op", AUTOMATED)}
    unknown = keys - ALLOWED[name]
    if unknown:
        allowed = ", ".join(sorted(ALLOWED[name]))
        problems.add(f"{name} does not take {', '.join(sorted(unknown))} (it takes {allowed})", sorted(unknown)[0])
    data = {
        key.replace("-", "_"): item
        for key, item in value.items()
        if key not in ("op", AUTOMATED) and key.replace("-", "_") not in unknown
    }
    op = Op(position, name, clip=clipped)
    if name not in ("add", "section"):
        if "id" not in data:
            problems.add(f"{name} needs the id of an entry", "id")
        else:
            given = _text(problems, "id", data.pop("id"))
            op.id = None if given is None else _id(problems, "id", given, schema.id_width)
    for key, item in data.items():
        if key in LIST_FIELDS:
            checked: Any = _ids(problems, key, item, schema.id_width, schema.prefixes)
        elif key == "successor":
            checked = _text(problems, key, item)
            checked = None if checked is None else _id(problems, key, checked, schema.id_width)
        elif key == "section" and isinstance(item, str):
            # `--section "## Design"` means the section Design: the heading's marks are fmt's to write
            checked = _text(problems, key, item.strip().lstrip("#"))
        elif key in ("intro", "body"):
            checked = _body(problems, key, item, schema, op.notes)
        else:
            checked = _text(problems, key, item)
        if checked is not None:
            op.fields[key] = checked
    _check_fields(op, schema, problems, given=set(data))
    return op


def _check_fields(op: Op, schema: Schema, problems: _Problems, given: set[str]) -> None:
    def fail(message: str, field: str | None = None) -> None:
        problems.add(message, field)

    title = op.get("title")
    for name in ("title", "section"):
        value = op.get(name)
        if isinstance(value, str) and title_loses_its_end(value):
            fail(
                f"{name} {value!r} ends in a run of '#' (alone, or after a space), which a Markdown heading "
                "does not show: drop it, or end with a word",
                name,
            )
    if title is not None and len(title) > schema.title_limit:
        fail(
            f"title is {len(title)} characters; at most {schema.title_limit}: shorten it and move detail into the body",
            "title",
        )
    for name in ("date", "last_seen"):
        if op.get(name) is not None and not is_date(op.get(name)):
            fail(f"{name}: {op.get(name)!r} is not a date (YYYY-MM-DD)", name)
    if op.get("kind") is not None:
        named = op.get("kind")
        kind = schema.kind(named) or schema.kind(named.lower()) or schema.kind(named.upper())
        if kind is not None:
            op.fields["kind"] = kind.name
        else:
            names = [known.name for known in schema.kinds]
            close = difflib.get_close_matches(named.lower(), names, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            fail(f"kind: unknown kind {named!r} ({hint}known: {', '.join(names)})", "kind")
    if op.get("section") is not None and is_manual_name(str(op.get("section")).strip()):
        fail("section: Manual is the user's own (in any case); no tool writes there", "section")
    if op.id is not None and op.id in op.get("refs", ()):
        fail(f"refs: {op.id} cannot refer to itself", "refs")
    if op.get("file") is not None and not op.get("file").endswith(".md"):
        fail(f"file: {op.get('file')!r} must be a Markdown file (.md)", "file")
    if op.get("at") is not None and not _AT_RE.match(op.get("at")):
        fail(f"at: {op.get('at')!r} is not a place (PATH or PATH:LINE, as check prints it)", "at")
    # a field given but refused above is not also "missing"
    missing = [name for name in REQUIRED.get(op.op, ()) if op.get(name) is None and name not in given]
    if op.op == "add":
        for required in missing:
            fail(f"add needs {required}", required)
    elif op.op == "update" and not op.fields and not given:
        fail("update changes nothing")
    elif op.op == "section" and missing:
        fail("section needs file, section and intro", missing[0])
    elif op.op in ("retire", "prune") and missing:
        fail(f"{op.op} needs a reason (it is recorded where audit reports it)", "reason")
    elif op.op == "renumber" and missing:
        fail("renumber needs at: the place (PATH:LINE) of the entry that gets a new id", "at")


def check_ops(document: Any, schema: Schema, wrap: int = 100) -> tuple[list[Op], list[OpError]]:
    """The ops of `{"ops": [...]}` (or a bare list) that are well-formed, and the problems of the others.

    Every problem of every op is collected, each with its position and field, so that the batch's own
    checks (missing ids, successors) can run over the good ops and one error can list them all.
    """
    ops = document.get("ops") if isinstance(document, dict) else document
    if isinstance(document, dict) and set(document) - {"ops"}:
        raise OpError(None, f'unexpected keys {", ".join(sorted(set(document) - {"ops"}))}; expected {{"ops": [...]}}')
    if not isinstance(ops, list):
        raise OpError(None, 'expected {"ops": [...]} or a list of ops')
    parsed: list[Op] = []
    problems: list[OpError] = []
    for position, value in enumerate(ops, start=1):
        collected = _Problems(position)
        op = _parse_op(value, collected, schema, wrap)
        if op is not None and op.op == "update" and op.id:
            kind = schema.kind_of(op.id)
            if kind is not None and kind.name == WORKING_KIND:  # `set W-1 --status active` reopened an ended run
                collected.add(
                    f"{op.id} is a run's working memory: change it with memfiles working set, todo or end", "id"
                )
        problems.extend(collected.items)
        if op is not None and not collected.items:
            parsed.append(op)
    return parsed, problems


def parse_ops(document: Any, schema: Schema, wrap: int = 100) -> list[Op]:
    """The ops of `{"ops": [...]}` (or a bare list), all checked before anything is written; BatchError
    lists every problem."""
    parsed, problems = check_ops(document, schema, wrap)
    if problems:
        raise BatchError(problems)
    return parsed


def ops_digest(ops: list[Op]) -> str:
    """A digest of what a batch asks for, so a request id replayed with a different batch is told apart."""
    canonical = [{"op": op.op, "id": op.id, "fields": op.fields} for op in ops]
    text = json.dumps(canonical, sort_keys=True, ensure_ascii=False, default=list)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def normalize_automated(value: Any, schema: Schema) -> Any:
    """An op as an automated writer's is taken: one-line fields collapsed to one line of printable text
    (tabs and other control characters become spaces), the title clipped, the body rid of terminal
    escapes and other control characters and clipped.

    Nobody corrects a machine's batch by hand, so a shortened entry beats a lost one; every other
    violation is still refused by parse_op.
    """
    if not isinstance(value, dict):
        return value
    fixed = dict(value)
    for name in TEXT_FIELDS:  # control characters collapse to spaces in every one-line field
        if name != "body" and isinstance(fixed.get(name), str):
            fixed[name] = one_line(fixed[name])
    if isinstance(fixed.get("title"), str):
        fixed["title"] = clip(one_line(fixed["title"]), schema.title_limit)
    if isinstance(fixed.get("body"), str):
        fixed["body"] = clip(printable_body(fixed["body"]).strip(), schema.body_limit)
    fixed[AUTOMATED] = True  # and clipped again should preparing it for its file make it longer
    return fixed


def today() -> str:
    return dt.date.today().isoformat()
