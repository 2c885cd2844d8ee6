"""`audit`: the leftovers of edits — dangling and retired references, repeated titles, stale open entries,
and the pruned entries with their reasons."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass

from memfiles.format.ids import ID_RE, RETIRED
from memfiles.services.dupes import title_key
from memfiles.store.ledger import Ledger
from memfiles.store.project import Located, Project

SEVERE = ("dangling", "retired-ref", "duplicate-title", "stale")


@dataclass(frozen=True)
class Finding:
    """One thing audit found; `kind` is dangling, retired-ref, duplicate-title, stale or pruned."""

    kind: str
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"

    def as_json(self) -> dict[str, object]:
        return asdict(self)


def successor_chain(entry_id: str, by_id: dict[str, Located]) -> str | None:
    """The live entry at the end of a retired entry's successors, or None when the chain stops short."""
    seen = {entry_id}
    current = by_id.get(entry_id)
    while current is not None and current.entry.status == RETIRED and current.entry.successor:
        successor = current.entry.successor
        if successor in seen:
            return None
        seen.add(successor)
        current = by_id.get(successor)
    if current is None or current.entry.id == entry_id:
        return None
    return current.entry.id


def audit_project(project: Project, today: dt.date | None = None) -> list[Finding]:
    """Everything audit reports, severe findings first, each in file order."""
    today = today or dt.date.today()
    entries = list(project.entries())
    by_id = {located.entry.id: located for located in entries}
    prefixes = {kind.prefix for kind in project.settings.schema.kinds}
    ledger = Ledger(project.settings.memory_dir / "pruned.jsonl")
    pruned = {record["id"]: record for record in ledger.read()}
    findings: list[Finding] = []

    for located in entries:
        entry, where = located.entry, located.where
        path, line = where.rsplit(":", 1)
        mentioned = [*entry.refs, *([entry.successor] if entry.successor else [])]
        mentioned += [m.group(0) for m in ID_RE.finditer(entry.body) if m.group(1) in prefixes]
        for ref in dict.fromkeys(mentioned):
            if ref == entry.id:
                continue
            target = by_id.get(ref)
            if target is None:
                why = f" (pruned: {pruned[ref]['reason']})" if ref in pruned else ""
                findings.append(
                    Finding("dangling", path, int(line), f"{entry.id} refers to {ref}, which does not exist{why}")
                )
            elif target.entry.status == RETIRED and ref != entry.successor:
                live = successor_chain(ref, by_id)
                hint = f"; its successor is {live}" if live else "; it has no successor"
                findings.append(Finding("retired-ref", path, int(line), f"{entry.id} refers to retired {ref}{hint}"))

    titles: dict[str, Located] = {}
    for located in entries:
        key = title_key(located.entry.title)  # the rule `dupes` flags same titles by
        if key in titles:
            first = titles[key]
            path, line = located.where.rsplit(":", 1)
            findings.append(
                Finding(
                    "duplicate-title",
                    path,
                    int(line),
                    f"{located.entry.id} has the same title as {first.entry.id} ({first.where})",
                )
            )
        else:
            titles[key] = located

    limit = project.settings.stale_days
    for located in entries:
        entry = located.entry
        if entry.status not in project.settings.open_statuses:
            continue
        try:
            age = (today - dt.date.fromisoformat(entry.date)).days
        except ValueError:
            continue
        if age > limit:
            path, line = located.where.rsplit(":", 1)
            findings.append(
                Finding(
                    "stale", path, int(line), f"{entry.id} has been {entry.status} for {age} days (more than {limit})"
                )
            )

    ledger_rel = project.rel(ledger.path)
    for number, record in enumerate(pruned.values(), start=1):
        findings.append(
            Finding(
                "pruned",
                ledger_rel,
                number,
                f"{record['id']} pruned on {record.get('date', '?')} from {record.get('path', '?')}:"
                f" {record.get('reason', '')} (was: {record.get('title', '')})",
            )
        )
    return findings
