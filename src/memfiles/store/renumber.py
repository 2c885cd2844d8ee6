"""Ids that name two entries or none: the renumber op, which gives one of two entries sharing an id a fresh
one, and the check of the references a batch writes (a missing id is refused, a retired one warned about).

Which references follow a renumbered entry: only those of the entries the op names in `follow`. Nothing
in the files says which of the two entries an old `F-001` meant (after a merge both branches wrote
`F-001`; after a hand-made copy the original kept it), so no reference is moved by guess; the command
lists the rest, in the memory files and in code, for a person to check.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from memfiles.errors import OpError
from memfiles.format.ids import RETIRED, IdAllocator, id_key, split_id
from memfiles.store.batch_files import BatchFiles
from memfiles.store.ops import Op

if TYPE_CHECKING:
    from collections.abc import Callable

    from memfiles.store.project import Project

_AT_LINE_RE = re.compile(r"^(?P<path>.+?)(?::(?P<line>\d+))?$")


def id_token(entry_id: str) -> re.Pattern[str]:
    """`entry_id` as a whole token in text (`D-001`, `@@D-001`), not inside `D-0012` or `XD-001`."""
    return re.compile(rf"(?<![\w-]){re.escape(entry_id)}(?!\w)")


def _place(work: BatchFiles, op: Op, project: Project) -> tuple[str, int | None]:
    """The file (relative to the root) and line the op's `at` names; a path relative to the current folder
    is understood too."""
    match = _AT_LINE_RE.match(op.get("at"))
    assert match is not None  # parse_op checked the shape
    path, line = match.group("path"), match.group("line")
    for base in (project.root, Path.cwd()):
        rel = project.rel(base / path)
        if rel in work.drafts:
            return rel, int(line) if line else None
    raise OpError(op.position, f"at: {path} is not a memory file of the project (give it as check prints it)", "at")


def renumber(
    work: BatchFiles, op: Op, allocator: IdAllocator, project: Project, pruned: set[str] | frozenset[str] = frozenset()
) -> tuple[str, str]:
    """Give the entry at `op.at` carrying `op.id` a fresh id; returns (old id, new id). The id must be
    carried twice, or once by an entry that reuses a `pruned` id (check's pruned-id-reused)."""
    old = op.id
    assert old is not None
    where = work.where(old)
    key = id_key(old)
    reused = len(where) == 1 and any(id_key(gone) == key for gone in pruned)
    if len(where) < 2 and not reused:
        what = "no entry carries it" if not where else f"only {where[0]} carries it"
        raise OpError(
            op.position,
            f"id: {old} is not ambiguous ({what}); renumber gives one of two entries that share an id a new one,"
            " and ids otherwise never change",
            "id",
        )
    rel, line = _place(work, op, project)
    found = [place for spelling in work.twins(old) for place in work.drafts[rel].find_all(spelling)]
    if line is not None:
        found = [(entries, index) for entries, index in found if entries[index].line == line]
    if not found:
        raise OpError(op.position, f"at: no entry {old} at {op.get('at')} ({old} is at {', '.join(where)})", "at")
    if len(found) > 1:
        raise OpError(
            op.position,
            f"at: {rel} holds {old} {len(found)} times ({', '.join(where)}): give the line, like {where[-1]}",
            "at",
        )
    entries, index = found[0]
    work.touched.add(rel)
    new = allocator.next_id(split_id(old)[0])
    spelled = entries[index].id  # `### D-2:` beside `### D-002:`: the one at `at`, as its file spells it
    entries[index] = replace(entries[index], id=new)
    work.moved(spelled, rel, None)
    work.moved(new, None, rel)
    for follower in op.get("follow", ()):
        _follow(work, op, follower, old, new)
    return old, new


def _follow(work: BatchFiles, op: Op, follower: str, old: str, new: str) -> None:
    """Point every reference of entry `follower` to `old` (refs, successor, mentions in the body) at `new`."""
    if follower == old:
        raise OpError(op.position, f"follow: {old} is the id being renumbered; name the entries that refer to it")
    rels = work.places.get(follower, [])
    if not rels:
        raise OpError(op.position, f"follow: no entry {follower}", "follow")
    if len(rels) > 1:
        raise work.ambiguous(op, follower, "follow")
    found = work.drafts[rels[0]].find(follower)
    assert found is not None
    entries, index = found
    work.touched.add(rels[0])
    entry = entries[index]
    changed = replace(
        entry,
        refs=tuple(new if ref == old else ref for ref in entry.refs),
        successor=new if entry.successor == old else entry.successor,
        body=id_token(old).sub(new, entry.body),
    )
    if changed == entry:
        raise OpError(op.position, f"follow: {follower} does not refer to {old}", "follow")
    entries[index] = changed


def successor_end(work: BatchFiles, entry_id: str) -> str | None:
    """The live entry at the end of a retired entry's chain of successors; None when it stops short."""
    seen = {entry_id}
    current = work.entry(entry_id)
    while current is not None and current.status == RETIRED and current.successor:
        if current.successor in seen:
            return None
        seen.add(current.successor)
        current = work.entry(current.successor)
    return None if current is None or current.id == entry_id or current.status == RETIRED else current.id


def check_refs(
    work: BatchFiles,
    ops: list[Op],
    touched: dict[int, str],
    allow_dangling: bool,
    warnings: list[str],
    missing_hint: Callable[[str], str],
) -> list[OpError]:
    """The refs the batch's ops wrote, checked once every op is applied (so an op may name an entry a later
    op adds): a missing id is a problem unless `allow_dangling`; a retired or ambiguous one a warning."""
    problems: list[OpError] = []
    for op in ops:
        entry_id = touched.get(op.position)
        if entry_id is None or not op.get("refs"):
            continue
        for ref in op.get("refs"):
            rels = work.places.get(ref, [])
            if not rels:
                message = f"refs: no entry {ref}{missing_hint(ref)}"
                if allow_dangling:
                    warnings.append(f"{entry_id} {message} (kept: --allow-dangling)")
                else:
                    problems.append(
                        OpError(
                            op.position,
                            f"{message}: check the id, or pass --allow-dangling (allow_dangling over MCP) to keep it",
                            "refs",
                        )
                    )
            elif len(rels) > 1:
                warnings.append(f"{entry_id} refers to {ref}, which is ambiguous ({', '.join(work.where(ref))})")
            else:
                target = work.entry(ref)
                if target is not None and target.status == RETIRED:
                    end = successor_end(work, ref)
                    then = f"; its successor is {end}" if end else "; it has no live successor"
                    warnings.append(f"{entry_id} refers to {ref}, which is retired{then}")
    return problems
