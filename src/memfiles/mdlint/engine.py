"""PyMarkdown over memory files: cut into chunks, scanned (or fixed) in one run, remembered by content.

PyMarkdown's time grows faster than the length of a file (a 300-line file takes seconds), so a file is
cut into chunks at its section and entry headings; each chunk is scanned on its own, with a synthetic
`# ...` line above it so that a stray level-1 heading in a body still counts as a second title. The
generated index (the tool's own output, long lines by design) and `## Manual` (the user's own, which
no tool edits) are not linted. A cache keyed by the chunk's text and the configuration means an
unchanged entry is never scanned twice: `check` on an unchanged project does not even import PyMarkdown.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memfiles.errors import ConfigError, LintCrashed
from memfiles.format.grammar import (
    BOM,
    META_RE,
    Fence,
    any_entry_heading,
    code_lines,
    is_manual_heading,
    section_name,
    split_lines,
)
from memfiles.format.toc import INDEX_END, INDEX_START_PREFIX
from memfiles.mdlint.rules import LintConfig

# Above every chunk but a file's first: a title, so that a body's `# Heading` is a second one (md025).
PREFIX = "# memfiles lint chunk\n\n"
PREFIX_LINES = 2
# Rules PyMarkdown's fix mode repairs (`pymarkdown plugins list`, column FIX) and those the memfiles
# cleaner repairs (mdlint.clean): fmt fixes both kinds. Not md029 and md038, whose fixes are never
# applied (NEVER_FIXED below); md009 and md010 are fixed in their default settings only.
PYMARKDOWN_FIXABLE = frozenset(
    [
        "md004",
        "md005",
        "md007",
        "md009",
        "md010",
        "md012",
        "md019",
        "md021",
        "md023",
        "md027",
        "md030",
        "md031",
        "md035",
        "md037",
        "md039",
        "md044",
        "md046",
        "md047",
        "md048",
    ]
)
CLEANER_FIXABLE = frozenset(["md022", "md032", "md034", "md018"])
FIXABLE = PYMARKDOWN_FIXABLE | CLEANER_FIXABLE


@functools.cache
def engine_version() -> str:
    """PyMarkdown's version, read without importing it (the cache must notice an upgrade)."""
    spec = importlib.util.find_spec("pymarkdown")
    if spec is None or not spec.submodule_search_locations:
        return "missing"
    try:
        text = (Path(next(iter(spec.submodule_search_locations))) / "version.py").read_text(encoding="utf-8")
    except OSError:
        return "unknown"
    match = re.search(r"""__version__\s*=\s*["']([^"']+)""", text)
    return match.group(1) if match else "unknown"


@dataclass(frozen=True)
class Chunk:
    """Lines `start`.. (1-based, in the file) of a file, scanned as one document (with PREFIX if `prefixed`)."""

    start: int
    text: str
    prefixed: bool
    # File lines of entry metadata (`- key: value`): one line per key by the format, never wrapped.
    meta_lines: frozenset[int] = frozenset()
    # File lines inside fenced code (PyMarkdown loses track of them after a table: see code_tabs_allowed).
    code_lines: frozenset[int] = frozenset()

    @property
    def document(self) -> str:
        return PREFIX + self.text if self.prefixed else self.text

    def key(self, config: LintConfig) -> str:
        return hashlib.sha256(f"{config.digest}\0{self.document}".encode()).hexdigest()[:32]

    def file_line(self, line: int) -> int | None:
        """The file line of a line of `document`, or None for a line of the synthetic prefix."""
        if self.prefixed:
            line -= PREFIX_LINES
            if line < 1:
                return None
        return self.start + line - 1


@dataclass(frozen=True)
class RawFinding:
    """One PyMarkdown finding, at a line of a file."""

    line: int
    column: int
    rule: str  # lower case: md009
    name: str
    message: str
    setext: bool = False  # the heading at this line is a setext one (md003 says so)

    @property
    def fixable(self) -> bool:
        """Whether fmt fixes it. Not md022 at a setext heading: the cleaner puts blank lines around ATX
        headings only (an underline under text can also end an HTML block or a list item's lazy line);
        md003 asks for ### first, and then fmt fixes the blank lines."""
        return self.rule in FIXABLE and not (self.rule == "md022" and self.setext)


def chunks(text: str) -> list[Chunk]:
    """`text` cut at its `##` and entry headings, without the generated index and `## Manual`."""
    lines = split_lines(text.removeprefix(BOM))  # a byte-order mark is the file's encoding, not its first line
    if lines and lines[-1] == "":
        lines.pop()
    found: list[Chunk] = []
    current: list[str] = []
    start = 1
    fence = Fence()
    in_index = False

    def close(next_start: int) -> None:
        nonlocal current, start
        if current and not current[-1].strip():
            current.pop()  # the one blank line that separates blocks belongs to neither
        if any(line.strip() for line in current):
            text = "\n".join(current) + "\n"
            found.append(
                Chunk(start, text, bool(found) or start > 1, _meta_lines(current, start), code_lines(current, start))
            )
        current, start = [], next_start

    for number, line in enumerate(lines, start=1):
        if in_index:
            if line.strip() == INDEX_END:
                in_index = False
                close(number + 1)
            continue
        if fence.feed(line, number):
            current.append(line)
            continue
        if line.strip().startswith(INDEX_START_PREFIX):
            close(number)
            in_index = True
            continue
        if is_manual_heading(line):
            break
        if (section_name(line) is not None or any_entry_heading(line)) and current:
            close(number)
        current.append(line)
    close(len(lines) + 1)
    return [_drop_leading_blanks(chunk) for chunk in found]


def code_tabs_allowed(config: LintConfig) -> bool:
    """md010 with `code_blocks = false`: PyMarkdown forgets it in a fence that follows a table, so memfiles
    drops those findings itself."""
    return config.settings.get("plugins", {}).get("md010", {}).get("code_blocks", True) is False


def _meta_lines(lines: list[str], start: int) -> frozenset[int]:
    found: set[int] = set()
    in_meta = False
    for offset, line in enumerate(lines):
        if any_entry_heading(line):
            in_meta = True
        elif in_meta and META_RE.match(line):
            found.add(start + offset)
        elif in_meta and found:
            in_meta = False
    return frozenset(found)


def _drop_leading_blanks(chunk: Chunk) -> Chunk:
    lines = chunk.text.split("\n")
    skip = 0
    while skip < len(lines) and not lines[skip].strip():
        skip += 1
    if not skip:
        return chunk
    return Chunk(chunk.start + skip, "\n".join(lines[skip:]), chunk.prefixed, chunk.meta_lines, chunk.code_lines)


def _quiet_logging() -> None:
    """PyMarkdown calls logging.basicConfig(stream=sys.stdout) and logs a refused setting there, traceback
    and all: that broke `--json` output (and would break a stdio server's protocol). Give the root
    logger a handler on stderr first (basicConfig is then a no-op) and keep PyMarkdown's own messages to
    itself: the ConfigError raised from its exception says the same in one line."""
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    own = logging.getLogger("pymarkdown")
    if own.propagate:
        own.propagate = False
        own.addHandler(logging.NullHandler())


def _api(config: LintConfig, folder: Path) -> Any:
    from pymarkdown.api import PyMarkdownApi

    _quiet_logging()

    settings = folder / "pymarkdown.json"
    settings.write_text(json.dumps(config.settings), encoding="utf-8")
    # strict: a value PyMarkdown cannot use is an error naming it, not a silent fall-back to its default
    return PyMarkdownApi().configuration_file_path(str(settings)).enable_strict_configuration()


# What PyMarkdown says when its parser or a rule fails on a text, rather than on its configuration.
_CRASH = re.compile(r"Unexpected Error\(|had a critical failure|BadTokenizationError|are in conflict")


def _pymarkdown_error(config: LintConfig, error: Exception) -> ConfigError | LintCrashed:
    said = str(error).split("\n")[-1].strip() or str(error)
    if _CRASH.search(str(error)):
        return LintCrashed(
            f"PyMarkdown failed on this text, an error of its own and not of the rule set ({said}); "
            "writing the nesting of its lists, quotes and HTML more simply avoids it"
        )
    where = config.source or "the memfiles lint defaults"
    named = re.search(r"property '([\w.-]+)'", str(error))
    key = f"tool.pymarkdown.{named.group(1)}" if named and config.source else None
    return ConfigError(f"{where}: [tool.pymarkdown] was refused by PyMarkdown: {said}", key=key, path=config.source)


# A chunk (an entry, a section's text) longer than this is not given to PyMarkdown, whose time grows
# faster than the text: 0.3 s for 44 KB, 4.9 s for 175 KB, 83 s for one 700 KB body (body_limit may
# be raised to 1,000,000). check says so (lint-skipped, info); fmt and the write path leave it as it is.
LINT_CHUNK_MAX = 50_000
SKIPPED = "lint-skipped"  # the finding of such a chunk (contract.FINDING_CODES: info)


def too_long_to_lint(document: str) -> bool:
    return len(document) > LINT_CHUNK_MAX


def scan_documents(documents: list[str], config: LintConfig) -> list[list[tuple[int, int, str, str, str]]]:
    """Each document's findings as (line, column, rule, name, message), from one PyMarkdown run; none
    for a document too long to lint (lint_texts reports those)."""
    if not documents:
        return []
    if any(too_long_to_lint(document) for document in documents):
        kept = [n for n, document in enumerate(documents) if not too_long_to_lint(document)]
        scanned = iter(scan_documents([documents[n] for n in kept], config))
        return [next(scanned) if n in kept else [] for n in range(len(documents))]
    from pymarkdown.api import PyMarkdownApiException

    results: list[list[tuple[int, int, str, str, str]]] = [[] for _ in documents]
    with tempfile.TemporaryDirectory(prefix="memfiles-lint-") as name:
        folder = Path(name)
        names = {}
        for number, document in enumerate(documents):
            path = folder / f"{number:06d}.md"
            path.write_text(document, encoding="utf-8")
            names[os.path.realpath(path)] = number
        try:
            scanned = _api(config, folder).scan_path(str(folder))
        except PyMarkdownApiException as error:
            raise _pymarkdown_error(config, error) from error
        for failure in scanned.scan_failures:
            number = names.get(os.path.realpath(failure.scan_file))
            if number is None:
                continue
            extra = (failure.extra_error_information or "").strip()
            message = failure.rule_description + (f" {extra}" if extra else "")
            results[number].append(
                (failure.line_number, failure.column_number, failure.rule_id.lower(), failure.rule_name, message)
            )
    return results


def _scan_each(documents: list[str], config: LintConfig) -> list[list[tuple[int, int, str, str, str]]]:
    """scan_documents, but a document PyMarkdown itself fails on does not stop the others: the batch is
    scanned again in halves down to that document, and such a document gets one `lint-skipped` finding saying so,
    as one too long to lint does (check names its file and line)."""
    try:
        return scan_documents(documents, config)
    except LintCrashed as crash:
        if len(documents) == 1:
            return [[(1, 1, SKIPPED, "not linted", str(crash))]]
        half = len(documents) // 2  # halves, so one such chunk in a batch of 200 costs 15 runs, not 200
        return _scan_each(documents[:half], config) + _scan_each(documents[half:], config)


# Rules whose fixes change what a text says, whatever a project enables: md010 (on code) drops a
# recipe's tabs, md029 a list's start number, md038 a code span's spaces, and md009 in strict mode a
# hard break's spaces. Their findings are left for the author (the write path refuses them, naming
# line and rule).
NEVER_FIXED = ("md010", "md029", "md038")


def _fixing(config: LintConfig) -> LintConfig:
    """`config` with the rules of NEVER_FIXED off (and md009 when strict): what fix mode runs under."""
    plugins = {**config.settings.get("plugins", {})}
    strict = plugins.get("md009", {}).get("strict") is True
    for rule in (*NEVER_FIXED, "md009") if strict else NEVER_FIXED:
        plugins[rule] = {**plugins.get(rule, {}), "enabled": False}
    return LintConfig({**config.settings, "plugins": plugins}, config.source)


def fix_documents(documents: list[str], config: LintConfig) -> list[str]:
    """Each document as PyMarkdown's fix mode leaves it, never applying NEVER_FIXED (unchanged when
    nothing is fixable, too long to lint, or one PyMarkdown itself fails on: the others are fixed in
    halves down to it then)."""
    if any(too_long_to_lint(document) for document in documents):
        kept = [n for n, document in enumerate(documents) if not too_long_to_lint(document)]
        fixed = iter(fix_documents([documents[n] for n in kept], config))
        return [next(fixed) if n in kept else documents[n] for n in range(len(documents))]
    if not documents:
        return []
    from pymarkdown.api import PyMarkdownApiException

    with tempfile.TemporaryDirectory(prefix="memfiles-fix-") as name:
        folder = Path(name)
        paths = []
        for number, document in enumerate(documents):
            path = folder / f"{number:06d}.md"
            path.write_text(document, encoding="utf-8")
            paths.append(path)
        try:
            _api(_fixing(config), folder).fix_path(str(folder))
        except PyMarkdownApiException as error:
            failure = _pymarkdown_error(config, error)
            if not isinstance(failure, LintCrashed):
                raise failure from error
            if len(documents) == 1:
                return list(documents)
            half = len(documents) // 2
            return fix_documents(documents[:half], config) + fix_documents(documents[half:], config)
        return [path.read_text(encoding="utf-8") for path in paths]


class LintCache:
    """Findings by chunk key, in one JSON file under the tool's state folder; a broken file is ignored."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.data: dict[str, list[list[Any]]] = {}
        self.used: set[str] = set()
        self.dirty = False
        if path is not None:
            with contextlib.suppress(OSError, ValueError):
                loaded = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(loaded, dict) and isinstance(loaded.get("chunks"), dict):
                    self.data = loaded["chunks"]

    def get(self, key: str) -> list[list[Any]] | None:
        found = self.data.get(key)
        if found is not None:
            self.used.add(key)
        return found

    def put(self, key: str, findings: list[list[Any]]) -> None:
        self.data[key] = findings
        self.used.add(key)
        self.dirty = True

    def save(self, prune: bool = False) -> None:
        """Write the cache (atomically; a failure only costs a rescan). `prune` keeps only keys used now."""
        if self.path is None or not (self.dirty or (prune and set(self.data) - self.used)):
            return
        data = {key: value for key, value in self.data.items() if not prune or key in self.used}
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            temp.write_text(json.dumps({"version": 1, "chunks": data}), encoding="utf-8")
            os.replace(temp, self.path)


def lint_texts(
    texts: Iterable[str], config: LintConfig, cache: LintCache | None = None, progress: Any = None
) -> list[list[RawFinding]]:
    """The findings of each text, sorted by line; only chunks the cache does not know are scanned."""
    cache = cache or LintCache(None)
    cut = [chunks(text) for text in texts]
    todo: dict[str, str] = {}
    for file_chunks in cut:
        for chunk in file_chunks:
            key = chunk.key(config)
            if cache.get(key) is None and key not in todo:
                todo[key] = chunk.document
    if todo:
        keys = list(todo)
        step = 200  # one PyMarkdown run per batch: its start-up is paid once, progress can move
        for begin in range(0, len(keys), step):
            batch = keys[begin : begin + step]
            for key, found in zip(batch, _scan_each([todo[k] for k in batch], config), strict=True):
                cache.put(key, [list(item) for item in found])
            if progress is not None:
                progress(len(batch))
    results: list[list[RawFinding]] = []
    tabs_in_code = code_tabs_allowed(config)
    for file_chunks in cut:
        found: list[RawFinding] = []
        for chunk in file_chunks:
            if too_long_to_lint(chunk.document):
                where = chunk.file_line(1) or chunk.start
                said = f"{len(chunk.document):,} characters, more than the {LINT_CHUNK_MAX:,} the rule set reads"
                found.append(RawFinding(where, 1, SKIPPED, "too long to lint", said))
                continue
            for line, column, rule, name, message in cache.get(chunk.key(config)) or []:
                where = chunk.file_line(line) or (chunk.start if rule == SKIPPED else None)  # _scan_each's
                if where is None or not config.enabled(rule) or (rule == "md013" and where in chunk.meta_lines):
                    continue
                if rule == "md010" and where in chunk.code_lines and tabs_in_code:
                    continue
                found.append(RawFinding(where, column, rule, name, message))
        setext = {f.line for f in found if f.rule == "md003" and "Actual: setext" in f.message}
        found = [replace(f, setext=True) if f.rule == "md022" and f.line in setext else f for f in found]
        results.append(sorted(found, key=lambda f: (f.line, f.column, f.rule)))
    return results


def pending(texts: Iterable[str], config: LintConfig, cache: LintCache) -> int:
    """How many chunks of `texts` the cache does not know (what a run would have to scan)."""
    keys = {chunk.key(config) for text in texts for chunk in chunks(text)}
    return sum(1 for key in keys if key not in cache.data)
