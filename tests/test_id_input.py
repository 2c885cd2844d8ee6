"""Ids as people and agents type them: every command that takes an id reads `d-1`, `@@D-001`, `D-2` and
`D-0001` as `show` does (one function, format/ids.normalize_id), and writes the canonical form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfiles.format.ids import id_key, normalize_id
from tests.conftest import Run, snapshot


def add(run: Run, kind: str, title: str, *extra: str) -> str:
    result = run("add", "-k", kind, "-t", title, "-a", "ids", "--body", f"About {title}.", *extra)
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


@pytest.fixture
def three(run: Run) -> Run:
    """D-001, D-002, T-001 and E-001 (an episode), written through the CLI."""
    assert add(run, "decision", "First decision") == "D-001"
    assert add(run, "decision", "Second decision") == "D-002"
    assert add(run, "todo", "A todo") == "T-001"
    assert add(run, "episode", "An episode of the build") == "E-001"
    return run


def entry(run: Run, entry_id: str) -> dict:
    result = run("show", entry_id, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["entry"]


class TestNormalize:
    @pytest.mark.parametrize("typed", ["d-1", "@@D-001", "D-1", "D-0001", " @@d-01 ", "D-001"])
    def test_every_spelling_is_one_id(self, typed: str) -> None:
        """Any case, @@, unpadded or over-padded: D-001 with width 3."""
        assert normalize_id(typed, 3) == "D-001"

    def test_width_comes_from_the_schema(self) -> None:
        """With id_width 4, d-1 is D-0001; a number wider than the width keeps its digits."""
        assert normalize_id("d-1", 4) == "D-0001" and normalize_id("D-12345", 3) == "D-12345"

    @pytest.mark.parametrize("typed", ["second", "D-", "-1", "D-1a", "ß-1", "@@", "D_1"])
    def test_what_is_not_an_id_says_so(self, typed: str) -> None:
        """Something that is not an id is refused, naming what an id looks like; no key is made of it."""
        assert id_key(typed) is None
        with pytest.raises(ValueError, match=r"is not an id \(PREFIX-NUMBER, like D-476\)"):
            normalize_id(typed)


class TestWriteCommands:
    @pytest.mark.parametrize("typed", ["d-1", "@@D-001", "D-1", "D-0001"])
    def test_set_takes_any_spelling(self, three: Run, typed: str) -> None:
        """set d-1 / @@D-001 / D-1 / D-0001 all update D-001, and the write object names D-001."""
        result = three("set", typed, "--status", "accepted", "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["updated"] == ["D-001"]
        assert entry(three, "D-001")["status"] == "accepted"

    def test_retire_with_a_successor_in_lower_case(self, three: Run) -> None:
        """retire d-1 --successor d-2 retires D-001 and stores the successor as D-002."""
        result = three("retire", "d-1", "--successor", "d-2", "--reason", "replaced", "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["retired"] == ["D-001"]
        assert entry(three, "D-001")["successor"] == "D-002"

    def test_prune_of_a_short_id_removes_the_entry_and_records_it_whole(self, three: Run, root: Path) -> None:
        """prune T-1 removes the live T-001 and records it under T-001 with its title and text, not a
        false "deleted by hand" record under T-1."""
        result = three("prune", "T-1", "--reason", "dup", "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["pruned"] == ["T-001"]
        assert "### T-001:" not in (root / "memory" / "todos.md").read_text()
        records = [json.loads(line) for line in (root / "memory" / "pruned.jsonl").read_text().splitlines()]
        assert [(r["id"], r["title"], r["path"]) for r in records] == [("T-001", "A todo", "memory/todos.md")]
        assert "### T-001: A todo" in records[0]["entry"]
        again = three("retire", "t-01", "--reason", "x")
        assert again.exit_code == 2 and "no entry T-001 (it was pruned: dup)" in again.stderr

    @pytest.mark.parametrize("typed", ["T-01", "t-1", "@@T-0001"])
    def test_prune_json_names_the_canonical_id(self, three: Run, typed: str) -> None:
        """prune T-01 --json gives "pruned": ["T-001"]."""
        result = three("prune", typed, "--reason", "dup", "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["pruned"] == ["T-001"]

    def test_refs_are_stored_canonical(self, three: Run) -> None:
        """add --ref d-1 --ref @@D-0002 stores refs D-001, D-002; set --ref replaces them the same way."""
        new = add(three, "lesson", "A lesson", "--ref", "d-1", "--ref", "@@D-0002")
        assert entry(three, new)["refs"] == ["D-001", "D-002"]
        assert three("set", new, "--ref", "t-1").exit_code == 0
        assert entry(three, new)["refs"] == ["T-001"]

    def test_import_ops_take_any_spelling(self, three: Run) -> None:
        """An import batch with "id": "t-1", refs and successor in other spellings applies to the canonical ids."""
        ops = {
            "ops": [
                {"op": "update", "id": "t-1", "refs": ["d-2"]},
                {"op": "retire", "id": "@@d-001", "successor": "D-0002", "reason": "merged"},
            ]
        }
        result = three("import", "-", "--json", input=json.dumps(ops))
        assert result.exit_code == 0, result.output
        written = json.loads(result.stdout)
        assert (written["updated"], written["retired"]) == (["T-001"], ["D-001"])
        assert entry(three, "T-001")["refs"] == ["D-002"]
        assert entry(three, "D-001")["successor"] == "D-002"

    def test_renumber_takes_a_lower_case_id(self, three: Run, root: Path) -> None:
        """renumber d-2 --at PATH:LINE renumbers the copy of D-002 a merge left."""
        path = root / "memory" / "decisions.md"
        text = path.read_text()
        start = text.index("### D-002:")
        block = text[start : text.index("## Manual")]
        path.write_text(text.replace("## Manual", block.replace("Second decision", "Copy") + "## Manual"))
        line = path.read_text().split("\n").index("### D-002: Copy") + 1
        result = three("renumber", "d-2", "--at", f"memory/decisions.md:{line}", "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["renumbered"] == {"D-002": "D-003"}

    def test_promote_takes_a_lower_case_episode(self, three: Run) -> None:
        """promote e-1 promotes E-001."""
        result = three("promote", "e-1", "--to", "procedure", "--reason", "seen often", "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["updated"] == ["E-001"]

    @pytest.mark.parametrize(
        "args",
        [
            ("set", "second", "--status", "open"),
            ("retire", "D-001", "--successor", "next", "--reason", "x"),
            ("prune", "nope", "--reason", "x"),
            ("add", "-k", "L", "-t", "x", "-a", "a", "--body", "b", "--ref", "D_1"),
        ],
    )
    def test_what_is_not_an_id_is_refused_naming_it(self, three: Run, root: Path, args: tuple[str, ...]) -> None:
        """A word that is not an id: exit 2, "'...' is not an id", nothing written."""
        before = snapshot(root)
        result = three(*args)
        assert result.exit_code == 2
        assert "is not an id (PREFIX-NUMBER, like D-476)" in result.stderr
        assert snapshot(root) == before

    def test_an_entry_cannot_refer_to_itself(self, three: Run, root: Path) -> None:
        """set T-001 --ref t-1 is refused (exit 2); nothing is written."""
        before = snapshot(root)
        result = three("set", "T-001", "--ref", "t-1")
        assert result.exit_code == 2 and "refs: T-001 cannot refer to itself" in result.stderr
        assert snapshot(root) == before


class TestHandWrittenSpelling:
    def test_set_finds_an_entry_whose_heading_lacks_the_padding(self, run: Run, root: Path) -> None:
        """A file holding `### D-2:` (by hand): set D-002 and set d-2 update it."""
        (root / "memory" / "decisions.md").write_text(
            "# Decisions\n\n### D-2: Hand written\n\n- date: 2026-01-01\n- area: a\n- status: proposed\n\nBody.\n"
        )
        result = run("set", "D-002", "--status", "accepted")
        assert result.exit_code == 0, result.output
        assert "- status: accepted" in (root / "memory" / "decisions.md").read_text()

    def test_fmt_repairs_an_unpadded_id(self, run: Run, root: Path) -> None:
        """fmt rewrites `### D-2:` as `### D-002:` (no other D-002), and the refs that named D-2; check then
        has no id-format finding."""
        (root / "memory" / "decisions.md").write_text(
            "# Decisions\n\n### D-2: Hand written\n\n- date: 2026-01-01\n- area: a\n- status: proposed\n\nBody.\n\n"
            "### D-003: Another\n\n- date: 2026-01-01\n- area: a\n- status: proposed\n- refs: D-2\n\nOther.\n"
        )
        assert "id-format" in run("check", "--no-lint").stdout
        assert run("fmt", "--no-lint").exit_code == 0
        text = (root / "memory" / "decisions.md").read_text()
        assert "### D-002: Hand written" in text and "- refs: D-002" in text and "D-2" not in text
        checked = run("check", "--no-lint")
        assert checked.exit_code == 0, checked.stdout

    def test_fmt_leaves_an_unpadded_id_that_would_collide(self, run: Run, root: Path) -> None:
        """`### D-2:` beside a `### D-002:` stays as written (two entries would share D-002): check says so."""
        (root / "memory" / "decisions.md").write_text(
            "# Decisions\n\n### D-2: Hand written\n\n- date: 2026-01-01\n- area: a\n- status: proposed\n\nBody.\n\n"
            "### D-002: Another\n\n- date: 2026-01-01\n- area: a\n- status: proposed\n\nOther.\n"
        )
        run("fmt", "--no-lint")
        text = (root / "memory" / "decisions.md").read_text()
        assert "### D-2: Hand written" in text and "### D-002: Another" in text
        assert "id-format" in run("check", "--no-lint").stdout


class TestReadSide:
    def test_show_of_an_unknown_prefix_names_the_prefixes(self, three: Run) -> None:
        """show Z-9: no kind has the prefix Z, and the message says which prefixes there are; an unknown
        number of a known prefix stays a plain "no entry"."""
        result = three("show", "z-9")
        assert result.exit_code == 2
        assert "no entry Z-009 (no kind has the prefix Z; the prefixes are D, F, T, L, K, P, E, I, W)" in result.stderr
        known = three("show", "D-404")
        assert known.exit_code == 2 and known.stderr.strip().endswith("no entry D-404")

    def test_refs_resolve_an_unpadded_reference_and_say_the_spelling(self, three: Run, root: Path) -> None:
        """`@@T-1` in code while T-001 exists: ref-ok (not dangling), the message says to write @@T-001."""
        (root / "app.py").write_text("# see " + "@@" + "T-1 for why\n")
        result = three("refs", "--json", str(root / "app.py"))
        findings = json.loads(result.stdout)["findings"]
        assert [(f["code"], f["id"]) for f in findings] == [("ref-ok", "T-001")]
        assert "write it @@T-001" in findings[0]["message"]
        assert three("refs", "--dangling", str(root / "app.py")).exit_code == 0

    def test_working_todo_takes_an_unpadded_id(self, run: Run) -> None:
        """working todo done W-2 marks W-002 done."""
        assert run("working", "start", "--run", "r1", "--goal", "Fix the build").exit_code == 0
        todo = run("working", "todo", "add", "Pin the tool")
        assert todo.exit_code == 0 and todo.stdout.strip() == "W-002"
        done = run("working", "todo", "done", "w-2", "--json")
        assert done.exit_code == 0, done.output
        assert [t["id"] for t in json.loads(done.stdout)["working"]["todo_done"]] == ["W-002"]
