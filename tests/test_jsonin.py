"""memfiles/jsonin.py: JSON input read strictly, placed where it is at fault, as fast as json.loads."""

from __future__ import annotations

import json

import pytest

from memfiles import jsonin


@pytest.mark.parametrize(
    "text",
    [
        '{"a": NaN, "b": -Infinity, "c": 1e999, "d": 123456789012345678901234567890}',
        '"\\ud83d\\ude00"',
        " [1, 2] ",
        '{"x": {"a": 1}, "a": 2}',
        "[" * 500 + "]" * 500,
    ],
)
def test_what_json_reads_it_reads_the_same(text: str) -> None:
    assert repr(jsonin.loads(text)) == repr(json.loads(text))


@pytest.mark.parametrize(
    ("text", "line", "column", "words"),
    [
        ('{"hooks": {},\n "x": {"hooks": 1},\n\n\n "hooks": 2}', 5, 2, 'key "hooks" given twice'),  # not line 2
        ('{"\\u00e9": 1, "é": 2}', 1, 15, 'key "é" given twice'),  # the same key, spelled two ways
        ('{"a": [1, {"b": 2, "b": 3}]}', 1, 20, 'key "b" given twice'),
        ("\ufeff{}", 1, 1, "Unexpected UTF-8 BOM"),
        ("[" * 3000 + "]" * 3000, 1, 201, "nested too deep"),
        ('{"title": "ok \\ud800 no"}', 1, 15, "half of a surrogate pair"),  # no file or tokenizer takes it
    ],
)
def test_a_fault_is_placed_where_it_is(text: str, line: int, column: int, words: str) -> None:
    with pytest.raises(json.JSONDecodeError) as caught:
        jsonin.loads(text)
    assert (caught.value.lineno, caught.value.colno) == (line, column) and words in caught.value.msg


def test_types_are_named_in_jsons_words() -> None:
    said = [jsonin.json_type(v) for v in (None, True, 5, 2.5, "x", [1], {"a": 1})]
    assert said == ["null", "a boolean (true)", "a number (5)", "a number (2.5)", "text", "a list", "an object"]


def test_an_argument_that_is_not_utf8_is_refused_before_any_command(tmp_path) -> None:
    """`memfiles add -t $'caf\\xe9'` crashed hashing its ops, and `memsearch` in the tokenizer, each with a
    traceback: the shell hands bytes, which Python keeps as lone surrogates. Both refuse it, exit 2."""
    import subprocess
    import sys

    (tmp_path / "memory").mkdir()
    for entry, args in (
        ("memfiles.cli.entry", [b"add", b"-k", b"decision", b"-t", b"caf\xe9", b"-a", b"x", b"--body", b"b"]),
        ("memfiles.cli.quick_search", [b"yaml caf\xe9", b"--json"]),
    ):
        code = f"import sys; from {entry} import main; main()"
        done = subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, capture_output=True)
        assert done.returncode == 2 and b"is not UTF-8 text (byte 0xe9)" in done.stderr, done.stderr
        assert b"Traceback" not in done.stderr and not (tmp_path / "memory" / "decisions.md").exists()
    assert json.loads(done.stdout)["error"]["code"] == "usage"


def test_a_path_that_is_not_utf8_is_still_a_path(tmp_path) -> None:
    """`--root $'/tmp/caf\\xe9'` worked before the check and must still: Linux names files in bytes."""
    import os
    import subprocess
    import sys

    root = os.fsencode(tmp_path) + b"/caf\xe9"
    os.makedirs(root + b"/memory")
    code = "import sys; from memfiles.cli.entry import main; main()"
    done = subprocess.run([sys.executable, "-c", code, b"--root", root, b"list", b"--json"], capture_output=True)
    assert done.returncode == 0 and b"not UTF-8" not in done.stderr, done.stderr
