"""One base error for everything memfiles raises on purpose; the CLI maps them to exit codes."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


class MemfilesError(Exception):
    """Base of every error memfiles raises for a reason it can explain."""

    exit_code = 2
    # The `code` of the JSON error object (docs/json.md): usage, parse, op, config, lock, index, refused, io,
    # ambiguous, drafter.
    code = "usage"


class ParseError(MemfilesError):
    """A memory file (or JSON input) that does not follow the format, with the place it broke."""

    code = "parse"

    def __init__(self, path: str | Path | None, line: int | None, message: str) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.message = message
        super().__init__(self.located())

    def located(self) -> str:
        where = self.path or "<text>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: {self.message}"


class OpError(MemfilesError):
    """An op of a write batch that cannot be applied; names the op's position (1-based) and field."""

    code = "op"

    def __init__(self, position: int | None, message: str, field: str | None = None) -> None:
        self.position = position
        self.message = message
        self.field = field
        super().__init__(f"op {position}: {message}" if position is not None else message)


class BatchError(OpError):
    """Every problem of a batch at once (each an OpError with its position and field), so one run shows
    them all."""

    def __init__(self, problems: list[OpError]) -> None:
        self.problems = list(problems)
        first = self.problems[0]
        lines = "".join(f"\n  {problem}" for problem in self.problems)
        count = len(self.problems)
        several = len({problem.position for problem in self.problems}) > 1  # else one op (a CLI command's)
        where = " in the batch" if several else ""
        message = f"{count} problems{where}; nothing was written:{lines}" if count > 1 else first.message
        super().__init__(first.position, message, first.field)
        if count > 1:  # the whole list is the message; `position` and `field` still name the first
            self.args = (message,)


class ReadError(MemfilesError):
    """An input file that cannot be read as asked (missing, a folder, not UTF-8, empty), named with its path."""

    code = "io"

    def __init__(self, path: str | Path, message: str, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class AmbiguousId(MemfilesError):
    """An id that two entries carry (by hand or from a merge): a command naming it cannot tell which."""

    code = "ambiguous"

    def __init__(self, entry_id: str, places: list[str]) -> None:
        self.id = entry_id
        self.places = list(places)
        # the JSON error's problems: one per entry carrying the id; path/line name the one to renumber
        self.problems = [_place_problem(entry_id, place) for place in self.places]
        self.path, self.line = self.problems[-1]["path"], self.problems[-1]["line"]
        super().__init__(
            f"{entry_id} is ambiguous: {len(places)} entries carry it ({', '.join(places)}); give one a new id"
            f" with memfiles renumber {entry_id} --at {places[-1]}"
        )


def _place_problem(entry_id: str, place: str) -> dict[str, object]:
    """A problem object for an entry carrying `entry_id` at `path:line`."""
    from memfiles.contract import problem

    path, _, line = place.rpartition(":")
    if not line.isdigit():
        path, line = place, ""
    return problem(f"{entry_id} at {place}", id=entry_id, path=path, line=int(line) if line else None)


class RefusedError(MemfilesError):
    """The command ran and the answer is no (for example `add --unique` found a duplicate); `problems` lists
    why, as problem objects (contract.problem: the near-duplicates, each with its id, path and line)."""

    exit_code = 1
    code = "refused"

    def __init__(self, message: str, problems: list[dict[str, object]] | None = None) -> None:
        self.problems = list(problems or [])
        super().__init__(message)


class WriteFailed(MemfilesError):
    """The system refused a write (no space left, a read-only folder, a quota): named with the file and
    what was kept, so that the user knows nothing is half-written and what finishes the write."""

    code = "io"

    def __init__(self, path: str | Path, message: str) -> None:
        self.path = str(path)
        self.message = message
        super().__init__(f"{self.path}: {message}")


class DrafterError(MemfilesError):
    """The LLM drafter (`--drafter llm`, hooks_drafter) failed: it cannot be reached, refused the request,
    timed out, or answered what cannot be used. Nothing of its domain was written. `unreachable`: the
    endpoint itself failed (not one answer), so asking it about another domain would fail the same way."""

    code = "drafter"

    def __init__(self, message: str, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


class LintCrashed(MemfilesError):
    """PyMarkdown itself failed on a text (an error inside it, not a rule's finding nor the rule set's
    fault). The write path turns it into an OpError naming the op and field; check reports such a chunk
    as `lint-skipped` at its line, and fmt leaves it as it is (mdlint/engine.py)."""

    code = "parse"


class ConfigError(MemfilesError):
    """Configuration that cannot be used: unknown keys, bad values, no project root.

    `key` is the setting at fault (`wrap`, `kinds.risk.prefix`) or the environment variable
    (`MEMFILES_INDEX_TIMEOUT`); `path` the config file that holds it (relative to the root when inside it);
    `line` the line of a TOML syntax error. Each is None when it does not apply.
    """

    code = "config"

    def __init__(
        self, message: str, *, key: str | None = None, path: str | Path | None = None, line: int | None = None
    ) -> None:
        self.key = key
        self.path = str(path) if path is not None else None
        self.line = line
        self.message = message
        super().__init__(message)

    code = "config"


class LockTimeout(MemfilesError):
    """Another process held the project lock for longer than we were willing to wait."""

    code = "lock"

    def __init__(self, busy: str, holder: str = "unknown", path: str = "", waited: float = 0.0) -> None:
        self.busy, self.holder, self.path = busy, holder, path
        super().__init__(self.said(waited) if path else busy)

    def said(self, waited: float) -> str:
        """The message, for a wait of `waited` seconds in all (a caller may have waited in several goes)."""
        return f"{self.busy}: another process (pid {self.holder}) holds {self.path}; waited {waited:g} s"


class IndexUnavailable(MemfilesError):
    """The semantic index cannot be reached, is busy, or does not exist yet."""

    code = "index"


class NoWatcher(IndexUnavailable):
    """No watcher answers, and the caller asked for the index only through one (it would not load the model)."""


class BudgetExceeded(IndexUnavailable):
    """A request to a shared process (the watcher) took longer than its budget (memfiles.limits) and was
    stopped, so that it holds up nobody else."""


def os_error(error: OSError) -> MemfilesError:
    """An OSError that reached a command (a state file that is a folder, a full disk) as an `io` error
    naming its file, relative to the current folder when it lies below it."""
    reason = (error.strerror or str(error)).lower()
    if error.filename is None:
        unnamed = MemfilesError(reason)
        unnamed.code = "io"
        return unnamed
    path = Path(os.fsdecode(error.filename))
    with contextlib.suppress(ValueError):
        path = path.resolve().relative_to(Path.cwd().resolve())
    return ReadError(path, reason)
