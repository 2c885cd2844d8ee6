"""Evidence links: what an entry's `evidence` list cites, and whether each cited thing exists.

An item is an entry id (`E-003`), a file (`src/x.py`, `src/x.py:42`, `file:NOTES`), a commit
(`commit:1a2b3c4`, or 7-40 hex digits) or a run (`run:fix-ci`, or any other word: the distiller cites
experience records by their run id). A run exists when a working file, an experience record or an
entry's `source: run:ID` names it.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from typing import Any

from memfiles.contract import Finding, entry_ref
from memfiles.format.ids import evidence_id
from memfiles.format.wrap import with_article
from memfiles.store.project import Located, Project
from memfiles.store.pruned_ledger import Ledger

_HEX = re.compile(r"^[0-9a-f]{7,40}$")
_FILE_SUFFIX = re.compile(r"(?::\d+(?:-\d+)?|#L\d+(?:-L?\d+)?)$")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,8}$")
LAYERS_WITH_EVIDENCE = ("procedure", "insight")


@dataclass(frozen=True)
class Evidence:
    """One evidence item, classified: kind is entry, file, commit or run; target is what it names."""

    text: str
    kind: str
    target: str


def classify(item: str, prefixes: set[str], width: int = 3) -> Evidence:
    for kind in ("run", "commit", "file"):
        if item.startswith(f"{kind}:"):
            target = item[len(kind) + 1 :].strip()
            return Evidence(item, kind, _FILE_SUFFIX.sub("", target) if kind == "file" else target)
    entry_id = evidence_id(item, prefixes, width)
    if entry_id is not None:
        return Evidence(item, "entry", entry_id)
    bare = _FILE_SUFFIX.sub("", item)
    if "/" in bare or _EXTENSION.search(bare):
        return Evidence(item, "file", bare)
    if _HEX.match(item):
        return Evidence(item, "commit", item)
    return Evidence(item, "run", item)


def known_runs(project: Project, entries: list[Located]) -> set[str]:
    """Runs something records: working files, experience records (by run id), entries' `source: run:ID`."""
    from memfiles.services.distiller.experiences import load_experiences, valid_domains

    runs = {path.stem for path in (project.settings.memory_dir / "working").glob("*.md")}
    memory = project.settings.memory_dir
    for domain in valid_domains(memory):
        runs.update(record.key for record in load_experiences(memory, domain, domain).records)
    for located in entries:
        source = located.entry.source or ""
        if source.startswith("run:"):
            runs.add(source[4:].strip())
    return runs


def _commit_exists(project: Project, sha: str, cache: dict[str, bool | None]) -> bool | None:
    """True or False from git; None when there is no repository to ask."""
    if sha not in cache:
        try:
            done = subprocess.run(
                ["git", "cat-file", "-e", f"{sha}^{{commit}}"], cwd=project.root, capture_output=True, timeout=10
            )
            inside = subprocess.run(
                ["git", "rev-parse", "--git-dir"], cwd=project.root, capture_output=True, timeout=10
            ).returncode
            cache[sha] = (done.returncode == 0) if inside == 0 else None
        except (OSError, subprocess.SubprocessError):
            cache[sha] = None
    return cache[sha]


def evidence_findings(
    project: Project, entries: list[Located] | None = None, pruned: dict[str, dict[str, Any]] | None = None
) -> list[Finding]:
    """Every evidence item that names nothing, and procedures and insights that cite no evidence.
    `entries` and `pruned` (records by id): as the read side found them, else read here."""
    entries = list(project.entries()) if entries is None else entries
    schema = project.settings.schema
    prefixes = {kind.prefix for kind in schema.kinds}
    by_id = {located.entry.id: located for located in entries}
    if pruned is None:
        pruned = {record["id"]: record for record in Ledger(project.settings.memory_dir / "pruned.jsonl").read()}
    runs: set[str] | None = None
    commits: dict[str, bool | None] = {}
    findings: list[Finding] = []
    for located in entries:
        entry = located.entry
        path, line = located.file.rel, entry.line
        kind = schema.kind_of(entry.id)
        if kind and kind.name in LAYERS_WITH_EVIDENCE and not entry.evidence and entry.status != "retired":
            findings.append(
                Finding(
                    "evidence-none",
                    "info",
                    path,
                    line,
                    f"{entry.id} is {with_article(kind.name)} that cites no evidence"
                    " (episodes, files, commits or runs)",
                    id=entry.id,
                )
            )
        for item in entry.evidence:
            evidence = classify(item, prefixes, schema.id_width)
            problem = None
            target = None
            if evidence.kind == "entry":
                found = by_id.get(evidence.target)
                if found is None:
                    why = f" (pruned: {pruned[evidence.target].get('reason', '')})" if evidence.target in pruned else ""
                    problem = ("evidence-dangling", f"{entry.id} cites {evidence.target}, which does not exist{why}")
                    target = entry_ref(evidence.target)
            elif evidence.kind == "file":
                if not (project.root / evidence.target).exists():
                    problem = (
                        "evidence-missing-file",
                        f"{entry.id} cites the file {evidence.target}, which does not exist",
                    )
                    target = {"type": "file", "path": evidence.target}
            elif evidence.kind == "commit":
                if _commit_exists(project, evidence.target, commits) is False:
                    problem = (
                        "evidence-unknown-commit",
                        f"{entry.id} cites commit {evidence.target}, which git does not know",
                    )
                    target = {"type": "commit", "sha": evidence.target}
            else:
                runs = known_runs(project, entries) if runs is None else runs
                if evidence.target not in runs:
                    problem = (
                        "evidence-unknown-run",
                        f"{entry.id} cites run {evidence.target}, which no working file, experience log"
                        " or entry records",
                    )
                    target = {"type": "run", "run": evidence.target}
            if problem:
                findings.append(Finding(problem[0], "warning", path, line, problem[1], id=entry.id, target=target))
    return findings
