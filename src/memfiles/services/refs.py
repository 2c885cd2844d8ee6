"""`refs`: the `@@ID`, `@@doc:path#anchor` and `@@skill:name#anchor` references in the project's files,
each resolved: live, retired (naming the successor), pruned or dangling."""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from memfiles.format.grammar import ID_PATTERN
from memfiles.format.ids import RETIRED
from memfiles.format.toc import Slugger
from memfiles.services.audit import successor_chain
from memfiles.store.ledger import Ledger
from memfiles.store.project import Project

REF_RE = re.compile(
    rf"@@(?:(?P<id>{ID_PATTERN})\b"
    r"|doc:(?P<doc>[A-Za-z0-9_./-]+?)(?:#(?P<doc_anchor>[\w-]+))?(?=[\s)\]'\",;]|$)"
    r"|skill:(?P<skill>[\w.-]+?)(?:#(?P<skill_anchor>[\w-]+))?(?=[\s)\]'\",;]|$))"
)
_MAX_BYTES = 2_000_000


@dataclass(frozen=True)
class Reference:
    """One reference found at path:line, and what it resolves to."""

    path: str
    line: int
    token: str
    state: str  # ok, retired, pruned, dangling
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.token}: {self.message}"

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def source_files(project: Project, paths: list[Path] | None) -> list[Path]:
    """The files to scan: the given paths, else what git tracks and does not ignore, else every file."""
    root = project.root
    if paths:
        found: list[Path] = []
        for path in paths:
            found.extend(sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path])
        return found
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            check=True,
            timeout=30,
        ).stdout.decode("utf-8", errors="replace")
        files = [root / name for name in listed.split("\0") if name]
    except (OSError, subprocess.SubprocessError):
        files = []
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__")]
            files.extend(Path(folder) / name for name in names)
    excluded = project.settings.refs_exclude
    return [
        f
        for f in sorted(files)
        if f.is_file() and not any(fnmatch.fnmatch(project.rel(f), pattern) for pattern in excluded)
    ]


def _anchors(path: Path) -> set[str]:
    slugger = Slugger()
    anchors = set()
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            anchors.add(slugger.slug(match.group(1)))
    return anchors


def _resolve_target(base: Path, name: str, candidates: list[str]) -> Path | None:
    for candidate in candidates:
        path = base / candidate.format(name=name)
        if path.is_file():
            return path
    return None


def scan_references(project: Project, paths: list[Path] | None = None) -> list[Reference]:
    by_id = {located.entry.id: located for located in project.entries()}
    pruned = {r["id"]: r for r in Ledger(project.settings.memory_dir / "pruned.jsonl").read()}
    docs = project.root / project.settings.docs_dir
    skills = project.root / project.settings.skills_dir
    found: list[Reference] = []
    for path in source_files(project, paths):
        try:
            if path.stat().st_size > _MAX_BYTES:
                continue
            data = path.read_bytes()
        except OSError:
            continue
        if b"\0" in data[:8192] or b"@@" not in data:
            continue
        rel = project.rel(path)
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            for match in REF_RE.finditer(line):
                state, message = _resolve(match, by_id, pruned, docs, skills)
                found.append(Reference(rel, number, match.group(0), state, message))
    return found


def _resolve(match: re.Match[str], by_id: dict, pruned: dict, docs: Path, skills: Path) -> tuple[str, str]:
    if match.group("id"):
        ref = match.group("id")
        located = by_id.get(ref)
        if located is None:
            if ref in pruned:
                return "pruned", f"{ref} was pruned: {pruned[ref].get('reason', '')}"
            return "dangling", f"no entry {ref}"
        if located.entry.status == RETIRED:
            live = successor_chain(ref, by_id)
            return "retired", f"{ref} is retired; its successor is {live}" if live else f"{ref} is retired"
        return "ok", f"{located.entry.title} ({located.where})"
    if match.group("doc"):
        name, anchor = match.group("doc"), match.group("doc_anchor")
        target = _resolve_target(docs, name, ["{name}", "{name}.md", "{name}/README.md", "{name}/index.md"])
        what = f"doc {name}"
    else:
        name, anchor = match.group("skill"), match.group("skill_anchor")
        target = _resolve_target(skills, name, ["{name}/SKILL.md", "{name}.md", "{name}/README.md"])
        what = f"skill {name}"
    if target is None:
        return "dangling", f"no {what} under {(docs if match.group('doc') else skills).name}/"
    if anchor and anchor not in _anchors(target):
        return "dangling", f"{what} has no heading #{anchor}"
    return "ok", what
