"""`memfiles distil`: experience logs become knowledge entries (the memory-keeper seed's three stages).

load_experiences (services/experiences.py) -> distil_knowledge (here) -> report (cli). Before adding a
finding, the distiller asks for near-duplicates in the domain's knowledge file: a finding already known
is a confirmation on the existing entry; the same symptom with a different fix is a contradiction noted
on the entry; nothing is overwritten or deleted. Every write goes through the batch, like `add`.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from memfiles.format.model import Entry
from memfiles.format.parse import parse
from memfiles.format.wrap import clip, one_line
from memfiles.services.dedupe import (
    DISTILLER_THRESHOLD,
    LEXICAL_THRESHOLD,
    entry_words,
    jaccard,
    lexical_matches,
    many_near_duplicates,
    words,
)
from memfiles.services.experiences import Experiences, Record, issue_fix_pairs, load_experiences, tool_flags
from memfiles.store.fileio import read_text
from memfiles.store.project import Project

FAILURES = "Known Failure Patterns"
FLAGS = "Successful Tool Flags"
QUIRKS = "PDK / Tool Quirks"
NOTES = "Notes"
SECTIONS = (FAILURES, FLAGS, QUIRKS)
_QUIRK = re.compile(r"\b(quirk|pdk|workaround|known issue|tool bug|undocumented|silently)\b", re.IGNORECASE)
_SAME_FIX = 0.5  # word overlap above which two fixes are the same advice


@dataclass
class Finding:
    section: str
    title: str
    body: str
    evidence: list[str]
    last_seen: str
    fix: str = ""


@dataclass
class DomainReport:
    domain: str
    knowledge: str
    summary: dict[str, Any]
    skipped: str | None = None
    added: dict[str, list[str]] = field(default_factory=lambda: {s: [] for s in SECTIONS})
    confirmed: list[str] = field(default_factory=list)
    contradictions: list[dict[str, str]] = field(default_factory=list)
    dedupe: str = "index"
    updated: bool = False
    warnings: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "knowledge": self.knowledge,
            "skipped": self.skipped,
            "records_read": self.summary.get("record_count", 0),
            "records_skipped": self.summary.get("records_skipped", 0),
            "date_range": self.summary.get("date_range", []),
            "signoff_rate": self.summary.get("signoff_rate", 0.0),
            "added": self.added,
            "annotated": self.confirmed + [c["id"] for c in self.contradictions],
            "contradictions": self.contradictions,
            "dedupe": self.dedupe,
            "updated": self.updated,
            "warnings": self.warnings,
        }


def _sentence(text: str) -> str:
    text = one_line(text).rstrip(".")
    return text[:1].upper() + text[1:] if text else text


def _span(records: list[Record]) -> str:
    days = sorted(r.when for r in records)
    return days[0] if days[0] == days[-1] else f"{days[0]} to {days[-1]}"


def draft_findings(experiences: Experiences, title_limit: int = 120) -> list[Finding]:
    """The deterministic drafter: the seed's style, bold symptom first, then cause and fix, 2-4 sentences."""
    records = sorted(experiences.records, key=lambda r: r.timestamp)
    findings: list[Finding] = []
    by_issue: dict[tuple[str, str], list[Record]] = {}
    for record in records:
        for issue, fix in issue_fix_pairs(record):
            by_issue.setdefault((issue.lower(), fix.lower()), []).append(record)
    for (issue_key, _fix_key), group in by_issue.items():
        issue, fix = _pair(group[0], issue_key)
        worked = sum(r.signoff for r in group)
        cause = next((r.notes for r in group if r.notes), "")
        body = f"**{_sentence(issue)}.**"
        if cause:
            body += f" {_sentence(clip(cause, 300))}."
        body += f" Fix: {_sentence(fix)}." if fix else " No fix was recorded."
        body += f" Seen in {len(group)} run{'s' * (len(group) != 1)} ({_span(group)}), {worked} of them signed off."
        findings.append(
            Finding(FAILURES, clip(_sentence(issue), title_limit), body, [r.key for r in group], group[-1].when, fix)
        )
    flags: dict[str, list[Record]] = {}
    for record in records:
        if record.signoff:
            for flag in tool_flags(record):
                flags.setdefault(flag, []).append(record)
    for flag, group in flags.items():
        title = clip(f"`{flag}` in signed-off runs", title_limit)
        body = (
            f"**Runs that reached signoff used `{flag}`.** It appears in the fixes or notes of {len(group)}"
            f" signed-off run{'s' * (len(group) != 1)} ({_span(group)})."
        )
        findings.append(Finding(FLAGS, title, body, [r.key for r in group], group[-1].when))
    quirks: dict[str, list[Record]] = {}
    for record in records:
        for sentence in re.split(r"(?<=[.!?])\s+", record.notes):
            if _QUIRK.search(sentence):
                quirks.setdefault(_sentence(sentence), []).append(record)
    for sentence, group in quirks.items():
        body = f"**{sentence}.** Noted in {len(group)} run{'s' * (len(group) != 1)} ({_span(group)})."
        findings.append(Finding(QUIRKS, clip(sentence, title_limit), body, [r.key for r in group], group[-1].when))
    return findings


def _pair(record: Record, issue_lower: str) -> tuple[str, str]:
    return next((i, f) for i, f in issue_fix_pairs(record) if i.lower() == issue_lower)


def _fix_of(entry: Entry) -> str:
    match = re.search(r"Fix: (.*?)\.(?: Seen in|$)", " ".join(entry.body.split()))
    return match.group(1) if match else ""


def distil_domain(
    project: Project, domain: str, min_records: int = 5, dry_run: bool = False, drafter: Any = None
) -> DomainReport:
    """Run load_experiences and distil_knowledge for one domain; writes unless `dry_run`."""
    from memfiles.services.index_client import notify
    from memfiles.services.write import write_ops
    from memfiles.store.ops import parse_ops

    settings = project.settings
    memory_dir = settings.memory_dir
    rel = f"memory/{domain}/knowledge.md"
    experiences = load_experiences(memory_dir, domain, f"memory/{domain}/experiences.jsonl")
    summary = experiences.summary()
    report = DomainReport(domain, rel, summary, warnings=list(experiences.skipped))
    count = len(experiences.records)
    if count == 0 or count < min_records:
        report.skipped = f"{count} valid record{'s' * (count != 1)}, fewer than --min-records {min_records}"
        return report
    findings = drafter(summary, experiences) if drafter else draft_findings(experiences, settings.schema.title_limit)
    path = project.root / rel
    memory = parse(read_text(path), rel, project.settings.schema) if path.exists() else None
    existing = {e.id: e for e in memory.entries} if memory else {}
    sections = {i: memory.section_of(i) for i in existing} if memory else {}
    by_title = {e.title.lower(): e for e in existing.values()}
    matches, report.dedupe = many_near_duplicates(
        project, [(f.title, f.body, frozenset()) for f in findings], path=rel, k=3, threshold=DISTILLER_THRESHOLD
    )
    ops: list[dict[str, Any]] = []
    touched: dict[str, Entry] = {}
    pending: list[tuple[Finding, set[str], dict[str, Any]]] = []
    # Word overlap within the file as well as the index: a stale or missing index must not cause a repeat.
    local = entry_words(project, rel)
    for finding, found in zip(findings, matches, strict=True):
        found = found + lexical_matches(local, words(f"{finding.title}\n\n{finding.body}"), LEXICAL_THRESHOLD, ())
        found = [c for c in found if sections.get(c.id) == finding.section]  # a flag never confirms a failure
        entry = by_title.get(finding.title.lower())
        if entry is None and found:
            entry = touched.get(found[0].id) or existing.get(found[0].id)
        if entry is None:
            mine = words(f"{finding.title} {finding.body}")
            twin = next(
                (
                    p
                    for p in pending
                    if p[0].section == finding.section
                    and (p[0].title.lower() == finding.title.lower() or jaccard(mine, p[1]) >= 0.8)
                ),
                None,
            )
            if twin is None:
                op = {
                    "op": "add",
                    "kind": "lesson",
                    "title": finding.title,
                    "area": domain,
                    "body": finding.body,
                    "file": rel,
                    "section": finding.section,
                    "evidence": finding.evidence,
                    "last_seen": finding.last_seen,
                    "confirmed": str(len(finding.evidence)),
                }
                pending.append((finding, mine, op))
                ops.append(op)
            elif not (finding.fix and twin[0].fix and jaccard(words(twin[0].fix), words(finding.fix)) < _SAME_FIX):
                twin[2]["evidence"] = list(dict.fromkeys([*twin[2]["evidence"], *finding.evidence]))
            else:
                # The same symptom fixed differently by later runs: flagged on the new entry, not a second one.
                op = twin[2]
                op["evidence"] = [*op["evidence"], *finding.evidence]
                op["last_seen"] = max(op["last_seen"], finding.last_seen)
                op["contradicted"] = clip(
                    f"{finding.last_seen}: {', '.join(finding.evidence)} fixed it with: {one_line(finding.fix)}", 300
                )
                report.contradictions.append(
                    {
                        "id": "",
                        "op": str(id(op)),
                        "title": op["title"],
                        "old_fix": twin[0].fix,
                        "new_fix": finding.fix,
                        "evidence": ", ".join(finding.evidence),
                    }
                )
            continue
        entry = touched.get(entry.id, entry)
        new_keys = [k for k in finding.evidence if k not in entry.evidence]
        if not new_keys:
            continue  # every record behind this finding was counted already: idempotent
        evidence = [*entry.evidence, *new_keys]
        update: dict[str, Any] = {
            "op": "update",
            "id": entry.id,
            "evidence": evidence,
            "last_seen": max(finding.last_seen, entry.last_seen or ""),
        }
        old_fix = _fix_of(entry)
        if finding.fix and old_fix and jaccard(words(old_fix), words(finding.fix)) < _SAME_FIX:
            note = f"{finding.last_seen}: {', '.join(new_keys)} fixed it with: {one_line(finding.fix)}"
            update["contradicted"] = clip(note, 300)
            report.contradictions.append(
                {
                    "id": entry.id,
                    "title": entry.title,
                    "old_fix": old_fix,
                    "new_fix": finding.fix,
                    "evidence": ", ".join(new_keys),
                }
            )
        else:
            confirmed = int(entry.confirmed) if (entry.confirmed or "").isdigit() else 1
            update["confirmed"] = str(confirmed + len(new_keys))
            report.confirmed.append(entry.id)
        ops.append(update)
        touched[entry.id] = Entry(
            **{
                **entry.__dict__,
                "evidence": tuple(evidence),
                "confirmed": update.get("confirmed", entry.confirmed),
                "last_seen": update["last_seen"],
            }
        )
    ops.append(
        {
            "op": "section",
            "file": rel,
            "section": NOTES,
            "intro": _notes(summary, [r for r in experiences.records if not r.signoff]),
        }
    )
    batch = parse_ops({"ops": ops}, settings.schema, settings.wrap)
    if dry_run:
        report.added = {
            s: [f"(new) {op['title']}" for op in ops if op.get("section") == s and op["op"] == "add"] for s in SECTIONS
        }
        return report
    result, warning = write_ops(project, batch, notify=notify)
    if warning:
        report.warnings.append(warning)
    adds = iter(result.added)
    for op in ops:
        if op["op"] == "add":
            new_id = next(adds)
            report.added[op["section"]].append(new_id)
            for item in report.contradictions:
                if item.get("op") == str(id(op)):
                    item["id"] = new_id
    for item in report.contradictions:
        item.pop("op", None)
    report.updated = bool(result.paths)
    return report


def _notes(summary: dict[str, Any], failed: list[Record]) -> str:
    """The Notes section: the low-signoff flag when it applies, and one _Last distilled_ line, replaced."""
    lines = []
    if summary["signoff_rate"] < 0.5:
        counts: dict[str, list[Any]] = {}
        for record in failed:
            for issue in record.issues:
                counts.setdefault(issue.lower(), [issue, 0])[1] += 1
        failing = [f"{issue} ({n})" for issue, n in sorted(counts.values(), key=lambda item: -item[1])[:3]]
        lines.append(
            f"Signoff rate is {summary['signoff_rate']:.0%}, under 50%: the commonest failure modes of"
            f" runs that did not reach signoff were {'; '.join(failing) or 'not recorded'}."
        )
    today = dt.date.today().isoformat()
    lines.append(f"_Last distilled: {today} from {summary['record_count']} experience records._")
    return "\n\n".join(lines)
