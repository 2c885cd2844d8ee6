"""memory/pruned.jsonl: every pruned entry, whole, with the date and the reason; ids there are never reused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memfiles import jsonin
from memfiles.errors import ParseError
from memfiles.store.fileio import read_state


class Ledger:
    def __init__(self, path: Path) -> None:
        self.path = path
        # as messages name it: the root memory/ folder's file, relative to the root like every other path
        self.shown = f"{path.parent.name}/{path.name}"

    def text(self) -> str | None:
        return read_state(self.path)

    def read(self) -> list[dict[str, Any]]:
        records = []
        for number, line in enumerate((self.text() or "").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = jsonin.loads(line)
            except json.JSONDecodeError as error:
                raise ParseError(self.shown, number, f"invalid JSON: {error.msg}") from error
            if not isinstance(record, dict) or "id" not in record:
                raise ParseError(self.shown, number, "expected an object with an id")
            records.append(record)
        return records
