"""Experience-first recall: what the memory holds for what an agent is about to do, layer by layer.

The layers come in the memory-manager seed's order (procedure, episode, insight, working), with the
lessons learnt from runs (the distiller's known failure patterns, and lessons written by hand) after the
episodes they were drawn from; a trigger names the moment in an agent's loop and decides which layers
are mandatory then. Each group says when
it is empty, so an agent knows it looked. Cheap enough for every turn: with a watcher running, all the
layers' searches are one socket round trip, and this module imports nothing heavy at module level.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from memfiles.config import Settings
from memfiles.contract import hit_object
from memfiles.errors import IndexUnavailable, MemfilesError, NoWatcher
from memfiles.format.ids import RETIRED
from memfiles.format.model import area_key
from memfiles.limits import cut_query
from memfiles.services.agents.failures import error_signature
from memfiles.store.project import Project

ORDER = ("procedure", "episode", "lesson", "insight", "working")
# Why each layer is mandatory, in the seed's words.
WHY = {
    "procedure": "procedures come before every execution batch",
    "episode": "episodes of similar failures, repeated attempts and the same task type",
    "lesson": "lessons learnt from earlier runs: known failure patterns and the fix that worked",
    "insight": "insights for planning, trade-offs, contradictions and the final answer",
    "working": "the run's working memory for resume, compaction recovery and handoff",
}
# The seed's mandatory retrieval triggers and the layers each makes mandatory.
TRIGGERS: dict[str, tuple[str, ...]] = {
    "turn": ("procedure", "episode", "lesson", "insight"),  # every new user turn
    "act": ("procedure", "episode"),  # every execution batch, before acting: episodes of the same task
    "replan": ("procedure", "episode", "lesson", "insight"),  # every replan
    "failure": ("procedure", "episode", "lesson"),  # a significant failure or a new error signature
    "risky": ("procedure", "episode", "lesson"),  # a high-resource or irreversible action
    "resume": ("procedure", "working"),  # a long action resumed, a decision after polling
    "answer": ("insight", "working"),  # before the final answer or a handoff
    "memory-edit": ("procedure", "insight"),  # changing memory itself or a memory-related instruction
    "compaction": ("procedure", "working"),  # compaction markers (Compact, Summary) in the context
}
DEFAULT_K = 3
_EXTRA = 5  # asked beyond k so that retired entries can be dropped without coming up short

# --- the seam: every search recall and the MCP server make goes through filtered_search ----------


def filtered_search(
    settings: Settings,
    items: list[tuple[str, dict[str, Any], int]],
    watcher_only: bool = False,
    local: Callable[[list[dict[str, Any]]], list[list[dict[str, Any]]]] | None = None,
    warnings: list[str] | None = None,
) -> tuple[list[list[dict[str, Any]]], str]:
    """THE SEAM. For each (query, filters, k): the k best hits passing `filters` ({"kind", "area",
    "status", "path", "since"}), as dicts holding at least id, score, path and line.

    One socket round trip when a watcher runs; else the store opened here; else word overlap over the
    files. Returns the hits and which of "watcher", "local" or "files" answered. With `watcher_only`
    (an agent's hook, which must answer in milliseconds and apply one score floor), no watcher is
    IndexUnavailable: opening the store means loading the model, and word overlap scores at most 0.32.
    `local` is the watcher's own search_many, for a call the watcher answers itself (no socket to itself).
    `warnings` gets what the files answer in place of (files_warning): no index, or why it failed.
    """
    payload = [{"query": query, "k": k, "filters": dict(filters)} for query, filters, k in items]
    if local is not None:
        return local(payload), "watcher"
    from memfiles.services.indexing.index_client import connect, index_exists

    if watcher_only:
        try:
            return connect(settings, watcher_only=True).search_many(payload), "watcher"
        except NoWatcher:
            if not index_exists(settings):  # only now: it opens the store module
                raise IndexUnavailable(
                    "there is no index yet: run `memfiles backfill`, then `memfiles watch`"
                ) from None
            raise

    if index_exists(settings):
        client = connect(settings)
        try:
            answers = client.search_many(payload)
            if warnings is not None:  # what the index said of itself: files it could not read, or that it
                warnings.extend(client.warnings)  # is behind the files (services/indexing/staleness.py)
            return answers, client.where
        except IndexUnavailable as error:
            from memfiles.index.embedder import ModelUnavailable

            if isinstance(error, ModelUnavailable):
                raise  # the `model` setting is wrong: say which to fix rather than answer by shared words
            # no collection yet, or a store that cannot be opened: the files still answer, and say why
            if warnings is not None:
                warnings.append(files_warning(error))
            return _files_search(Project(settings), items), "files"
    if warnings is not None:
        warnings.append(files_warning(None))
    return _files_search(Project(settings), items), "files"


def files_warning(error: Exception | None) -> str:
    """What a search answered from the files says: there is no index, or the one there failed (a damaged
    store's error names the fix, `backfill --rebuild`; it used to read "no index")."""
    if error is None:
        return "no index: hits ranked by shared words (run memfiles backfill, or memfiles watch)"
    return f"hits ranked by shared words: {error}"


def _files_search(project: Project, items: list[tuple[str, dict[str, Any], int]]) -> list[list[dict[str, Any]]]:
    """Without an index: entries passing the filters, ranked by the share of the query's words they hold."""
    from memfiles.format.ids import HIDDEN_KINDS, id_key, id_keys_in
    from memfiles.index.score import ID_SCORE, fused_score, words_signal
    from memfiles.index.text import tokenize

    schema = project.settings.schema
    located = list(project.load_all().entries())
    out = []
    for query, filters, k in items:
        wanted = set(tokenize(query))
        named = set(id_keys_in(query))  # an id in the query, in any spelling, is that entry, as in memsearch
        scored = []
        for loc in located:
            found = schema.kind_of(loc.entry.id)
            kind = found.name if found else None
            if not wanted or (filters.get("kind") or None) not in (None, kind):
                continue
            if not filters.get("kind") and kind in HIDDEN_KINDS:
                continue
            if filters.get("status") not in (None, loc.entry.status):
                continue
            if filters.get("area") is not None and area_key(str(filters["area"])) != area_key(loc.entry.area):
                continue  # an area in any case, as the index's filters and `list --area` match it
            words = set(tokenize(f"{loc.entry.title}\n\n{loc.entry.body}"))
            share = len(wanted & words) / len(wanted)
            if id_key(loc.entry.id) in named:
                scored.append((ID_SCORE, None, loc))
            elif share > 0:  # on the one scale (docs/json.md): the lexical half, read from the words alone
                lexical = words_signal(share)
                scored.append((fused_score(lexical, 0.0), lexical, loc))
        scored.sort(key=lambda item: (-item[0], item[2].entry.id))
        out.append(
            [
                {
                    "id": loc.entry.id,
                    "score": round(score, 6),
                    "lexical": None if lexical is None else round(lexical, 6),
                    "path": loc.file.rel,
                    "line": loc.entry.line,
                }
                for score, lexical, loc in scored[:k]
            ]
        )
    return out


# --- recall ---------------------------------------------------------------------------------------


def recall(
    project: Project,
    query: str,
    trigger: str = "turn",
    run: str | None = None,
    k: int = DEFAULT_K,
    floor: float | None = None,
) -> dict[str, Any]:
    """The recall object of docs/json.md: the trigger's mandatory layers in the seed's order, each with
    its hits at or above the layer's floor (recall_floors; `floor` for every layer) or the run's working
    memory, and a note when it is empty. The query is also read for its situation (services/agents/situation.py),
    as the hooks read it; a promoted episode gives way to the procedure it became."""
    from memfiles.services.agents.layers import floored, give_way, merged, situation_queries

    if trigger not in TRIGGERS:
        raise MemfilesError(f"unknown trigger {trigger!r} (triggers: {', '.join(TRIGGERS)})")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 50:
        raise MemfilesError(f"k must be a whole number from 1 to 50, got {k!r}")
    if floor is not None and (isinstance(floor, bool) or not isinstance(floor, int | float) or not 0 <= floor <= 1):
        raise MemfilesError(f"floor must be a number from 0 to 1 (a hit's score), got {floor!r}")
    layers = [layer for layer in ORDER if layer in TRIGGERS[trigger]]
    if run:
        from memfiles.services.agents.working import check_run

        check_run(run)  # a run name that cannot be one ("../../etc") is bad input, not an empty layer
    warnings: list[str] = []
    working, run_name, run_note = _working(project, run, "working" in layers, warnings)
    spoken = " ".join((query or "").split())
    query, cut = cut_query(spoken)  # searched: its start; the error signature reads all of it (linear)
    if cut:
        warnings.append(cut)
    if not query and working is not None:  # resume with nothing said: look for what the run is doing
        query = " ".join(str(working.get(name) or "") for name in ("goal", "next_step")).strip()
    searched = [layer for layer in layers if layer != "working"]
    if searched and not query:
        if run and run_note:  # the run named was to supply the query: say why it could not
            raise MemfilesError(f"the query is empty and run {run!r} gives none: {run_note}")
        if run_note and "working" in layers:  # the active run was to supply it (none, or several)
            raise MemfilesError(f"the query is empty and no run gives one: {run_note}")
        raise MemfilesError("say what you are about to do (the query is empty)")
    signature = error_signature(spoken or query) if trigger == "failure" else None
    queries = {layer: (signature if layer == "episode" and signature else query) for layer in searched}
    # a failure is read by its error; anything else for its situation too (a command for act and risky)
    more = situation_queries(project, query, trigger in ("act", "risky")) if searched and not signature else {}
    asked = [(layer, text) for layer in searched for text in dict.fromkeys([queries[layer], *more.get(layer, [])])]
    source = "none"
    entries = EntryReader(project)
    found: dict[str, list[dict[str, Any]]] = {layer: [] for layer in searched}
    if asked:
        raw, source = filtered_search(
            project.settings, [(text, {"kind": layer}, k + _EXTRA) for layer, text in asked], warnings=warnings
        )
        for (layer, text), hits in zip(asked, raw, strict=True):
            found[layer] = merged(found[layer], to_hits(entries, hits, text, k + _EXTRA, drop_retired=True))
        found = give_way(entries, found)
    groups = []
    for layer in layers:
        group: dict[str, Any] = {"layer": layer, "why": WHY[layer], "query": queries.get(layer)}
        if layer == "working":
            group.update(hits=[], working=working.as_json() if working else None, floor=None)
            group["empty"] = working is None
            group["note"] = run_note if working is None else None
        else:
            # words alone (no index) score 0.32 at most: the floors are for the index's scores
            bar = floor if floor is not None else (project.settings.floor(layer) if source != "files" else 0.0)
            hits, note = floored(found.get(layer, []), bar, k, layer)
            group.update(hits=hits, floor=bar, empty=not hits, note=note)
        groups.append(group)
    return {
        "query": query,
        "trigger": trigger,
        "run": run_name,
        "signature": signature,
        "index": source,
        "layers": groups,
        "warnings": warnings,
    }


def _working(project: Project, run: str | None, wanted: bool, warnings: list[str]) -> tuple[Any, str | None, str]:
    """The run's working state (or None), its name, and why it is missing when it is."""
    from memfiles.services.agents import working

    if not wanted and not run:
        return None, None, ""
    try:
        name = working.resolve_run(project, run)
        state = working.load(project, name)
    except MemfilesError as error:
        return None, run or os.environ.get(working.RUN_ENV), str(error)
    if state is None:
        return None, name, f"no working memory for run {name!r}: start it with memfiles working start"
    return (state if wanted else None), name, ""


def to_hits(
    reader: EntryReader, raw_hits: list[dict[str, Any]], query: str, k: int, drop_retired: bool = False
) -> list[dict[str, Any]]:
    """The contract's hit objects for the seam's raw hits (entries read from their files), at most k."""
    from memfiles.format.ids import id_key, id_keys_in

    named = set(id_keys_in(query))  # `t-1` and `@@T-0001` name T-001, as the index reads them
    hits: list[dict[str, Any]] = []
    for raw in raw_hits:
        if "entry" in raw and "rank" in raw:  # already a contract hit
            entry, score, signals = raw["entry"], raw["score"], raw["signals"]
        else:
            entry = reader.entry(raw)
            score = min(1.0, float(raw["score"]))
            signals = {"id": id_key(raw["id"]) in named, "exact": False, "lexical": raw.get("lexical"), "dense": None}
        if entry is None or (drop_retired and entry["status"] == RETIRED):
            continue
        hits.append(hit_object(entry, score, signals, len(hits) + 1))
        if len(hits) == k:
            break
    return hits


class EntryReader:
    """Entry objects for hits, read from their files (the files are the truth; each file parsed once)."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.files: dict[str, Any] = {}

    def entry(self, hit: dict[str, Any]) -> dict[str, Any] | None:
        rel = hit["path"]
        if rel not in self.files:
            try:
                loaded = self.project.load_file(self.project.root / rel)
            except (MemfilesError, OSError, UnicodeDecodeError):
                loaded = None
            self.files[rel] = loaded
        loaded = self.files[rel]
        if loaded is None:
            return None
        for located in self.project.entries([loaded]):
            if located.entry.id == hit["id"]:
                from memfiles.services.read import entry_json  # here: recall's fast path need not load it

                return entry_json(located, self.project.settings.schema)
        return None

    def find(self, entry_id: str) -> dict[str, Any] | None:
        """The live entry carrying `entry_id` (any spelling), read from its file; None when there is none."""
        try:
            located = self.project.find(entry_id)
        except MemfilesError:  # two entries carry it (AmbiguousId), or a file does not parse
            return None
        if located is None or located.entry.status == RETIRED:
            return None
        return self.entry({"id": located.entry.id, "path": located.file.rel})
