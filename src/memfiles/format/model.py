"""The memory-file format as frozen data: an Entry, the Sections that group entries, a MemoryFile."""

from __future__ import annotations

from dataclasses import dataclass, field

from memfiles.format.grammar import MANUAL_HEADING as MANUAL_HEADING  # re-exported for the write path

# Metadata keys in the order they are rendered; the first three are required on every entry.
META_KEYS: tuple[str, ...] = (
    "date",
    "area",
    "status",
    "refs",
    "tags",
    "successor",
    "reason",
    "source",
    "confirmed",
    "last-seen",
    "evidence",
    "failed",
    "contradicted",
    "promoted",
)
REQUIRED_KEYS: tuple[str, ...] = ("date", "area", "status")
LIST_KEYS: frozenset[str] = frozenset({"refs", "tags", "evidence", "promoted", "failed"})


def area_key(area: str) -> str:
    """What an area is compared by, wherever one is filtered on (`list --area`, memsearch, recall): an
    area is free text, and ` Format` and `format` are one area to whoever types it."""
    return area.strip().casefold()


@dataclass(frozen=True)
class Entry:
    """One finding: a stable id, a searchable title, its metadata and a body that stands alone."""

    id: str
    title: str
    date: str
    area: str
    status: str
    body: str = ""
    refs: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    successor: str | None = None
    reason: str | None = None
    source: str | None = None
    confirmed: str | None = None
    last_seen: str | None = None
    evidence: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()  # runs of a distilled finding that did not reach signoff
    contradicted: str | None = None
    # The entries an episode (or a run) was promoted to: a procedure, an insight, an episode.
    promoted: tuple[str, ...] = ()
    # Where the heading stood in the file it was parsed from (1-based); 0 for an entry not from a file.
    line: int = field(default=0, compare=False)
    # Where each metadata line stood, (key, line), for a finding about its value; () when not from a file.
    meta_lines: tuple[tuple[str, int], ...] = field(default=(), compare=False, repr=False)

    def line_of(self, key: str) -> int:
        """The line of metadata `key` in the file it was parsed from; the heading's when not known."""
        return next((line for name, line in self.meta_lines if name == key), self.line)

    @property
    def prefix(self) -> str:
        return self.id.split("-", 1)[0]

    def meta(self) -> list[tuple[str, str]]:
        """The metadata as (key, rendered value) pairs in canonical order, empty values left out."""
        pairs: list[tuple[str, str]] = []
        for key in META_KEYS:
            value = getattr(self, key.replace("-", "_"))
            if key in LIST_KEYS:
                if value:
                    pairs.append((key, ", ".join(value)))
            elif value:
                pairs.append((key, value))
        return pairs


@dataclass(frozen=True)
class Section:
    """A level-2 heading of a memory file, its free introduction and its entries; name None is the top."""

    name: str | None
    intro: str = ""
    entries: tuple[Entry, ...] = ()
    line: int = field(default=0, compare=False)


@dataclass(frozen=True)
class MemoryFile:
    """A parsed memory file. `manual` is the `## Manual` section verbatim, to the end of the file.

    Every text in the model has LF line ends; `newline` is how the file ends its lines ("\n" or "\r\n")
    and `bom` whether it starts with a byte-order mark: render writes both back as the file had them.
    """

    title: str | None
    preamble: str = ""
    sections: tuple[Section, ...] = ()
    manual: str | None = None
    manual_line: int = field(default=0, compare=False)
    newline: str = "\n"
    bom: bool = False

    @property
    def entries(self) -> list[Entry]:
        return [entry for section in self.sections for entry in section.entries]

    def section_of(self, entry_id: str) -> str | None:
        for section in self.sections:
            for entry in section.entries:
                if entry.id == entry_id:
                    return section.name
        return None
