"""The write path: a batch of ops applied all-or-nothing, under the project lock, through the journal."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memfiles.errors import OpError, ParseError
from memfiles.format.ids import RETIRED, IdAllocator, Kind, Schema
from memfiles.format.model import MANUAL_HEADING, Entry, MemoryFile, Section
from memfiles.format.parse import parse
from memfiles.format.render import render
from memfiles.store.fileio import remove_debris
from memfiles.store.journal import Journal
from memfiles.store.ledger import Ledger
from memfiles.store.lock import FileLock
from memfiles.store.ops import Op, today
from memfiles.store.project import Project

NEW_FILE_MANUAL = f"{MANUAL_HEADING}\n\n<!-- Your own notes: memfiles never edits this section. -->\n"


@dataclass
class BatchResult:
    """What a batch did: ids by op, in op order, and which files and entries changed."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    replayed: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"added": self.added, "updated": self.updated, "retired": self.retired, "pruned": self.pruned}

    @property
    def changed_ids(self) -> list[str]:
        return list(dict.fromkeys(self.added + self.updated + self.retired))

    def summary(self) -> str:
        parts = [
            f"{verb} {', '.join(ids)}"
            for verb, ids in (
                ("added", self.added),
                ("updated", self.updated),
                ("retired", self.retired),
                ("pruned", self.pruned),
            )
            if ids
        ]
        return "; ".join(parts) if parts else "no changes"


class _Draft:
    """A memory file being edited: mutable sections, frozen again to render."""

    def __init__(self, memory: MemoryFile, old_text: str | None) -> None:
        self.memory = memory
        self.old_text = old_text
        self.sections: list[list[Any]] = [[s.name, s.intro, list(s.entries)] for s in memory.sections]

    def freeze(self) -> MemoryFile:
        return replace(self.memory, sections=tuple(Section(n, i, tuple(e)) for n, i, e in self.sections))

    def find(self, entry_id: str) -> tuple[list[Entry], int] | None:
        for _name, _intro, entries in self.sections:
            for index, entry in enumerate(entries):
                if entry.id == entry_id:
                    return entries, index
        return None

    def append(self, entry: Entry, section: str | None) -> None:
        for name, _intro, entries in self.sections:
            if name == section:
                entries.append(entry)
                return
        if section is None:
            self.sections.insert(0, [None, "", [entry]])
        else:
            self.sections.append([section, "", [entry]])


class Batch:
    """Applies checked ops to a project. Use `apply`; it takes the lock, reads, checks, writes."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.settings = project.settings
        self.schema: Schema = project.settings.schema
        self.journal = Journal(self.settings.state_dir, project.root)
        self.ledger = Ledger(self.settings.memory_dir / "pruned.jsonl")

    def lock(self) -> FileLock:
        return FileLock(self.settings.state_dir / "write.lock", self.settings.lock_timeout)

    def apply(self, ops: list[Op], request_id: str | None = None, date: str | None = None) -> BatchResult:
        with self.lock():
            self.journal.recover()
            for folder in self.project.memory_dirs():
                remove_debris(folder)
            if request_id:
                receipt = self.journal.receipt(request_id)
                if receipt is not None:
                    return BatchResult(**receipt["result"], paths=[], replayed=True)
            return self._apply_locked(ops, request_id, date or today())

    def _apply_locked(self, ops: list[Op], request_id: str | None, date: str) -> BatchResult:
        files = self.project.load()
        self.drafts: dict[str, _Draft] = {f.rel: _Draft(f.memory, f.text) for f in files}
        self.where: dict[str, str] = {}
        for loaded in files:
            for entry in loaded.memory.entries:
                self.where.setdefault(entry.id, loaded.rel)
        pruned_before = self.ledger.read()
        allocator = IdAllocator([*self.where, *(record["id"] for record in pruned_before)], self.schema.id_width)
        result = BatchResult()
        new_pruned: list[dict[str, Any]] = []
        for op in ops:
            if op.op == "add":
                result.added.append(self._add(op, allocator, date))
            elif op.op == "update":
                result.updated.append(self._update(op))
            elif op.op == "retire":
                result.retired.append(self._retire(op))
            elif op.op == "section":
                self._section(op)
            else:
                new_pruned.append(self._prune(op, date))
                result.pruned.append(op.id or "")
        writes: dict[str, tuple[str | None, str]] = {}
        for rel, draft in self.drafts.items():
            text = render(draft.freeze(), self.schema)
            if text != draft.old_text:
                try:  # the safety net: never write a file that would not read back
                    parse(text, rel)
                except ParseError as error:
                    raise OpError(
                        None, f"the batch would leave {rel} unreadable ({error.message}); nothing was written"
                    ) from error
                writes[rel] = (draft.old_text, text)
        if new_pruned:
            rel = self.project.rel(self.ledger.path)
            old = self.ledger.text()
            writes[rel] = (old, (old or "") + "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in new_pruned))
        result.paths = sorted(writes)
        stored = {key: value for key, value in result.__dict__.items() if key not in ("paths", "replayed")}
        if writes or request_id:
            self.journal.commit(writes, {"result": stored}, request_id)
        return result

    # --- one method per op -------------------------------------------------------------------------

    def _kind(self, op: Op) -> Kind:
        kind = self.schema.kind(op.get("kind"))
        assert kind is not None  # parse_op checked it
        return kind

    def _draft_for(self, op: Op, rel: str | None, kind: Kind | None) -> tuple[str, _Draft]:
        if rel is None:
            assert kind is not None
            rel = f"memory/{kind.file}"
        path = (self.project.root / rel).resolve()
        rel = self.project.rel(path)
        if rel.startswith(("/", "..")) or not self.project.is_memory_path(path):
            raise OpError(op.position, f"file: {rel!r} is not a Markdown file inside a memory/ folder of the project")
        if rel not in self.drafts:
            if path.exists():
                raise OpError(
                    op.position, f"file: {rel} exists but is not a memory file (it has no index and no entries)"
                )
            title = kind.file[:-3].capitalize() if kind and kind.file == Path(rel).name else Path(rel).stem
            if Path(rel).parent.name != "memory":  # memory/<domain>/knowledge.md is "Knowledge: <domain>"
                title = f"{title.capitalize()}: {Path(rel).parent.name}"
            memory = MemoryFile(title=title[:1].upper() + title[1:].replace("_", " "), manual=NEW_FILE_MANUAL)
            self.drafts[rel] = _Draft(memory, None)
        return rel, self.drafts[rel]

    def _status(self, op: Op, kind: Kind, status: str | None) -> str:
        status = status or kind.default_status
        if status not in kind.statuses:
            raise OpError(
                op.position, f"status: {status!r} is not a status of a {kind.name} ({', '.join(kind.statuses)})"
            )
        if status == RETIRED and op.op != "retire":
            raise OpError(op.position, "status: retire an entry with the retire op, which records the reason")
        return status

    def _add(self, op: Op, allocator: IdAllocator, date: str) -> str:
        kind = self._kind(op)
        rel, draft = self._draft_for(op, op.get("file"), kind)
        entry_id = allocator.next_id(kind.prefix)
        entry = Entry(
            id=entry_id,
            title=op.get("title"),
            date=op.get("date", date),
            area=op.get("area"),
            status=self._status(op, kind, op.get("status")),
            body=op.get("body"),
            refs=op.get("refs", ()),
            tags=op.get("tags", ()),
            source=op.get("source"),
            confirmed=op.get("confirmed"),
            last_seen=op.get("last_seen"),
            evidence=op.get("evidence", ()),
            failed=op.get("failed", ()),
            contradicted=op.get("contradicted"),
        )
        draft.append(entry, op.get("section"))
        self.where[entry_id] = rel
        return entry_id

    def _locate(self, op: Op) -> tuple[str, _Draft, list[Entry], int]:
        assert op.id is not None
        rel = self.where.get(op.id)
        found = self.drafts[rel].find(op.id) if rel else None
        if rel is None or found is None:
            pruned = " (it was pruned)" if any(r["id"] == op.id for r in self.ledger.read()) else ""
            raise OpError(op.position, f"id: no entry {op.id}{pruned}")
        return rel, self.drafts[rel], found[0], found[1]

    def _update(self, op: Op) -> str:
        rel, draft, entries, index = self._locate(op)
        entry = entries[index]
        kind = self.schema.kind_of(entry.id)
        if kind is None:
            raise OpError(op.position, f"id: {entry.id} has an unknown prefix; fix the file first")
        changes = {key: value for key, value in op.fields.items() if key not in ("file", "section")}
        if "status" in changes:
            self._status(op, kind, changes["status"])
        updated = replace(entry, **changes)
        target_rel = op.get("file")
        section = op.get("section", draft.freeze().section_of(entry.id))
        if target_rel is not None or "section" in op.fields:
            del entries[index]
            new_rel, target = self._draft_for(op, target_rel or rel, kind)
            target.append(updated, section)
            self.where[entry.id] = new_rel
        else:
            entries[index] = updated
        return entry.id

    def _retire(self, op: Op) -> str:
        _rel, _draft, entries, index = self._locate(op)
        successor = op.get("successor")
        if successor is not None:
            if successor == op.id:
                raise OpError(op.position, "successor: an entry cannot succeed itself")
            if successor not in self.where:
                raise OpError(op.position, f"successor: no entry {successor}")
        entries[index] = replace(entries[index], status=RETIRED, successor=successor, reason=op.get("reason"))
        return entries[index].id

    def _section(self, op: Op) -> None:
        _rel, draft = self._draft_for(op, op.get("file"), None)
        for section in draft.sections:
            if section[0] == op.get("section"):
                section[1] = op.get("intro")
                return
        draft.sections.append([op.get("section"), op.get("intro"), []])

    def _prune(self, op: Op, date: str) -> dict[str, Any]:
        from memfiles.format.render import render_entry

        rel, _draft, entries, index = self._locate(op)
        entry = entries.pop(index)
        del self.where[entry.id]
        return {
            "id": entry.id,
            "title": entry.title,
            "date": date,
            "reason": op.get("reason"),
            "path": rel,
            "entry": render_entry(entry),
        }
