"""Near-duplicates of the entries a write adds: warned about, or with --unique refused, also against the
entries other writers add meanwhile (checked again under the write lock: two `add --unique` at once add one).

The index is asked before the lock (it may load a model); entries added after that moment cannot be in
it, so a guard the batch runs under the lock compares the new texts with those by word overlap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memfiles.contract import problem
from memfiles.errors import ParseError, RefusedError
from memfiles.format.ids import id_key
from memfiles.services.upkeep.dedupe import LEXICAL_THRESHOLD, Candidate, lexical_matches, many_near_duplicates, words
from memfiles.services.upkeep.dupes import title_key
from memfiles.store.batch import Guard
from memfiles.store.batch_files import BatchFiles
from memfiles.store.project import Project


def check_adds(
    project: Project, ops: list[Any], unique: bool, positions: bool = False
) -> tuple[list[str], Guard | None]:
    """The near-duplicate warnings of the adds among `ops` (op dicts), to print once the write succeeded;
    with `unique`, RefusedError (exit 1) when one has a near-duplicate, and a guard for the write lock.

    `positions`: name each add by its op's 1-based position (import) in the refusal's problems.
    """
    adds = [(number, op) for number, op in enumerate(ops, start=1) if isinstance(op, dict) and op.get("op") == "add"]
    if not adds:
        return [], None
    since = issued_marks(project)  # read before the index is asked: later entries are checked again
    items = [(str(op.get("title", "")), str(op.get("body", ""))) for _, op in adds]
    # A warning only (no --unique) with no watcher running: the words decide, and the write leaves a
    # watcher (search_watch) that checks the next write by meaning. Loading the model here cost more than
    # the rest of the write (issue 34). --unique, which refuses, always asks the model; so does a write with
    # search_watch off, which loads it anyway to update the store itself.
    pairs = [(title, body, frozenset()) for title, body in items]
    load_model = unique or not project.settings.search_watch
    found, mode = many_near_duplicates(project, pairs, load_model=load_model)

    def refuse(matches: list[list[Candidate]], how: str) -> None:
        hits = [(number, op, c) for (number, op), c in zip(adds, matches, strict=True) if c]
        problems = [
            problem(
                f"{op.get('title')!r} is close to {c.id} {c.title!r} ({c.score:.2f})",
                op=number if positions else None,
                field="title",
                id=c.id,
                path=c.path,
                line=c.line or None,
            )
            for number, op, candidates in hits
            for c in candidates[:3]
        ]
        messages = "; ".join(close_to(op, candidates, how) for _number, op, candidates in hits)
        raise RefusedError(f"refused, a near-duplicate exists: {messages}", problems)

    if unique and any(found):
        refuse(found, mode)
    repeats = repeated_adds(adds)
    if unique and repeats:
        problems = [
            problem(f"{text}: one of them is enough", op=number if positions else None, field="title")
            for number, text in repeats
        ]
        raise RefusedError(f"refused, a near-duplicate exists: {'; '.join(t for _, t in repeats)}", problems)
    warnings = [f"near-duplicate: {close_to(op, c, mode)}" for (_, op), c in zip(adds, found, strict=True) if c]
    warnings += [f"near-duplicate: {text}" for _, text in repeats]
    guard = racing_guard(items, since, lambda matches: refuse(matches, "meanwhile")) if unique else None
    return warnings, guard


def repeated_adds(adds: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, str]]:
    """(op number, what it repeats) of each add of one batch close to an earlier add of the same batch,
    by title or word overlap as the guard compares: the index knows neither of them yet. Earlier adds are
    found by title and through the words they share (a word overlap of J needs J x the words of the add
    in common), so a batch of thousands is not compared pair by pair."""
    from collections import Counter

    found = []
    earlier: list[tuple[str, str, str, int, set[str]]] = []
    by_title: dict[str, int] = {}
    postings: dict[str, list[int]] = {}
    for number, op in adds:
        title, body = str(op.get("title", "")), str(op.get("body", ""))
        mine = words(f"{title}\n\n{body}")
        same = by_title.get(title_key(title))
        shared = Counter(n for word in mine for n in postings.get(word, ()))
        need = LEXICAL_THRESHOLD * len(mine)
        near = [earlier[n] for n, count in shared.items() if count >= need or earlier[n][4] == mine]
        close = lexical_matches(near, mine, LEXICAL_THRESHOLD, frozenset())
        if same is not None:
            them = earlier[same]
            found.append((number, f"op {number} {title!r} repeats {them[0]} {them[1]!r} (the same title)"))
        elif close:
            first = close[0]
            found.append((number, f"op {number} {title!r} repeats {first.id} {first.title!r} ({first.score:.2f})"))
        by_title.setdefault(title_key(title), len(earlier))
        for word in mine:
            postings.setdefault(word, []).append(len(earlier))
        earlier.append((f"op {number}", title, "", number, mine))
    return found


def close_to(op: dict[str, Any], candidates: list[Candidate], how: str) -> str:
    names = ", ".join(f"{c.id} {c.title!r} ({c.score:.2f})" for c in candidates[:3])
    note = {
        "lexical": " (by word overlap; no index)",
        "no-watcher": " (by word overlap: no watcher was running; with one, or with --unique, by meaning)",
        "meanwhile": " (added meanwhile; by word overlap)",
    }
    return f"{op.get('title')!r} is close to {names}{note.get(how, '')}"


def issued_marks(project: Project) -> dict[str, int]:
    """The highest number handed out per prefix (memory/ids.txt) now; {} when there is no such file yet."""
    from memfiles.store.id_marks import MarksFile

    try:
        marks = MarksFile(project.settings.memory_dir).read()
    except ParseError:
        return {}
    return dict(marks.high) if marks else {}


def added_since(work: BatchFiles, since: dict[str, int]) -> list[tuple[str, str, str, int, set[str]]]:
    """The entries of `work` numbered above `since` (ids are handed out in order: those were added after
    `since` was read), as entry_words gives them."""
    found = []
    for rel, draft in work.drafts.items():
        for _name, _intro, entries in draft.sections:
            for entry in entries:
                key = id_key(entry.id)
                if key is not None and key[1] > since.get(key[0], 0):
                    found.append((entry.id, entry.title, rel, entry.line, words(f"{entry.title}\n\n{entry.body}")))
    return found


def racing_guard(
    items: list[tuple[str, str]], since: dict[str, int], refuse: Callable[[list[list[Candidate]]], None]
) -> Guard:
    """A write-lock guard for `--unique`: the entries added since `since` was read (by a writer that ran at
    the same time, or one the index has not caught up with) are compared with each (title, body) by word
    overlap, the same title counting as a match; `refuse` is called with the matches of each item when
    any item has one. The index was asked before the lock; it cannot know those entries."""

    def guard(work: BatchFiles) -> None:
        recent = added_since(work, since)
        if not recent:
            return
        found = []
        for title, body in items:
            same = [
                Candidate(entry_id, theirs_title, rel, line, 1.0, None, 1.0)
                for entry_id, theirs_title, rel, line, _ in recent
                if title_key(theirs_title) == title_key(title)
            ]
            close = lexical_matches(recent, words(f"{title}\n\n{body}"), LEXICAL_THRESHOLD, frozenset())
            found.append(list({c.id: c for c in [*same, *close]}.values()))
        if any(found):
            refuse(found)

    return guard
