"""Lint for a project: findings for `check` and the language server, fixes for `fmt`, clean bodies for writes.

The rules are PyMarkdown's, chosen in memfiles.mdlint.rules; the user's `[tool.pymarkdown]` is laid over
them. Findings are contract Findings (code `md009`, severity warning). Results are cached by chunk
content in .memfiles/lint-cache.json, so `check` on an unchanged project never starts PyMarkdown.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable

from memfiles.contract import Finding, severity_of
from memfiles.errors import BatchError, LintCrashed, OpError, ParseError
from memfiles.format.grammar import code_lines
from memfiles.format.ids import Schema
from memfiles.format.model import Entry, MemoryFile
from memfiles.format.parse import parse
from memfiles.format.render import render, render_entry
from memfiles.mdlint.clean import clean_body, fix_markup, needs_scan
from memfiles.mdlint.engine import (
    PREFIX,
    PYMARKDOWN_FIXABLE,
    LintCache,
    RawFinding,
    chunks,
    code_tabs_allowed,
    fix_documents,
    lint_texts,
    pending,
    scan_documents,
)
from memfiles.mdlint.rules import LintConfig, load_lint_config
from memfiles.store.fileio import ensure_private_dir
from memfiles.store.project import LoadedFile, Project

CACHE_NAME = "lint-cache.json"
SEVERITY = "warning"


def lint_config(project: Project) -> LintConfig:
    return load_lint_config(project.root, project.settings.wrap)


def open_cache(project: Project) -> LintCache:
    return _StateCache(project)


class _StateCache(LintCache):
    """The lint cache in the project's state folder, which ignores itself in git (@@D-007)."""

    def __init__(self, project: Project) -> None:
        super().__init__(project.settings.state_dir / CACHE_NAME)
        self.folder = project.settings.state_dir

    def save(self, prune: bool = False) -> None:
        if self.dirty and not self.folder.exists():
            ensure_private_dir(self.folder)
        super().save(prune)


def to_finding(rel: str, raw: RawFinding) -> Finding:
    """A PyMarkdown finding as the contract's Finding: code `md009`, message with the rule's name first."""
    name = raw.name.split(",")[0]
    hint = " (memfiles fmt fixes it)" if raw.fixable else ""
    return Finding(
        code=raw.rule,
        severity=severity_of(raw.rule) or SEVERITY,
        path=rel,
        line=raw.line,
        message=f"{name}: {raw.message}{hint}",
        detail={"rule": name, "column": raw.column, "fixable": raw.fixable},
    )


def _progress(total: int):  # type: ignore[no-untyped-def]
    """A tqdm bar on stderr for a scan long enough to wait on (a tty only), else None."""
    if total < 50 or not sys.stderr.isatty():
        return None, None
    from tqdm import tqdm

    bar = tqdm(total=total, desc="lint", unit="chunk", file=sys.stderr, leave=False)
    return bar, bar.update


def lint_files(
    project: Project, files: Iterable[LoadedFile], cache: LintCache | None = None, prune: bool = False
) -> list[Finding]:
    """The lint findings of `files` (parsed memory files), sorted by place."""
    files = list(files)
    config = lint_config(project)
    cache = cache if cache is not None else open_cache(project)
    texts = [loaded.text for loaded in files]
    bar, step = _progress(pending(texts, config, cache))
    try:
        results = lint_texts(texts, config, cache, progress=step)
    finally:
        if bar is not None:
            bar.close()
        cache.save(prune=prune)
    findings = [to_finding(loaded.rel, raw) for loaded, found in zip(files, results, strict=True) for raw in found]
    return sorted(findings, key=lambda f: (f.path or "", f.line or 0, f.code))


def lint_project(project: Project) -> list[Finding]:
    """The lint findings of every memory file that parses (`check` reports the others' parse errors)."""
    files, _errors = project.load_all()
    return lint_files(project, files, prune=True)


def lint_text(
    project: Project, rel: str, text: str, cache: LintCache, config: LintConfig | None = None
) -> list[Finding]:
    """The lint findings of one memory file's text as an editor holds it (the language server's diagnostics)."""
    found = lint_texts([text], config or lint_config(project), cache)[0]
    return [to_finding(rel, raw) for raw in found]


# --- fmt: fix what is fixable, never the Manual, never an entry's metadata -----------------------------


def _fix_markup_everywhere(memory: MemoryFile) -> MemoryFile:
    sections = tuple(
        dataclasses.replace(
            section,
            intro=fix_markup(section.intro),
            entries=tuple(dataclasses.replace(entry, body=fix_markup(entry.body)) for entry in section.entries),
        )
        for section in memory.sections
    )
    return dataclasses.replace(memory, preamble=fix_markup(memory.preamble), sections=sections)


def _signature(memory: MemoryFile) -> list[tuple]:
    """What a fix must not change: the title, sections, and every entry's id, title and metadata."""
    return [
        (
            memory.title,
            tuple((s.name, tuple((e.id, e.title, tuple(e.meta())) for e in s.entries)) for s in memory.sections),
        ),
        (memory.manual,),
    ]


def fix_text(project: Project, rel: str, memory: MemoryFile, config: LintConfig | None = None) -> str:
    """The canonical text of `memory` with every fixable lint finding fixed, the Manual left byte for byte.

    The memfiles clean-up runs on bodies and intros first; PyMarkdown's fix mode then runs on the chunks
    that still have findings it can fix. If a fix would change any entry's id, title or metadata, or the
    result would not parse, the file keeps the clean-up only.
    """
    schema = project.settings.schema
    config = config or lint_config(project)
    cleaned = _fix_markup_everywhere(memory)
    text = render(cleaned, schema)
    cache = open_cache(project)
    found = lint_texts([text], config, cache)[0]
    cache.save()
    fixable_lines = {raw.line for raw in found if raw.rule in PYMARKDOWN_FIXABLE}
    if not fixable_lines:
        return text
    lines = text.split("\n")
    todo = []
    for chunk in chunks(text):
        count = chunk.text.count("\n")
        if any(chunk.start <= line < chunk.start + count for line in fixable_lines):
            todo.append(chunk)
    fixed = fix_documents([chunk.document for chunk in todo], config)
    for chunk, document in sorted(zip(todo, fixed, strict=True), key=lambda pair: -pair[0].start):
        if chunk.prefixed:
            if not document.startswith(PREFIX):
                continue
            document = document[len(PREFIX) :]
        count = chunk.text.count("\n")
        lines[chunk.start - 1 : chunk.start - 1 + count] = document.rstrip("\n").split("\n")
    candidate = "\n".join(lines)
    try:
        reparsed = parse(candidate, rel, project.settings.schema)
    except ParseError:
        return text
    if _signature(reparsed) != _signature(cleaned):
        return text
    return render(reparsed, schema)


# --- the write path: bodies stored so that the file passes ---------------------------------------------


def _needs_scan(text: str, width: int) -> bool:
    return needs_scan(text, width)


def _vouchable(config: LintConfig) -> bool:
    """Whether `needs_scan` may stand in for PyMarkdown under `config`: it knows the default rules only,
    so a project with its own `[tool.pymarkdown]` has every body scanned under its rules."""
    return config.source is None


def _body_head(title: str, body: str) -> str:
    """What stands above `body` in its file, as render writes it (a file title, the entry heading, its
    metadata, and the separator when the body needs one), to lint the body in place."""
    entry = Entry(id="X-1", title=title, date="2000-01-01", area="a", status="active", body=body or "x")
    text = render_entry(entry)
    return "# memfiles\n\n" + text[: len(text) - len(entry.body)]


def _scan_body(config: LintConfig, title: str, body: str) -> list[tuple[int, str]]:
    head = _body_head(title, body)
    offset = head.count("\n")
    found = scan_documents([head + body + "\n"], config)[0]
    code = code_lines(body.split("\n"), offset + 1) if code_tabs_allowed(config) else frozenset()
    return [
        (line - offset, f"{rule} {name.split(',')[0]}: {message}")
        for line, _c, rule, name, message in found
        if not (rule == "md010" and line in code)
    ]


def clean_text(
    project: Project, text: str, position: int, field: str, title: str = "x", config: LintConfig | None = None
) -> str:
    """A body (or intro) as the write path stores it; OpError naming the line and rule if it cannot pass.
    `config`: the project's lint configuration, when the caller has it already."""
    settings = project.settings
    cleaned = clean_body(text, settings.wrap)
    config = config or lint_config(project)  # first: a [tool.pymarkdown] it refuses is an error even for prose
    if _vouchable(config) and not _needs_scan(cleaned, settings.wrap) and not _needs_scan(title, 0):
        return cleaned
    try:
        problems = _scan_body(config, title, cleaned)
    except LintCrashed as crash:
        raise OpError(position, f"{field}: {crash}", field) from crash
    if problems:
        # PyMarkdown's own fixes (list indents, fence style, emphasis spacing...), then a second look
        head = _body_head(title, cleaned)
        fixed = fix_documents([head + cleaned + "\n"], config)[0]
        if fixed.startswith(head):
            cleaned = fixed[len(head) :].rstrip("\n")
            problems = _scan_body(config, title, cleaned)
    if problems:
        line, message = problems[0]
        where = f"{field} line {_given_line(text, cleaned, line)}" if line > 0 else "title"
        named = field if line > 0 else "title"
        raise OpError(position, f"{where}: {message}; the lint rule set refuses it (docs/lint.md)", named)
    return cleaned


def _given_line(given: str, cleaned: str, line: int) -> int:
    """The line of the text as given that became line `line` of the cleaned text (which has blank lines
    added around blocks): the same occurrence of the same words; `line` itself when it was rewritten."""
    cleaned_lines = cleaned.split("\n")
    if not 0 < line <= len(cleaned_lines) or not cleaned_lines[line - 1].strip():
        return line
    words = cleaned_lines[line - 1].strip()
    nth = sum(1 for before in cleaned_lines[: line - 1] if before.strip() == words)
    places = [n for n, row in enumerate(given.replace("\r\n", "\n").split("\n"), start=1) if row.strip() == words]
    return places[nth] if nth < len(places) else line


def clean_ops(project: Project, ops: list) -> list:  # list[Op]
    """The ops with every body and intro cleaned for the lint rules; BatchError naming every op that cannot
    pass (all of them at once, so that one run shows what a batch must fix)."""
    schema = project.settings.schema
    problems: list[OpError] = []
    texts = any(isinstance(op.fields.get(key), str) for op in ops for key in ("title", "body", "intro"))
    config = lint_config(project) if texts else LintConfig({})  # a status change reads no lint settings
    for op in ops:
        try:
            _clean_op(project, schema, op, config)
        except BatchError as error:
            problems.extend(error.problems)
        except OpError as error:
            problems.append(error)
    if problems:
        raise BatchError(problems)
    return ops


def _clean_op(project: Project, schema: Schema, op, config: LintConfig) -> None:  # op: Op (store.ops)
    title = op.fields.get("title")
    if isinstance(title, str) and "body" not in op.fields and (_needs_scan(title, 0) or not _vouchable(config)):
        clean_text(project, "x", op.position, "title", title, config)  # a new title under the old body's rules
    for field in ("body", "intro"):
        value = op.fields.get(field)
        if not isinstance(value, str) or not value:
            continue
        cleaned = clean_text(project, value, op.position, field, op.fields.get("title") or "x", config)
        if field == "body" and len(cleaned) > schema.body_limit:
            raise OpError(
                op.position,
                f"body is {len(cleaned)} characters once cleaned for the lint rules; at most {schema.body_limit}",
            )
        op.fields[field] = cleaned
