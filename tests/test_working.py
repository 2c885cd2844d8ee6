"""Working memory: the seed's contract in memory/working/<run>.md, restored exactly, ended into an episode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfiles.config import load_settings
from memfiles.format.parse import parse
from memfiles.services.agents import working
from memfiles.services.agents.promote import entry_json_by_id
from memfiles.store.project import Project
from tests.conftest import Run, snapshot

CONTRACT = [
    "goal",
    "stage",
    "hypothesis",
    "last_action",
    "last_observation",
    "next_step",
    "blockers",
    "evidence_refs",
    "active_action_ids",
    "todo_active",
    "todo_done",
    "todo_blocked",
]


def show(run: Run, *args: str) -> dict:
    result = run("working", "show", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["working"]


@pytest.fixture
def started(run: Run) -> Run:
    result = run(
        "working", "start", "--run", "fix-ci", "--goal", "Make the hook tests pass offline", "--stage", "explore"
    )
    assert result.exit_code == 0, result.output
    return run


class TestStartAndShow:
    def test_start_writes_a_memory_file_with_the_contract_and_a_gitignore(self, started: Run, root: Path) -> None:
        """start writes memory/working/<run>.md (a memory file that checks clean) and a .gitignore ignoring it."""
        path = root / "memory" / "working" / "fix-ci.md"
        assert path.is_file()
        assert parse(path.read_text(), "x").entries[0].id == "W-001"
        gitignore = (root / "memory" / "working" / ".gitignore").read_text()
        assert "*" in gitignore.splitlines() and "!.gitignore" in gitignore
        assert started("check").exit_code == 0
        state = show(started, "--run", "fix-ci")
        assert list(state)[5:] == CONTRACT
        assert state["goal"] == "Make the hook tests pass offline" and state["stage"] == "explore"
        assert state["status"] == "active" and state["path"] == "memory/working/fix-ci.md"

    def test_show_restores_every_field_exactly_from_a_fresh_process_view(self, started: Run, root: Path) -> None:
        """Every field set (odd characters included) reads back exactly, as a new process would see it."""
        values = {
            "hypothesis": "try-repo needs pip's index; `language: system` avoids it — maybe | pipes * stars",
            "last-action": "ran pytest -x tests/test_hooks.py",
            "last-observation": "E   ModuleNotFoundError: No module named 'yaml' (## not a heading)",
            "next-step": "add pyyaml to the dev extra",
        }
        args = [item for name, value in values.items() for item in (f"--{name}", value)]
        args += ["--blocker", "the index is busy", "--blocker", "- a dash first", "--action-id", "job-17"]
        args += ["--evidence", "tests/test_hooks.py:12", "--evidence", "commit:1a2b3c4"]
        assert started("working", "set", "--run", "fix-ci", *args).exit_code == 0
        started("working", "todo", "add", "Pin pre-commit in the dev extra", "--run", "fix-ci")
        started("working", "todo", "add", "Write the try-repo test", "--run", "fix-ci")
        started("working", "todo", "add", "Ask about the proxy", "--run", "fix-ci")
        started("working", "todo", "done", "W-002", "--run", "fix-ci")
        started("working", "todo", "block", "ask about the proxy", "--note", "nobody answers", "--run", "fix-ci")
        state = working.require(Project(load_settings(root)), "fix-ci").as_json()  # read straight from the file
        assert state["hypothesis"] == values["hypothesis"]
        assert state["last_observation"] == values["last-observation"]
        assert state["blockers"] == ["the index is busy", "- a dash first"]
        assert state["active_action_ids"] == ["job-17"]
        assert state["evidence_refs"] == ["tests/test_hooks.py:12", "commit:1a2b3c4"]
        assert [t["task"] for t in state["todo_active"]] == ["Write the try-repo test"]
        assert [t["id"] for t in state["todo_done"]] == ["W-002"]
        assert state["todo_blocked"] == [{"id": "W-004", "task": "Ask about the proxy", "note": "nobody answers"}]
        assert show(started, "--run", "fix-ci") == state
        assert started("check").exit_code == 0 and started("fmt", "--check").exit_code == 0

    def test_values_longer_than_a_line_read_back_whole(self, started: Run, root: Path) -> None:
        """A value or a list item longer than the wrap width (the write path wraps long list items, md013)
        reads back as given, and the run stays usable: set, a todo and end --episode after it."""
        long = " ".join(f"word{n}" for n in range(40))
        blocker = " ".join(f"blk{n}" for n in range(40))
        result = started("working", "set", "--next-step", long, "--blocker", blocker)
        assert result.exit_code == 0, result.output
        assert "\n  word" in (root / "memory" / "working" / "fix-ci.md").read_text()  # wrapped in the file
        state = show(started)
        assert state["next_step"] == long and state["blockers"] == [blocker]
        assert started("working", "set", "--stage", "test").exit_code == 0 and show(started)["next_step"] == long
        assert started("working", "todo", "add", "A task").exit_code == 0
        assert started("working", "end", "--episode", "--outcome", "Done.").exit_code == 0
        assert started("check").exit_code == 0

    def test_a_todo_named_loosely_is_echoed_by_its_id(self, started: Run) -> None:
        """todo done w-2 (or its text) says which todo it marked, by its id and task."""
        assert started("working", "todo", "add", "Pin the dev extra").exit_code == 0
        done = started("working", "todo", "done", "w-2")
        assert done.exit_code == 0 and done.stdout.strip() == "W-002 Pin the dev extra: done"

    def test_set_changes_only_the_fields_given(self, started: Run) -> None:
        """set leaves every field it was not given as it was; --clear empties one; --add-evidence appends."""
        started("working", "set", "--hypothesis", "h1", "--evidence", "a.py")
        started("working", "set", "--next-step", "n1", "--add-evidence", "b.py")
        state = show(started)
        assert state["hypothesis"] == "h1" and state["next_step"] == "n1" and state["stage"] == "explore"
        assert state["evidence_refs"] == ["a.py", "b.py"]
        started("working", "set", "--clear", "hypothesis", "--clear", "evidence_refs")
        state = show(started)
        assert state["hypothesis"] is None and state["evidence_refs"] == [] and state["next_step"] == "n1"

    def test_the_one_active_run_is_the_default_and_memfiles_run_names_one(self, started: Run, monkeypatch) -> None:
        """Without --run the one active run is used; with two, MEMFILES_RUN picks one and else it is an error."""
        assert show(started)["run"] == "fix-ci"
        started("working", "start", "--run", "other", "--goal", "Another goal")
        result = started("working", "show")
        assert result.exit_code == 2 and "several runs are active (fix-ci, other)" in result.output
        monkeypatch.setenv("MEMFILES_RUN", "other")
        assert show(started)["goal"] == "Another goal"


class TestBadInput:
    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["working", "start", "--run", "../escape", "--goal", "g"], "run '../escape'"),
            (["working", "start", "--run", "", "--goal", "g"], "run '': use 1-64 letters"),
            (["working", "start", "--run", "fix-ci", "--goal", "again"], "already has working memory"),
            (["working", "set", "--run", "nope", "--stage", "x"], "no working memory for run 'nope'"),
            (["working", "set", "--stage", "two\nlines"], "stage must be one line"),
            (["working", "set", "--evidence", "a,b"], "holds a comma"),
            (["working", "todo", "done", "W-999"], "has no todo 'W-999'"),
            (["working", "todo", "add", "x" * 200], "title is 200 characters"),
            (["working", "set", "--clear", "stage", "--stage", "x"], "--clear stage and --stage do not go together"),
            (["working", "set", "--clear", "blockers", "--blocker", "x"], "--clear blockers and --blocker do not"),
            (["working", "set", "--clear", "evidence_refs", "--add-evidence", "x"], "and --add-evidence do not"),
        ],
    )
    def test_bad_input_exits_2_with_a_message_and_writes_nothing(
        self, started: Run, root: Path, args: list[str], message: str
    ) -> None:
        """A bad run name, a second start, an unknown run or todo, a multi-line value: exit 2, nothing written."""
        before = snapshot(root)
        result = started(*args)
        assert result.exit_code == 2, result.output
        assert message in result.output and "Traceback" not in result.output
        assert snapshot(root) == before

    def test_a_set_or_todo_to_the_values_there_says_nothing_changed(self, started: Run, root: Path) -> None:
        """`set --stage x` twice answered `updated: []` with no word, and said "run fix-ci saved"; the same
        for a todo marked done twice. Both say nothing changed now, and write nothing."""
        assert started("working", "set", "--stage", "x").exit_code == 0
        before = snapshot(root)
        again = started("working", "set", "--stage", "x")
        assert again.exit_code == 0 and "saved" not in again.stdout
        assert "nothing changed: run fix-ci already holds these values" in again.stderr
        said = json.loads(started("working", "set", "--stage", "x", "--json").stdout)
        assert said["updated"] == [] and said["warnings"] == ["nothing changed: run fix-ci already holds these values"]
        todo = started("working", "todo", "add", "Write the test").stdout.strip()
        started("working", "set", "--add-evidence", "D-1")
        again = started("working", "set", "--add-evidence", "d-001")  # stored as D-001: the same ref
        assert "nothing changed" in again.stderr and "saved" not in again.stdout
        assert snapshot(root) != before and started("working", "todo", "done", todo).exit_code == 0
        done = snapshot(root)
        twice = started("working", "todo", "done", todo)
        assert twice.exit_code == 0 and f"nothing changed: {todo} is done already" in twice.stderr
        assert snapshot(root) == done

    def test_a_bad_value_names_its_field_as_an_op_error(self, started: Run) -> None:
        """A two-line stage or an empty goal was `usage` with field null; add names the field of a bad
        value (code op), and so does working now."""
        for args, field in (
            (["--stage", "two\nlines"], "stage"),
            (["--goal", " "], "goal"),
            (["--evidence", "a,b"], "evidence_refs"),
        ):
            result = started("working", "set", *args, "--json")
            error = json.loads(result.stdout)["error"]
            assert result.exit_code == 2 and (error["code"], error["field"]) == ("op", field), error

    def test_set_with_nothing_to_set_is_a_usage_error(self, started: Run) -> None:
        """`working set` without a field option says so (exit 2)."""
        result = started("working", "set")
        assert result.exit_code == 2 and "nothing to set" in result.output

    def test_no_active_run_says_how_to_start_one(self, run: Run) -> None:
        """`working show` in a project without runs explains how to start one."""
        result = run("working", "show")
        assert result.exit_code == 2 and "working start" in result.output

    def test_a_state_edited_into_nonsense_is_named(self, started: Run, root: Path) -> None:
        """A hand edit that breaks the state's field list gives a message naming the file, not a traceback."""
        path = root / "memory" / "working" / "fix-ci.md"
        path.write_text(path.read_text().replace("- **stage**: explore", "stage was explore"))
        result = started("working", "show")
        assert result.exit_code == 2 and "memory/working/fix-ci.md" in result.output


class TestWriteObjects:
    def test_each_command_names_what_it_changed(self, started: Run) -> None:
        """--json of working set, todo done and end lists the entries each changed under `updated` and
        gives their entry objects (docs/json.md's write object); they said `updated: []` before."""

        def write(*args: str) -> dict:
            result = started("working", *args, "--json")
            assert result.exit_code == 0, result.output
            return json.loads(result.stdout)

        changed = write("set", "--stage", "test")
        assert (changed["added"], changed["updated"]) == ([], ["W-001"])
        todo = write("todo", "add", "ask about the proxy")["added"][0]
        done = write("todo", "done", todo)
        assert done["updated"] == [todo] and todo in [e["id"] for e in done["entries"]]
        assert [e["status"] for e in done["entries"] if e["id"] == todo] == ["done"]
        ended = write("end")
        assert ended["updated"] == ["W-001"] and ended["entries"][0]["status"] == "ended"
        again = write("end", "--run", "fix-ci")
        assert again["replayed"] is True and again["updated"] == []


class TestEnd:
    def test_end_with_episode_records_the_run_and_is_safe_to_repeat(self, started: Run, root: Path) -> None:
        """end --episode adds an episode citing the run and its evidence; the state records it; again adds none."""
        started("working", "set", "--last-observation", "ModuleNotFoundError: No module named 'yaml'")
        started("working", "set", "--evidence", "README.md")
        result = started("working", "end", "--episode", "--outcome", "Fixed by adding pyyaml.", "--json")
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["added"] == ["E-001"] and data["working"]["status"] == "ended"
        assert data["working"]["promoted"] == ["E-001"]
        episode = entry_json_by_id(Project(load_settings(root)), "E-001")
        assert episode is not None
        assert episode["kind"] == "episode" and episode["body"].startswith("Fixed by adding pyyaml.")
        assert "run:fix-ci" in episode["evidence"] and "README.md" in episode["evidence"]
        assert "`ModuleNotFoundError: No module named 'yaml'`" in episode["body"]
        again = started("working", "end", "--episode", "--run", "fix-ci", "--json")
        assert again.exit_code == 0 and json.loads(again.stdout)["added"] == ["E-001"]
        assert len(json.loads(started("list", "--kind", "episode", "--json").stdout)["entries"]) == 1

    def test_the_signature_is_the_error_alone_whatever_the_hypothesis(self, started: Run, root: Path) -> None:
        """The episode's signature is the error line of the last observation, not the observation run on
        into the hypothesis and the blockers: two runs failing the same way get the same signature."""
        started("working", "set", "--last-observation", "ModuleNotFoundError: No module named 'yaml'")
        started("working", "set", "--hypothesis", "maybe the venv is stale")
        started("working", "set", "--blocker", "the CI image is old")
        result = started("working", "end", "--episode", "--outcome", "Fixed.", "--json")
        assert result.exit_code == 0, result.output
        episode = entry_json_by_id(Project(load_settings(root)), "E-001")
        assert episode is not None
        assert "- **signature**: `ModuleNotFoundError: No module named 'yaml'`\n" in episode["body"] + "\n"

    def test_a_working_file_is_kind_working(self, started: Run) -> None:
        """The run's entries are of kind working (so searches leave them out by default)."""
        entries = json.loads(started("list", "--kind", "working", "--json").stdout)["entries"]
        assert [e["id"] for e in entries] == ["W-001"]

    def test_a_second_end_writes_nothing_and_says_the_new_outcome_was_not_recorded(
        self, started: Run, root: Path
    ) -> None:
        """end after end: exit 0, replayed true, the episode of the first end, a warning that the new
        outcome was not recorded, and no file changed."""
        assert started("working", "end", "--episode", "--outcome", "Done.").exit_code == 0
        before = snapshot(root)
        again = started("working", "end", "--run", "fix-ci", "--episode", "--outcome", "Done again", "--json")
        assert again.exit_code == 0, again.output
        data = json.loads(again.stdout)
        assert data["replayed"] is True and data["added"] == ["E-001"]
        assert any("already ended" in w and "not recorded" in w for w in data["warnings"])
        assert snapshot(root) == before
        plain = json.loads(started("working", "end", "--run", "fix-ci", "--json").stdout)
        assert plain["replayed"] is True and plain["added"] == ["E-001"]  # without --episode it said []
        assert snapshot(root) == before


class TestEndedRun:
    @pytest.mark.parametrize(
        "args",
        [
            ("working", "set", "--run", "fix-ci", "--stage", "x"),
            ("working", "todo", "add", "--run", "fix-ci", "One more thing"),
        ],
    )
    def test_an_ended_run_refuses_changes(self, started: Run, root: Path, args: tuple[str, ...]) -> None:
        """set or todo on an ended run: exit 2 saying the run ended; nothing written."""
        assert started("working", "end").exit_code == 0
        before = snapshot(root)
        result = started(*args)
        assert result.exit_code == 2 and "run fix-ci ended" in result.stderr
        assert snapshot(root) == before

    def test_the_generic_writes_do_not_reopen_a_run(self, started: Run, root: Path) -> None:
        """set W-001 --status active, or an import update of it, on an ended run: exit 2 naming the working
        commands; the run stays a record."""
        assert started("working", "end").exit_code == 0
        before = snapshot(root)
        reopened = started("set", "W-001", "--status", "active")
        assert reopened.exit_code == 2 and "W-001 is a run's working memory" in reopened.stderr
        batch = json.dumps({"ops": [{"op": "update", "id": "w-1", "status": "active"}]})
        assert started("import", "-", input=batch).exit_code == 2
        assert snapshot(root) == before


class TestRunNames:
    def test_two_starts_in_one_second_get_runs_of_their_own(self, root: Path) -> None:
        """Two `working start` without --run at once (real processes): two runs, two files, one state each."""
        import subprocess
        import sys

        args = [sys.executable, "-m", "memfiles.cli", "--root", str(root), "working", "start", "--goal"]
        env = {k: v for k, v in __import__("os").environ.items() if k != "MEMFILES_RUN"}
        procs = [
            subprocess.Popen([*args, goal], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for goal in ("Goal A", "Goal B")
        ]
        outputs = [proc.communicate(timeout=300) for proc in procs]
        assert [proc.returncode for proc in procs] == [0, 0], outputs
        names = [out.strip() for out, _err in outputs]
        assert len(set(names)) == 2 and all(name.startswith("run-") for name in names)
        project = Project(load_settings(root))
        goals = {name: working.require(project, name).values["goal"] for name in names}
        assert sorted(goals.values()) == ["Goal A", "Goal B"]
        for name in names:
            memory = parse((root / "memory" / "working" / f"{name}.md").read_text(), "x")
            assert [s.name for s in memory.sections if s.entries] == ["State"]
            assert len(memory.entries) == 1

    def test_start_refuses_a_run_whose_file_appeared_meanwhile(self, run: Run, root: Path, monkeypatch) -> None:
        """The check that a run is new is made under the write lock: a file written between the first look
        and the write is not given a second state entry."""
        from memfiles.errors import MemfilesError

        project = Project(load_settings(root))
        service = working.Working(project)
        real_load = working.load
        raced: list[bool] = []

        def late(project_: Project, name: str):  # the first look sees no run; then another writer starts it
            found = real_load(project_, name)
            if not raced:
                raced.append(True)
                assert run("working", "start", "--run", "race", "--goal", "The other one").exit_code == 0
            return found

        monkeypatch.setattr(working, "load", late)
        with pytest.raises(MemfilesError, match="run race already has working memory"):
            service.start("race", "Mine")
        monkeypatch.setattr(working, "load", real_load)
        assert working.require(project, "race").values["goal"] == "The other one"
        assert len(parse((root / "memory" / "working" / "race.md").read_text(), "x").entries) == 1


class TestList:
    def test_list_shows_each_run_with_status_goal_and_last_update(self, started: Run) -> None:
        """working list --json: every run, its status, goal and last update; text: one line each."""
        assert started("working", "start", "--run", "other", "--goal", "Second goal").exit_code == 0
        assert started("working", "end", "--run", "fix-ci").exit_code == 0
        result = started("working", "list", "--json")
        assert result.exit_code == 0, result.output
        runs = json.loads(result.stdout)["runs"]
        assert [(r["run"], r["status"], r["goal"]) for r in runs] == [
            ("fix-ci", "ended", "Make the hook tests pass offline"),
            ("other", "active", "Second goal"),
        ]
        assert all(r["updated"].endswith("Z") and r["path"].startswith("memory/working/") for r in runs)
        text = started("working", "list").stdout.splitlines()
        assert text[0].startswith("fix-ci") and "ended" in text[0] and "Second goal" in text[1]

    def test_list_without_runs_is_empty(self, run: Run) -> None:
        """No run yet: {"runs": []}, exit 0."""
        result = run("working", "list", "--json")
        assert result.exit_code == 0 and json.loads(result.stdout) == {"runs": []}


def test_the_working_folder_made_by_another_start_meanwhile_is_no_error(root: Path, monkeypatch) -> None:
    """Two `working start` at once both find no memory/working/ and both make it: the second mkdir finds
    it made (FileExistsError, once 1 in 15 runs of four starts at once) and goes on, no error."""
    project = Project(load_settings(root))
    folder = project.settings.memory_dir / working.FOLDER
    folder.mkdir(parents=True)  # the other start got there first, after this one looked
    monkeypatch.setattr(Path, "is_dir", lambda self: False if self == folder else Path.exists(self))
    working._ensure_folder(project)
    assert folder.exists()
