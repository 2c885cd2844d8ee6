"""Ids are never handed out twice: the committed id marks, ids missing from the files, ambiguous ids and
renumber, successors that keep or go round, references to missing or retired ids."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from memfiles import parse
from memfiles.config import load_settings
from memfiles.store.id_marks import advance, parse_marks, render_marks
from tests.conftest import Run, snapshot


class Killed(Exception):
    """Stands for the process dying half-way through a batch."""


def add(run: Run, kind: str, title: str, *extra: str) -> str:
    result = run("add", "-k", kind, "-t", title, "-a", "ids", "--body", f"About {title}.", *extra)
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


def duplicate(root: Path, rel: str, entry_id: str, title: str) -> None:
    """Copy entry `entry_id` of `rel` by hand, under another title, just above ## Manual (as a merge would)."""
    path = root / rel
    text = path.read_text()
    start = text.index(f"### {entry_id}:")
    end = text.find("\n### ", start + 1)
    manual = text.index("## Manual")
    block = text[start : manual if end < 0 or end > manual else end + 1].rstrip("\n") + "\n\n"
    copy = block.replace(block.split("\n", 1)[0], f"### {entry_id}: {title}")
    path.write_text(text[:manual] + copy + text[manual:])


def heading_line(root: Path, rel: str, title: str) -> int:
    lines = (root / rel).read_text().split("\n")
    return next(n for n, line in enumerate(lines, start=1) if line.startswith("### ") and line.endswith(title))


class TestMarks:
    def test_a_deleted_file_does_not_recycle_its_numbers(self, run: Run, root: Path) -> None:
        """rm memory/todos.md after T-001..T-004, then add: T-005, and check names every missing id."""
        for n in range(4):
            add(run, "T", f"Todo {n}")
        (root / "memory" / "todos.md").unlink()
        assert add(run, "T", "After the deletion") == "T-005"
        result = run("check")
        assert result.exit_code == 1
        for n in range(1, 5):
            assert f"T-00{n} is missing: deleted by hand? restore it" in result.stdout
            assert f"memfiles prune T-00{n}" in result.stdout
        assert "T-005" not in result.stdout

    def test_a_mark_typed_too_high_or_for_no_kind_is_one_finding(self, run: Run, root: Path) -> None:
        """`D 1000` typed into ids.txt: one finding naming the range and the mark (it was 999 findings, each
        advising a prune); `Q 2` of no kind: ids-file (it advised `prune Q-001`)."""
        add(run, "D", "One")
        marks = root / "memory" / "ids.txt"
        kept = marks.read_text()
        marks.write_text(kept + "D 1000\n")
        found = json.loads(run("check", "--no-lint", "--json").stdout)["findings"]
        assert [(f["code"], f["id"]) for f in found] == [("missing-id", "D-002")]
        assert "D-002 to D-1000 (999 ids) are missing: if the mark 'D 1000'" in found[0]["message"]
        marks.write_text(kept + "D 6\n")  # five in a row: one finding; four (T-001..T-004 above): one each
        found = json.loads(run("check", "--no-lint", "--json").stdout)["findings"]
        assert [(f["code"], f["id"]) for f in found] == [("missing-id", "D-002")] and "(5 ids)" in found[0]["message"]
        marks.write_text(kept + "Q 2\n")
        found = json.loads(run("check", "--no-lint", "--json").stdout)["findings"]
        assert [f["code"] for f in found] == ["ids-file"] and "Q is not the prefix of any kind" in found[0]["message"]

    def test_a_hand_deleted_entry_is_reported_until_pruned(self, run: Run, root: Path) -> None:
        """An entry cut out of its file by hand is missing-id in check; `prune ID` records it and check is clean."""
        add(run, "D", "Keep me")
        add(run, "D", "Cut me out")
        path = root / "memory" / "decisions.md"
        text = path.read_text()
        path.write_text(text[: text.index("### D-002:")] + text[text.index("## Manual") :])
        assert run("fmt").exit_code == 0
        found = json.loads(run("check", "--json").stdout)["findings"]
        assert [p["message"].split(" ")[0] for p in found] == ["D-002"]
        assert found[0]["path"] == "memory/ids.txt"
        assert run("prune", "D-002", "--reason", "Cut out by hand in review").exit_code == 0
        assert run("check").exit_code == 0
        record = json.loads((root / "memory" / "pruned.jsonl").read_text())
        assert record["id"] == "D-002" and record["path"] is None
        assert add(run, "D", "Next") == "D-003"

    def test_pruning_an_id_never_handed_out_is_refused(self, run: Run) -> None:
        """prune of an id above the mark (never handed out) is 'no entry', not a record."""
        add(run, "D", "Only one")
        result = run("prune", "D-007", "--reason", "r")
        assert result.exit_code == 2 and "no entry D-007" in result.stderr

    def test_bootstrap_from_an_existing_project_keeps_its_gaps_quiet(self, run: Run, root: Path) -> None:
        """A project from before ids.txt with D-001 and D-003: the first write records 2 as never handed out,
        so check does not call D-002 missing; deleting D-003 afterwards is reported."""
        add(run, "D", "One")
        add(run, "D", "Two")
        add(run, "D", "Three")
        (root / "memory" / "ids.txt").unlink()
        run("prune", "D-002", "--reason", "r")
        (root / "memory" / "ids.txt").unlink()
        ledger = root / "memory" / "pruned.jsonl"
        ledger.unlink()  # as if D-002 had been numbered away by hand, long ago
        assert add(run, "F", "First write with marks") == "F-001"
        marks = (root / "memory" / "ids.txt").read_text()
        assert "D 3 never 2\n" in marks and "F 1\n" in marks
        assert run("check").exit_code == 0
        text = (root / "memory" / "decisions.md").read_text()
        (root / "memory" / "decisions.md").write_text(
            text[: text.index("### D-003:")] + text[text.index("## Manual") :]
        )
        run("fmt")
        result = run("check")
        assert "D-003 is missing" in result.stdout and "D-002" not in result.stdout

    def test_a_hand_written_higher_id_raises_the_mark_without_false_alarms(self, run: Run, root: Path) -> None:
        """An entry numbered D-010 by hand: the next add is D-011 and check reports none of D-002..D-009."""
        add(run, "D", "One")
        path = root / "memory" / "decisions.md"
        text = path.read_text()
        start, end = text.index("### D-001: One"), text.index("## Manual")
        path.write_text(text[:end] + text[start:end].replace("### D-001: One", "### D-010: Ten") + text[end:])
        run("fmt")
        assert add(run, "D", "Next") == "D-011"
        assert "D 11 never 2-9" in (root / "memory" / "ids.txt").read_text()
        assert run("check").exit_code == 0
        path.write_text(path.read_text().replace("### D-001: One", "### D-012: One"))  # renumbered by hand
        run("fmt")
        assert "D-001 is missing" in run("check").stdout

    def test_marks_are_written_in_the_same_journaled_batch(self, run: Run, root: Path, monkeypatch) -> None:
        """A crash after the memory file is replaced but before ids.txt is: the next writer finishes the batch
        from the journal, and the mark agrees with the files."""
        import memfiles.store.journal as journal_module

        add(run, "D", "Before")
        real = journal_module.atomic_write

        def crash_on_marks(path: Path, text: str) -> None:
            if path.name == "ids.txt":
                raise Killed("killed")
            real(path, text)

        monkeypatch.setattr(journal_module, "atomic_write", crash_on_marks)
        with pytest.raises(Killed):
            run("add", "-k", "D", "-t", "Interrupted", "-a", "x", "--body", "b")
        assert "D 1\n" in (root / "memory" / "ids.txt").read_text()  # the file is ahead, the mark behind
        monkeypatch.setattr(journal_module, "atomic_write", real)
        assert run("list").exit_code == 0
        assert add(run, "F", "Next writer") == "F-001"  # recovers the journal first
        assert "D 2\n" in (root / "memory" / "ids.txt").read_text()
        assert add(run, "D", "After") == "D-003"


class TestMerge:
    def test_union_lines_and_conflict_markers_take_the_highest(self) -> None:
        """Lines of both sides (a union merge) or a conflict left in: each prefix takes its highest mark, and
        a number is never handed out only when no line says it was; the markers are noted, and a rewrite
        has one line per prefix."""
        text = "D 2\nF 3 never 1\n<<<<<<< HEAD\nD 9 never 5\n=======\nD 8 never 2,5\n>>>>>>> theirs\n"
        marks = parse_marks(text, "memory/ids.txt")
        assert marks.high == {"D": 9, "F": 3}
        assert marks.never == {"D": {5}, "F": {1}}  # 2: `D 2` and `D 9 never 5` say it was handed out
        assert marks.conflicts == [3, 5, 7]
        rendered = render_marks(advance(marks, {"D": {1, 9}}))
        assert rendered.endswith("D 9 never 5\nF 3 never 1\n")  # 3, 4, 6-8 were handed out: not "never"

    def test_a_merge_does_not_hide_an_entry_one_branch_lost(self, run: Run, root: Path) -> None:
        """Branch A gave out D-002 (`D 2`); branch B hand-wrote D-010, and the next add recorded 2-9 as never
        handed out (`D 11 never 2-9`). git's union merge keeps both lines; the never list covered D-002, so
        a merge that lost it passed check. A number some line says was handed out is no longer "never"."""
        add(run, "D", "Base")
        add(run, "D", "Branch A")
        path = root / "memory" / "decisions.md"
        text = path.read_text()
        path.write_text(text[: text.index("### D-002")].rstrip() + "\n")  # the merge kept B's file: D-002 lost
        (root / "memory" / "ids.txt").write_text("D 2\nD 11 never 2-9\n")
        result = run("check")
        assert result.exit_code == 1 and "missing-id D-002" in result.stdout

    def test_a_revert_or_a_stash_does_not_hand_a_number_out_again(self, run: Run, root: Path) -> None:
        """git revert of the commit that added T-002 lowers the versioned ids.txt to `T 1`; the clone's own
        marks (.memfiles/handed.txt, ignored by git) keep the next add at T-003, and ids.txt records 2 as
        never handed out here, so check is clean. Without them a second T-002 came, and code citing the
        first one's id led to the other entry. A stash does the same; with the clone's marks gone, ids.txt
        decides as before."""

        def git(*args: str) -> None:
            subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)

        git("init", "-q", "-b", "main")
        git("config", "user.email", "a@b")
        git("config", "user.name", "A")
        assert add(run, "T", "Write docs") == "T-001"
        git("add", "-A")
        git("commit", "-qm", "one")
        assert add(run, "T", "Drop Python 3.9") == "T-002"
        git("commit", "-qam", "two")
        git("revert", "--no-edit", "HEAD")
        assert (root / "memory" / "ids.txt").read_text().endswith("T 1\n")
        assert add(run, "T", "Add an arm runner") == "T-003"
        assert (root / "memory" / "ids.txt").read_text().endswith("T 3 never 2\n")
        assert run("check", "--no-lint").exit_code == 0
        git("commit", "-qam", "three")
        assert add(run, "T", "Stashed") == "T-004"
        git("stash", "-q")
        assert add(run, "T", "After the stash") == "T-005"
        git("checkout", "--", "memory")
        git("clean", "-fdq", "memory")
        handed = root / ".memfiles" / "handed.txt"
        assert handed.read_text().endswith("T 5\n")
        ignored = subprocess.run(["git", "check-ignore", "-q", str(handed)], cwd=root)
        assert ignored.returncode == 0  # the clone's marks never reach the repository
        handed.unlink()
        assert add(run, "T", "Marks gone") == "T-004"  # ids.txt alone, as before: the stash holds T-004

    def test_the_clones_marks_only_ever_raise_and_unreadable_is_absent(self, tmp_path: Path) -> None:
        from memfiles.store.id_marks import CloneMarks

        marks = CloneMarks(tmp_path / ".memfiles")
        assert marks.read() == {}
        marks.raise_to({"D": 4, "T": 2})
        marks.raise_to({"D": 3, "F": 1})
        assert marks.read() == {"D": 4, "T": 2, "F": 1}
        marks.path.write_bytes(b"\xff\xfe not text")
        assert marks.read() == {}

    def test_a_broken_marks_file_or_ledger_is_named_from_the_root(self, run: Run, root: Path) -> None:
        """A write refused over a broken ids.txt or pruned.jsonl named it by its absolute path."""
        add(run, "D", "Base")
        marks = root / "memory" / "ids.txt"
        good = marks.read_text()
        marks.write_text(good + "garbage line\n")
        error = json.loads(run("add", "-k", "D", "-t", "x", "-a", "a", "--body", "b", "--json").stdout)["error"]
        assert (error["code"], error["path"]) == ("parse", "memory/ids.txt") and str(root) not in error["message"]
        marks.write_text(good)
        (root / "memory" / "pruned.jsonl").write_text("nope\n")
        error = json.loads(run("add", "-k", "D", "-t", "x", "-a", "a", "--body", "b", "--json").stdout)["error"]
        assert (error["path"], error["line"]) == ("memory/pruned.jsonl", 1) and str(root) not in error["message"]

    def test_a_bad_line_names_the_line(self) -> None:
        """A line that is not a mark: ParseError with path and line."""
        from memfiles.errors import ParseError

        with pytest.raises(ParseError, match=re.escape("memory/ids.txt:2: expected 'PREFIX NUMBER")):
            parse_marks("D 3\nD three\n", "memory/ids.txt")

    def test_conflict_markers_are_reported_by_check_and_fixed_by_the_next_write(self, run: Run, root: Path) -> None:
        """A conflicted ids.txt reads (next id above both sides), check reports ids-conflict, a write cleans it."""
        add(run, "D", "Base")
        (root / "memory" / "ids.txt").write_text("<<<<<<< ours\nD 4\n=======\nD 6\n>>>>>>> theirs\n")
        result = run("check")
        assert result.exit_code == 1 and "memory/ids.txt:1: ids-conflict a merge conflict marker" in result.stdout
        assert add(run, "D", "After merge") == "D-007"
        assert "<<<<<<<" not in (root / "memory" / "ids.txt").read_text()

    @pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0, reason="no git")
    def test_a_real_git_merge_of_two_branches(self, tmp_path: Path) -> None:
        """Two branches each add decisions: git merges ids.txt without a conflict (merge=union), the merged
        project hands out an id above both, the two D-002 are refused by set and fixed by renumber."""
        from click.testing import CliRunner

        from memfiles.cli.main import cli

        repo = tmp_path / "repo"
        (repo / "memory").mkdir(parents=True)
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        }

        def git(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env)

        def memfiles(*args: str) -> object:
            return CliRunner().invoke(cli, ["--root", str(repo), *args], catch_exceptions=False)

        git("init", "-q", "-b", "main")
        memfiles("add", "-k", "D", "-t", "Base", "-a", "x", "--body", "b")
        git("add", "-A")
        git("commit", "-qm", "base")
        git("checkout", "-qb", "other")
        memfiles("add", "-k", "D", "-t", "Theirs", "-a", "x", "--body", "b", "--file", "memory/other.md")
        memfiles("add", "-k", "D", "-t", "Theirs too", "-a", "x", "--body", "b", "--file", "memory/other.md")
        git("add", "-A")
        git("commit", "-qm", "other")
        git("checkout", "-q", "main")
        (repo / ".memfiles" / "handed.txt").unlink()  # the other branch was another engineer's clone
        memfiles("add", "-k", "D", "-t", "Ours", "-a", "x", "--body", "b")
        git("add", "-A")
        git("commit", "-qm", "ours")
        merged = git("merge", "-q", "--no-edit", "other")
        assert merged.returncode == 0, merged.stdout + merged.stderr
        assert sorted(parse_marks((repo / "memory" / "ids.txt").read_text(), "x").high.items()) == [("D", 3)]
        refused = memfiles("set", "D-002", "--area", "y")
        assert refused.exit_code == 2
        assert "memory/decisions.md:" in refused.stderr and "memory/other.md:" in refused.stderr
        line = heading_line(repo, "memory/other.md", "Theirs")
        renumbered = memfiles("renumber", "D-002", "--at", f"memory/other.md:{line}", "--json")
        assert renumbered.exit_code == 0, renumbered.output
        assert json.loads(renumbered.stdout)["renumbered"] == {"D-002": "D-004"}
        assert memfiles("check").exit_code == 0
        settings = load_settings(repo)
        assert settings.root == repo.resolve()


class TestAmbiguous:
    @pytest.fixture
    def twice(self, run: Run, root: Path) -> Path:
        """frictions.md with two F-001 entries, made by hand."""
        add(run, "F", "Slow check")
        duplicate(root, "memory/frictions.md", "F-001", "Copied by hand")
        return root / "memory" / "frictions.md"

    @pytest.mark.slow
    def test_backfill_and_status_say_the_index_holds_one_of_them(self, twice: Path, run: Run, root: Path) -> None:
        """The index is by id, so it holds one of the two entries: backfill, backfill --check and status
        said nothing of the other (on disk 1, drift none) and it could not be found. Now they count both
        and name the id with its places; renumber ends it."""
        backfill = run("backfill")
        assert backfill.exit_code == 0
        first = heading_line(root, "memory/frictions.md", "Slow check")
        second = heading_line(root, "memory/frictions.md", "Copied by hand")
        places = [f"memory/frictions.md:{first}", f"memory/frictions.md:{second}"]
        assert f"F-001 is carried by 2 entries ({', '.join(places)}): the index holds only one" in backfill.stderr
        checked = run("backfill", "--check", "--json")
        assert checked.exit_code == 0  # not drift (backfill cannot mend it): check's duplicate-id and renumber do
        drift = json.loads(checked.stdout)
        assert drift["duplicate_ids"] == {"F-001": places} and drift["on_disk"] == 2 and drift["indexed"] == 1
        status = run("status")
        assert status.stdout.startswith(f"root:     {root}\n")  # which project: said in text too, not only --json
        assert (
            "entries:  2 on disk, 1 in the index" in status.stdout
            and "warning:  F-001 is carried by 2" in status.stdout
        )
        assert run("renumber", "F-001", "--at", places[1]).exit_code == 0
        assert run("backfill").exit_code == 0
        assert json.loads(run("backfill", "--check", "--json").stdout)["duplicate_ids"] == {}

    @pytest.mark.parametrize(
        "command",
        [
            ["set", "F-001", "--status", "resolved"],
            ["retire", "F-001", "--reason", "r"],
            ["prune", "F-001", "--reason", "r"],
            ["show", "F-001"],
        ],
    )
    def test_writes_and_show_refuse_naming_both_places(
        self, run: Run, root: Path, twice: Path, command: list[str]
    ) -> None:
        """set, retire, prune and show on an id two entries carry: exit 2, both path:line named, nothing written."""
        before = snapshot(root)
        first = heading_line(root, "memory/frictions.md", "Slow check")
        second = heading_line(root, "memory/frictions.md", "Copied by hand")
        result = run(*command)
        assert result.exit_code == 2
        assert f"memory/frictions.md:{first}" in result.stderr and f"memory/frictions.md:{second}" in result.stderr
        assert "memfiles renumber F-001 --at" in result.stderr
        assert snapshot(root) == before

    def test_one_id_in_two_spellings_is_one_id_twice(self, run: Run, root: Path) -> None:
        """`### F-1:` copied beside `### F-001:`: check says duplicate-id (it said only id-format), writes
        refuse as ambiguous (set acted on F-001 alone), and renumber takes it (it said "not ambiguous")."""
        add(run, "F", "Slow check")
        duplicate(root, "memory/frictions.md", "F-001", "Copied by hand")
        path = root / "memory" / "frictions.md"
        path.write_text(path.read_text().replace("### F-001: Copied by hand", "### F-1: Copied by hand"))
        second = heading_line(root, "memory/frictions.md", "Copied by hand")
        checked = run("check", "--no-lint")
        assert f"memory/frictions.md:{second}: duplicate-id F-1 is used twice" in checked.stdout
        before = snapshot(root)
        for command in (["set", "F-001", "--status", "resolved"], ["prune", "f-1", "--reason", "r"]):
            result = run(*command)
            assert result.exit_code == 2 and "is ambiguous: 2 entries carry it" in result.stderr, result.stderr
        assert snapshot(root) == before
        renumbered = run("renumber", "F-001", "--at", f"memory/frictions.md:{second}")
        assert renumbered.exit_code == 0, renumbered.stderr
        assert "### F-002: Copied by hand" in path.read_text() and "### F-001: Slow check" in path.read_text()
        assert run("check", "--no-lint").exit_code == 0

    def test_an_entry_that_reuses_a_pruned_id_is_renumbered(self, run: Run, root: Path) -> None:
        """An entry written by hand under a pruned id: check names the fix, and renumber takes it (it said
        "not ambiguous", and no command could give the entry a new id)."""
        add(run, "F", "Slow check")
        add(run, "F", "Gone soon")
        assert run("prune", "F-002", "--reason", "r").exit_code == 0
        duplicate(root, "memory/frictions.md", "F-001", "Back by hand")
        path = root / "memory" / "frictions.md"
        path.write_text(path.read_text().replace("### F-001: Back by hand", "### F-2: Back by hand"))
        line = heading_line(root, "memory/frictions.md", "Back by hand")
        checked = run("check", "--no-lint")
        assert "pruned-id-reused F-2 was pruned; its number cannot be reused" in checked.stdout
        assert f"memfiles renumber F-2 --at memory/frictions.md:{line}" in checked.stdout, checked.stdout
        assert run("renumber", "F-2", "--at", f"memory/frictions.md:{line}").exit_code == 0
        assert "### F-003: Back by hand" in path.read_text()
        assert run("check", "--no-lint").exit_code == 0

    def test_show_json_gives_the_ambiguous_error_object(self, run: Run, twice: Path) -> None:
        """show F-001 --json on an ambiguous id: exit 2 and code ambiguous."""
        result = run("show", "F-001", "--json")
        assert result.exit_code == 2 and json.loads(result.stdout)["error"]["code"] == "ambiguous"

    def test_fmt_refuses_and_writes_nothing(self, run: Run, root: Path, twice: Path) -> None:
        """fmt on a project with two F-001 exits 2 and leaves the file as it was."""
        before = twice.read_text()
        result = run("fmt")
        assert result.exit_code == 2 and "F-001 is used twice" in result.stderr
        assert twice.read_text() == before

    def test_an_unrelated_write_leaves_the_hand_edited_file_alone(self, run: Run, root: Path, twice: Path) -> None:
        """Adding a decision does not re-render frictions.md (which would write two index lines to one anchor)."""
        before = twice.read_text()
        add(run, "D", "Elsewhere")
        assert twice.read_text() == before

    def test_renumber_gives_one_a_fresh_id_and_lists_references(self, run: Run, root: Path, twice: Path) -> None:
        """renumber F-001 --at the copy: it becomes F-002; D-001 and code citing F-001 are listed, unchanged."""
        add(run, "D", "Cites it", "--ref", "F-001")
        (root / "src").mkdir()
        (root / "src" / "a.py").write_text("# see @@F-001\n")
        line = heading_line(root, "memory/frictions.md", "Copied by hand")
        result = run("renumber", "F-001", "--at", f"memory/frictions.md:{line}", "--json")
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["renumbered"] == {"F-001": "F-002"}
        assert sorted((e["id"], e["title"]) for e in data["entries"]) == [
            ("F-001", "Slow check"),
            ("F-002", "Copied by hand"),
        ]
        assert any("D-001 refers to F-001" in w for w in data["warnings"])
        assert any(w.startswith("src/a.py:1: @@F-001") for w in data["warnings"])
        decision = parse((root / "memory" / "decisions.md").read_text()).entries[0]
        assert decision.refs == ("F-001",)
        assert run("check").exit_code == 0
        assert "F-002" in (root / "memory" / "ids.txt").read_text().replace("F 2", "F-002")

    def test_follow_moves_the_named_entries_references(self, run: Run, root: Path, twice: Path) -> None:
        """--follow D-001: its refs and body mentions of F-001 (and @@F-001) now say F-002; D-002's do not."""
        run("add", "-k", "D", "-t", "Follows", "-a", "x", "--ref", "F-001", "--body", "See F-001 and @@F-001.")
        run("add", "-k", "D", "-t", "Stays", "-a", "x", "--ref", "F-001", "--body", "See F-001.")
        line = heading_line(root, "memory/frictions.md", "Copied by hand")
        result = run("renumber", "F-001", "--at", f"memory/frictions.md:{line}", "--follow", "D-001")
        assert result.exit_code == 0, result.output
        follows, stays = parse((root / "memory" / "decisions.md").read_text()).entries
        assert follows.refs == ("F-002",) and follows.body == "See F-002 and @@F-002."
        assert stays.refs == ("F-001",) and stays.body == "See F-001."
        assert "D-002 refers to F-001" in result.stderr and "D-001 refers" not in result.stderr

    @pytest.mark.parametrize(
        "args, words",
        [
            (["F-001", "--at", "memory/frictions.md"], "holds F-001 2 times"),
            (["F-001", "--at", "memory/frictions.md:2"], "no entry F-001 at memory/frictions.md:2"),
            (["F-001", "--at", "memory/nowhere.md:3"], "memory/nowhere.md is not a memory file"),
            (["F-001", "--at", "frictions"], "is not a place (PATH or PATH:LINE"),
            (["F-001", "--at", "memory/frictions.md:16", "--follow", "D-404"], "follow: no entry D-404"),
        ],
    )
    def test_renumber_refuses_what_it_cannot_place(
        self, run: Run, root: Path, twice: Path, args: list[str], words: str
    ) -> None:
        """A file holding both without a line, a line with neither, another file, a bad place, an unknown
        follower: exit 2 with the reason, nothing written."""
        before = snapshot(root)
        result = run("renumber", *args)
        assert result.exit_code == 2 and words in result.stderr, result.stderr
        assert snapshot(root) == before

    def test_renumber_refuses_an_id_one_entry_carries(self, run: Run, root: Path) -> None:
        """Ids are stable: renumber of an id that is not ambiguous is refused."""
        add(run, "D", "Alone")
        result = run("renumber", "D-001", "--at", "memory/decisions.md")
        assert result.exit_code == 2 and "D-001 is not ambiguous" in result.stderr


class TestSuccessors:
    def test_retiring_again_keeps_the_successor(self, run: Run, root: Path) -> None:
        """retire D-001 --reason again, without --successor: the successor stays and the reason changes."""
        add(run, "D", "Old")
        add(run, "D", "New")
        run("retire", "D-001", "--successor", "D-002", "--reason", "Replaced")
        assert run("retire", "D-001", "--reason", "Replaced by the new design").exit_code == 0
        entry = parse((root / "memory" / "decisions.md").read_text()).entries[0]
        assert (entry.status, entry.successor, entry.reason) == ("retired", "D-002", "Replaced by the new design")

    def test_a_successor_cycle_is_refused(self, run: Run, root: Path) -> None:
        """D-001 -> D-002, then D-002 -> D-001: exit 2 naming the cycle, nothing written."""
        add(run, "D", "One")
        add(run, "D", "Two")
        run("retire", "D-001", "--successor", "D-002", "--reason", "r")
        before = snapshot(root)
        result = run("retire", "D-002", "--successor", "D-001", "--reason", "r")
        assert result.exit_code == 2 and "D-002 -> D-001 -> D-002 would be a cycle" in result.stderr
        assert snapshot(root) == before

    def test_a_cycle_within_one_batch_is_refused(self, run: Run, root: Path) -> None:
        """Two retire ops of one import that close a loop: the second is refused by position."""
        add(run, "D", "One")
        add(run, "D", "Two")
        ops = [
            {"op": "retire", "id": "D-001", "successor": "D-002", "reason": "r"},
            {"op": "retire", "id": "D-002", "successor": "D-001", "reason": "r"},
        ]
        (root / "b.json").write_text(json.dumps({"ops": ops}))
        result = run("import", str(root / "b.json"))
        assert result.exit_code == 2 and "op 2: successor: D-002 -> D-001 -> D-002" in result.stderr

    def test_check_and_audit_report_a_hand_made_cycle(self, run: Run, root: Path) -> None:
        """A cycle written by hand: check and audit report successor-cycle at the first entry."""
        add(run, "D", "One")
        add(run, "D", "Two")
        run("retire", "D-001", "--successor", "D-002", "--reason", "r")
        run("retire", "D-002", "--reason", "r")
        path = root / "memory" / "decisions.md"
        text = path.read_text()
        at = text.index("### D-002:")
        path.write_text(
            text[:at] + text[at:].replace("- status: retired\n", "- status: retired\n- successor: D-001\n", 1)
        )
        check = run("check")
        assert check.exit_code == 1 and "D-001 -> D-002 -> D-001: the successors go round" in check.stdout
        audit = run("audit", "--json")
        assert audit.exit_code == 1
        assert [f["code"] for f in json.loads(audit.stdout)["findings"]].count("successor-cycle") == 1


class TestRefs:
    def test_audit_reads_an_id_in_any_spelling(self, run: Run) -> None:
        """`D-1` and `D-0001` in a body are D-001, as refs reads them: audit called both dangling. A
        missing one is named as written, its target in the canonical spelling."""
        add(run, "D", "One")
        run("add", "-k", "F", "-t", "Friction", "-a", "a", "--body", "See D-1 and D-0001, and D-9.")
        result = run("audit", "--json")
        dangling = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "dangling-ref"]
        assert [(f["message"], f["target"]["id"]) for f in dangling] == [
            ("F-001 refers to D-9, which does not exist", "D-009")
        ]

    def test_audit_names_a_hand_written_ref_in_lower_case(self, run: Run, root: Path) -> None:
        """`- refs: d-9` typed by hand (check: bad-ref) is a dangling ref to D-009 for audit, not a traceback."""
        add(run, "D", "One")
        path = root / "memory" / "decisions.md"
        path.write_text(path.read_text().replace("- status: proposed\n", "- status: proposed\n- refs: d-9\n", 1))
        result = run("audit", "--json")
        assert result.exit_code == 1
        dangling = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "dangling-ref"]
        assert [f["target"]["id"] for f in dangling] == ["D-009"]

    def test_a_ref_to_a_missing_id_is_refused(self, run: Run, root: Path) -> None:
        """add --ref D-099 (a typo): exit 2 naming the id and --allow-dangling, nothing written."""
        result = run("add", "-k", "F", "-t", "t", "-a", "a", "--body", "b", "--ref", "D-099")
        assert result.exit_code == 2
        assert "refs: no entry D-099" in result.stderr and "--allow-dangling" in result.stderr
        assert snapshot(root) == {}

    def test_allow_dangling_keeps_it_with_a_warning(self, run: Run) -> None:
        """--allow-dangling: written, and the warning is in the JSON write object."""
        result = run(
            "add", "-k", "F", "-t", "t", "-a", "a", "--body", "b", "--ref", "D-099", "--allow-dangling", "--json"
        )
        assert result.exit_code == 0
        assert any("no entry D-099" in w for w in json.loads(result.stdout)["warnings"])

    def test_a_ref_to_a_retired_id_warns_naming_the_successor(self, run: Run) -> None:
        """--ref to retired D-001 whose successor is D-002: kept, and the warning names D-002."""
        add(run, "D", "Old")
        add(run, "D", "New")
        run("retire", "D-001", "--successor", "D-002", "--reason", "r")
        result = run("add", "-k", "F", "-t", "t", "-a", "a", "--body", "b", "--ref", "D-001")
        assert result.exit_code == 0
        assert "D-001, which is retired; its successor is D-002" in result.stderr

    def test_set_ref_is_checked_the_same_way(self, run: Run, root: Path) -> None:
        """set --ref to a missing id is refused; to a pruned one the message says it was pruned."""
        add(run, "D", "One")
        add(run, "D", "Two")
        run("prune", "D-002", "--reason", "Duplicate")
        result = run("set", "D-001", "--ref", "D-002")
        assert result.exit_code == 2 and "refs: no entry D-002 (it was pruned: Duplicate)" in result.stderr

    def test_import_refs_may_name_an_entry_a_later_op_adds(self, run: Run, root: Path) -> None:
        """refs are checked once the whole batch is applied: a ref to an id added later in the batch is fine,
        one to a missing id is refused by position and field."""
        ok = [
            {"op": "add", "kind": "F", "title": "Cites", "area": "a", "body": "b", "refs": ["D-001"]},
            {"op": "add", "kind": "D", "title": "Cited", "area": "a", "body": "b"},
        ]
        (root / "ok.json").write_text(json.dumps({"ops": ok}))
        assert run("import", str(root / "ok.json")).exit_code == 0
        bad = [{"op": "update", "id": "F-001", "refs": ["D-001", "D-404"]}]
        (root / "bad.json").write_text(json.dumps({"ops": bad}))
        result = run("import", str(root / "bad.json"), "--json")
        assert result.exit_code == 2
        error = json.loads(result.stdout)["error"]
        assert (error["code"], error["op"], error["field"]) == ("op", 1, "refs")
