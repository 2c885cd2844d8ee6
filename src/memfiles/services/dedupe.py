"""Near-duplicates of a new text, for `memfiles add` (and `import --unique`); the word-overlap fallback.

Two signals were measured for a new entry against the index: the cosine of the embeddings (meaning) and
the Jaccard overlap of stemmed word sets (wording), as a weighted sum. On SeaMonkey duplicate bug
reports, checked on STS-B, cosine alone won (scripts/calibrate_dedupe.py), so the default weight is
1.0; see @@D-019. Without an index, word overlap over the files decides, with its own measured
threshold, and only when the texts share MIN_SHARED words: two short titles that share one word are
not near-duplicates. `memfiles dupes` scores pairs of existing entries on more signals (dupes.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from memfiles.errors import IndexUnavailable, ParseError
from memfiles.index.search import Filters
from memfiles.index.text import tokenize
from memfiles.services.dupes import Doc, Pair, title_key
from memfiles.store.project import Project

# Measured by scripts/calibrate_dedupe.py: word overlap lowered F1 at every weight tried on SeaMonkey
# (0.160 with cosine alone, 0.117 at 0.8/0.2), and 0.79 is the F1-best cosine on SeaMonkey and STS-B alike.
DENSE_WEIGHT = 1.0
THRESHOLD = 0.79
LEXICAL_THRESHOLD = 0.25  # Jaccard alone, when the index cannot be asked (F1-best on SeaMonkey)
# One shared word in two short texts gives a high Jaccard ('t1' and 'Root one' score 0.25): the
# fallback asks for this many shared words (stemmed, stop words out) as well.
MIN_SHARED = 3


def words(text: str) -> set[str]:
    return set(tokenize(text))


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def combined(dense: float, lexical: float) -> float:
    return DENSE_WEIGHT * dense + (1 - DENSE_WEIGHT) * lexical


@dataclass(frozen=True)
class Candidate:
    """An existing entry close to a new text."""

    id: str
    title: str
    path: str
    line: int
    score: float
    dense: float | None
    lexical: float

    def as_json(self) -> dict[str, object]:
        return self.__dict__.copy()


def near_duplicates(
    project: Project,
    title: str,
    body: str,
    *,
    path: str | None = None,
    threshold: float | None = None,
    k: int = 5,
    exclude: set[str] | frozenset[str] = frozenset(),
) -> tuple[list[Candidate], str]:
    """Entries (in `path` when given) that say what `title` and `body` say; and 'index' or 'lexical'.

    Asks the index when there is one (the watcher's if it runs); falls back to lexical overlap over
    the files when the index is missing, busy or unreachable.
    """
    found, mode = many_near_duplicates(project, [(title, body, exclude)], path=path, threshold=threshold, k=k)
    return found[0], mode


def many_near_duplicates(
    project: Project,
    items: list[tuple[str, str, set[str] | frozenset[str]]],
    *,
    path: str | None = None,
    threshold: float | None = None,
    k: int = 5,
) -> tuple[list[list[Candidate]], str]:
    """near_duplicates for many (title, body, ids to ignore) at once: one model load, one store session."""
    from memfiles.services.index import similar

    texts = [f"{title}\n\n{body}" for title, body, _ in items]
    try:
        neighbours = similar(project.settings, texts, Filters(path=path), k) if texts else []
    except IndexUnavailable:
        limit = LEXICAL_THRESHOLD  # --threshold speaks of the cosine; word overlap keeps its own measured one
        entries = entry_words(project, path)
        return [
            lexical_matches(entries, words(text), limit, exclude)
            for text, (_, _, exclude) in zip(texts, items, strict=True)
        ], "lexical"
    limit = THRESHOLD if threshold is None else threshold
    results = []
    for text, (_, _, exclude), hits in zip(texts, items, neighbours, strict=True):
        mine = words(text)
        found = []
        for doc, dense in hits:
            if doc["id"] in exclude:
                continue
            overlap = jaccard(mine, words(doc["text"]))
            score = combined(dense, overlap)
            if score >= limit:
                found.append(
                    Candidate(
                        doc["id"],
                        doc["title"],
                        doc["path"],
                        doc["line"],
                        round(score, 4),
                        round(dense, 4),
                        round(overlap, 4),
                    )
                )
        results.append(sorted(found, key=lambda c: -c.score))
    return results, "index"


def entry_words(project: Project, path: str | None) -> list[tuple[str, str, str, int, set[str]]]:
    import fnmatch

    try:
        files = project.load()
    except ParseError:
        return []
    return [
        (loc.entry.id, loc.entry.title, loc.file.rel, loc.entry.line, words(f"{loc.entry.title}\n\n{loc.entry.body}"))
        for loc in project.entries(files)
        if not path or fnmatch.fnmatch(loc.file.rel, path)
    ]


def lexical_matches(entries, mine: set[str], limit: float, exclude) -> list[Candidate]:  # type: ignore[no-untyped-def]
    found = []
    for entry_id, title, rel, line, theirs in entries:
        if entry_id in exclude:
            continue
        overlap = jaccard(mine, theirs)
        if overlap >= limit and len(mine & theirs) >= MIN_SHARED:
            found.append(Candidate(entry_id, title, rel, line, round(overlap, 4), None, round(overlap, 4)))
    return sorted(found, key=lambda c: -c.score)


def lexical_pairs(docs: list[Doc]) -> list[Pair]:
    """`dupes` without an index: pairs whose words overlap (Jaccard >= LEXICAL_THRESHOLD and MIN_SHARED
    words in common), and every pair with the same title; best first."""
    bags = [words(f"{d.title}\n\n{d.body}") for d in docs]
    postings: dict[str, list[int]] = {}
    for n, bag in enumerate(bags):
        for word in bag:
            postings.setdefault(word, []).append(n)
    shared: dict[tuple[int, int], int] = {}
    common = max(20, len(docs) // 10)  # a word most entries hold finds no pair; counting it costs n squared
    for ids in postings.values():
        if len(ids) > common:
            continue
        for x, a in enumerate(ids):
            for b in ids[x + 1 :]:
                shared[(a, b)] = shared.get((a, b), 0) + 1
    keys = [title_key(d.title) for d in docs]
    candidates = {pair for pair, count in shared.items() if count >= MIN_SHARED}
    by_title: dict[str, list[int]] = {}
    for n, key in enumerate(keys):
        by_title.setdefault(key, []).append(n)
    candidates |= {(a, b) for group in by_title.values() for x, a in enumerate(group) for b in group[x + 1 :]}
    pairs = []
    for a, b in candidates:
        overlap = jaccard(bags[a], bags[b])
        same_title = keys[a] == keys[b]
        if overlap >= LEXICAL_THRESHOLD or same_title:
            signals = {"lexical": round(overlap, 4), "shared_words": shared.get((a, b), 0), "same_title": same_title}
            pairs.append(Pair(docs[a], docs[b], round(overlap, 4), signals))
    return sorted(pairs, key=lambda p: (-p.score, p.a.id, p.b.id))
