"""`memfiles distil`: experience logs become knowledge entries (the memory-keeper seed's three stages).

load_experiences (services/distiller/experiences.py) -> distil_knowledge (here, with services/distiller/filing.py) ->
report (cli). Only records no entry counts yet are read into the knowledge; each is filed where its
evidence says (a confirmation, a failure, a contradiction, a new entry) and nothing is overwritten or
deleted. Every write goes through the batch, like `add`; when nothing changes, nothing is written, so
distilling again on a later day changes no byte (`_Last distilled:` dates the last change).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from memfiles.format.parse import parse
from memfiles.format.wrap import one_line
from memfiles.services.distiller.authored import sentence
from memfiles.services.distiller.experiences import Experiences, Record, load_experiences, tool_flags
from memfiles.services.distiller.filing import Decision, Filer, log_vocabulary
from memfiles.services.distiller.flags import find_flags
from memfiles.services.distiller.knowledge import FLAGS, NOTES, QUIRKS, SECTIONS, Known, known_from
from memfiles.services.distiller.matching import Similarity
from memfiles.services.distiller.signals import Weights
from memfiles.store.fileio import read_memory_text
from memfiles.store.project import Project

_LAST = re.compile(r"_Last distilled: \d{4}-\d{2}-\d{2} from")


def _words(notes: str) -> list[str]:
    """The Notes as words, without the date of the last distillation: the file wraps what is drafted as
    one line, so only words tell whether anything but the date would change."""
    return _LAST.sub("", notes).split()


@dataclass
class DomainReport:
    domain: str
    knowledge: str
    summary: dict[str, Any]
    skipped: str | None = None
    added: dict[str, list[str]] = field(default_factory=lambda: {s: [] for s in SECTIONS})
    confirmed: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    contradictions: list[dict[str, str]] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    matching: str = "model"
    updated: bool = False  # the knowledge file changed (with dry_run: would change)
    warnings: list[str] = field(default_factory=list)
    write: dict[str, Any] | None = None
    dry_run: bool = False

    @property
    def annotated(self) -> list[str]:
        """Existing entries this run changed (confirmed, failed or contradicted), each once."""
        return list(dict.fromkeys([*self.confirmed, *self.failures, *(c["id"] for c in self.contradictions)]))

    def as_json(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "knowledge": self.knowledge,
            "skipped": self.skipped,
            "records_read": self.summary.get("record_count", 0),
            "records_skipped": self.summary.get("records_skipped", 0),
            "date_range": self.summary.get("date_range", []),
            "signoff_rate": self.summary.get("signoff_rate", 0.0),
            "dry_run": self.dry_run,
            "added": self.added,
            "annotated": self.annotated,
            "confirmed": self.confirmed,
            "failed": self.failures,
            "contradictions": self.contradictions,
            "decisions": [d.as_json() for d in self.decisions],
            "matching": self.matching,
            "updated": self.updated,
            "warnings": self.warnings,
            "write": self.write,
        }


def _read_knowledge(project: Project, rel: str) -> tuple[list[Known], str | None, dict[str, str]]:
    """The file's entries as the distiller matches them, its Notes, and how the file spells each of the
    distiller's sections: a section renamed by hand in another case (`## Known failure patterns`) is
    still that section, its entries matched and new ones filed there, not under a second heading."""
    path = project.root / rel
    if not path.exists():
        return [], None, {}
    memory = parse(read_memory_text(path, rel), rel, project.settings.schema)
    ours = {name.casefold(): name for name in (*SECTIONS, NOTES)}
    spelled = {ours[s.name.casefold()]: s.name for s in memory.sections if s.name and s.name.casefold() in ours}

    def canonical(name: str | None) -> str | None:
        return ours.get(name.casefold(), name) if name else name

    notes = next((s.intro for s in memory.sections if canonical(s.name) == NOTES), None)
    return [known_from(e, canonical(memory.section_of(e.id))) for e in memory.entries], notes, spelled


def _pruned_knowns(project: Project, rel: str) -> list[tuple[str, str, Known]]:
    """(id, reason, entry as matched) of every entry pruned from `rel` (memory/pruned.jsonl keeps each
    whole): the runs it counted were distilled once, and someone pruned what they became."""
    from memfiles.errors import ParseError
    from memfiles.store.pruned_ledger import Ledger

    try:
        records = Ledger(project.settings.memory_dir / "pruned.jsonl").read()
    except ParseError:
        return []  # check names the ledger; distilling does not hang on it
    found = []
    for record in records:
        if record.get("path") != rel or not isinstance(record.get("entry"), str):
            continue
        try:
            memory = parse(f"# Pruned\n\n{record['entry']}", rel, project.settings.schema)
        except ParseError:
            continue
        found += [(e.id, str(record.get("reason") or "no reason"), known_from(e, None)) for e in memory.entries]
    return found


def _llm_findings(filer: Filer, findings: list[Any], records: list[Record], warnings: list[str]) -> None:
    """File the drafter's findings: the same section and symptom confirms, anything else is new. A tool
    flag is filed as successful only on a signed-off run that used a flag the finding names, as the rules
    drafter files it. Every run gets its decision (--explain), those no filed finding cites too."""
    by_key = {r.key: r for r in records}
    decided: set[str] = set()
    for finding in findings:
        runs = [by_key[k] for k in finding.evidence if k in by_key]
        if not runs:
            continue
        if finding.section == FLAGS:  # flags compared as flags (`--max-fanout=16` is `--max-fanout 16`), not text
            named = find_flags(f"{finding.title}\n{finding.body}")
            used = [
                r for r in runs if r.signoff and any(mine.covers(theirs) for mine in named for theirs in tool_flags(r))
            ]
            if not used:
                cited = ", ".join(record.key for record in runs)
                warnings.append(
                    f"the drafter's flag {finding.title!r}: no run it cites ({cited}) signed off using a flag it"
                    " names: not filed as successful"
                )
                continue
            runs = used
        known, score, why = filer.best(finding.section, finding.title)
        if known is None:
            lead = re.match(r"^\*\*(.+?)\*\*", finding.body.strip())
            symptoms = [finding.title] + ([lead.group(1).rstrip(".")] if lead else [])
            known = Known(finding.section, finding.title, finding.body, symptoms, changed=True)
            filer.knowns.append(known)
            action = "new"
        else:
            action = "confirmed"
        for record in runs:
            if known.mentions(record.key):
                continue
            known.note("evidence" if record.signoff or finding.section == QUIRKS else "failed", record.key, record.when)
            kind = {FLAGS: "flag", QUIRKS: "quirk"}.get(finding.section, "symptom")  # Decision.finding's words
            filer.decide(record, kind, finding.title, action, known, score, f"drafter: {why}")
            decided.add(record.key)
    for record in records:
        if record.key not in decided:
            filer.decide(record, "run", "", "ignored", None, None, "no finding of the drafter that was filed cites it")


def _ops(knowns: list[Known], domain: str, rel: str, spelled: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Updates of changed entries, then adds section by section (ids then follow the file's order)."""
    ops: list[dict[str, Any]] = []
    for known in ordered(knowns):
        if not known.changed:
            continue
        fields: dict[str, Any] = {
            "evidence": known.evidence,
            "confirmed": str(len(known.evidence)),
            "last_seen": known.last_seen,
        }
        if known.failed:
            fields["failed"] = known.failed
        if known.contradicted_value():
            fields["contradicted"] = known.contradicted_value()
        body = known.current_body()
        if known.id is None:
            ops.append(
                {
                    "op": "add",
                    "kind": "lesson",
                    "title": known.title,
                    "area": domain,
                    "body": body,
                    "file": rel,
                    "section": (spelled or {}).get(known.section, known.section),
                    **fields,
                }
            )
        else:
            if one_line(body) != one_line(known.body):
                fields["body"] = body
            ops.append({"op": "update", "id": known.id, **fields})
    return ops


def today() -> str:
    return dt.date.today().isoformat()


def ordered(knowns: list[Known]) -> list[Known]:
    """Entries of the file first, then new ones by section in the file's order, each in filing order."""
    rank = {section: n for n, section in enumerate(SECTIONS)}
    return sorted(knowns, key=lambda k: (k.id is None, rank.get(k.section, len(rank)) if k.id is None else 0))


_LAST_LINE = re.compile(r"^_Last distilled: \d{4}-\d{2}-\d{2} from \d+ experience records?\._$")
_LOW_SIGNOFF = re.compile(r"^Signoff rate is \d+%, under 50%: ")


def _kept_notes(before: str | None) -> list[str]:
    """The lines of the Notes a person wrote: all but the distiller's own, which are the _Last distilled_
    line and the low-signoff paragraph (from its first line to the next blank line or the _Last_ line),
    told line by line, so that a line typed right under or above them, with no blank line, stays."""
    kept: list[str] = []
    in_low = False
    for line in (before or "").split("\n"):
        stripped = line.strip()
        if _LAST_LINE.match(stripped):
            in_low = False
            continue
        if _LOW_SIGNOFF.match(stripped):
            in_low = True
        if in_low:
            if stripped:
                continue
            in_low = False
        kept.append(line)
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip("\n")
    return [text] if text.strip() else []


def _notes(summary: dict[str, Any], records: list[Record], today: str, before: str | None = None) -> str:
    """The Notes section: what a person wrote there (kept as it is), then the low-signoff flag when it
    applies and one _Last distilled_ line, both replaced."""
    lines = _kept_notes(before)
    if summary["signoff_rate"] < 0.5:
        vocab = log_vocabulary(records)
        counts: dict[str, list[Any]] = {}
        for record in records:
            if not record.signoff:
                for issue in record.issues:
                    counts.setdefault(issue.lower(), [sentence(issue, vocab), 0])[1] += 1
        failing = [f"{issue} ({n})" for issue, n in sorted(counts.values(), key=lambda item: -item[1])[:3]]
        lines.append(
            f"Signoff rate is {summary['signoff_rate']:.0%}, under 50%: the commonest failure modes of"
            f" runs that did not reach signoff were {'; '.join(failing) or 'not recorded'}."
        )
    lines.append(f"_Last distilled: {today} from {summary['record_count']} experience records._")
    return "\n\n".join(lines)


def distil_domain(
    project: Project,
    domain: str,
    min_records: int = 5,
    dry_run: bool = False,
    drafter: Any = None,
    use_model: bool = True,
    weights: Weights | None = None,
) -> DomainReport:
    """Run load_experiences and distil_knowledge for one domain; writes unless `dry_run`. `weights` are
    the evidence's (services/distiller/signals.py; the evaluation passes those fitted without the domain)."""
    settings = project.settings
    rel = f"memory/{domain}/knowledge.md"
    experiences = load_experiences(settings.memory_dir, domain, f"memory/{domain}/experiences.jsonl")
    summary = experiences.summary()
    report = DomainReport(domain, rel, summary, warnings=[*experiences.skipped, *experiences.warnings])
    count = len(experiences.records)
    report.dry_run = dry_run
    if count == 0 or count < min_records:
        report.skipped = (
            f"{count} valid record{'s' * (count != 1)}, fewer than --min-records {min_records}"
            if count
            else "no valid records"
            + (
                f": {len(experiences.skipped)} line{'s' * (len(experiences.skipped) != 1)} skipped (see the"
                " warnings); a log holds one JSON object a line"
                if experiences.skipped
                else ""
            )
        )
        return report
    if dry_run:
        return _distil_read(project, domain, rel, experiences, report, dry_run, drafter, use_model, weights)
    # Two distils of one project at once would each read the file before the other wrote, and file the
    # same new finding twice: the read, the filing and the write are one step across processes.
    from memfiles.store.lock import FileLock

    with FileLock(settings.state_dir / "distil.lock", settings.lock_timeout, busy="another distil is running"):
        return _distil_read(project, domain, rel, experiences, report, dry_run, drafter, use_model, weights)


def not_drafted(project: Project, domain: str, why: object) -> DomainReport:
    """The report of a domain the drafter failed on (`distil --all`): skipped, saying why; nothing written."""
    rel = f"memory/{domain}/knowledge.md"
    experiences = load_experiences(project.settings.memory_dir, domain, f"memory/{domain}/experiences.jsonl")
    report = DomainReport(domain, rel, experiences.summary())
    report.skipped = f"not distilled: {why}"
    return report


def _distil_read(
    project: Project,
    domain: str,
    rel: str,
    experiences: Experiences,
    report: DomainReport,
    dry_run: bool,
    drafter: Any,
    use_model: bool,
    weights: Weights | None = None,
) -> DomainReport:
    """distil_domain's work once the log is read: the knowledge file read, every record filed, the ops
    written (unless `dry_run`)."""
    settings = project.settings
    summary = report.summary
    knowns, notes, spelled = _read_knowledge(project, rel)
    records = sorted(experiences.records, key=lambda r: (r.timestamp, r.line))
    pruned = _pruned_knowns(project, rel)

    def pruned_with(record: Record) -> str | None:
        return next((f"{i}, since pruned: {why}" for i, why, k in pruned if k.mentions(record.key)), None)

    counted = {r.key for r in records if any(k.mentions(r.key) for k in knowns)}
    gone = {r.key: by for r in records if r.key not in counted and (by := pruned_with(r)) is not None}
    fresh = [r for r in records if r.key not in counted and r.key not in gone]
    similarity = Similarity(settings, use_model=use_model)
    filer = Filer(knowns, similarity, settings.schema.title_limit, weights)
    for record in records:
        if record.key in gone:
            filer.decide(record, "run", "", "already", None, None, f"already distilled into {gone[record.key]}")
        elif record.key in counted:
            filer.decide(record, "run", "", "already", None, None, "already distilled: an entry counts this run")
    if drafter is not None and fresh:
        subset = Experiences(domain, experiences.path, fresh)
        findings = drafter(subset.summary(), subset)
        report.warnings.extend(getattr(drafter, "warnings", []))
        filer.sim.prepare([f.title for f in findings] + [s for k in knowns for s in k.symptoms])
        _llm_findings(filer, findings, fresh, report.warnings)
    elif drafter is None:
        filer.prepare(fresh, [r for r in records if r not in fresh])
        for record in fresh:
            filer.file(record)
    report.decisions = filer.decisions
    for known in {id(d.known): d.known for d in filer.decisions if d.known is not None}.values():
        entry = known.entry
        if entry is not None and entry.status == "retired" and known.changed:
            runs = sorted({d.run for d in filer.decisions if d.known is known and d.action != "already"})
            report.warnings.append(
                f"{known.id} is retired ({entry.reason or 'no reason given'}) but run{'s' * (len(runs) > 1)}"
                f" {', '.join(runs)} showed its finding again: counted on it; look again at the retirement"
            )
    report.matching = similarity.mode
    if similarity.mode == "lexical" and similarity.reason and use_model:
        report.warnings.append(f"symptoms matched by word overlap: the model could not be loaded ({similarity.reason})")
    ops = _ops(knowns, domain, rel, spelled)
    intro = _notes(summary, records, today(), notes)
    if ops or notes is None or _words(notes) != _words(intro):
        ops.append({"op": "section", "file": rel, "section": spelled.get(NOTES, NOTES), "intro": intro})
    new = [k for k in ordered(knowns) if k.id is None]
    report.dry_run = dry_run
    automated_only(ops, rel, {k.id for k in knowns if k.id})
    if not dry_run and ops:
        _write(project, report, ops, new)
    elif dry_run:
        report.updated = bool(ops)  # what a run without --dry-run would do
    _tally(report, new)
    return report


def automated_only(ops: list[dict[str, Any]], rel: str, own_ids: set[str]) -> None:
    """The automated path's guarantee, enforced: it adds entries to its own domain's knowledge file and
    annotates entries of that file, nothing else. A prune, a retire, a move or an op on another file is
    a bug (or an answer someone steered), refused before anything is written."""
    from memfiles.errors import MemfilesError

    allowed_update = {"op", "id", "evidence", "confirmed", "last_seen", "failed", "contradicted", "body"}
    for position, op in enumerate(ops, start=1):
        verb = op.get("op")
        fine = (
            (verb in ("add", "section") and op.get("file") == rel)
            if verb != "update"
            else (op.get("id") in own_ids and set(op) <= allowed_update)
        )
        if not fine:
            raise MemfilesError(
                f"distil refused its own op {position} ({verb} {op.get('id') or op.get('file') or ''}): the automated"
                f" path only adds to and annotates {rel}; nothing was written"
            )


def _tally(report: DomainReport, new: list[Known]) -> None:
    """The report's lists, from the decisions (after the write, so that new entries have their ids; a dry
    run hands out no id, so `added` then holds the titles of the entries it would add)."""
    report.added = {s: [k.id or k.title for k in new if k.section == s] for s in SECTIONS}
    for decision in report.decisions:
        known = decision.known
        if known is None or known in new:
            continue
        if decision.action == "contradicted":
            report.contradictions.append(
                {
                    "id": known.label,
                    "title": known.title,
                    "old_fix": known.fix,
                    "new_fix": decision.fix,
                    "evidence": decision.run,
                }
            )
        bucket = {"confirmed": report.confirmed, "failed": report.failures}.get(decision.action)
        if bucket is not None and known.label not in bucket:
            bucket.append(known.label)


def _write(project: Project, report: DomainReport, ops: list[dict[str, Any]], new: list[Known]) -> None:
    from memfiles.contract import write_object
    from memfiles.services.indexing.index_client import notify
    from memfiles.services.write import write_ops
    from memfiles.store.ops import normalize_automated, parse_ops

    settings = project.settings
    # an automated writer's batch: a body grown past the limit (a long log line, every failed run named)
    # is clipped rather than refusing the whole domain
    ops = [normalize_automated(op, settings.schema) for op in ops]
    batch = parse_ops({"ops": ops}, settings.schema, settings.wrap)
    result, warning = write_ops(project, batch, notify=notify)
    report.warnings.extend(result.warnings)  # what the write carried over (errors check reports), as add says
    if warning:
        report.warnings.append(warning)
    for known, new_id in zip(new, result.added, strict=True):
        known.id = new_id
    report.updated = bool(result.paths)
    report.write = write_object(added=result.added, updated=result.updated, entries=_entries(project, result))


def _entries(project: Project, result: Any) -> list[dict[str, Any]]:
    from memfiles.services.read import entry_json

    objects = []
    for entry_id in result.changed_ids:
        located = project.find(entry_id)
        if located is not None:
            objects.append(entry_json(located, project.settings.schema))
    return objects
