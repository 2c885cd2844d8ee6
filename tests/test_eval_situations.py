"""The labelled agent situations (eval/situations/) and the held-out figure docs/hooks.md reports."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import eval_situations

LAYERS = {"P": "procedure", "E": "episode", "L": "lesson", "I": "insight"}


def _ids(memory: dict) -> set[str]:
    """The ids the project's import gives its entries: one number space per prefix, in op order."""
    prefixes = {"procedure": "P", "episode": "E", "lesson": "L", "insight": "I", "decision": "D", "friction": "F",
                "fact": "K", "todo": "T"}  # fmt: skip
    counts: dict[str, int] = {}
    ids = set()
    for op in memory["ops"]:
        prefix = prefixes[op["kind"]]
        counts[prefix] = counts.get(prefix, 0) + 1
        ids.add(f"{prefix}-{counts[prefix]:03d}")
    return ids


def test_the_set_is_what_the_issue_asks_and_every_label_names_an_entry_a_hook_can_inject() -> None:
    """At least 80 situations in at least three projects with their own memories, the held-out one among
    them; every kind of situation present; each wanted id exists and is a procedure, episode, lesson or
    insight (a label naming a decision could never be met)."""
    names = eval_situations.projects(None)
    assert len(names) >= 3 and eval_situations.HELD_OUT in names
    total = 0
    categories = set()
    for name in names:
        memory, situations = eval_situations.load(name)
        known = _ids(memory)
        total += len(situations)
        for situation in situations:
            categories.add(situation["category"])
            assert situation["event"] in eval_situations.TRIGGERS, situation["id"]
            for wanted in situation["wanted"]:
                assert wanted in known and wanted[0] in LAYERS, (situation["id"], wanted)
    assert total >= 80
    assert {"risky", "release", "deploy", "migration", "failure", "resume", "offtopic", "harmless"} <= categories


@pytest.mark.slow
@pytest.mark.integration
def test_the_held_out_project_meets_the_goal() -> None:
    """Through the hooks' own code, the real model and a real index: on the held-out project at least 90% of
    the situations that want an entry get one, and at most 10% of those that want none get anything."""
    config = eval_situations.CONFIG.format(budget=1500, extra="")
    row = eval_situations.measure(eval_situations.run_project(eval_situations.HELD_OUT, config))["all"]
    assert row["got"] / row["want"] >= 0.9 and row["noisy"] / row["quiet"] <= 0.1, row
