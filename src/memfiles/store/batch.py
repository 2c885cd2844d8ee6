"""The write path: a batch of ops applied all-or-nothing, under the project lock, through the journal."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memfiles.errors import BatchError, OpError, ParseError
from memfiles.format.ids import RETIRED, IdAllocator, Kind, Schema, format_id, same_id, split_id
from memfiles.format.model import MANUAL_HEADING, Entry, MemoryFile
from memfiles.format.parse import parse
from memfiles.format.render import render
from memfiles.format.validate import validate_file
from memfiles.format.wrap import with_article
from memfiles.store.batch_files import BatchFiles, Draft
from memfiles.store.fileio import empty_or_missing, remove_debris
from memfiles.store.id_marks import CloneMarks, MarksFile, advance, render_marks, used_numbers
from memfiles.store.journal import Journal
from memfiles.store.lock import FileLock
from memfiles.store.ops import Op, ops_digest, today
from memfiles.store.project import PERSONA_FILE, WORKING_FOLDER, WORKING_KIND, WORKING_SECTIONS, Project
from memfiles.store.pruned_ledger import Ledger
from memfiles.store.renumber import check_refs, renumber

# Called under the write lock with the files as they stand, before the ops; raises to refuse the batch.
Guard = Callable[[BatchFiles], None]

NEW_FILE_MANUAL = f"{MANUAL_HEADING}\n\n<!-- Your own notes: memfiles never edits this section. -->\n"


@dataclass
class BatchResult:
    """What a batch did: ids by op, in op order, which files and entries changed, and its warnings."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    renumbered: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    replayed: bool = False

    def stored(self) -> dict[str, Any]:
        """What a receipt keeps, to answer a replay of the same request id."""
        return {key: value for key, value in self.__dict__.items() if key not in ("paths", "replayed")}

    @property
    def changed_ids(self) -> list[str]:
        moved = [entry_id for pair in self.renumbered.items() for entry_id in pair]
        return list(dict.fromkeys(self.added + self.updated + self.retired + moved))

    def summary(self) -> str:
        parts = [
            f"{verb} {_listed(ids)}"
            for verb, ids in (
                ("added", self.added),
                ("updated", self.updated),
                ("retired", self.retired),
                ("pruned", self.pruned),
                ("renumbered", [f"{old} -> {new}" for old, new in self.renumbered.items()]),
            )
            if ids
        ]
        if parts:
            return "; ".join(parts)
        # an update that changed nothing can still bring a file's generated index or form up to date
        return f"no entry changed; rewrote {', '.join(self.paths)} in canonical form" if self.paths else "no changes"


SUMMARY_IDS = 20  # a summary names this many ids of a kind at most; past that, a count and the first and last


def _listed(ids: list[str]) -> str:
    """`ids` for a one-line summary: all of them, or for a large import their count and the ends
    (5,000 ids on one line flooded the terminal; --json lists every one)."""
    if len(ids) <= SUMMARY_IDS:
        return ", ".join(ids)
    return f"{len(ids):,} entries ({', '.join(ids[:3])} ... {ids[-1]}; --json lists them all)"


class Batch:
    """Applies checked ops to a project. Use `apply`; it takes the lock, reads, checks, writes."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.settings = project.settings
        self.schema: Schema = project.settings.schema
        self.journal = Journal(self.settings.state_dir, project.root)
        self.ledger = Ledger(self.settings.memory_dir / "pruned.jsonl")
        self.marks_file = MarksFile(self.settings.memory_dir)

    def lock(self) -> FileLock:
        return FileLock(self.settings.state_dir / "write.lock", self.settings.lock_timeout)

    def apply(
        self,
        ops: list[Op],
        request_id: str | None = None,
        date: str | None = None,
        allow_dangling: bool = False,
        problems: list[OpError] | None = None,
        guard: Guard | None = None,
    ) -> BatchResult:
        """Apply `ops` whole or not at all. BatchError lists every op that cannot be applied.

        `allow_dangling` lets `refs` name ids that do not exist (otherwise refused: a typo in an id
        would leave a reference that leads nowhere). `problems`: those check_ops found in ops left out of
        `ops`; the batch then writes nothing, and its own checks of the other ops join the one error.
        `guard` is called with the files as they stand under the lock, before any op is applied; it
        raises (a MemfilesError) to refuse the batch. A check that must see every other writer's work
        (no near-duplicate, no run of that name) belongs there: before the lock, two processes both pass.
        """
        if request_id is not None and not request_id.strip():  # an unset variable in an agent's call
            raise OpError(None, "request id is empty: give the batch a key, or leave the request id out", "request_id")
        with self.lock():
            self.journal.recover()
            for folder in self.project.memory_dirs():
                remove_debris(folder)
            digest = ops_digest(ops)
            if request_id and not problems:  # a batch with bad ops was never applied: no replay to answer
                receipt = self.journal.receipt(request_id)
                if receipt is not None:
                    if receipt.get("digest") not in (None, digest):
                        raise OpError(
                            None,
                            f"request id {request_id!r} was already used for a different batch; nothing was"
                            " written: give this batch a request id of its own",
                            "request_id",
                        )
                    return BatchResult(**receipt["result"], paths=[], replayed=True)
            return self._apply_locked(
                ops, request_id, date or today(), allow_dangling, digest, list(problems or []), guard
            )

    def _apply_locked(
        self,
        ops: list[Op],
        request_id: str | None,
        date: str,
        allow_dangling: bool,
        digest: str,
        problems: list[OpError],
        guard: Guard | None = None,
    ) -> BatchResult:
        self.work = BatchFiles(self.project.load())
        if guard is not None and not problems:
            guard(self.work)
        self.pruned_before = self.ledger.read()
        self.pruned_now: list[dict[str, Any]] = []  # this batch's prunes count as pruned for its later ops
        self.marks = self.marks_file.read()
        clone = CloneMarks(self.settings.state_dir)  # ids.txt lowered by a revert or a stash: not below these
        highs = [*(self.marks.high.items() if self.marks else ()), *clone.read().items()]
        issued = [format_id(prefix, high) for prefix, high in highs]
        allocator = IdAllocator(
            [*self.work.places, *(record["id"] for record in self.pruned_before), *issued], self.schema.id_width
        )
        for op in ops:  # ids come canonical from parse_op; a file may spell one otherwise (D-2)
            self._spell(op)
        result = BatchResult()
        self.notes = result.warnings  # what an op changed beyond what it named (un-retiring clears successor)
        new_pruned = self.pruned_now
        wrote: dict[int, str] = {}  # op position -> the id of the entry it wrote, for the refs check
        for op in ops:
            try:
                if op.op == "add":
                    wrote[op.position] = self._add(op, allocator, date)
                    result.added.append(wrote[op.position])
                elif op.op == "update":
                    wrote[op.position], changed = self._update(op)
                    if changed:
                        result.updated.append(wrote[op.position])
                elif op.op == "retire":
                    retired, changed = self._retire(op)
                    if changed:
                        result.retired.append(retired)
                elif op.op == "section":
                    self._section(op)
                elif op.op == "renumber":
                    pruned = {record["id"] for record in self.pruned_before}
                    old, new = renumber(self.work, op, allocator, self.project, pruned)
                    result.renumbered[old] = new
                else:
                    new_pruned.append(self._prune(op, date))
                    result.pruned.append(op.id or "")
            except BatchError as error:
                problems.extend(error.problems)
            except OpError as error:
                problems.append(error)
        problems.extend(check_refs(self.work, ops, wrote, allow_dangling, result.warnings, self._missing_hint))
        if problems:
            raise BatchError(sorted(problems, key=lambda problem: problem.position or 0))
        if result.pruned:
            result.warnings.extend(self._left_pointing(set(result.pruned)))
        for op in ops:
            self._odd_dates(op, wrote.get(op.position) or op.id or f"op {op.position}", date)
        writes = self._writes(new_pruned)
        result.paths = sorted(writes)
        if writes or request_id:
            self.journal.commit(writes, {"result": result.stored(), "digest": digest}, request_id)
        if result.added or result.renumbered:  # after the files: a kill before them hands out nothing, skips nothing
            try:
                clone.raise_to(self.handed)
            except OSError as error:
                result.warnings.append(
                    f"could not record the ids handed out in {self.project.rel(clone.path)}: {error}"
                )
        return result

    def _writes(self, new_pruned: list[dict[str, Any]]) -> dict[str, tuple[str | None, str]]:
        """{rel: (old text, new text)} of every file the batch changes: memory files, ledger, id marks."""
        writes: dict[str, tuple[str | None, str]] = {}
        self.handed: dict[str, int] = {}  # the marks after this batch (below: once there is something to write)
        for rel in sorted(self.work.touched):
            draft = self.work.drafts[rel]
            text = render(draft.freeze(), self.schema)
            if text != draft.old_text:
                out = self.project.leads_out(self.project.root / rel)
                if out is not None:  # read through the link, but never written out through it
                    raise OpError(
                        None, f"{rel} is a link to {out}, outside the project's memory folders; nothing was written"
                    )
                try:  # the safety net: never write a file that would not read back
                    written = parse(text, rel, self.schema)
                except ParseError as error:
                    raise OpError(
                        None, f"the batch would leave {rel} unreadable ({error.message}); nothing was written"
                    ) from error
                writes[rel] = (draft.old_text, text)
                self._kept_errors(rel, written, text)
        if new_pruned:
            rel = self.project.rel(self.ledger.path)
            old = self.ledger.text()
            writes[rel] = (old, (old or "") + "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in new_pruned))
        if not writes:
            return writes
        # The marks go in the same journaled batch as the files, so a crash cannot leave them out of step.
        in_use = [*self.work.places, *(r["id"] for r in self.pruned_before), *(r["id"] for r in new_pruned)]
        marks = advance(self.marks, used_numbers(in_use))
        self.handed = dict(marks.high)
        old_marks = self.marks_file.text()
        text = render_marks(marks)
        if marks.high and text != old_marks:
            writes[self.project.rel(self.marks_file.path)] = (old_marks, text)
            old_attributes, attributes = self.marks_file.attributes_text()
            if attributes != old_attributes:
                writes[self.project.rel(self.marks_file.attributes)] = (old_attributes, attributes)
        return writes

    def _spell(self, op: Op) -> None:
        """The op's ids as the files spell them, so that `set D-002` finds `### D-2:`."""
        spelled = self.work.spelled
        if op.id is not None:
            op.id = spelled(op.id)
        if op.get("successor") is not None:
            op.fields["successor"] = spelled(op.get("successor"))
        for name in ("refs", "follow"):
            if op.get(name):
                op.fields[name] = tuple(spelled(entry_id) for entry_id in op.get(name))

    def _odd_dates(self, op: Op, entry_id: str, today_: str) -> None:
        """A warning for a date given in the future, or before 1970: taken as given, but likely a typo."""
        for name in ("date", "last_seen"):
            given = op.get(name)
            if isinstance(given, str) and (given > today_ or given < "1970-01-01"):
                where = "is after today" if given > today_ else "is before 1970"
                self.notes.append(f"{entry_id}: {name} {given} {where}; kept as given (a typo?)")

    def _pruned_reason(self, entry_id: str) -> str | None:
        for record in (*self.pruned_before, *self.pruned_now):
            if same_id(str(record["id"]), entry_id):
                return str(record.get("reason") or "")
        return None

    def _missing_hint(self, entry_id: str) -> str:
        reason = self._pruned_reason(entry_id)
        return f" (it was pruned: {reason})" if reason is not None else ""

    # --- one method per op -------------------------------------------------------------------------

    def _kind(self, op: Op) -> Kind:
        kind = self.schema.kind(op.get("kind"))
        assert kind is not None  # parse_op checked it
        return kind

    def _draft_for(self, op: Op, rel: str | None, kind: Kind | None) -> tuple[str, Draft]:
        if rel is None:
            assert kind is not None
            rel = f"memory/{kind.file}"
        given = rel
        path = self.project.root / rel  # named by its place: a linked file is the link (Project.rel)
        rel = self.project.rel(path)
        if rel == f"memory/{PERSONA_FILE}":
            raise OpError(
                op.position, f"file: {rel} is the agents' persona (behaviour settings), not a memory file", "file"
            )
        if rel.startswith(("/", "..")) or not self.project.is_memory_path(path):
            shown = given if rel.startswith(("/", "..")) else rel  # outside the root: as it was given
            raise OpError(
                op.position, f"file: {shown!r} is not a Markdown file inside a memory/ folder of the project", "file"
            )
        out = self.project.leads_out(path)
        if out is not None:
            raise OpError(op.position, f"file: {rel} is a link to {out}, outside the project's memory folders", "file")
        if (
            kind is not None
            and kind.name == WORKING_KIND
            and (not rel.startswith(f"memory/{WORKING_FOLDER}/") or op.get("section") not in WORKING_SECTIONS)
        ):
            raise OpError(op.position, self._working_kind_refusal(), "kind")
        if rel.startswith(f"memory/{WORKING_FOLDER}/") and (kind is None or kind.name != WORKING_KIND):
            raise OpError(
                op.position,
                f"file: {rel} is in memory/{WORKING_FOLDER}/, which holds runs' working memory (memfiles working);"
                " put the entry in another memory file",
                "file",
            )
        if rel not in self.work.drafts:
            existing = empty_or_missing(path)
            if existing is False:
                raise OpError(
                    op.position, f"file: {rel} exists but is not a memory file (it has no index and no entries)", "file"
                )
            title = kind.file[:-3].capitalize() if kind and kind.file == Path(rel).name else Path(rel).stem
            if Path(rel).parent.name != "memory":  # memory/<domain>/knowledge.md is "Knowledge: <domain>"
                title = f"{title.capitalize()}: {Path(rel).parent.name}"
            if kind and kind.name == "working":  # memory/working/<run>.md
                title = f"Working memory: {Path(rel).stem}"
            memory = MemoryFile(title=title[:1].upper() + title[1:].replace("_", " "), manual=NEW_FILE_MANUAL)
            self.work.drafts[rel] = Draft(memory, existing)  # an empty file is written over, like a new one
        self.work.touched.add(rel)
        return rel, self.work.drafts[rel]

    @staticmethod
    def _working_kind_refusal() -> str:
        return (
            f"kind: {WORKING_KIND} entries are a run's working memory, written by `memfiles working start`,"
            " `working set` and `working todo`; add this entry as another kind"
        )

    def _status(self, op: Op, kind: Kind, status: str | None) -> str:
        status = status or kind.default_status
        if status not in kind.statuses:
            raise OpError(
                op.position,
                f"status: {status!r} is not a status of {with_article(kind.name)} ({', '.join(kind.statuses)})",
                "status",
            )
        if status == RETIRED and op.op != "retire":
            raise OpError(op.position, "status: retire an entry with the retire op, which records the reason", "status")
        return status

    def _add(self, op: Op, allocator: IdAllocator, date: str) -> str:
        kind = self._kind(op)
        rel, draft = self._draft_for(op, op.get("file"), kind)
        if kind.name == WORKING_KIND:
            # a run file holds one state entry, written first, then its todos (services/agents/working.py)
            has_state = any(name == WORKING_SECTIONS[0] and entries for name, _intro, entries in draft.sections)
            if has_state == (op.get("section") == WORKING_SECTIONS[0]):
                raise OpError(op.position, self._working_kind_refusal(), "kind")
        status = self._status(op, kind, op.get("status"))
        entry_id = allocator.next_id(kind.prefix)
        entry = Entry(
            id=entry_id,
            title=op.get("title"),
            date=op.get("date", date),
            area=op.get("area"),
            status=status,
            body=op.get("body"),
            refs=op.get("refs", ()),
            tags=op.get("tags", ()),
            source=op.get("source"),
            confirmed=op.get("confirmed"),
            last_seen=op.get("last_seen"),
            evidence=op.get("evidence", ()),
            failed=op.get("failed", ()),
            contradicted=op.get("contradicted"),
            promoted=op.get("promoted", ()),
        )
        draft.append(entry, op.get("section"))
        self.work.moved(entry_id, None, rel)
        return entry_id

    def _update(self, op: Op) -> tuple[str, bool]:
        """The entry's id, and whether the op changed it (an update to the values it has already is told
        as a warning, not as an update)."""
        rel, draft, entries, index = self.work.locate(op, self._missing_hint(op.id or ""))
        entry = entries[index]
        kind = self.schema.kind_of(entry.id)
        if kind is None:
            raise OpError(op.position, f"id: {entry.id} has an unknown prefix; fix the file first", "id")
        changes = {key: value for key, value in op.fields.items() if key not in ("file", "section")}
        if "status" in changes:
            self._status(op, kind, changes["status"])
            if entry.status == RETIRED and changes["status"] != RETIRED and (entry.successor or entry.reason):
                # back in use: a successor and a reason on a live entry would fail check (successor-not-retired)
                changes.update(successor=None, reason=None)
                was = f"successor {entry.successor} and reason were" if entry.successor else "reason was"
                self.notes.append(f"{entry.id} is no longer retired: its {was} cleared (reason: {entry.reason})")
        updated = replace(entry, **changes)
        target_rel = op.get("file")
        current = draft.freeze().section_of(entry.id)
        section = op.get("section", current)
        elsewhere = target_rel is not None and posixpath.normpath(target_rel.replace("\\", "/")) != rel
        if updated == entry and not elsewhere and section == current:
            given = [key for key in op.fields if key not in ("id", "file", "section")]
            where = f"{rel}, section {current}" if current else rel
            already = f"has the {', '.join(given)} given" if given else f"stands in {where}"
            self.notes.append(f"{entry.id} already {already}: nothing changed")
            return entry.id, False
        if target_rel is not None or "section" in op.fields:
            new_rel, target = self._draft_for(op, target_rel or rel, kind)  # may refuse: nothing moved yet
            del entries[index]
            target.append(updated, section)
            self.work.moved(entry.id, rel, new_rel)
        else:
            entries[index] = updated
        return entry.id, True

    def _retire(self, op: Op) -> tuple[str, bool]:
        _rel, _draft, entries, index = self.work.locate(op, self._missing_hint(op.id or ""))
        entry = entries[index]
        # What the op does not change stays: retiring again with a new reason keeps the successor.
        successor = op.get("successor", entry.successor)
        if "successor" in op.fields:
            if successor == op.id:
                raise OpError(op.position, "successor: an entry cannot succeed itself", "successor")
            if successor not in self.work.places:
                raise OpError(
                    op.position, f"successor: no entry {successor}{self._missing_hint(successor)}", "successor"
                )
            cycle = self._cycle(entry.id, successor)
            if cycle:
                raise OpError(
                    op.position,
                    f"successor: {' -> '.join(cycle)} would be a cycle; a chain of successors must end at a live entry",
                    "successor",
                )
        if entry.status == RETIRED and (entry.reason != op.get("reason") or entry.successor != successor):
            was = f"reason: {entry.reason}" + (f", successor {entry.successor}" if entry.successor else "")
            self.notes.append(f"{entry.id} was already retired ({was}); this retire replaced that")
        elif entry.status == RETIRED:  # the same retire again: as an update to the values there, nothing changed
            self.notes.append(f"{entry.id} is already retired with that reason: nothing changed")
            return entry.id, False
        entries[index] = replace(entry, status=RETIRED, successor=successor, reason=op.get("reason"))
        return entry.id, True

    def _cycle(self, entry_id: str, successor: str) -> list[str] | None:
        """The chain `entry_id -> successor -> ...` when it comes back to `entry_id`, else None."""
        chain = [entry_id, successor]
        current = self.work.entry(successor)
        while current is not None and current.successor:
            chain.append(current.successor)
            if current.successor == entry_id:
                return chain
            if current.successor in chain[:-1]:
                return None  # a cycle elsewhere; check reports it
            current = self.work.entry(current.successor)
        return None

    def _section(self, op: Op) -> None:
        _rel, draft = self._draft_for(op, op.get("file"), None)
        for section in draft.sections:
            if section[0] == op.get("section"):
                section[1] = op.get("intro")
                return
        draft.add_section(op.get("section"), op.get("intro"), [])

    def _prune(self, op: Op, date: str) -> dict[str, Any]:
        from memfiles.format.render import render_entry

        assert op.id is not None
        if op.id not in self.work.places and self._deleted_by_hand(op.id):
            # An id handed out, then deleted by hand: recording it here is how `check` stops reporting it.
            return {"id": op.id, "title": "", "date": date, "reason": op.get("reason"), "path": None, "entry": ""}
        rel, _draft, entries, index = self.work.locate(op, self._missing_hint(op.id or ""))
        entry = entries.pop(index)
        self.work.moved(entry.id, rel, None)
        return {
            "id": entry.id,
            "title": entry.title,
            "date": date,
            "reason": op.get("reason"),
            "path": rel,
            "entry": render_entry(entry),
        }

    def _kept_errors(self, rel: str, written: MemoryFile, text: str) -> None:
        """A warning for each error `check` will report in a file this batch rewrites: the batch checked
        its own ops, so these were there before (a hand edit), and the write carried them over."""
        for found in validate_file(rel, written, text, self.schema):
            if found.severity == "error":
                self.notes.append(
                    f"{rel}:{found.line}: {found.code} {found.message} (there before this write; check reports it)"
                )

    def _left_pointing(self, pruned: set[str]) -> list[str]:
        """A warning for each live entry whose refs or successor name an id this batch pruned: a reference
        that now leads nowhere (audit reports it as dangling until it is edited)."""
        notes = []
        for draft in self.work.drafts.values():
            for entry in draft.freeze().entries:
                named = sorted({*(ref for ref in entry.refs if ref in pruned), *({entry.successor} & pruned)})
                if named and entry.id not in pruned:
                    notes.append(
                        f"{entry.id} still refers to {', '.join(named)}, pruned now: edit its refs or successor"
                        " (audit reports it as dangling-ref)"
                    )
        return notes

    def _deleted_by_hand(self, entry_id: str) -> bool:
        """True for an id below its prefix's mark that no entry, no pruned record and no gap accounts for."""
        if self.marks is None or self._pruned_reason(entry_id) is not None:
            return False
        prefix, number = split_id(entry_id)
        return number in self.marks.numbers(prefix) and number not in self.marks.never.get(prefix, set())
