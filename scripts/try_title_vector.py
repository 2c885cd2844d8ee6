"""An experiment (sixth session, not shipped): an entry's title embedded on its own, as a second dense
signal beside the whole entry's vector.

For each collection, the shipped ranking (docs/retrieval.md) is replayed with the dense score of an entry
taken as cos(query, entry) + λ · cos(query, title), for λ in LAMBDAS, and its mean nDCG@10 printed with
the ratio to λ = 0 (the shipped ranking). Needs the backfilled projects `eval_retrieval.py` caches.

    python scripts/try_title_vector.py
"""

from __future__ import annotations

import time

from eval_retrieval import NAMES, load, project
from retrieval_sweep import Setting, evaluate, prepare

from memfiles.config import load_settings
from memfiles.index.bert_torch import TorchBertEmbedder
from memfiles.index.embedder import resolve_model
from memfiles.services.index_session import open_index

LAMBDAS = (0.0, 0.15, 0.3, 0.5, 0.8)
SHIPPED = Setting(
    framing=False, k1=1.2, b=0.3, title_weight=3, weight=0.5, depth=50, method="minmax", neighbours=10,
    neighbour_weight=0.5,
)  # fmt: skip


def main() -> None:
    encoder = TorchBertEmbedder(*resolve_model(None))
    for name in NAMES:
        started = time.perf_counter()
        corpus, queries, qrels, exclude = load(name, False)
        folder, to_corpus = project(name, corpus, False)
        bm25 = (SHIPPED.k1, SHIPPED.b, SHIPPED.title_weight)
        collection = prepare(name, folder, to_corpus, queries, qrels, exclude, False, False, bm25=bm25)
        with open_index(load_settings(folder)) as session:
            titles = [session.catalog.docs[i].title for i in session.catalog.order]
        by_title = encoder.encode([queries[q] for q in collection.qids]) @ encoder.encode(titles, batch_size=64).T
        whole = collection.dense[False].copy()
        means = []
        for weight in LAMBDAS:
            collection.dense[False] = whole + weight * by_title
            means.append(float(evaluate(collection, SHIPPED)[SHIPPED][:, 0].mean()))
        figures = " | ".join(f"λ={w:g}: {m:.3f} ({m / means[0]:.3f}x)" for w, m in zip(LAMBDAS, means, strict=True))
        print(f"{name} ({time.perf_counter() - started:.0f} s) | {figures}", flush=True)


if __name__ == "__main__":
    main()
