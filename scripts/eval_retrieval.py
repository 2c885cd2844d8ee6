"""Retrieval quality on public labelled data, measured through memfiles itself.

  python scripts/eval_retrieval.py cacm        # CACM through the CLI: import, backfill, memsearch --batch
  python scripts/eval_retrieval.py calibrate   # the fusion weight, chosen on SeaMonkey duplicate retrieval
                                               # (both also print what score bands mean there)

The data is read from ../shared/data (or $MEMFILES_EVAL_DATA); nothing of it is copied into the repo.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(os.environ.get("MEMFILES_EVAL_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
CONFIG = "title_limit = 300\nbody_limit = 10000\nwrap = 0\n"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def as_body(text: str) -> str:
    """Public text made fit for an entry body: headings escaped, a fence left open closed."""
    from memfiles.format.grammar import Fence

    lines = ["\\" + line if line.startswith("#") else line for line in text.strip().split("\n")]
    fence = Fence()
    for number, line in enumerate(lines, start=1):
        fence.feed(line, number)
    if fence.marker is not None:
        lines.append(fence.marker)
    return "\n".join(lines)


def make_project(folder: Path, corpus: list[dict]) -> dict[str, str]:
    """A memfiles project holding `corpus` as fact entries; returns entry id -> corpus id."""
    (folder / "memory").mkdir()
    (folder / "memory" / "memfiles.toml").write_text(CONFIG)
    ops = [
        {
            "op": "add",
            "kind": "fact",
            "area": "corpus",
            "title": " ".join(doc["title"].split()) or doc["_id"],
            "body": as_body(doc.get("text", "")) or doc["title"],
            "file": "memory/corpus.md",
        }
        for doc in corpus
    ]
    (folder / "ops.json").write_text(json.dumps({"ops": ops}))
    out = _cli(["memfiles", "--root", str(folder), "import", str(folder / "ops.json"), "--json"])
    added = json.loads(out)["added"]
    return {entry_id: doc["_id"] for entry_id, doc in zip(added, corpus, strict=True)}


def _cli(command: list[str]) -> str:
    binary = Path(sys.executable).parent / command[0]
    result = subprocess.run([str(binary), *command[1:]], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr}")
    return result.stdout


def metrics(ranked: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> tuple[float, float, float]:
    ndcg = recall = mrr = 0.0
    for query, relevant in qrels.items():
        top = ranked.get(query, [])[:10]
        dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(top) if relevant.get(doc, 0) > 0)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(relevant))))
        ndcg += dcg / ideal
        recall += len([d for d in top if d in relevant]) / len(relevant)
        mrr += next((1 / (i + 1) for i, doc in enumerate(top) if doc in relevant), 0.0)
    n = len(qrels)
    return ndcg / n, recall / n, mrr / n


def cacm() -> None:
    corpus = read_jsonl(DATA / "cacm" / "corpus.jsonl")
    queries = {q["_id"]: q["text"] for q in read_jsonl(DATA / "cacm" / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    for line in (DATA / "cacm" / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query, doc, score = line.split("\t")
        qrels.setdefault(query, {})[doc] = int(score)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        start = time.perf_counter()
        to_corpus = make_project(folder, corpus)
        imported = time.perf_counter() - start
        start = time.perf_counter()
        _cli(["memfiles", "--root", str(folder), "backfill"])
        indexed = time.perf_counter() - start
        batch = folder / "queries.jsonl"
        batch.write_text("".join(json.dumps({"id": q, "query": queries[q], "k": 10}) + "\n" for q in qrels))
        print(
            f"CACM: {len(corpus):,} entries, {len(qrels)} judged queries; import {imported:.1f} s, "
            f"backfill {indexed:.1f} s\n"
        )
        print("| ranking (memsearch --batch --mode) | nDCG@10 | recall@10 | MRR@10 | batch time |")
        print("|---|---|---|---|---|")
        for mode in ("lexical", "dense", "hybrid"):
            start = time.perf_counter()
            out = _cli(["memsearch", "--root", str(folder), "--batch", str(batch), "--mode", mode])
            seconds = time.perf_counter() - start
            ranked, scored = {}, []
            for line in out.splitlines():
                item = json.loads(line)
                ranked[str(item["id"])] = [to_corpus[hit["entry"]["id"]] for hit in item["hits"]]
                relevant = qrels.get(str(item["id"]), {})
                scored += [(hit["score"], to_corpus[hit["entry"]["id"]] in relevant) for hit in item["hits"]]
            ndcg, recall, mrr = metrics(ranked, qrels)
            print(f"| {mode} | {ndcg:.3f} | {recall:.3f} | {mrr:.3f} | {seconds:.1f} s |")
            if mode == "hybrid":
                bands = score_bands(scored)
        print("\n| hybrid score (top 10 of each query) | hits | judged relevant |")
        print("|---|---|---|")
        for label, total, relevant in bands:
            print(f"| {label} | {total} | {relevant / total:.0%} |" if total else f"| {label} | 0 | - |")


def score_bands(
    scored: list[tuple[float, bool]], edges: list[tuple[float, float]] | None = None
) -> list[tuple[str, int, int]]:
    """How many hits fall in each score band, and how many of them are judged relevant: what a score means."""
    edges = edges or [(0.0, 0.2), (0.2, 0.5), (0.5, 0.6), (0.6, 1.01)]
    rows = []
    for low, high in edges:
        inside = [relevant for score, relevant in scored if low <= score < high]
        label = f"{low:.1f} to {min(high, 1.0):.1f}" if high <= 1.0 else f"{low:.1f} and above"
        rows.append((label, len(inside), sum(inside)))
    return rows


def calibrate() -> None:
    """MRR@10 of finding a report's duplicate from its title, for several lexical weights."""
    from memfiles.config import load_settings
    from memfiles.index.score import LEXICAL_WEIGHT
    from memfiles.index.search import Searcher
    from memfiles.services.index_session import open_index

    corpus = read_jsonl(DATA / "seamonkey" / "corpus.jsonl")
    by_id = {doc["_id"]: doc for doc in corpus}
    pairs = [line.split("\t") for line in (DATA / "seamonkey" / "dup_pairs.tsv").read_text().splitlines()[1:]]
    pairs = [(a, b) for a, b in pairs if a in by_id and b in by_id]
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        to_corpus = make_project(folder, corpus)
        _cli(["memfiles", "--root", str(folder), "backfill"])
        settings = load_settings(folder)
        print(f"SeaMonkey: {len(corpus):,} reports, {len(pairs)} duplicate pairs (query: one report's title)\n")
        print("| lexical weight | MRR@10 | recall@10 |")
        print("|---|---|---|")
        scored: list[tuple[float, bool]] = []
        with open_index(settings) as session:
            for weight in (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0):
                searcher = Searcher(session.store, session.catalog, session.embedder, lexical_weight=weight)
                mrr = recall = 0.0
                for a, b in pairs:
                    found = [(to_corpus[h.id], h.score) for h in searcher.search(by_id[a]["title"], k=11)]
                    found = [(h, score) for h, score in found if h != a][:10]
                    hits = [h for h, _ in found]
                    recall += b in hits
                    mrr += next((1 / (i + 1) for i, h in enumerate(hits) if h == b), 0.0)
                    if weight == LEXICAL_WEIGHT:
                        scored += [(score, h == b) for h, score in found]
                print(f"| {weight:.1f} | {mrr / len(pairs):.3f} | {recall / len(pairs):.3f} |")
        print("\n| score (top 10 of each title query) | hits | the duplicate |")
        print("|---|---|---|")
        for label, total, relevant in score_bands(scored, [(0.0, 0.5), (0.5, 0.7), (0.7, 1.01)]):
            print(f"| {label} | {total} | {relevant / total:.0%} |" if total else f"| {label} | 0 | - |")


if __name__ == "__main__":
    {"cacm": cacm, "calibrate": calibrate}[sys.argv[1] if len(sys.argv) > 1 else "cacm"]()
