"""Retrieval quality on public labelled data, measured through memfiles itself (docs/retrieval.md).

  python scripts/eval_retrieval.py loco            # CACM, CISI and SeaMonkey: one table, LOCO folds, experiments
  python scripts/eval_retrieval.py loco --small    # the same on a small subset of each (a smoke run)
  python scripts/eval_retrieval.py loco --only cacm --no-sweep   # one collection's table and score bands

Each collection becomes a memfiles project (`memfiles import`, `memfiles backfill`) queried with
`memsearch --batch`; the baselines (bm25s alone, MiniLM alone, plain RRF k=60 of the two) run in the same
process on the same texts and the same stored vectors. Backfilled projects are cached under
~/.cache/memfiles-eval (or $MEMFILES_EVAL_CACHE), one folder per collection and bulk precision, keyed by
corpus and model, so a second run re-embeds nothing; the BM25 sidecar is dropped on reuse, so the
lexical index always comes from the code measured.
The data is read from ../shared/data (or $MEMFILES_EVAL_DATA); nothing of it is copied into the repo.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# Cold searches stay cold: a memsearch that finds no watcher would otherwise leave one behind.
os.environ.setdefault("MEMFILES_SEARCH_WATCH", "0")

sys.path.insert(0, str(Path(__file__).resolve().parent))

DATA = Path(os.environ.get("MEMFILES_EVAL_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
# Outside any project: a project inside another one is refused (the root rule).
CACHE = Path(os.environ.get("MEMFILES_EVAL_CACHE", Path.home() / ".cache" / "memfiles-eval"))
CONFIG = "title_limit = 300\nbody_limit = 10000\nwrap = 0\n"
NAMES = ["cacm", "cisi", "seamonkey"]
# Never used to choose anything: the shipped ranking's check on data no parameter saw (`--only stsb`).
UNSEEN = ["stsb"]
# STS-B pairs scored this high (4: "mostly equivalent", 5: "completely equivalent") are a query and its answer.
STSB_RELEVANT = 4.0
SMALL_QUERIES, SMALL_OTHERS = 12, 150


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# Control characters (tab and newline aside) a memory file refuses: two CACM abstracts carry U+0019.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def printable(text: str) -> str:
    """`text` with each control character a memory file refuses made a space."""
    return _CONTROL.sub(" ", text)


def as_body(text: str, fence: bool = False) -> str:
    """Public text made fit for an entry body: headings escaped, a fence left open closed, bare URLs
    bracketed. `fence`: the whole text inside a code fence (bug reports quote logs, stack traces and
    setext-looking lines that the lint rule set would refuse as Markdown)."""
    from memfiles.format.grammar import Fence

    text = printable(text)
    if fence:
        lines = [line.replace("\t", "    ").rstrip() for line in text.strip().split("\n")]
        marker = "~" * max(3, 1 + max((len(m) for m in re.findall(r"~+", text)), default=0))
        return "\n".join([marker, *lines, marker]) if any(lines) else ""
    lines = ["\\" + line if line.startswith("#") else line for line in unbare(text).strip().split("\n")]
    fence_state = Fence()
    for number, line in enumerate(lines, start=1):
        fence_state.feed(line, number)
    if fence_state.marker is not None:
        lines.append(fence_state.marker)
    return "\n".join(lines)


def unbare(text: str) -> str:
    """Bare URLs put in angle brackets: the lint rule set refuses a bare URL in an entry (md034)."""
    return re.sub(r"(?<![<(])\bhttps?://[^\s<>()]+", lambda m: f"<{m.group(0)}>", text)


def make_project(folder: Path, corpus: list[dict], fence: bool = False) -> dict[str, str]:
    """A memfiles project holding `corpus` as fact entries; returns entry id -> corpus id."""
    (folder / "memory").mkdir()
    (folder / "memory" / "memfiles.toml").write_text(CONFIG)
    ops = [
        {
            "op": "add",
            "kind": "fact",
            "area": "corpus",
            "title": unbare(" ".join(printable(doc["title"]).split())) or doc["_id"],
            "body": as_body(doc.get("text", ""), fence) or doc["title"],
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


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines()[1:]:
        query, doc, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(query, {})[doc] = int(score)
    return qrels


def load(name: str, small: bool) -> tuple[list[dict], dict[str, str], dict[str, dict[str, int]], dict[str, str]]:
    """A collection's corpus, queries, judgements and excluded hits (SeaMonkey: the report asked from).

    SeaMonkey is duplicate retrieval: each report of a duplicate pair is a query by its title, and the
    other report of the pair is the one relevant entry. STS-B is paraphrase retrieval (_stsb). `small`:
    the first judged queries, their relevant documents and the first other documents.
    """
    exclude: dict[str, str] = {}
    if name == "stsb":
        corpus, queries, qrels = _stsb()
    elif name == "seamonkey":
        corpus = read_jsonl(DATA / name / "corpus.jsonl")
        by_id = {doc["_id"]: doc for doc in corpus}
        qrels = {}
        for line in (DATA / name / "dup_pairs.tsv").read_text().splitlines()[1:]:
            a, b = line.split("\t")
            if a in by_id and b in by_id:
                qrels.setdefault(a, {})[b] = 1
                qrels.setdefault(b, {})[a] = 1
        queries = {q: " ".join(by_id[q]["title"].split()) for q in qrels}
        exclude = {q: q for q in qrels}
    else:
        corpus = read_jsonl(DATA / name / "corpus.jsonl")
        queries = {q["_id"]: q["text"] for q in read_jsonl(DATA / name / "queries.jsonl")}
        qrels = _qrels(DATA / name / "qrels" / "test.tsv")
    if small:
        qrels = {q: qrels[q] for q in sorted(qrels, key=_natural)[:SMALL_QUERIES]}
        keep = {d for rel in qrels.values() for d in rel} | set(qrels if name == "seamonkey" else ())
        others = [doc["_id"] for doc in corpus if doc["_id"] not in keep][:SMALL_OTHERS]
        keep |= set(others)
        corpus = [doc for doc in corpus if doc["_id"] in keep]
        exclude = {q: d for q, d in exclude.items() if q in qrels}
    return corpus, {q: queries[q] for q in qrels}, qrels, exclude


def _stsb() -> tuple[list[dict], dict[str, str], dict[str, dict[str, int]]]:
    """STS-B's dev pairs as paraphrase retrieval: every second sentence is an entry (its title and body),
    a first sentence is a query (not itself in the corpus), and the second sentences it was paired with
    at STSB_RELEVANT or above are its relevant entries; the other second sentences, many of them near
    misses by design ("A man is playing guitar" for "A woman is playing the guitar", 2.4), are not."""
    import csv

    with (DATA / "stsb" / "stsb-en-dev.csv").open(encoding="utf-8", newline="") as handle:
        # a stray backtick would open a code span the lint rule set refuses (md038): written as a quote
        rows = [
            (first.strip().replace("`", "'"), second.strip().replace("`", "'"), float(score))
            for first, second, score in csv.reader(handle)
        ]
    doc_of: dict[str, str] = {}
    for _, second, _ in rows:
        doc_of.setdefault(second, f"s{len(doc_of) + 1}")
    query_of: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for first, second, score in rows:
        if score >= STSB_RELEVANT and first != second:
            qid = query_of.setdefault(first, f"q{len(query_of) + 1}")
            qrels.setdefault(qid, {})[doc_of[second]] = 1
    corpus = [{"_id": doc, "title": text, "text": text} for text, doc in doc_of.items()]
    return corpus, {qid: text for text, qid in query_of.items()}, qrels


def _natural(key: str) -> tuple[int, str]:
    return (int(key), "") if key.isdigit() else (1 << 30, key)


def _bulk_precision() -> str:
    """The precision `memfiles backfill` will encode in here: MEMFILES_BULK_PRECISION, or "auto" resolved."""
    from memfiles.index.bert_torch import native_bfloat16

    chosen = os.environ.get("MEMFILES_BULK_PRECISION", "auto")
    if chosen == "auto":
        return "bfloat16" if native_bfloat16() else "float32"
    return chosen


def cache_folder(name: str, small: bool = False, precision: str | None = None) -> Path:
    """Where the backfilled project of collection `name` is cached: one folder per bulk precision, so
    that a run on a machine with AMX (bfloat16) leaves the float32 vectors of another machine's run in
    place (F-040). `precision`: the one `memfiles backfill` will use here when not given."""
    precision = precision or _bulk_precision()
    return CACHE / f"{name}{'-small' if small else ''}{'' if precision == 'float32' else '-' + precision}"


def project(name: str, corpus: list[dict], small: bool) -> tuple[Path, dict[str, str]]:
    """A backfilled project holding `corpus`, reused from the cache when it holds the same corpus and model."""
    from memfiles.index.embedder import resolve_model

    model, _ = resolve_model(None)
    # The stored vectors depend on the precision the bulk encode ran in (bulk_precision: bfloat16 where the
    # CPU has AMX): a cache built in one is not reused for the other.
    precision = _bulk_precision()
    keyed = [corpus, model, CONFIG] + ([precision] if precision != "float32" else [])  # float32: as before
    key = hashlib.sha256(json.dumps(keyed).encode()).hexdigest()[:16]
    folder = cache_folder(name, small, precision)
    marker = folder / "ready.json"
    if marker.exists() and json.loads(marker.read_text()).get("key") == key:
        for stale in folder.glob(".memsearch/**/bm25*"):  # the lexical index comes from the code measured
            stale.unlink()
        return folder, json.loads(marker.read_text())["to_corpus"]
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    to_corpus = make_project(folder, corpus, fence=name == "seamonkey")
    _cli(["memfiles", "--root", str(folder), "backfill"])
    marker.write_text(json.dumps({"key": key, "to_corpus": to_corpus}))
    return folder, to_corpus


def run_cli(folder: Path, to_corpus, queries, exclude, mode: str) -> tuple[dict[str, list[str]], list]:
    """`memsearch --batch` over every query: the top 10 corpus ids (the excluded one dropped), and
    (score, id) of each hit for the score bands."""
    batch = folder / "queries.jsonl"
    batch.write_text("".join(json.dumps({"id": q, "query": text, "k": 11}) + "\n" for q, text in queries.items()))
    out = _cli(["memsearch", "--root", str(folder), "--batch", str(batch), "--mode", mode])
    ranked, scored = {}, {}
    for line in out.splitlines():
        item = json.loads(line)
        qid = str(item["id"])
        hits = [(to_corpus[h["entry"]["id"]], h["score"]) for h in item["hits"]]
        hits = [(doc, score) for doc, score in hits if doc != exclude.get(qid)][:10]
        ranked[qid], scored[qid] = [doc for doc, _ in hits], hits
    return ranked, scored


def figures(ranked: dict[str, list[str]], qrels) -> tuple[float, float, float]:
    from retrieval_sweep import per_query

    totals = [per_query(ranked.get(q, []), rel) for q, rel in qrels.items()]
    return tuple(sum(t[i] for t in totals) / len(totals) for i in range(3))  # type: ignore[return-value]


def baselines(folder: Path, to_corpus, corpus, queries, exclude) -> dict[str, dict[str, list[str]]]:
    """bm25s alone (its defaults, English stop words and stemmer), MiniLM alone (the raw query against the
    stored vectors memfiles searches), and plain RRF (k=60) of their top 100: same texts, same run."""
    import bm25s
    import numpy as np
    import Stemmer

    from memfiles.config import load_settings
    from memfiles.services.indexing.index_session import open_index

    ids = [doc["_id"] for doc in corpus]
    stemmer = Stemmer.Stemmer("english")
    texts = [f"{doc['title']}\n\n{doc.get('text', '')}" for doc in corpus]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    qids = list(queries)
    tokens = bm25s.tokenize([queries[q] for q in qids], stopwords="en", stemmer=stemmer, show_progress=False)
    found, _ = retriever.retrieve(tokens, k=min(101, len(ids)), show_progress=False)
    with open_index(load_settings(folder)) as session:
        stored = session.store.vectors(list(to_corpus))
        by_corpus = {to_corpus[i]: v for i, v in stored.items()}
        matrix = np.asarray([by_corpus[i] for i in ids], dtype=np.float32)
        cosine = session.embedder.encode([queries[q] for q in qids]) @ matrix.T
    out: dict[str, dict[str, list[str]]] = {"bm25s": {}, "MiniLM": {}, "RRF k=60": {}}
    for n, qid in enumerate(qids):
        lexical = [ids[r] for r in found[n] if ids[r] != exclude.get(qid)][:100]
        dense = [ids[r] for r in np.argsort(-cosine[n])[:101] if ids[r] != exclude.get(qid)][:100]
        fused: dict[str, float] = {}
        for ranking in (lexical, dense):
            for rank, doc in enumerate(ranking):
                fused[doc] = fused.get(doc, 0.0) + 1 / (60 + rank + 1)
        out["bm25s"][qid], out["MiniLM"][qid] = lexical[:10], dense[:10]
        out["RRF k=60"][qid] = sorted(fused, key=lambda d: -fused[d])[:10]
    return out


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


def defaults():
    """The ranking memfiles ships, as a point of the grid."""
    from retrieval_sweep import Setting

    from memfiles.index import lexical, score, search

    return Setting(
        search.STRIP_FRAMING,
        lexical.K1,
        lexical.B,
        lexical.TITLE_WEIGHT,
        score.LEXICAL_WEIGHT,
        search.DEPTH,
        score.FUSION,
        neighbours=score.NEIGHBOURS if score.NEIGHBOUR_WEIGHT else 0,
        neighbour_weight=score.NEIGHBOUR_WEIGHT,
    )


def plain(setting) -> bool:
    """A setting of the ranking as the index has it: no passages, no feedback of either kind."""
    return plain_or_passages(setting) and not setting.passages


def plain_or_passages(setting) -> bool:
    """A setting of the ranking as the index has it, or the same with the dense signal scored by best
    passage (`--passages`)."""
    return not setting.prf and not setting.rm3_docs and not setting.adaptive and not setting.sentences


def plain_or_sentences(setting) -> bool:
    """A setting of the ranking as the index has it, or the same with a long request's dense signal
    mixed with its best sentence's (`--sentences`)."""
    return not setting.prf and not setting.rm3_docs and not setting.adaptive and not setting.passages


# Every parameter free but score regularisation (the rows of the sessions before it).
FREE_BUT_NEIGHBOURS = dict(weight=1, k1=1, b=1, title_weight=1, depth=1, framing=1, method=1)


def experiments(
    results,
    names,
    rrf: dict[str, float],
    passages: bool,
    prf: bool = False,
    rm3: bool = False,
    adaptive: bool = False,
    sentences: bool = False,
) -> None:
    """Held-out nDCG@10 of each idea: parameters chosen by LOCO among the settings it allows."""
    from retrieval_sweep import best, loco

    old = dict(
        framing=True,
        k1=1.2,
        b=0.75,
        title_weight=2,
        depth=100,
        method="minmax",
        passages=False,
        sentences=False,
        prf=0.0,
        rm3_docs=0,
        neighbours=0,
        adaptive=0.0,
    )

    def fixed(**free):
        return lambda s: all(getattr(s, k) == v for k, v in old.items() if k not in free)

    rows = [
        ("old ranking (w 0.6 k1 1.2 b 0.75 title×2 depth 100 min-max), nothing chosen", None),
        ("LOCO: lexical weight only", fixed(weight=1)),
        ("LOCO: weight + BM25 k1, b, title weight", fixed(weight=1, k1=1, b=1, title_weight=1)),
        ("LOCO: weight + BM25 + depth", fixed(weight=1, k1=1, b=1, title_weight=1, depth=1)),
        (
            "LOCO: weight + BM25 + depth + framing on/off",
            fixed(weight=1, k1=1, b=1, title_weight=1, depth=1, framing=1),
        ),
        (
            "LOCO: all, z-score fusion",
            lambda s: (
                fixed(weight=1, k1=1, b=1, title_weight=1, depth=1, framing=1, method=1)(s) and s.method == "zscore"
            ),
        ),
        ("LOCO: everything but neighbours (fusion min-max / z-score / weighted RRF)", fixed(**FREE_BUT_NEIGHBOURS)),
        (
            "LOCO: everything but neighbours, framing forced off",
            lambda s: fixed(**FREE_BUT_NEIGHBOURS)(s) and not s.framing,
        ),
        ("LOCO: everything + neighbours (on or off, k and share chosen too)", plain),
        ("LOCO: everything, neighbours forced on", lambda s: plain(s) and s.neighbours > 0),
        ("LOCO: everything + neighbours, framing forced off", lambda s: plain(s) and not s.framing),
        (
            "LOCO: everything min-max + neighbours, framing forced off",
            lambda s: plain(s) and not s.framing and s.method == "minmax",
        ),
    ]
    if passages:
        # The rule (thirteenth session, written before this run's numbers): scoring an entry by its best
        # passage is worth storing passages in the index only if the first row below beats "everything +
        # neighbours" of the same run on every held-out collection.
        rows.append(("LOCO: everything + neighbours + best passage (chosen or not)", plain_or_passages))
        rows.append(
            ("LOCO: everything + neighbours, dense = best passage", lambda s: plain_or_passages(s) and s.passages)
        )
    if sentences:
        # The rule (fourteenth session, try_query_sentences.py, written before any of its numbers): a long
        # request read by its best sentence too ships only if the first row below is at least
        # "everything + neighbours" of the same run on every held-out collection, and higher more often
        # than lower on the same bootstrap resamplings (bootstrap_passages.py --idea sentences).
        rows.append(("LOCO: everything + neighbours + best sentence (chosen or not)", plain_or_sentences))
        rows.append(
            ("LOCO: everything + neighbours, best sentence forced on", lambda s: plain_or_sentences(s) and s.sentences)
        )
    if prf:
        rows.append(
            (
                "LOCO: everything + dense PRF (β 0, 0.5 or 1 chosen too)",
                lambda s: not s.passages and not s.rm3_docs and not s.sentences,
            )
        )
        rows.append(("LOCO: everything, dense PRF forced on (β chosen)", lambda s: s.prf > 0 and not s.rm3_docs))
        rows.append(
            (
                "LOCO: everything min-max, dense PRF forced on",
                lambda s: s.prf > 0 and s.method == "minmax" and not s.rm3_docs,
            )
        )
    if rm3:
        rows.append(
            ("LOCO: everything + RM3 (chosen or not)", lambda s: not s.passages and not s.prf and not s.sentences)
        )
        rows.append(("LOCO: everything, RM3 forced on", lambda s: s.rm3_docs > 0 and not s.prf))
        rows.append(
            ("LOCO: everything min-max, RM3 forced on", lambda s: s.rm3_docs > 0 and not s.prf and s.method == "minmax")
        )
        rows.append(
            ("LOCO: everything, RM3 forced on, framing off", lambda s: s.rm3_docs > 0 and not s.prf and not s.framing)
        )
    if adaptive:

        def plain_but_adaptive(s) -> bool:
            return not s.passages and not s.prf and not s.rm3_docs and not s.sentences

        rows.append(("LOCO: everything + neighbours + adaptive weight (g 0, 0.5 or 1 chosen too)", plain_but_adaptive))
        rows.append(
            ("LOCO: everything + neighbours, adaptive weight forced on", lambda s: plain_but_adaptive(s) and s.adaptive)
        )
    if rm3 and prf:
        rows.append(
            ("LOCO: everything + RM3 + dense PRF (each chosen or not)", lambda s: not s.passages and not s.sentences)
        )
        rows.append(("LOCO: everything, RM3 and dense PRF both forced on", lambda s: s.rm3_docs > 0 and s.prf > 0))

    # chosen by the worst ratio to RRF over the training collections, not the mean nDCG@10
    worst = dict(objective=lambda figures, name: figures[0] / rrf[name], combine=min)

    from memfiles.index.search import DEPTH

    rows += [
        (
            f"LOCO: everything + neighbours, depth {DEPTH} only (the shipped depth)",
            lambda s: plain(s) and s.depth == DEPTH,
        ),
        (
            f"LOCO: everything + neighbours, depth {DEPTH} only, framing forced off",
            lambda s: plain(s) and s.depth == DEPTH and not s.framing,
        ),
        ("LOCO by the worst training ratio: everything + neighbours", plain, worst),
        (
            "LOCO by the worst training ratio: everything + neighbours, framing off",
            lambda s: plain(s) and not s.framing,
            worst,
        ),
        ("LOCO by the worst training ratio: everything but neighbours", fixed(**FREE_BUT_NEIGHBOURS), worst),
    ]
    print("\n| experiment (held-out nDCG@10, ÷ same-run RRF) | " + " | ".join(names) + " | mean ratio |")
    print("|---|" + "---|" * (len(names) + 1))
    choices = []
    for label, allowed, *how in rows:
        choice = how[0] if how else {}
        if allowed is None:
            setting = next((s for s in results if fixed()(s) and s.weight == 0.6), None)
            if setting is None:
                continue
            held = [results[setting][n][0] for n in names]
        elif not any(allowed(s) for s in results):
            continue
        else:
            folds = loco(results, names, allowed, **choice)
            held = [figures[0] for _, _, figures in folds]
            choices.append((label, folds))
        ratios = [h / rrf[n] for h, n in zip(held, names, strict=True)]
        cells = " | ".join(f"{h:.3f} ({r:.3f}×)" for h, r in zip(held, ratios, strict=True))
        print(f"| {label} | {cells} | {sum(ratios) / len(ratios):.3f}× |")
    print("\n| experiment | held out | parameters chosen on the other two |")
    print("|---|---|---|")
    for label, folds in choices:
        for held_out, setting, _ in folds:
            print(f"| {label} | {held_out} | {setting.label()} |")

    def on_each(setting) -> str:  # not held out: these settings are chosen on all three
        if setting not in results:
            return ""
        return " (" + ", ".join(f"{n} {results[setting][n][0] / rrf[n]:.3f}×" for n in names) + ", not held out)"

    chosen = best(results, names, plain)
    print(f"\nThe rule's choice (best mean nDCG@10 over all folds' training sets): {chosen.label()}{on_each(chosen)}")
    at_depth = best(results, names, lambda s: plain(s) and s.depth == DEPTH)
    print(f"The rule's choice at the shipped depth ({DEPTH}): {at_depth.label()}{on_each(at_depth)}")
    print(f"Shipped now: {defaults().label()}{on_each(defaults())}")


def ndcg_of_each(ranked: dict[str, list[str]], qrels) -> list[float]:
    """nDCG@10 of each judged query, in the order of `qrels`."""
    from retrieval_sweep import per_query

    return [per_query(ranked.get(q, []), rel)[0] for q, rel in qrels.items()]


def uncertainty(queries_of, rrf_queries, names: list[str], resamples: int) -> None:
    """The held-out ratios under query resampling, the LOCO choice redone on every sample."""
    import numpy as np
    from retrieval_sweep import bootstrap_loco

    if not resamples:
        return
    rrf = {n: np.asarray(rrf_queries[n]) for n in names}
    ratios = bootstrap_loco(queries_of, rrf, names, plain, resamples)
    print(
        f"\nHow much the held-out ratios depend on which queries were judged ({resamples} bootstrap samples of"
        " each collection's queries, drawn with replacement; every fold's choice made again on each sample):\n"
    )
    print("| held out | median ÷ RRF | 95% of samples between | samples ≥ 1.00× | samples ≥ 1.05× |")
    print("|---|---|---|---|---|")
    for name in names:
        r = ratios[name]
        low, mid, high = np.percentile(r, [2.5, 50, 97.5])
        print(
            f"| {name} | {mid:.3f}× | {low:.3f}× to {high:.3f}× | {np.mean(r >= 1.0):.0%} | {np.mean(r >= 1.05):.0%} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["loco"])
    parser.add_argument("--small", action="store_true", help="a subset of each collection (a smoke run)")
    parser.add_argument(
        "--only",
        action="append",
        choices=NAMES + UNSEEN,
        help="these collections only (stsb: never used to choose a parameter; with --no-sweep)",
    )
    parser.add_argument("--no-sweep", action="store_true", help="the table only: no grid, no LOCO folds")
    parser.add_argument("--all-modes", action="store_true", help="also memsearch --mode lexical and dense")
    parser.add_argument("--passages", action="store_true", help="also try scoring an entry by its best passage")
    parser.add_argument(
        "--sentences", action="store_true", help="also try a long request's best sentence on the dense side"
    )
    parser.add_argument("--prf", action="store_true", help="also try dense pseudo-relevance feedback")
    parser.add_argument("--rm3", action="store_true", help="also try lexical pseudo-relevance feedback (RM3)")
    parser.add_argument(
        "--adaptive", action="store_true", help="also try a per-query lexical weight from the score distributions"
    )
    parser.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="processes the parameter sweep is shared among"
    )
    parser.add_argument(
        "--resamples", type=int, default=1000, help="bootstrap samples of the held-out ratios (0: none)"
    )
    parser.add_argument("--save-sweep", type=Path, help="also pickle every setting's figures and the baselines here")
    args = parser.parse_args()
    from retrieval_sweep import Setting, grid, loco, prepare, sweep

    names = args.only or NAMES
    table: dict[str, dict[str, tuple]] = {}
    bands, prepared = {}, []
    rrf_queries: dict = {}  # collection -> the plain RRF's nDCG@10 of each judged query
    for name in names:
        corpus, queries, qrels, exclude = load(name, args.small)
        folder, to_corpus = project(name, corpus, args.small)
        table[name] = {}
        for mode in ("hybrid", "lexical", "dense") if args.all_modes else ("hybrid",):
            ranked, scored = run_cli(folder, to_corpus, queries, exclude, mode)
            table[name][f"memfiles {mode} (CLI)"] = figures(ranked, qrels)
            if mode == "hybrid":
                bands[name] = [(s, doc in qrels[q]) for q, hits in scored.items() for doc, s in hits]
        for label, ranked in baselines(folder, to_corpus, corpus, queries, exclude).items():
            table[name][label] = figures(ranked, qrels)
            if label == "RRF k=60":
                rrf_queries[name] = ndcg_of_each(ranked, qrels)
        print(f"{name}: {len(corpus):,} entries, {len(qrels)} judged queries", file=sys.stderr)
        if not args.no_sweep:
            prepared.append(
                prepare(
                    name,
                    folder,
                    to_corpus,
                    queries,
                    qrels,
                    exclude,
                    args.passages,
                    args.small,
                    args.rm3,
                    sentences=args.sentences,
                )
            )
    results = folds = None
    if prepared:
        from tqdm import tqdm

        settings = grid(
            args.passages,
            small=args.small,
            prf=args.prf,
            rm3=args.rm3,
            adaptive=args.adaptive,
            sentences=args.sentences,
        )
        queries_of: dict = {}
        results = sweep(
            prepared,
            settings,
            lambda items, **total: tqdm(items, disable=not sys.stderr.isatty(), **total),
            queries_of,
            workers=args.workers,
        )
        if args.save_sweep:
            import pickle

            baseline_figures = {n: {k: v for k, v in table[n].items() if "(CLI)" not in k} for n in names}
            args.save_sweep.write_bytes(
                pickle.dumps(
                    {"results": results, "baselines": baseline_figures, "queries": queries_of, "rrf": rrf_queries}
                )
            )
        shipped = defaults()
        for name in names:
            table[name]["memfiles hybrid, shipped defaults (sweep)"] = results[shipped][name]
        if len(names) > 1:
            folds = loco(results, names, plain)
            for held, _, held_figures in folds:
                table[held]["memfiles hybrid, parameters from the other two (LOCO)"] = held_figures
    print("| collection | ranking | nDCG@10 | recall@10 | MRR@10 | nDCG@10 ÷ RRF |")
    print("|---|---|---|---|---|---|")
    for name in names:
        rrf = table[name]["RRF k=60"][0]
        for label, (ndcg, recall, mrr) in table[name].items():
            print(f"| {name} | {label} | {ndcg:.3f} | {recall:.3f} | {mrr:.3f} | {ndcg / rrf:.3f}× |")
    if folds:
        print("\n| held out | parameters chosen on the other two | held-out nDCG@10 | ÷ RRF |")
        print("|---|---|---|---|")
        for held, chosen, held_figures in folds:
            ratio = held_figures[0] / table[held]["RRF k=60"][0]
            print(f"| {held} | {chosen.label()} | {held_figures[0]:.3f} | {ratio:.3f}× |")
        if len(names) > 1:
            uncertainty(queries_of, rrf_queries, names, args.resamples)
        if not args.small:
            rrf = {n: table[n]["RRF k=60"][0] for n in names}
            experiments(results, names, rrf, args.passages, args.prf, args.rm3, args.adaptive, args.sentences)
    for name in names:
        print(f"\n| {name}: hybrid score (CLI, top 10 of each query) | hits | judged relevant |")
        print("|---|---|---|")
        for label, total, relevant in score_bands(bands[name]):
            print(f"| {label} | {total} | {relevant / total:.0%} |" if total else f"| {label} | 0 | - |")
    del Setting


if __name__ == "__main__":
    main()
