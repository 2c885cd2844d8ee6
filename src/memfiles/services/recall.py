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
import re
from collections.abc import Callable
from typing import Any

from memfiles.config import Settings
from memfiles.contract import entry_object, hit_object
from memfiles.errors import IndexUnavailable, MemfilesError
from memfiles.format.ids import RETIRED
from memfiles.format.model import area_key
from memfiles.limits import cut_query
from memfiles.services.hits import hit_objects
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
    "act": ("procedure",),  # every execution batch, before acting
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

# Each pattern below that reads a run of word characters starts only where such a run starts (a
# lookbehind), and skips its leading digits and dots possessively: a pattern free to start anywhere in the
# run rescanned the rest of it from each position, which is quadratic in a long token (issue 34;
# tests/reliability/test_regex_linear.py holds every pattern of the package to linear time).
_TYPED_ERROR = re.compile(
    r"(?<![\w.])[\d.]*+\b(?P<name>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure|Warning))\b"
)
_ERROR_WORD = re.compile(
    r"\b(error|fatal|failed|failure|panic|traceback|denied|refused|not found|timed out|segmentation fault"
    r"|core dumped|aborted|killed|out of memory)\b|\bERR!",  # npm's `npm ERR! code E404`
    re.I,
)
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{12,64}\b")
# a URL is its host: the rest changes per run
_URL = re.compile(r"(?<![\w+.-])(?P<lead>[\d+.-]*+)\b[a-zA-Z][\w+.-]*://(?P<host>[^/\s:]+)\S*")
_PATH = re.compile(r"(?<![\w.~/\\-])(?:[A-Za-z]:)?(?:[\w.~-]*[/\\])+([\w.-]+)")  # POSIX or Windows: its last part
# A number, dotted ones whole (10.0.0.12, 30.5, 1.2.3), with a unit of up to 3 letters kept (30.5s: Ns).
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)*(?=[a-zA-Z%]{0,3}(?!\w))")
_STAMP = re.compile(r"^\[?\d{4}-\d{2}-\d{2}[T ][\d:.,]+Z?\]?\s*")


def error_signature(text: str) -> str | None:
    """The error line of `text`, with what changes between runs (paths, numbers, addresses) wiped.

    The last line naming a typed error (`ModuleNotFoundError: ...`) wins, else the first line with an
    error word. Two runs failing the same way give the same signature; None when no line looks like one.
    """
    lines = [line.strip() for line in text.replace("\r", "\n").split("\n") if line.strip()]
    typed = [line for line in lines if _TYPED_ERROR.search(line)]
    worded = [line for line in lines if _ERROR_WORD.search(line)]
    line = typed[-1] if typed else (worded[0] if worded else None)
    if line is None:
        return None
    line = _STAMP.sub("", line)
    match = _TYPED_ERROR.search(line)
    if match and typed:
        line = line[match.start("name") :]
    line = _HEX.sub("<hex>", line)
    line = _URL.sub(lambda m: m.group("lead") + m.group("host"), line)
    line = _PATH.sub(lambda m: m.group(1), line)
    line = _NUMBER.sub("N", line)
    return " ".join(line.split())[:200] or None


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
    if watcher_only:
        from memfiles.services import ipc

        answer = ipc.request(settings, {"op": "search_many", "items": payload}, timeout=60)
        if answer is not None:
            return answer["results"], "watcher"
        from memfiles.services.index_client import index_exists  # only now: it imports the store module

        if settings.index_url:
            raise IndexUnavailable("with a Chroma server (index_url) there is no watcher to answer warm")
        if not index_exists(settings):
            raise IndexUnavailable("there is no index yet: run `memfiles backfill`, then `memfiles watch`")
        raise IndexUnavailable("no watcher is running here: start one with `memfiles watch`")
    from memfiles.services.index_client import connect, index_exists

    if index_exists(settings):
        client = connect(settings)
        try:
            answers = client.search_many(payload)
            if warnings is not None:  # what the index said of itself: files it could not read, or that it
                warnings.extend(client.warnings)  # is behind the files (services/behind.py)
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


def search_many(
    searcher: Any, items: list[dict[str, Any]], deadline: float | None = None
) -> list[list[dict[str, Any]]]:
    """Several filtered searches over one open searcher, each distinct query embedded once.

    The watcher answers its `search_many` op with this (with the request's `deadline`, index/search.py
    `within`), and the local path calls it too. The shared encoder is handed to each search, never set
    on the searcher: the watcher runs requests at once over one searcher."""
    from memfiles.index.filters import Filters

    memo = _MemoEmbedder(searcher.embedder) if searcher.embedder is not None else None
    return [
        hit_objects(
            searcher.search(
                item["query"],
                int(item["k"]),
                Filters(**item.get("filters", {})),
                item.get("mode", "hybrid"),
                deadline=deadline,
                embedder=memo,
            )
        )
        for item in items
    ]


class _MemoEmbedder:
    """An embedder that encodes each text once per batch of searches."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.memo: dict[str, Any] = {}

    def encode(self, texts: list[str]) -> Any:
        missing = [text for text in texts if text not in self.memo]
        if missing:
            for text, vector in zip(missing, self.inner.encode(missing), strict=True):
                self.memo[text] = vector
        return [self.memo[text] for text in texts]


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
    project: Project, query: str, trigger: str = "turn", run: str | None = None, k: int = DEFAULT_K
) -> dict[str, Any]:
    """The recall object of docs/json.md: the trigger's mandatory layers in the seed's order, each with
    its hits (or the run's working memory) and a note when it is empty."""
    if trigger not in TRIGGERS:
        raise MemfilesError(f"unknown trigger {trigger!r} (triggers: {', '.join(TRIGGERS)})")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 50:
        raise MemfilesError(f"k must be a whole number from 1 to 50, got {k!r}")
    layers = [layer for layer in ORDER if layer in TRIGGERS[trigger]]
    if run:
        from memfiles.services.working import check_run

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
    source = "none"
    results: dict[str, list[dict[str, Any]]] = {}
    if searched:
        raw, source = filtered_search(
            project.settings, [(queries[layer], {"kind": layer}, k + _EXTRA) for layer in searched], warnings=warnings
        )
        results = dict(zip(searched, raw, strict=True))
    entries = EntryReader(project)
    groups = []
    for layer in layers:
        group: dict[str, Any] = {"layer": layer, "why": WHY[layer], "query": queries.get(layer)}
        if layer == "working":
            group.update(hits=[], working=working.as_json() if working else None)
            group["empty"] = working is None
            group["note"] = run_note if working is None else None
        else:
            hits = to_hits(entries, results.get(layer, []), query, k, drop_retired=True)
            group.update(hits=hits, empty=not hits, note=None if hits else f"no {layer} matches")
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
    from memfiles.services import working

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
                kind = self.project.settings.schema.kind_of(located.entry.id)
                return entry_object(
                    located.entry,
                    kind=kind.name if kind else None,
                    path=loaded.rel,
                    line=located.entry.line,
                    section=located.section,
                )
        return None
