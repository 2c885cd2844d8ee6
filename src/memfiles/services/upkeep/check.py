"""`check` and `fmt`: every promise of the format over the project's files, and the canonical rewrite.

check_project is a list of Findings built in steps (files that do not read, each file alone, ids across
files, the pruned ledger); a new check is one more step that appends its findings.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from memfiles.config import ignored_configs, shadowed_table
from memfiles.contract import Finding
from memfiles.errors import ParseError
from memfiles.format.ids import format_id, id_key
from memfiles.format.model import Entry, MemoryFile
from memfiles.format.parse import parse
from memfiles.format.render import render
from memfiles.format.validate import finding, finding_order, validate_file, validate_ids
from memfiles.store.fileio import NotUtf8Error, write_if_changed
from memfiles.store.id_marks import MarksFile, used_numbers
from memfiles.store.lock import FileLock
from memfiles.store.project import LoadedFile, Project
from memfiles.store.pruned_ledger import Ledger


def parse_finding(error: ParseError) -> Finding:
    """A file that cannot be read as a memory file, as a finding (`not-utf8` or `parse-error`)."""
    code = "not-utf8" if isinstance(error, NotUtf8Error) else "parse-error"
    return finding(code, error.path, error.line, error.message)


def every_problem(text: str, rel: str, project: Project) -> tuple[list[ParseError], MemoryFile | None]:
    """Every problem a broken file's entries hold, not only the first, and the file without the entries
    they broke (for ids used twice). A conflict, a broken generated index or an unclosed fence stops the
    reading: the problems found before it, then it, and None. No problems: the file as parse reads it."""
    problems: list[ParseError] = []
    try:
        memory = parse(text, rel, project.settings.schema, problems)
    except ParseError as error:
        return [*problems, error], None
    return problems, memory


def _broken_files(project: Project, errors: list[ParseError]) -> tuple[list[Finding], list[tuple[str, MemoryFile]]]:
    """check's findings for the files that do not parse: each one's every problem (a file that is not
    UTF-8 or cannot be read: the one), and what is left of each, to look for ids used twice."""
    found: list[Finding] = []
    left: list[tuple[str, MemoryFile]] = []
    for error in errors:
        problems: list[ParseError] = [error]
        if not isinstance(error, NotUtf8Error) and error.path is not None:
            try:
                text = (project.root / error.path).read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                text = None
            if text is not None:
                problems, memory = every_problem(text, error.path, project)
                problems = problems or [error]
                if memory is not None:
                    left.append((error.path, memory))
        found.extend(parse_finding(problem) for problem in problems)
    return found, left


def _ledger_findings(project: Project, files: list[LoadedFile]) -> list[Finding]:
    ledger = Ledger(project.settings.memory_dir / "pruned.jsonl")
    try:
        pruned = {record["id"]: record for record in ledger.read()}
    except Exception as error:  # a broken ledger is a finding to report, not a crash
        line = getattr(error, "line", None) or 1
        return [finding("bad-ledger", project.rel(ledger.path), line, getattr(error, "message", str(error)))]
    return [item for loaded in files for item in _reused_pruned(loaded.rel, loaded.memory, set(pruned))]


def _reused_pruned(rel: str, memory: MemoryFile, pruned: set[str]) -> list[Finding]:
    gone = {id_key(entry_id) for entry_id in pruned} - {None}
    return [
        finding(
            "pruned-id-reused",
            rel,
            entry.line,
            f"{entry.id} was pruned; its number cannot be reused: give this entry a new one with"
            f" memfiles renumber {entry.id} --at {rel}:{entry.line}",
            entry.id,
        )
        for entry in memory.entries
        if id_key(entry.id) in gone
    ]


def text_findings(
    project: Project, rel: str, text: str, others: list[tuple[str, MemoryFile]], pruned: set[str]
) -> list[Finding]:
    """check's findings for one file as it stands in an editor (`text`), beside the project's other files
    (for ids used twice) and the pruned ids: what the language server shows as you type."""
    schema = project.settings.schema
    problems, memory = every_problem(text, rel, project)  # one parse, at every pause in typing
    if problems:
        found = [parse_finding(problem) for problem in problems]
        if memory is not None:
            found += [item for item in validate_ids([*others, (rel, memory)]) if item.path == rel]
        return sorted(found, key=finding_order)
    assert memory is not None
    found = list(validate_file(rel, memory, text, schema))
    # the file typed in comes last: validate_ids names the second place of an id, which must be this one
    found += [item for item in validate_ids([*others, (rel, memory)]) if item.path == rel]
    found += _reused_pruned(rel, memory, pruned)
    return sorted(found, key=finding_order)


def check_project(project: Project) -> tuple[list[Finding], int]:
    """Every finding of the project's memory files, sorted by place, and how many files were read."""
    files, errors = project.load_all()
    schema = project.settings.schema
    findings, left = _broken_files(project, errors)
    for loaded in files:
        findings.extend(validate_file(loaded.rel, loaded.memory, loaded.text, schema))
    findings.extend(validate_ids([*((loaded.rel, loaded.memory) for loaded in files), *left]))
    findings.extend(_ledger_findings(project, files))
    findings.extend(id_findings(project, files, bool(errors)))
    findings.extend(empty_files(project))
    findings.extend(config_findings(project))
    return sorted(findings, key=finding_order), len(files) + len(errors)


def config_findings(project: Project) -> list[Finding]:
    """A [tool.memfiles] table in pyproject.toml that memory/memfiles.toml shadows, and configuration of a
    package memory folder below the root: their settings are read by nothing, which a user who edits
    them would never learn otherwise."""
    found = [
        finding(
            "config-ignored",
            path,
            line,
            "these settings are not read: a project has one configuration, at its root (memory/memfiles.toml"
            " or [tool.memfiles] in pyproject.toml), which every memory folder below it follows; move them there",
        )
        for path, line in ignored_configs(project.root, project.memory_dirs())
    ]
    shadowed = shadowed_table(project.root)
    if shadowed is None:
        return found
    path, line, own = shadowed
    return [
        *found,
        finding(
            "config-shadowed",
            path,
            line,
            f"[tool.memfiles] is ignored: {own} exists, and its settings win whole; move these settings"
            f" there, or delete one of the two",
        ),
    ]


def empty_files(project: Project) -> list[Finding]:
    """Markdown files in a memory folder that hold nothing but whitespace: not memory files yet (so nothing
    else reports them), but a write to one makes it one, so they are named (info: check still passes)."""
    found = []
    for path in project.markdown_files():
        try:
            empty = path.stat().st_size < 4096 and not path.read_bytes().strip()
        except OSError:
            continue
        if empty:
            rel = project.rel(path)
            found.append(
                finding("empty-file", rel, None, "empty memory file: a write to it starts its index; or delete it")
            )
    return found


def fails(findings: list[Finding]) -> bool:
    """True when a finding is an error or a warning: check exits 1. Info findings are only told."""
    return any(item.severity != "info" for item in findings)


def id_findings(project: Project, files: list[LoadedFile], broken: bool = False) -> list[Finding]:
    """What check says about ids beyond the files' own promises: successor cycles, the id marks file
    (memory/ids.txt) unreadable or left with merge conflict markers, and ids handed out that are gone
    from the files without a prune record. `broken`: a memory file did not parse, so its ids are unknown
    and none is reported missing."""
    from memfiles.services.upkeep.audit import successor_cycle_findings

    findings: list[Finding] = []
    findings += successor_cycle_findings(list(project.entries(files)))
    marks_file = MarksFile(project.settings.memory_dir)
    rel = project.rel(marks_file.path)
    try:
        marks = marks_file.read()
    except ParseError as error:
        return [*findings, finding("ids-file", rel, error.line, error.message)]
    if marks is None:
        return findings  # a project from before the marks: the next write creates them
    for line in marks.conflicts:
        findings.append(
            finding(
                "ids-conflict",
                rel,
                line,
                "a merge conflict marker: keep both sides' lines (memfiles takes the highest per prefix) and"
                " delete the markers",
            )
        )
    try:
        pruned = [record["id"] for record in Ledger(project.settings.memory_dir / "pruned.jsonl").read()]
    except ParseError:
        return findings  # reported by check_project; the pruned ids are unknown
    if broken:
        return findings
    used = used_numbers([*(entry.id for f in files for entry in f.memory.entries), *pruned])
    width = project.settings.schema.id_width
    prefixes = {kind.prefix for kind in project.settings.schema.kinds}
    for prefix in sorted(marks.high):
        line = marks.lines.get(prefix)
        if prefix not in prefixes:  # a typo, or a kind since removed: it hands out nothing, and prunes nothing
            known = ", ".join(sorted(prefixes))
            findings.append(
                finding(
                    "ids-file",
                    rel,
                    line,
                    f"{prefix} is not the prefix of any kind ({known}): if it is a typo, delete the line; if its"
                    " kind was removed, configure the kind again (deleting the line would let its numbers be"
                    " handed out again should the kind come back)",
                )
            )
            continue
        in_use = used.get(prefix, set())
        never = marks.never.get(prefix, set())
        missing = [number for number in marks.numbers(prefix) if number not in in_use and number not in never]
        for first, last in _runs(missing):
            entry_id = format_id(prefix, first, width)
            if last - first + 1 >= MISSING_RUN:  # one finding for the run, not one per id (999 for `D 1000`)
                typo = (
                    f"if the mark '{prefix} {marks.high[prefix]}' in {rel} was typed too high, correct it (before"
                    " any id above the highest in use is handed out); "
                    if last == marks.high[prefix]
                    else ""
                )
                message = (
                    f"{entry_id} to {format_id(prefix, last, width)} ({last - first + 1} ids) are missing: {typo}if"
                    " they were deleted by hand, restore them (git log -S '### ID:') or record each with"
                    " memfiles prune ID --reason '...'"
                )
                findings.append(finding("missing-id", rel, line, message, entry_id))
                continue
            for number in range(first, last + 1):
                entry_id = format_id(prefix, number, width)
                findings.append(
                    finding(
                        "missing-id",
                        rel,
                        line,
                        f"{entry_id} is missing: deleted by hand? restore it (git log -S '### {entry_id}:') or"
                        f" record it with memfiles prune {entry_id} --reason '...'",
                        entry_id,
                    )
                )
    return findings


MISSING_RUN = 5  # this many missing ids in a row, or more, are one finding (a mark typed too high?)


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    """Consecutive runs of sorted `numbers`, as (first, last)."""
    runs: list[tuple[int, int]] = []
    for number in sorted(numbers):
        if runs and number == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return runs


def lint_findings(project: Project, enabled: bool = True) -> list[Finding]:
    """The lint rule set's findings over the memory files (none when lint is skipped: `--no-lint`)."""
    if not enabled:
        return []
    from memfiles.services.lint import lint_project

    return lint_project(project)


@dataclass
class FmtResult:
    changed: list[str]
    unchanged: int
    errors: list[Finding] = field(default_factory=list)


def format_project(project: Project, write: bool, lint: bool = True) -> FmtResult:
    """Rewrite every memory file in canonical form with a fresh index (or, with write=False, only tell).

    Files that cannot be read are left alone and come back as `errors` (parse-error or not-utf8 findings).
    With `lint`, what the lint rule set can fix is fixed too (never in `## Manual`, never an entry's
    id, title or metadata): see services/lint.fix_text.
    """
    if lint:
        from memfiles.services.lint import fix_text
    result = FmtResult([], 0)
    with FileLock(project.settings.state_dir / "write.lock", project.settings.lock_timeout):
        files, errors = project.load_all()
        result.errors = sorted((parse_finding(error) for error in errors), key=finding_order)
        # Two entries with one id would get two index lines to one anchor: refuse until one is renumbered.
        twice = [
            replace(f, message=f"{f.message}; fmt writes nothing until one is renumbered (memfiles renumber)")
            for f in validate_ids((f.rel, f.memory) for f in files)
        ]
        result.errors += twice
        if twice:
            return result
        renames = canonical_spellings(project, files)
        for loaded in files:
            memory = respell(loaded.memory, renames)
            text = render(memory, project.settings.schema)
            if lint:
                text = fix_text(project, loaded.rel, memory)
            if text == loaded.text:
                result.unchanged += 1
                continue
            out = project.leads_out(loaded.path)
            if out is not None:  # read through the link, never written out through it (Project.leads_out)
                message = f"{loaded.rel} is a link to {out}, outside the project's memory folders; not rewritten"
                result.errors.append(finding("link-out", loaded.rel, None, message))
                continue
            result.changed.append(loaded.rel)
            if write:
                write_if_changed(loaded.path, text)
    return result


def canonical_spellings(project: Project, files: list[LoadedFile]) -> dict[str, str]:
    """{id as written: canonical id} for every entry id written without its padding (`D-2` for D-002)
    whose canonical form no other entry carries and no pruned record holds: fmt can then repair it
    (check's `id-format`) without making two entries share an id."""
    from memfiles.format.ids import canonical_id

    width = project.settings.schema.id_width
    written = [entry.id for loaded in files for entry in loaded.memory.entries]
    try:
        pruned = {str(record["id"]) for record in Ledger(project.settings.memory_dir / "pruned.jsonl").read()}
    except ParseError:
        return {}  # the ledger cannot say which ids are taken: repair nothing
    taken = {*written, *pruned}
    wanted: dict[str, list[str]] = {}
    for entry_id in dict.fromkeys(written):
        canonical = canonical_id(entry_id, width)
        if canonical != entry_id:
            wanted.setdefault(canonical, []).append(entry_id)
    return {
        spellings[0]: canonical
        for canonical, spellings in wanted.items()
        if len(spellings) == 1 and canonical not in taken and written.count(spellings[0]) == 1
    }


def respell(memory: MemoryFile, renames: dict[str, str]) -> MemoryFile:
    """`memory` with each id of `renames` written canonically: entry headings and the ids in metadata
    (refs, successor, promoted, evidence) that name it. Prose is left as written."""
    if not renames:
        return memory

    def fix(entry: Entry) -> Entry:
        def ids(values: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(renames.get(value, value) for value in values)

        successor = renames.get(entry.successor, entry.successor) if entry.successor else entry.successor
        return replace(
            entry,
            id=renames.get(entry.id, entry.id),
            refs=ids(entry.refs),
            successor=successor,
            promoted=ids(entry.promoted),
            evidence=ids(entry.evidence),
        )

    sections = tuple(replace(section, entries=tuple(fix(e) for e in section.entries)) for section in memory.sections)
    return replace(memory, sections=sections)
