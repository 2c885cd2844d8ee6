"""Promotion, evidence links checked by audit, promotion candidates, the persona, id completion."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.shell_completion import ShellComplete

from memfiles.cli.main import cli
from memfiles.config import load_settings
from memfiles.services.agents.promote import entry_json_by_id
from memfiles.store.project import Project
from tests.conftest import Run, snapshot

AT = "@@"  # apart, so that `memfiles refs --dangling` on this repository does not read it


def add_episode(run: Run, title: str, body: str, **extra: str) -> str:
    args = [f"--{key}={value}" for key, value in extra.items()]
    result = run("add", "-k", "episode", "-t", title, "-a", "ci", "--body", body, *args)
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


def entry(root: Path, entry_id: str) -> dict:
    found = entry_json_by_id(Project(load_settings(root)), entry_id)
    assert found is not None
    return found


class TestPromote:
    def test_promote_writes_a_new_entry_citing_its_sources_and_marks_them(self, run: Run, root: Path) -> None:
        """promote E-1 E-2 --to procedure: a new procedure with evidence [E-1, E-2]; each source records it."""
        first = add_episode(run, "Hook tests failed on yaml", "ModuleNotFoundError: No module named 'yaml' in CI.")
        second = add_episode(run, "Hook tests failed on yaml again", "Same import error on a clean clone.")
        result = run(
            "promote",
            first,
            second,
            "--to",
            "procedure",
            "--reason",
            "Twice the same failure",
            "--title",
            "Install the dev extra before the hook tests",
            "--json",
        )
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["added"] == ["P-001"] and data["updated"] == [first, second]
        new = entry(root, "P-001")
        assert new["kind"] == "procedure" and new["evidence"] == [first, second]
        assert "Twice the same failure" in new["body"] and first in new["body"]
        assert "No module named 'yaml' in CI" in new["body"]  # what the episodes say, not their titles only
        for source in (first, second):
            assert entry(root, source)["status"] == "promoted" and entry(root, source)["promoted"] == ["P-001"]
        assert run("check").exit_code == 0

    def test_a_default_body_of_many_episodes_fits_the_limit(self, run: Run, root: Path) -> None:
        """Twelve long episodes promoted with no --body: each is summed up on its line, the whole under the
        body limit (the write would refuse a longer one)."""
        ids = [add_episode(run, f"Long run {n}", f"Run {n}: " + "step after step " * 100) for n in range(12)]
        result = run("promote", *ids, "--to", "procedure", "--reason", "Twelve runs", "--json")
        assert result.exit_code == 0, result.output
        body = entry(root, json.loads(result.stdout)["added"][0])["body"]
        assert len(body) <= 2000 and all(i in body for i in ids)

    def test_one_episode_named_twice_is_cited_once(self, run: Run, root: Path) -> None:
        """promote E-1 e-001 and the @@-reference of E-001: one source, cited once in the evidence and the body."""
        first = add_episode(run, "Deploy failed on a locked table", "The migration waited on a lock.")
        result = run("promote", "E-1", "e-001", AT + "E-001", "--to", "insight", "--reason", "Locks", "--json")
        assert result.exit_code == 0, result.output
        new = entry(root, json.loads(result.stdout)["added"][0])
        assert new["evidence"] == [first] and new["body"].count(first) == 1

    def test_the_same_promote_again_does_not_write_a_second_entry(self, run: Run, root: Path) -> None:
        """Repeating the exact command (after a crash, say) replays the first write: still one procedure."""
        first = add_episode(run, "Deploy failed on a locked table", "The migration waited on a lock.")
        args = ("promote", first, "--to", "insight", "--reason", "Migrations and locks")
        said = json.loads(run(*args, "--json").stdout)
        assert (said["added"], said["updated"], said["replayed"]) == (["I-001"], [first], False)
        before = snapshot(root)
        again = run(*args, "--json")
        assert again.exit_code == 0 and snapshot(root) == before
        said = json.loads(again.stdout)  # it claimed "replayed": false, as if it had written again
        assert (said["added"], said["updated"], said["replayed"]) == (["I-001"], [first], True)
        assert "already done: nothing changed" in run(*args).stdout
        assert [e["id"] for e in json.loads(run("list", "--kind", "insight", "--json").stdout)["entries"]] == ["I-001"]
        before = snapshot(root)
        other = run("promote", first, "--to", "insight", "--reason", "Another reason", "--json")
        assert other.exit_code == 1 and snapshot(root) == before  # another reason: refused, naming I-001
        refused = json.loads(other.stdout)["error"]
        assert refused["code"] == "refused" and f"{first} was promoted to I-001 already" in refused["message"]
        assert [(p["id"], p["line"] is not None) for p in refused["problems"]] == [(first, True)]
        other = run("promote", first, "--to", "insight", "--reason", "Another reason", "--again", "--json")
        said = json.loads(other.stdout)  # asked again: a second insight from the same episode, and said
        assert said["added"] == ["I-002"] and any("promoted to I-001 already" in w for w in said["warnings"])

    def test_an_episode_promoted_before_is_refused_unless_asked_again(self, run: Run, root: Path) -> None:
        """`promote E-001 --to procedure --reason again` on an episode already promoted wrote a second
        procedure (exit 0, a warning): now exit 1 naming the procedure, nothing written; --again makes it."""
        first = add_episode(run, "Deploy of the api failed on a missing secret", "kubectl apply failed.")
        assert run("promote", first, "--to", "procedure", "--reason", "Deploys need the secret").exit_code == 0
        before = snapshot(root)
        result = run("promote", first, "--to", "procedure", "--reason", "again")
        assert result.exit_code == 1 and snapshot(root) == before
        assert f"{first} was promoted to P-001 already" in result.stderr and "--again" in result.stderr
        assert run("promote", first, "--to", "insight", "--reason", "Secrets matter").exit_code == 0  # another kind
        again = run("promote", first, "--to", "procedure", "--reason", "again", "--again", "--json")
        assert again.exit_code == 0 and json.loads(again.stdout)["added"] == ["P-002"]

    def test_the_title_is_the_task_the_episodes_share_and_the_first_sentence_reads(self, run: Run, root: Path) -> None:
        """Without --title the procedure took the first episode's title (its failure), and its first sentence
        read "again Promoted from: - E-001 ..." (the reason run into the list). The title is now the task
        the episodes share, and the first sentence is a sentence."""
        from memfiles.services.hook_text import first_sentence

        one = add_episode(run, "Release of 2.3 failed on the fuzz step", "The fuzzer found a crash in parse_line.")
        two = add_episode(run, "Release of 2.4 failed: the signing key had expired", "gpg refused to sign.")
        result = run("promote", one, two, "--to", "procedure", "--reason", "again", "--json")
        new = entry(root, json.loads(result.stdout)["added"][0])
        assert new["title"] == "Release"
        assert first_sentence(new["body"]) == "Learnt from 2 runs: Again."
        three = add_episode(run, "Deploy the api to staging", "Done.\n\n- **goal**: Deploy the api to staging")
        four = add_episode(
            run, "Pods crashed on a missing REDIS_URL", "Failed.\n\n- **goal**: Deploy the api to staging"
        )
        result = run("promote", three, four, "--to", "procedure", "--reason", "The same task twice.", "--json")
        new = entry(root, json.loads(result.stdout)["added"][0])
        assert new["title"] == "Deploy the api to staging"  # the runs' goal (working end --episode records it)
        assert first_sentence(new["body"]) == "Learnt from 2 runs: The same task twice."

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["E-009", "--to", "procedure", "--reason", "r"], "no entry E-009"),
            (["D-001", "--to", "procedure", "--reason", "r"], "only episodes are promoted"),
            (["E-001", "--to", "procedure", "--reason", "  "], "give a reason (--reason): why these episodes"),
            (["E-001", "--to", "insight", "--reason", ""], "deserve to become an insight"),
            (["E-001", "--to", "lesson", "--reason", "r"], "Invalid value for '--to'"),
            (["E-001", "--to", "insight", "--reason", "r", "--title", "t" * 121], "--title is 121 characters"),
        ],
    )
    def test_bad_promotions_exit_2_and_write_nothing(self, run: Run, root: Path, args: list[str], message: str) -> None:
        """A missing id, a non-episode, an empty reason, an unknown target or a title over the limit (it was
        clipped in silence): exit 2, files untouched."""
        add_episode(run, "An episode", "Something happened.")
        run("add", "-k", "decision", "-t", "A decision", "-a", "x", "--body", "Because.")
        before = snapshot(root)
        result = run("promote", *args)
        assert result.exit_code == 2 and message in result.output
        assert snapshot(root) == before


class TestAuditLayers:
    def test_evidence_that_names_nothing_is_reported(self, run: Run, root: Path) -> None:
        """audit names a missing entry, file, commit and run cited as evidence, as path:line: code message."""
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        (root / "notes.txt").write_text("x")
        ops = [
            {
                "op": "add",
                "kind": "insight",
                "title": "Locks and migrations",
                "area": "db",
                "body": "Why.",
                "evidence": ["E-404", "notes.txt", "src/gone.py:12", "commit:0123456789abcdef", "run:never", "run:r1"],
            }
        ]
        assert run("import", "-", input=json.dumps({"ops": ops})).exit_code == 0
        run("working", "start", "--run", "r1", "--goal", "g")
        result = run("audit")
        assert result.exit_code == 1
        lines = [line for line in result.stdout.splitlines() if "evidence-" in line]
        codes = sorted(line.split(": ", 1)[1].split(" ", 1)[0] for line in lines)
        assert codes == [
            "evidence-dangling",
            "evidence-missing-file",
            "evidence-unknown-commit",
            "evidence-unknown-run",
        ]
        assert all(line.startswith("memory/insights.md:") for line in lines)

    def test_an_entry_cited_in_any_spelling_is_that_entry(self, run: Run, root: Path) -> None:
        """`--evidence E-1 --evidence e-2` was stored as typed, and audit then said E-1 does not exist and
        took e-2 for a run. Evidence naming an entry is stored as ids are (E-001), once; a hand-written
        `E-1` in a file is read as E-001 too."""
        add_episode(run, "An episode", "Something happened.")
        add_episode(run, "Another episode", "Something else happened.")
        args = ["--evidence", "E-1", "--evidence", "e-2", "--evidence", "@@" + "E-0001", "--evidence", "fix-ci"]
        assert run("add", "-k", "insight", "-t", "Why", "-a", "x", "--body", "Because.", *args).exit_code == 0
        text = (root / "memory" / "insights.md").read_text()
        assert "- evidence: E-001, E-002, fix-ci\n" in text
        found = run("audit", "--json")
        codes = [(f["code"], f["message"]) for f in json.loads(found.stdout)["findings"] if "evidence" in f["code"]]
        assert codes == [("evidence-unknown-run", codes[0][1])] and "fix-ci" in codes[0][1]
        (root / "memory" / "insights.md").write_text(text.replace("E-001, E-002, fix-ci", "E-1, e-002"))
        assert not [f for f in json.loads(run("audit", "--json").stdout)["findings"] if "evidence" in f["code"]]

    def test_distiller_run_ids_resolve_through_the_experience_logs(self, run: Run, root: Path) -> None:
        """A bare run id cited by a distilled entry resolves when memory/<domain>/experiences.jsonl has it."""
        (root / "memory" / "sta").mkdir()
        record = {"timestamp": "2026-10-02T09:14:00Z", "run_id": "sta-0101", "issues_encountered": ["x"]}
        (root / "memory" / "sta" / "experiences.jsonl").write_text(json.dumps(record) + "\n")
        ops = [
            {
                "op": "add",
                "kind": "lesson",
                "title": "A lesson",
                "area": "sta",
                "body": "B.",
                "evidence": ["sta-0101", "sta-0999"],
            }
        ]
        run("import", "-", input=json.dumps({"ops": ops}))
        out = run("audit").stdout
        assert "run sta-0999" in out and "run sta-0101" not in out

    def test_repeated_episodes_are_listed_as_promotion_candidates(self, run: Run) -> None:
        """Three recorded episodes of one error signature are one promote-candidate finding (info, exit 0)."""
        for n in range(3):
            add_episode(run, f"CI run {n} failed", f"pytest: ModuleNotFoundError: No module named 'yaml' (run {n})")
        add_episode(run, "Something else", "An unrelated success.")
        result = run("audit", "--json")
        assert result.exit_code == 0, result.output
        found = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "promote-candidate"]
        assert len(found) == 1 and found[0]["detail"]["ids"] == ["E-001", "E-002", "E-003"]
        assert found[0]["severity"] == "info" and "memfiles promote E-001 E-002 E-003" in found[0]["message"]
        run("promote", "E-001", "E-002", "E-003", "--to", "procedure", "--reason", "Three times")
        assert not [
            f for f in json.loads(run("audit", "--json").stdout)["findings"] if f["code"] == "promote-candidate"
        ]

    def test_a_procedure_without_evidence_is_an_info_finding(self, run: Run) -> None:
        """A procedure that cites nothing is reported as evidence-none, which does not fail audit."""
        run("add", "-k", "procedure", "-t", "Do it this way", "-a", "x", "--body", "Steps.")
        result = run("audit")
        assert result.exit_code == 0 and "evidence-none P-001 is a procedure" in result.stdout


class TestPersona:
    def test_persona_is_returned_on_request_and_never_indexed(self, run: Run, root: Path) -> None:
        """memory/persona.md is printed by `persona`, and is no memory file even with an entry-like heading."""
        text = "# Persona\n\nBe terse.\n\n### D-001: looks like an entry\n\n- date: 2026-01-01\n"
        (root / "memory" / "persona.md").write_text(text)
        assert json.loads(run("persona", "--json").stdout)["persona"] == {
            "path": "memory/persona.md",
            "exists": True,
            "text": text,
        }
        assert run("check").exit_code == 0
        assert json.loads(run("list", "--json").stdout)["entries"] == []
        assert Project(load_settings(root)).markdown_files() == []

    def test_a_persona_that_is_not_utf8_is_named_with_its_line(self, run: Run, root: Path) -> None:
        """A persona.md saved in Latin-1: exit 2 naming the file and line (it was a traceback, exit 1)."""
        (root / "memory" / "persona.md").write_bytes(b"Be terse.\n\xff\n")
        for args in (("persona",), ("persona", "--json")):
            result = run(*args)
            assert result.exit_code == 2 and "memory/persona.md:2: not UTF-8 text" in result.stderr

    def test_a_persona_that_is_a_folder_is_an_io_error(self, run: Run, root: Path) -> None:
        """memory/persona.md as a folder answered `exists: false`, as if none had been written."""
        (root / "memory" / "persona.md").mkdir(parents=True)
        result = run("persona", "--json")
        error = json.loads(result.stdout)["error"]
        assert result.exit_code == 2 and (error["code"], error["path"]) == ("io", "memory/persona.md")
        assert "is not a file" in error["message"]

    def test_no_persona_says_where_to_write_one(self, run: Run) -> None:
        """Without memory/persona.md, persona says where it would be (exit 0)."""
        result = run("persona")
        assert result.exit_code == 0 and "memory/persona.md" in result.output


class TestCompletion:
    def test_ids_complete_from_the_project(self, run: Run, root: Path) -> None:
        """Shell completion of an ID argument offers the project's ids with their titles."""
        add_episode(run, "First", "One.")
        add_episode(run, "Second", "Two.")
        run("add", "-k", "decision", "-t", "A decision", "-a", "x", "--body", "Because.")
        complete = ShellComplete(cli, {}, "memfiles", "_MEMFILES_COMPLETE")
        items = complete.get_completions(["--root", str(root), "promote"], "E-")
        assert [(i.value, i.help) for i in items] == [("E-001", "First"), ("E-002", "Second")]
        todo = complete.get_completions(["--root", str(root), "working", "todo", "done"], "")
        assert todo == []
