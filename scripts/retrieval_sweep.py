"""The ranking's parameters, chosen by leave-one-collection-out (used by eval_retrieval.py loco).

Each collection's backfilled index is read once: its stored vectors, the query vectors (with and without
question framing) and BM25 of every query over every entry for each BM25 setting. Every ranking setting
is then a cheap fusion of those arrays, the same fusion index/search.py does (min-max over the query's
candidates, each ranking `depth` deep, every candidate scored by both), so a grid of thousands of
settings costs seconds per collection, not a re-embedding each.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from pathlib import Path

K1S = (0.9, 1.2, 1.6, 2.0)
BS = (0.3, 0.5, 0.75, 0.9)
TITLE_WEIGHTS = (1, 2, 3)
WEIGHTS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
DEPTHS = (50, 100, 200)
METHODS = ("minmax", "zscore", "rrf")
# Score regularisation (index/score.py neighbourly): (neighbours read, their share of the rank); (0, 0) off.
NEIGHBOUR_GRID = ((0, 0.0), *((k, a) for a in (0.3, 0.5, 0.7) for k in (5, 10)))
# Per-query fusion weight from the two rankings' score distributions (`adaptive`): the exponent g on
# each ranking's confidence (0: the constant weight).
ADAPTIVE = (0.5, 1.0)
PRF_BETAS = (0.5, 1.0)  # dense pseudo-relevance feedback: the query vector moved towards its top entries
PRF_DOCS = 3
# Lexical pseudo-relevance feedback (RM3): the query's BM25 run again with terms of its top entries added.
RM3_DOCS = (5, 10)  # feedback entries: the top of the first BM25 pass
RM3_TERMS = (10, 20, 30)  # expansion terms kept
RM3_ORIGINAL = (0.5, 0.7)  # weight of the original query's terms against the feedback terms
RM3_MIN_DOCS = (1, 2)  # a feedback term must occur in this many feedback entries
# RM3 is tried over a smaller BM25 grid than the plain ranking (time): every k1, b and title weight at
# the depth every fold of the plain grid chose.
RM3_DEPTHS = (50,)


@dataclass(frozen=True)
class Setting:
    """One point of the grid: every parameter the ranking has."""

    framing: bool
    k1: float
    b: float
    title_weight: int
    weight: float
    depth: int
    method: str
    passages: bool = False
    sentences: bool = False  # the dense signal of a request of several sentences mixed with its best sentence's
    prf: float = 0.0
    rm3_docs: int = 0  # 0: no lexical feedback
    rm3_terms: int = 0
    rm3_original: float = 1.0
    rm3_min_docs: int = 1
    neighbours: int = 0  # score regularisation off
    neighbour_weight: float = 0.0
    adaptive: float = 0.0  # g of `adaptive_weight`; 0: the lexical weight is the constant `weight`

    @property
    def rm3(self) -> tuple[int, int, float, int]:
        return (self.rm3_docs, self.rm3_terms, self.rm3_original, self.rm3_min_docs)

    def label(self) -> str:
        extra = (" passages" if self.passages else "") + (" sentences" if self.sentences else "")
        extra += f" prf β={self.prf:g}" if self.prf else ""
        if self.rm3_docs:
            extra += (
                f" rm3 docs={self.rm3_docs} terms={self.rm3_terms} original={self.rm3_original:g}"
                f" min-docs={self.rm3_min_docs}"
            )
        if self.neighbours:
            extra += f" neighbours={self.neighbours}×{self.neighbour_weight:g}"
        if self.adaptive:
            extra += f" adaptive g={self.adaptive:g}"
        return (
            f"w={self.weight:.1f} k1={self.k1} b={self.b} title×{self.title_weight} depth={self.depth} "
            f"{self.method} framing={'on' if self.framing else 'off'}{extra}"
        )


@dataclass
class Collection:
    """One collection's judged queries, its entries in catalog order and the raw signals."""

    name: str
    qrels: dict[str, dict[str, int]]
    queries: dict[str, str]
    exclude: dict[str, str]  # query id -> corpus id never counted (SeaMonkey: the report asked from)
    corpus_ids: list[str]  # corpus id of each catalog row
    matrix: np.ndarray  # the stored vector of each catalog row (score regularisation reads them)
    dense: dict[bool, np.ndarray]  # framing -> (queries, rows) cosine
    passage_dense: dict[bool, np.ndarray]  # the same, an entry scored by its best passage
    sentence_dense: dict[bool, np.ndarray]  # the same, a long request's cosine mixed with its best sentence's
    prf_dense: dict[tuple[bool, float], np.ndarray]  # (framing, beta) -> cosine of the fed-back query
    lexical: dict[tuple[bool, float, float, int], np.ndarray]  # (framing, k1, b, title weight) -> BM25
    rm3: dict[tuple, np.ndarray]  # (framing, k1, b, title weight) + Setting.rm3 -> BM25 of the expanded query

    @property
    def qids(self) -> list[str]:
        return list(self.qrels)


def prepare(
    name: str,
    folder: Path,
    to_corpus,
    queries,
    qrels,
    exclude,
    passages: bool,
    small: bool,
    rm3: bool = False,
    bm25: tuple[float, float, int] | None = None,
    sentences: bool = False,
) -> Collection:
    """Read one backfilled project's vectors and compute every raw signal the grid needs (`bm25`: only
    the BM25 of this (k1, b, title weight), for an experiment on one setting)."""
    from memfiles.config import load_settings
    from memfiles.index.catalog import Catalog
    from memfiles.index.lexical import LexicalIndex
    from memfiles.index.text import strip_framing, tokenize
    from memfiles.services.indexing.index_session import open_index

    qids = list(qrels)
    with open_index(load_settings(folder)) as session:
        catalog: Catalog = session.catalog
        order = list(catalog.order)
        stored = session.store.vectors(order)
        matrix = np.asarray([stored[i] for i in order], dtype=np.float32)
        docs = [catalog.docs[i] for i in order]
        texts = {framing: [strip_framing(queries[q]) if framing else queries[q] for q in qids] for framing in (1, 0)}
        vectors = {bool(f): session.embedder.encode(t) for f, t in texts.items()}
        dense = {f: v @ matrix.T for f, v in vectors.items()}
        passage_dense = {}
        if passages:
            best = passage_vectors(session.embedder, docs)
            for framing, v in vectors.items():
                scores = dense[framing].copy()
                for row, pieces in best.items():
                    scores[:, row] = np.maximum(scores[:, row], (v @ pieces.T).max(axis=1))
                passage_dense[framing] = scores
        sentence_dense = {}
        if sentences:
            for framing, text in texts.items():
                sentence_dense[bool(framing)] = by_sentence(session.embedder, text, dense[bool(framing)], matrix)
    row_of_corpus = {to_corpus[i]: n for n, i in enumerate(order)}
    prf_dense = {}
    for framing, v in vectors.items():
        first = dense[framing].copy()
        for n, qid in enumerate(qids):
            own = row_of_corpus.get(exclude.get(qid, ""))
            if own is not None:
                first[n, own] = -2.0  # the report a SeaMonkey query was asked from is never feedback
        top = np.argsort(-first, axis=1)[:, :PRF_DOCS]
        centroid = matrix[top].mean(axis=1)
        for beta in PRF_BETAS:
            moved = v + beta * centroid
            moved /= np.linalg.norm(moved, axis=1, keepdims=True)
            prf_dense[(framing, beta)] = moved @ matrix.T
    lexical, expanded = {}, {}
    title_tokens = [tokenize(d.title) for d in docs]
    body_tokens = [tokenize(d.body()) for d in docs]
    own_rows = [row_of_corpus.get(exclude.get(qid, "")) for qid in qids]
    with_rm3 = {(s.k1, s.b, s.title_weight) for s in grid(False, small, rm3=rm3) if s.rm3_docs}
    for k1, b, tw in {bm25} if bm25 else {(s.k1, s.b, s.title_weight) for s in grid(False, small)}:
        tokens = [title * tw + body for title, body in zip(title_tokens, body_tokens, strict=True)]
        index = LexicalIndex.build(tokens, k1=k1, b=b)
        for framing in (True, False):
            lexical[(framing, k1, b, tw)] = np.stack([index.scores(t) for t in texts[int(framing)]])
        if (k1, b, tw) in with_rm3:
            for framing in (True, False):
                for params, scores in rm3_scores(
                    index, tokens, texts[int(framing)], lexical[(framing, k1, b, tw)], own_rows
                ).items():
                    expanded[(framing, k1, b, tw, *params)] = scores
    return Collection(
        name,
        qrels,
        queries,
        exclude,
        [to_corpus[i] for i in order],
        matrix,
        dense,
        passage_dense,
        sentence_dense,
        prf_dense,
        lexical,
        expanded,
    )


def rm3_scores(
    index, tokens: list[list[str]], texts: list[str], first: np.ndarray, own_rows
) -> dict[tuple, np.ndarray]:
    """BM25 of every query expanded RM3-style, for every (feedback entries, terms, original weight,
    minimum feedback entries per term): the top entries of the first BM25 pass (`first`; a query's
    `own_rows` entry never) give a term distribution, sum over them of the entry's share of their BM25
    times the term's share of the entry's tokens (the index's own tokens: stemmed, stop words out, title
    repeated); its top terms, renormalised, are mixed with the query's own term distribution, and every
    entry is scored by the weighted query: sum of term weight times the term's BM25 in the entry."""
    from collections import Counter

    from scipy import sparse

    from memfiles.index.text import tokenize

    vocab, size = index.vocab, index.size
    bm25 = sparse.csc_matrix((index.weights, index.rows, index.indptr), shape=(size, len(vocab))).tocsr()
    indptr, columns, shares = [0], [], []
    for doc in tokens:
        for term, count in Counter(doc).items():
            columns.append(vocab[term])
            shares.append(count / len(doc))
        indptr.append(len(columns))
    within = sparse.csr_matrix((shares, columns, indptr), shape=(size, len(vocab)), dtype=np.float64)
    original = np.zeros((len(texts), len(vocab)))
    for n, text in enumerate(texts):
        for term, count in Counter(tokenize(text)).items():
            if term in vocab:
                original[n, vocab[term]] = count
    original /= np.maximum(original.sum(axis=1, keepdims=True), 1e-12)
    out = {}
    for fb_docs in RM3_DOCS:
        relevance = {min_docs: np.zeros_like(original) for min_docs in RM3_MIN_DOCS}
        for n, scores in enumerate(first):
            scores = scores.copy()
            if own_rows[n] is not None:
                scores[own_rows[n]] = 0.0
            top = np.argsort(-scores, kind="stable")[:fb_docs]
            top = top[scores[top] > 0]
            if not len(top):
                continue
            part = within[top]
            distribution = np.asarray(part.T @ (scores[top] / scores[top].sum())).ravel()
            held_by = np.asarray((part > 0).sum(axis=0)).ravel()
            for min_docs in RM3_MIN_DOCS:
                relevance[min_docs][n] = np.where(held_by >= min_docs, distribution, 0.0)
        for min_docs, feedback in relevance.items():
            order = np.argsort(-feedback, axis=1, kind="stable")[:, : max(RM3_TERMS)]
            for fb_terms in RM3_TERMS:
                kept = np.zeros_like(feedback)
                terms = order[:, :fb_terms]
                np.put_along_axis(kept, terms, np.take_along_axis(feedback, terms, axis=1), axis=1)
                total = kept.sum(axis=1, keepdims=True)
                kept = np.divide(kept, total, out=np.zeros_like(kept), where=total > 0)
                for weight in RM3_ORIGINAL:
                    # a query without feedback keeps its own terms only (its first-pass BM25, scaled)
                    mixed = np.where(total > 0, weight * original + (1 - weight) * kept, original)
                    out[(fb_docs, fb_terms, weight, min_docs)] = np.asarray(bm25 @ mixed.T).T.astype(np.float32)
    return out


# The mix the fourteenth session's experiment screened through (its rule, docs/retrieval.md): a quarter of
# the whole request's cosine, three quarters of its best sentence's.
SENTENCE_MIX = 0.75
_SENTENCE_END = re.compile(r"(?<=[A-Za-z]{2}[.?!])\s+(?=[A-Z\"'(\[])")


def sentences(text: str) -> list[str]:
    """`text`'s sentences, or `[text]` when it has only one."""
    parts = [p.strip() for p in _SENTENCE_END.split(text.strip()) if p.strip()]
    return parts if len(parts) > 1 else [text]


def by_sentence(embedder, texts: list[str], whole: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """`whole` (the (requests, rows) cosines) with each request of several sentences scored instead by
    (1 - SENTENCE_MIX) x its whole cosine + SENTENCE_MIX x the best of its sentences' cosines."""
    split = [sentences(t) for t in texts]
    several = [n for n, parts in enumerate(split) if len(parts) > 1]
    scores = whole.copy()
    if not several:
        return scores
    vectors = embedder.encode([s for n in several for s in split[n]])
    at = 0
    for n in several:
        count = len(split[n])
        best = (vectors[at : at + count] @ matrix.T).max(axis=0)
        scores[n] = (1 - SENTENCE_MIX) * whole[n] + SENTENCE_MIX * best
        at += count
    return scores


def passage_vectors(embedder, docs, words: int = 150, most: int = 6) -> dict[int, np.ndarray]:
    """Vectors of the first `most` passages of `words` words (title prepended) of every entry longer than
    the model reads (256 word pieces, about 190 words here); the whole-entry vector covers the start."""
    pieces, owner = [], []
    for row, doc in enumerate(docs):
        body = doc.body().split()
        if len(doc.text.split()) <= 190:
            continue
        for start in range(0, min(len(body), words * most), words):
            pieces.append(doc.title + "\n\n" + " ".join(body[start : start + words]))
            owner.append(row)
    if not pieces:
        return {}
    encoded = embedder.encode(pieces)
    out: dict[int, list[np.ndarray]] = {}
    for row, vector in zip(owner, encoded, strict=True):
        out.setdefault(row, []).append(vector)
    return {row: np.stack(v) for row, v in out.items()}


def _normalise(values: np.ndarray, method: str) -> np.ndarray:
    if method == "zscore":
        spread = values.std()
        return (values - values.mean()) / spread if spread > 0 else np.zeros_like(values)
    low, high = values.min(), values.max()
    return (values - low) / (high - low) if high > low else np.ones_like(values)


def candidates(lexical: np.ndarray, dense: np.ndarray, depth: int, skip: int | None) -> np.ndarray:
    """Rows either ranking puts in its top `depth` (BM25 only where positive), never `skip`."""
    if skip is not None:
        lexical, dense = lexical.copy(), dense.copy()
        lexical[skip], dense[skip] = 0.0, -2.0
    lex_top = np.argpartition(-lexical, depth)[:depth]
    rows = np.union1d(lex_top[lexical[lex_top] > 0], np.argpartition(-dense, depth)[:depth])
    return rows[rows != skip] if skip is not None else rows


def confidence(values: np.ndarray, depth: int) -> float:
    """How clearly a ranking's best candidate stands out of its own top `depth`: (max - mean) / std."""
    top = values[np.argpartition(-values, depth)[:depth]]
    spread = top.std()
    return float((top.max() - top.mean()) / spread) if spread > 0 else 0.0


def adaptive_weight(weight: float, lexical: float, dense: float, g: float) -> float:
    """The query's lexical weight: `weight` shifted towards the ranking more confident on this query."""
    if not g or lexical <= 0 or dense <= 0:
        return weight
    a, b = weight * lexical**g, (1 - weight) * dense**g
    return a / (a + b)


def _ranks(values: np.ndarray) -> np.ndarray:
    ranks = np.empty(len(values))
    ranks[np.argsort(-values, kind="stable")] = np.arange(len(values))
    return ranks


def fused(lexical: np.ndarray, dense: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray]:
    """The two signals of the candidates on the scale `method` fuses them on (weight applied later)."""
    if method == "rrf":
        return 1 / (60 + _ranks(lexical)), 1 / (60 + _ranks(dense))
    return _normalise(lexical, method), _normalise(dense, method)


def per_query(top: list[str], relevant: dict[str, int]) -> tuple[float, float, float]:
    dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(top[:10]) if relevant.get(doc, 0) > 0)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(relevant))))
    recall = len([d for d in top[:10] if d in relevant]) / len(relevant)
    mrr = next((1 / (i + 1) for i, doc in enumerate(top[:10]) if doc in relevant), 0.0)
    return dcg / ideal, recall, mrr


def evaluate(collection: Collection, base: Setting) -> dict[Setting, np.ndarray]:
    """nDCG@10, recall@10 and MRR@10 of each judged query (one row each, in `collection.qids` order) on
    `collection` of `base` under every weight, method and score regularisation (NEIGHBOUR_GRID) when its
    method is "*"; else of `base` alone."""
    from memfiles.index.score import nearest, neighbourly

    key = (base.framing, base.k1, base.b, base.title_weight)
    lexical = collection.rm3[(*key, *base.rm3)] if base.rm3_docs else collection.lexical[key]
    if base.prf:
        dense = collection.prf_dense[(base.framing, base.prf)]
    else:
        dense = (
            collection.passage_dense
            if base.passages
            else collection.sentence_dense
            if base.sentences
            else collection.dense
        )[base.framing]
    row_of = {c: n for n, c in enumerate(collection.corpus_ids)}
    ids = np.asarray(collection.corpus_ids)
    variants = [
        Setting(**{**asdict(base), "weight": w, "method": m, "neighbours": k, "neighbour_weight": a, "adaptive": g})
        for m in METHODS
        for w in WEIGHTS
        for k, a in NEIGHBOUR_GRID
        for g in ((0.0, *ADAPTIVE) if base.adaptive else (0.0,))
        if base.method == "*"
    ] or [base]
    rows_of = {v: np.zeros((len(collection.qids), 3)) for v in variants}
    for n, qid in enumerate(collection.qids):
        skip = row_of.get(collection.exclude.get(qid, ""))
        rows = candidates(lexical[n], dense[n], base.depth, skip)
        scaled = {m: fused(lexical[n][rows], dense[n][rows], m) for m in {v.method for v in variants}}
        vectors = collection.matrix[rows]
        near = {k: nearest(vectors, k) for k in {v.neighbours for v in variants if v.neighbours}}
        sure = (0.0, 0.0)
        if any(v.adaptive for v in variants):
            lex_row, dense_row = lexical[n].copy(), dense[n].copy()
            if skip is not None:
                lex_row[skip], dense_row[skip] = 0.0, -2.0
            sure = (confidence(lex_row, base.depth), confidence(dense_row, base.depth))
        for v in variants:
            lex, den = scaled[v.method]
            w = adaptive_weight(v.weight, *sure, v.adaptive)
            ranks = w * lex + (1 - w) * den
            if v.neighbours:
                ranks = neighbourly(ranks, near[v.neighbours], v.neighbour_weight)
            top = ids[rows[np.argsort(-ranks, kind="stable")[:10]]]
            rows_of[v][n] = per_query(list(top), collection.qrels[qid])
    return rows_of


def grid(
    passages: bool,
    small: bool = False,
    prf: bool = False,
    rm3: bool = False,
    adaptive: bool = False,
    sentences: bool = False,
) -> list[Setting]:
    """Every BM25 setting, depth and framing choice; weight and method ("*") are expanded by evaluate.
    `small`: the shipped BM25 setting and depth only (a smoke run). `passages`, `prf`: each of those
    settings again with the dense signal scored by best passage, or by the fed-back query; `sentences`:
    by a long request's best sentence too (by_sentence). `rm3`: the
    settings at RM3_DEPTHS again with every RM3 parameter set (and with each dense PRF β too if `prf`)."""
    from memfiles.index import lexical, search

    k1s, bs, tws, depths = (
        ([lexical.K1], [lexical.B], [lexical.TITLE_WEIGHT], [search.DEPTH])
        if small
        else (K1S, BS, TITLE_WEIGHTS, DEPTHS)
    )
    settings = [
        Setting(framing, k1, b, tw, 0.0, depth, "*")
        for framing, k1, b, tw, depth in itertools.product((True, False), k1s, bs, tws, depths)
    ]
    if adaptive:  # evaluate expands each into g = 0 (the same as the plain setting) and every ADAPTIVE g
        settings = [Setting(**{**asdict(s), "adaptive": 1.0}) for s in settings]
    plain = list(settings)
    if passages:
        settings += [Setting(**{**asdict(s), "passages": True}) for s in plain]
    if sentences:
        settings += [Setting(**{**asdict(s), "sentences": True}) for s in plain]
    if prf:
        settings += [Setting(**{**asdict(s), "prf": beta}) for s in plain for beta in PRF_BETAS]
    if rm3:
        betas = (0.0, *PRF_BETAS) if prf else (0.0,)
        settings += [
            Setting(
                **{
                    **asdict(s),
                    "prf": beta,
                    "rm3_docs": docs,
                    "rm3_terms": terms,
                    "rm3_original": weight,
                    "rm3_min_docs": min_docs,
                }
            )
            for s in plain
            if small or s.depth in RM3_DEPTHS
            for beta, docs, terms, weight, min_docs in itertools.product(
                betas, RM3_DOCS, RM3_TERMS, RM3_ORIGINAL, RM3_MIN_DOCS
            )
        ]
    return settings


_SWEPT: list[Collection] = []  # the collections a forked sweep worker reads (set before the fork)


def _sweep_one(base: Setting) -> list[tuple[Setting, str, np.ndarray]]:
    return [(s, c.name, rows) for c in _SWEPT for s, rows in evaluate(c, base).items()]


def sweep(
    collections: list[Collection], settings: list[Setting], progress, queries: dict | None = None, workers: int = 1
) -> dict[Setting, dict[str, tuple]]:
    """Every setting's mean figures on every collection. `queries`, if given, also receives every
    setting's nDCG@10 of each judged query: queries[setting][collection name] (for `bootstrap_loco`).
    `workers` > 1: the settings are shared out among that many forked processes (same figures)."""
    results: dict[Setting, dict[str, tuple]] = {}
    _SWEPT[:] = collections
    try:
        if workers > 1:
            import multiprocessing

            with multiprocessing.get_context("fork").Pool(workers) as pool:
                done = list(progress(pool.imap(_sweep_one, settings, chunksize=2), total=len(settings)))
        else:
            done = (_sweep_one(base) for base in progress(settings))
        for batch in done:
            for setting, name, rows in batch:
                results.setdefault(setting, {})[name] = tuple(float(x) for x in rows.mean(axis=0))
                if queries is not None:
                    queries.setdefault(setting, {})[name] = rows[:, 0].copy()
    finally:
        _SWEPT.clear()
    return results


def best(
    results: dict[Setting, dict[str, tuple]],
    names: list[str],
    allowed=lambda s: True,
    objective=lambda figures, name: figures[0],
    combine=lambda values: sum(values) / len(values),
) -> Setting:
    """The allowed setting with the best `combine` over `names` of `objective` (by default the mean
    nDCG@10; ties: the first in grid order)."""
    candidates = [s for s in results if allowed(s)]
    return max(candidates, key=lambda s: combine([objective(results[s][n], n) for n in names]))


def loco(results, names: list[str], allowed=lambda s: True, **choice) -> list[tuple[str, Setting, tuple]]:
    """For each collection: the setting chosen on the other two (`choice`: best's objective and
    combine), and its figures on the one held out."""
    folds = []
    for held in names:
        chosen = best(results, [n for n in names if n != held], allowed, **choice)
        folds.append((held, chosen, results[chosen][held]))
    return folds


def bootstrap_loco(
    queries: dict[Setting, dict[str, np.ndarray]],
    baseline: dict[str, np.ndarray],
    names: list[str],
    allowed=lambda s: True,
    resamples: int = 1000,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """How much the held-out ratios would move with other queries: the whole LOCO procedure redone on
    each of `resamples` bootstrap samples (each collection's judged queries drawn with replacement),
    choosing by the mean nDCG@10 on the other two as `loco` does. `queries`: each setting's nDCG@10 of
    each query (from `sweep`); `baseline`: the same-run plain RRF's, in the same query order. Returns,
    for each held-out collection, the held-out nDCG@10 ratio to the resampled RRF of every resample."""
    settings = [s for s in queries if allowed(s)]
    rng = np.random.default_rng(seed)
    means, rrf = {}, {}
    for name in names:
        per_query = np.stack([queries[s][name] for s in settings]).astype(np.float64)  # (settings, queries)
        count = per_query.shape[1]
        draws = np.stack([np.bincount(rng.integers(0, count, count), minlength=count) for _ in range(resamples)])
        means[name] = per_query @ draws.T / count  # (settings, resamples)
        rrf[name] = draws @ baseline[name].astype(np.float64) / count  # (resamples,)
    ratios = {}
    for held in names:
        training = sum(means[n] for n in names if n != held) / (len(names) - 1)
        chosen = training.argmax(axis=0)  # ties: the first in grid order, as `best`
        ratios[held] = means[held][chosen, np.arange(resamples)] / rrf[held]
    return ratios
