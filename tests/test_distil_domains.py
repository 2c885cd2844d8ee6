"""Issue 37's two failures cannot happen on any of the labelled non-chip domains (eval/distil): each
domain is distilled batch by batch through the CLI, and every run of the kind the issue saw go wrong is
checked against the truth (scripts/eval_distil.py scores the rest)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memfiles import parse
from memfiles.services.distiller.knowledge import parse_contradictions
from memfiles.services.distiller.signals import identifiers
from tests.conftest import Run

DATA = Path(__file__).resolve().parents[1] / "eval" / "distil"
DOMAINS = ["ci", "oncall", "pipeline", "training"]
FAILURES = "Known Failure Patterns"


def _records(domain: str) -> list[dict]:
    found = []
    for batch in sorted((DATA / domain).glob("batch*.jsonl")):
        for line in batch.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and isinstance(record.get("signoff_achieved"), bool):
                found.append(record)
    return sorted(found, key=lambda r: r["timestamp"])


def _distilled(run: Run, root: Path, domain: str) -> dict[str, dict[str, set[str]]]:
    """Each failure pattern of the knowledge file, by lower-case title: its runs by relation."""
    log = root / "memory" / domain / "experiences.jsonl"
    log.parent.mkdir(parents=True)
    for batch in sorted((DATA / domain).glob("batch*.jsonl")):
        with log.open("a") as out:
            out.write(batch.read_text())
        result = run("distil", "--domain", domain, "--json")
        assert result.exit_code == 0, result.output
    memory = parse((root / "memory" / domain / "knowledge.md").read_text())
    return {
        e.title.lower(): {
            "evidence": set(e.evidence),
            "failed": set(e.failed),
            "contradicted": {r for c in parse_contradictions(e.contradicted) for r in c.runs},
        }
        for e in memory.entries
        if memory.section_of(e.id) == FAILURES
    }


def _holding(entries: dict[str, dict[str, set[str]]], run_id: str) -> set[str]:
    return {title for title, lists in entries.items() if any(run_id in runs for runs in lists.values())}


@pytest.mark.slow
@pytest.mark.parametrize("domain", DOMAINS)
def test_neither_failure_of_the_issue_happens(run: Run, root: Path, domain: str) -> None:
    """1. A run whose fix is, word for word, the fix of an earlier run of its entry (however its symptom is
    worded) is on that entry and on no other. 2. A run that contradicts its entry and names an identifier
    the entry's title names (a test, a dbt test) is in that entry's contradictions, not a second entry."""
    truth = json.loads((DATA / "truth.json").read_text())[domain]
    titles = {key: spec["title"].lower() for key, spec in truth["entries"].items() if spec["section"] == FAILURES}
    entries = _distilled(run, root, domain)
    fixes: dict[str, set[str]] = {}  # truth entry -> the fixes its runs used so far
    identical = contradicting = 0
    for record in _records(domain):
        mine = [(key, relation) for key, relation in truth["runs"][record["run_id"]] if key in titles]
        if len(mine) != 1 or len(record["issues_encountered"]) != 1:
            continue  # a run with two issues: the evaluation scores it
        (key, relation), issue = mine[0], record["issues_encountered"][0]
        fix = (record["fixes_applied"] or [""])[0]
        if re.sub(r"\W+", " ", fix.lower()) in fixes.get(key, set()):
            identical += 1
            assert _holding(entries, record["run_id"]) == {titles[key]}, (record["run_id"], issue)
        if relation == "contradicted" and identifiers(issue) & identifiers(titles[key]):
            contradicting += 1
            assert record["run_id"] in entries[titles[key]]["contradicted"], (record["run_id"], issue)
        fixes.setdefault(key, set()).add(re.sub(r"\W+", " ", fix.lower()))
    assert identical >= 5  # each domain holds its share of both kinds
    assert contradicting >= 1
