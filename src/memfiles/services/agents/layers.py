"""What recall and the hooks do with a layer's hits once the index has answered: the hits of several
readings of one situation merged, a promoted episode giving way to the procedure it became, each layer's
floor, and the memory's vocabulary the situation is read in (situation.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memfiles.format.ids import RETIRED

if TYPE_CHECKING:
    from memfiles.services.agents.recall import EntryReader
    from memfiles.services.agents.situation import Vocabulary
    from memfiles.store.project import Project

LAYERS = ("procedure", "episode", "lesson", "insight")  # the layers searched, in recall's order
_VOCABULARY: list[tuple[list[Any], Vocabulary]] = []  # the files' stamps it was read from, and it


def merged(*lists: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Contract hits of one layer found by several queries: each entry once, at its best score, best first."""
    best: dict[str, dict[str, Any]] = {}
    for hits in lists:
        for hit in hits:
            known = best.get(hit["entry"]["id"])
            if known is None or hit["score"] > known["score"]:
                best[hit["entry"]["id"]] = hit
    ordered = sorted(best.values(), key=lambda hit: (-hit["score"], hit["entry"]["id"]))
    return [{**hit, "rank": rank} for rank, hit in enumerate(ordered, start=1)]


def give_way(reader: EntryReader, found: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """A promoted episode gives way to what it was promoted to, when that layer was asked too (the
    memory-manager seed: procedures come first, and the procedure holds what its episodes taught): the
    episode leaves its layer, and the entry it became stands in its own at the episode's score when its
    own is lower. Evidence that an episode bears on the query is evidence for the procedure citing it."""
    kept: list[dict[str, Any]] = []
    extra: dict[str, list[dict[str, Any]]] = {}
    for hit in found.get("episode", []):
        entry = hit["entry"]
        promoted = (entry.get("promoted") or []) if entry["status"] == "promoted" else []
        targets = [target for target in map(reader.find, promoted) if target is not None and target["kind"] in found]
        for target in targets:
            extra.setdefault(target["kind"], []).append({**hit, "entry": target})
        if not targets:
            kept.append(hit)
    if "episode" in found:
        found = {**found, "episode": merged(kept)}
    return {layer: merged(hits, extra[layer]) if layer in extra else hits for layer, hits in found.items()}


def floored(hits: list[dict[str, Any]], floor: float, k: int, layer: str) -> tuple[list[dict[str, Any]], str | None]:
    """The first k hits at or above the layer's floor, and why there are none when there are none (the
    best hit under the floor named: an agent sees the layer was looked at and what it held)."""
    shown = [hit for hit in hits if hit["score"] >= floor][:k]
    if shown:
        return [{**hit, "rank": rank} for rank, hit in enumerate(shown, start=1)], None
    if not hits:
        return [], f"no {layer} matches"
    best = hits[0]
    return [], f"no {layer} scores {floor:.2f} or more (the best, {best['entry']['id']}, scores {best['score']:.2f})"


def vocabulary(project: Project) -> Vocabulary:
    """What the memory knows of its situations (situation.Vocabulary): the titles, areas and code spans of
    its live procedures, episodes, lessons and insights. Read again only when a memory file changed (by
    its size and time: a hook is answered on every prompt and tool call, and reading every file's text to
    compare it cost more than the hook's searches)."""
    from memfiles.services.agents.situation import Vocabulary

    key = [(str(path), *_stamp(path)) for path in project.markdown_files()]
    known = _VOCABULARY[0] if _VOCABULARY else None
    if known is not None and known[0] == key:
        return known[1]
    files = project.load_all().files
    schema = project.settings.schema
    entries = [
        located.entry
        for located in project.entries(files)
        if located.entry.status != RETIRED and (kind := schema.kind_of(located.entry.id)) and kind.name in LAYERS
    ]
    made = Vocabulary.of(entries)
    _VOCABULARY[:] = [(key, made)]
    return made


def situation_queries(project: Project, text: str, command: bool) -> dict[str, list[str]]:
    """The queries each layer is also searched with for `text` (situation.py): as a prompt or a run's
    goal, and as a command too when `command`."""
    from memfiles.services.agents import situation

    reading = situation.read(text, vocabulary(project), command=command)
    return {layer: reading.queries(layer) for layer in LAYERS}


def _stamp(path: Path) -> tuple[int, int]:
    try:
        info = os.stat(path)
    except OSError:
        return (0, -1)
    return (info.st_mtime_ns, info.st_size)
