"""The read side of a project, shared by list, show, audit and refs: files that do not parse are set aside
and named (each an `unparseable` finding) while the rest is used; ids as users type them; pruned entries.

Writes never come here: they load with `Project.load()`, which refuses a broken file.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from memfiles.contract import Finding, entry_object, finding
from memfiles.errors import AmbiguousId, MemfilesError, ParseError
from memfiles.format.ids import Kind, Schema, format_id, id_key, split_id
from memfiles.format.model import Entry, area_key
from memfiles.format.parse import parse
from memfiles.format.validate import is_date
from memfiles.store.project import Loaded, Located, Project
from memfiles.store.pruned_ledger import Ledger


def unparseable(problem: ParseError) -> Finding:
    """A memory file set aside because it does not parse (or is not UTF-8, or cannot be read)."""
    return finding("unparseable", problem.path, problem.line, problem.message)


@dataclass(frozen=True)
class PrunedLedger:
    """memory/pruned.jsonl as the read side sees it: records by id, the line of each, and its problem if the
    ledger does not parse (then no record is known, and the problem is reported like a broken file)."""

    rel: str
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    problem: ParseError | None = None


def read_pruned(project: Project) -> PrunedLedger:
    ledger = Ledger(project.settings.memory_dir / "pruned.jsonl")
    rel = project.rel(ledger.path)
    try:
        records = ledger.read()
    except ParseError as error:
        return PrunedLedger(rel, problem=ParseError(rel, error.line, error.message))
    numbers = [n for n, line in enumerate((ledger.text() or "").splitlines(), start=1) if line.strip()]
    by_id = {record["id"]: record for record in records}
    lines = {record["id"]: number for number, record in zip(numbers, records, strict=True)}
    return PrunedLedger(rel, by_id, lines)


@dataclass(frozen=True)
class Reading:
    """What a read command works from: the files that parse, the pruned ledger, and what was set aside."""

    loaded: Loaded
    pruned: PrunedLedger

    @property
    def problems(self) -> list[ParseError]:
        return [*self.loaded.problems, *([self.pruned.problem] if self.pruned.problem else [])]

    @property
    def skipped(self) -> list[Finding]:
        """Every file set aside, as findings (the `skipped` list of a read command's JSON)."""
        return [unparseable(problem) for problem in self.problems]


def read_project(project: Project) -> Reading:
    return Reading(project.load_all(), read_pruned(project))


def normalize_id(text: str) -> tuple[str, int]:
    """(prefix, number) of an id as a user or agent types it: `D-002`, `d-002`, `@@D-002`, `D-2` (see
    format/ids.id_key, which every command that takes an id uses)."""
    key = id_key(text)
    if key is None:
        raise MemfilesError(f"{text.strip()!r} is not an id (PREFIX-NUMBER, like D-476)")
    return key


@dataclass(frozen=True)
class PrunedEntry:
    """An entry that exists only in memory/pruned.jsonl: the record and the entry rebuilt from it."""

    entry: Entry
    record: dict[str, Any]
    ledger_rel: str
    ledger_line: int | None


def _rebuild(record: dict[str, Any], schema: Schema) -> Entry:
    """The entry a pruned record holds (its text as it stood, read with the project's kinds), or a bare
    one from the record's fields."""
    try:
        entries = parse(str(record.get("entry", "")), None, schema).entries
    except ParseError:
        entries = []
    if entries and entries[0].id == record["id"]:
        return entries[0]
    # Its own date from its text's metadata when that is there; else (deleted by hand, or text of a kind
    # no longer configured) the day its prune was recorded, the last day it was known on.
    dates = [value for key, value in metadata_pairs(str(record.get("entry") or "")) if key == "date"]
    date = next((d for d in dates if is_date(d)), str(record.get("date") or ""))
    return Entry(record["id"], str(record.get("title") or "(deleted by hand)"), date if is_date(date) else "", "", "")


def metadata_pairs(text: str) -> list[tuple[str, str]]:
    """The `- key: value` lines of an entry's text, as (key, value)."""
    from memfiles.format.grammar import META_RE

    return [(m.group(1), m.group(2)) for m in map(META_RE.match, text.split("\n")) if m]


HAND_DELETED = "deleted by hand before its prune was recorded, so its text is not kept"


def pruned_origin(record: dict[str, Any]) -> str:
    """Where a pruned entry was and what it was called, as audit and show say it: `from PATH (was:
    TITLE)`, or that it had been deleted by hand (`prune` of an id no file holds records only the id)."""
    if not record.get("path"):
        return HAND_DELETED
    return f"from {record['path']} (was: {record.get('title') or '?'})"


def find_entry(reading: Reading, text: str, schema: Schema) -> Located | PrunedEntry:
    """The entry `text` names, live or pruned; MemfilesError when there is none, or two (ambiguous)."""
    wanted = normalize_id(text)
    shown = format_id(wanted[0], wanted[1], schema.id_width)
    found = [located for located in reading.loaded.entries() if _same(located.entry.id, wanted)]
    if len(found) > 1:
        raise AmbiguousId(found[0].entry.id, [located.where for located in found])
    if found:
        return found[0]
    for entry_id, record in reading.pruned.records.items():
        if _same(entry_id, wanted):
            return PrunedEntry(_rebuild(record, schema), record, reading.pruned.rel, reading.pruned.lines.get(entry_id))
    for entry_id, rel in reading.loaded.unreadable_ids.items():
        if _same(entry_id, wanted):
            problem = next(p for p in reading.loaded.problems if p.path == rel)
            # code `parse`, with the file and the line where it broke (not the entry's: it cannot be read)
            raise ParseError(rel, problem.line, f"{entry_id} is in this file, which does not parse: {problem.message}")
    unsure = f" ({reading.pruned.rel} does not parse)" if reading.pruned.problem else ""
    raise MemfilesError(f"no entry {shown}{unsure}{unknown_prefix(shown, schema)}")


def unknown_prefix(entry_id: str, schema: Schema) -> str:
    """What to add to "no entry X-1" when no kind has the prefix X (a typo or another project's id)."""
    if schema.kind_of(entry_id) is not None:
        return ""
    return f" (no kind has the prefix {entry_id.split('-', 1)[0]}; the prefixes are {', '.join(schema.prefixes)})"


def _same(entry_id: str, wanted: tuple[str, int]) -> bool:
    try:
        return split_id(entry_id) == wanted
    except ValueError:
        return False


def entry_json(located: Located, schema: Schema, *, body: bool = True) -> dict[str, Any]:
    """The contract's entry object for a located entry: the one place every command makes it."""
    kind = schema.kind_of(located.entry.id)
    return entry_object(
        located.entry,
        kind=kind.name if kind else None,
        path=located.file.rel,
        line=located.entry.line,
        section=located.section,
        body=body,
    )


def show_json(project: Project, text: str) -> dict[str, Any]:
    """What `show --json` prints for `text`: the entry (a pruned one as it was, with `pruned` set) and the
    files set aside; MemfilesError (ParseError for an entry in a broken file) when there is none."""
    schema = project.settings.schema
    reading = read_project(project)
    found = find_entry(reading, text, schema)
    entry = pruned_json(found, schema) if isinstance(found, PrunedEntry) else entry_json(found, schema)
    return {"entry": entry, "skipped": [f.as_json() for f in reading.skipped]}


def pruned_json(pruned: PrunedEntry, schema: Schema) -> dict[str, Any]:
    kind = schema.kind_of(pruned.entry.id)
    record = pruned.record
    return entry_object(
        pruned.entry,
        kind=kind.name if kind else None,
        path=record.get("path"),
        line=None,
        section=None,
        pruned={"date": record.get("date"), "reason": record.get("reason")},
    )


def resolve_kinds(schema: Schema, names: tuple[str, ...]) -> list[Kind]:
    """The kinds named (by name or prefix, any case); MemfilesError naming the known ones otherwise."""
    kinds = []
    for name in names:
        kind = next((k for k in schema.kinds if name.strip().lower() in (k.name, k.prefix.lower())), None)
        if kind is None:
            known = ", ".join(f"{k.name} ({k.prefix})" for k in schema.kinds)
            raise MemfilesError(f"unknown kind {name!r} (known: {known})")
        kinds.append(kind)
    return kinds


def resolve_statuses(schema: Schema, names: tuple[str, ...]) -> list[str]:
    known = schema.status_order
    statuses = []
    for name in names:
        status = name.strip().lower()
        if status not in known:
            raise MemfilesError(f"unknown status {name!r} (known: {', '.join(known)})")
        statuses.append(status)
    return statuses


@dataclass(frozen=True)
class EntryFilter:
    """--kind/--area/--status/--path as given: any value within one filter, every filter at once.

    Build it before reading anything, so that `--kind nonsense` is refused (exit 2) at once.
    """

    kinds: tuple[Kind, ...] = ()
    areas: frozenset[str] = frozenset()
    statuses: tuple[str, ...] = ()
    path_glob: str | None = None
    schema: Schema = field(default_factory=Schema)

    @classmethod
    def build(
        cls,
        schema: Schema,
        *,
        kinds: tuple[str, ...] = (),
        areas: tuple[str, ...] = (),
        statuses: tuple[str, ...] = (),
        path_glob: str | None = None,
    ) -> EntryFilter:
        return cls(
            tuple(resolve_kinds(schema, kinds)),
            frozenset(area_key(area) for area in areas),
            tuple(resolve_statuses(schema, statuses)),
            path_glob,
            schema,
        )

    def matches(self, located: Located) -> bool:
        entry = located.entry
        return (
            (not self.kinds or self.schema.kind_of(entry.id) in self.kinds)
            and (not self.statuses or entry.status in self.statuses)
            and (not self.areas or area_key(entry.area) in self.areas)
            and (not self.path_glob or fnmatch.fnmatch(located.file.rel, self.path_glob))
        )
