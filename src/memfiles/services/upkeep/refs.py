"""`refs`: the `@@ID`, `@@doc:path#anchor` and `@@skill:name#anchor` references in the project's files,
each resolved to a contract Finding: ref-ok, ref-retired (naming the successor), ref-pruned, ref-dangling,
ref-ambiguous (two entries carry the id), or ref-unreadable."""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memfiles.contract import Finding, entry_ref, finding
from memfiles.format.grammar import REF_RE
from memfiles.format.ids import RETIRED, id_key, normalize_id
from memfiles.format.toc import Slugger, heading_text
from memfiles.services.read import Reading, read_project
from memfiles.services.upkeep.audit import located_ref, replaces, successor_chain
from memfiles.store.project import Located, Project

if TYPE_CHECKING:
    from collections.abc import Iterable

    from memfiles.store.batch import BatchResult

_MAX_BYTES = 2_000_000


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
        text = heading_text(line)
        if text is not None:
            anchors.add(slugger.slug(text))
    return anchors


def _resolve_target(base: Path, name: str, candidates: list[str]) -> Path | None:
    """The file a doc or skill reference names, under `base` only: `@@doc:/etc/passwd` and
    `@@doc:../../x` name nothing (an absolute name replaced the base, and `..` climbed out of it). Told
    by the names, not by where links lead: a doc that is a link to a shared file is still a doc."""
    inside = Path(os.path.normpath(base))
    for candidate in candidates:
        path = Path(os.path.normpath(base / candidate.format(name=name)))
        if path.is_relative_to(inside) and path.is_file():
            return path
    return None


def scan_references(project: Project, paths: list[Path] | None = None, reading: Reading | None = None) -> list[Finding]:
    """Every reference in the files scanned, each a finding: ref-ok, ref-retired, ref-pruned, ref-dangling, or
    ref-unreadable (the id's heading stands in a memory file that does not parse)."""
    reading = reading or read_project(project)
    by_id: dict[str, Located] = {}
    places: dict[tuple[str, int] | None, list[Located]] = {}
    in_file: dict[str, list[Located]] = {}
    for located in reading.loaded.entries():
        by_id.setdefault(located.entry.id, located)
        places.setdefault(id_key(located.entry.id), []).append(located)
        in_file.setdefault(located.file.rel, []).append(located)
    twice = {key: found for key, found in places.items() if key is not None and len(found) > 1}
    targets = _Targets(
        by_id, reading, project.root / project.settings.docs_dir, project.root / project.settings.skills_dir, twice
    )
    found: list[Finding] = []
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
        entries_here = sorted(in_file.get(rel, []), key=lambda located: located.entry.line)
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            for match in REF_RE.finditer(line):
                code, entry_id, target, message = targets.resolve(match, project)
                if code == "ref-retired" and entry_id is not None:
                    holder = _holder(entries_here, number)
                    if holder is not None and replaces(holder.entry, by_id[entry_id], by_id):
                        code = "ref-ok"  # the entry that took over, citing the one it replaced
                        message = f"{entry_id} is retired, replaced by {holder.entry.id} (where this stands)"
                found.append(
                    finding(
                        code,
                        rel,
                        number,
                        f"{match.group(0)}: {message}",
                        id=entry_id,
                        target=target,
                        detail={"token": match.group(0), "column": match.start() + 1},
                    )
                )
    return found


def _holder(entries: list[Located], number: int) -> Located | None:
    """The entry of a memory file that line `number` stands in: the last one headed above it, when no
    section heading or `## Manual` comes between (a section's text or the Manual is no entry's)."""
    above = [located for located in entries if located.entry.line <= number]
    if not above:
        return None
    holder = above[-1]
    memory = holder.file.memory
    ends = [section.line for section in memory.sections if section.name is not None]
    ends += [memory.manual_line] if memory.manual is not None else []
    return None if any(holder.entry.line < end <= number for end in ends) else holder


@dataclass(frozen=True)
class _Targets:
    by_id: dict[str, Located]
    reading: Reading
    docs: Path
    skills: Path
    twice: dict[tuple[str, int] | None, list[Located]]  # ids two entries carry (by key), and where

    def resolve(self, match: re.Match[str], project: Project) -> tuple[str, str | None, dict[str, Any], str]:
        """(code, id, target, message) for one reference."""
        if match.group("id"):
            return self._entry(match.group("id"), project.settings.schema.id_width)
        if match.group("doc"):
            kind, name, anchor, base = "doc", match.group("doc"), match.group("doc_anchor"), self.docs
            path = _resolve_target(base, name, ["{name}", "{name}.md", "{name}/README.md", "{name}/index.md"])
        else:
            kind, name, anchor, base = "skill", match.group("skill"), match.group("skill_anchor"), self.skills
            path = _resolve_target(base, name, ["{name}/SKILL.md", "{name}.md", "{name}/README.md"])
        target = {"type": kind, "name": name, "anchor": anchor, "path": project.rel(path) if path else None}
        if path is None:
            return "ref-dangling", None, target, f"no {kind} {name} under {base.name}/"
        if anchor and anchor not in _anchors(path):
            return "ref-dangling", None, target, f"{kind} {name} has no heading #{anchor}"
        return "ref-ok", None, target, f"{kind} {name} ({project.rel(path)})"

    def _spelled(self, ref: str) -> str:
        """The id as the project spells it (`@@T-2` names T-002), or `ref` when nothing carries it."""
        if ref in self.by_id or ref in self.reading.pruned.records:
            return ref
        key = id_key(ref)
        known = (*self.by_id, *self.reading.pruned.records, *self.reading.loaded.unreadable_ids)
        return next((entry_id for entry_id in known if id_key(entry_id) == key), ref)

    def _entry(self, written: str, width: int) -> tuple[str, str | None, dict[str, Any], str]:
        ref = self._spelled(written)
        code, entry_id, target, message = self._known(ref)
        if code == "ref-dangling":  # the id as every command spells it: `@@d-9` names D-009, which is not there
            canonical = normalize_id(ref, width)
            return code, canonical, entry_ref(canonical), f"no entry {canonical}"
        if ref != written:
            message += f" (write it @@{ref})"
        return code, entry_id, target, message

    def _known(self, ref: str) -> tuple[str, str | None, dict[str, Any], str]:
        carriers = self.twice.get(id_key(ref))
        if carriers:  # which of the two it means, nobody can say: check names them as duplicate-id
            where = ", ".join(located.where for located in carriers)
            return (
                "ref-ambiguous",
                ref,
                located_ref(carriers[0]),
                f"{ref} is carried by {len(carriers)} entries ({where}): give one another id with memfiles renumber",
            )
        located = self.by_id.get(ref)
        if located is not None:
            target = located_ref(located)
            if located.entry.status == RETIRED:
                live = successor_chain(ref, self.by_id)
                return (
                    "ref-retired",
                    ref,
                    target,
                    f"{ref} is retired; its successor is {live}" if live else f"{ref} is retired",
                )
            return "ref-ok", ref, target, f"{located.entry.title} ({located.where})"
        record = self.reading.pruned.records.get(ref)
        if record is not None:
            target = entry_ref(ref, title=record.get("title"))
            return "ref-pruned", ref, target, f"{ref} was pruned: {record.get('reason', '')}"
        broken = self.reading.loaded.unreadable_ids.get(ref)
        if broken is not None:
            return "ref-unreadable", ref, entry_ref(ref, path=broken), f"{ref} is in {broken}, which does not parse"
        return "ref-dangling", ref, entry_ref(ref), f"no entry {ref}"


def write_warnings(project: Project, result: BatchResult, extra: Iterable[str] = ()) -> list[str]:
    """The warnings a write says after the batch's own (`result.warnings`, which write_json puts first):
    the references left to check after a renumber, then `extra` (the index's, near-duplicates). The CLI
    and the MCP server both say these, in this order."""
    return [*renumber_warnings(project, result), *extra]


def renumber_warnings(project: Project, result: BatchResult) -> list[str]:
    """For each renumbered id, the references to the old id left as they were, in the memory files and in
    code: each now means the entry that kept the id, and a person must say whether it meant the other."""
    from memfiles.store.renumber import id_token

    if not result.renumbered:
        return []
    notes: list[str] = []
    located = list(project.entries())
    for old, new in result.renumbered.items():
        token = id_token(old)
        for item in located:
            entry = item.entry
            if entry.id == old:
                continue
            if old in entry.refs or entry.successor == old or token.search(entry.body):
                notes.append(f"{item.where}: {entry.id} refers to {old}; if it meant the renumbered entry, write {new}")
        for ref in scan_references(project):
            token = ref.detail.get("token")
            if token == f"@@{old}" and ref.path and not project.is_memory_path(project.root / ref.path):
                notes.append(f"{ref.path}:{ref.line}: {token} in code; if it meant the renumbered entry, write @@{new}")
    return notes
