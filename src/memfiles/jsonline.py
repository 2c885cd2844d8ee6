"""JSON as memfiles writes it between its own processes: the watcher's socket (both ends) and the thin
clients' settings memo. One codec, built on the C functions of `_json` alone: `import json` costs about as
much as starting Python (it imports `re`), and the thin clients of memsearch and the hooks run on every
query and tool call. What the world hands memfiles is read by jsonin.py instead, strictly.

The text is ASCII (every other character escaped), so it always encodes, lone surrogates included.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: the thin clients import this module
if TYPE_CHECKING:
    from collections.abc import Callable

_encode: Callable[[object], str] | None = None


def _refuse(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: object) -> str:
    """`value` as one line of JSON, as json.dumps writes it (ASCII): dicts, lists, tuples, strings,
    numbers, booleans and None; TypeError for anything else."""
    global _encode
    if _encode is None:
        try:
            from _json import encode_basestring_ascii, make_encoder

            def _encode(value: object) -> str:
                encoder = make_encoder({}, _refuse, encode_basestring_ascii, None, ":", ",", False, False, True)
                return "".join(encoder(value, 0))

            _encode({"probe": [1, 1.5, True, None]})  # a Python whose _json differs: the json module
        except (ImportError, TypeError):
            import json

            def _encode(value: object) -> str:
                return json.dumps(value, separators=(",", ":"))

    return _encode(value)


class _Decoding:
    """What _json's C scanner reads its settings from (the attributes json.JSONDecoder gives it)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return float(name.lower().replace("infinity", "inf"))


def loads(data: str | bytes) -> object:
    """The JSON value `data` holds (surrounding white space allowed; bytes are UTF-8); ValueError when it
    holds none."""
    from _json import make_scanner

    text = data.decode("utf-8") if isinstance(data, bytes) else data  # UnicodeDecodeError is a ValueError
    start = len(text) - len(text.lstrip())
    try:
        value, end = make_scanner(_Decoding())(text, start)
    except (StopIteration, ValueError, SystemError, RecursionError):
        # SystemError: the C scanner reports bad JSON through json.decoder, which may not be imported
        raise ValueError("not JSON") from None
    if text[end:].strip():
        raise ValueError("extra data after the JSON value")
    return value
