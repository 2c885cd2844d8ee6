"""The write path through the CLI: add, set, retire, prune, import; bad input changes nothing."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from memfiles import parse
from tests.conftest import Run, add_ops, snapshot


class TestAdd:
    def test_add_prints_id_and_writes_a_canonical_file(self, run: Run, root: Path) -> None:
        """The first decision is D-001, lands in memory/decisions.md, and the file passes check."""
        result = run(
            "add",
            "--kind",
            "decision",
            "--title",
            "Ids are never reused",
            "--area",
            "format",
            "--body",
            "A retired entry keeps its number.",
        )
        assert result.exit_code == 0, result.output
        assert result.stdout.strip() == "D-001"
        text = (root / "memory" / "decisions.md").read_text()
        assert "### D-001: Ids are never reused" in text
        assert "- [D-001](#d-001-ids-are-never-reused) Ids are never reused · format ·" in text
        assert run("check").exit_code == 0

    def test_ids_are_allocated_per_prefix(self, run: Run) -> None:
        """Each prefix has its own number space; the kind may be named by its prefix."""
        ids = [
            run("add", "-k", kind, "-t", f"t{n}", "-a", "x", "--body", "b").stdout.strip()
            for n, kind in enumerate(["D", "friction", "D", "F", "todo"])
        ]
        assert ids == ["D-001", "F-001", "D-002", "F-002", "T-001"]

    def test_body_from_stdin_is_wrapped(self, run: Run, root: Path) -> None:
        """A long prose paragraph from standard input is wrapped at 100 columns; a long list item is wrapped
        under its own marker (the lint rule set's md013), so it stays one item."""
        prose = " ".join(["word"] * 60)
        listing = "- " + " ".join(["item"] * 30)
        result = run("add", "-k", "L", "-t", "Wrapping", "-a", "format", input=f"{prose}\n\n{listing}\n")
        assert result.exit_code == 0, result.output
        entry = parse((root / "memory" / "lessons.md").read_text()).entries[0]
        assert all(len(line) <= 100 for line in entry.body.split("\n"))
        item = entry.body.split("\n\n")[-1].split("\n")
        assert item[0].startswith("- item") and all(line.startswith("  item") for line in item[1:])
        assert " ".join(line.strip() for line in item) == listing

    def test_a_list_item_written_across_lines_is_reflowed_whole(self, run: Run, root: Path) -> None:
        """A list item a person wrapped a little wider than 100 columns: its paragraph is re-flowed as one,
        not each line cut alone (which left a stub of a word or two under every long line). A hard break
        and the next item are kept; an item of short lines is left as written."""
        long = "- " + " ".join(["alpha"] * 17) + "\n  " + " ".join(["beta"] * 20) + "\n  " + "gamma " * 17
        body = f"{long.rstrip()}  \n  after the break\n- short one\n  kept as written\n"
        result = run("add", "-k", "L", "-t", "Reflow", "-a", "format", input=body)
        assert result.exit_code == 0, result.output
        lines = parse((root / "memory" / "lessons.md").read_text()).entries[0].body.split("\n")
        assert all(len(line) <= 100 for line in lines)
        assert all(len(line) > 60 for line in lines[:-4]), lines  # no stubs: every line but the item's last is full
        assert lines[-4].endswith("gamma  ") and lines[-3:] == ["  after the break", "- short one", "  kept as written"]
        words = " ".join(line.strip() for line in lines[:-3]).split()
        assert words == ["-"] + ["alpha"] * 17 + ["beta"] * 20 + ["gamma"] * 17
        assert run("check").exit_code == 0

    def test_a_quote_written_across_lines_is_reflowed_and_a_lone_hard_break_kept(self, run: Run, root: Path) -> None:
        """A quote's lines under the same `>` are one paragraph too; a one-line item over the width that ends
        in a hard break keeps it (the line after it stays a line of its own in the rendering)."""
        quote = "> " + " ".join(["delta"] * 17) + "\n> " + " ".join(["eps"] * 5)
        item = "- " + " ".join(["zeta"] * 20) + "  \n  after the break"
        result = run("add", "-k", "L", "-t", "Quote", "-a", "format", input=f"{quote}\n\n{item}\n")
        assert result.exit_code == 0, result.output
        lines = parse((root / "memory" / "lessons.md").read_text()).entries[0].body.split("\n")
        assert lines[:2] == ["> " + " ".join(["delta"] * 16), "> delta " + " ".join(["eps"] * 5)], lines
        assert lines[-3:] == ["- " + " ".join(["zeta"] * 19), "  zeta  ", "  after the break"], lines
        assert run("check").exit_code == 0

    def test_a_body_awaited_on_an_open_stdin_is_announced(self, root: Path, tmp_path: Path) -> None:
        """`add` with no --body and a standard input its caller left open (an agent's tool keeping the pipe):
        after a while, stderr says the body is awaited and how to give it, and the body sent then is
        taken; a wrong --root is said at once, without waiting on that input."""
        command = [sys.executable, "-m", "memfiles.cli", "--root", str(root), "add", "-k", "D", "-t", "Late", "-a", "x"]
        env = {**os.environ, "MEMFILES_SEARCH_WATCH": "0"}
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        assert process.stdin is not None and process.stderr is not None
        ready, _, _ = select.select([process.stderr], [], [], 60)  # the notice comes after 2 s
        if not ready:  # no notice: the command waits in silence, which is the defect
            process.kill()
        notice = process.stderr.readline().decode()
        assert "waiting for the body on standard input" in notice and "--body" in notice
        out, _ = process.communicate(b"Sent after the notice.\n", timeout=60)
        assert process.returncode == 0 and out.decode().strip() == "D-001"
        assert "Sent after the notice." in (root / "memory" / "decisions.md").read_text()
        command[command.index(str(root))] = str(tmp_path / "nowhere")
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        assert process.stdin is not None and process.stderr is not None
        assert process.wait(timeout=60) == 2  # its stdin open all along, nothing ever written to it
        err = process.stderr.read().decode()
        process.stdin.close()
        assert "no such folder" in err and "waiting" not in err

    def test_long_title_is_refused_with_the_limit(self, run: Run, root: Path) -> None:
        """A 121-character title: exit 2, a message with the numbers, no file written."""
        result = run("add", "-k", "D", "-t", "x" * 121, "-a", "a", "--body", "b")
        assert result.exit_code == 2
        assert "title is 121 characters; at most 120" in result.stderr
        assert snapshot(root) == {}

    def test_unknown_kind_and_bad_status_are_refused(self, run: Run, root: Path) -> None:
        """An unknown kind and a status outside the kind's vocabulary both exit 2 and write nothing."""
        bad_kind = run("add", "-k", "wish", "-t", "t", "-a", "a", "--body", "b")
        assert bad_kind.exit_code == 2 and "unknown kind 'wish'" in bad_kind.stderr
        bad_status = run("add", "-k", "D", "-t", "t", "-a", "a", "-s", "open", "--body", "b")
        assert bad_status.exit_code == 2 and "not a status of a decision" in bad_status.stderr
        assert snapshot(root) == {}

    def test_section_and_file_options(self, run: Run, root: Path) -> None:
        """--file puts the entry in another memory file, --section under a level-2 heading."""
        result = run(
            "add",
            "-k",
            "L",
            "-t",
            "Fanout",
            "-a",
            "synthesis",
            "--body",
            "b",
            "--file",
            "memory/synthesis/knowledge.md",
            "--section",
            "Known Failure Patterns",
        )
        assert result.exit_code == 0, result.output
        memory = parse((root / "memory" / "synthesis" / "knowledge.md").read_text())
        assert memory.section_of("L-001") == "Known Failure Patterns"
        outside = run("add", "-k", "L", "-t", "t", "-a", "a", "--body", "b", "--file", "docs/notes.md")
        assert outside.exit_code == 2 and "inside a memory/ folder" in outside.stderr

    def test_working_memory_and_the_persona_are_no_file_for_an_entry(self, run: Run, root: Path) -> None:
        """--file memory/working/x.md (a run's working memory) for a decision is refused, on add and on a
        move by set, as is memory/persona.md, each naming what the file is; nothing is written. A run's own
        writes (memfiles working) still go there."""
        run("add", "-k", "D", "-t", "A decision", "-a", "a", "--body", "b")
        before = snapshot(root)
        for args in (
            ("add", "-k", "D", "-t", "Another", "-a", "a", "--body", "b", "--file", "memory/working/x.md"),
            ("set", "D-001", "--file", "memory/working/x.md"),
        ):
            refused = run(*args)
            assert refused.exit_code == 2 and "holds runs' working memory" in refused.stderr, refused.output
        persona = run("set", "D-001", "--file", "memory/persona.md")
        assert persona.exit_code == 2 and "memory/persona.md is the agents' persona" in persona.stderr
        for args in (
            ("add", "-k", "working", "-t", "Scratch", "-a", "a", "--body", "b"),  # working list: unreadable
            (
                "add",
                "-k",
                "working",
                "-t",
                "x",
                "-a",
                "a",
                "--body",
                "b",
                "--file",
                "memory/working/r9.md",
                "--section",
                "Todo",
            ),
        ):
            refused = run(*args)
            assert refused.exit_code == 2 and "written by `memfiles working start`" in refused.stderr, refused.output
        assert snapshot(root) == before and not (root / "memory" / "working").exists()
        assert run("working", "start", "--run", "r1", "--goal", "Still works").exit_code == 0
        assert (root / "memory" / "working" / "r1.md").is_file()
        second_state = ("-k", "working", "-t", "x", "-a", "a", "--body", "b", "--file", "memory/working/r1.md")
        refused = run("add", *second_state, "--section", "State")
        assert refused.exit_code == 2 and "written by `memfiles working start`" in refused.stderr
        assert run("working", "todo", "add", "--run", "r1", "A todo").exit_code == 0

    def test_write_rewrites_only_files_whose_text_changes(self, run: Run, root: Path) -> None:
        """Adding a decision leaves frictions.md untouched, its mtime included."""
        run("add", "-k", "F", "-t", "t", "-a", "a", "--body", "b")
        frictions = root / "memory" / "frictions.md"
        before = frictions.stat().st_mtime_ns
        run("add", "-k", "D", "-t", "t", "-a", "a", "--body", "b")
        assert frictions.stat().st_mtime_ns == before


class TestSetRetirePrune:
    def test_set_updates_in_place(self, run: Run, root: Path) -> None:
        """set changes the status and the index regroups the entry."""
        run("add", "-k", "F", "-t", "Slow check", "-a", "cli", "--body", "b")
        assert run("set", "F-001", "--status", "resolved").exit_code == 0
        text = (root / "memory" / "frictions.md").read_text()
        assert "**resolved** (1)" in text and "- status: resolved" in text

    def test_set_to_the_values_it_has_says_nothing_changed(self, run: Run, root: Path) -> None:
        """A set that changes nothing is not reported as an update: exit 0, "no changes", a warning
        naming the fields, the file untouched; a set that changes something still says updated."""
        run("add", "-k", "F", "-t", "Slow check", "-a", "cli", "--body", "b")
        assert run("set", "F-001", "--status", "resolved").stdout.strip() == "updated F-001"
        frictions = root / "memory" / "frictions.md"
        before = frictions.stat().st_mtime_ns
        again = run("set", "f-1", "--status", "resolved", "--area", "cli", "--json")
        data = json.loads(again.stdout)
        assert again.exit_code == 0 and data["updated"] == []
        assert data["warnings"] == ["F-001 already has the area, status given: nothing changed"]
        assert frictions.stat().st_mtime_ns == before
        stays = run("set", "F-001", "--file", "./memory/frictions.md")  # the same file, written another way
        assert stays.stdout.strip() == "no changes" and "already stands in memory/frictions.md" in stays.stderr
        assert run("set", "F-001", "--area", "store").stdout.strip() == "updated F-001"
        # status edited by hand, so the generated index is stale: the set changes no entry, but the file is
        # rewritten with its index up to date, and the summary says so rather than "no changes"
        frictions.write_text(frictions.read_text().replace("- status: resolved", "- status: open"))
        stale = run("set", "F-001", "--status", "open")
        assert stale.stdout.strip() == "no entry changed; rewrote memory/frictions.md in canonical form"
        assert run("check").exit_code == 0

    def test_set_unknown_id_fails_cleanly(self, run: Run) -> None:
        """An id that does not exist: exit 2 and the id in the message."""
        result = run("set", "F-404", "--status", "resolved")
        assert result.exit_code == 2 and "no entry F-404" in result.stderr

    def test_the_same_retire_again_says_nothing_changed(self, run: Run, root: Path) -> None:
        """Retiring again with the same reason listed the id under `retired` as if it were news."""
        run("add", "-k", "D", "-t", "Old", "-a", "a", "--body", "b")
        assert run("retire", "D-001", "--reason", "superseded").exit_code == 0
        before = snapshot(root)
        said = json.loads(run("retire", "D-001", "--reason", "superseded", "--json").stdout)
        assert said["retired"] == [] and said["warnings"] == [
            "D-001 is already retired with that reason: nothing changed"
        ]
        assert snapshot(root) == before

    def test_retire_keeps_the_entry_and_names_the_successor(self, run: Run, root: Path) -> None:
        """A retired entry keeps its id and text, with status retired, successor and reason."""
        run("add", "-k", "D", "-t", "Old", "-a", "a", "--body", "b")
        run("add", "-k", "D", "-t", "New", "-a", "a", "--body", "b")
        assert run("retire", "D-001", "--successor", "D-002", "--reason", "Replaced").exit_code == 0
        entry = parse((root / "memory" / "decisions.md").read_text()).entries[0]
        assert (entry.status, entry.successor, entry.reason) == ("retired", "D-002", "Replaced")
        assert run("retire", "D-002", "--successor", "D-099", "--reason", "r").exit_code == 2

    def test_prune_records_the_reason_and_never_reuses_the_number(self, run: Run, root: Path) -> None:
        """Pruned entries go to pruned.jsonl whole; the next id skips their number; audit lists them."""
        run("add", "-k", "T", "-t", "Do it", "-a", "a", "--body", "b")
        assert run("prune", "T-001", "--reason", "Done elsewhere").exit_code == 0
        record = json.loads((root / "memory" / "pruned.jsonl").read_text())
        assert record["id"] == "T-001" and record["reason"] == "Done elsewhere" and "### T-001" in record["entry"]
        assert run("add", "-k", "T", "-t", "Next", "-a", "a", "--body", "b").stdout.strip() == "T-002"
        audit = run("audit")
        assert "memory/pruned.jsonl:1: pruned T-001 pruned on" in audit.stdout

    def test_retiring_again_says_what_it_replaced(self, run: Run, root: Path) -> None:
        """retire of an entry already retired with another reason or successor goes ahead and says what it
        replaced; the same retire again changes nothing and says so, as a set to the values there does."""
        for title in ("Old", "Newer", "Newest"):
            run("add", "-k", "D", "-t", title, "-a", "a", "--body", "b")
        assert run("retire", "D-001", "--successor", "D-002", "--reason", "dup").exit_code == 0
        again = run("retire", "D-001", "--successor", "D-003", "--reason", "again", "--json")
        assert again.exit_code == 0
        assert json.loads(again.stdout)["warnings"] == [
            "D-001 was already retired (reason: dup, successor D-002); this retire replaced that"
        ]
        same = json.loads(run("retire", "D-001", "--successor", "D-003", "--reason", "again", "--json").stdout)
        assert same["warnings"] == ["D-001 is already retired with that reason: nothing changed"]
        assert same["retired"] == []

    def test_a_write_to_a_file_check_rejects_says_what_it_carried_over(self, run: Run, root: Path) -> None:
        """A hand edit left an error in a file (a status no kind has); a write to that file goes ahead, and
        says that the error was there before and that check reports it (it used to say nothing)."""
        run("add", "-k", "F", "-t", "A friction", "-a", "a", "--body", "b")
        path = root / "memory" / "frictions.md"
        path.write_text(path.read_text().replace("- status: open", "- status: bogus"))
        result = run("add", "-k", "F", "-t", "Another friction", "-a", "a", "--body", "other words", "--json")
        assert result.exit_code == 0, result.output
        (warning,) = json.loads(result.stdout)["warnings"]
        assert warning.startswith("memory/frictions.md:") and "F-001" in warning and "bogus" in warning
        assert warning.endswith("(there before this write; check reports it)")
        clean = run("add", "-k", "D", "-t", "A decision", "-a", "a", "--body", "b", "--json")
        assert json.loads(clean.stdout)["warnings"] == []  # another file: nothing to say

    def test_prune_names_the_entries_that_still_refer_to_it(self, run: Run, root: Path) -> None:
        """Pruning D-002 while D-001 names it as successor and F-001 in its refs: the prune goes ahead and
        warns about each (text and --json), instead of leaving dangling references only audit finds."""
        run("add", "-k", "D", "-t", "Old way", "-a", "a", "--body", "b")
        run("add", "-k", "D", "-t", "New way", "-a", "a", "--body", "b")
        run("add", "-k", "F", "-t", "A friction", "-a", "a", "--body", "b", "--ref", "D-002")
        assert run("retire", "D-001", "--successor", "D-002", "--reason", "replaced").exit_code == 0
        result = run("prune", "D-002", "--reason", "gone", "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["warnings"] == [
            "D-001 still refers to D-002, pruned now: edit its refs or successor (audit reports it as dangling-ref)",
            "F-001 still refers to D-002, pruned now: edit its refs or successor (audit reports it as dangling-ref)",
        ]
        quiet = run("prune", "F-001", "--reason", "gone too", "--json")
        assert json.loads(quiet.stdout)["warnings"] == []

    def test_an_id_pruned_earlier_in_the_batch_is_pruned_for_the_later_ops(self, run: Run, root: Path) -> None:
        """A batch that prunes D-001 and then prunes (or updates) D-001 again is refused at its second op,
        "no entry D-001 (it was pruned: ...)", as a second command would be; nothing is written. It used to
        record a second, empty ledger record, which `show D-001` then returned."""
        run("add", "-k", "D", "-t", "Keep this text", "-a", "a", "--body", "b")
        before = snapshot(root)
        for second in (
            {"op": "prune", "id": "D-001", "reason": "gone again"},
            {"op": "update", "id": "D-001", "status": "accepted"},
        ):
            (root / "ops.json").write_text(json.dumps([{"op": "prune", "id": "D-001", "reason": "gone"}, second]))
            result = run("import", str(root / "ops.json"))
            assert result.exit_code == 2, result.output
            assert "op 2: id: no entry D-001 (it was pruned: gone)" in result.stderr
            assert snapshot(root) == before and not (root / "memory" / "pruned.jsonl").exists()


class TestImport:
    def test_import_applies_ops_in_order_and_prints_json(self, run: Run, root: Path) -> None:
        """--json lists the ids by op, in op order."""
        ops = {
            "ops": [
                {"op": "add", "kind": "decision", "title": "A", "area": "x", "body": "a"},
                {"op": "add", "kind": "friction", "title": "B", "area": "x", "body": "b", "refs": ["D-001"]},
                {"op": "update", "id": "D-001", "status": "accepted"},
                {"op": "retire", "id": "F-001", "reason": "gone", "successor": "D-001"},
            ]
        }
        (root / "ops.json").write_text(json.dumps(ops))
        result = run("import", str(root / "ops.json"), "--json")
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert {key: data[key] for key in ("added", "updated", "retired", "pruned", "renumbered", "replayed")} == {
            "added": ["D-001", "F-001"],
            "updated": ["D-001"],
            "retired": ["F-001"],
            "pruned": [],
            "renumbered": {},
            "replayed": False,
        }
        assert [(e["id"], e["status"]) for e in data["entries"]] == [("D-001", "accepted"), ("F-001", "retired")]

    def test_bad_op_names_position_and_field_and_touches_nothing(self, run: Run, root: Path) -> None:
        """op 3 with a long title: the error says so and no file is written, not even for ops 1 and 2."""
        run("add", "-k", "D", "-t", "Existing", "-a", "x", "--body", "b")
        before = snapshot(root)
        ops = json.loads(add_ops(2))
        ops["ops"].append({"op": "add", "kind": "decision", "title": "y" * 141, "area": "x", "body": "b"})
        (root / "ops.json").write_text(json.dumps(ops))
        result = run("import", str(root / "ops.json"))
        assert result.exit_code == 2
        assert "op 3: title is 141 characters; at most 120" in result.stderr
        assert snapshot(root) == before

    def test_an_op_failing_late_in_the_batch_touches_nothing(self, run: Run, root: Path) -> None:
        """An update of a missing id after valid adds: all or nothing."""
        before = snapshot(root)
        ops = json.loads(add_ops(3))
        ops["ops"].append({"op": "update", "id": "D-999", "status": "accepted"})
        (root / "ops.json").write_text(json.dumps(ops))
        result = run("import", str(root / "ops.json"))
        assert result.exit_code == 2 and "op 4: id: no entry D-999" in result.stderr
        assert snapshot(root) == before

    def test_invalid_json_names_line_and_column(self, run: Run, root: Path) -> None:
        """Malformed JSON: the file, line and column in the message, exit 2."""
        (root / "ops.json").write_text('{"ops": [\n  {"op": "add",}\n]}')
        result = run("import", str(root / "ops.json"))
        assert result.exit_code == 2
        assert "ops.json:2: invalid JSON at column" in result.stderr

    @pytest.mark.parametrize(
        ("text", "where"),
        [
            (
                '{"ops": [\n  {"op": "add",\n   "op": "prune", "id": "D-1", "reason": "x"}\n]}',
                ":3: invalid JSON at column 4",
            ),
            ("[" * 3000 + "]" * 3000, ":1: invalid JSON at column 201"),
            (
                '{"ops": [{"op": "add", "kind": "decision", "title": "caf\\udce9", "area": "a", "body": "b"}]}',
                ":1: invalid JSON at column 57",
            ),  # half a surrogate pair: no text
        ],
    )
    def test_a_key_given_twice_or_input_nested_too_deep_is_refused(
        self, run: Run, root: Path, text: str, where: str
    ) -> None:
        """`{"op": "add", "op": "prune"}` pruned: JSON keeps the last of two equal keys. And 3,000 nested
        brackets overflowed the stack (a traceback, exit 1). Both are refused, naming the line; nothing
        is written."""
        assert run("add", "-k", "decision", "-t", "Keep me", "-a", "x", "--body", "b").exit_code == 0
        before = snapshot(root)
        (root / "ops.json").write_text(text)
        result = run("import", str(root / "ops.json"))
        assert result.exit_code == 2 and f"ops.json{where}" in result.stderr and "Traceback" not in result.output
        assert sum(words in result.stderr for words in ("given twice", "nested too deep", "half of a surrogate")) == 1
        assert snapshot(root) == before

    def test_a_wrong_type_is_named_in_jsons_words(self, run: Run, root: Path) -> None:
        """`source must be text, got NoneType`: the message spoke Python to someone who wrote JSON."""
        op = {"op": "add", "kind": "decision", "title": "t", "area": "a", "body": "b", "source": None}
        (root / "ops.json").write_text(json.dumps({"ops": [op, 5, {**op, "source": ["x"]}]}))
        result = run("import", str(root / "ops.json"))
        assert result.exit_code == 2
        for said in (
            "op 1: source must be text, got null",
            "op 2: expected an object, got a number (5)",
            "op 3: source must be text, got a list",
        ):
            assert said in result.stderr

    def test_unknown_field_and_missing_reason(self, run: Run, root: Path) -> None:
        """Fields an op does not take and a prune without a reason are refused by position."""
        (root / "a.json").write_text(
            json.dumps({"ops": [{"op": "add", "kind": "D", "title": "t", "area": "a", "body": "b", "colour": "red"}]})
        )
        assert "op 1: add does not take colour" in run("import", str(root / "a.json")).stderr
        (root / "b.json").write_text(json.dumps({"ops": [{"op": "prune", "id": "D-001"}]}))
        assert "op 1: prune needs a reason" in run("import", str(root / "b.json")).stderr

    def test_request_id_applies_once(self, run: Run, root: Path) -> None:
        """The same --request-id twice: the second run changes nothing and reports the first result."""
        (root / "ops.json").write_text(add_ops(2))
        first = run("import", str(root / "ops.json"), "--request-id", "landing-7", "--json")
        after_first = snapshot(root)
        second = run("import", str(root / "ops.json"), "--request-id", "landing-7", "--json")
        assert first.exit_code == second.exit_code == 0
        assert json.loads(second.stdout) == {**json.loads(first.stdout), "replayed": True}
        assert second.stderr == ""
        assert snapshot(root) == after_first
        third = run("import", str(root / "ops.json"), "--request-id", "landing-8", "--json")
        assert json.loads(third.stdout)["added"] == ["D-003", "D-004"]

    @pytest.mark.parametrize("key", ["", "  "])
    def test_an_empty_request_id_is_refused(self, run: Run, root: Path, key: str) -> None:
        """--request-id "" (an agent's unset variable) is refused, exit 2, field request_id, nothing written;
        it used to count as no key, and the same batch twice wrote its entries twice."""
        (root / "ops.json").write_text(add_ops(1))
        before = snapshot(root)
        result = run("import", str(root / "ops.json"), "--request-id", key, "--json")
        assert result.exit_code == 2
        error = json.loads(result.stdout)["error"]
        assert error["field"] == "request_id" and "request id is empty" in error["message"]
        assert snapshot(root) == before

    def test_entry_moves_between_files_keeping_its_id(self, run: Run, root: Path) -> None:
        """An update with file moves the entry; the id and text travel with it."""
        run("add", "-k", "L", "-t", "Moving", "-a", "x", "--body", "b")
        (root / "ops.json").write_text(
            json.dumps({"ops": [{"op": "update", "id": "L-001", "file": "memory/sta/knowledge.md"}]})
        )
        assert run("import", str(root / "ops.json")).exit_code == 0
        assert parse((root / "memory" / "lessons.md").read_text()).entries == []
        assert parse((root / "memory" / "sta" / "knowledge.md").read_text()).entries[0].id == "L-001"
        assert run("check").exit_code == 0


class TestManual:
    def test_manual_bytes_survive_every_write(self, run: Run, root: Path) -> None:
        """The user's Manual section, odd spacing and all, is untouched by add, set, retire and fmt."""
        run("add", "-k", "D", "-t", "First", "-a", "x", "--body", "b")
        path = root / "memory" / "decisions.md"
        text = path.read_text()
        manual = "## Manual\n\n- [ ] my   own   todo  \n\n\n### not an entry\n"
        path.write_text(text[: text.index("## Manual")] + manual)
        run("add", "-k", "D", "-t", "Second", "-a", "x", "--body", "b")
        run("set", "D-001", "--status", "accepted")
        run("retire", "D-002", "--reason", "r")
        run("fmt")
        assert path.read_text().endswith(manual)


class TestBodies:
    def test_bodies_that_would_break_the_file_are_repaired_and_said(self, run: Run, root: Path) -> None:
        """An unclosed fence, a level-2 heading or an entry-like heading in a body is stored (exit 0) with
        the change that keeps the file whole, and a warning that says it; the file reads back as one entry
        per add, and check passes. A finding is never lost (D-110)."""
        for number, (body, words) in enumerate(
            (
                ("text\n```python\nx = 1", "never closed: it is closed at the end of the body"),
                ("text\n## Section", "headings were demoted 2 levels"),
                ("### D-004: not mine", "would read as an entry heading"),
                # indented by up to 3 spaces, a heading all the same
                ("New body.\n\n ## Manual\n\nmore text", "headings were demoted"),
                ("Intro.\n\n   ## Design\n\nmine", "headings were demoted"),
                ("Intro.\n\n  ### D-009: x", "would read as an entry heading"),
            ),
            start=1,
        ):
            result = run("add", "-k", "D", "-t", f"t{number}", "-a", "a", "--body", body)
            assert result.exit_code == 0 and words in result.stderr, (body, result.stderr)
            memory = parse((root / "memory" / "decisions.md").read_text())
            assert [entry.title for entry in memory.entries] == [f"t{n}" for n in range(1, number + 1)], body
            assert memory.manual is not None and "more text" not in memory.manual
        assert run("check").exit_code == 0, run("check").output

    def test_an_indented_manual_heading_in_a_set_body_is_demoted_and_the_manual_kept(
        self, run: Run, root: Path
    ) -> None:
        """` ## Manual` in a new body once cut the body there and filed its rest under a second Manual: it is
        demoted to `#### Manual` inside the entry, and the user's own Manual is kept byte for byte."""
        run("add", "-k", "T", "-t", "one", "-a", "a", "--body", "first")
        path = root / "memory" / "todos.md"
        path.write_text(path.read_text() + "Mine, hand-written.\n")
        manual = path.read_text()[path.read_text().index("## Manual") :]
        result = run("set", "T-1", "--body", "New body.\n\n ## Manual\n\nmore text")
        assert result.exit_code == 0 and "demoted" in result.stderr, result.stderr
        text = path.read_text()
        assert text.endswith(manual) and text.count("## Manual") == 2 and "#### Manual" in text
        assert parse(text).entries[0].body == "New body.\n\n#### Manual\n\nmore text"
        body = "Indented code:\n\n    ## not a heading"  # four spaces: code, kept as it is
        assert run("set", "T-1", "--body", body).exit_code == 0
        assert parse(path.read_text()).entries[0].body == body

    def test_body_with_closed_fence_and_subheadings_is_kept(self, run: Run, root: Path) -> None:
        """Fenced code holding '## x' and a ### sub-heading are fine and survive the round trip."""
        body = "Intro.\n\n```sh\n## not a heading\n```\n\n### Details\n\nMore."
        assert run("add", "-k", "D", "-t", "t", "-a", "a", "--body", body).exit_code == 0
        assert parse((root / "memory" / "decisions.md").read_text()).entries[0].body == body


class TestSectionOp:
    def test_section_op_sets_intro_and_refuses_bad_input(self, run: Run, root: Path) -> None:
        """The section op replaces a section's intro; a missing field or an intro that would break the file
        is refused by position and leaves every file as it was."""
        (root / "ok.json").write_text(
            json.dumps(
                {
                    "ops": [
                        {"op": "section", "file": "memory/notes.md", "section": "Notes", "intro": "First."},
                        {"op": "section", "file": "memory/notes.md", "section": "Notes", "intro": "Second."},
                    ]
                }
            )
        )
        assert run("import", str(root / "ok.json")).exit_code == 0
        notes = parse((root / "memory" / "notes.md").read_text()).sections
        assert [(s.name, s.intro) for s in notes] == [("Notes", "Second.")]
        before = snapshot(root)
        for op, words in (
            (
                {"op": "section", "file": "memory/notes.md", "section": "Notes"},
                "op 1: section needs file, section and intro",
            ),
            ({"op": "section", "file": "memory/notes.md", "section": "Manual", "intro": "x"}, "op 1: section: Manual"),
            ({"op": "section", "file": "memory/notes.md", "section": "manual", "intro": "x"}, "op 1: section: Manual"),
        ):
            (root / "bad.json").write_text(json.dumps({"ops": [op]}))
            result = run("import", str(root / "bad.json"))
            assert result.exit_code == 2 and words in result.stderr, (op, result.stderr)
        assert snapshot(root) == before


class TestEveryProblemAtOnce:
    def test_four_bad_ops_are_reported_in_one_run(self, run: Run, root: Path) -> None:
        """Two malformed ops and two the batch cannot apply (a missing id, a missing successor): one run
        lists all four by position and field, on stderr and in the JSON error object; nothing is written."""
        run("add", "-k", "D", "-t", "Existing", "-a", "x", "--body", "b")
        before = snapshot(root)
        ops = [
            {"op": "add", "kind": "decision", "title": "y" * 141, "area": "x", "body": "b"},
            {"op": "update", "id": "D-404", "status": "accepted"},
            {"op": "add", "kind": "wish", "title": "t", "area": "x", "body": "b", "colour": "red"},
            {"op": "retire", "id": "D-001", "successor": "D-999", "reason": "r"},
            {"op": "add", "kind": "decision", "title": "Fine", "area": "x", "body": "b"},
        ]
        (root / "ops.json").write_text(json.dumps({"ops": ops}))
        result = run("import", str(root / "ops.json"), "--json")
        assert result.exit_code == 2
        for words in (
            "op 1: title is 141 characters",
            "op 2: id: no entry D-404",
            "op 3: add does not take colour",
            "op 3: kind: unknown kind 'wish'",
            "op 4: successor: no entry D-999",
            "5 problems in the batch; nothing was written",
        ):
            assert words in result.stderr, words
        error = json.loads(result.stdout)["error"]
        assert error["code"] == "op" and error["op"] == 1 and error["field"] == "title"
        assert [(p["op"], p["field"]) for p in error["problems"]] == [
            (1, "title"),
            (2, "id"),
            (3, "colour"),
            (3, "kind"),
            (4, "successor"),
        ]
        assert snapshot(root) == before

    def test_one_op_with_several_bad_fields_names_each(self, run: Run, root: Path) -> None:
        """An add with a bad date, a bad ref and no body: three problems of op 1."""
        op = {"op": "add", "kind": "D", "title": "t", "area": "a", "date": "yesterday", "refs": ["nope"]}
        (root / "a.json").write_text(json.dumps({"ops": [op]}))
        result = run("import", str(root / "a.json"))
        assert result.exit_code == 2
        assert "3 problems; nothing was written" in result.stderr  # one op: "in the batch" only for several
        for words in (
            "op 1: date: 'yesterday' is not a date",
            "op 1: refs: 'nope' is not an id",
            "op 1: add needs body",
        ):
            assert words in result.stderr


class TestRequestIdDigest:
    def test_a_request_id_reused_for_a_different_batch_is_refused(self, run: Run, root: Path) -> None:
        """landing-7 applied to one batch, then sent with another: exit 2, the message says so, nothing written."""
        (root / "one.json").write_text(add_ops(1))
        (root / "two.json").write_text(add_ops(2))
        assert run("import", str(root / "one.json"), "--request-id", "landing-7").exit_code == 0
        before = snapshot(root)
        result = run("import", str(root / "two.json"), "--request-id", "landing-7", "--json")
        assert result.exit_code == 2
        assert "request id 'landing-7' was already used for a different batch" in result.stderr
        assert json.loads(result.stdout)["error"]["field"] == "request_id"
        assert snapshot(root) == before
        again = run("import", str(root / "one.json"), "--request-id", "landing-7")
        assert again.exit_code == 0 and again.stdout.startswith("already applied: ")


def test_a_large_import_summarises_its_ids(run: Run, root: Path, tmp_path: Path) -> None:
    """An import of 5,000 adds printed every id on one line (40 KB); past 20 the summary gives the count and
    the ends, and --json still lists every one."""
    ops = [{"op": "add", "kind": "todo", "title": f"Todo number {n}", "area": "a", "body": "b"} for n in range(25)]
    (tmp_path / "ops.json").write_text(json.dumps({"ops": ops}))
    result = run("import", str(tmp_path / "ops.json"))
    assert result.exit_code == 0
    assert result.stdout.strip() == "added 25 entries (T-001, T-002, T-003 ... T-025; --json lists them all)"
    few = [{"op": "add", "kind": "todo", "title": f"Other {n}", "area": "a", "body": "b"} for n in range(2)]
    (tmp_path / "few.json").write_text(json.dumps({"ops": few}))
    assert run("import", str(tmp_path / "few.json")).stdout.strip() == "added T-026, T-027"


def test_an_automated_body_that_grows_when_prepared_is_clipped_not_refused(root: Path) -> None:
    """An automated writer's body is clipped to the limit; preparing it for its file (bare URLs put in
    `<...>`, a log fenced) may make it longer again: it is clipped once more, with a warning, never a
    refused batch (a domain's distillation was lost for three characters). A person's is refused."""
    from memfiles.config import load_settings
    from memfiles.errors import BatchError
    from memfiles.services.write import write_ops
    from memfiles.store.ops import normalize_automated, parse_op
    from memfiles.store.project import Project

    project = Project(load_settings(root))
    schema = project.settings.schema
    body = " ".join(["see https://example.com/a"] * 200)  # 5,000 characters, a URL in every 25
    raw = {"op": "add", "kind": "lesson", "title": "Machine notes", "area": "a", "body": body}
    op = parse_op(normalize_automated(raw, schema), 1, schema)
    assert len(op.fields["body"]) <= schema.body_limit
    result, _ = write_ops(project, [op])
    stored = next(iter(project.entries())).entry.body
    assert result.added == ["L-001"] and len(stored) <= schema.body_limit and "<https://example.com/a>" in stored
    assert any("clipped" in warning for warning in result.warnings), result.warnings
    person = parse_op({**raw, "title": "By hand", "body": body[: schema.body_limit - 10]}, 1, schema)
    with pytest.raises(BatchError, match="once prepared for its file"):
        write_ops(project, [person])
