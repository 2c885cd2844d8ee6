"""A project on disk: where its memory folders are, which files in them are memory files, and loading."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memfiles.config import MEMORY_DIR, Settings
from memfiles.errors import ParseError
from memfiles.format.model import Entry, MemoryFile
from memfiles.format.parse import parse
from memfiles.format.toc import INDEX_START_PREFIX
from memfiles.store.fileio import read_text

_SKIP_DIRS = {"node_modules", "__pycache__", "site-packages", "build", "dist", "venv", "env"}
PERSONA_FILE = "persona.md"  # behaviour configuration in the root memory/: never a memory file, never indexed
_ENTRY_LINE = re.compile(r"^### [A-Z][A-Z0-9]*-\d+: ", re.MULTILINE)


def is_memory_text(text: str) -> bool:
    """A Markdown file in a memory folder is a memory file once it has an index or an entry."""
    return INDEX_START_PREFIX in text or _ENTRY_LINE.search(text) is not None


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


class Project:
    """The memory of one project: the root memory/ and every <package>/memory/ below the root."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.root = settings.root

    def rel(self, path: Path) -> str:
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

    def markdown_files(self) -> list[Path]:
        files: list[Path] = []
        for folder in self.memory_dirs():
            for path in sorted(folder.rglob("*.md")):
                if self.is_memory_path(path):
                    files.append(path)
        return files

    def load_file(self, path: Path) -> LoadedFile | None:
        """The file parsed, or None when it is Markdown that is not a memory file; ParseError when broken."""
        text = read_text(path)
        if not is_memory_text(text):
            return None
        return LoadedFile(path, self.rel(path), text, parse(text, self.rel(path)))

    def load(self) -> list[LoadedFile]:
        """Every memory file; the first broken one raises ParseError (the write path refuses to guess)."""
        loaded = []
        for path in self.markdown_files():
            item = self.load_file(path)
            if item is not None:
                loaded.append(item)
        return loaded

    def load_all(self) -> tuple[list[LoadedFile], list[ParseError]]:
        """Every memory file that parses, and the errors of those that do not (for check)."""
        loaded: list[LoadedFile] = []
        errors: list[ParseError] = []
        for path in self.markdown_files():
            try:
                item = self.load_file(path)
            except ParseError as error:
                errors.append(error)
                continue
            except UnicodeDecodeError as error:
                errors.append(ParseError(self.rel(path), None, f"not UTF-8 text ({error.reason})"))
                continue
            if item is not None:
                loaded.append(item)
        return loaded, errors

    def entries(self, files: list[LoadedFile] | None = None) -> Iterator[Located]:
        for loaded in files if files is not None else self.load():
            for section in loaded.memory.sections:
                for entry in section.entries:
                    yield Located(entry, loaded, section.name)

    def find(self, entry_id: str, files: list[LoadedFile] | None = None) -> Located | None:
        for located in self.entries(files):
            if located.entry.id == entry_id:
                return located
        return None
