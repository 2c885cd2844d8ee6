"""An experiment (sixth session, not shipped): an entry's title embedded on its own, as a second dense
signal beside the whole entry's vector.

For each collection, the shipped ranking (docs/retrieval.md) is replayed with the dense score of an entry
taken as cos(query, entry) + λ · cos(query, title), for λ in LAMBDAS, and its mean nDCG@10 printed with
the ratio to λ = 0 (the shipped ranking). Needs the backfilled projects `eval_retrieval.py` caches.

    python scripts/try_title_vector.py
"""

from __future__ import annotations

import time

from eval_retrieval import NAMES
from replay import SHIPPED, shipped_collection
from retrieval_sweep import evaluate

from memfiles.index.bert_torch import TorchBertEmbedder
from memfiles.index.embedder import resolve_model

LAMBDAS = (0.0, 0.15, 0.3, 0.5, 0.8)


def main() -> None:
    encoder = TorchBertEmbedder(*resolve_model(None))
    for name in NAMES:
        started = time.perf_counter()
        collection, queries, docs = shipped_collection(name)
        titles = [doc.title for doc in docs]
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
