"""memfiles/jsonline.py: the one codec of memfiles' own lines (the watcher's socket, the settings memo)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from memfiles.jsonline import dumps, loads

VALUES = [
    {"op": "search", "queries": [["coverage aggregation", 10]], "filters": {}, "mode": "hybrid"},
    {"text": "caf\u00e9 \u2014 \U0001f600", "lone": "\udcff", "nested": [[[]], {}], "n": -3, "x": 0.1},
    [True, False, None, 1e300, -0.0],
    "",
]


@pytest.mark.parametrize("value", VALUES)
def test_it_writes_what_json_writes_in_ascii_and_reads_it_back(value: object) -> None:
    text = dumps(value)
    assert text == json.dumps(value, separators=(",", ":"))
    assert text.isascii() and "\n" not in text
    assert loads(text) == value == json.loads(text)
    assert loads(text.encode("ascii")) == value


def test_tuples_are_lists_and_keys_are_strings() -> None:
    assert loads(dumps({1: (1, 2), "k": None})) == {"1": [1, 2], "k": None}


@pytest.mark.parametrize(
    "text",
    ["", "{", "[1,]", "1 2", "{'a': 1}", "[" * 100_000, b"\xff\xfe", "\u00a01", "1\u2028", None, bytearray(b"1")],
)
def test_anything_else_is_a_value_error(text: object) -> None:
    """What json.loads refuses (white space other than JSON's included), and what is not text at all."""
    with pytest.raises(ValueError):
        loads(text)  # type: ignore[arg-type]


def circular() -> list:
    value: list = []
    value.append(value)
    return value


@pytest.mark.parametrize(
    "value",
    [{"a": object()}, {"b": b"bytes"}, {1, 2}, circular(), 10**5000],
    ids=["object", "bytes", "set", "circular", "huge"],
)
def test_a_value_json_cannot_hold_is_a_type_error(value: object) -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps(value)


def test_it_imports_neither_json_nor_re() -> None:
    """What the thin clients pay for: no `json`, no `re`."""
    code = (
        "import sys\nfrom memfiles.jsonline import dumps, loads\n"
        "assert loads(dumps({'a': [1.5, None]})) == {'a': [1.5, None]}\n"
        "print(sorted(m for m in ('json', 're', 'typing') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
