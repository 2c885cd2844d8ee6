"""JSON as input: what a user or an agent hands memfiles (a batch of ops, a query batch, an experience
log, an agent's settings file) is read strictly, so that nothing in it is dropped in silence.

`json.loads` keeps the last of two equal keys in one object (`{"op": "add", "op": "prune"}` would prune)
and overflows the stack on input nested a few thousand deep. `loads` here refuses both with a
`json.JSONDecodeError` (line and column of the repeated key, or of the start), which every caller
already turns into its own error naming the file and line. Stdlib only.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
from typing import Any

# Deeper than any input memfiles reads has a reason to be; well under the interpreter's recursion limit.
MAX_DEPTH = 200


class _StrictDecoder(json.JSONDecoder):
    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        plain_array = self.parse_array

        def parse_object(
            s_and_end: tuple[str, int], strict: bool, scan_once: Any, *_hooks: Any
        ) -> tuple[dict[str, Any], int]:
            text, start = s_and_end
            self._deeper(text, start)
            try:
                pairs, end = json.decoder.JSONObject(s_and_end, strict, scan_once, None, list, self.memo)
            finally:
                self.depth -= 1
            seen: set[str] = set()
            for key, _value in pairs:
                if key in seen:
                    raise json.JSONDecodeError(
                        f"key {json.dumps(key, ensure_ascii=False)} given twice in one object",
                        text,
                        _second(text, start, end, key),
                    )
                seen.add(key)
            return dict(pairs), end

        def parse_array(s_and_end: tuple[str, int], scan_once: Any) -> tuple[list[Any], int]:
            self._deeper(*s_and_end)
            try:
                return plain_array(s_and_end, scan_once)
            finally:
                self.depth -= 1

        self.parse_object = parse_object  # type: ignore[assignment]
        self.parse_array = parse_array  # type: ignore[assignment]
        self.scan_once = json.scanner.py_make_scanner(self)  # the pure-Python scanner calls these two

    def _deeper(self, text: str, start: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.depth = 0
            raise json.JSONDecodeError(f"nested more than {MAX_DEPTH} levels deep", text, max(start - 1, 0))


def _second(text: str, start: int, end: int, key: str) -> int:
    """Where the key's second appearance in the object text[start:end] is (the object's start if unsure)."""
    found = [m.start() for m in re.finditer(re.escape(json.dumps(key)) + r"\s*:", text[start:end])]
    return start + found[1] if len(found) > 1 else max(start - 1, 0)


def loads(text: str) -> Any:
    """`json.loads`, refusing a key given twice in one object and nesting deeper than MAX_DEPTH."""
    return _StrictDecoder().decode(text)


def json_type(value: Any) -> str:
    """What a decoded JSON value is, in JSON's words, for a message about input (`got null`, not
    `got NoneType`): null, a boolean, a number, text, a list or an object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
