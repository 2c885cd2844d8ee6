"""Every command's --json output against the contract (tests/contract_shapes.py), and the contract against
docs/json.md, so that code, validator and documentation cannot drift apart."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from memfiles.contract import (
    FINDING_CODES,
    LINT_SEVERITY,
    Finding,
    entry_object,
    entry_ref,
    error_object,
    finding,
    hit_object,
    severity_of,
    write_object,
)
from memfiles.format.model import Entry
from tests.conftest import REPO, Run
from tests.contract_shapes import COMMANDS, DOCUMENTED, ERROR_CODES, SHAPES, check, check_command, check_shape

DOC = (REPO / "docs" / "json.md").read_text(encoding="utf-8")
AT = "@@"  # written apart so that `memfiles refs` does not read this file's examples as references


@dataclass(frozen=True)
class Case:
    """One command run with --json: its arguments, the exit code it must give, the COMMANDS label it prints."""

    name: str
    args: tuple[str, ...]
    exit_code: int
    label: str


# Add your command here once it prints the contract (and its label to contract_shapes.COMMANDS).
CASES = [
    Case("list", ("list", "--json"), 0, "list"),
    Case("list --body", ("list", "--body", "--json"), 0, "list --body"),
    Case("list filtered", ("list", "--kind", "F", "--kind", "todo", "--status", "open", "--json"), 0, "list"),
    Case("show", ("show", "D-001", "--json"), 0, "show"),
    Case("show, typed loosely", ("show", f"{AT}d-1", "--json"), 0, "show"),
    Case("show a pruned id", ("show", "T-001", "--json"), 0, "show"),
    Case("audit", ("audit", "--json"), 1, "audit"),
    Case("refs", ("refs", "--json", "src"), 0, "refs"),
    Case("refs --dangling", ("refs", "--dangling", "--json", "src"), 1, "refs"),
    Case("error: no such id", ("show", "D-404", "--json"), 2, "error"),
    Case("error: not an id", ("show", "hello", "--json"), 2, "error"),
    Case("error: unknown kind", ("list", "--kind", "nonsense", "--json"), 2, "error"),
]


KEYS = ("Rotate the signing keys before the release", "The signing keys expire in March; rotate them first.")

# Commands that need a project every file of which parses (writes refuse otherwise), in order: each case
# runs on the project the cases before it left.
CLEAN_CASES = [
    Case("add", ("add", "-k", "D", "-t", "A decision", "-a", "format", "--body", "Why.", "--json"), 0, "write"),
    Case("add F", ("add", "-k", "F", "-t", "A friction", "-a", "index", "--body", "b", "--json"), 0, "write"),
    Case("set", ("set", "F-001", "--status", "resolved", "--json"), 0, "write"),
    Case("retire", ("retire", "D-001", "--successor", "F-001", "--reason", "r", "--json"), 0, "write"),
    Case("prune", ("prune", "F-001", "--reason", "gone", "--json"), 0, "write"),
    Case("check", ("check", "--json"), 0, "check"),
    Case("fmt --check", ("fmt", "--check", "--json"), 0, "fmt"),
    Case("hooks install", ("hooks", "install", "--command", "memfiles", "--json"), 0, "hooks install"),
    Case("hooks uninstall", ("hooks", "uninstall", "--dry-run", "--json"), 0, "hooks install"),
    Case("error: a bad op", ("set", "D-404", "--status", "open", "--json"), 2, "error"),
    Case("error: usage", ("add", "--json"), 2, "error"),
    Case("add T", ("add", "-k", "T", "-t", KEYS[0], "-a", "release", "--body", KEYS[1], "--json"), 0, "write"),
    Case(
        "error: refused",
        ("add", "-k", "T", "-t", KEYS[0], "-a", "x", "--body", KEYS[1], "--unique", "--json"),
        1,
        "error",
    ),
    Case("error: a batch", ("import", "-", "--json"), 2, "error"),
    Case("working start", ("working", "start", "--run", "r1", "--goal", "A goal"), 0, "-"),
    Case("working list", ("working", "list", "--json"), 0, "working list"),
]


def test_write_and_check_commands_follow_the_contract(run: Run, root: Path) -> None:
    """add, set, retire, prune, check and fmt print their documented objects; refusals the error object."""
    bad_batch = '{"ops": [{"op": "update", "id": "x"}, {"op": "prune", "id": "D-001"}]}'
    for case in CLEAN_CASES:
        stdin = bad_batch if "import" in case.args else None
        result = run(*case.args, input=stdin)
        assert result.exit_code == case.exit_code, (case.name, result.stderr)
        if case.label != "-":  # a step that sets up the next case
            check_command(case.label, json.loads(result.stdout))


@pytest.fixture
def busy(run: Run, root: Path) -> Run:
    """A project with something for every code: live, retired, pruned, stale, duplicate entries, references
    of every state in src/, and one memory file that does not parse."""
    run("add", "-k", "D", "-t", "Live decision", "-a", "format", "--body", "See D-404.", "--date", "2020-01-01")
    run("add", "-k", "D", "-t", "Old decision", "-a", "format", "--body", "b")
    run("retire", "D-002", "--successor", "D-001", "--reason", "replaced")
    run("add", "-k", "F", "-t", "Live decision", "-a", "index", "--body", "Mentions D-002.")
    run("add", "-k", "T", "-t", "Gone", "-a", "a", "--body", "b")
    run("prune", "T-001", "--reason", "done elsewhere")
    (root / "memory" / "broken.md").write_text("# Broken\n\n### L-007: No metadata\n\nJust text.\n")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("# Guide\n\n## Setup\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text(
        f"# {AT}D-001 {AT}D-002 {AT}T-001 {AT}D-404 {AT}L-007\n# {AT}doc:guide#setup {AT}doc:guide#nope {AT}skill:x\n"
    )
    return run


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_command_output_follows_the_contract(busy: Run, root: Path, monkeypatch, case: Case) -> None:
    """The command prints one JSON object of its documented shape, and exits as documented."""
    monkeypatch.chdir(root)
    result = busy(*case.args)
    assert result.exit_code == case.exit_code, result.stderr
    check_command(case.label, json.loads(result.stdout))


def test_every_finding_code_turns_up(busy: Run, root: Path, monkeypatch) -> None:
    """The fixture project makes audit and refs produce every code they know, so each is validated above."""
    monkeypatch.chdir(root)
    codes = set()
    for args in (("audit", "--json"), ("refs", "--json", "src"), ("list", "--json")):
        output = json.loads(busy(*args).stdout)
        codes |= {f["code"] for f in output.get("findings", []) + output["skipped"]}
    assert codes == {
        "unparseable",
        "dangling-ref",
        "retired-ref",
        "duplicate-title",
        "stale",
        "pruned",
        "ref-ok",
        "ref-retired",
        "ref-pruned",
        "ref-dangling",
        "ref-unreadable",
    }


def test_config_error_carries_file_and_key(run: Run, root: Path) -> None:
    """A bad setting with --json prints the error object with the config file as path and the setting as key."""
    (root / "memory" / "memfiles.toml").write_text("wrap = true\n")
    result = run("list", "--json")
    assert result.exit_code == 2
    output = json.loads(result.stdout)
    check_command("error", output)
    assert output["error"]["code"] == "config"
    assert (output["error"]["path"], output["error"]["key"]) == ("memory/memfiles.toml", "wrap")


def test_parse_error_of_a_write_carries_file_and_line(run: Run, root: Path) -> None:
    """The error object of a refused write names the broken file and line (add is not under the contract yet,
    so this checks only errors_to_exit through a read that must refuse: show of an id in the broken file)."""
    (root / "memory" / "broken.md").write_text("# Broken\n\n### L-007: No metadata\n\nJust text.\n")
    result = run("show", "L-007", "--json")
    assert result.exit_code == 2 and "memory/broken.md:5" in result.stderr
    check_command("error", json.loads(result.stdout))


class TestBuilders:
    def test_contract_builders_make_the_documented_shapes(self) -> None:
        """Each builder of contract.py produces exactly the keys the validator (and docs) list."""
        entry = Entry("D-001", "Title", "2026-01-02", "area", "accepted", body="Body.", refs=("D-002",))
        built = entry_object(entry, kind="decision", path="memory/decisions.md", line=8, section=None)
        check_shape(built, "entry")
        check_shape(entry_object(entry, kind=None, path=None, line=None, section="S", body=False), "entry_without_body")
        check_shape(finding("stale", "memory/d.md", 8, "m", id="D-001").as_json(), "finding")
        check_shape(finding("ref-ok", "a.py", 1, "m", target=entry_ref("D-001")).as_json(), "finding")
        signals = {"id": False, "exact": True, "lexical": 0.5, "dense": None}
        check_shape(hit_object(built, 0.5, signals, 1), "hit")
        check_shape(write_object(added=["D-001"], entries=[built], renumbered={"D-001": "D-003"}), "write")
        check(error_object("config", "m", key="wrap"), "{error}")

    def test_validator_refuses_extra_missing_and_mistyped_keys(self) -> None:
        """The validator is strict: an extra key, a missing key, a bool for an int, an unknown code all fail."""
        good = finding("stale", "memory/d.md", 8, "m").as_json()
        for bad in (
            {**good, "kind": "stale"},
            {k: v for k, v in good.items() if k != "target"},
            {**good, "line": True},
            {**good, "code": "no-such-code"},
            {**good, "severity": "info"},
        ):
            with pytest.raises(AssertionError):
                check_shape(bad, "finding")


def _table(section: str) -> list[list[str]]:
    """The rows of the first table under `## section` in docs/json.md, as lists of cells."""
    match = re.search(rf"^## {re.escape(section)}\n(.*?)(?=^## |\Z)", DOC, re.MULTILINE | re.DOTALL)
    assert match, f"docs/json.md has no section {section!r}"
    rows: list[str] = []
    for line in match.group(1).splitlines():
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break  # the first table only
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def _names(cell: str) -> set[str]:
    return set(re.findall(r"`([^`]+)`", cell))


class TestDocs:
    @pytest.mark.parametrize("shape", DOCUMENTED)
    def test_docs_list_exactly_the_keys_of_each_object(self, shape: str) -> None:
        """docs/json.md's table for each object names every key the validator knows, and no other."""
        documented = set().union(*(_names(row[0]) for row in _table(shape)))
        assert documented == set(SHAPES[shape])

    def test_docs_list_every_finding_code_with_its_severity(self) -> None:
        """The Finding codes table holds exactly the codes of contract.FINDING_CODES, with their severities."""
        rows = {" ".join(sorted(_names(row[0]))): row[1] for row in _table("Finding codes")}
        lint_row = rows.pop(" ".join(sorted(_names("`md001` ... `md060`"))))
        assert rows == FINDING_CODES and lint_row == LINT_SEVERITY

    def test_docs_list_every_error_code(self) -> None:
        """The error object's code row names every code the validator accepts."""
        row = next(row for row in _table("error") if row[0] == "`code`")
        assert _names(row[2]) == set(ERROR_CODES)

    def test_docs_show_every_command_and_its_keys(self) -> None:
        """Each command under the contract has a row in the Commands table naming its top-level keys."""
        rows = {row[0]: row[1] for row in _table("Commands")}
        for label, keys in COMMANDS.items():
            if label == "error":
                continue
            words = ["add"] if label == "write" else label.split()
            command, flags = words[0], words[1:]
            candidates = [
                (name, text) for name, text in rows.items() if any(command in n.split()[:2] for n in _names(name))
            ]
            exact = [text for name, text in candidates if all(flag in name for flag in flags)]
            row = (exact or [text for _, text in candidates] or [None])[0]
            assert row is not None, f"docs/json.md Commands has no row for {command}"
            assert all(f'"{key}"' in row for key in keys), f"{command}: {row}"

    def test_every_literal_finding_code_in_the_source_is_registered(self) -> None:
        """A Finding(...) or finding(...) call with a literal code anywhere in src/ uses a registered code."""
        used = set()
        for path in (REPO / "src" / "memfiles").rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Call):
                    continue
                name = getattr(node.func, "id", getattr(node.func, "attr", None))
                if name not in ("Finding", "finding"):
                    continue
                args = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "code")]
                used |= {arg.value for arg in args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)}
        assert used and all(severity_of(code) for code in used), {code for code in used if not severity_of(code)}

    def test_finding_requires_a_known_severity(self) -> None:
        """Finding itself refuses a severity outside error, warning, info."""
        with pytest.raises(ValueError):
            Finding("stale", "fatal", None, None, "m")
