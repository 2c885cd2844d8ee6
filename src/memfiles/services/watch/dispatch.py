"""The watcher's side of the socket: one request object in, one answer object out (services/indexing/ipc.py).

Ops: ping, search, search_many, similar, vectors, sync (the write path's update), backfill, status, and
memsearch (the thin client's one call: memsearch's options as typed, resolved here).
The answers are the same objects the local index client returns (services/indexing/index_client.py), plus "ok".
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from memfiles.contract import iso_instant
from memfiles.limits import QUERY_LIMIT, REQUEST_BUDGET, cut_query
from memfiles.services.indexing.searches import hit_objects

if TYPE_CHECKING:
    from memfiles.services.watch.watcher import Watcher


def answer(watcher: Watcher, request: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    gone = watcher.stale() or ("it was asked to stop" if watcher.stopping.is_set() else None)
    if gone:  # it exits now: the client goes on without a watcher (services/indexing/ipc.py request)
        return {"ok": False, "gone": True, "error": f"the watcher is exiting: {gone}"}
    # a ping only asks whether it runs (a client choosing its path), and status how it is (a prompt or a
    # status bar polling it kept an idle watcher, and its model, in memory for good): neither is work
    if op not in ("ping", "status"):
        watcher.active()
    if op == "ping":
        return {"ok": True, "pid": os.getpid(), "ready": watcher.ready.is_set(), "failed": watcher.failed}
    if op == "hook":  # before the wait for readiness: a hook has its own deadline
        return _hook(watcher, request)
    if op == "hook_settle":  # a writing hook its client runs itself waits for the session's pending write
        from memfiles.services.agents.hook_run import session_turn

        session = request.get("session")
        if not isinstance(session, str):
            return {"ok": False, "error": "hook_settle needs a session"}
        session_turn(watcher.settings.state_dir, session).release()
        return {"ok": True}
    if not watcher.ready.is_set() and not watcher.failed:
        # Catching up with the files: a write's update joins the queue the catch-up is followed by, and a
        # near-duplicate check does not wait for it (its caller compares words instead).
        if op == "sync":
            for path in request.get("paths", []):
                watcher.debouncer.touched(str(path))
            return {"ok": True, "queued": True}
        if op in ("similar", "memsearch"):  # memsearch: its thin client then runs the full command
            return {"ok": False, "error": "the watcher is still catching up with the files"}
    not_ready = _wait_ready(watcher)
    if not_ready:
        return {"ok": False, "error": not_ready}
    keeper = watcher.keeper
    if op in ("search", "memsearch", "search_many", "similar"):
        keeper.torch_for_queries()
    # Searches share the index (services/watch/sharing.py), each within its budget from the moment it
    # holds it (memfiles.limits): one slow request holds up no other.
    if op == "search":
        from memfiles.index.filters import Filters

        filters = Filters(**request.get("filters", {}))
        mode = request.get("mode", "hybrid")
        with keeper.mutex.shared():
            deadline = time.monotonic() + REQUEST_BUDGET
            results = [
                hit_objects(keeper.searcher.search(str(q), int(k), filters, mode, deadline=deadline))
                for q, k in request["queries"]
            ]
        return {"ok": True, "results": results, "unreadable": dict(keeper.catalog.broken)}
    if op == "memsearch":
        return _memsearch(watcher, request)
    if op == "search_many":  # several filtered searches in one round trip (recall's layers)
        from memfiles.services.indexing.searches import search_many

        with keeper.mutex.shared():
            results = search_many(keeper.searcher, request["items"], time.monotonic() + REQUEST_BUDGET)
        return {"ok": True, "results": results, "unreadable": dict(keeper.catalog.broken)}
    if op == "similar":
        from memfiles.index.filters import Filters
        from memfiles.services.indexing.index_session import nearest

        texts = [str(text)[:QUERY_LIMIT] for text in request["texts"]]  # the model reads far less than that
        with keeper.mutex.shared():
            results = nearest(keeper.searcher, texts, Filters(**request.get("filters", {})), int(request.get("k", 5)))
        return {"ok": True, "results": results}
    if op == "vectors":  # for `dupes`: every stored vector at once (services/indexing/vectors.py)
        from memfiles.services.indexing.vectors import encode_vectors

        with keeper.mutex:
            got = keeper.session.store.get(None, include=["embeddings", "metadatas"])
        hashes = [(m or {}).get("hash", "") for m in got["metadatas"]]
        return {"ok": True, **encode_vectors(list(got["ids"]), hashes, got["embeddings"])}
    if op == "sync":
        keeper.sync_paths(set(request.get("paths", [])), set(request.get("pruned", [])))
        return {"ok": True}
    if op == "backfill":
        return {"ok": True, **keeper.backfill(bool(request.get("rebuild")), bool(request.get("check")))}
    if op == "status":
        return {"ok": True, **status(watcher)}
    return {"ok": False, "error": f"unknown op {op!r}"}


def _hook(watcher: Watcher, request: dict[str, Any]) -> dict[str, Any]:
    """An agent's hook call, answered here warm by the code the hook's own process would run
    (services/agents/hook_run.py), with the caller's folder and variables; searches go to this watcher's index
    in place of the socket. Another project's call is refused: its client answers it itself."""
    import json

    from memfiles.errors import IndexUnavailable
    from memfiles.services.agents.hook_run import run_hook
    from memfiles.services.indexing.searches import search_many

    root, raw, env = request.get("root"), request.get("input"), request.get("env")
    if not isinstance(root, str) or not isinstance(raw, str) or not isinstance(env, dict):
        return {"ok": False, "error": "a hook call needs root, input and env"}
    if os.path.realpath(root) != os.path.realpath(watcher.project.root):
        return {"ok": False, "error": f"this watcher serves {watcher.project.root}, not {root}"}
    event = request.get("event") if isinstance(request.get("event"), str) else None
    cwd = request.get("cwd") if isinstance(request.get("cwd"), str) else None

    def ask(items: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        if watcher.failed or not watcher.ready.is_set():
            raise IndexUnavailable(watcher.failed or "the watcher is still catching up with the files")
        keeper = watcher.keeper
        keeper.torch_for_queries()
        with keeper.mutex.shared():
            return search_many(keeper.searcher, items, time.monotonic() + REQUEST_BUDGET)

    out = run_hook(event, lambda: raw, root, env={str(k): str(v) for k, v in env.items()}, cwd=cwd, ask=ask)
    return {"ok": True, "text": json.dumps(out, ensure_ascii=False)}


def _memsearch(watcher: Watcher, request: dict[str, Any]) -> dict[str, Any]:
    """What memsearch prints (stdout, stderr) for the options the thin client read (cli/quick_search.py):
    kinds by name or prefix, as the full command takes them, rendered as the full command renders them.
    A refusal sends the client to the full command, which prints the error as it always does."""
    from memfiles.errors import MemfilesError
    from memfiles.services.indexing.index_client import unreadable_warnings
    from memfiles.services.indexing.search_request import request_filters
    from memfiles.services.indexing.search_text import pruned_notes, rendered

    try:  # the full command's rules: kinds by name or prefix, statuses any case, an unknown one refused
        filters = request_filters(watcher.project.settings.schema, request)
    except MemfilesError as error:
        return {"ok": False, "error": str(error)}
    keeper = watcher.keeper
    query, cut = cut_query(str(request["query"]))  # the thin client sends the query as typed
    with keeper.mutex.shared():
        deadline = time.monotonic() + REQUEST_BUDGET
        found = keeper.searcher.search(query, int(request["k"]), filters, request.get("mode", "hybrid"), deadline)
        hits = hit_objects(found)  # candidates without evidence are not hits (services/indexing/searches.py)
        warnings = [*([cut] if cut else []), *unreadable_warnings(dict(keeper.catalog.broken))]
    settings = watcher.project.settings
    warnings += pruned_notes(settings.memory_dir, settings.schema.prefixes, query, hits)
    out, err = rendered(query, hits, bool(request.get("json")), warnings)
    return {"ok": True, "out": out, "err": err}


def _wait_ready(watcher: Watcher, timeout: float = 600.0) -> str | None:
    """Wait for the catch-up to finish; at once the reason when the start failed or the watcher stops."""
    deadline = time.monotonic() + timeout
    while not watcher.ready.wait(timeout=0.1):
        if watcher.failed:
            return f"the watcher could not start: {watcher.failed}"
        if watcher.stopping.is_set():
            return "the watcher is stopping"
        if time.monotonic() > deadline:
            return f"the watcher is still catching up after {timeout:g} s"
    return None


def status(watcher: Watcher) -> dict[str, Any]:
    """{"watcher", "index", "drift"} as the status command prints them."""
    keeper = watcher.keeper
    state = keeper.state
    drift = keeper.backfill(rebuild=False, check=True)["drift"]
    return {
        "watcher": {
            "running": True,
            "starting": False,
            "pid": os.getpid(),
            "since": iso_instant(state.started),
            "last_sync": iso_instant(state.last_sync),
            "syncs": state.syncs,
            "pending_files": len(watcher.debouncer),
            "watched_folders": sorted(watcher.project.rel(p) for p in watcher.watched),
            "last_reconcile_drift": state.last_drift,
            "query_encoder": keeper.query_encoder(),
            "started_by": watcher.started_by,
            "idle_exit": watcher.idle_exit or None,
            "exits_at": iso_instant(watcher.exits_at()),
        },
        "index": keeper.index_status(),
        "drift": drift,
    }
