"""`audit`: the leftovers of edits — dangling and retired references, repeated titles, stale open entries,
and the pruned entries with their reasons. Each is a contract Finding (codes in contract.FINDING_CODES)."""

from __future__ import annotations

import datetime as dt

from memfiles.contract import Finding, entry_ref, finding
from memfiles.format.ids import HIDDEN_KINDS, RETIRED, format_id, id_key
from memfiles.format.model import Entry
from memfiles.services.read import Reading, pruned_origin, read_project
from memfiles.services.upkeep.dupes import title_key
from memfiles.store.project import Located, Project


def successors(entry_id: str, by_id: dict[str, Located]) -> list[str]:
    """The ids a retired entry's successor links lead through, in order (its successor first), up to the
    first live entry, a missing one or a cycle."""
    path: list[str] = []
    seen = {entry_id}
    current = by_id.get(entry_id)
    while current is not None and current.entry.status == RETIRED and current.entry.successor:
        successor = current.entry.successor
        if successor in seen:
            break
        seen.add(successor)
        path.append(successor)
        current = by_id.get(successor)
    return path


def successor_chain(entry_id: str, by_id: dict[str, Located]) -> str | None:
    """The live entry at the end of a retired entry's successors, or None when the chain stops short."""
    path = successors(entry_id, by_id)
    current = by_id.get(path[-1]) if path else None
    if current is None or current.entry.status == RETIRED:
        return None
    return current.entry.id


def replaces(entry: Entry, target: Located, by_id: dict[str, Located]) -> bool:
    """True when `entry` names retired `target` as what it replaces: as its own successor link, or as an
    entry on the target's successor chain (the entry that took over, citing the one it took over from)."""
    if id_key(entry.successor or "") == id_key(target.entry.id):
        return True
    return id_key(entry.id) in {id_key(successor) for successor in successors(target.entry.id, by_id)}


def successor_cycles(entries: list[Located]) -> list[list[Located]]:
    """Every cycle of successors (`D-001 -> D-002 -> D-001`), once each, starting at its first entry in file
    order. Such a chain never reaches a live entry, so references along it lead nowhere."""
    by_id: dict[str, Located] = {}
    for located in entries:
        by_id.setdefault(located.entry.id, located)
    cycles: list[list[Located]] = []
    seen: set[str] = set()
    for located in entries:
        chain: list[str] = []
        current: str | None = located.entry.id
        while current is not None and current in by_id and current not in seen and current not in chain:
            chain.append(current)
            current = by_id[current].entry.successor
        if current is not None and current in chain:
            cycles.append([by_id[entry_id] for entry_id in chain[chain.index(current) :]])
        seen.update(chain)
    return cycles


def located_ref(located: Located) -> dict[str, object]:
    """The contract's pointer to an entry that lives in a file."""
    entry = located.entry
    return entry_ref(entry.id, title=entry.title, status=entry.status, path=located.file.rel, line=entry.line)


def audit_project(project: Project, today: dt.date | None = None, reading: Reading | None = None) -> list[Finding]:
    """Everything audit reports, in this order: references, repeated titles, stale entries, pruned entries.

    Files that do not parse are left out (the caller reports them from `reading.skipped`); a reference to an
    id whose heading stands in such a file is not called dangling.
    """
    today = today or dt.date.today()
    reading = reading or read_project(project)
    entries = list(reading.loaded.entries())
    by_id = {located.entry.id: located for located in entries}
    # An id is one id however it is spelled (`D-1`, `D-0001` in a body are D-001), as refs reads it.
    by_key = {id_key(located.entry.id): located for located in entries}
    width = project.settings.schema.id_width
    grammar = project.settings.schema.grammar
    pruned = reading.pruned.records
    pruned_by_key = {id_key(gone): record for gone, record in pruned.items()}
    unreadable = {id_key(entry_id) for entry_id in reading.loaded.unreadable_ids}
    findings: list[Finding] = []

    for located in entries:
        entry, path, line = located.entry, located.file.rel, located.entry.line
        mentioned = [*entry.refs, *([entry.successor] if entry.successor else [])]
        mentioned += grammar.ids_in(entry.body)
        for ref in dict.fromkeys(mentioned):
            key = id_key(ref)
            if key == id_key(entry.id) or key in unreadable:
                continue
            target = by_key.get(key)
            if target is None:
                record = pruned_by_key.get(key)
                why = f" (pruned: {record.get('reason', '')})" if record else ""
                title = record.get("title") if record else None
                findings.append(
                    finding(
                        "dangling-ref",
                        path,
                        line,
                        f"{entry.id} refers to {ref}, which does not exist{why}",
                        id=entry.id,
                        target=entry_ref(format_id(key[0], key[1], width) if key else ref, title=title),
                    )
                )
            elif target.entry.status == RETIRED and not replaces(entry, target, by_id):
                live = successor_chain(target.entry.id, by_id)
                hint = f"; its successor is {live}" if live else "; it has no successor"
                findings.append(
                    finding(
                        "retired-ref",
                        path,
                        line,
                        f"{entry.id} refers to retired {ref}{hint}",
                        id=entry.id,
                        target=located_ref(target),
                        detail={"successor": live},
                    )
                )

    findings += successor_cycle_findings(entries)

    titles: dict[str, Located] = {}
    # A run's state repeats its goal, and so do the episodes of runs with one goal: repeated episodes are
    # promotion candidates (layer_findings), not duplicates to merge.
    repeating = {k.prefix for k in project.settings.schema.kinds if k.name in (*HIDDEN_KINDS, "episode")}
    for located in entries:
        if located.entry.prefix in repeating:
            continue
        key = title_key(located.entry.title)  # the rule `dupes` flags same titles by
        if key in titles:
            first = titles[key]
            findings.append(
                finding(
                    "duplicate-title",
                    located.file.rel,
                    located.entry.line,
                    f"{located.entry.id} has the same title as {first.entry.id} ({first.where})",
                    id=located.entry.id,
                    target=located_ref(first),
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
            findings.append(
                finding(
                    "stale",
                    located.file.rel,
                    entry.line,
                    f"{entry.id} has been {entry.status} for {age} days (more than {limit})",
                    id=entry.id,
                    detail={"age_days": age, "stale_days": limit},
                )
            )

    for entry_id, record in pruned.items():
        findings.append(
            finding(
                "pruned",
                reading.pruned.rel,
                reading.pruned.lines.get(entry_id),
                f"{entry_id} pruned on {record.get('date', '?')}: {record.get('reason', '')}; {pruned_origin(record)}",
                id=entry_id,
                detail={"date": record.get("date"), "reason": record.get("reason")},
            )
        )
    return findings


def layer_findings(project: Project, reading: Reading | None = None) -> list[Finding]:
    """The memory layers' findings, as contract findings: evidence that names nothing, procedures and
    insights without evidence, and episodes repeated often enough to promote; over the files that parse
    (the read side's `reading`)."""
    from memfiles.services.agents.promote import promotion_candidates
    from memfiles.services.upkeep.evidence import evidence_findings

    reading = reading or read_project(project)
    entries = list(reading.loaded.entries())
    return [*evidence_findings(project, entries, reading.pruned.records), *promotion_candidates(project, entries)]


def successor_cycle_findings(entries: list[Located]) -> list[Finding]:
    """A successor-cycle finding at the first entry of each cycle (check and audit both report them)."""
    findings = []
    for cycle in successor_cycles(entries):
        first = cycle[0]
        names = " -> ".join(item.entry.id for item in [*cycle, first])
        findings.append(
            finding(
                "successor-cycle",
                first.file.rel,
                first.entry.line,
                f"{names}: the successors go round and never reach a live entry; give one a successor outside",
                id=first.entry.id,
                target=located_ref(cycle[1] if len(cycle) > 1 else first),
            )
        )
    return findings
