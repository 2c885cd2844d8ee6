"""`memfiles dupes`: the pairs of entries that say the same thing, scored on several signals.

A plain cosine threshold flags whole clusters of look-alike entries (templated reports, a family of
flags) and misses duplicates written in other words. Measured on SeaMonkey's duplicate bug reports
(scripts/calibrate_dedupe.py), what finds them is how much a pair stands out from each entry's usual
neighbours, not the cosine itself. The score combines:

- margin: cosine minus the mean cosine of each entry's 10 nearest neighbours (the local density), the
  continuous form of "one is the other's nearest neighbour";
- title: TF-IDF cosine of the two titles alone (bodies are often templated; titles carry the symptom);
- rare: shared rare code-like tokens (class names, error strings, stack frames, flags) that at most
  RARE_DF entries hold.
score = clip(0.5 + margin + TITLE_WEIGHT x title + RARE_WEIGHT x rare, 0, 1); 0.5 means "as close as
each entry's usual neighbours". Two entries with the same title (what `audit` reports) and
near-identical text (cosine >= IDENTICAL) are near-duplicates whatever the score. The cosine, which
side is whose nearest neighbour, and whether the areas match are reported too, not weighted: the
cosine and rank lost to the margin, and SeaMonkey has no areas to measure one on.

Vectors are the index's own (stored by backfill and the watcher), read in one call; an entry the index
lacks or holds stale is embedded on the spot. The all-pairs cosine is computed in blocks with numpy.
Without an index, the same score is computed on TF-IDF vectors of the words (see dedupe.py).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memfiles.contract import Finding, entry_ref
from memfiles.errors import IndexUnavailable
from memfiles.index.text import code_like
from memfiles.store.project import LoadedFile, Project

if TYPE_CHECKING:
    import numpy as np

# Tuned on the older SeaMonkey reports, checked on the newer ones (scripts/calibrate_dedupe.py).
THRESHOLD = 0.64
# Candidate pairs from which scoring them shows a bar on a terminal: a project of 5,000 entries with a
# narrow vocabulary passed 2.1 million and scored them for 14-22 s in silence (a newcomer's walk-through).
PROGRESS_PAIRS = 200_000
PROGRESS_STEP = 10_000
TITLE_WEIGHT = 0.2
RARE_WEIGHT = 0.1
NEIGHBOURS = 10
# A neighbourhood is never taken as sparser than this cosine (and a small project's missing neighbours
# count as this close): in a file of unrelated entries, a pair at 0.55 stands out from its neighbours
# without saying the same thing. It costs nothing on SeaMonkey's newer half (docs/distiller.md).
FLOOR = 0.6
IDENTICAL = 0.97
RARE_DF = 3
BLOCK = 2048
_EDGES = ".,;:()[]{}<>\"'`*"  # `*`: Markdown emphasis (**Runs) is no part of a code-like token


# A body of fewer words ("See title.") says too little for two of them to be one finding twice.
SAME_BODY_WORDS = 4


def body_key(body: str) -> str:
    """What two bodies must share to be the same words in the same order: their text with case and runs of
    white space set aside, every word kept ("not", "only", "before" included); "" for a short body."""
    words = body.casefold().split()
    return " ".join(words) if len(words) >= SAME_BODY_WORDS else ""


def same_text_pairs(keys: list[str], bodies: list[str]) -> list[tuple[int, int]]:
    """(a, b), a < b, of every two entries with the same title key or the same body key: near-duplicates
    whatever their score (both modes add them to the pairs they score)."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, (key, body) in enumerate(zip(keys, bodies, strict=True)):
        groups[("title", key)].append(index)
        if body:
            groups[("body", body)].append(index)
    return [(a, b) for group in groups.values() for x, a in enumerate(group) for b in group[x + 1 :]]


def title_key(title: str) -> str:
    """Titles compare equal when they match once trimmed, lower-cased and with runs of spaces made one
    (the rule `audit` reports duplicate titles by)."""
    return re.sub(r"\s+", " ", title.strip().lower())


@dataclass(frozen=True)
class Doc:
    """An entry as the detector sees it."""

    id: str
    title: str
    body: str
    area: str
    status: str
    path: str
    line: int
    hash: str = ""


@dataclass
class Pair:
    a: Doc
    b: Doc
    score: float
    signals: dict[str, Any] = field(default_factory=dict)

    def finding(self, mode: str) -> Finding:
        a, b = self.a, self.b
        return Finding(
            code="near-duplicate",
            severity="warning",
            path=a.path,
            line=a.line,
            id=a.id,
            message=f"{a.id} {a.title!r} and {b.id} {b.title!r} say the same thing (score {self.score:.2f})",
            target=entry_ref(b.id, title=b.title, status=b.status, path=b.path, line=b.line),
            detail={"score": self.score, "mode": mode, "signals": self.signals},
        )


def _idf_vectors(texts: list[list[str]]) -> list[dict[str, float]]:
    df = Counter(token for tokens in texts for token in set(tokens))
    n = len(texts)
    vectors = []
    for tokens in texts:
        weights = {t: (1 + math.log(c)) * math.log(n / df[t]) for t, c in Counter(tokens).items()}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        vectors.append({t: w / norm for t, w in weights.items()})
    return vectors


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(w * b.get(t, 0.0) for t, w in a.items())


def _rare_tokens(docs: list[Doc]) -> list[set[str]]:
    tokens = [{t for t in (w.strip(_EDGES) for w in f"{d.title} {d.body}".split()) if code_like(t)} for d in docs]
    df = Counter(t for mine in tokens for t in mine)
    return [{t for t in mine if df[t] <= RARE_DF} for mine in tokens]


def neighbourhood(vectors: np.ndarray) -> np.ndarray:
    """Each entry's mean cosine to its NEIGHBOURS nearest others, never under FLOOR (which also stands in
    for the neighbours a small project does not have)."""
    import numpy as np

    n = len(vectors)
    k = min(NEIGHBOURS, n - 1)
    means = np.full(n, FLOOR, dtype=np.float32)
    for start in range(0, n, BLOCK):
        block = vectors[start : start + BLOCK] @ vectors.T
        rows = np.arange(len(block))
        block[rows, rows + start] = -np.inf
        top = -np.partition(-block, k - 1, axis=1)[:, :k] if k > 0 else np.zeros((len(block), 0))
        means[start : start + BLOCK] = (top.sum(1) + FLOOR * (NEIGHBOURS - k)) / NEIGHBOURS
    return np.maximum(means, FLOOR)


def score_pairs(docs: list[Doc], vectors: np.ndarray, threshold: float = THRESHOLD) -> list[Pair]:
    """Every pair at or above `threshold`, with its signals, best first. `vectors` are unit length."""
    import numpy as np

    from memfiles.index.text import tokenize

    n = len(docs)
    if n < 2:
        return []
    vectors = np.asarray(vectors, dtype=np.float32)
    local = neighbourhood(vectors)
    alone = threshold - 0.5  # a margin this high passes without help from the title or rare tokens
    floor = alone - TITLE_WEIGHT - RARE_WEIGHT  # the least margin that can still reach the threshold
    nearest = np.empty(n, dtype=np.int64)
    found: dict[tuple[int, int], float] = {}  # (i, j) with i < j -> cosine
    for start in range(0, n, BLOCK):
        block = vectors[start : start + BLOCK] @ vectors.T
        rows = np.arange(len(block))
        block[rows, rows + start] = -np.inf
        nearest[start : start + BLOCK] = block.argmax(1)
        margin = block - (local[start : start + BLOCK, None] + local[None, :]) / 2
        upper = np.arange(n)[None, :] > (rows + start)[:, None]
        i, j = np.nonzero(((margin >= floor) | (block >= IDENTICAL)) & upper)
        found.update(zip(zip((i + start).tolist(), j.tolist(), strict=True), block[i, j].tolist(), strict=True))
    keys = [title_key(d.title) for d in docs]
    bodies = [body_key(d.body) for d in docs]  # the same words in the same order: said twice
    for a, b in same_text_pairs(keys, bodies):
        found.setdefault((a, b), float(vectors[a] @ vectors[b]))
    title_words = [tokenize(d.title) for d in docs]
    title_sets = [set(words) for words in title_words]
    titles = _idf_vectors(title_words)
    rare = _rare_tokens(docs)
    pairs = []
    bar = _progress(len(found))
    for done, ((a, b), dense) in enumerate(found.items(), start=1):
        if bar is not None and done % PROGRESS_STEP == 0:
            bar.update(PROGRESS_STEP)
        margin = dense - float(local[a] + local[b]) / 2
        same_title = keys[a] == keys[b]
        same_body = bool(bodies[a]) and bodies[a] == bodies[b]
        helped = title_sets[a] & title_sets[b] or rare[a] & rare[b] or same_body
        if margin < alone and not same_title and dense < IDENTICAL and not helped:
            continue  # no shared title word or rare token can lift it to the threshold
        title = _cosine(titles[a], titles[b])
        shared = sorted(rare[a] & rare[b])
        score = min(1.0, max(0.0, 0.5 + margin + TITLE_WEIGHT * title + RARE_WEIGHT * min(len(shared), 2) / 2))
        score = 1.0 if same_body else score
        if score < threshold and not same_title and dense < IDENTICAL:
            continue
        mutual = nearest[a] == b and nearest[b] == a
        signals = {
            "dense": round(dense, 4),
            "margin": round(margin, 4),
            "nearest": "mutual" if mutual else ("one-sided" if b == nearest[a] or a == nearest[b] else None),
            "title": round(title, 4),
            "rare": shared[:5],
            "same_area": docs[a].area == docs[b].area,
            "same_title": same_title,
            "same_body": same_body,
        }
        pairs.append(Pair(docs[a], docs[b], round(score, 4), signals))
    if bar is not None:
        bar.close()
    return sorted(pairs, key=lambda p: (-p.score, p.a.id, p.b.id))


def _progress(pairs: int) -> Any:
    """A bar on stderr for scoring many candidate pairs, on a terminal only; None otherwise."""
    import sys

    if pairs < PROGRESS_PAIRS or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=pairs, desc="scoring pairs", unit="pair", file=sys.stderr, leave=False)


def project_docs(project: Project, files: list[LoadedFile] | None = None) -> list[Doc]:
    """Every entry that is knowledge: a run's working memory (kind `working`) is state, left out as searches
    leave it out (two runs' "write test" todos are not duplicates to merge)."""
    from memfiles.format.ids import HIDDEN_KINDS
    from memfiles.index.catalog import content_hash

    schema = project.settings.schema
    return [
        Doc(
            loc.entry.id,
            loc.entry.title,
            loc.entry.body,
            loc.entry.area,
            loc.entry.status,
            loc.file.rel,
            loc.entry.line,
            content_hash(f"{loc.entry.title}\n\n{loc.entry.body}"),
        )
        for loc in project.entries(files)
        if getattr(schema.kind_of(loc.entry.id), "name", None) not in HIDDEN_KINDS
    ]


def entry_vectors(project: Project, docs: list[Doc]) -> tuple[np.ndarray, int]:
    """Unit vectors for `docs`, in order: the index's stored ones, and fresh ones for entries it lacks or
    holds stale (their number is returned too). Raises IndexUnavailable when there is no index."""
    import numpy as np

    from memfiles.services.indexing.vectors import stored_vectors

    stored, embed = stored_vectors(project.settings)
    missing = [n for n, d in enumerate(docs) if d.id not in stored or stored[d.id][0] != d.hash]
    rows = [stored[d.id][1] if n not in set(missing) else None for n, d in enumerate(docs)]
    if missing:
        fresh = embed([f"{docs[n].title}\n\n{docs[n].body}" for n in missing])
        for n, vector in zip(missing, fresh, strict=True):
            rows[n] = vector
    matrix = np.asarray(rows, dtype=np.float32) if rows else np.zeros((0, 1), dtype=np.float32)
    if len(matrix):
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return matrix, len(missing)


def duplicate_pairs(
    project: Project, threshold: float | None = None, files: list[LoadedFile] | None = None
) -> tuple[list[Pair], str, list[str]]:
    """The near-duplicate pairs of the project (of `files`, those that parse, when given), best first;
    the mode ('index' or 'lexical'); warnings."""
    from memfiles.services.upkeep.dedupe import lexical_pairs

    docs = project_docs(project, files)
    try:
        vectors, stale = entry_vectors(project, docs)
    except IndexUnavailable as error:
        found = lexical_pairs(docs) if threshold is None else lexical_pairs(docs, threshold)
        return found, "lexical", [f"no index ({error}): near-duplicates by their words only"]
    are = "entry is" if stale == 1 else "entries are"
    notes = [f"{stale} {are} not in the index yet: embedded now (run memfiles backfill)"] if stale else []
    return score_pairs(docs, vectors, THRESHOLD if threshold is None else threshold), "index", notes
