"""Receipts and a redo journal, so a batch is applied whole or not at all, and at most once per request id.

Before touching any file, the batch writes every file's new text to .memfiles/journal.json (atomically).
Files are then replaced one by one. A crash in between is finished by the next writer, under the lock:
each file still holding its old text gets the new one. see @@D-005
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from memfiles.errors import MemfilesError, WriteFailed
from memfiles.store.fileio import atomic_write, ensure_private_dir, read_text


def digest(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


class Journal:
    """The redo journal and the receipts of one project, in its state folder."""

    def __init__(self, state_dir: Path, root: Path) -> None:
        self.state_dir = state_dir
        self.root = root
        self.path = state_dir / "journal.json"

    def receipt_path(self, request_id: str) -> Path:
        name = hashlib.sha256(request_id.encode("utf-8")).hexdigest()[:40]
        return self.state_dir / "receipts" / f"{name}.json"

    def receipt(self, request_id: str) -> dict[str, Any] | None:
        try:
            return json.loads(read_text(self.receipt_path(request_id)))
        except FileNotFoundError:
            return None

    def commit(self, writes: dict[str, tuple[str | None, str]], result: dict[str, Any], request_id: str | None) -> None:
        """Write `writes` ({rel: (old text, new text)}) as one unit, then the receipt."""
        ensure_private_dir(self.state_dir)
        record = {
            "request_id": request_id,
            "result": result,
            "files": {rel: {"before": digest(old), "after": new} for rel, (old, new) in writes.items()},
        }
        try:
            atomic_write(self.path, json.dumps(record))
        except OSError as error:  # disk full, read-only: the old journal (if any) and every file are as they were
            raise WriteFailed(self._shown(self.path), f"{_reason(error)}; nothing was written") from error
        self._replay(record)

    def recover(self) -> bool:
        """Finish a batch a crashed writer left half-done; True when there was one."""
        try:
            record = json.loads(read_text(self.path))
        except FileNotFoundError:
            return False
        except json.JSONDecodeError:
            # The journal is written atomically, so a torn one never held a started batch.
            os.unlink(self.path)
            return False
        self._replay(record)
        return True

    def _shown(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def _replay(self, record: dict[str, Any]) -> None:
        for rel, change in record["files"].items():
            path = self.root / rel
            try:
                current = read_text(path)
            except FileNotFoundError:
                current = None
            after = change["after"]
            if current == after:
                continue
            if digest(current) != change["before"]:
                raise MemfilesError(
                    f"{rel} changed while a batch was being written; the batch is kept in {self.path}:"
                    " compare by hand, then delete that file"
                )
            self._write(path, after)
        if record.get("request_id"):
            receipt = self.receipt_path(record["request_id"])
            ensure_private_dir(receipt.parent)
            self._write(receipt, json.dumps(record["result"]))
        os.unlink(self.path)

    def _write(self, path: Path, text: str) -> None:
        """One file of a journaled batch; a refused write leaves the journal, which the next writer finishes."""
        try:
            atomic_write(path, text)
        except OSError as error:
            raise WriteFailed(
                self._shown(path),
                f"{_reason(error)}; every file holds its old or its new text, and the batch is kept in"
                f" {self._shown(self.path)}: the next memfiles write finishes it (free some space first)",
            ) from error


def _reason(error: OSError) -> str:
    return f"cannot write: {error.strerror or error}"
