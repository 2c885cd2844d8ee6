"""An experiment (fourteenth session): a long request read one sentence at a time on the dense side.

A CISI request runs to 73 words at the median and 342 at most, often three or four questions in a row
("What problems ... ? What difficulties ... ? What is the usual relevance ...?"). MiniLM makes one vector
of the whole, which blurs its separate asks and cuts a request longer than 256 word pieces. Here a
request of several sentences is also embedded one sentence at a time, and an entry's dense signal
becomes a mix of its cosine to the whole request and to the sentences:

- `mean`: the mean of its cosines to the sentences;
- `max`: the largest of them (the ask the entry answers best);
- `whole+mean λ`, `whole+max λ`: (1 − λ) × the whole request's cosine + λ × `mean` or `max`.

A request of one sentence (nearly every SeaMonkey title) is left as it is. The lexical side, the
candidates' depth, the fusion and the neighbours are the shipped ranking's (docs/retrieval.md). The
split happens only at `.`, `?` or `!` followed by a space and a capital letter, a quote or a bracket,
after a word of two or more letters, so `e.g. this`, `v1.2` and `os.path` are never split.

The rule, written down before any of its numbers were seen: the idea goes on to a leave-one-collection-
out run (the variant a free parameter of the grid, "off" among them) only if some variant lifts the
shipped ranking's nDCG@10 on every collection where it changes at least one judged request, and lowers
none. It ships only if, in that run, its held-out ratio is at least the same run's grid LOCO on every
collection and, on the same bootstrap resamplings of the judged requests, it is higher more often than
lower on every collection.

    python scripts/try_query_sentences.py
"""

from __future__ import annotations

import re
import time

import numpy as np
from eval_retrieval import NAMES, cache_folder
from replay import SHIPPED, shipped_collection, shipped_signals
from retrieval_sweep import per_query
from try_feedback import hybrid_ranking

from memfiles.config import load_settings
from memfiles.services.index_session import open_index

# The end of a sentence: after a word of two or more letters, before a capital, a quote or a bracket.
_SENTENCE_END = re.compile(r"(?<=[A-Za-z]{2}[.?!])\s+(?=[A-Z\"'(\[])")
MIXES = (0.25, 0.5, 0.75)


def sentences(text: str) -> list[str]:
    """`text`'s sentences, or `[text]` when it has only one."""
    parts = [p.strip() for p in _SENTENCE_END.split(text.strip()) if p.strip()]
    return parts if len(parts) > 1 else [text]


def variants(whole: np.ndarray, parts: np.ndarray) -> dict[str, np.ndarray]:
    """Every variant's dense signal of one request: `whole` its cosine to each entry, `parts` the cosine
    of each of its sentences (one row each)."""
    mean, best = parts.mean(axis=0), parts.max(axis=0)
    out = {"mean": mean, "max": best}
    for mix in MIXES:
        out[f"whole+mean {mix:g}"] = (1 - mix) * whole + mix * mean
        out[f"whole+max {mix:g}"] = (1 - mix) * whole + mix * best
    return out


def main() -> None:
    setting = SHIPPED
    for name in NAMES:
        started = time.perf_counter()
        collection, queries, _ = shipped_collection(name)
        lexical, dense, ids, row_of = shipped_signals(collection)
        matrix = collection.matrix.astype(np.float32)
        qids = collection.qids
        split = [sentences(queries[q]) for q in qids]
        several = [n for n, parts in enumerate(split) if len(parts) > 1]
        with open_index(load_settings(cache_folder(name))) as session:  # shipped_collection made it ready
            flat = [s for n in several for s in split[n]]
            vectors = session.embedder.encode(flat) if flat else np.zeros((0, matrix.shape[1]))
        plain = np.zeros(len(qids))
        alone = np.zeros(len(qids))
        figures: dict[str, np.ndarray] = {}
        alone_figures: dict[str, np.ndarray] = {}
        at = 0
        parts_of: dict[int, np.ndarray] = {}
        for n in several:
            count = len(split[n])
            parts_of[n] = vectors[at : at + count] @ matrix.T
            at += count
        for n, qid in enumerate(qids):
            skip = row_of.get(collection.exclude.get(qid, ""))
            relevant = collection.qrels[qid]
            shipped = hybrid_ranking(lexical[n], dense[n], matrix, setting, skip)
            plain[n] = per_query(list(ids[shipped[:10]]), relevant)[0]
            own = dense[n].copy()
            if skip is not None:
                own[skip] = -2.0
            alone[n] = per_query(list(ids[np.argsort(-own, kind="stable")[:10]]), relevant)[0]
            options = variants(dense[n], parts_of[n]) if n in parts_of else None
            for label in variants(dense[n], dense[n][None, :]):
                signal = options[label] if options else dense[n]
                ranked = hybrid_ranking(lexical[n], signal, matrix, setting, skip)
                figures.setdefault(label, np.zeros(len(qids)))[n] = per_query(list(ids[ranked[:10]]), relevant)[0]
                solo = signal.copy()
                if skip is not None:
                    solo[skip] = -2.0
                alone_figures.setdefault(label, np.zeros(len(qids)))[n] = per_query(
                    list(ids[np.argsort(-solo, kind="stable")[:10]]), relevant
                )[0]
        base, solo_base = plain.mean(), alone.mean()
        lines = [
            f"{name}: {len(several)} of {len(qids)} judged requests have several sentences; "
            f"shipped {base:.3f}, MiniLM alone {solo_base:.3f}"
        ]
        for label, values in figures.items():
            solo = alone_figures[label].mean()
            up, down = int((values > plain + 1e-12).sum()), int((values < plain - 1e-12).sum())
            lines.append(
                f"  {label:<15} hybrid {values.mean():.4f} ({values.mean() / base:.4f}x, {up} up {down} down)"
                f"   MiniLM alone {solo:.3f} ({solo / solo_base:.3f}x)"
            )
        print(*lines, f"  ({time.perf_counter() - started:.0f} s)", sep="\n", flush=True)


if __name__ == "__main__":
    main()
