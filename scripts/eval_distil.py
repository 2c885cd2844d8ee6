"""Score the distiller on labelled experience logs: does each run land on the entry it belongs to?

  python scripts/eval_distil.py [--data eval/distil] [--lexical] [--json] [--keep] [--domain D ...]
  python scripts/eval_distil.py --shipped      # every domain with the shipped weights, through the CLI
  python scripts/eval_distil.py --fit          # the weights chosen on every domain (the shipped ones)

For each domain of the evaluation set (eval/distil/<domain>/batch*.jsonl, seed.json, truth.json), a
fresh project is made; seed.json (entries written by hand) is imported; then each batch is appended to
memory/<domain>/experiences.jsonl and the distiller runs after it. At the end the knowledge file is
read back and compared with the ground truth:

- assignments: every (run, entry, relation) the file records, relation being evidence (confirms),
  failed (did not reach signoff) or contradicted (a different fix reached signoff). Produced entries are
  matched to expected ones by title (flag entries by the flag they name). Precision and recall are over
  these triples; "placement" ignores the relation (the run is on the right entry).
- entries: expected ones found, missing ones, extra ones, and duplicates (an extra entry whose runs
  belong to an expected one).
- counters: entries whose `confirmed`, `evidence` and body "Seen in N runs" disagree (must be 0).
- bodies: notes of another issue in an entry's body (each truth entry may list words its body must not hold).
- warnings: the malformed lines and bad metrics the log holds, each named with its line.
- idempotence: one more distillation with no new records changes no byte.

**Leave one domain out** (the default): the evidence weights and threshold (services/distiller/signals.py) are
chosen by scripts/distil_fit.py on every other domain, and the domain is distilled with them (by
distil_domain, the function `memfiles distil` calls): no figure of a domain comes from weights chosen
on it. `--shipped` runs every domain through the real CLI with the weights the distiller ships (chosen
on all domains: not held out). The chip-design domains were written first (routing after the first
rules were frozen; soc holds a walk-through's traps), ci, oncall, pipeline and training for issue 37
(training after the method was frozen, and run once before the last changes: docs/distiller.md); the
same person wrote the distiller and the logs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from memfiles.config import load_settings
from memfiles.format.parse import parse
from memfiles.services.distiller.distill import distil_domain
from memfiles.services.distiller.flags import find_flags
from memfiles.services.distiller.knowledge import parse_contradictions
from memfiles.services.distiller.signals import WEIGHTS, Weights
from memfiles.store.project import Project

sys.path.insert(0, str(Path(__file__).resolve().parent))
import distil_fit  # scripts/distil_fit.py, beside this one

DATA = Path(__file__).resolve().parent.parent / "eval" / "distil"
RELATIONS = ("evidence", "failed", "contradicted")


ENV = dict(os.environ)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    binary = Path(sys.executable).parent / "memfiles"
    return subprocess.run([str(binary), *args], capture_output=True, text=True, check=False, env=ENV)


def _match(truth: dict, entries: list, sections: dict[str, str | None]) -> dict[str, str]:
    """Produced entry id -> expected entry key."""
    mapping: dict[str, str] = {}
    for key, spec in truth["entries"].items():
        for entry in entries:
            if entry.id in mapping or sections[entry.id] != spec["section"]:
                continue
            if "title" in spec:
                title = entry.title.rstrip("…").lower()
                if title and spec["title"].lower().startswith(title) and len(title) >= min(60, len(spec["title"])):
                    mapping[entry.id] = key
                    break
            elif any(f.key == spec["flag"] for f in find_flags(entry.title)):
                mapping[entry.id] = key
                break
    return mapping


def _counter_problems(entry) -> list[str]:  # type: ignore[no-untyped-def]
    problems = []
    if entry.confirmed is not None and entry.confirmed != str(len(entry.evidence)):
        problems.append(f"{entry.id}: confirmed {entry.confirmed} but {len(entry.evidence)} runs in evidence")
    flat = " ".join(entry.body.split())
    seen = re.search(r"Seen in (\d+) ", flat)
    if seen and int(seen.group(1)) != len(entry.evidence):
        problems.append(f"{entry.id}: body says Seen in {seen.group(1)} runs, evidence has {len(entry.evidence)}")
    failed = re.search(r"(\d+) runs? (?:with this symptom|that used it) did not reach signoff", flat)
    if failed and int(failed.group(1)) != len(entry.failed):
        problems.append(f"{entry.id}: body counts {failed.group(1)} failures, failed has {len(entry.failed)}")
    return problems


def _expected_warnings(folder: Path, truth: dict) -> list[tuple[int, str]]:
    """(line in the combined log, key or '') of each expected warning, from 'batchN.jsonl:L[: key]'."""
    offsets, total = {}, 0
    for batch in sorted(folder.glob("batch*.jsonl")):
        offsets[batch.name] = total
        total += len(batch.read_text().splitlines())
    expected = []
    for item in truth.get("warnings", []):
        name, line, *key = item.split(":")
        expected.append((offsets[name] + int(line), key[0].strip() if key else ""))
    return expected


def _distil(root: Path, domain: str, weights: Weights | None, lexical: bool) -> tuple[bool, str]:
    """One distillation: through the CLI (weights None: the shipped ones), or in this process with
    `weights`. (whether it succeeded, its warnings)"""
    if weights is None:
        result = _cli("--root", str(root), "distil", "--domain", domain, "--json")
        return result.returncode == 0, result.stderr
    report = distil_domain(Project(load_settings(root)), domain, weights=weights, use_model=not lexical)
    return True, "\n".join(report.warnings)


def evaluate_domain(folder: Path, keep: bool = False, weights: Weights | None = None, lexical: bool = False) -> dict:
    domain = folder.name
    truth = json.loads((folder.parent / "truth.json").read_text())[domain]
    root = Path(tempfile.mkdtemp(prefix=f"eval-distil-{domain}-"))
    try:
        (root / "memory" / domain).mkdir(parents=True)
        if (folder / "seed.json").exists():
            result = _cli("--root", str(root), "import", str(folder / "seed.json"))
            if result.returncode:
                raise SystemExit(f"seed import failed: {result.stderr}")
        log = root / "memory" / domain / "experiences.jsonl"
        stderr = ""
        batches = sorted(folder.glob("batch*.jsonl"))
        for batch in batches:
            with log.open("a", encoding="utf-8") as out:
                out.write(batch.read_text(encoding="utf-8"))
            ok, stderr = _distil(root, domain, weights, lexical)
            if not ok:
                raise SystemExit(f"distil failed after {batch.name}: {stderr}")
        knowledge = root / "memory" / domain / "knowledge.md"
        before = knowledge.read_bytes()
        ok, _ = _distil(root, domain, weights, lexical)
        idempotent = ok and knowledge.read_bytes() == before
        memory = parse(before.decode("utf-8"))
        return _score(truth, memory, stderr, _expected_warnings(folder, truth), idempotent, len(batches))
    finally:
        if keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


def _score(truth: dict, memory, stderr: str, warnings: list, idempotent: bool, batches: int) -> dict:  # type: ignore[no-untyped-def]
    entries = memory.entries
    sections = {e.id: memory.section_of(e.id) for e in entries}
    mapping = _match(truth, entries, sections)
    produced: set[tuple[str, str, str]] = set()
    for entry in entries:
        key = mapping.get(entry.id, f"extra:{entry.id}")
        for run in entry.evidence:
            produced.add((run, key, "evidence"))
        for run in entry.failed:
            produced.add((run, key, "failed"))
        for item in parse_contradictions(entry.contradicted):
            # A free-form note (an older distiller's) names its runs somewhere in its text.
            runs = item.runs or [r for r in truth["runs"] if re.search(rf"(?<![\w-]){re.escape(r)}(?![\w-])", item.fix)]
            for run in runs:
                produced.add((run, key, "contradicted"))
    expected = {(run, key, rel) for run, pairs in truth["runs"].items() for key, rel in pairs}
    hits = produced & expected
    placed = {(r, k) for r, k, _ in produced} & {(r, k) for r, k, _ in expected}
    extra = [e for e in entries if e.id not in mapping]
    duplicates = []
    for entry in extra:
        runs = {r for r, k, _ in produced if k == f"extra:{entry.id}"}
        owners = {k for r, k, _ in expected if r in runs and truth["entries"][k]["section"] == sections[entry.id]}
        if len(owners) == 1:
            duplicates.append(f"{entry.id} {entry.title!r} (belongs to {owners.pop()})")
    body_problems = []
    for entry in entries:
        spec = truth["entries"].get(mapping.get(entry.id, ""), {})
        for word in spec.get("body_excludes", []):
            if word.lower() in entry.body.lower():
                body_problems.append(f"{entry.id}: body holds {word!r}, a note of another issue")
    contradictions = {}
    for entry in entries:
        if entry.id in mapping:
            contradictions[mapping[entry.id]] = len([c for c in parse_contradictions(entry.contradicted) if c.runs])
    wrong_contradictions = {
        k: (contradictions.get(k, 0), n)
        for k, n in truth.get("contradictions", {}).items()
        if contradictions.get(k) != n
    }
    lines = stderr.splitlines()
    missed_warnings = [
        f"line {line} {key}".strip()
        for line, key in warnings
        if not any(f"experiences.jsonl:{line}:" in text and key in text for text in lines)
    ]
    return {
        "records": len(truth["runs"]),
        "batches": batches,
        "expected": len(expected),
        "produced": len(produced),
        "precision": len(hits) / len(produced) if produced else 0.0,
        "recall": len(hits) / len(expected) if expected else 0.0,
        "placement_precision": len(placed) / len({(r, k) for r, k, _ in produced}) if produced else 0.0,
        "placement_recall": len(placed) / len({(r, k) for r, k, _ in expected}) if expected else 0.0,
        "entries_expected": len(truth["entries"]),
        "entries_found": len(set(mapping.values())),
        "missing": sorted(set(truth["entries"]) - set(mapping.values())),
        "extra": [f"{e.id} {e.title!r}" for e in extra],
        "duplicates": duplicates,
        "wrong": sorted(f"{r} {k} {rel}" for r, k, rel in produced - expected),
        "lost": sorted(f"{r} {k} {rel}" for r, k, rel in expected - produced),
        "counter_problems": [p for e in entries for p in _counter_problems(e)],
        "body_problems": body_problems,
        "wrong_contradiction_counts": wrong_contradictions,
        "missed_warnings": missed_warnings,
        "idempotent": idempotent,
    }


def stsb() -> None:
    """Where the matching thresholds come from: precision and recall on STS-B's dev pairs of "the same
    statement" (human score 4+, and 3+) at each cosine and word-overlap threshold."""
    import csv

    import numpy as np

    from memfiles.index.embedder import load_embedder
    from memfiles.services.upkeep.dedupe import jaccard, words

    data = Path(os.environ.get("MEMFILES_EVAL_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    rows = list(csv.reader((data / "stsb" / "stsb-en-dev.csv").open(encoding="utf-8")))
    model = load_embedder(None, light=False)
    left, right = model.encode([r[0] for r in rows]), model.encode([r[1] for r in rows])
    signals = {
        "cosine": (left * right).sum(1),
        "word overlap": np.array([jaccard(words(r[0]), words(r[1])) for r in rows]),
    }
    scores = np.array([float(r[2]) for r in rows])
    print(f"STS-B dev: {len(rows)} pairs; P / R of 'the same statement' at each threshold\n")
    print("| signal | threshold | P (score 4+) | R (score 4+) | P (score 3+) | R (score 3+) |")
    print("|---|---|---|---|---|---|")
    for name, values in signals.items():
        for threshold in (0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85):
            flagged = values >= threshold
            cells = []
            for level in (4.0, 3.0):
                same = scores >= level
                hits = (flagged & same).sum()
                cells += [f"{hits / max(1, flagged.sum()):.2f}", f"{hits / same.sum():.2f}"]
            print(f"| {name} | {threshold:.2f} | {' | '.join(cells)} |")


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def _totals(results: dict[str, dict]) -> dict:
    totals = {
        key: sum(r[key] for r in results.values())
        for key in ("records", "expected", "produced", "entries_expected", "entries_found")
    }
    hits = sum(r["precision"] * r["produced"] for r in results.values())
    totals["precision"] = hits / totals["produced"] if totals["produced"] else 0.0
    totals["recall"] = hits / totals["expected"] if totals["expected"] else 0.0
    for key in ("missing", "extra", "duplicates", "wrong", "lost", "counter_problems", "body_problems"):
        totals[key] = sum(len(r[key]) for r in results.values())
    totals["idempotent"] = all(r["idempotent"] for r in results.values())
    return totals


def _goal(r: dict) -> str:
    met = r["precision"] >= 0.95 and r["recall"] >= 0.90 and not r["duplicates"]
    return "yes" if met else "NO"


def _print(results: dict[str, dict], totals: dict, held_out: bool) -> None:
    weights = "| weights (fix / rare / same / other) " if held_out else ""
    print(
        f"| domain {weights}| records | batches | precision | recall | F1 | on the right entry (P / R) "
        "| entries found | missing | extra | duplicates | counters off | mixed bodies | idempotent | goal |"
    )
    print("|---" * (15 + bool(held_out)) + "|")
    for name, r in results.items():
        w = r.get("weights")
        cell = f"| {w['fix']:.2f} / {w['rare']:.2f} / {w['same']:.2f} / {w['other']:.2f} " if held_out else ""
        print(
            f"| {name} {cell}| {r['records']} | {r['batches']} | {r['precision']:.3f} | {r['recall']:.3f} "
            f"| {_f1(r['precision'], r['recall']):.3f} | {r['placement_precision']:.3f} / {r['placement_recall']:.3f} "
            f"| {r['entries_found']} of {r['entries_expected']} | {len(r['missing'])} | {len(r['extra'])} "
            f"| {len(r['duplicates'])} | {len(r['counter_problems'])} | {len(r['body_problems'])} "
            f"| {'yes' if r['idempotent'] else 'NO'} | {_goal(r)} |"
        )
    t = totals
    print(
        f"| all {'| ' if held_out else ''}| {t['records']} | | {t['precision']:.3f} | {t['recall']:.3f} "
        f"| {_f1(t['precision'], t['recall']):.3f} | | {t['entries_found']} of {t['entries_expected']} "
        f"| {t['missing']} | {t['extra']} | {t['duplicates']} | {t['counter_problems']} | {t['body_problems']} "
        f"| {'yes' if t['idempotent'] else 'NO'} | |"
    )
    for name, r in results.items():
        for label in LABELS:
            for item in r[label]:
                print(f"{name}: {label}: {item}")
        for key, (got, want) in r["wrong_contradiction_counts"].items():
            print(f"{name}: contradictions on {key}: {got}, expected {want}")


LABELS = ("missing", "extra", "duplicates", "wrong", "lost", "counter_problems", "body_problems", "missed_warnings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--json", action="store_true", help="Print every figure and problem as JSON.")
    parser.add_argument("--keep", action="store_true", help="Keep the temporary projects (their paths go to stderr).")
    parser.add_argument("--domain", action="append", help="Only report this domain (repeatable).")
    parser.add_argument("--lexical", action="store_true", help="Without the model: symptoms matched by word overlap.")
    parser.add_argument("--shipped", action="store_true", help="The shipped weights, through the CLI (not held out).")
    parser.add_argument("--fit", action="store_true", help="Print the weights chosen on every domain, and stop.")
    parser.add_argument(
        "--memfiles-src", type=Path, help="Run the CLI from this src/ folder (e.g. an older version, as a baseline)."
    )
    parser.add_argument("--stsb", action="store_true", help="Print the STS-B table the thresholds come from, and stop.")
    args = parser.parse_args()
    if args.stsb:
        stsb()
        return
    if args.memfiles_src:
        ENV["PYTHONPATH"] = str(args.memfiles_src.resolve())
        args.shipped = True  # an older distiller has no weights to pass
    if args.lexical:
        ENV["MEMFILES_MODEL"] = str(Path(tempfile.gettempdir()) / "no-model-here")
    folders = [f for f in sorted(args.data.iterdir()) if f.is_dir() and (not args.domain or f.name in args.domain)]
    mode = "lexical" if args.lexical else "model"
    if args.fit or not args.shipped:
        findings = distil_fit.all_findings(args.data, use_model=not args.lexical)  # every domain, always
    if args.fit:
        chosen = distil_fit.choose([item for items in findings.values() for item in items], mode)
        print(json.dumps({"chosen": chosen.as_json(), "shipped": WEIGHTS[mode].as_json()}))
        if chosen != WEIGHTS[mode]:
            print(f"services/distiller/signals.py ships other {mode} weights: {WEIGHTS[mode]}", file=sys.stderr)
            raise SystemExit(1)
        return
    results = {}
    for folder in folders:
        weights = None if args.shipped else distil_fit.choose(distil_fit.without(findings, folder.name), mode)
        results[folder.name] = evaluate_domain(folder, args.keep, weights, args.lexical)
        if weights is not None:
            results[folder.name]["weights"] = weights.as_json()
    totals = _totals(results)
    if args.json:
        print(json.dumps({"domains": results, "total": totals, "held_out": not args.shipped}, indent=2))
        return
    _print(results, totals, held_out=not args.shipped)


if __name__ == "__main__":
    main()
