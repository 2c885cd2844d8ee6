"""The score floor of the agent hooks, chosen on labelled data: inject a hit, or not?

A hook injects a hit when its score (docs/json.md, "What a score means": one scale for every query)
reaches `hooks_floor`. This script measures that decision over a range of floors:

  repo   eval/hooks/prompts.jsonl: 75 prompts an agent working on this repository could be given, 45
         labelled with the entries of this repository's memory/ that would help (a copy of it is
         indexed), 30 with nothing relevant. Searched as a hook searches: one filtered search per kind
         (decision, friction, lesson, todo here; procedure, episode, insight in a project with layers),
         the top 3 of each, the floor applied to every hit.
  cacm   the CACM collection's judged queries (../shared/data), top 10 hits each: a public cross-check.

Per hit: precision = injected hits that are relevant / injected hits; recall = relevant hits injected
/ relevant entries labelled. Per prompt: "did a prompt get anything", right when a labelled prompt gets
a relevant entry and an unlabelled one gets nothing. The floor is the one with the best per-hit F1 on
the repo prompts (the higher floor on a tie), fixed before looking at CACM.

    python scripts/eval_hook_floor.py [repo|cacm|all]
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROMPTS = REPO / "eval" / "hooks" / "prompts.jsonl"
FLOORS = [round(0.05 * n, 2) for n in range(4, 17)]  # 0.20 .. 0.80
PER_KIND = 3


def _search_all(folder: Path, items: list[dict]) -> list[list[dict]]:
    """Every item's hits, through one open index (the same search the watcher runs for a hook)."""
    from memfiles.config import load_settings
    from memfiles.services.indexing.index_session import open_index
    from memfiles.services.indexing.searches import search_many

    settings = load_settings(folder)
    with open_index(settings) as session:
        return search_many(session.searcher(), items)


def _backfill(folder: Path) -> None:
    import subprocess

    binary = Path(sys.executable).parent / "memfiles"
    subprocess.run([str(binary), "--root", str(folder), "backfill"], check=True, capture_output=True)


def _table(rows: list[tuple[float, dict]], chosen: float | None) -> None:
    print("| floor | hits injected | hit precision | hit recall | hit F1 | prompts right (labelled / none) |")
    print("|---|---|---|---|---|---|")
    for floor, m in rows:
        mark = " **chosen**" if chosen is not None and abs(floor - chosen) < 1e-9 else ""
        prompts = f"{m['pos_right']}/{m['pos']} / {m['neg_right']}/{m['neg']}" if "pos" in m else "-"
        print(
            f"| {floor:.2f}{mark} | {m['injected']} | {m['precision']:.2f} | {m['recall']:.2f} | "
            f"{m['f1']:.2f} | {prompts} |"
        )


def _measure(scored: list[tuple[str, list[tuple[float, bool]]]], labelled: dict[str, int], floor: float) -> dict:
    injected = relevant_injected = 0
    pos = neg = pos_right = neg_right = 0
    for query, hits in scored:
        shown = [relevant for score, relevant in hits if score >= floor]
        injected += len(shown)
        relevant_injected += sum(shown)
        if labelled[query]:
            pos += 1
            pos_right += any(shown)
        else:
            neg += 1
            neg_right += not shown
    total = sum(labelled.values())
    precision = relevant_injected / injected if injected else 1.0
    recall = relevant_injected / total if total else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    out = {"injected": injected, "precision": precision, "recall": recall, "f1": f1}
    if neg:
        out.update(pos=pos, neg=neg, pos_right=pos_right, neg_right=neg_right)
    return out


def repo() -> float:
    prompts = [json.loads(line) for line in PROMPTS.read_text().splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        shutil.copytree(REPO / "memory", folder / "memory", ignore=shutil.ignore_patterns("working"))
        (folder / "pyproject.toml").write_text("[tool.memfiles]\nstale_days = 120\n")
        _backfill(folder)
        kinds = ("decision", "friction", "lesson", "todo")
        items = [{"query": p["prompt"], "k": PER_KIND, "filters": {"kind": kind}} for p in prompts for kind in kinds]
        results = _search_all(folder, items)
    scored = []
    for n, p in enumerate(prompts):
        hits = [hit for kind_hits in results[n * len(kinds) : (n + 1) * len(kinds)] for hit in kind_hits]
        relevant = set(p["relevant"])
        scored.append((p["id"], [(hit["score"], hit["entry"]["id"] in relevant) for hit in hits]))
    labelled = {p["id"]: len(p["relevant"]) for p in prompts}
    rows = [(floor, _measure(scored, labelled, floor)) for floor in FLOORS]
    best = max(rows, key=lambda row: (round(row[1]["f1"], 6), row[0]))[0]
    positives = sum(1 for p in prompts if p["relevant"])
    print(
        f"repo: {len(prompts)} prompts ({positives} labelled, {len(prompts) - positives} with nothing relevant), "
        f"{sum(labelled.values())} relevant entries; top {PER_KIND} per kind\n"
    )
    _table(rows, best)
    print(f"\nchosen floor (best hit F1): {best:.2f}\n")
    return best


def cacm(chosen: float | None = None) -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    from eval_retrieval import DATA, make_project, read_jsonl

    corpus = read_jsonl(DATA / "cacm" / "corpus.jsonl")
    queries = {q["_id"]: q["text"] for q in read_jsonl(DATA / "cacm" / "queries.jsonl")}
    qrels: dict[str, set[str]] = {}
    for line in (DATA / "cacm" / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query, doc, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(query, set()).add(doc)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        to_corpus = make_project(folder, corpus)
        _backfill(folder)
        order = sorted(qrels)
        results = _search_all(folder, [{"query": queries[q], "k": 10, "filters": {}} for q in order])
    scored = [
        (q, [(hit["score"], to_corpus[hit["entry"]["id"]] in qrels[q]) for hit in hits])
        for q, hits in zip(order, results, strict=True)
    ]
    labelled = {q: len(qrels[q]) for q in order}
    print(f"cacm: {len(order)} judged queries, {sum(labelled.values())} relevant documents; top 10 each\n")
    _table([(floor, _measure(scored, labelled, floor)) for floor in FLOORS], chosen)


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    floor = repo() if which in ("repo", "all") else None
    if which in ("cacm", "all"):
        cacm(floor)
