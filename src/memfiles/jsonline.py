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
    numbers, booleans and None; TypeError for anything else (a circular value and an integer of more
    digits than Python prints included)."""
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

    try:
        return _encode(value)
    except ValueError as error:  # a circular value; an integer past int_max_str_digits
        raise TypeError(f"not JSON serializable: {error}") from None


_BLANK = " \t\n\r"  # JSON's white space, and no other


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
    """The JSON value `data` holds (JSON's white space around it allowed; bytes are UTF-8); ValueError
    when it holds none, or is neither text nor bytes."""
    from _json import make_scanner

    if isinstance(data, bytes):
        text = data.decode("utf-8")  # UnicodeDecodeError is a ValueError
    elif isinstance(data, str):
        text = data
    else:
        raise ValueError(f"not JSON: a {type(data).__name__}")
    start = len(text) - len(text.lstrip(_BLANK))
    try:
        value, end = make_scanner(_Decoding())(text, start)
    except (StopIteration, ValueError, SystemError, RecursionError):
        # SystemError: the C scanner reports bad JSON through json.decoder, which may not be imported
        raise ValueError("not JSON") from None
    if text[end:].strip(_BLANK):
        raise ValueError("extra data after the JSON value")
    return value
