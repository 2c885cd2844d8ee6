"""Measure near-duplicate detection on SeaMonkey's duplicate bug reports instead of guessing it.

  python scripts/calibrate_dedupe.py [--notebook notebooks/dedupe_threshold.ipynb] [--json-out PATH]

SeaMonkey (1,076 bug reports; 46 pairs marked duplicate by the project's triagers) is split by time:
the TUNE part is the 400 reports filed before 2021-08-11 (24 labelled pairs), the REPORT part the 676
filed from then on (19 pairs; 3 pairs across the split are dropped). Each part becomes a memfiles
project (`memfiles import`, then `memfiles backfill`: the vectors are the index's own). The signals of
`memfiles dupes` (services/upkeep/dupes.py) are computed for every pair; the weights and the threshold are
chosen on TUNE alone, for the most labelled pairs found with at most 500 pairs flagged per 2,500
entries; REPORT is then scored through the CLI, `memfiles dupes --json` at its defaults. Baselines:
plain cosine at the same budget, and cosine >= 0.8. The word-overlap fallback (no index) is scored too.
The held-out set the issue names (2,503 entries) is not available here; SeaMonkey's REPORT part stands
in for it. Data is read from ../shared/data (or $MEMFILES_EVAL_DATA).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from eval_retrieval import DATA, _cli, make_project, read_jsonl

from memfiles.config import load_settings
from memfiles.index.text import tokenize
from memfiles.services.upkeep import dupes
from memfiles.services.upkeep.dedupe import LEXICAL_PAIR_THRESHOLD, LEXICAL_TITLE, lexical_pairs, sparse_similarities
from memfiles.store.project import Project

SPLIT = "2021-08-11"
BUDGET = 500 / 2500  # pairs flagged per entry
TITLE_WEIGHTS = (0.0, 0.1, 0.2, 0.3)
RARE_WEIGHTS = (0.0, 0.1, 0.2)
# Precision-recall curves by part and scoring, written by --json-out for notebooks/benchmarks.ipynb.
CURVES: dict[str, dict] = {}


def load() -> tuple[dict[str, list[dict]], dict[str, set[tuple[str, str]]]]:
    corpus = read_jsonl(DATA / "seamonkey" / "corpus.jsonl")
    parts = {
        "tune": [d for d in corpus if d["created"] < SPLIT],
        "report": [d for d in corpus if d["created"] >= SPLIT],
    }
    labelled: set[tuple[str, str]] = set()
    for line in (DATA / "seamonkey" / "dup_pairs.tsv").read_text().splitlines()[1:]:
        a, b = line.split("\t")
        if a != b:
            labelled.add((min(a, b), max(a, b)))
    pairs = {
        name: {(a, b) for a, b in labelled if a in {d["_id"] for d in docs} and b in {d["_id"] for d in docs}}
        for name, docs in parts.items()
    }
    return parts, pairs


class Part:
    """One part of SeaMonkey as a backfilled memfiles project, with every pair's signals."""

    def __init__(self, folder: Path, docs: list[dict], labelled: set[tuple[str, str]]) -> None:
        self.folder = folder
        to_corpus = make_project(folder, docs)
        start = time.perf_counter()
        _cli(["memfiles", "--root", str(folder), "backfill"])
        self.backfill_seconds = time.perf_counter() - start
        self.to_corpus = to_corpus
        self.labelled = labelled
        self.project = Project(load_settings(folder))
        self.docs = dupes.project_docs(self.project)
        self.vectors, _ = dupes.entry_vectors(self.project, self.docs)
        self.n = len(self.docs)
        self.budget = int(BUDGET * self.n)
        corpus_ids = [to_corpus[d.id] for d in self.docs]
        self.truth = np.zeros((self.n, self.n), dtype=bool)
        where = {c: i for i, c in enumerate(corpus_ids)}
        for a, b in labelled:
            self.truth[where[a], where[b]] = self.truth[where[b], where[a]] = True
        self.dense = self.vectors @ self.vectors.T
        local = dupes.neighbourhood(self.vectors)
        self.margin = self.dense - (local[:, None] + local[None, :]) / 2
        titles = dupes._idf_vectors([tokenize(d.title) for d in self.docs])
        rare = dupes._rare_tokens(self.docs)
        self.title = np.zeros((self.n, self.n), dtype=np.float32)
        self.rare = np.zeros((self.n, self.n), dtype=np.float32)
        for i, j in itertools.combinations(range(self.n), 2):
            self.title[i, j] = self.title[j, i] = dupes._cosine(titles[i], titles[j])
            self.rare[i, j] = self.rare[j, i] = min(len(rare[i] & rare[j]), 2) / 2
        self.upper = np.triu_indices(self.n, 1)
        sims, local_words = sparse_similarities([tokenize(f"{d.title}\n\n{d.body}") for d in self.docs])
        words = np.zeros((self.n, self.n), dtype=np.float32)
        for (i, j), value in sims.items():
            words[i, j] = words[j, i] = value
        lexical = np.asarray(local_words, dtype=np.float32)
        self.word_margin = words - (lexical[:, None] + lexical[None, :]) / 2

    def word_score(self, title_weight: float) -> np.ndarray:
        return np.clip(0.5 + self.word_margin + title_weight * self.title, 0, 1)

    def score(self, title_weight: float, rare_weight: float) -> np.ndarray:
        return np.clip(0.5 + self.margin + title_weight * self.title + rare_weight * self.rare, 0, 1)

    def at_budget(self, scores: np.ndarray) -> tuple[float, float]:
        """(recall with the `budget` best pairs flagged, the score of the last one flagged)."""
        flat = scores[self.upper]
        order = np.argsort(-flat, kind="stable")[: self.budget]
        found = self.truth[self.upper][order].sum()
        return found / len(self.labelled), float(flat[order[-1]])

    def curve(self, scores: np.ndarray, points: int = 60) -> dict[str, list[float]]:
        """Precision and recall of flagging every pair scoring at least t, for t across the top scores."""
        flat = scores[self.upper]
        truth = self.truth[self.upper]
        top = np.sort(flat)[::-1][: max(4 * self.budget, 10)]
        out: dict[str, list[float]] = {"threshold": [], "precision": [], "recall": []}
        for threshold in np.linspace(float(top[-1]), float(top[0]), points):
            flagged = flat >= threshold
            found = float((flagged & truth).sum())
            out["threshold"].append(round(float(threshold), 4))
            out["precision"].append(found / max(int(flagged.sum()), 1))
            out["recall"].append(found / len(self.labelled))
        return out

    def at_threshold(self, scores: np.ndarray, threshold: float) -> tuple[int, float]:
        flagged = scores[self.upper] >= threshold
        return int(flagged.sum()), float((flagged & self.truth[self.upper]).sum() / len(self.labelled))


def _row(name: str, flagged: int, n: int, recall: float, labelled: int) -> str:
    return (
        f"| {name} | {flagged} | {flagged * 2500 / n:.0f} | {recall:.3f} ({round(recall * labelled)} of {labelled}) |"
    )


def report() -> list[tuple[str, str]]:
    parts, labelled = load()
    out = []
    with tempfile.TemporaryDirectory() as tune_dir, tempfile.TemporaryDirectory() as report_dir:
        tune = Part(Path(tune_dir), parts["tune"], labelled["tune"])
        grid = ["| title weight | rare weight | recall at budget (TUNE) | threshold |", "|---|---|---|---|"]
        best = None
        for title_weight, rare_weight in itertools.product(TITLE_WEIGHTS, RARE_WEIGHTS):
            recall, threshold = tune.at_budget(tune.score(title_weight, rare_weight))
            grid.append(f"| {title_weight:.1f} | {rare_weight:.1f} | {recall:.3f} | {threshold:.3f} |")
            if best is None or recall > best[0] + 1e-9:
                best = (recall, title_weight, rare_weight, threshold)
        assert best is not None
        words = ["| title weight | recall at budget (TUNE) | threshold |", "|---|---|---|"]
        for title_weight in TITLE_WEIGHTS:
            recall, threshold = tune.at_budget(tune.word_score(title_weight))
            words.append(f"| {title_weight:.1f} | {recall:.3f} | {threshold:.3f} |")
        out.append(
            (
                f"TUNE: {tune.n} reports filed before {SPLIT}, {len(tune.labelled)} labelled pairs, "
                f"budget {tune.budget} pairs; score = 0.5 + margin + a x title + b x rare",
                "\n".join(grid),
            )
        )
        out.append(
            (
                "TUNE, without an index: score = 0.5 + word margin + a x title (TF-IDF vectors instead of "
                f"embeddings; in services/upkeep/dedupe.py: title {LEXICAL_TITLE}, threshold {LEXICAL_PAIR_THRESHOLD})",
                "\n".join(words),
            )
        )
        chosen = (
            f"chosen on TUNE: title weight {best[1]:.1f}, rare weight {best[2]:.1f}, threshold {best[3]:.3f} "
            f"(in services/upkeep/dupes.py: {dupes.TITLE_WEIGHT}, {dupes.RARE_WEIGHT}, {dupes.THRESHOLD})"
        )
        part = Part(Path(report_dir), parts["report"], labelled["report"])
        start = time.perf_counter()
        answer = json.loads(_cli(["memfiles", "--root", str(part.folder), "dupes", "--json"]))
        seconds = time.perf_counter() - start
        flagged = {
            tuple(sorted((part.to_corpus[f["id"]], part.to_corpus[f["target"]["id"]]))) for f in answer["findings"]
        }
        table = ["| on REPORT | pairs flagged | per 2,500 entries | labelled pairs found |", "|---|---|---|---|"]
        table.append(
            _row(
                "`memfiles dupes` at its defaults",
                len(flagged),
                part.n,
                len(flagged & part.labelled) / len(part.labelled),
                len(part.labelled),
            )
        )
        recall, _ = part.at_budget(part.dense)
        table.append(_row("plain cosine, same budget", part.budget, part.n, recall, len(part.labelled)))
        _, tuned_cut = tune.at_budget(tune.dense)
        count, recall = part.at_threshold(part.dense, tuned_cut)
        name = f"plain cosine >= {tuned_cut:.3f} (flags the budget on TUNE)"
        table.append(_row(name, count, part.n, recall, len(part.labelled)))
        for cut in (0.8, 0.79):
            count, recall = part.at_threshold(part.dense, cut)
            table.append(_row(f"plain cosine >= {cut}", count, part.n, recall, len(part.labelled)))
        lexical = lexical_pairs(part.docs)
        found = {tuple(sorted((part.to_corpus[p.a.id], part.to_corpus[p.b.id]))) for p in lexical}
        table.append(
            _row(
                "`memfiles dupes` without an index (words)",
                len(found),
                part.n,
                len(found & part.labelled) / len(part.labelled),
                len(part.labelled),
            )
        )
        for name, p in (("TUNE", tune), ("REPORT", part)):
            scores = p.score(dupes.TITLE_WEIGHT, dupes.RARE_WEIGHT)
            count, recall = p.at_threshold(scores, dupes.THRESHOLD)
            flagged = scores[p.upper] >= dupes.THRESHOLD
            CURVES[name] = {
                "reports": p.n,
                "labelled_pairs": len(p.labelled),
                "threshold": dupes.THRESHOLD,
                "at_threshold": {
                    "flagged": count,
                    "recall": recall,
                    "precision": float((flagged & p.truth[p.upper]).sum()) / max(count, 1),
                },
                "memfiles": p.curve(scores),
                "plain_cosine": p.curve(p.dense),
            }
            table.append(_row(f"the defaults, computed in-process on {name}", count, p.n, recall, len(p.labelled)))
        out.append(
            (
                f"REPORT: {part.n} reports filed from {SPLIT} on, {len(part.labelled)} labelled pairs; {chosen}; "
                f"`memfiles dupes --json` took {seconds:.1f} s (cold CLI, stored vectors)",
                "\n".join(table),
            )
        )
    return out


def notebook(sections: list[tuple[str, str]], path: Path) -> None:
    cells = [
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": [
                "# Near-duplicate detection for memfiles\n\n",
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
                "import sys\n",
                "\n",
                'sys.path.insert(0, "../scripts")\n',
                "from calibrate_dedupe import report  # found through the path above\n",
                "\n",
                "sections = report()",
            ],
        },
    ]
    for n, (title, table) in enumerate(sections, start=2):
        cells.append({"cell_type": "markdown", "metadata": {}, "source": [f"### {title}"]})  # ruff-clean: no long lines
        cells.append(
            {
                "cell_type": "code",
                "execution_count": n,
                "metadata": {},
                "source": [f"print(sections[{n - 2}][1])"],
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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notebook", type=Path)
    parser.add_argument("--json-out", type=Path, help="also write the precision-recall curves as JSON here")
    args = parser.parse_args()
    sections = report()
    if args.json_out:
        document = {"script": "calibrate_dedupe", "command": " ".join(sys.argv), "parts": CURVES}
        args.json_out.write_text(json.dumps(document, indent=1) + "\n")
    for title, table in sections:
        print(f"**{title}**\n\n{table}\n")
    if args.notebook:
        notebook(sections, args.notebook)


if __name__ == "__main__":
    main()
