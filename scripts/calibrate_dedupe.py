"""Measure the near-duplicate threshold instead of guessing it.

  python scripts/calibrate_dedupe.py [--notebook notebooks/dedupe_threshold.ipynb]

SeaMonkey (1,076 bug reports, duplicate pairs marked by the project's triagers) decides the signal
weights and thresholds the way the distiller and `add` use them: for each report, its nearest other
report is found; "duplicate" is predicted when that neighbour scores at or above the threshold, and it is
right when the neighbour is one the triagers marked. A report with a marked duplicate that is not
predicted (or predicted with the wrong neighbour) is a miss.
STS-B (1,500 sentence pairs, human similarity 0-5; "duplicate" = 4 or more) checks the choice on other
text. Signals: cosine of the bundled MiniLM embeddings, Jaccard of stemmed word sets, and their
weighted sum. Data is read from ../shared/data (or $MEMFILES_EVAL_DATA).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from eval_retrieval import DATA, read_jsonl

from memfiles.index.embedder import load_embedder
from memfiles.services.dedupe import jaccard, words

WEIGHTS = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5)
DISTILLER = 0.70  # the distiller's own threshold: candidates there are already same file and same section


def pr_at(scores: np.ndarray, labels: np.ndarray, threshold: float) -> tuple[float, float, float]:
    """Pairs classified on their own: a pair is right exactly when it is labelled a duplicate."""
    return pr_nearest(scores, labels, labels, threshold)


def best_threshold(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float, float, float]:
    candidates = np.unique(np.round(scores[labels], 3))
    best = max(((t, *pr_at(scores, labels, t)) for t in candidates), key=lambda row: row[3])
    return best


def seamonkey(model) -> dict:
    """Per report: the best neighbour's score under each signal, whether it is a marked duplicate, and
    whether the report has one at all."""
    corpus = read_jsonl(DATA / "seamonkey" / "corpus.jsonl")
    index = {doc["_id"]: n for n, doc in enumerate(corpus)}
    partners: dict[int, set[int]] = {}
    for line in (DATA / "seamonkey" / "dup_pairs.tsv").read_text().splitlines()[1:]:
        a, b = line.split("\t")
        if a in index and b in index and a != b:
            partners.setdefault(index[a], set()).add(index[b])
            partners.setdefault(index[b], set()).add(index[a])
    texts = [f"{d['title']}\n\n{d['text']}" for d in corpus]
    vectors = model.encode(texts, batch_size=32)
    bags = [words(t) for t in texts]
    size = len(corpus)
    dense = vectors @ vectors.T
    lexical = np.zeros((size, size), dtype=np.float32)
    for i in range(size):
        for j in range(i + 1, size):
            lexical[i, j] = lexical[j, i] = jaccard(bags[i], bags[j])
    return {
        "dense_matrix": dense,
        "lexical_matrix": lexical,
        "partners": partners,
        "size": size,
        "pairs": sum(len(p) for p in partners.values()) // 2,
    }


def nearest_scores(data: dict, weight: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(best neighbour score, neighbour is a marked duplicate, report has a marked duplicate) per report."""
    matrix = weight * data["dense_matrix"] + (1 - weight) * data["lexical_matrix"]
    np.fill_diagonal(matrix, -np.inf)
    best = matrix.argmax(1)
    scores = matrix[np.arange(data["size"]), best]
    right = np.array([best[i] in data["partners"].get(i, ()) for i in range(data["size"])])
    has = np.array([i in data["partners"] for i in range(data["size"])])
    return scores, right, has


def pr_nearest(scores: np.ndarray, right: np.ndarray, has: np.ndarray, threshold: float) -> tuple[float, float, float]:
    """Precision over what scores >= threshold, recall over what `has` a duplicate, hits where `right`."""
    predicted = scores >= threshold
    tp = int((predicted & right).sum())
    precision = tp / max(1, int(predicted.sum()))
    recall = tp / max(1, int(has.sum()))
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def best_nearest(scores: np.ndarray, right: np.ndarray, has: np.ndarray) -> tuple[float, float, float, float]:
    candidates = np.unique(np.round(scores[right], 3))
    return max(((float(t), *pr_nearest(scores, right, has, float(t))) for t in candidates), key=lambda row: row[3])


def stsb(model) -> dict:
    rows = list(csv.reader((DATA / "stsb" / "stsb-en-dev.csv").open(encoding="utf-8")))
    left = model.encode([r[0] for r in rows], batch_size=64)
    right = model.encode([r[1] for r in rows], batch_size=64)
    dense = (left * right).sum(1)
    lexical = np.array([jaccard(words(r[0]), words(r[1])) for r in rows], dtype=np.float32)
    labels = np.array([float(r[2]) >= 4.0 for r in rows])
    return {"dense": dense, "lexical": lexical, "labels": labels, "pairs": int(labels.sum()), "all": len(rows)}


def combine(data: dict, weight: float) -> np.ndarray:
    return weight * data["dense"] + (1 - weight) * data["lexical"]


def report() -> list[tuple[str, str]]:
    """(title, markdown table) sections: what the notebook shows and the script prints."""
    model = load_embedder(None, light=False)
    sea, sts = seamonkey(model), stsb(model)
    out = []
    lines = ["| signal | best threshold | precision | recall | F1 |", "|---|---|---|---|---|"]
    chosen = None
    for weight in (*WEIGHTS, 0.0):
        t, p, r, f = best_nearest(*nearest_scores(sea, weight))
        name = "lexical alone (the fallback)" if weight == 0 else f"{weight:.1f} x dense + {1 - weight:.1f} x lexical"
        lines.append(f"| {name} | {t:.3f} | {p:.3f} | {r:.3f} | {f:.3f} |")
        if weight and (chosen is None or f > chosen[4]):
            chosen = (weight, t, p, r, f)
    has = sum(1 for _ in sea["partners"])
    out.append(
        (
            f"SeaMonkey: {has} of {sea['size']:,} reports have a marked duplicate ({sea['pairs']} pairs); "
            "each report's nearest neighbour is judged",
            "\n".join(lines),
        )
    )
    weight, threshold = chosen[0], chosen[1]
    scores, right, has_partner = nearest_scores(sea, weight)
    curve = ["| threshold | precision | recall | F1 |", "|---|---|---|---|"]
    for t in np.arange(0.50, 0.96, 0.05):
        p, r, f = pr_nearest(scores, right, has_partner, float(t))
        curve.append(f"| {t:.2f} | {p:.3f} | {r:.3f} | {f:.3f} |")
    out.append(
        (f"Precision-recall curve on SeaMonkey, {weight:.1f} x dense + {1 - weight:.1f} x lexical", "\n".join(curve))
    )
    check = [
        "| on STS-B (duplicate = score 4 or more) | threshold | precision | recall | F1 |",
        "|---|---|---|---|---|",
    ]
    p, r, f = pr_at(combine(sts, weight), sts["labels"], threshold)
    check.append(f"| the SeaMonkey choice | {threshold:.3f} | {p:.3f} | {r:.3f} | {f:.3f} |")
    t, p, r, f = best_threshold(combine(sts, weight), sts["labels"])
    check.append(f"| best on STS-B itself (reference) | {t:.3f} | {p:.3f} | {r:.3f} | {f:.3f} |")
    p, r, f = pr_at(combine(sts, weight), sts["labels"], DISTILLER)
    check.append(f"| the distiller's threshold | {DISTILLER:.3f} | {p:.3f} | {r:.3f} | {f:.3f} |")
    out.append((f"Check on STS-B: {sts['pairs']} of {sts['all']:,} pairs scored 4 or more", "\n".join(check)))
    return out


def notebook(sections: list[tuple[str, str]], path: Path) -> None:
    cells = [
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": [
                "# Near-duplicate threshold for memfiles\n\n",
                __doc__.strip().replace("\n", " ") + "\n\n",
                "Regenerate with `python scripts/calibrate_dedupe.py --notebook notebooks/dedupe_threshold.ipynb`.",
            ],
        },
        {
            "cell_type": "code",
            "execution_count": 1,
            "metadata": {},
            "outputs": [],
            "source": [
                "import sys; sys.path.insert(0, '../scripts')\n",
                "from calibrate_dedupe import report\n",
                "sections = report()",
            ],
        },
    ]
    for n, (title, table) in enumerate(sections, start=2):
        cells.append(
            {
                "cell_type": "code",
                "execution_count": n,
                "metadata": {},
                "source": [f"print(sections[{n - 2}][1])  # {title}"],
                "outputs": [{"output_type": "stream", "name": "stdout", "text": [title + "\n\n", table + "\n"]}],
            }
        )
    document = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notebook", type=Path)
    args = parser.parse_args()
    sections = report()
    for title, table in sections:
        print(f"{title}\n\n{table}\n")
    if args.notebook:
        notebook(sections, args.notebook)


if __name__ == "__main__":
    main()
