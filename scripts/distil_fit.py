"""Choose the distiller's evidence weights (services/distiller/signals.py) on labelled experience logs.

Every decision the distiller makes on a domain is collected with the truth's answer: the domain's
records are filed oldest first by the real Filer, except that the entry each finding goes to is the one
the truth files it on (a new entry when the truth's entry does not exist yet). At each finding (a
symptom, or a quirk of the notes) the evidence on every entry of its section is kept, with the truth's
entry marked. Pairs a guard rules out (another named thing; a negated symptom without the same fix) are
left out: the rules decide those, not the weights.

The threshold is STS-B's (THRESHOLD: 0.80 for the model's cosine, 0.60 for word overlap), chosen on
data none of these domains is. The weights of the other signals are read off GRID by this rule (in this
form since before the training domain was written; docs/distiller.md says what came before):
1. the fewest wrong decisions (a decision is right when the entry that scores highest and reaches the
   threshold is the truth's entry, or when no entry reaches it and the truth's is a new one);
2. among those, the weights in the middle of that region: the point farthest (in grid steps, counting
   the grid's edge as a worse point) from any point with more wrong decisions;
3. then the least weight on evidence other than the meaning (fix + rare + same + other).
`choose(findings)` does this on the domains it is given; scripts/eval_distil.py calls it once per
domain without that domain (leave one domain out), and once on all of them for the shipped weights.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from memfiles.config import load_settings
from memfiles.services.distiller.distill import _read_knowledge
from memfiles.services.distiller.experiences import Record, issue_fix_pairs, load_experiences
from memfiles.services.distiller.filing import Filer, quirks_of
from memfiles.services.distiller.knowledge import FAILURES, Known
from memfiles.services.distiller.matching import Similarity
from memfiles.services.distiller.signals import Signals, Weights, where_of
from memfiles.store.project import Project

GRID = {
    "fix": [round(0.05 * n, 2) for n in range(13)],  # 0 to 0.60
    "rare": [round(0.05 * n, 2) for n in range(7)],  # 0 to 0.30
    "same": [round(0.05 * n, 2) for n in range(7)],  # 0 to 0.30
    "other": [round(0.05 * n, 2) for n in range(7)],  # 0 to 0.30
}
# The threshold is not chosen here: STS-B's (services/distiller/signals.py), read off data none of these domains is.
THRESHOLD = {"model": 0.80, "lexical": 0.60}
# One finding: the features of each entry it could go to, and whether that entry is the truth's.
Finding = list[tuple[list[float], int]]


class Teacher(Filer):
    """A Filer that files each finding where the truth does, and records the evidence of every choice."""

    def __init__(self, knowns: list[Known], sim: Similarity, truth: dict[str, Any], keys: dict[int, str]) -> None:
        super().__init__(knowns, sim, 200)
        self.truth = truth
        self.keys = keys  # id(known) -> the truth's entry key
        self.findings: list[Finding] = []
        self.pending: str | None = None

    def _wanted(self, section: str, text: str, record: Record) -> str | None:
        """The truth's entry for this finding of `record`: each finding of the record in the section is
        given the closest (by title) of the entries the truth files the run on there, one each."""
        owned = [k for k, _ in self.truth["runs"].get(record.key, []) if self.truth["entries"][k]["section"] == section]
        texts = (
            [issue for issue, _ in issue_fix_pairs(record)] if section == FAILURES else quirks_of(record, self.vocab)
        )
        titles = {k: self.truth["entries"][k].get("title", "") for k in owned}
        scored = sorted(((self.sim.score(t, titles[k]), t, k) for t in texts for k in owned), reverse=True)
        given: dict[str, str] = {}
        for _, t, k in scored:
            if t not in given and k not in given.values():
                given[t] = k
        return given.get(text)

    def match(
        self, section: str, text: str, fix: str | None = None, record: Record | None = None
    ) -> tuple[Known | None, Signals | None, str]:
        assert record is not None
        wanted = self._wanted(section, text, record)
        weighed = self.candidates(section, text, fix, where_of(record.context))
        chosen = None
        finding: Finding = []
        for signals in weighed:
            label = int(wanted is not None and self.keys.get(id(signals.known)) == wanted)
            if label:
                chosen = signals
            if signals.guard or (signals.needs_fix and signals.same_fix is None):
                continue  # the rules decide these pairs
            finding.append((signals.features(), label))
        if finding:
            self.findings.append(finding)
        self.pending = wanted
        if chosen is None:
            return None, None, "teacher: new"
        return chosen.known, chosen, "teacher"

    def _new(self, section: str, title: str, body: str, record: Record, **extra: Any) -> Known:
        known = super()._new(section, title, body, record, **extra)
        if self.pending is not None:
            self.keys[id(known)] = self.pending
        return known


def domain_findings(folder: Path, truth: dict[str, Any], use_model: bool = True) -> list[Finding]:
    """The labelled findings of one domain of the evaluation set (eval/distil/<domain>)."""
    from click.testing import CliRunner

    from memfiles.cli.main import cli

    domain = folder.name
    root = Path(tempfile.mkdtemp(prefix=f"fit-distil-{domain}-"))
    try:
        (root / "memory" / domain).mkdir(parents=True)
        if (folder / "seed.json").exists():
            result = CliRunner().invoke(cli, ["--root", str(root), "import", str(folder / "seed.json")])
            assert result.exit_code == 0, result.output
        log = root / "memory" / domain / "experiences.jsonl"
        log.write_text("".join(b.read_text(encoding="utf-8") for b in sorted(folder.glob("batch*.jsonl"))))
        settings = load_settings(root)
        project = Project(settings)
        rel = f"memory/{domain}/knowledge.md"
        knowns, _, _ = _read_knowledge(project, rel)
        keys = {}
        for known in knowns:
            for key, spec in truth["entries"].items():
                if spec.get("seed") and spec.get("title", "").lower() == known.title.lower():
                    keys[id(known)] = key
        experiences = load_experiences(settings.memory_dir, domain, f"memory/{domain}/experiences.jsonl")
        records = sorted(experiences.records, key=lambda r: (r.timestamp, r.line))
        teacher = Teacher(knowns, Similarity(settings, use_model=use_model), truth, keys)
        teacher.prepare(records, [])
        for record in records:
            teacher.file(record)
        return teacher.findings
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _grid() -> tuple[np.ndarray, np.ndarray]:
    """Every (fix, rare, same, other) of GRID, one a row; and each row's position in steps."""
    axes = list(GRID.values())
    values = np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)
    steps = np.stack([a.ravel() for a in np.meshgrid(*(np.arange(len(a)) for a in axes), indexing="ij")], axis=1)
    return values, steps


def wrong(findings: list[Finding], grid: np.ndarray, threshold: float) -> np.ndarray:
    """For each row of the grid, how many of the findings it decides wrong."""
    count = np.zeros(len(grid), dtype=int)
    for finding in findings:
        x = np.array([f for f, _ in finding], dtype=float)  # (entries, 5)
        x[:, 4] = -x[:, 4]  # another place takes its weight away
        truth = np.array([y for _, y in finding], dtype=bool)
        scores = x[:, :1].T + grid @ x[:, 1:].T  # (grid, entries): meaning + weighted evidence
        best = scores.max(axis=1)
        if truth.any():
            mine = scores[:, truth][:, 0]
            count += ~((mine >= threshold) & (mine >= best))
        else:
            count += best >= threshold
    return count


def choose(findings: list[Finding], mode: str = "model") -> Weights:
    """The grid's weights for these findings (the module's docstring says how)."""
    grid, steps = _grid()
    threshold = THRESHOLD[mode]
    errors = wrong(findings, grid, threshold)
    best = errors == errors.min()
    sizes = np.array([len(axis) for axis in GRID.values()])
    depth = np.minimum(steps + 1, sizes - steps).min(axis=1)  # steps to beyond the grid's edge
    worse = steps[~best]
    for start in range(0, len(steps), 512):  # steps to the nearest worse point (Chebyshev), in blocks
        if len(worse):
            block = np.abs(steps[start : start + 512, None, :] - worse[None, :, :]).max(axis=2).min(axis=1)
            depth[start : start + 512] = np.minimum(depth[start : start + 512], block)
    depth = np.where(best, depth, -1)
    row = np.lexsort((grid.sum(axis=1), -depth))[0]  # the deepest, then the least evidence weight
    fix, rare, same, other = (round(float(v), 2) for v in grid[row])
    return Weights(fix=fix, rare=rare, same=same, other=other, threshold=threshold)


def all_findings(data: Path, use_model: bool = True) -> dict[str, list[Finding]]:
    """Every domain's findings, by domain."""
    truth = json.loads((data / "truth.json").read_text())
    folders = [f for f in sorted(data.iterdir()) if f.is_dir() and f.name in truth]
    return {f.name: domain_findings(f, truth[f.name], use_model) for f in folders}


def without(findings: dict[str, list[Finding]], held_out: str) -> list[Finding]:
    return [item for name, items in findings.items() if name != held_out for item in items]
