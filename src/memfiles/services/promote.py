"""Promotion: episodes that keep happening become a procedure (what to do) or an insight (what it means).

The new entry cites its sources as evidence; each source gains status `promoted` and records the new
id in its `promoted` list. `promotion_candidates` finds episodes repeated often enough to be worth it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from memfiles.contract import Finding
from memfiles.errors import MemfilesError
from memfiles.format.ids import RETIRED, normalize_id
from memfiles.format.wrap import clip, one_line, with_article
from memfiles.services.write import IndexNotifier, write_ops
from memfiles.store.ops import parse_op
from memfiles.store.project import Located, Project

TARGETS = ("procedure", "insight")
SOURCE_KINDS = ("episode",)
REPEATS = 3  # episodes of one failure before audit suggests promoting them
_SIGNATURE_LINE = re.compile(r"^- \*\*signature\*\*: `(.+)`$", re.MULTILINE)


def entry_json(project: Project, entry_id: str) -> dict[str, Any] | None:
    """The contract's entry object for `entry_id`, or None when there is no such entry."""
    from memfiles.services.read import entry_json as located_json

    located = project.find(entry_id)
    return located_json(located, project.settings.schema) if located is not None else None


def _sources(project: Project, ids: list[str]) -> list[Located]:
    if not ids:
        raise MemfilesError("name the episodes to promote (like E-003 E-007)")
    files = project.load()
    found = []
    width = project.settings.schema.id_width
    for raw in dict.fromkeys(ids):
        try:
            entry_id = normalize_id(raw, width)  # e-1, E-0001 and a pasted @@-reference all name E-001
        except ValueError as error:
            raise MemfilesError(str(error)) from None
        located = project.find(entry_id, files)
        if located is None:
            raise MemfilesError(f"no entry {entry_id}")
        entry_id = located.entry.id
        kind = project.settings.schema.kind_of(entry_id)
        if kind is None or kind.name not in SOURCE_KINDS:
            raise MemfilesError(
                f"{entry_id} is {with_article(kind.name if kind else 'unknown kind')}: only episodes are promoted"
            )
        if located.entry.status == RETIRED:
            raise MemfilesError(f"{entry_id} is retired ({located.entry.reason}): promote live episodes only")
        if all(other.entry.id != entry_id for other in found):  # E-1 and e-001 name one episode
            found.append(located)
    return found


def default_body(sources: list[Located], reason: str, limit: int = 2000) -> str:
    """The reason, then each source with what its body says (its outcome, what was done and seen), on one
    line each: the procedure carries the fix its episodes record, so a search for it finds the procedure."""
    lines = [reason, "", "Promoted from:"]
    room = max(80, (limit - len(reason) - 40) // max(1, len(sources)) - 40)
    for source in sources:
        entry = source.entry
        head = f"- {entry.id} ({entry.date}): {entry.title}"
        said = one_line(entry.body.replace("**", ""))
        lines.append(f"{head}. {clip(said, max(20, room - len(head)))}" if said else head)
    return "\n".join(lines)


@dataclass(frozen=True)
class Promotion:
    """What a promote did: the new entry, its sources, warnings, and whether it was all done before."""

    new_id: str
    sources: list[str]
    warnings: list[str]
    replayed: bool

    def as_json(self, project: Project) -> dict[str, Any]:
        """The write object (docs/json.md): a replay gives the first run's ids and `"replayed": true`."""
        from memfiles.contract import write_object

        entries = [entry_json(project, entry_id) for entry_id in [self.new_id, *self.sources]]
        return write_object(
            added=[self.new_id],
            updated=self.sources,
            replayed=self.replayed,
            entries=[entry for entry in entries if entry],
            warnings=self.warnings,
        )


def promote(
    project: Project,
    ids: list[str],
    to: str,
    reason: str,
    *,
    title: str | None = None,
    body: str | None = None,
    area: str | None = None,
    notify: IndexNotifier | None = None,
) -> Promotion:
    """Write the new entry and mark its sources.

    Two batches, the first with a request id drawn from the inputs: run again after a crash between
    them, the same command replays the first (the same new id) and finishes the second. Run again after
    both, it writes nothing and says it replayed.
    """
    if to not in TARGETS:
        raise MemfilesError(f"--to must be one of {', '.join(TARGETS)}, got {to!r}")
    reason = one_line(reason or "")
    if not reason:
        article = "an" if to[:1] in "aeiou" else "a"
        raise MemfilesError(f"give a reason (--reason): why these episodes deserve to become {article} {to}")
    sources = _sources(project, ids)
    schema, settings = project.settings.schema, project.settings
    if title and len(one_line(title)) > schema.title_limit:  # a person's title is not cut short in silence
        raise MemfilesError(f"--title is {len(one_line(title))} characters; at most {schema.title_limit}")
    source_ids = [s.entry.id for s in sources]
    text = body.strip() if body and body.strip() else default_body(sources, reason, project.settings.schema.body_limit)
    if body and body.strip():
        text += f"\n\nPromoted from {', '.join(source_ids)}: {reason}"
    add = {
        "op": "add",
        "kind": to,
        "title": one_line(title) if title else sources[0].entry.title,
        "area": area or sources[0].entry.area,
        "body": text,
        "evidence": source_ids,
    }
    digest = hashlib.sha256(json.dumps(add, sort_keys=True).encode()).hexdigest()[:16]
    warnings: list[str] = []
    result, warning = write_ops(
        project, [parse_op(add, 1, schema, settings.wrap)], request_id=f"promote-{digest}", notify=notify
    )
    warnings += [warning] if warning else []
    new_id = result.added[0]
    before = set.intersection(*(set(source.entry.promoted) for source in sources)) - {new_id}
    standing = {located.entry.id for located in project.entries()}  # a pruned entry is no earlier promotion
    same_kind = sorted(i for i in before & standing if (kind := schema.kind_of(i)) is not None and kind.name == to)
    if same_kind and not result.replayed:  # another reason, another title: a second entry of one finding
        warnings.append(
            f"{', '.join(source_ids)} {'were' if len(source_ids) > 1 else 'was'} promoted to"
            f" {', '.join(same_kind)} already; {new_id} is another {to} from the same episodes"
            f" (edit {same_kind[0]} with memfiles set, or prune {new_id}, if it says the same)"
        )
    updates = []
    for position, source in enumerate(_sources(project, source_ids), start=1):
        promoted = list(dict.fromkeys([*source.entry.promoted, new_id]))
        if promoted != list(source.entry.promoted) or source.entry.status != "promoted":
            op = {"op": "update", "id": source.entry.id, "status": "promoted", "promoted": promoted}
            updates.append(parse_op(op, position, schema, settings.wrap))
    if updates:
        _, warning = write_ops(project, updates, notify=notify)
        warnings += [warning] if warning else []
    return Promotion(new_id, source_ids, warnings, replayed=result.replayed and not updates)


def _key(located: Located) -> str:
    """What makes two episodes the same: their recorded error signature, else their title's words."""
    from memfiles.services.recall import error_signature

    match = _SIGNATURE_LINE.search(located.entry.body)
    signature = match.group(1) if match else error_signature(f"{located.entry.title}\n{located.entry.body}")
    if signature:
        return "sig:" + signature.casefold()
    return "title:" + " ".join(re.sub(r"\d+", "N", located.entry.title.casefold()).split())


def promotion_candidates(
    project: Project, entries: list[Located] | None = None, repeats: int = REPEATS
) -> list[Finding]:
    """Groups of `repeats` or more recorded episodes of the same failure or title: promote them."""
    entries = list(project.entries()) if entries is None else entries
    schema = project.settings.schema
    groups: dict[str, list[Located]] = {}
    for located in entries:
        kind = schema.kind_of(located.entry.id)
        if kind and kind.name == "episode" and located.entry.status == "recorded":
            groups.setdefault(_key(located), []).append(located)
    findings = []
    for key, members in groups.items():
        if len(members) < repeats:
            continue
        ids = [m.entry.id for m in members]
        what = f"the same failure (`{key[4:]}`)" if key.startswith("sig:") else "the same task"
        first = members[0]
        findings.append(
            Finding(
                "promote-candidate",
                "info",
                first.file.rel,
                first.entry.line,
                f"{', '.join(ids)} record {what} {len(ids)} times: promote them"
                f" (memfiles promote {' '.join(ids)} --to procedure --reason ...)",
                id=first.entry.id,
                detail={"ids": ids, "key": key},
            )
        )
    return findings
