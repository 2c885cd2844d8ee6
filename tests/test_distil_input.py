"""The distiller fed a careless experience log (each bad line is named with its file and line, and a
misspelt field is pointed out instead of silently read as missing), and dupes beside working memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Run

GOOD = '{"timestamp": "2026-01-01T00:00:00Z", "signoff_achieved": true, "issues_encountered": ["x"], "run_id": "r%d"}'


def write_log(root: Path, data: bytes) -> str:
    folder = root / "memory" / "synth"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "experiences.jsonl").write_bytes(data)
    return "memory/synth/experiences.jsonl"


@pytest.mark.parametrize(
    ("line", "words"),
    [
        (b"not json", "invalid JSON"),
        (b'{"timestamp": 5}', "timestamp is 5, not ISO-8601 text"),
        (b"{}", "timestamp is missing"),
        (b'{"timestamp": "yesterday"}', "timestamp 'yesterday' is not ISO-8601"),
        (b'\xff\xfe{"timestamp": "2026-01-01"}', "not UTF-8 text (byte 0xff at column 1)"),
        (b"[1, 2]", "a record is a JSON object"),
        (
            b'{"timestamp": "2026-01-01", "signoff_achieved": true, "signoff_achieved": false}',
            'invalid JSON (key "signoff_achieved" given twice',
        ),
    ],
)
def test_a_bad_line_is_named_and_skipped(run: Run, root: Path, line: bytes, words: str) -> None:
    """A malformed line is skipped with `path:line: why` on stderr; the valid lines around it are read."""
    rel = write_log(root, (GOOD % 1).encode() + b"\n" + line + b"\n" + (GOOD % 2).encode() + b"\n")
    result = run("distil", "--domain", "synth", "--dry-run")
    assert result.exit_code == 0, result.output
    assert f"{rel}:2: {words}" in result.stderr
    assert "Records read:  2 (1 malformed lines skipped)" in result.stdout


@pytest.mark.parametrize(
    ("key", "meant"),
    [("signoff", "signoff_achieved"), ("issues", "issues_encountered"), ("fixes_aplied", "fixes_applied")],
)
def test_a_misspelt_field_is_pointed_out(run: Run, root: Path, key: str, meant: str) -> None:
    """'signoff' for signoff_achieved (or a typo of a field) is named with the field it looks like."""
    rel = write_log(root, b'{"timestamp": "2026-01-01T00:00:00Z", "%s": true, "run_id": "r1"}\n' % key.encode())
    result = run("distil", "--domain", "synth", "--dry-run")
    assert result.exit_code == 0, result.output
    assert f"{rel}:1: {key!r} is not a field: did you mean {meant!r}?" in result.stderr


def test_context_fields_are_not_flagged(run: Run, root: Path) -> None:
    """run_id, tool and design (context a log may carry) raise no warning."""
    write_log(
        root,
        b'{"timestamp": "2026-01-01T00:00:00Z", "signoff_achieved": true, "run_id": "r1", "tool": "vivado",'
        b' "design": "cpu"}\n',
    )
    result = run("distil", "--domain", "synth", "--dry-run")
    assert result.exit_code == 0 and "warning" not in result.stderr


def test_a_record_without_signoff_achieved_says_how_it_is_read(run: Run, root: Path) -> None:
    """signoff_achieved left out files the run as a failure: said, with the line, as a misspelt field is."""
    write_log(root, b'{"timestamp": "2026-01-01T00:00:00Z", "run_id": "r1", "issues_encountered": ["x"]}\n')
    result = run("distil", "--domain", "synth", "--dry-run")
    assert result.exit_code == 0
    assert "memory/synth/experiences.jsonl:1: no signoff_achieved: read as not signed off" in result.stderr


def test_dupes_leaves_working_memory_out(run: Run, root: Path) -> None:
    """Two runs' identical todos are run state, not knowledge: dupes does not pair them (entries it does pair)."""
    for name in ("ci-1", "ci-2"):
        assert run("working", "start", "--run", name, "--goal", "Make the nightly CI job pass again").exit_code == 0
        assert run("working", "todo", "add", "--run", name, "Pin the pyyaml version in the dev extra").exit_code == 0
    for _ in range(2):
        body = "Pin pyyaml in the dev extra so that the nightly CI job finds it."
        assert (
            run("add", "-k", "L", "-t", "Pin the pyyaml version in the dev extra", "-a", "ci", "--body", body).exit_code
            == 0
        )
    found = json.loads(run("dupes", "--json").stdout)["findings"]
    assert [(f["id"], f["target"]["id"]) for f in found] == [("L-001", "L-002")]


def test_distil_all_without_domains_says_so(run: Run) -> None:
    """distil --all in a project without any experiences.jsonl says there are no domains (no empty table), exit 0."""
    result = run("distil", "--all")
    assert result.exit_code == 0 and result.stdout == "" and "no domains yet" in result.stderr
    assert json.loads(run("distil", "--all", "--json").stdout) == {"domains": []}


def test_fixes_beyond_the_issues_are_said(run: Run, root: Path) -> None:
    """A fix pairs with the issue at its position: a second fix for one issue was dropped in silence."""
    rel = write_log(
        root,
        b'{"timestamp": "2026-01-01T00:00:00Z", "signoff_achieved": true, "run_id": "r1",'
        b' "issues_encountered": ["Density too high near the macros"],'
        b' "fixes_applied": ["Add a 5 um halo around the macros", "Lower target density to 0.6"]}\n',
    )
    result = run("distil", "--domain", "synth", "--dry-run", "--min-records", "1")
    assert result.exit_code == 0, result.output
    assert f"{rel}:1: 2 fixes for 1 issue: a fix pairs with the issue at its position" in result.stderr
    assert "'Lower target density to 0.6' fixes no issue" in result.stderr


@pytest.mark.parametrize(
    ("text", "used"),
    [
        ("Do not cap fanout with --max-fanout 16", []),
        ("Never pass --skip-io", []),
        ("Pass --no-retime and --max-fanout 16", ["--no-retime", "--max-fanout 16"]),  # `no` inside a flag
        ("Run synth with -noflatten, not the default", ["synth -noflatten"]),
        ("The default did not close timing, so we used --max-fanout 16", ["--max-fanout 16"]),  # another clause
        ("No hold fix needed: ran `abc -D 1250`", ["abc -D 1250"]),
    ],
)
def test_a_negation_turns_down_only_a_flag_of_its_own_clause(text: str, used: list[str]) -> None:
    """The first rule dropped any flag of a sentence holding `not`/`no` anywhere before it, or inside a
    flag (`--no-retime`): runs that used a flag lost their evidence (review)."""
    from memfiles.services.distiller.flags import used_flags

    assert [flag.text for flag in used_flags(text)] == used
