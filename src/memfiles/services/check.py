"""`check` and `fmt`: every promise of the format over the project's files, and the canonical rewrite."""

from __future__ import annotations

from dataclasses import dataclass

from memfiles.contract import Finding
from memfiles.format.render import render
from memfiles.format.validate import Problem, validate_file, validate_ids
from memfiles.store.fileio import write_if_changed
from memfiles.store.ledger import Ledger
from memfiles.store.lock import FileLock
from memfiles.store.project import Project


def check_project(project: Project) -> tuple[list[Problem], int]:
    """All problems of the project's memory files, sorted by place, and how many files were read."""
    files, errors = project.load_all()
    problems = [Problem(e.path or "?", e.line or 1, e.message) for e in errors]
    schema = project.settings.schema
    for loaded in files:
        problems.extend(validate_file(loaded.rel, loaded.memory, loaded.text, schema))
    problems.extend(validate_ids((f.rel, f.memory) for f in files))
    ledger = Ledger(project.settings.memory_dir / "pruned.jsonl")
    try:
        pruned = {record["id"]: record for record in ledger.read()}
    except Exception as error:  # a broken ledger is a problem to report, not a crash
        problems.append(Problem(project.rel(ledger.path), getattr(error, "line", 1) or 1, str(error)))
        pruned = {}
    for loaded in files:
        for entry in loaded.memory.entries:
            if entry.id in pruned:
                problems.append(Problem(loaded.rel, entry.line, f"{entry.id} was pruned; its number cannot be reused"))
    return sorted(problems), len(files) + len(errors)


def lint_findings(project: Project, enabled: bool = True) -> list[Finding]:
    """The lint rule set's findings over the memory files (none when lint is skipped: `--no-lint`)."""
    if not enabled:
        return []
    from memfiles.services.lint import lint_project

    return lint_project(project)


@dataclass
class FmtResult:
    changed: list[str]
    unchanged: int
    errors: list[Problem]


def format_project(project: Project, write: bool, lint: bool = True) -> FmtResult:
    """Rewrite every memory file in canonical form with a fresh index (or, with write=False, only tell).

    With `lint`, what the lint rule set can fix is fixed too (never in `## Manual`, never an entry's
    id, title or metadata): see services/lint.fix_text.
    """
    if lint:
        from memfiles.services.lint import fix_text
    result = FmtResult([], 0, [])
    with FileLock(project.settings.state_dir / "write.lock", project.settings.lock_timeout):
        files, errors = project.load_all()
        result.errors = [Problem(e.path or "?", e.line or 1, e.message) for e in errors]
        for loaded in files:
            text = render(loaded.memory, project.settings.schema)
            if lint:
                text = fix_text(project, loaded.rel, loaded.memory)
            if text == loaded.text:
                result.unchanged += 1
                continue
            result.changed.append(loaded.rel)
            if write:
                write_if_changed(loaded.path, text)
    return result
