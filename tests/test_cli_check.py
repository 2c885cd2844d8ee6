"""check, fmt, audit, refs, show and list through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from memfiles import parse
from memfiles.config import load_settings
from memfiles.services.upkeep.check import text_findings
from memfiles.store.project import Project
from tests.conftest import DATA, REPO, Run, snapshot


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


class TestCheck:
    def test_clean_project_passes(self, run: Run, root: Path) -> None:
        """A project written only through the CLI has no problems."""
        run("add", "-k", "D", "-t", "t", "-a", "a", "--body", "b")
        result = run("check")
        assert result.exit_code == 0 and result.stdout == ""

    def test_findings_are_reported_as_path_line_code_message(self, run: Run, root: Path) -> None:
        """Bad date, unknown status, unknown prefix, duplicate id, stale index: each at its line (a bad date or
        status at its metadata line, where it was the heading's), exit 1."""
        text = (DATA / "canonical.md").read_text()
        text = text.replace("- date: 2026-10-02", "- date: 2026-13-02").replace("status: open", "status: opne")
        _write(root, "memory/knowledge.md", text)
        _write(
            root,
            "pkg/memory/notes.md",
            "# Notes\n\n### F-014: Again\n\n- date: 2026-01-01\n- area: a\n- status: open\n\nBody.\n"
            "\n### X-001: Unknown\n\n- date: 2026-01-01\n- area: a\n- status: open\n\nBody.\n",
        )
        result = run("check")
        assert result.exit_code == 1
        lines = result.stdout.splitlines()
        assert "memory/knowledge.md:19: bad-date F-014: date '2026-13-02' is not a date (YYYY-MM-DD)" in lines
        assert (
            "memory/knowledge.md:21: bad-status F-014: status 'opne' is not one of open, resolved, wontfix, retired"
            in lines
        )
        assert "pkg/memory/notes.md:3: duplicate-id F-014 is used twice; also at memory/knowledge.md:17" in lines
        assert any(line.startswith("pkg/memory/notes.md:11: unknown-prefix X-001 is not read") for line in lines)
        assert "pkg/memory/notes.md:3: stale-index the generated index is missing or stale: run fmt" in lines

    def test_json_prints_files_and_finding_objects(self, run: Run, root: Path) -> None:
        """check --json: {"files", "findings"}; each finding has the contract's keys, a code and a severity."""
        run("add", "-k", "D", "-t", "t", "-a", "a", "--body", "b")
        run("add", "-k", "D", "-t", "u", "-a", "a", "--body", "c")
        path = root / "memory" / "decisions.md"
        text = path.read_text().replace("### D-002:", "### D-001:")
        path.write_text(text)
        first, second = (n for n, line in enumerate(text.split("\n"), start=1) if line.startswith("### D-001:"))
        result = run("check", "--json")
        assert result.exit_code == 1
        data = json.loads(result.stdout)
        assert data["files"] == 1 and set(data) == {"files", "findings"}
        duplicate = next(f for f in data["findings"] if f["code"] == "duplicate-id")
        assert set(duplicate) == {"code", "severity", "id", "path", "line", "message", "target", "detail"}
        assert duplicate["severity"] == "error" and duplicate["id"] == "D-001" and duplicate["line"] == second
        assert duplicate["target"] == {
            "type": "entry",
            "id": "D-001",
            "title": "t",
            "status": "proposed",  # as refs and audit give it (it was null here alone)
            "path": "memory/decisions.md",
            "line": first,
        }
        assert json.loads(run("check", "--json").stdout)["findings"][0]["path"] == "memory/decisions.md"

    def test_every_finding_code_is_documented(self) -> None:
        """Each code check can emit has a row in docs/json.md's Finding codes table, with its severity."""
        from memfiles.contract import FINDING_CODES

        doc = (REPO / "docs" / "json.md").read_text(encoding="utf-8")
        for code, severity in FINDING_CODES.items():
            assert f"| `{code}` | {severity} |" in doc, code

    def test_refs_naming_the_entry_itself_or_one_id_twice_are_bad_refs(self, run: Run, root: Path) -> None:
        """What `set --ref` refuses or merges, written by hand: a ref to the entry itself, and one id in two
        spellings; check names each (it passed them)."""
        for title in ("One", "Two"):
            assert run("add", "-k", "decision", "-t", title, "-a", "a", "--body", "B.").exit_code == 0
        path = root / "memory" / "decisions.md"
        text = path.read_text().replace(
            "### D-002: Two\n\n- date:", "### D-002: Two\n\n- refs: D-002, D-001, D-1\n- date:"
        )
        path.write_text(text)
        assert run("fmt").exit_code == 0
        messages = [f["message"] for f in json.loads(run("check", "--json").stdout)["findings"]]
        assert messages == ["D-002: refs names D-001 twice (D-1)", "D-002: refs names D-002, the entry itself"]

    def test_malformed_file_is_named_with_its_line(self, run: Run, root: Path) -> None:
        """An entry without metadata is a parse error at its line; check exits 1, add refuses with exit 2."""
        _write(root, "memory/decisions.md", "# Decisions\n\n### D-001: No metadata\n\nJust text.\n")
        before = snapshot(root)
        result = run("check")
        assert result.exit_code == 1
        assert "memory/decisions.md:5: parse-error D-001 has no metadata" in result.stdout
        add = run("add", "-k", "D", "-t", "t", "-a", "a", "--body", "b")
        assert add.exit_code == 2 and "memory/decisions.md:5" in add.stderr
        assert snapshot(root) == before

    def test_every_problem_of_a_broken_file_is_reported_and_its_ids_still_count(self, run: Run, root: Path) -> None:
        """check named only a broken file's first problem, which hid the others and any id it shares with
        another file until that one was fixed. It now names every entry's problem, and the entries that
        parse still meet the other files' (duplicate-id); the write path still refuses the file whole."""
        run("add", "-k", "F", "-t", "Slow CI", "-a", "ci", "--body", "CI takes 20 minutes.")
        _write(
            root,
            "memory/decisions.md",
            "# Decisions\n\n### D-001: Cased key\n- date: 2026-12-02\n- Area: x\n- status: accepted\n\nBody.\n\n"
            "### D-002 no colon\n- date: 2026-12-02\n- colour: red\n\n"
            "### D-003: Unknown key\n- date: 2026-12-02\n- area: x\n- status: accepted\n- colour: red\n\nBody.\n\n"
            "### F-001: The friction's id again\n- date: 2026-12-02\n- area: x\n- status: open\n\nBody.\n\n"
            "### D-004: No status\n- date: 2026-12-02\n- area: x\n\nBody.\n",
        )
        before = snapshot(root)
        result = run("check", "--json")
        assert result.exit_code == 1
        found = [(f["code"], f["path"], f["line"]) for f in json.loads(result.stdout)["findings"]]
        assert found == [
            ("parse-error", "memory/decisions.md", 5),  # - Area:
            ("parse-error", "memory/decisions.md", 10),  # the broken heading (its metadata is not named again)
            ("parse-error", "memory/decisions.md", 18),  # colour
            ("duplicate-id", "memory/decisions.md", 22),
            ("parse-error", "memory/decisions.md", 29),  # D-004 lacks status
        ]
        add = run("add", "-k", "D", "-t", "t", "-a", "a", "--body", "b")
        assert add.exit_code == 2 and "memory/decisions.md:5" in add.stderr
        assert snapshot(root) == before
        # the editor's diagnostics (the language server's text_findings) say the same of the text as typed
        project = Project(load_settings(root))
        friction = project.load_file(root / "memory" / "frictions.md")
        assert friction is not None
        text = (root / "memory" / "decisions.md").read_text()
        typed = text_findings(project, "memory/decisions.md", text, [(friction.rel, friction.memory)], set())
        assert [(f.code, f.line) for f in typed] == [(code, line) for code, _, line in found]
        # and a file that parses is told of its id used in another file (it never was: the other file's
        # copy was the one named, and only the typed file's findings are shown)
        twin = parse("# D\n\n### F-001: Again\n- date: 2026-12-02\n- area: x\n- status: open\n\nBody.\n")
        typed = text_findings(project, friction.rel, friction.text, [("memory/other.md", twin)], set())
        assert [(f.code, f.line, f.target["path"]) for f in typed] == [("duplicate-id", 8, "memory/other.md")]

    def test_an_index_whose_start_marker_was_deleted_is_a_parse_error(self, run: Run, root: Path) -> None:
        """The generated index's start marker deleted by hand: its end marker now closes nothing. check
        names the line (exit 1) and add refuses (exit 2) rather than writing a new index below the stale
        one, which then stayed in the file for good."""
        run("add", "-k", "D", "-t", "A decision", "-a", "a", "--body", "b")
        path = root / "memory" / "decisions.md"
        lines = path.read_text().splitlines(keepends=True)
        path.write_text("".join(line for line in lines if "memfiles:index:start" not in line))
        end_line = next(n for n, line in enumerate(path.read_text().splitlines(), 1) if "memfiles:index:end" in line)
        before = snapshot(root)
        result = run("check")
        assert result.exit_code == 1
        assert (
            f"memory/decisions.md:{end_line}: parse-error <!-- memfiles:index:end --> closes no generated index"
            in result.stdout
        )
        add = run("add", "-k", "D", "-t", "Another", "-a", "a", "--body", "b")
        assert add.exit_code == 2 and f"memory/decisions.md:{end_line}" in add.stderr
        assert snapshot(root) == before

    def test_entry_heading_in_manual_is_reported(self, run: Run, root: Path) -> None:
        """An entry heading typed into the Manual section is not an entry; check says where."""
        run("add", "-k", "D", "-t", "t", "-a", "a", "--body", "b")
        path = root / "memory" / "decisions.md"
        path.write_text(path.read_text() + "\n### D-002: Typed here by hand\n")
        result = run("check")
        assert result.exit_code == 1 and "entry-in-manual an entry heading inside ## Manual" in result.stdout

    def test_non_memory_markdown_is_ignored(self, run: Run, root: Path) -> None:
        """A README in memory/ with no entries and no index is not a memory file."""
        _write(root, "memory/README.md", "# About these notes\n\nSee the CLI.\n")
        assert run("check").exit_code == 0
        assert run("fmt", "--check").exit_code == 0


class TestFmt:
    def test_fmt_check_exits_1_then_fmt_fixes(self, run: Run, root: Path) -> None:
        """fmt --check reports without writing; fmt writes the canonical form once; a second fmt is a no-op."""
        path = _write(root, "memory/frictions.md", (DATA / "messy.md").read_text())
        before = snapshot(root)
        checked = run("fmt", "--check")
        assert checked.exit_code == 1 and "would reformat memory/frictions.md" in checked.stdout
        assert snapshot(root) == before
        assert run("fmt").exit_code == 0
        assert path.read_text() == (DATA / "messy.expected.md").read_text()
        mtime = path.stat().st_mtime_ns
        assert run("fmt").exit_code == 0 and path.stat().st_mtime_ns == mtime
        assert run("fmt", "--check").exit_code == 0

    def test_fmt_names_unreadable_files_as_findings_and_formats_the_rest(self, run: Run, root: Path) -> None:
        """A broken file and a non-UTF-8 one are named (exit 2) and left alone; --json lists them as findings."""
        good = _write(root, "memory/frictions.md", (DATA / "messy.md").read_text())
        broken = _write(root, "memory/decisions.md", "# D\n\n### D-001 no colon\n")
        latin = root / "memory" / "lessons.md"
        latin.write_bytes(b"# L\n\n### L-001: caf\xe9\n")
        untouched = {path: path.read_bytes() for path in (broken, latin)}
        result = run("fmt", "--json")
        assert result.exit_code == 2
        data = json.loads(result.stdout)
        assert data["changed"] == ["memory/frictions.md"] and data["unchanged"] == 0
        assert [(f["code"], f["path"], f["line"]) for f in data["findings"]] == [
            ("parse-error", "memory/decisions.md", 3),
            ("not-utf8", "memory/lessons.md", 3),
        ]
        assert good.read_text() == (DATA / "messy.expected.md").read_text()
        assert all(path.read_bytes() == data for path, data in untouched.items())
        text = run("fmt", "--check")
        assert text.exit_code == 2 and "memory/decisions.md:3: parse-error broken entry heading" in text.stderr


class TestAudit:
    def test_audit_finds_dangling_retired_duplicate_and_stale(self, run: Run, root: Path) -> None:
        """Each kind of leftover is reported once, with the entry it is about in `id`, and audit exits 1."""
        run("add", "-k", "D", "-t", "Same title", "-a", "a", "--body", "b", "--date", "2020-01-01")
        run("add", "-k", "D", "-t", "same  Title", "-a", "a", "--body", "b", "--ref", "D-009", "--allow-dangling")
        run("add", "-k", "D", "-t", "Third", "-a", "a", "--body", "b")
        run("retire", "D-003", "--successor", "D-002", "--reason", "r")
        run("add", "-k", "F", "-t", "Points at old", "-a", "a", "--body", "See D-003.")
        result = run("audit", "--json")
        assert result.exit_code == 1
        findings = json.loads(result.stdout)["findings"]
        assert sorted((f["code"], f["id"]) for f in findings) == [
            ("dangling-ref", "D-002"),
            ("duplicate-title", "D-002"),
            ("retired-ref", "F-001"),
            ("stale", "D-001"),
        ]
        retired = next(f for f in findings if f["code"] == "retired-ref")
        assert retired["target"]["id"] == "D-003" and retired["detail"] == {"successor": "D-002"}
        dangling = next(f for f in findings if f["code"] == "dangling-ref")
        assert dangling["target"] == {
            "type": "entry",
            "id": "D-009",
            "title": None,
            "status": None,
            "path": None,
            "line": None,
        }
        text = run("audit")
        assert "memory/frictions.md:8: retired-ref F-001 refers to retired D-003; its successor is D-002" in text.stdout
        # a closing count on stderr, the most frequent first: a thousand stale lines cannot hide the rest
        assert text.stderr.strip().endswith("4 findings: 1 dangling-ref, 1 duplicate-title, 1 retired-ref, 1 stale")

    def test_the_entry_that_took_over_may_cite_the_one_it_replaced(self, run: Run, root: Path) -> None:
        """D-002 refers to D-001 (in refs and in its body), and D-001 is then retired with D-002 as its
        successor, through D-003 for the second chain: neither audit nor refs --dangling asks D-002 or D-003
        to point at themselves. Another entry citing D-001 is still reported, and so is its line."""
        at = "@@"
        run("add", "-k", "D", "-t", "Use REST", "-a", "api", "--body", "REST.")
        run("add", "-k", "D", "-t", "Use gRPC", "-a", "api", "--body", f"Replaces {at}D-001.", "--ref", "D-001")
        run("add", "-k", "D", "-t", "Use gRPC v2", "-a", "api", "--body", f"After {at}D-001 and {at}D-002.")
        run("add", "-k", "F", "-t", "Still on REST", "-a", "api", "--body", f"Cites {at}D-001.")
        assert run("retire", "D-001", "--successor", "D-002", "--reason", "gRPC now").exit_code == 0
        assert run("retire", "D-002", "--successor", "D-003", "--reason", "v2").exit_code == 0
        findings = json.loads(run("audit", "--json").stdout)["findings"]
        assert sorted((f["code"], f["id"], f["target"]["id"]) for f in findings) == [
            ("retired-ref", "F-001", "D-001"),
        ]
        dangling = run("refs", "--dangling", "--json")
        assert dangling.exit_code == 1
        assert [(f["code"], f["path"], f["id"]) for f in json.loads(dangling.stdout)["findings"]] == [
            ("ref-retired", "memory/frictions.md", "D-001")
        ]
        every = json.loads(run("refs", "--json").stdout)["findings"]
        replaced = [f for f in every if f["path"] == "memory/decisions.md" and f["code"] == "ref-ok"]
        assert len(replaced) == 3 and any("replaced by D-003" in f["message"] for f in replaced)
        decisions = root / "memory" / "decisions.md"
        decisions.write_text(decisions.read_text() + f"\n{at}D-001.\n")  # the Manual's: no entry's
        manual = json.loads(run("refs", "--dangling", "--json").stdout)["findings"]
        assert ("ref-retired", "memory/decisions.md") in {(f["code"], f["path"]) for f in manual}

    def test_pruned_entries_alone_exit_0(self, run: Run, root: Path) -> None:
        """A pruned entry is an info finding at its line of memory/pruned.jsonl; alone, audit exits 0."""
        run("add", "-k", "T", "-t", "One", "-a", "a", "--body", "b")
        run("add", "-k", "T", "-t", "Two", "-a", "a", "--body", "b")
        run("prune", "T-001", "--reason", "first")
        run("prune", "T-002", "--reason", "second")
        result = run("audit", "--json")
        assert result.exit_code == 0
        pruned = json.loads(result.stdout)["findings"]
        assert [(f["code"], f["severity"], f["path"], f["line"], f["id"]) for f in pruned] == [
            ("pruned", "info", "memory/pruned.jsonl", 1, "T-001"),
            ("pruned", "info", "memory/pruned.jsonl", 2, "T-002"),
        ]
        assert pruned[1]["detail"]["reason"] == "second"


class TestRefs:
    def test_a_doc_reference_names_nothing_outside_the_docs_folder(self, run: Run, root: Path) -> None:
        """`@@doc:/etc/passwd` was ref-ok with the target /etc/passwd: an absolute name replaced docs/.
        A name that leaves docs/ (absolute, or climbing out with ..) is dangling."""
        _write(root, "README.md", "# Read me\n")
        _write(root, "docs/guide.md", "# Guide\n")
        at = "@@"
        _write(root, "shared/api.md", "# API\n\n## Auth\n")
        (root / "docs" / "api.md").symlink_to(root / "shared" / "api.md")  # a doc kept elsewhere is a doc
        text = f"# {at}doc:/etc/passwd\n# {at}doc:../README.md\n# {at}doc:guide\n# {at}doc:api#auth\n"
        _write(root, "src/n.py", text)
        found = json.loads(run("refs", str(root / "src"), "--json").stdout)["findings"]
        assert [(f["line"], f["code"]) for f in found] == [
            (1, "ref-dangling"),
            (2, "ref-dangling"),
            (3, "ref-ok"),
            (4, "ref-ok"),
        ]

    def test_refs_dangling_reports_missing_retired_and_doc_anchors(self, run: Run, root: Path) -> None:
        """@@ids, @@doc and @@skill references resolve or are reported as path:line: code; exit 1 if any dangle."""
        run("add", "-k", "D", "-t", "Live", "-a", "a", "--body", "b")
        run("add", "-k", "D", "-t", "Old", "-a", "a", "--body", "b")
        run("retire", "D-002", "--successor", "D-001", "--reason", "r")
        _write(root, "docs/patterns/memory.md", "# Memory\n\n## Why ids\n")
        _write(root, "skills/realm/SKILL.md", "# Realm\n\n## Layers\n")
        at = "@@"
        _write(
            root,
            "src/app.py",
            "\n".join(
                [
                    f"x = 1  # {at}D-001 is fine",
                    f"# see {at}D-002",
                    f"# see {at}D-404",
                    f"# {at}doc:patterns/memory#why-ids and {at}doc:patterns/memory#nope",
                    f"# {at}skill:realm#layers {at}skill:ghost",
                    f"# {at}D-9, as the id is spelled nowhere",
                ]
            ),
        )
        result = run("refs", "--dangling", str(root / "src"))
        assert result.exit_code == 1
        lines = result.stdout.splitlines()
        assert lines == [
            f"src/app.py:2: ref-retired {at}D-002: D-002 is retired; its successor is D-001",
            f"src/app.py:3: ref-dangling {at}D-404: no entry D-404",
            f"src/app.py:4: ref-dangling {at}doc:patterns/memory#nope: doc patterns/memory has no heading #nope",
            f"src/app.py:5: ref-dangling {at}skill:ghost: no skill ghost under skills/",
            f"src/app.py:6: ref-dangling {at}D-9: no entry D-009",  # as every command spells it (it said D-9)
        ]
        everything = json.loads(run("refs", str(root / "src"), "--json").stdout)["findings"]
        assert len(everything) == 8 and run("refs", str(root / "src")).exit_code == 0
        assert [(f["code"], f["id"], f["detail"]["column"]) for f in everything[:3]] == [
            ("ref-ok", "D-001", 10),
            ("ref-retired", "D-002", 7),
            ("ref-dangling", "D-404", 7),
        ]
        doc = everything[3]
        assert doc["target"] == {
            "type": "doc",
            "name": "patterns/memory",
            "anchor": "why-ids",
            "path": "docs/patterns/memory.md",
        }

    def test_reference_to_an_entry_in_a_broken_file_is_unreadable_not_dangling(self, run: Run, root: Path) -> None:
        """An id whose heading stands in a file that does not parse is ref-unreadable, and the file is skipped."""
        _write(root, "memory/lessons.md", "# Lessons\n\n### L-003: No metadata\n\nJust text.\n")
        _write(root, "src/app.py", "# see @" + "@L-003\n")
        result = run("refs", "--json", str(root / "src"))
        output = json.loads(result.stdout)
        assert [f["code"] for f in output["findings"]] == ["ref-unreadable"]
        assert output["findings"][0]["target"]["path"] == "memory/lessons.md"
        assert [(s["code"], s["path"], s["line"]) for s in output["skipped"]] == [
            ("unparseable", "memory/lessons.md", 5)
        ]
        assert "memfiles: warning: memory/lessons.md:5: L-003 has no metadata" in result.stderr

    def test_a_reference_to_an_id_two_entries_carry_is_ambiguous(self, run: Run, root: Path) -> None:
        """F-001 pasted twice: a reference to it (in any spelling) is ref-ambiguous naming both places (it
        was ref-ok, resolved to one of the two in silence), and refs --dangling exits 1."""
        for title in ("CI cache misses on Windows", "Second friction"):
            assert run("add", "-k", "friction", "-t", title, "-a", "ci", "--body", "B.").exit_code == 0
        frictions = root / "memory" / "frictions.md"
        frictions.write_text(frictions.read_text().replace("### F-002: Second friction", "### F-001: Second friction"))
        _write(root, "src/app.py", "# see @" + "@F-001 and @" + "@F-1\n")
        result = run("refs", "--dangling", "--json", str(root / "src"))
        findings = json.loads(result.stdout)["findings"]
        assert result.exit_code == 1 and [f["code"] for f in findings] == ["ref-ambiguous", "ref-ambiguous"]
        assert "memory/frictions.md:" in findings[0]["message"] and "memfiles renumber" in findings[0]["message"]


class TestRead:
    def test_list_json_has_the_promised_fields(self, run: Run) -> None:
        """list --json: entry objects without bodies (with --body, with them); filters combine."""
        run("add", "-k", "D", "-t", "A decision", "-a", "format", "--body", "b")
        run("add", "-k", "F", "-t", "A friction", "-a", "index", "--body", "b")
        rows = json.loads(run("list", "--json").stdout)["entries"]
        assert {key for key in rows[0]} >= {"id", "kind", "title", "area", "status", "date", "path", "line"}
        assert "body" not in rows[0]
        assert rows[0]["line"] == 8 and rows[0]["path"] == "memory/decisions.md"
        assert json.loads(run("list", "--body", "--json").stdout)["entries"][0]["body"] == "b"
        only = json.loads(run("list", "--kind", "F", "--status", "open", "--json").stdout)["entries"]
        assert [row["id"] for row in only] == ["F-001"]
        assert json.loads(run("list", "--area", "nowhere", "--json").stdout) == {"entries": [], "skipped": []}

    def test_show_prints_the_entry_and_where(self, run: Run) -> None:
        """show prints path:line then the entry as it stands in the file; an unknown id exits 2."""
        run("add", "-k", "D", "-t", "Shown", "-a", "format", "--body", "The body.")
        result = run("show", "D-001")
        assert result.stdout.startswith("memory/decisions.md:8\n### D-001: Shown\n")
        assert "The body." in result.stdout
        missing = run("show", "D-404")
        assert missing.exit_code == 2 and missing.stderr == "memfiles: no entry D-404\n"

    def test_show_open_starts_the_editor_at_the_line(self, run: Run, root: Path, monkeypatch) -> None:
        """--open runs $EDITOR +LINE FILE."""
        run("add", "-k", "D", "-t", "Shown", "-a", "format", "--body", "b")
        log = root / "editor.log"
        editor = _write(root, "editor.sh", f'#!/bin/sh\necho "$@" > {log}\n')
        editor.chmod(0o755)
        monkeypatch.setenv("EDITOR", str(editor))
        monkeypatch.delenv("VISUAL", raising=False)
        assert run("show", "D-001", "--open").exit_code == 0
        assert log.read_text().split() == ["+8", str(root / "memory" / "decisions.md")]


class TestConfig:
    def test_broken_config_names_the_file(self, run: Run, root: Path) -> None:
        """Invalid TOML or an unknown setting: exit 2 and the config file in the message; nothing written."""
        (root / "memory" / "memfiles.toml").write_text("wrap = [unclosed\n")
        result = run("add", "-k", "D", "-t", "t", "-a", "a", "--body", "b")
        assert result.exit_code == 2 and "memfiles.toml" in result.stderr
        (root / "memory" / "memfiles.toml").write_text("colour = 'red'\n")
        result = run("check")
        assert result.exit_code == 2 and "unknown setting 'colour'" in result.stderr
        assert snapshot(root) == {"memory/memfiles.toml": snapshot(root)["memory/memfiles.toml"]}

    def test_kinds_are_configurable(self, run: Run, root: Path) -> None:
        """A kind of one's own, with its prefix, statuses and file."""
        (root / "memory" / "memfiles.toml").write_text(
            '[kinds.risk]\nprefix = "R"\nstatuses = ["open", "mitigated"]\nfile = "risks.md"\n'
        )
        assert run("add", "-k", "risk", "-t", "Vendor lock-in", "-a", "infra", "--body", "b").stdout.strip() == "R-001"
        assert run("set", "R-001", "--status", "mitigated").exit_code == 0
        assert (root / "memory" / "risks.md").exists() and run("check").exit_code == 0


class TestLedger:
    def test_broken_pruned_ledger_is_reported_with_its_line(self, run: Run, root: Path) -> None:
        """A hand-mangled pruned.jsonl: check names file and line and exits 1; the write path refuses (exit 2)."""
        run("add", "-k", "T", "-t", "t", "-a", "a", "--body", "b")
        (root / "memory" / "pruned.jsonl").write_text('{"id": "T-009", "reason": "r"}\n{broken\n')
        before = snapshot(root)
        result = run("check")
        assert result.exit_code == 1 and "memory/pruned.jsonl:2: bad-ledger invalid JSON" in result.stdout
        add = run("add", "-k", "T", "-t", "u", "-a", "a", "--body", "b")
        assert add.exit_code == 2 and "pruned.jsonl:2" in add.stderr
        assert snapshot(root) == before
