"""The JSON contract of docs/json.md as data, and a validator, for every test that reads `--json` output.

Use it from any test:

    from tests.contract_shapes import check_command, check_shape
    check_command("list", json.loads(result.stdout))       # a whole command output, by its label
    check_shape(obj, "finding")                             # one object: entry, finding, hit, write, error ...

A failure is an AssertionError naming the JSON path (`$.entries[0].line: expected int or null, got "8"`).

Type specs: `str`, `int`, `number`, `bool`, `date` (YYYY-MM-DD), `instant` (UTC ISO 8601), `any`, `object`
(any dict), a shape name from SHAPES, `[T]` a list of T, `{T}` a dict of string keys to T, `A|B` either,
and a trailing `?` for "or null". A shape has exactly its keys: none missing, none extra.

To put a command under the contract, add its top-level shape to COMMANDS (and its row to docs/json.md's
Commands table), then a Case to tests/test_json_contract.py.
"""

from __future__ import annotations

import re
from typing import Any

from memfiles.contract import SEVERITIES, severity_of
from memfiles.format.model import LIST_KEYS, META_KEYS, REQUIRED_KEYS

# Every metadata key of the format, as the entry object carries it (snake_case; lists as lists).
_META = {
    key.replace("-", "_"): ("[str]" if key in LIST_KEYS else "str?") for key in META_KEYS if key not in REQUIRED_KEYS
}

SHAPES: dict[str, dict[str, str]] = {
    "entry": {
        "id": "str",
        "kind": "str?",
        "title": "str",
        "status": "str",
        "area": "str",
        "date": "date",
        "section": "str?",
        "path": "str?",
        "line": "int?",
        **_META,
        "body": "str",
        "pruned": "pruned?",
    },
    "pruned": {"date": "date?", "reason": "str?"},
    "finding": {
        "code": "str",
        "severity": "str",
        "id": "str?",
        "path": "str?",
        "line": "int?",
        "message": "str",
        "target": "entry_ref|doc_ref?",
        "detail": "object",
    },
    "entry_ref": {"type": "str", "id": "str", "title": "str?", "status": "str?", "path": "str?", "line": "int?"},
    "doc_ref": {"type": "str", "name": "str", "anchor": "str?", "path": "str?"},
    "hit": {"rank": "int", "score": "number", "signals": "signals", "entry": "entry"},
    "signals": {"id": "bool", "exact": "bool", "lexical": "number?", "dense": "number?"},
    "write": {
        "added": "[str]",
        "updated": "[str]",
        "retired": "[str]",
        "pruned": "[str]",
        "renumbered": "{str}",
        "replayed": "bool",
        "entries": "[entry]",
        "warnings": "[str]",
    },
    "error": {
        "code": "str",
        "message": "str",
        "path": "str?",
        "line": "int?",
        "op": "int?",
        "key": "str?",
        "field": "str?",
        "problems": "[problem]",
    },
    # an item of an error's problems (docs/json.md, under the error table)
    "problem": {"op": "int?", "field": "str?", "message": "str", "id": "str?", "path": "str?", "line": "int?"},
    # an item of `working list`
    "run": {
        "run": "str",
        "path": "str",
        "status": "str",
        "goal": "str?",
        "updated": "instant",
        "hooks": "bool",
        "problem": "str?",
    },
    "index_status": {
        "exists": "bool",
        "store": "str",
        "model": "str?",
        "entries": "int?",
        "generation": "any",
        "catalog": "object?",
        "server": "server?",
        "error": "str?",
    },
    # index_status.server: the Chroma server whose pool of vectors a clone's view shares (docs/json.md)
    "server": {"url": "str", "collection": "str?", "vectors": "int?", "error": "str?"},
}
# The entry without its body, where a command documents that it leaves the body out (list without --body).
SHAPES["entry_without_body"] = {key: spec for key, spec in SHAPES["entry"].items() if key != "body"}

# The objects docs/json.md documents under their own heading (the others are parts of these).
DOCUMENTED = ("entry", "finding", "hit", "write", "error")

ERROR_CODES = ("parse", "op", "config", "usage", "lock", "index", "refused", "io", "ambiguous", "drafter")

# What each command prints with --json, by a label (a command name, or a name and a variant).
COMMANDS: dict[str, dict[str, str]] = {
    "list": {"entries": "[entry_without_body]", "skipped": "[finding]"},
    "list --body": {"entries": "[entry]", "skipped": "[finding]"},
    "show": {"entry": "entry", "skipped": "[finding]"},
    "audit": {"findings": "[finding]", "skipped": "[finding]"},
    "refs": {"findings": "[finding]", "skipped": "[finding]"},
    "check": {"files": "int", "findings": "[finding]"},
    "fmt": {"changed": "[str]", "unchanged": "int", "findings": "[finding]"},
    "write": {
        "added": "[str]",
        "updated": "[str]",
        "retired": "[str]",
        "pruned": "[str]",
        "renumbered": "object",
        "replayed": "bool",
        "entries": "[entry]",
        "warnings": "[str]",
    },
    "memsearch": {"query": "str", "hits": "[hit]", "warnings": "[str]"},
    "memsearch --batch": {"id": "any", "query": "str", "hits": "[hit]", "warnings": "[str]"},
    "backfill": {
        "indexed": "int",
        "embedded": "int",
        "reused": "int",
        "retagged": "int",
        "unchanged": "int",
        "removed": "int",
        "seconds": "number",
        "skipped": "[finding]",
    },
    "backfill --check": {
        "missing_or_stale": "[str]",
        "retag": "[str]",
        "orphaned": "[str]",
        "unchanged": "int",
        "indexed": "int",
        "on_disk": "int",
        "unreadable": "[str]",
        "duplicate_ids": "object",
        "skipped": "[finding]",
    },
    "status": {"root": "str", "watcher": "object", "index": "index_status", "drift": "object?", "skipped": "[finding]"},
    "gc": {
        "server": "str",
        "collection": "str",
        "unused_for_days": "number",
        "removed": "int",
        "kept": "int",
        "dry_run": "bool",
    },
    "working list": {"runs": "[run]"},
    "hooks install": {
        "agent": "str",
        "scope": "str",
        "path": "str",
        "changed": "bool",
        "added": "[str]",
        "removed": "[str]",
        "dry_run": "bool",
        "diff": "str",
    },
    "error": {"error": "error"},
}

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


def _fail(where: str, spec: str, value: Any) -> None:
    raise AssertionError(f"{where}: expected {spec}, got {value!r}")


def check(value: Any, spec: str, where: str = "$") -> None:
    """Assert that `value` matches the type spec (see the module docstring)."""
    if spec.endswith("?"):
        if value is None:
            return
        spec = spec[:-1]
    if "|" in spec:
        errors = []
        for option in spec.split("|"):
            try:
                check(value, option, where)
                return
            except AssertionError as error:
                errors.append(str(error))
        raise AssertionError(" / ".join(errors))
    if spec.startswith("[") and spec.endswith("]"):
        if not isinstance(value, list):
            _fail(where, spec, value)
        for index, item in enumerate(value):
            check(item, spec[1:-1], f"{where}[{index}]")
        return
    if spec.startswith("{") and spec.endswith("}"):
        if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
            _fail(where, spec, value)
        for key, item in value.items():
            check(item, spec[1:-1], f"{where}.{key}")
        return
    if spec in SHAPES:
        check_shape(value, spec, where)
        return
    simple = {
        "str": lambda v: isinstance(v, str),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "date": lambda v: isinstance(v, str) and _DATE.match(v) is not None,
        "instant": lambda v: isinstance(v, str) and _INSTANT.match(v) is not None,
        "object": lambda v: isinstance(v, dict),
        "any": lambda v: True,
    }
    if spec not in simple:
        raise AssertionError(f"{where}: unknown type spec {spec!r} (a typo in tests/contract_shapes.py?)")
    if not simple[spec](value):
        _fail(where, spec, value)


def check_shape(value: Any, shape: str, where: str = "$") -> None:
    """Assert that `value` is the object `shape` with exactly its keys, each of its type, plus the rules of
    the contract that types cannot say (a finding's code is registered with that severity, ...)."""
    keys = SHAPES[shape]
    if not isinstance(value, dict):
        _fail(where, shape, value)
    missing = set(keys) - set(value)
    extra = set(value) - set(keys)
    if missing or extra:
        raise AssertionError(f"{where}: {shape} keys differ: missing {sorted(missing)}, extra {sorted(extra)}")
    for key, spec in keys.items():
        check(value[key], spec, f"{where}.{key}")
    if shape == "finding":
        assert value["severity"] in SEVERITIES, f"{where}.severity: {value['severity']!r}"
        registered = severity_of(value["code"])
        assert registered is not None, f"{where}.code: {value['code']!r} is not in contract.FINDING_CODES"
        assert registered == value["severity"], f"{where}: {value['code']} has another severity"
    elif shape == "entry_ref":
        assert value["type"] == "entry", f"{where}.type: {value['type']!r}"
    elif shape == "doc_ref":
        assert value["type"] in ("doc", "skill"), f"{where}.type: {value['type']!r}"
    elif shape == "error":
        assert value["code"] in ERROR_CODES, f"{where}.code: {value['code']!r} is not one of {ERROR_CODES}"


def check_command(label: str, value: Any) -> None:
    """Assert that `value` is what the command `label` (a key of COMMANDS) documents for --json."""
    keys = COMMANDS[label]
    if not isinstance(value, dict):
        _fail("$", f"the {label} object", value)
    assert set(value) == set(keys), f"$: {label} prints keys {sorted(value)}, documented {sorted(keys)}"
    for key, spec in keys.items():
        check(value[key], spec, f"$.{key}")
