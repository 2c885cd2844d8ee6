"""rumdl over memory files: cut into chunks, scanned (or fixed) in one run, remembered by content, bounded.

A file is cut into chunks at its section and entry headings; each chunk is linted on its own, with a
synthetic `# ...` line above it (but the file's first) so that a stray level-1 heading in a body still
counts as a second title. The generated index (the tool's own output, long lines by design) and
`## Manual` (the user's own, which no tool edits) are not linted. A cache keyed by the chunk's text and
the configuration means an unchanged entry is never linted twice.

rumdl (a markdownlint-compatible linter in Rust, a binary wheel) reads every chunk of a run from one
standard input (`--stdin-batch`): 1,000 entries take about a tenth of a second. A run that does not
finish within its budget is killed and its batch linted again in halves, down to the chunk that does not
finish, which is reported as `lint-skipped` at its place: no text can stall `check` (see D-110).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memfiles.errors import ConfigError
from memfiles.format.grammar import (
    BOM,
    META_RE,
    Fence,
    any_entry_heading,
    is_manual_heading,
    section_name,
    split_lines,
)
from memfiles.format.toc import INDEX_END, INDEX_START_PREFIX
from memfiles.mdlint.rules import LintConfig, rule_name

# Above every chunk but a file's first: a title, so that a body's `# Heading` is a second one (md025).
PREFIX = "# memfiles lint chunk\n\n"
PREFIX_LINES = 2
# Rules whose fixes change what a text says, whatever a project enables: md029 a list's start number,
# md038 a code span's spaces (and md010 when it is set to read code: a recipe's tabs; md009 when strict:
# a hard break's spaces; see LintConfig.never_fixed). Their findings are left for the author.
NEVER_FIXED = ("md029", "md038")
SKIPPED = "lint-skipped"  # the finding of a chunk not linted (contract.FINDING_CODES: info)
# A chunk longer than this is not linted (body_limit may be raised to 1,000,000): check says so.
LINT_CHUNK_MAX = 200_000
# Seconds a run may take: a base for the process, and a share per character it reads.
BUDGET_BASE = 10.0
BUDGET_PER_MB = 20.0


@functools.cache
def rumdl_path() -> str | None:
    """The rumdl binary: beside this Python (a virtualenv's bin/), else on PATH."""
    here = Path(sys.executable).parent
    for folder in (here, here.parent / "bin", here.parent / "Scripts"):
        found = shutil.which("rumdl", path=str(folder))
        if found:
            return found
    return shutil.which("rumdl")


@functools.cache
def engine_version() -> str:
    """rumdl's version, read from its package metadata (the cache must notice an upgrade)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"rumdl {version('rumdl')}"
    except PackageNotFoundError:
        return "rumdl missing"


def _binary() -> str:
    found = rumdl_path()
    if found is None:
        raise ConfigError("the Markdown linter rumdl is not installed: pip install rumdl (memfiles depends on it)")
    return found


@dataclass(frozen=True)
class Chunk:
    """Lines `start`.. (1-based, in the file) of a file, linted as one document (with PREFIX if `prefixed`)."""

    start: int
    text: str
    prefixed: bool
    # File lines of entry headings and metadata (`- key: value`): the format's own, checked by `check`'s
    # own rules; a title is the author's words and is never rewritten to please a lint rule (D-110).
    meta_lines: frozenset[int] = frozenset()

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
    """One lint finding, at a line of a file."""

    line: int
    column: int
    rule: str  # lower case: md009
    name: str
    message: str
    fixable: bool = False


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
        while current and not current[-1].strip():
            current.pop()  # the blank lines that separate blocks belong to neither
        if any(line.strip() for line in current):
            found.append(Chunk(start, "\n".join(current) + "\n", bool(found) or start > 1, _meta_lines(current, start)))
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


_AT_HEADINGS = frozenset(["md022", "md025", SKIPPED])  # what is said at an entry's heading all the same


def _meta_lines(lines: list[str], start: int) -> frozenset[int]:
    found: set[int] = set()
    in_meta = False
    for offset, line in enumerate(lines):
        if any_entry_heading(line):
            in_meta = True
            found.add(start + offset)
        elif in_meta and META_RE.match(line):
            found.add(start + offset)
        elif in_meta and line.strip():
            in_meta = False
    return frozenset(found)


def _drop_leading_blanks(chunk: Chunk) -> Chunk:
    lines = chunk.text.split("\n")
    skip = 0
    while skip < len(lines) and not lines[skip].strip():
        skip += 1
    if not skip:
        return chunk
    return Chunk(chunk.start + skip, "\n".join(lines[skip:]), chunk.prefixed, chunk.meta_lines)


def too_long_to_lint(document: str) -> bool:
    return len(document) > LINT_CHUNK_MAX


def _budget(documents: list[str]) -> float:
    return BUDGET_BASE + BUDGET_PER_MB * sum(len(document) for document in documents) / 1_000_000


class _TimedOut(Exception):
    pass


def _run(arguments: list[str], stdin: bytes, timeout: float) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(arguments, input=stdin, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as error:
        raise _TimedOut from error
    except OSError as error:
        raise ConfigError(f"the Markdown linter rumdl could not be started: {error}") from error


def _config_failure(config: LintConfig, said: str) -> ConfigError:
    where = config.source or "the memfiles lint defaults"
    return ConfigError(f"{where}: the lint settings were refused: {said}", path=config.source)


Fix = tuple[int, int, str]  # (start, end, replacement): a byte range of the document, as rumdl gives it
Scanned = list[tuple[int, int, str, str, str, bool]]  # (line, column, rule, name, message, fixable)


@dataclass(frozen=True)
class Scan:
    """One document's findings, and the fix rumdl offers for each fixable one (None where it has none)."""

    findings: Scanned
    fixes: list[Fix | None]


def scan_documents(documents: list[str], config: LintConfig, timeout: float | None = None) -> list[Scan]:
    """Each document's findings and fixes, from one rumdl run; _TimedOut when it does not finish in time."""
    if not documents:
        return []
    payload = b"".join(f"{number:06d}.md\0{document}\0".encode() for number, document in enumerate(documents))
    with config.file() as settings:
        arguments = [_binary(), "check", "--stdin-batch", "--config", str(settings), "--output-format", "json"]
        done = _run([*arguments, "--no-cache", "--color", "never"], payload, timeout or _budget(documents))
    if done.returncode not in (0, 1):
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise _config_failure(config, said[0] if said else f"rumdl exited with {done.returncode}")
    results = [Scan([], []) for _ in documents]
    try:
        items = json.loads(done.stdout.decode("utf-8", "replace") or "[]")
    except ValueError:
        items = []
    for item in items if isinstance(items, list) else []:
        with contextlib.suppress(ValueError, KeyError, TypeError, IndexError):
            number = int(str(item["file"]).removesuffix(".md"))
            rule = str(item["rule"]).lower()
            fixable = bool(item.get("fixable"))
            found = (int(item["line"]), int(item["column"]), rule, rule_name(rule), str(item["message"]), fixable)
            fix = item.get("fix")
            span = (int(fix["range"]["start"]), int(fix["range"]["end"]), str(fix["replacement"])) if fix else None
            results[number].findings.append(found)
            results[number].fixes.append(span)
    return results


def _scan_each(documents: list[str], config: LintConfig) -> list[Scan]:
    """scan_documents, but a batch that does not finish in time is scanned again in halves, down to the
    document that does not, which gets one `lint-skipped` finding (check names its file and line)."""
    try:
        return scan_documents(documents, config)
    except _TimedOut:
        if len(documents) == 1:
            said = f"the linter did not finish within {_budget(documents):.0f} s on this text"
            return [Scan([(1, 1, SKIPPED, "not linted", said, False)], [None])]
        half = len(documents) // 2
        return _scan_each(documents[:half], config) + _scan_each(documents[half:], config)


ROUNDS = 2  # passes of fix_documents: the second reads what the first's fixes revealed


def fix_documents(
    documents: list[str],
    config: LintConfig,
    keep: list[int] | None = None,
    alike: Callable[[str, str], bool] | None = None,
) -> list[str]:
    """Each document with the linter's fixes applied (mdlint/fixes.py), never those of NEVER_FIXED nor any
    that touches the first `keep[n]` characters of document n, and only those that keep
    `alike(before, after)` (asked of what follows those characters). A document too long to lint, or in
    a run that does not finish, is left as it is."""
    from memfiles.mdlint.fixes import apply, candidates

    never = set(config.never_fixed(NEVER_FIXED))
    out = list(documents)
    todo = [n for n, document in enumerate(documents) if not too_long_to_lint(document)]
    for _round in range(ROUNDS):  # a fix can reveal another finding (`3. x` after a hard break it made)
        changed = []
        for n, scan in zip(todo, _scan_each([out[n] for n in todo], config), strict=True):
            floor = len(out[n][: (keep[n] if keep else 0)].encode("utf-8"))
            found = [
                (f[0], f[2], f[4], fix)
                for f, fix in zip(scan.findings, scan.fixes, strict=True)
                if f[2] not in never and (fix is None or fix[0] >= floor)
            ]
            offered = candidates(out[n], [f[:3] for f in found], [f[3] for f in found])
            offered = [c for c in offered if (c.fix or c.own or (0, 0, ""))[0] >= floor]
            cut = keep[n] if keep else 0
            judge = None if alike is None else (lambda a, b, cut=cut: alike(a[cut:].rstrip("\n"), b[cut:].rstrip("\n")))
            fixed = apply(out[n], offered, judge) if offered else out[n]
            if fixed != out[n]:
                out[n] = fixed
                changed.append(n)
        todo = changed
        if not todo:
            break
    return out


class LintCache:
    """Findings by chunk key, in one JSON file under the tool's state folder; a broken file is ignored."""

    VERSION = 2  # 1 was PyMarkdown's

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.data: dict[str, list[list[Any]]] = {}
        self.used: set[str] = set()
        self.dirty = False
        if path is not None:
            with contextlib.suppress(OSError, ValueError):
                loaded = json.loads(path.read_text(encoding="utf-8"))
                fresh = isinstance(loaded, dict) and loaded.get("version") == self.VERSION
                if fresh and isinstance(loaded.get("chunks"), dict):
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
            temp.write_text(json.dumps({"version": self.VERSION, "chunks": data}), encoding="utf-8")
            os.replace(temp, self.path)


BATCH = 2_000  # chunks a run reads: its start-up is paid once, a progress bar can move


def lint_texts(
    texts: Iterable[str],
    config: LintConfig,
    cache: LintCache | None = None,
    progress: Callable[[int], Any] | None = None,
) -> list[list[RawFinding]]:
    """The findings of each text, sorted by line; only chunks the cache does not know are linted."""
    cache = cache or LintCache(None)
    cut = [chunks(text) for text in texts]
    todo: dict[str, str] = {}
    for file_chunks in cut:
        for chunk in file_chunks:
            key = chunk.key(config)
            if not too_long_to_lint(chunk.document) and cache.get(key) is None and key not in todo:
                todo[key] = chunk.document
    keys = list(todo)
    for begin in range(0, len(keys), BATCH):
        batch = keys[begin : begin + BATCH]
        for key, scan in zip(batch, _scan_each([todo[k] for k in batch], config), strict=True):
            cache.put(key, [list(item) for item in scan.findings])
        if progress is not None:
            progress(len(batch))
    return [_findings(file_chunks, config, cache) for file_chunks in cut]


def _findings(file_chunks: list[Chunk], config: LintConfig, cache: LintCache) -> list[RawFinding]:
    found: list[RawFinding] = []
    never = set(config.never_fixed(NEVER_FIXED))
    for chunk in file_chunks:
        if too_long_to_lint(chunk.document):
            where = chunk.file_line(1) or chunk.start
            said = f"{len(chunk.document):,} characters, more than the {LINT_CHUNK_MAX:,} the rule set reads"
            found.append(RawFinding(where, 1, SKIPPED, "too long to lint", said))
            continue
        for line, column, rule, name, message, fixable in cache.get(chunk.key(config)) or []:
            where = chunk.file_line(line) or (chunk.start if rule == SKIPPED else None)
            if where is None or not config.enabled(rule) or (where in chunk.meta_lines and rule not in _AT_HEADINGS):
                continue
            found.append(RawFinding(where, column, rule, name, message, fixable and rule not in never))
    return sorted(found, key=lambda f: (f.line, f.column, f.rule))


def pending(texts: Iterable[str], config: LintConfig, cache: LintCache) -> int:
    """How many chunks of `texts` the cache does not know (what a run would have to lint)."""
    keys = {chunk.key(config) for text in texts for chunk in chunks(text) if not too_long_to_lint(chunk.document)}
    return sum(1 for key in keys if key not in cache.data)
