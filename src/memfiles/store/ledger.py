"""memory/pruned.jsonl: every pruned entry, whole, with the date and the reason; ids there are never reused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memfiles.errors import ParseError
from memfiles.store.fileio import read_state


class Ledger:
    def __init__(self, path: Path) -> None:
        self.path = path

    def text(self) -> str | None:
        return read_state(self.path)

    def read(self) -> list[dict[str, Any]]:
        records = []
        for number, line in enumerate((self.text() or "").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ParseError(self.path, number, f"invalid JSON: {error.msg}") from error
            if not isinstance(record, dict) or "id" not in record:
                raise ParseError(self.path, number, "expected an object with an id")
            records.append(record)
        return records
