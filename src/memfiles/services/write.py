"""The write path as every command uses it: the batch writes the files; the index is told afterwards."""

from __future__ import annotations

from collections.abc import Callable

from memfiles.store.batch import Batch, BatchResult
from memfiles.store.ops import Op
from memfiles.store.project import Project

# Called with the project and the batch result once the files are written; set by the index layer.
IndexNotifier = Callable[[Project, BatchResult], str | None]


def write_ops(
    project: Project,
    ops: list[Op],
    request_id: str | None = None,
    notify: IndexNotifier | None = None,
) -> tuple[BatchResult, str | None]:
    """Apply `ops`; then, if given, tell the index. Returns the result and a warning from the index, if any.

    The file is the source of truth, so nothing the index does can undo or fail a write: see @@D-002.
    """
    from memfiles.services.lint import clean_ops

    ops = clean_ops(project, ops)  # bodies stored so that the file passes the lint rule set (docs/lint.md)
    result = Batch(project).apply(ops, request_id=request_id)
    warning = None
    if notify is not None and not result.replayed and (result.changed_ids or result.pruned):
        try:
            warning = notify(project, result)
        except Exception as error:  # the write is done; an index problem is one warning, never a failure
            warning = f"index not updated ({type(error).__name__}: {error}); run memfiles backfill"
    return result, warning
