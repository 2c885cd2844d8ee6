"""The JSON contract: the objects every `--json` output, the MCP server and the language server share.

One place builds each object, so an agent that has parsed one command's output has parsed them all.
The objects are documented in docs/json.md (a test holds the two together). Stdlib only.

- entry:   one entry, every metadata key present (null or [] when unset), where it lives, its body.
- finding: one thing a check found (check, audit, refs, dupes, lint): code, severity, place, target.
- hit:     one search result: the entry, a score that means the same across queries, and its signals.
- write:   what a write did (add, set, retire, prune, import, renumber ...): ids by verb and the entries.
- error:   why a command refused (exit 2), with the file and line, the op, or the config key.

Dates are ISO 8601 (`2026-11-30`); instants are UTC ISO 8601 (`2026-11-30T09:31:29Z`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memfiles.format.model import Entry

SEVERITIES = ("error", "warning", "info")

# Every finding code a command can produce, with its severity: the one registry. docs/json.md's
# "Finding codes" table lists each one (tests/test_json_contract.py holds the two together, and fails on a
# literal code passed to Finding() or finding() that is not here). Add your code here when you add a check.
FINDING_CODES: dict[str, str] = {
    # check and fmt (format/validate.py, services/upkeep/check.py)
    "parse-error": "error",
    "not-utf8": "error",
    "link-out": "error",  # fmt: a memory file that is a link out of the memory folders is not written
    "unknown-prefix": "error",
    "id-format": "error",
    "duplicate-id": "error",
    "bad-status": "error",
    "bad-date": "error",
    "title-too-long": "error",
    "body-empty": "error",
    "body-too-long": "error",
    "bad-ref": "error",
    "successor-not-retired": "error",
    "retired-without-reason": "error",
    "entry-in-manual": "error",
    "stale-index": "error",
    "not-canonical": "error",
    "mixed-line-endings": "error",
    "stray-cr": "error",
    "stray-bom": "error",
    "control-character": "error",
    "pruned-id-reused": "error",
    "bad-ledger": "error",
    "empty-file": "info",
    "config-shadowed": "warning",
    "config-ignored": "warning",
    "lint-skipped": "info",
    # ids (services/upkeep/check.py id_findings, services/upkeep/audit.py)
    "successor-cycle": "error",
    "missing-id": "error",
    "ids-conflict": "error",
    "ids-file": "error",
    # memory layers (services/upkeep/evidence.py, services/agents/promote.py): audit
    "evidence-dangling": "warning",
    "evidence-missing-file": "warning",
    "evidence-unknown-commit": "warning",
    "evidence-unknown-run": "warning",
    "evidence-none": "info",
    "promote-candidate": "info",
    # dupes (services/upkeep/dupes.py)
    "near-duplicate": "warning",
    # the read side (list, show, audit, refs): a memory file set aside
    "unparseable": "error",
    # audit
    "dangling-ref": "error",
    "retired-ref": "warning",
    "duplicate-title": "warning",
    "stale": "warning",
    "pruned": "info",
    # refs
    "ref-ok": "info",
    "ref-retired": "warning",
    "ref-pruned": "error",
    "ref-dangling": "error",
    "ref-ambiguous": "error",
    "ref-unreadable": "warning",
}


# The Markdown lint rule set's findings carry the rule's id in lower case (md009, md034 ...): one family of
# codes, all warnings (docs/lint.md lists the rules memfiles keeps).
LINT_SEVERITY = "warning"


def is_lint_code(code: str) -> bool:
    return len(code) == 5 and code.startswith("md") and code[2:].isdigit()


def severity_of(code: str) -> str | None:
    """The registered severity of a finding code (a lint rule's too); None for a code nobody registered."""
    return FINDING_CODES.get(code) or (LINT_SEVERITY if is_lint_code(code) else None)


def iso_instant(epoch: float | None) -> str | None:
    """A Unix time as UTC ISO 8601 with seconds (`2026-11-30T09:31:29Z`); None stays None."""
    if epoch is None:
        return None
    return dt.datetime.fromtimestamp(epoch, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def entry_object(
    entry: Entry,
    *,
    kind: str | None,
    path: str | None,
    line: int | None,
    section: str | None,
    body: bool = True,
    pruned: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The entry object. Every metadata key of the format appears, snake_case, null or [] when unset.

    `section` is null for entries above the first level-2 heading; `pruned` is {"date", "reason"} for an
    entry found only in memory/pruned.jsonl (then path and line say where it lived).
    """
    from memfiles.format.model import LIST_KEYS, META_KEYS

    data: dict[str, Any] = {
        "id": entry.id,
        "kind": kind,
        "title": entry.title,
        "status": entry.status,
        "area": entry.area,
        "date": entry.date,
        "section": section or None,
        "path": path,
        "line": line if line else None,
    }
    for key in META_KEYS:
        if key in ("date", "area", "status"):
            continue
        name = key.replace("-", "_")
        value = getattr(entry, name, None)
        data[name] = list(value or ()) if key in LIST_KEYS else (value if value not in ("", None) else None)
    if body:
        data["body"] = entry.body
    data["pruned"] = pruned
    return data


def entry_ref(
    entry_id: str,
    *,
    title: str | None = None,
    status: str | None = None,
    path: str | None = None,
    line: int | None = None,
) -> dict[str, Any]:
    """A short pointer to an entry (a finding's target, a successor): id, title, status, path, line."""
    return {"type": "entry", "id": entry_id, "title": title, "status": status, "path": path, "line": line}


@dataclass(frozen=True)
class Finding:
    """One thing a check found, at `path:line`.

    `code` is stable and documented (docs/json.md lists every code); `severity` is error, warning or info;
    `id` is the entry the finding is about (if any); `target` points at what it refers to (an entry ref,
    a doc or a skill); `detail` carries numbers particular to the code (a near-duplicate's score and signals).
    """

    code: str
    severity: str
    path: str | None
    line: int | None
    message: str
    id: str | None = None
    target: dict[str, Any] | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")

    def __str__(self) -> str:
        where = self.path or "-"
        if self.line:
            where = f"{where}:{self.line}"
        return f"{where}: {self.code} {self.message}"

    def as_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "id": self.id,
            "path": self.path,
            "line": self.line,
            "message": self.message,
            "target": self.target,
            "detail": dict(self.detail),
        }


def finding(code: str, path: str | None, line: int | None, message: str, **rest: Any) -> Finding:
    """A Finding with the severity the registry gives its code; KeyError for a code not registered."""
    return Finding(code, FINDING_CODES[code], path, line, message, **rest)


def hit_object(entry: dict[str, Any], score: float, signals: dict[str, Any], rank: int) -> dict[str, Any]:
    """One search result: its 1-based rank, a score in [0, 1] comparable across queries, the signals that
    matched ({"id", "exact", "lexical", "dense"}), and the entry object."""
    return {"rank": rank, "score": round(float(score), 6), "signals": signals, "entry": entry}


def write_object(
    *,
    added: list[str] | None = None,
    updated: list[str] | None = None,
    retired: list[str] | None = None,
    pruned: list[str] | None = None,
    renumbered: dict[str, str] | None = None,
    replayed: bool = False,
    entries: list[dict[str, Any]] | None = None,
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    """What a write did: ids by verb in op order, whether it was a replay of a request id already applied,
    the entry objects as they now stand (pruned ones excepted), and warnings (index, near-duplicates, refs)."""
    return {
        "added": list(added or []),
        "updated": list(updated or []),
        "retired": list(retired or []),
        "pruned": list(pruned or []),
        "renumbered": dict(renumbered or {}),
        "replayed": replayed,
        "entries": list(entries or []),
        "warnings": list(warnings or []),
    }


def error_object(
    code: str,
    message: str,
    *,
    path: str | None = None,
    line: int | None = None,
    op: int | None = None,
    key: str | None = None,
    field: str | None = None,
    problems: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Why a command refused: code (parse, op, config, usage, lock, index, refused, io, ambiguous, drafter), the
    message, and whichever of path/line, op (1-based position in a batch) and field, or config key applies.
    `problems` lists the parts of the refusal, each a problem object (`problem`): every problem of a batch
    (the first of which the top-level op and field name), both places of an ambiguous id, each
    near-duplicate that refused an add."""
    return {
        "error": {
            "code": code,
            "message": message,
            "path": path,
            "line": line,
            "op": op,
            "key": key,
            "field": field,
            "problems": list(problems or []),
        }
    }


def problem(
    message: str,
    *,
    op: int | None = None,
    field: str | None = None,
    id: str | None = None,
    path: str | None = None,
    line: int | None = None,
) -> dict[str, Any]:
    """One item of an error's `problems`: the message, and whichever of op position and field, entry id,
    and path/line applies (null otherwise): every key is always present."""
    return {"op": op, "field": field, "message": message, "id": id, "path": path, "line": line}


def error_for(error: Exception) -> dict[str, Any]:
    """The error object of a MemfilesError, with whatever place it carries (its message as on stderr):
    file and line, op position and field (and every problem of a batch), config key."""
    code = getattr(error, "code", None)
    problems = [
        item
        if isinstance(item, dict)
        else problem(item.message, op=item.position, field=item.field, id=getattr(item, "id", None))
        for item in getattr(error, "problems", [])
    ]
    return error_object(
        code if isinstance(code, str) else "usage",
        str(error),
        path=getattr(error, "path", None),
        line=getattr(error, "line", None),
        op=getattr(error, "position", None),
        key=getattr(error, "key", None),
        field=getattr(error, "field", None),
        problems=problems,
    )
