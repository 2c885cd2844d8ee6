"""The read side on real, broken input: list, show, audit and refs work on the files that parse and name
the ones that do not; ids as people type them; filters; pruned entries; the editor of `show --open`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memfiles.config import load_settings
from memfiles.store.project import Project
from tests.conftest import Run, snapshot

ENTRY = "### {id}: {title}\n\n- date: 2026-01-0{day}\n- area: a\n- status: active\n\n{body}\n"


def _lessons_with_bad_byte(root: Path) -> Path:
    """memory/lessons.md: three good entries, and a latin-1 byte on line 18 (in L-002's body)."""
    text = "# Lessons\n\n" + "\n".join(
        ENTRY.format(id=f"L-00{n}", title=f"Lesson {n}", day=n, body=f"Body {n}.\nMore of {n}.") for n in (1, 2, 3)
    )
    lines = text.split("\n")
    assert lines[17] == "Body 2."  # line 18
    lines[17] = "Body 2 says caf\xe9."
    path = root / "memory" / "lessons.md"
    path.write_bytes("\n".join(lines).encode("latin-1"))
    return path


@pytest.fixture
def two_files(run: Run, root: Path) -> Run:
    """A project with good entries in decisions.md and frictions.md, written through the CLI."""
    run("add", "-k", "D", "-t", "Good decision", "-a", "format", "--body", "b")
    run("add", "-k", "F", "-t", "Good friction", "-a", "index", "--body", "b")
    return run


class TestBrokenFiles:
    def test_list_names_a_non_utf8_file_at_its_real_line_and_lists_the_rest(self, two_files: Run, root: Path) -> None:
        """A latin-1 byte on line 18: list exits 0 with the other entries, a warning names line 18 and the byte."""
        _lessons_with_bad_byte(root)
        result = two_files("list")
        assert result.exit_code == 0
        assert [line.split()[0] for line in result.stdout.splitlines()] == ["D-001", "F-001"]
        assert result.stderr == (
            "memfiles: warning: memory/lessons.md:18: not UTF-8 text: byte 0xe9 at column 16"
            " (invalid continuation byte); save the file as UTF-8 (skipped)\n"
        )
        output = json.loads(two_files("list", "--json").stdout)
        assert [entry["id"] for entry in output["entries"]] == ["D-001", "F-001"]
        assert [(s["code"], s["severity"], s["path"], s["line"]) for s in output["skipped"]] == [
            ("unparseable", "error", "memory/lessons.md", 18)
        ]

    def test_audit_and_show_survive_a_non_utf8_file(self, two_files: Run, root: Path) -> None:
        """audit audits the rest and exits 1 for the skipped file; show of another id works; show of an id in
        the broken file refuses, naming file and line."""
        _lessons_with_bad_byte(root)
        audit = two_files("audit", "--json")
        assert audit.exit_code == 1
        assert json.loads(audit.stdout)["findings"] == []
        assert json.loads(audit.stdout)["skipped"][0]["line"] == 18
        shown = two_files("show", "F-001")
        assert shown.exit_code == 0 and shown.stdout.startswith("memory/frictions.md:8\n")
        assert "memory/lessons.md:18" in shown.stderr
        refused = two_files("show", "L-001")
        assert refused.exit_code == 2
        assert refused.stderr == (
            "memfiles: memory/lessons.md:18: L-001 is in this file, which does not parse: not UTF-8 text:"
            " byte 0xe9 at column 16 (invalid continuation byte); save the file as UTF-8\n"
        )

    def test_unparseable_file_does_not_stop_list_show_audit(self, two_files: Run, root: Path) -> None:
        """An entry without metadata: list, show and audit work on the others and name memory/todos.md:5."""
        (root / "memory" / "todos.md").write_text("# Todos\n\n### T-001: No metadata\n\nJust text.\n")
        for args, code in ((("list",), 0), (("show", "D-001"), 0), (("audit",), 1)):
            result = two_files(*args)
            assert result.exit_code == code, args
            assert "memfiles: warning: memory/todos.md:5: T-001 has no metadata" in result.stderr
            assert "Traceback" not in result.output
        assert "Good friction" in two_files("list").stdout

    def test_writes_still_refuse_a_broken_file(self, two_files: Run, root: Path) -> None:
        """add refuses (exit 2, file and real line) while a memory file is not UTF-8, and writes nothing."""
        _lessons_with_bad_byte(root)
        before = snapshot(root)
        result = two_files("add", "-k", "D", "-t", "t", "-a", "a", "--body", "b")
        assert result.exit_code == 2
        assert "memory/lessons.md:18: not UTF-8 text" in result.stderr and "Traceback" not in result.output
        assert snapshot(root) == before

    def test_non_utf8_markdown_that_is_not_a_memory_file_is_ignored(self, two_files: Run, root: Path) -> None:
        """A latin-1 README in memory/ with no entries is not a memory file: no warning, nothing skipped."""
        (root / "memory" / "README.md").write_bytes("# Notes, caf\xe9\n".encode("latin-1"))
        result = two_files("list", "--json")
        assert result.stderr == "" and json.loads(result.stdout)["skipped"] == []

    def test_broken_pruned_ledger_is_skipped_by_reads(self, two_files: Run, root: Path) -> None:
        """A mangled memory/pruned.jsonl is named with its line; list still lists, audit audits and exits 1."""
        (root / "memory" / "pruned.jsonl").write_text('{"id": "T-009", "reason": "r"}\n{broken\n')
        listed = two_files("list", "--json")
        assert listed.exit_code == 0 and len(json.loads(listed.stdout)["entries"]) == 2
        skipped = json.loads(listed.stdout)["skipped"]
        assert [(s["path"], s["line"]) for s in skipped] == [("memory/pruned.jsonl", 2)]
        assert two_files("audit").exit_code == 1

    def test_load_all_keeps_its_old_shape(self, two_files: Run, root: Path) -> None:
        """Project.load_all() unpacks as (files, problems) and knows the ids that stand in broken files."""
        (root / "memory" / "todos.md").write_text("# Todos\n\n### T-004: No metadata\n\nJust text.\n")
        loaded = Project(load_settings(root)).load_all()
        files, problems = loaded
        assert sorted(f.rel for f in files) == ["memory/decisions.md", "memory/frictions.md"]
        assert [(p.path, p.line) for p in problems] == [("memory/todos.md", 5)]
        assert loaded.unreadable_ids == {"T-004": "memory/todos.md"}
        assert [located.entry.id for located in loaded.entries()] == ["D-001", "F-001"]


class TestListFilters:
    @pytest.fixture
    def mixed(self, run: Run) -> Run:
        run("add", "-k", "D", "-t", "Decided", "-a", "format", "--body", "b")
        run("add", "-k", "F", "-t", "Rough edge", "-a", "index", "--body", "b")
        run("add", "-k", "T", "-t", "To do", "-a", "format", "--body", "b")
        run("add", "-k", "T", "-t", "Done thing", "-a", "Index", "--body", "b", "--status", "done")
        return run

    def _ids(self, run: Run, *args: str) -> list[str]:
        result = run("list", *args, "--json")
        assert result.exit_code == 0, result.stderr
        return [entry["id"] for entry in json.loads(result.stdout)["entries"]]

    def test_repeated_filter_is_any_of_and_filters_combine(self, mixed: Run) -> None:
        """--kind F --kind todo matches either kind; with --area format only entries that pass both."""
        assert self._ids(mixed, "--kind", "F", "--kind", "todo") == ["F-001", "T-001", "T-002"]
        assert self._ids(mixed, "--kind", "F", "--kind", "todo", "--area", "format") == ["T-001"]
        assert self._ids(mixed, "--status", "open", "--status", "done", "--area", "index") == ["F-001", "T-002"]

    def test_kind_status_and_area_ignore_case(self, mixed: Run) -> None:
        """--kind Friction, --kind t, --status OPEN and --area INDEX match as if written in lower case."""
        assert self._ids(mixed, "--kind", "Friction") == ["F-001"]
        assert self._ids(mixed, "--kind", "t", "--status", "OPEN") == ["T-001"]
        assert self._ids(mixed, "--area", "INDEX") == ["F-001", "T-002"]

    def test_unknown_kind_or_status_is_refused(self, mixed: Run) -> None:
        """--kind nonsense and --status opne exit 2 naming the known values, and print no list."""
        result = mixed("list", "--kind", "nonsense")
        assert result.exit_code == 2 and result.stdout == ""
        assert "unknown kind 'nonsense' (known: decision (D), friction (F)" in result.stderr
        result = mixed("list", "--kind", "F", "--kind", "nonsense")
        assert result.exit_code == 2
        result = mixed("list", "--status", "opne", "--json")
        assert result.exit_code == 2 and "unknown status 'opne'" in result.stderr
        assert json.loads(result.stdout)["error"]["code"] == "usage"

    def test_list_body_prints_each_entry_whole(self, mixed: Run) -> None:
        """list --body without --json prints each entry as show does, separated by a blank line."""
        result = mixed("list", "--body", "--kind", "todo")
        assert result.exit_code == 0
        blocks = result.stdout.split("\n\n" + "memory/")
        assert len(blocks) == 2 and blocks[0].startswith("memory/todos.md:11\n### T-001: To do\n")


class TestShow:
    @pytest.fixture
    def shown(self, run: Run) -> Run:
        run("add", "-k", "D", "-t", "First", "-a", "format", "--body", "b")
        run("add", "-k", "D", "-t", "Second", "-a", "format", "--body", "The second body.")
        return run

    @pytest.mark.parametrize("typed", ["D-002", "d-002", "@@D-002", "@@d-002", " D-2 ", "D-0002"])
    def test_id_is_read_as_people_type_it(self, shown: Run, typed: str) -> None:
        """Case, a leading @@ and leading zeros do not matter."""
        result = shown("show", typed, "--json")
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["entry"]["id"] == "D-002"

    def test_not_an_id_is_refused(self, shown: Run) -> None:
        """A word that is not an id exits 2 saying what an id looks like."""
        result = shown("show", "second")
        assert result.exit_code == 2
        assert result.stderr == "memfiles: 'second' is not an id (PREFIX-NUMBER, like D-476)\n"

    def test_pruned_id_shows_the_entry_as_it_was(self, shown: Run) -> None:
        """show of a pruned id prints its ledger line, date, reason and text; JSON sets `pruned`."""
        assert shown("prune", "D-002", "--reason", "said twice").exit_code == 0
        result = shown("show", "d-2")
        assert result.exit_code == 0
        first, *rest = result.stdout.splitlines()
        assert first.startswith("memory/pruned.jsonl:1: D-002 was pruned on ")
        assert first.endswith(": said twice; from memory/decisions.md (was: Second)")
        assert rest[0] == "### D-002: Second" and "The second body." in rest
        entry = json.loads(shown("show", "D-002", "--json").stdout)["entry"]
        assert entry["pruned"]["reason"] == "said twice" and entry["body"] == "The second body."
        assert (entry["path"], entry["line"], entry["title"]) == ("memory/decisions.md", None, "Second")
        refused = shown("show", "D-002", "--open")
        assert refused.exit_code == 2 and "D-002 was pruned; it lives only in memory/pruned.jsonl" in refused.stderr

    def test_a_pruned_id_deleted_by_hand_first_says_so(self, shown: Run, root: Path) -> None:
        """prune of an id deleted by hand records only the id: show, show --json and audit say so, with no
        'None', no empty title and a date of the contract's form (they printed 'from None', '(was: )')."""
        from tests.contract_shapes import check_command

        path = root / "memory" / "decisions.md"
        text = path.read_text()
        path.write_text(text[: text.index("### D-002")] + text[text.index("## Manual") :])
        assert shown("prune", "D-2", "--reason", "deleted by hand").exit_code == 0
        said = shown("show", "D-002").stdout
        assert "deleted by hand before its prune was recorded" in said and "None" not in said
        shown_json = json.loads(shown("show", "D-002", "--json").stdout)
        check_command("show", shown_json)
        assert shown_json["entry"]["title"] == "(deleted by hand)"
        audit = shown("audit").stdout
        assert "D-002 pruned on" in audit and "None" not in audit and "(was: )" not in audit

    def test_a_pruned_entry_of_a_configured_kind_shows_as_it_was(self, run: Run, root: Path) -> None:
        """A kind of the project's own (R): its pruned text is read with the project's kinds, so show --json
        gives its own date, area, status and body (they were empty, or the prune's date)."""
        (root / "memory" / "memfiles.toml").write_text(
            '[kinds.risk]\nprefix = "R"\nstatuses = ["open", "mitigated"]\nfile = "risks.md"\n'
        )
        run("add", "-k", "risk", "-t", "Lock-in", "-a", "infra", "--body", "No export.", "--date", "2020-01-02")
        assert run("prune", "R-1", "--reason", "gone").exit_code == 0
        entry = json.loads(run("show", "R-001", "--json").stdout)["entry"]
        assert (entry["date"], entry["area"], entry["status"], entry["body"]) == (
            "2020-01-02",
            "infra",
            "open",
            "No export.",
        )

    def test_ambiguous_id_is_refused_with_both_places(self, shown: Run, root: Path) -> None:
        """Two entries with one id (a merge): show names both places instead of picking the first."""
        (root / "pkg" / "memory").mkdir(parents=True)
        (root / "pkg" / "memory" / "decisions.md").write_text(
            "# Decisions\n\n" + ENTRY.format(id="D-002", title="Other", day=1, body="b")
        )
        result = shown("show", "D-002")
        assert result.exit_code == 2
        assert "D-002 is ambiguous: 2 entries carry it (memory/decisions.md:17, pkg/memory/decisions.md:3)" in (
            result.stderr
        )


class TestShowOpen:
    @pytest.fixture
    def one(self, run: Run, monkeypatch) -> Run:
        monkeypatch.delenv("VISUAL", raising=False)
        monkeypatch.delenv("EDITOR", raising=False)
        run("add", "-k", "D", "-t", "First", "-a", "format", "--body", "b")
        return run

    def test_editor_not_installed(self, one: Run, monkeypatch) -> None:
        """$EDITOR naming no installed program: exit 2 naming it, no traceback."""
        monkeypatch.setenv("EDITOR", "no-such-editor-xyz")
        result = one("show", "D-001", "--open")
        assert result.exit_code == 2
        assert result.stderr == (
            "memfiles: cannot start the editor $EDITOR ('no-such-editor-xyz'): No such file or directory\n"
        )

    def test_visual_that_is_not_a_command(self, one: Run, monkeypatch) -> None:
        """$VISUAL with an unclosed quote wins over $EDITOR and is refused as a command line."""
        monkeypatch.setenv("VISUAL", '"vim')
        monkeypatch.setenv("EDITOR", "true")
        result = one("show", "D-001", "--open")
        assert result.exit_code == 2
        assert "cannot read $VISUAL ('\"vim') as a command: No closing quotation" in result.stderr

    def test_editor_that_fails(self, one: Run, monkeypatch) -> None:
        """An editor that exits non-zero: exit 2 with its status (not 1, which means "the answer is no")."""
        monkeypatch.setenv("EDITOR", "false")
        result = one("show", "D-001", "--open")
        assert result.exit_code == 2 and "the editor $EDITOR ('false') exited with status 1" in result.stderr

    def test_no_editor_set_and_no_vi(self, one: Run, monkeypatch, tmp_path: Path) -> None:
        """Neither variable set, on a terminal, and no vi on PATH: the message says so."""
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
        monkeypatch.setattr("memfiles.cli.reads.on_terminal", lambda: True)
        result = one("show", "D-001", "--open")
        assert result.exit_code == 2
        assert "cannot start the editor vi (neither $VISUAL nor $EDITOR is set)" in result.stderr

    def test_no_editor_set_and_no_terminal_starts_nothing(self, one: Run, tmp_path: Path) -> None:
        """Neither variable set and no terminal (an agent's call): exit 2 naming the entry's place; vi is
        not started (a vi on PATH that ran would leave a mark)."""
        marker = tmp_path / "vi-ran"
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        (bin_dir / "vi").write_text(f"#!/bin/sh\ntouch {marker}\n")
        (bin_dir / "vi").chmod(0o755)
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        env.pop("VISUAL", None)
        env.pop("EDITOR", None)
        root = tmp_path  # the `one` fixture's project
        done = subprocess.run(
            [sys.executable, "-m", "memfiles.cli", "--root", str(root), "show", "D-001", "--open"],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env=env,
        )
        assert done.returncode == 2, done.stderr
        assert "neither $VISUAL nor $EDITOR is set and there is no terminal" in done.stderr
        assert "memory/decisions.md:8" in done.stderr and not marker.exists()

    def test_open_with_json_is_a_usage_error(self, one: Run, monkeypatch) -> None:
        """--open --json is refused before any editor starts, with the error object."""
        monkeypatch.setenv("EDITOR", "false")
        result = one("show", "D-001", "--open", "--json")
        assert result.exit_code == 2 and json.loads(result.stdout)["error"]["code"] == "usage"
