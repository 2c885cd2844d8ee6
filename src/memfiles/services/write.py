"""The write path as every command uses it: the batch writes the files; the index is told afterwards."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from memfiles.contract import write_object
from memfiles.errors import BatchError, OpError
from memfiles.store.batch import Batch, BatchResult, Guard
from memfiles.store.ops import Op
from memfiles.store.project import Project

# Called with the project and the batch result once the files are written; set by the index layer.
IndexNotifier = Callable[[Project, BatchResult], str | None]


def write_ops(
    project: Project,
    ops: list[Op],
    request_id: str | None = None,
    notify: IndexNotifier | None = None,
    allow_dangling: bool = False,
    problems: list[OpError] | None = None,
    guard: Guard | None = None,
) -> tuple[BatchResult, str | None]:
    """Apply `ops`; then, if given, tell the index. Returns the result and a warning from the index, if any.

    `problems` are those check_ops found in ops it left out: nothing is written, and the batch's checks of
    the other ops are reported with them in one BatchError. `guard` runs under the write lock before the
    ops (see Batch.apply). The batch's own warnings (references to
    retired or ambiguous ids) are in `result.warnings`. The file is the source of truth, so nothing the
    index does can undo or fail a write: see @@D-002.
    """
    from memfiles.services.lint import clean_ops

    notes: list[str] = []
    try:
        notes = clean_ops(project, ops)  # every printable body stored, with what was changed said (docs/format.md)
    except BatchError as refused:  # reported with every other op's problems, in one BatchError from apply
        left_out = {problem.position for problem in refused.problems}
        problems = [*(problems or []), *refused.problems]
        ops = [op for op in ops if op.position not in left_out]
    result = Batch(project).apply(
        ops, request_id=request_id, allow_dangling=allow_dangling, problems=problems, guard=guard
    )
    if not result.replayed:
        result.warnings[:0] = notes
    warning = None
    if notify is not None and not result.replayed and (result.changed_ids or result.pruned):
        try:
            warning = notify(project, result)
        except Exception as error:  # the write is done; an index problem is one warning, never a failure
            warning = f"index not updated ({type(error).__name__}: {error}); run memfiles backfill"
    return result, warning


def write_json(project: Project, result: BatchResult, warnings: Iterable[str] = ()) -> dict[str, Any]:
    """The contract's write object: ids by verb, and the entries the write touched as they now stand."""
    wanted = [entry_id for entry_id in result.changed_ids if entry_id not in result.pruned]
    entries: list[dict[str, Any]] = []
    if wanted:
        from memfiles.services.read import entry_json  # here: the hooks' writes need not load the read side

        schema = project.settings.schema
        found: dict[str, list[dict[str, Any]]] = {}
        for located in project.entries():
            if located.entry.id in wanted:
                found.setdefault(located.entry.id, []).append(entry_json(located, schema))
        entries = [item for entry_id in wanted for item in found.get(entry_id, [])]
    return write_object(
        added=result.added,
        updated=result.updated,
        retired=result.retired,
        pruned=result.pruned,
        renumbered=result.renumbered,
        replayed=result.replayed,
        entries=entries,
        warnings=[*result.warnings, *warnings],
    )
