"""A project on disk: where its memory folders are, which files in them are memory files, and loading."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memfiles.config import MEMORY_DIR, Settings
from memfiles.errors import AmbiguousId, ParseError
from memfiles.format.grammar import split_lines
from memfiles.format.ids import Schema, id_key
from memfiles.format.model import Entry, MemoryFile
from memfiles.format.parse import parse
from memfiles.format.toc import INDEX_START_PREFIX
from memfiles.root import PERSONA_FILE as PERSONA_FILE  # re-exported: its users import it from here
from memfiles.root import WORKING_FOLDER as WORKING_FOLDER  # re-exported, as PERSONA_FILE
from memfiles.store.fileio import not_utf8

_SKIP_DIRS = {"node_modules", "__pycache__", "site-packages", "build", "dist", "venv", "env"}

WORKING_KIND = "working"
WORKING_SECTIONS = ("State", "Todo")  # a run's state entry, then its todos: all a working file holds
# Files parsed in this process, by absolute path, with the text (and schema) they were parsed from: a
# long-lived process (the watcher answering hooks, the MCP and LSP servers) and a command that loads the
# tree more than once parse a file again only when its text changed. Parsed files are frozen, so sharing
# them is safe; the text is compared whole, so a stale answer is impossible.
_PARSED: dict[str, tuple[str, str, Schema, MemoryFile]] = {}
_PARSED_LIMIT = 4096  # files; past it the cache starts again


def is_memory_text(text: str, schema: Schema | None = None) -> bool:
    """A Markdown file in a memory folder is a memory file once it has an index or an entry (see @@D-009)."""
    return INDEX_START_PREFIX in text or (schema or Schema()).grammar.has_entry(text)


@dataclass(frozen=True)
class LoadedFile:
    """A memory file as read: its path, its path relative to the root, its text and what it parsed to."""

    path: Path
    rel: str
    text: str
    memory: MemoryFile


@dataclass(frozen=True)
class Located:
    """An entry and where it lives."""

    entry: Entry
    file: LoadedFile
    section: str | None

    @property
    def where(self) -> str:
        return f"{self.file.rel}:{self.entry.line}"


@dataclass(frozen=True)
class Loaded:
    """What a read of the project found: the files that parse, one ParseError per file that does not,
    and the ids whose headings stand in those broken files (id -> file), which exist but cannot be read."""

    files: list[LoadedFile]
    problems: list[ParseError]
    unreadable_ids: dict[str, str] = field(default_factory=dict)

    def __iter__(self) -> Iterator[list[Any]]:
        # `files, problems = project.load_all()`, as before this class existed
        return iter((self.files, self.problems))

    def entries(self) -> Iterator[Located]:
        for loaded in self.files:
            for section in loaded.memory.sections:
                for entry in section.entries:
                    yield Located(entry, loaded, section.name)


class Project:
    """The memory of one project: the root memory/ and every <package>/memory/ below the root."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.root = settings.root

    def rel(self, path: Path) -> str:
        """`path` relative to the root, where it stands: a symlink is named by its own place, not by its
        target's (an editor's lock file `.#x.md` links to `user@host.pid`, which is no memory file, and a
        file linked from elsewhere is still memory/linked.md). A path reaching the root by another way
        (`..`, a linked folder above it) is resolved."""
        try:
            return Path(os.path.abspath(path)).relative_to(self.root).as_posix()
        except ValueError:
            pass
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def _excluded(self, rel: str) -> bool:
        return any(fnmatch.fnmatch(rel, pattern) for pattern in self.settings.exclude)

    def memory_dirs(self) -> list[Path]:
        """Every folder named memory/ below the root (the root's own first), skipping hidden and vendored trees."""
        found: list[Path] = []
        for folder, dirs, _files in os.walk(self.root):
            here = Path(folder)
            keep = []
            for name in sorted(dirs):
                if name.startswith(".") or name in _SKIP_DIRS or name.endswith(".egg-info"):
                    continue
                child = here / name
                if (child / "pyvenv.cfg").exists() or self._excluded(self.rel(child)):
                    continue
                if name == MEMORY_DIR:
                    found.append(child)
                else:
                    keep.append(name)
            dirs[:] = keep
        found.sort(key=lambda path: (path != self.root / MEMORY_DIR, path.as_posix()))
        return found

    def is_memory_path(self, path: Path) -> bool:
        """True for a .md file inside one of the project's memory folders (not a hidden or excluded one)."""
        rel = self.rel(path)
        parts = rel.split("/")
        return (
            path.suffix == ".md"
            and MEMORY_DIR in parts[:-1]
            and not any(part.startswith(".") for part in parts)
            and not self._excluded(rel)
            and rel != f"{MEMORY_DIR}/{PERSONA_FILE}"
        )

    def leads_out(self, path: Path) -> str | None:
        """Where `path` really is, when a link (the file, or a folder on its way) takes it out of the
        project's memory folders; None when it stays in them (or is no link). memfiles reads such a
        file but writes only inside its memory folders: a write never goes out through a link."""
        placed = Path(os.path.abspath(path))
        real = Path(os.path.realpath(path))
        if real == placed or self.is_memory_path(real):
            return None
        return self.rel(real)

    def markdown_files(self) -> list[Path]:
        files: list[Path] = []
        for folder in self.memory_dirs():
            for path in sorted(folder.rglob("*.md")):
                if self.is_memory_path(path):
                    files.append(path)
        return files

    def load_file(self, path: Path) -> LoadedFile | None:
        """The file parsed, or None when it is Markdown that is not a memory file.

        ParseError when it is a memory file that cannot be used: broken structure, bytes that are not UTF-8
        (named with the line and column of the first bad byte), or a file that cannot be read.
        """
        rel = self.rel(path)
        schema = self.settings.schema
        try:
            data = path.read_bytes()
        except OSError as error:
            raise ParseError(rel, None, f"cannot read: {error.strerror or error}") from error
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            if not is_memory_text(data.decode("utf-8", errors="replace"), schema):
                return None
            raise not_utf8(rel, error) from None
        if not is_memory_text(text, schema):
            return None
        return LoadedFile(path, rel, text, _parsed(str(path), text, rel, schema))

    def load(self) -> list[LoadedFile]:
        """Every memory file; the first broken one raises ParseError (the write path refuses to guess)."""
        loaded = []
        for path in self.markdown_files():
            item = self.load_file(path)
            if item is not None:
                loaded.append(item)
        return loaded

    def load_all(self) -> Loaded:
        """Every memory file that parses, and one ParseError for each that does not (for the read side).

        Unpacks as `files, problems`. Reads (list, show, audit, refs, status, search) use what parses and
        name what does not; writes use `load()`, which refuses.
        """
        loaded: list[LoadedFile] = []
        problems: list[ParseError] = []
        for path in self.markdown_files():
            try:
                item = self.load_file(path)
            except ParseError as error:  # a file that is not UTF-8 too (NotUtf8Error), with its line
                problems.append(error)
                continue
            if item is not None:
                loaded.append(item)
        return Loaded(loaded, problems, self.ids_in_broken(problems))

    def ids_in_broken(self, problems: list[ParseError]) -> dict[str, str]:
        """The ids whose headings stand in files that do not parse, so that a reference to one is not
        called dangling when it is only unreadable."""
        found: dict[str, str] = {}
        for problem in problems:
            if problem.path is None:
                continue
            try:
                text = (self.root / problem.path).read_bytes().decode("utf-8", errors="replace")
            except OSError:
                continue
            grammar = self.settings.schema.grammar
            for line in split_lines(text):
                heading = grammar.entry_heading(line)
                if heading:
                    found.setdefault(heading[0], problem.path)
        return found

    def entries(self, files: list[LoadedFile] | None = None) -> Iterator[Located]:
        for loaded in files if files is not None else self.load():
            for section in loaded.memory.sections:
                for entry in section.entries:
                    yield Located(entry, loaded, section.name)

    def find(self, entry_id: str, files: list[LoadedFile] | None = None) -> Located | None:
        """The entry carrying `entry_id` (however spelled: `d-2` is D-002), or None; AmbiguousId when two
        entries carry it (never the first)."""
        key = id_key(entry_id)
        found = [located for located in self.entries(files) if key is not None and id_key(located.entry.id) == key]
        if len(found) > 1:
            raise AmbiguousId(entry_id, [located.where for located in found])
        return found[0] if found else None


def _parsed(key: str, text: str, rel: str, schema: Schema) -> MemoryFile:
    """parse(text, rel, schema), from the cache when this file was last parsed from the same text."""
    known = _PARSED.get(key)
    if known is not None and known[0] == text and known[1] == rel and known[2] == schema:
        return known[3]
    memory = parse(text, rel, schema)
    if len(_PARSED) >= _PARSED_LIMIT:
        _PARSED.clear()
    _PARSED[key] = (text, rel, schema, memory)
    return memory
