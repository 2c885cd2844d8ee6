"""The memory files a batch edits, and where each id stands in them: once per entry, so an id two entries
carry (by hand, or from a merge) is seen as ambiguous instead of silently meaning the first."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memfiles.errors import OpError
from memfiles.format.ids import id_key
from memfiles.format.model import Entry, MemoryFile, Section
from memfiles.store.ops import Op
from memfiles.store.project import LoadedFile


class Draft:
    """A memory file being edited: mutable sections, frozen again to render."""

    def __init__(self, memory: MemoryFile, old_text: str | None) -> None:
        self.memory = memory
        self.old_text = old_text
        self.sections: list[list[Any]] = [[s.name, s.intro, list(s.entries)] for s in memory.sections]

    def freeze(self) -> MemoryFile:
        return replace(self.memory, sections=tuple(Section(n, i, tuple(e)) for n, i, e in self.sections))

    def find_all(self, entry_id: str) -> list[tuple[list[Entry], int]]:
        """Every place in this file where an entry carries `entry_id`."""
        return [
            (entries, index)
            for _name, _intro, entries in self.sections
            for index, entry in enumerate(entries)
            if entry.id == entry_id
        ]

    def find(self, entry_id: str) -> tuple[list[Entry], int] | None:
        found = self.find_all(entry_id)
        return found[0] if found else None

    def section_of(self, entries: list[Entry]) -> str | None:
        for name, _intro, listed in self.sections:
            if listed is entries:
                return name
        return None

    def append(self, entry: Entry, section: str | None) -> None:
        for name, _intro, entries in self.sections:
            if name == section:
                entries.append(entry)
                return
        if section is None:
            self.sections.insert(0, [None, "", [entry]])
        else:
            self.add_section(section, "", [entry])

    def add_section(self, name: str, intro: str, entries: list[Entry]) -> None:
        """A section the file does not have yet: at the end, or just above a closing section of text only
        (the distiller's Notes, a hand-written summary) that the file already ended with, so that a later
        distil's new sections stand above its Notes as the first ones did."""
        at = len(self.sections) - 1 if self._closing_section() else len(self.sections)
        self.sections.insert(at, [name, intro, entries])

    def _closing_section(self) -> bool:
        """Whether the file as read ends with a named section of text and no entries, and still does."""
        if not self.sections or not self.memory.sections:
            return False
        name, intro, entries = self.sections[-1]
        last = self.memory.sections[-1]
        return name is not None and bool(intro.strip()) and not entries and last.name == name and not last.entries


class BatchFiles:
    """The drafts of a batch by path, `places[id]`: the path of each entry carrying the id, and the paths
    the ops touched (only those are written: a file edited by hand that no op names is left as it is)."""

    def __init__(self, files: list[LoadedFile]) -> None:
        self.drafts: dict[str, Draft] = {f.rel: Draft(f.memory, f.text) for f in files}
        self.touched: set[str] = set()
        self.places: dict[str, list[str]] = {}
        self._spellings: dict[tuple[str, int], list[str]] = {}  # an id's key -> the spellings in places
        for loaded in files:
            for entry in loaded.memory.entries:
                self._place(entry.id, loaded.rel)

    def _place(self, entry_id: str, rel: str) -> None:
        if entry_id not in self.places:
            key = id_key(entry_id)
            if key is not None:
                self._spellings.setdefault(key, []).append(entry_id)
        self.places.setdefault(entry_id, []).append(rel)

    def twins(self, entry_id: str) -> list[str]:
        """Every spelling the files give the id `entry_id` names (`### D-2:` beside `### D-002:` is one id
        twice, which check reports as duplicate-id): itself first when the files spell it so."""
        key = id_key(entry_id)
        others = [known for known in self._spellings.get(key, ()) if known != entry_id] if key else []
        return [entry_id, *others] if entry_id in self.places else others

    def rels(self, entry_id: str) -> list[str]:
        """The path of each entry carrying `entry_id`, in any spelling (a path twice: two entries there)."""
        return [rel for spelling in self.twins(entry_id) for rel in self.places[spelling]]

    def spelled(self, entry_id: str) -> str:
        """`entry_id` as the files spell it: itself, else the id of an entry with the same prefix and number
        (a file may hold `### D-2:` where D-002 is meant, which check reports as id-format)."""
        twins = self.twins(entry_id)
        return twins[0] if twins else entry_id

    def where(self, entry_id: str) -> list[str]:
        """`path:line` of every entry carrying `entry_id` (the line as read; a new entry has none yet)."""
        found = []
        for spelling in self.twins(entry_id):
            for rel in dict.fromkeys(self.places[spelling]):
                for entries, index in self.drafts[rel].find_all(spelling):
                    line = entries[index].line
                    found.append(f"{rel}:{line}" if line else rel)
        return found

    def entry(self, entry_id: str) -> Entry | None:
        """The entry carrying `entry_id` (the first, when it is ambiguous), or None."""
        rels = self.places.get(entry_id)
        found = self.drafts[rels[0]].find(entry_id) if rels else None
        return found[0][found[1]] if found else None

    def moved(self, entry_id: str, old_rel: str | None, new_rel: str | None) -> None:
        """Record that an entry left `old_rel` (None: it is new) for `new_rel` (None: it is gone)."""
        if old_rel is not None:
            self.places[entry_id].remove(old_rel)
            if not self.places[entry_id]:
                del self.places[entry_id]
                key = id_key(entry_id)
                if key is not None:
                    self._spellings[key].remove(entry_id)
        if new_rel is not None:
            self._place(entry_id, new_rel)

    def ambiguous(self, op: Op, entry_id: str, field: str = "id") -> OpError:
        where = self.where(entry_id)
        return OpError(
            op.position,
            f"{field}: {entry_id} is ambiguous: {len(where)} entries carry it ({', '.join(where)}); give one a"
            f" new id with memfiles renumber {entry_id} --at {where[-1]}",
            field,
        )

    def locate(self, op: Op, missing_hint: str = "") -> tuple[str, Draft, list[Entry], int]:
        """The one entry `op.id` names: OpError when there is none, or more than one."""
        assert op.id is not None
        rels = self.rels(op.id)
        if not rels:
            raise OpError(op.position, f"id: no entry {op.id}{missing_hint}", "id")
        if len(rels) > 1:
            raise self.ambiguous(op, op.id)
        rel = rels[0]
        found = self.drafts[rel].find(self.twins(op.id)[0])
        assert found is not None
        self.touched.add(rel)
        return rel, self.drafts[rel], found[0], found[1]
