"""The watcher's socket protocol, in one place: each op, the request a client sends and the answer it gets.

One JSON object a line each way, in memfiles/jsonline.py's codec (services/indexing/ipc.py writes and reads
them; cli/watcher_wire.py for the thin clients). Every client builds its request with the function named
after the op, and the watcher (services/watch/dispatch.py) answers exactly the ops of OPS;
tests/test_protocol.py holds the three together. Every answer carries `ok`; a failed one `error` (and
`gone` when the watcher is exiting, so the client goes on without it). Nothing is imported at run time,
not even `typing`: the thin clients of memsearch and the hooks load this module on every call.

| op | request | answer (besides `ok`) |
|---|---|---|
| ping | | `pid`, `ready`, `failed` |
| status | | `watcher`, `index`, `drift` (docs/json.md) |
| search | `queries` [[text, k]], `filters`, `mode` | `results` (hit objects per query), `unreadable` |
| search_many | `items` [{query, k, filters, mode}] | `results` (hit objects per item), `unreadable` |
| similar | `texts`, `k`, `filters` | `results` ([entry fields, cosine] per text) |
| vectors | | `ids`, `hashes`, `dimension`, `vectors` (services/indexing/vectors.py) |
| sync | `paths`, `pruned` | `queued` when the watcher is still catching up |
| backfill | `rebuild`, `check` | `drift`, `summary`; `report`, `warnings` unless a check |
| memsearch | memsearch's options as typed | `out`, `err` (the text the full command would print) |
| hook | `event`, `input`, `root`, `cwd`, `env` | `text` (the hook's JSON answer, as printed) |
| hook_settle | `root`, `session` | |
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` is not imported at run time (see above)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    Request = dict[str, Any]

OPS = (
    "ping",
    "status",
    "search",
    "search_many",
    "similar",
    "vectors",
    "sync",
    "backfill",
    "memsearch",
    "hook",
    "hook_settle",
)
# Each op's answer, the fields besides `ok` (a trailing `?`: present only at times, as the table says);
# tests/test_protocol.py asks a real watcher every op and holds its answers to exactly these.
ANSWERS = {
    "ping": ("pid", "ready", "failed"),
    "status": ("watcher", "index", "drift"),
    "search": ("results", "unreadable"),
    "search_many": ("results", "unreadable"),
    "similar": ("results",),
    "vectors": ("ids", "hashes", "dimension", "vectors"),
    "sync": ("queued?",),
    "backfill": ("drift", "summary", "report?", "warnings?"),
    "memsearch": ("out", "err"),
    "hook": ("text",),
    "hook_settle": (),
}
REFUSED = ("error", "gone?")  # a failed answer's fields: `ok` false
MEMSEARCH_KEYS = ("query", "k", "kind", "area", "status", "path", "since", "mode", "json")


def ping() -> Request:
    """Whether a watcher runs and is ready; costs it nothing (no idle time is reset)."""
    return {"op": "ping"}


def status() -> Request:
    return {"op": "status"}


def search(queries: Iterable[tuple[str, int]] | list[list[Any]], filters: Mapping[str, Any], mode: str) -> Request:
    return {"op": "search", "queries": [[str(q), int(k)] for q, k in queries], "filters": dict(filters), "mode": mode}


def search_many(items: list[dict[str, Any]]) -> Request:
    """Several filtered searches in one round trip (recall's layers, the hooks' readings)."""
    return {"op": "search_many", "items": items}


def similar(texts: list[str], k: int, filters: Mapping[str, Any]) -> Request:
    return {"op": "similar", "texts": texts, "k": k, "filters": dict(filters)}


def vectors() -> Request:
    return {"op": "vectors"}


def sync(paths: Iterable[str], pruned: Iterable[str]) -> Request:
    """A write's update: the files it changed, and the ids it pruned."""
    return {"op": "sync", "paths": sorted(paths), "pruned": sorted(pruned)}


def backfill(rebuild: bool, check: bool) -> Request:
    return {"op": "backfill", "rebuild": rebuild, "check": check}


def memsearch(args: Mapping[str, Any]) -> Request:
    """The thin memsearch client's one call: its options as typed, resolved by the watcher."""
    return {"op": "memsearch", **{key: args[key] for key in MEMSEARCH_KEYS}}


def hook(event: str | None, raw: str, root: str, cwd: str, env: Mapping[str, str]) -> Request:
    """An agent's hook call, answered by the watcher with the caller's folder and variables."""
    return {"op": "hook", "event": event, "input": raw, "root": root, "cwd": cwd, "env": dict(env)}


def hook_settle(root: str, session: str) -> Request:
    """Wait for the session's write the watcher may still be making (a failure's)."""
    return {"op": "hook_settle", "root": root, "session": session}
