"""What the one-idea experiments (try_title_vector.py, try_lexical.py) share: the shipped ranking as a
point of the sweep's grid, read from the product's own constants, and a collection's cached backfill
prepared for replaying it."""

from __future__ import annotations

import numpy as np
from eval_retrieval import load, project
from retrieval_sweep import Collection, Setting, prepare

from memfiles.config import load_settings
from memfiles.index import lexical, score, search
from memfiles.index.catalog import IndexDoc
from memfiles.services.indexing.index_session import open_index

SHIPPED = Setting(
    framing=search.STRIP_FRAMING,
    k1=lexical.K1,
    b=lexical.B,
    title_weight=lexical.TITLE_WEIGHT,
    weight=score.LEXICAL_WEIGHT,
    depth=search.DEPTH,
    method=score.FUSION,
    neighbours=score.NEIGHBOURS,
    neighbour_weight=score.NEIGHBOUR_WEIGHT,
)


def shipped_collection(name: str) -> tuple[Collection, dict[str, str], list[IndexDoc]]:
    """The collection `name` prepared with the shipped BM25 setting, its queries, and its entries in
    catalog order (the rows of every array of the collection). Needs eval_retrieval.py's cached backfill."""
    corpus, queries, qrels, exclude = load(name, False)
    folder, to_corpus = project(name, corpus, False)
    bm25 = (SHIPPED.k1, SHIPPED.b, SHIPPED.title_weight)
    collection = prepare(name, folder, to_corpus, queries, qrels, exclude, False, False, bm25=bm25)
    with open_index(load_settings(folder)) as session:
        docs = [session.catalog.docs[i] for i in session.catalog.order]
    return collection, queries, docs


def shipped_signals(collection: Collection) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """The shipped ranking's raw signals on `collection` (BM25 and cosine, one row per judged query),
    each catalog row's corpus id, and the row of each corpus id."""
    key = (SHIPPED.framing, SHIPPED.k1, SHIPPED.b, SHIPPED.title_weight)
    ids = np.asarray(collection.corpus_ids)
    row_of = {c: n for n, c in enumerate(collection.corpus_ids)}
    return collection.lexical[key], collection.dense[SHIPPED.framing], ids, row_of
