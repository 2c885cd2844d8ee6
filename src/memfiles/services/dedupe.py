"""Near-duplicates: one implementation for the distiller, `memfiles add` and `memfiles dupes`.

Two signals were measured: the cosine of the entries' embeddings (meaning) and the Jaccard overlap of
their stemmed word sets (wording), as a weighted sum. On SeaMonkey duplicate bug reports, checked on
STS-B, cosine alone won (scripts/calibrate_dedupe.py, notebooks/), so the default weight is 1.0; see
@@D-019. Without an index, word overlap over the files alone decides, with its own measured threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

from memfiles.errors import IndexUnavailable, ParseError
from memfiles.index.search import Filters
from memfiles.index.text import tokenize
from memfiles.store.project import Project

# Measured by scripts/calibrate_dedupe.py: word overlap lowered F1 at every weight tried on SeaMonkey
# (0.160 with cosine alone, 0.117 at 0.8/0.2), and 0.79 is the F1-best cosine on SeaMonkey and STS-B alike.
DENSE_WEIGHT = 1.0
THRESHOLD = 0.79
LEXICAL_THRESHOLD = 0.25  # Jaccard alone, when the index cannot be asked (F1-best on SeaMonkey)
# The distiller leans to recall: its candidates are already in the same file and section, a missed
# duplicate is a second entry for a person to prune, a wrong match only adds evidence (STS-B: P 0.42, R 0.94).
DISTILLER_THRESHOLD = 0.70


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
    from memfiles.services.index_client import similar

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


def lexical_matches(entries, mine: set[str], limit: float, exclude) -> list[Candidate]:
    found = []
    for entry_id, title, rel, line, theirs in entries:
        if entry_id in exclude:
            continue
        overlap = jaccard(mine, theirs)
        if overlap >= limit:
            found.append(Candidate(entry_id, title, rel, line, round(overlap, 4), None, round(overlap, 4)))
    return sorted(found, key=lambda c: -c.score)


def duplicate_pairs(project: Project, threshold: float | None = None) -> tuple[list[tuple[Candidate, Candidate]], str]:
    """Every pair of entries in the project at or above the threshold, best first."""
    located = list(project.entries())
    items = [(loc.entry.title, loc.entry.body, {loc.entry.id}) for loc in located]
    found, mode = many_near_duplicates(project, items, threshold=threshold, k=6)
    pairs: dict[tuple[str, ...], tuple[Candidate, Candidate]] = {}
    for loc, others in zip(located, found, strict=True):
        entry = loc.entry
        for other in others:
            key = tuple(sorted((entry.id, other.id)))
            if key not in pairs:
                me = Candidate(entry.id, entry.title, loc.file.rel, entry.line, other.score, other.dense, other.lexical)
                pairs[key] = (me, other) if me.id < other.id else (other, me)
    return sorted(pairs.values(), key=lambda pair: -pair[0].score), mode
