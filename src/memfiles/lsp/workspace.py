"""The language server's view of a project: every entry by id, kept in step with the files as they change.

Built once from the memory files, then refreshed by a stat of each memory file (and of the memory folders,
for files added or removed) before every request: a save by another tool or a branch switch is seen on
the next hover. Nothing here imports the index (no numpy, torch or chromadb): hover, completion and
symbols are answered from parsed files and a small inverted index of title words.
"""

from __future__ import annotations

import heapq
import math
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memfiles.errors import ParseError
from memfiles.format.grammar import REF_RE
from memfiles.format.ids import HIDDEN_KINDS, RETIRED, id_key, normalize_id
from memfiles.format.toc import INDEX_END, INDEX_START_PREFIX
from memfiles.services.read import entry_json
from memfiles.services.upkeep.audit import successor_chain
from memfiles.services.upkeep.refs import _anchors, _resolve_target, source_files
from memfiles.store.project import WORKING_FOLDER, LoadedFile, Located, Project
from memfiles.store.pruned_ledger import Ledger

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]+")
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "that",
        "this",
        "with",
        "from",
        "are",
        "was",
        "were",
        "have",
        "has",
        "not",
        "but",
        "into",
        "when",
        "then",
        "than",
        "its",
        "our",
        "you",
        "can",
        "will",
        "one",
        "all",
        "any",
        "out",
        "use",
        "used",
        "how",
        "what",
        "why",
        "who",
        "which",
        "there",
        "their",
        "them",
        "they",
        "each",
        "also",
        "only",
    ]
)
# How often the project is walked again for memory/ folders that did not exist (a package's new one):
# the walk takes about 3 ms on this repository (7,000 folders, the skipped ones not entered); at 60 s, a
# package folder created by another tool was not seen by a hover for up to a minute.
RESCAN_SECONDS = 2.0


def words(text: str) -> list[str]:
    """Lower-case words of two letters or more, without the commonest English ones."""
    return [w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in _STOP]


@dataclass(frozen=True)
class Resolution:
    """What a reference resolves to: state ok, retired, pruned, unreadable, ambiguous or dangling, and a
    one-line message."""

    state: str
    message: str
    located: Located | None = None
    successor: Located | None = None
    pruned: dict[str, Any] | None = None
    target: Path | None = None  # a doc or skill file
    anchor_line: int | None = None


@dataclass
class RefSite:
    """One `@@...` in a file: 0-based line, and the column span in characters."""

    path: Path
    line: int
    start: int
    end: int
    token: str


@dataclass
class _FileState:
    stamp: tuple[int, int]
    loaded: LoadedFile | None
    error: ParseError | None = None


@dataclass
class WorkspaceIndex:
    """Entries by id, the pruned ledger, and an inverted index of title words, refreshed by stat."""

    project: Project
    files: dict[Path, _FileState] = field(default_factory=dict)
    by_id: dict[str, Located] = field(default_factory=dict)
    twice: dict[str, list[Located]] = field(default_factory=dict)  # ids two entries carry
    pruned: dict[str, dict[str, Any]] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)  # id -> the file that holds it and does not parse
    postings: dict[str, set[str]] = field(default_factory=dict)
    generation: int = 0
    _dirs: dict[Path, int] = field(default_factory=dict)
    _walked: float = 0.0
    _ledger_stamp: tuple[int, int] | None = None
    _refs: dict[Path, tuple[tuple[int, int], list[RefSite]]] | None = None
    _base: list[str] = field(default_factory=list)
    _rank: dict[str, tuple[bool, int]] = field(default_factory=dict)
    _words: dict[int, tuple[Any, frozenset[str]]] = field(default_factory=dict)  # id(entry): (entry, its words)

    @classmethod
    def open(cls, project: Project) -> WorkspaceIndex:
        index = cls(project)
        index.refresh(force=True)
        return index

    # --- keeping in step ------------------------------------------------------------------------------

    def refresh(self, force: bool = False, rescan: bool = True) -> bool:
        """Reload what changed on disk since the last look; True when anything did. `rescan` False: no walk
        of the project for new memory/ folders (a look made on a timer: the walk is for requests)."""
        now = time.monotonic()
        changed = False
        dirs_moved = any(_mtime(folder) != stamp for folder, stamp in self._dirs.items())
        if force or dirs_moved or (rescan and now - self._walked > RESCAN_SECONDS):  # new memory/ folders
            self._dirs = {folder: _mtime(folder) for folder in self._memory_dirs()}
            self._walked = now
            paths = set(self.project.markdown_files())
            for gone in set(self.files) - paths:
                del self.files[gone]
                changed = True
        else:
            paths = set(self.files)
        for path in paths:
            stamp = _stamp(path)
            state = self.files.get(path)
            if state is not None and state.stamp == stamp:
                continue
            self.files[path] = self._load(path, stamp)
            changed = True
        ledger = self.project.settings.memory_dir / "pruned.jsonl"
        if _stamp(ledger) != self._ledger_stamp:
            self._ledger_stamp = _stamp(ledger)
            try:
                self.pruned = {record["id"]: record for record in Ledger(ledger).read()}
            except ParseError:
                self.pruned = {}
            changed = True
        if changed or force:
            self._rebuild()
        return changed

    def _memory_dirs(self) -> list[Path]:
        found = []
        for folder in self.project.memory_dirs():
            found.append(folder)
            found.extend(p for p in folder.rglob("*") if p.is_dir() and not p.name.startswith("."))
        return found

    def _load(self, path: Path, stamp: tuple[int, int]) -> _FileState:
        try:
            return _FileState(stamp, self.project.load_file(path))
        except ParseError as error:
            return _FileState(stamp, None, error)
        except (OSError, UnicodeDecodeError) as error:
            return _FileState(stamp, None, ParseError(self.project.rel(path), None, str(error)))

    def _rebuild(self) -> None:
        self.by_id = {}
        self.twice = {}
        self.postings = {}
        self.unreadable = self.project.ids_in_broken([s.error for s in self.files.values() if s.error is not None])
        for state in sorted(self.files.values(), key=lambda s: s.loaded.rel if s.loaded else ""):
            if state.loaded is None:
                continue
            for located in self.project.entries([state.loaded]):
                if located.entry.id in self.by_id:  # two entries carry it: which one a reference means, none can say
                    self.twice.setdefault(located.entry.id, [self.by_id[located.entry.id]]).append(located)
                self.by_id.setdefault(located.entry.id, located)
        # live before retired, newest first, then by id: computed once here, not per completion (three
        # stable sorts: the last key decides first; a key built per entry cost a quarter of a rebuild)
        ordered = sorted(self.by_id.values(), key=lambda located: located.entry.id)
        ordered.sort(key=lambda located: located.entry.date, reverse=True)
        ordered.sort(key=lambda located: located.entry.status == RETIRED)
        self._base = [located.entry.id for located in ordered]
        self._rank = {
            located.entry.id: (located.entry.status == RETIRED, number) for number, located in enumerate(ordered)
        }
        known, self._words = self._words, {}
        for entry_id, located in self.by_id.items():
            entry = located.entry
            cached = known.get(id(entry))
            # an unchanged file keeps its parsed entries: their words are not read again (a CLI write to one
            # file of a 10,000-entry memory is diagnosed within a second)
            said = cached[1] if cached is not None and cached[0] is entry else None
            if said is None:
                said = frozenset(words(f"{entry.title} {entry.area} {' '.join(entry.tags)}"))
            self._words[id(entry)] = (entry, said)
            for word in said:
                self.postings.setdefault(word, set()).add(entry_id)
        self.generation += 1

    def loaded_files(self) -> list[LoadedFile]:
        return [state.loaded for state in self.files.values() if state.loaded is not None]

    def is_memory_file(self, path: Path) -> bool:
        return self.project.is_memory_path(path)

    # --- answers ----------------------------------------------------------------------------------------

    def kind_of(self, entry_id: str) -> str | None:
        kind = self.project.settings.schema.kind_of(entry_id)
        return kind.name if kind else None

    def entry_json(self, located: Located, body: bool = True) -> dict[str, Any]:
        """The contract's entry object for an entry of the workspace."""
        return entry_json(located, self.project.settings.schema, body=body)

    def resolve(self, match: re.Match[str]) -> Resolution:
        """What a REF_RE match resolves to (the same states as `memfiles refs`)."""
        if match.group("id"):
            return self.resolve_id(match.group("id"))
        settings = self.project.settings
        if match.group("doc"):
            base, name, anchor = self.project.root / settings.docs_dir, match.group("doc"), match.group("doc_anchor")
            target = _resolve_target(base, name, ["{name}", "{name}.md", "{name}/README.md", "{name}/index.md"])
            what = f"doc {name}"
        else:
            base, name = self.project.root / settings.skills_dir, match.group("skill")
            anchor = match.group("skill_anchor")
            target = _resolve_target(base, name, ["{name}/SKILL.md", "{name}.md", "{name}/README.md"])
            what = f"skill {name}"
        if target is None:
            return Resolution("dangling", f"no {what} under {base.name}/")
        line = None
        if anchor:
            if anchor not in _anchors(target):
                return Resolution("dangling", f"{what} has no heading #{anchor}", target=target)
            line = _anchor_line(target, anchor)
        return Resolution("ok", f"{what} ({self.project.rel(target)})", target=target, anchor_line=line)

    def spelled(self, entry_id: str) -> str:
        """The id as the project spells it (`T-2` and `t-002` name T-002), or `entry_id` when none has it."""
        if entry_id in self.by_id or entry_id in self.pruned or entry_id in self.unreadable:
            return entry_id
        key = id_key(entry_id)
        known_ids = (*self.by_id, *self.pruned, *self.unreadable)
        return next((known for known in known_ids if id_key(known) == key), entry_id)

    def resolve_id(self, written: str) -> Resolution:
        entry_id = self.spelled(written)
        resolution = self._resolve_known(entry_id)
        if resolution.state == "dangling":  # as every command spells it: `@@t-9` names T-009
            return replace(
                resolution, message=f"no entry {normalize_id(written, self.project.settings.schema.id_width)}"
            )
        if entry_id != written:
            return replace(resolution, message=f"{resolution.message} (write it @@{entry_id})")
        return resolution

    def _resolve_known(self, entry_id: str) -> Resolution:
        carriers = self.twice.get(entry_id)
        if carriers:  # as `memfiles refs` says it (ref-ambiguous): hover and definition would pick one in silence
            where = ", ".join(located.where for located in carriers)
            message = f"{entry_id} is carried by {len(carriers)} entries ({where}): give one another id"
            message += " with memfiles renumber"
            return Resolution("ambiguous", message, carriers[0])
        located = self.by_id.get(entry_id)
        if located is None:
            if entry_id in self.pruned:
                record = self.pruned[entry_id]
                return Resolution("pruned", f"{entry_id} was pruned: {record.get('reason', '')}", pruned=record)
            if entry_id in self.unreadable:  # as `memfiles refs` says it: a warning, not a missing entry
                return Resolution("unreadable", f"{entry_id} is in {self.unreadable[entry_id]}, which does not parse")
            return Resolution("dangling", f"no entry {entry_id}")
        if located.entry.status == RETIRED:
            live = successor_chain(entry_id, self.by_id)
            successor = self.by_id.get(live) if live else None
            message = f"{entry_id} is retired; its successor is {live}" if live else f"{entry_id} is retired"
            return Resolution("retired", message, located, successor)
        return Resolution("ok", f"{located.entry.title} ({located.where})", located)

    def complete(
        self,
        context: str,
        typed: str = "",
        limit: int = 100,
        boost: dict[str, float] | None = None,
        hidden: bool = False,
    ):
        """Entries for a completion after `@@`: those matching what was typed, ranked by the words around
        the cursor (idf-weighted overlap with title, area and tags), then by the semantic `boost` if any,
        live before retired, newest first. Working-memory entries (W-, per run and not committed) only
        with `hidden`, for a working file. Returns [(Located, score)]."""
        typed_low = typed.lower()
        context_words = set(words(context)) - {typed_low}
        total = max(len(self.by_id), 1)
        scores: dict[str, float] = {}
        for word in context_words:
            posting = self.postings.get(word)
            if posting:
                weight = math.log(1 + total / len(posting))
                for entry_id in posting:
                    scores[entry_id] = scores.get(entry_id, 0.0) + weight
        for entry_id, value in (boost or {}).items():
            if entry_id in self.by_id:
                scores[entry_id] = scores.get(entry_id, 0.0) + value
        by_id, rank_of = self.by_id, self._rank

        shown = (lambda _entry_id: True) if hidden else self._committed

        def wanted(entry_id: str) -> bool:
            if not shown(entry_id):
                return False
            return entry_id.lower().startswith(typed_low) or typed_low in by_id[entry_id].entry.title.lower()

        keep = wanted if typed_low or not hidden else None
        scored = [(*rank_of[i][:1], -value, rank_of[i][1], i) for i, value in scores.items() if keep is None or keep(i)]
        chosen = [item[-1] for item in heapq.nsmallest(limit, scored)]
        if len(chosen) < limit:  # the rest by default order: live before retired, newest first
            taken = set(chosen)
            for entry_id in self._base:
                if entry_id not in taken and (keep is None or keep(entry_id)):
                    chosen.append(entry_id)
                    if len(chosen) >= limit:
                        break
        best = [by_id[entry_id] for entry_id in chosen]
        return [(located, scores.get(located.entry.id, 0.0)) for located in best]

    def _committed(self, entry_id: str) -> bool:
        """Whether the entry is of a kind a reference outside working memory may cite (not W-)."""
        kind = self.project.settings.schema.kind_of(entry_id)
        return kind is None or kind.name not in HIDDEN_KINDS

    def is_working_file(self, path: Path) -> bool:
        return self.is_memory_file(path) and self.project.rel(path).split("/")[-2:-1] == [WORKING_FOLDER]

    def search_titles(self, query: str, limit: int = 200) -> list[Located]:
        """Entries whose id and title hold every word of `query` (workspace symbols)."""
        wanted = query.lower().split()
        found = []
        for entry_id, located in self.by_id.items():
            haystack = f"{entry_id} {located.entry.title}".lower()
            if all(word in haystack for word in wanted):
                found.append(located)
                if len(found) >= limit:
                    break
        return found

    # --- references across the project -------------------------------------------------------------------

    def references(self, entry_id: str, overlay: dict[Path, str] | None = None) -> list[RefSite]:
        """Every `@@ID` in the project's files (open documents as the editor holds them), and every bare
        mention of the id in memory files (metadata refs and successor, bodies), not counting the generated
        index and the entry's own heading."""
        self._refresh_refs()
        overlay = overlay or {}
        sites: list[RefSite] = []
        assert self._refs is not None
        key = id_key(entry_id)

        def names(site: RefSite) -> bool:  # `@@D-1` and `@@D-0001` name D-001, as hover and `refs` read them
            return site.token.startswith("@@") and key is not None and id_key(site.token[2:]) == key

        for path, (_when, found) in self._refs.items():
            if path in overlay:
                continue
            sites.extend(site for site in found if names(site))
        for path, text in overlay.items():
            sites.extend(site for site in scan_text(path, text) if names(site))
        for loaded in self.loaded_files():  # memory files cite ids bare too: refs, successor, "(F-014)"
            text = overlay.get(loaded.path, loaded.text)
            sites.extend(_bare_sites(loaded.path, text, entry_id))
        unique = {(site.path, site.line, site.start): site for site in sites}
        return sorted(unique.values(), key=lambda site: (str(site.path), site.line, site.start))

    def _refresh_refs(self) -> None:
        if self._refs is None:
            self._refs = {}
        current = set(source_files(self.project, None))
        for gone in set(self._refs) - current:
            del self._refs[gone]
        for path in current:
            stamp = _stamp(path)
            known = self._refs.get(path)
            if known is not None and known[0] == stamp:
                continue
            try:
                data = path.read_bytes() if path.stat().st_size < 2_000_000 else b""
            except OSError:
                continue
            if b"\0" in data[:8192] or b"@@" not in data:
                self._refs[path] = (stamp, [])
                continue
            self._refs[path] = (stamp, scan_text(path, data.decode("utf-8", errors="replace")))


def scan_text(path: Path, text: str) -> list[RefSite]:
    """The `@@` references in `text` (0-based lines, character columns)."""
    sites = []
    for number, line in enumerate(text.split("\n")):
        if "@@" not in line:
            continue
        for match in REF_RE.finditer(line):
            sites.append(RefSite(path, number, match.start(), match.end(), match.group(0)))
    return sites


def iter_refs(line: str) -> Iterator[re.Match[str]]:
    return REF_RE.finditer(line) if "@@" in line else iter(())


def bare_id_pattern(entry_id: str) -> re.Pattern[str]:
    """`entry_id` written bare in text (not after `@@`, not part of a longer word or id)."""
    return re.compile(rf"(?<![@\w-]){re.escape(entry_id)}(?![\w-])")


def _bare_sites(path: Path, text: str, entry_id: str) -> list[RefSite]:
    if entry_id not in text:
        return []
    pattern = bare_id_pattern(entry_id)
    sites = []
    in_index = False
    for number, line in enumerate(text.split("\n")):
        if line.startswith(INDEX_START_PREFIX):
            in_index = True
        if in_index:
            in_index = line.strip() != INDEX_END
            continue
        if entry_id not in line or line.startswith(f"### {entry_id}:"):
            continue
        sites.extend(RefSite(path, number, m.start(), m.end(), entry_id) for m in pattern.finditer(line))
    return sites


def _anchor_line(path: Path, anchor: str) -> int | None:
    from memfiles.format.toc import Slugger, heading_text

    slugger = Slugger()
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").split("\n")):
        text = heading_text(line)
        if text is not None and slugger.slug(text) == anchor:
            return number
    return None


def _stamp(path: Path) -> tuple[int, int]:
    try:
        info = path.stat()
    except OSError:
        return (0, -1)
    return (info.st_mtime_ns, info.st_size)


def _mtime(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1
