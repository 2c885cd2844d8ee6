"""Lint for a project: findings for `check` and the language server, fixes for `fmt`, bodies for writes.

The rules are markdownlint's as rumdl implements them, chosen in memfiles.mdlint.rules; the user's
`[tool.pymarkdown]` or `[tool.rumdl]` is laid over them. Findings are contract Findings (code `md009`,
severity warning). Results are cached by chunk content in .memfiles/lint-cache.json. Lint is advisory:
the write path takes every printable finding (markdown/body.py) and never waits on the linter for
more than its bounded run (D-110).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from memfiles.contract import Finding, severity_of
from memfiles.errors import BatchError, OpError, ParseError
from memfiles.format.model import Entry, MemoryFile
from memfiles.format.parse import parse
from memfiles.format.render import render, render_entry
from memfiles.mdlint.engine import (
    LintCache,
    RawFinding,
    chunks,
    fix_documents,
    lint_texts,
    pending,
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


# --- fmt: the linter's fixes where they change nothing a reader sees; never the Manual, never metadata ----


def _signature(memory: MemoryFile) -> list[tuple]:
    """What a fix must not change: the title, sections, and every entry's id, title and metadata."""
    return [
        (
            memory.title,
            tuple((s.name, tuple((e.id, e.title, tuple(e.meta())) for e in s.entries)) for s in memory.sections),
        ),
        (memory.manual,),
    ]


def _lists_kept_apart(memory: MemoryFile) -> MemoryFile:
    """`memory` with markdown.repairs.separate_lists applied to every body and intro (it shows nothing new)."""
    import dataclasses

    from memfiles.markdown.repairs import separate_lists

    def apart(text: str) -> str:
        return "\n".join(separate_lists(text.split("\n"))) if text else text

    sections = tuple(
        dataclasses.replace(
            section,
            intro=apart(section.intro),
            entries=tuple(dataclasses.replace(entry, body=apart(entry.body)) for entry in section.entries),
        )
        for section in memory.sections
    )
    return dataclasses.replace(memory, preamble=apart(memory.preamble), sections=sections)


def fix_text(project: Project, rel: str, memory: MemoryFile, config: LintConfig | None = None) -> str:
    """The canonical text of `memory` with the linter's fixes applied to each chunk (an entry, a section's
    text) that has a fixable finding, where the chunk renders as before; the Manual byte for byte. If the
    fixes would change any entry's id, title or metadata, or the file would not parse, it stays canonical."""
    from memfiles.markdown.reader import renders_alike

    schema = project.settings.schema
    config = config or lint_config(project)
    text = render(memory, schema)
    cache = open_cache(project)
    found = lint_texts([text], config, cache)[0]
    cache.save()
    fixable_lines = {raw.line for raw in found if raw.fixable}
    if not fixable_lines:
        return text
    if any(raw.rule == "md004" for raw in found):  # lists side by side kept two before their bullets are one
        memory = _lists_kept_apart(memory)
        text = render(memory, schema)
        found = lint_texts([text], config, cache)[0]
        fixable_lines = {raw.line for raw in found if raw.fixable}
    lines = text.split("\n")
    todo = []
    for chunk in chunks(text):
        count = chunk.text.count("\n")
        if any(chunk.start <= line < chunk.start + count for line in fixable_lines):
            todo.append(chunk)
    fixed = fix_documents([chunk.document for chunk in todo], config, alike=renders_alike)
    for chunk, document in sorted(zip(todo, fixed, strict=True), key=lambda pair: -pair[0].start):
        prefix = chunk.document[: len(chunk.document) - len(chunk.text)]
        if not document.startswith(prefix):
            continue
        count = chunk.text.count("\n")
        lines[chunk.start - 1 : chunk.start - 1 + count] = document[len(prefix) :].rstrip("\n").split("\n")
    candidate = "\n".join(lines)
    try:
        reparsed = parse(candidate, rel, project.settings.schema)
    except ParseError:
        return text
    if _signature(reparsed) != _signature(memory):
        return text
    return render(reparsed, schema)


# --- the write path: every printable finding is stored (markdown/body.py) -------------------------------


def _body_head(title: str, body: str) -> str:
    """What stands above `body` in its file, as render writes it (a file title, the entry heading, its
    metadata, and the separator when the body needs one), to lint the body in place."""
    entry = Entry(id="X-1", title=title, date="2000-01-01", area="a", status="active", body=body or "x")
    text = render_entry(entry)
    return "# memfiles\n\n" + text[: len(text) - len(entry.body)]


def _tidied(items: list[tuple[str, str]], config: LintConfig | None, careful: bool = True) -> list[str]:
    """Stage 2 of markdown/body.py for (title, body) pairs: the linter's fixes, from one run; each kept
    only where the body renders as before (`careful`), or all of them."""
    from memfiles.markdown.reader import renders_alike

    bodies = [body for _title, body in items]
    if config is None or not items:
        return bodies
    heads = [_body_head(title, body) for title, body in items]
    documents = [head + body + "\n" for head, body in zip(heads, bodies, strict=True)]
    keep = [len(head) for head in heads]
    fixed = fix_documents(documents, config, keep=keep, alike=renders_alike if careful else None)
    return [
        document[len(head) :].strip("\n") if document.startswith(head) else body
        for head, body, document in zip(heads, bodies, fixed, strict=True)
    ]


def _prepared(project: Project, items: list[tuple[str, str]], config: LintConfig | None) -> list:
    """Stages 1-3 of markdown/body.py for (title, text) pairs, as Prepared. The linter's fixes and the
    wrap are first applied all at once and the result compared with the repaired text (one rendering
    each); a body where that changes what it shows takes the careful way, each stage kept only where it
    renders as before (fixes in halves)."""
    from memfiles.markdown.body import Prepared, repair, settle, wrap, wrapped
    from memfiles.markdown.reader import renders_alike

    settings = project.settings
    repaired = [repair(text, settings.schema) for _title, text in items]
    titles = [title for title, _text in items]
    first = [wrapped(prepared.text, settings.wrap) for prepared in repaired]  # a linter reads lines as wrapped
    quick = _tidied(list(zip(titles, first, strict=True)), config, careful=False)
    done: list[Prepared | None] = []
    for prepared, text in zip(repaired, quick, strict=True):
        final = wrapped(text, settings.wrap)
        done.append(Prepared(final, prepared.notes) if renders_alike(prepared.text, final) else None)
    slow = [n for n, item in enumerate(done) if item is None]
    if slow:
        careful = [wrap(repaired[n], settings.wrap) for n in slow]
        tidied = _tidied([(titles[n], prepared.text) for n, prepared in zip(slow, careful, strict=True)], config)
        for n, prepared, text in zip(slow, careful, tidied, strict=True):
            done[n] = wrap(Prepared(text, prepared.notes), settings.wrap)
    return [settle(item, settings.schema) for item in done if item is not None]


def _clipped(project: Project, title: str, given: str, over: int, config: LintConfig | None):  # -> Prepared
    """An automated writer's body prepared again from its text clipped by what preparing it added (and a
    little more each time), until it fits the body limit (three tries)."""
    from memfiles.format.wrap import clip

    limit = project.settings.schema.body_limit
    for attempt in range(1, 4):
        done = _prepared(project, [(title, clip(given, max(1, len(given) - over * attempt - 20)))], config)[0]
        if len(done.text) <= limit:
            done.notes.append(f"clipped to {limit} characters once prepared for its file (an automated writer's)")
            return done
    return done


def clean_ops(project: Project, ops: list) -> list[str]:  # ops: list[Op]
    """Every body and intro of `ops` made ready for its file (markdown/body.py), in place; the notes on
    what was changed that a reader may see, as warnings. BatchError naming every op whose body is past
    the body limit once prepared (all of them at once, so that one run shows what a batch must fix)."""
    schema = project.settings.schema
    work = [
        (op, field, op.fields.get("title") or "x")
        for op in ops
        for field in ("body", "intro")
        if isinstance(op.fields.get(field), str) and op.fields.get(field)
    ]
    config = lint_config(project) if work else None
    prepared = _prepared(project, [(title, op.fields[field]) for op, field, title in work], config)
    problems: list[OpError] = []
    notes: list[str] = []
    several = len({op.position for op, *_ in work}) > 1
    for (op, field, title), done in zip(work, prepared, strict=True):
        if field == "body" and len(done.text) > schema.body_limit and op.clip:
            done = _clipped(project, title, op.fields[field], len(done.text) - schema.body_limit, config)
        if field == "body" and len(done.text) > schema.body_limit:
            message = f"body is {len(done.text)} characters once prepared for its file; at most {schema.body_limit}"
            problems.append(OpError(op.position, message, field))
            continue
        op.fields[field] = done.text
        where = f"op {op.position} {field}" if several else field
        notes += [f"{where}: {note}" for note in [*getattr(op, "notes", []), *done.notes]]
    if problems:
        raise BatchError(problems)
    return notes
