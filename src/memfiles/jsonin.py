"""JSON as input: what a user or an agent hands memfiles (a batch of ops, a query batch, an experience
log, an agent's settings file) is read strictly, so that nothing in it is dropped in silence.

`json.loads` keeps the last of two equal keys in one object (`{"op": "add", "op": "prune"}` would prune)
and overflows the stack on input nested a few thousand deep. `loads` here refuses both with a
`json.JSONDecodeError` (line and column of the repeated key, or of where the nesting got too deep),
which every caller already turns into its own error naming the file and line. The C decoder reads
everything (a hook checks each object's keys); only input it finds at fault is read again, slowly, to
place the fault. Stdlib only.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
from typing import Any

# Where the slow decoder stops, placing the fault, when the C decoder ran out of stack: deeper than any
# input memfiles reads has a reason to be, and well under the interpreter's recursion limit.
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
            raise json.JSONDecodeError("nested too deep to read", text, max(start - 1, 0))


def _second(text: str, start: int, end: int, key: str) -> int:
    """Where `key` appears the second time as a key of the object text[start:end] itself (not of an object
    inside it), compared as decoded (`"\\u00e9"` is `"é"`); the object's start if it cannot be told."""
    depth, seen, at = 0, 0, start
    while at < end:
        char = text[at]
        if char == '"':
            close = at + 1
            while close < end and text[close] != '"':
                close += 2 if text[close] == "\\" else 1
            after = close + 1
            while after < end and text[after] in " \t\r\n":
                after += 1
            if depth == 0 and after < end and text[after] == ":":
                try:
                    same = json.loads(text[at : close + 1]) == key
                except ValueError:
                    same = False
                seen += same
                if seen == 2:
                    return at
            at = close + 1
            continue
        depth += char in "{["
        depth -= char in "}]"
        at += 1
    return max(start - 1, 0)


class _Refused(Exception):
    """The fast decoder found what the strict one must place: a key given twice."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _Refused
    return found


# A \uD800-\uDFFF escape that is not half of a pair: JSON's grammar lets it through, but it is no text,
# and no file, hash or tokenizer takes it (a write crashed on it).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _escaped(text: str, at: int) -> bool:
    """Whether the backslash at `at` starts an escape (it is not itself escaped)."""
    before = at
    while before > 0 and text[before - 1] == "\\":
        before -= 1
    return (at - before) % 2 == 0


def _refuse_lone_surrogates(text: str) -> None:
    if _SURROGATE_ESCAPE.search(text) is None:
        return
    paired = -1  # where the low half of the last pair stood
    for found in _SURROGATE_ESCAPE.finditer(text):
        at = found.start()
        if at == paired or not _escaped(text, at):
            continue
        value = int(text[at + 2 : at + 6], 16)
        low = _SURROGATE_ESCAPE.match(text, at + 6)
        if value <= 0xDBFF and low is not None and int(text[at + 8 : at + 12], 16) >= 0xDC00:
            paired = at + 6
            continue
        raise json.JSONDecodeError(f"{text[at : at + 6]} is half of a surrogate pair, not text", text, at)


def loads(text: str) -> Any:
    """`json.loads`, refusing a key given twice in one object and input nested too deep to read. The C
    decoder reads; only input it finds at fault is read again by the pure-Python one, which places the
    fault (line and column) and stops at MAX_DEPTH levels."""
    _refuse_lone_surrogates(text)
    try:
        return json.loads(text, object_pairs_hook=_unique)
    except (_Refused, RecursionError):
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
