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

from memfiles.errors import IndexUnavailable, NoWatcher, ParseError
from memfiles.index.search import Filters
from memfiles.index.text import tokenize
from memfiles.services.upkeep.dupes import Doc, Pair, body_key, same_text_pairs, title_key
from memfiles.store.project import Project

# For a new text against the index (`add`), measured by the first scripts/calibrate_dedupe.py (@@D-019):
# word overlap lowered F1 at every weight tried on SeaMonkey (0.160 with cosine alone, 0.117 at
# 0.8/0.2), and 0.79 is the F1-best cosine on SeaMonkey and STS-B alike.
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
    load_model: bool = True,
) -> tuple[list[list[Candidate]], str]:
    """near_duplicates for many (title, body, ids to ignore) at once: one model load, one store session.

    With `load_model` False, the index is asked only when a watcher answers (it has the model loaded);
    with none, the words decide ("no-watcher"): loading the model in a write's own process cost more than
    the rest of the write (issue 34, docs/benchmarks.md)."""
    from memfiles.services.indexing.index_client import similar

    texts = [f"{title}\n\n{body}" for title, body, _ in items]
    try:
        neighbours = similar(project.settings, texts, Filters(path=path), k, load_model) if texts else []
    except IndexUnavailable as error:
        limit = LEXICAL_THRESHOLD  # --threshold speaks of the cosine; word overlap keeps its own measured one
        entries = entry_words(project, path)
        return [
            lexical_matches(entries, words(text), limit, exclude)
            for text, (_, _, exclude) in zip(texts, items, strict=True)
        ], "no-watcher" if isinstance(error, NoWatcher) else "lexical"
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
        # the same words exactly (a short entry written twice) is a duplicate however few they are
        if overlap >= limit and (len(mine & theirs) >= MIN_SHARED or (mine and mine == theirs)):
            found.append(Candidate(entry_id, title, rel, line, round(overlap, 4), None, round(overlap, 4)))
    return sorted(found, key=lambda c: -c.score)


# `dupes` without an index scores pairs the way it does with one (dupes.py), on TF-IDF vectors of the
# words instead of embeddings: 0.5 + margin + LEXICAL_TITLE x title. Chosen on SeaMonkey's older part
# like the index's weights (scripts/calibrate_dedupe.py); plain word overlap flagged thousands of pairs.
LEXICAL_PAIR_THRESHOLD = 0.65
LEXICAL_FLOOR = 0.1
LEXICAL_TITLE = 0.2


def sparse_similarities(bags: list[list[str]], top: int = 10) -> tuple[dict[tuple[int, int], float], list[float]]:
    """TF-IDF cosine of every pair that shares a word (words most entries hold are left out: they find no
    pair and cost n squared), and each entry's mean cosine to its `top` nearest, at least LEXICAL_FLOOR."""
    from memfiles.services.upkeep.dupes import _idf_vectors

    vectors = _idf_vectors(bags)
    postings: dict[str, list[tuple[int, float]]] = {}
    for n, vector in enumerate(vectors):
        for word, weight in vector.items():
            postings.setdefault(word, []).append((n, weight))
    common = max(20, len(bags) // 10)
    sims: dict[tuple[int, int], float] = {}
    for items in postings.values():
        if len(items) > common:
            continue
        for x, (a, wa) in enumerate(items):
            for b, wb in items[x + 1 :]:
                sims[(a, b)] = sims.get((a, b), 0.0) + wa * wb
    nearest: list[list[float]] = [[] for _ in bags]
    for (a, b), value in sims.items():
        nearest[a].append(value)
        nearest[b].append(value)
    local = []
    for values in nearest:
        best = sorted(values, reverse=True)[:top]
        local.append(max(LEXICAL_FLOOR, (sum(best) + LEXICAL_FLOOR * (top - len(best))) / top))
    return sims, local


def lexical_pairs(docs: list[Doc], threshold: float = LEXICAL_PAIR_THRESHOLD) -> list[Pair]:
    """`dupes` without an index: pairs whose words stand out from each entry's usual neighbours (TF-IDF
    margin, plus the titles' similarity), and every pair with the same title; best first."""
    from memfiles.services.upkeep.dupes import _cosine, _idf_vectors

    sims, local = sparse_similarities([tokenize(f"{d.title}\n\n{d.body}") for d in docs])
    titles = _idf_vectors([tokenize(d.title) for d in docs])
    keys = [title_key(d.title) for d in docs]
    # the same words in the same order: said twice, however few entries there are to weigh words against
    # (with two entries every shared word's IDF is 0, so their TF-IDF cosine says nothing)
    bodies = [body_key(d.body) for d in docs]
    for a, b in same_text_pairs(keys, bodies):
        sims.setdefault((a, b), 0.0)
    pairs = []
    for (a, b), cosine in sims.items():
        margin = cosine - (local[a] + local[b]) / 2
        same_body = bool(bodies[a]) and bodies[a] == bodies[b]
        if margin < threshold - 0.5 - LEXICAL_TITLE and keys[a] != keys[b] and not same_body:
            continue
        title = _cosine(titles[a], titles[b])
        score = round(min(1.0, max(0.0, 0.5 + margin + LEXICAL_TITLE * title)), 4)
        score = 1.0 if same_body else score
        if score >= threshold or keys[a] == keys[b]:
            signals = {
                "lexical": round(cosine, 4),
                "margin": round(margin, 4),
                "title": round(title, 4),
                "same_title": keys[a] == keys[b],
                "same_body": same_body,
            }
            pairs.append(Pair(docs[a], docs[b], score, signals))
    return sorted(pairs, key=lambda p: (-p.score, p.a.id, p.b.id))
