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
from memfiles.errors import MemfilesError, RefusedError
from memfiles.format.ids import RETIRED, normalize_id
from memfiles.format.wrap import clip, one_line, with_article
from memfiles.services.write import IndexNotifier, write_ops
from memfiles.store.ops import parse_op
from memfiles.store.project import Located, Project

TARGETS = ("procedure", "insight")
SOURCE_KINDS = ("episode",)
REPEATS = 3  # episodes of one failure before audit suggests promoting them
_SIGNATURE_LINE = re.compile(r"^- \*\*signature\*\*: `(.+)`$", re.MULTILINE)


def entry_json_by_id(project: Project, entry_id: str) -> dict[str, Any] | None:
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
    """Where it comes from and why, as a sentence of its own (a hook shows an entry's first sentence: the
    reason run into the list read "again Promoted from: - E-001 ..."), then each source with what its
    body says (its outcome, what was done and seen), on one line each: the procedure carries the fix its
    episodes record, so a search for it finds the procedure."""
    runs = "1 run" if len(sources) == 1 else f"{len(sources)} runs"
    said = reason[:1].upper() + reason[1:]
    lines = [f"Learnt from {runs}: {said}{'' if said[-1:] in '.!?' else '.'}", "", "Promoted from:"]
    room = max(80, (limit - len(lines[0]) - 40) // max(1, len(sources)) - 40)
    for source in sources:
        entry = source.entry
        head = f"- {entry.id} ({entry.date}): {entry.title}"
        said = one_line(entry.body.replace("**", ""))
        lines.append(f"{head}. {clip(said, max(20, room - len(head)))}" if said else head)
    return "\n".join(lines)


# Where an episode's title stops naming its task and starts telling what went wrong ("Release of 2.3
# failed on the fuzz step": the task is "Release of 2.3").
_FAILURE_PART = re.compile(
    # read from the start of a run of spaces only (?<!\s), and never back into it: linear in the title
    r"(?<!\s)(?:\s*+[:;—–(]|\s++-\s|\s++(?:failed|fails|failing|failure|broke|broken|crashed|crashes|hung|hangs"
    r"|timed out|stopped|refused|lost|errored|did not|didn't|could not|couldn't|cannot|can't|because|after|when)\b)",
    re.IGNORECASE,
)
_GOAL_LINE = re.compile(r"^- \*\*goal\*\*: (.+)$", re.MULTILINE)
_VERSION = re.compile(r"^v?\d[\w.]*$")
_TRAILING = frozenset("a an the of to for on in at with and or from by".split())  # noqa: SIM905


def shared_task(sources: list[Located]) -> str:
    """The task the episodes share, as a title: their runs' goal when they record one (`working end
    --episode`), else the part of their titles before the failure, in the words all of them use (version
    numbers aside), in the first one's order. The first's task when they share no word."""
    tasks = []
    for source in sources:
        goal = _GOAL_LINE.search(source.entry.body)
        text = goal.group(1) if goal else source.entry.title
        cut = _FAILURE_PART.search(text)
        tasks.append((text[: cut.start()] if cut and cut.start() > 0 else text).strip())
    words = [[word for word in task.split() if not _VERSION.match(word)] for task in tasks]
    common = set.intersection(*({word.casefold() for word in each} for each in words))
    shared = [word for word in words[0] if word.casefold() in common]
    while shared and shared[-1].casefold() in _TRAILING:
        shared.pop()
    title = " ".join(shared) or tasks[0] or sources[0].entry.title
    return title[:1].upper() + title[1:]


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

        entries = [entry_json_by_id(project, entry_id) for entry_id in [self.new_id, *self.sources]]
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
    again: bool = False,
) -> Promotion:
    """Write the new entry and mark its sources.

    Two batches, the first with a request id drawn from the inputs: run again after a crash between
    them, the same command replays the first (the same new id) and finishes the second. Run again after
    both, it writes nothing and says it replayed. An episode promoted before (to a standing entry of
    that kind) is refused (RefusedError, exit 1, naming what it became) unless `again`.
    """
    if to not in TARGETS:
        raise MemfilesError(f"--to must be one of {', '.join(TARGETS)}, got {to!r}")
    reason = one_line(reason or "")
    if not reason:
        article = "an" if to[:1] in "aeiou" else "a"
        raise MemfilesError(f"give a reason (--reason): why these episodes deserve to become {article} {to}")
    sources = _sources(project, ids)
    schema, settings = project.settings.schema, project.settings
    earlier = _earlier(project, sources, to)
    if title and len(one_line(title)) > schema.title_limit:  # a person's title is not cut short in silence
        raise MemfilesError(f"--title is {len(one_line(title))} characters; at most {schema.title_limit}")
    source_ids = [s.entry.id for s in sources]
    text = body.strip() if body and body.strip() else default_body(sources, reason, project.settings.schema.body_limit)
    if body and body.strip():
        text += f"\n\nPromoted from {', '.join(source_ids)}: {reason}"
    add = {
        "op": "add",
        "kind": to,
        "title": one_line(title) if title else clip(shared_task(sources), schema.title_limit),
        "area": area or sources[0].entry.area,
        "body": text,
        "evidence": source_ids,
    }
    digest = hashlib.sha256(json.dumps(add, sort_keys=True).encode()).hexdigest()[:16]
    if earlier and not again and not _made_by(project, f"promote-{digest}", sources):
        _refuse(sources, earlier, to)
    warnings: list[str] = []
    result, warning = write_ops(
        project, [parse_op(add, 1, schema, settings.wrap)], request_id=f"promote-{digest}", notify=notify
    )
    warnings += [warning] if warning else []
    new_id = result.added[0]
    same_kind = sorted({i for found in earlier.values() for i in found} - {new_id})
    if same_kind and not result.replayed:  # asked again: a second entry of one finding, said
        warnings.append(
            f"{', '.join(earlier)} {'were' if len(earlier) > 1 else 'was'} promoted to"
            f" {', '.join(same_kind)} already; {new_id} is another {to} from them"
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


def _earlier(project: Project, sources: list[Located], to: str) -> dict[str, list[str]]:
    """The sources already promoted to a standing entry of kind `to`, and those entries."""
    schema = project.settings.schema
    standing = {located.entry.id: located for located in project.entries()}  # a pruned one is no promotion
    found = {}
    for source in sources:
        made = [i for i in source.entry.promoted if i in standing and (kind := schema.kind_of(i)) and kind.name == to]
        if made:
            found[source.entry.id] = made
    return found


def _made_by(project: Project, request_id: str, sources: list[Located]) -> bool:
    """Whether this very promotion was made before (its request's receipt names the entry the sources
    record): the same command again replays, as after a crash between its two writes."""
    from memfiles.store.journal import Journal

    receipt = Journal(project.settings.state_dir, project.root).receipt(request_id) or {}
    added = (receipt.get("result") or {}).get("added") or []
    return bool(added) and all(added[0] in source.entry.promoted for source in sources)


def _refuse(sources: list[Located], earlier: dict[str, list[str]], to: str) -> None:
    """No second entry of one finding unless asked again: exit 1, naming what each episode became."""
    from memfiles.contract import problem

    said = "; ".join(f"{source} was promoted to {', '.join(made)}" for source, made in earlier.items())
    first = next(iter(earlier.values()))[0]
    problems = [
        problem(f"{source.entry.id} was promoted to {', '.join(earlier[source.entry.id])}", id=source.entry.id,
                path=source.file.rel, line=source.entry.line)
        for source in sources
        if source.entry.id in earlier
    ]  # fmt: skip
    raise RefusedError(
        f"refused: {said} already. Add to {first} with memfiles set {first} --body ..., or make another {to}"
        " from them with --again",
        problems,
    )


def _key(located: Located) -> str:
    """What makes two episodes the same: their recorded error signature, else their title's words."""
    from memfiles.services.agents.recall import error_signature

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
