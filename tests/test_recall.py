"""Experience-first recall: layers in the seed's order, mandatory per trigger, empty groups said so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memfiles.cli.entry import subcommand
from memfiles.cli.main import cli
from memfiles.config import load_settings
from memfiles.services.agents.recall import ORDER, TRIGGERS, error_signature
from memfiles.services.watch import Watcher
from memfiles.store.project import Project
from tests.conftest import REPO, Run

EPISODE_BODY = "pytest failed with ModuleNotFoundError: No module named 'yaml'; installing the dev extra fixed it."


def seed(run: Run) -> None:
    ops = [
        {
            "op": "add",
            "kind": "procedure",
            "title": "Run make install before the test suite",
            "area": "ci",
            "body": "The dev extra brings pyyaml and pre-commit; the hook tests import both.",
            "evidence": ["E-001"],
        },
        {
            "op": "add",
            "kind": "episode",
            "title": "Hook tests failed on a missing yaml module",
            "area": "ci",
            "body": EPISODE_BODY,
        },
        {
            "op": "add",
            "kind": "insight",
            "title": "Test dependencies belong in one extra",
            "area": "ci",
            "body": "Every dependency a test imports is declared in the dev extra, so a clean clone passes.",
        },
        {
            "op": "add",
            "kind": "lesson",
            "title": "No module named yaml in the hook tests",
            "area": "ci",
            "body": "The hook tests import yaml from the dev extra. Fix: install with the dev extra (make install).",
        },
        {
            "op": "add",
            "kind": "decision",
            "title": "Install the yaml module system-wide",
            "area": "ci",
            "body": "A decision, not a layer: recall never shows it.",
        },
    ]
    result = run("import", "-", input=json.dumps({"ops": ops}))
    assert result.exit_code == 0, result.output


def recall(run: Run, *args: str) -> dict:
    result = run("recall", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


class TestSignature:
    def test_signature_keeps_the_error_and_wipes_what_changes_between_runs(self) -> None:
        """Paths, line numbers and addresses go; the typed error and its message stay."""
        one = "File \"/tmp/run-1/x.py\", line 12\nModuleNotFoundError: No module named 'yaml' at 0x7f3a2b"
        two = "File \"/home/ci/x.py\", line 99\nModuleNotFoundError: No module named 'yaml' at 0x55aa01"
        assert error_signature(one) == error_signature(two)
        assert error_signature(one).startswith("ModuleNotFoundError: No module named 'yaml'")
        assert error_signature("error: /a/b/c.txt: 3 lines failed") == "error: c.txt: N lines failed"
        assert error_signature("all good, 3 passed") is None
        # a crash says no "error" (it gave no signature, so a failure recall matched no episode by it)
        assert error_signature("./sim: line 4: 1234 Segmentation fault (core dumped)") is not None
        assert error_signature("make: *** [all] Killed") is not None

    @pytest.mark.parametrize(
        ("one", "two"),
        [
            (
                "OperationalError: connection to 10.0.0.12:5432 refused",
                "OperationalError: connection to 10.1.9.7:6543 refused",
            ),
            ("error: timed out after 30.5s", "error: timed out after 12.25s"),
            (
                "fatal: unable to access https://github.com/org/a.git/: 403",
                "fatal: unable to access https://github.com/org/b.git/: 403",
            ),
            ("Error: cannot open C:\\Users\\ann\\build.log", "Error: cannot open D:\\ci\\work\\build.log"),
        ],
    )
    def test_runs_failing_the_same_way_meet_whatever_address_time_or_place(self, one: str, two: str) -> None:
        """A dotted number (an address, a duration) split into `N.0.12:N` and `N.5s`, a URL into `httprepo.git`,
        and a Windows path was kept whole: three runs of one failure gave three signatures."""
        assert error_signature(one) == error_signature(two) is not None

    def test_npm_errors_have_a_signature(self) -> None:
        assert error_signature("npm ERR! code E404") == "npm ERR! code E404"


class TestWithoutIndex:
    def test_layers_come_in_the_seeds_order_for_every_trigger(self, run: Run) -> None:
        """Every trigger returns exactly its mandatory layers, in the order procedure, episode, insight, working."""
        seed(run)
        run("working", "start", "--run", "r1", "--goal", "Make the hook tests pass")
        for trigger, layers in TRIGGERS.items():
            data = recall(run, "make the hook tests pass", "--trigger", trigger, "--run", "r1")
            names = [group["layer"] for group in data["layers"]]
            assert names == [layer for layer in ORDER if layer in layers], trigger
            assert data["index"] == "files" and data["warnings"]

    def test_hits_are_contract_objects_of_the_right_layer_and_decisions_never_appear(self, run: Run) -> None:
        """Each group holds hit objects of its own kind; other kinds (a decision here) are not recalled."""
        seed(run)
        data = recall(run, "the hook tests fail on the yaml module", "--trigger", "turn")
        for group in data["layers"]:
            for hit in group["hits"]:
                assert set(hit) == {"rank", "score", "signals", "entry"}
                assert hit["entry"]["kind"] == group["layer"]
                assert {"evidence", "promoted", "body", "path", "line"} <= set(hit["entry"])
        assert data["layers"][0]["hits"][0]["entry"]["evidence"] == ["E-001"]

    def test_scores_by_words_alone_stay_on_the_one_scale(self, run: Run) -> None:
        """With no index a hit's score is the lexical half of the one scale, read from the share of the
        query's words it holds (at most 0.32: it gave 1.0 for a share of all words, above what the index
        gives a close paraphrase), `signals.lexical` says it, and an id named in the query is 1.0."""
        seed(run)
        hits = [h for g in recall(run, "run make install before the test suite")["layers"] for h in g["hits"]]
        best = max(hits, key=lambda h: h["score"])
        assert best["entry"]["title"] == "Run make install before the test suite"
        assert 0.3 < best["score"] <= 0.32 and best["signals"]["lexical"] == pytest.approx(2 * best["score"], abs=1e-5)
        assert best["signals"]["dense"] is None
        named = [h for g in recall(run, "see e-1")["layers"] for h in g["hits"] if h["entry"]["id"] == "E-001"]
        assert named and named[0]["score"] == 1.0 and named[0]["signals"]["id"] is True

    def test_an_empty_layer_says_so(self, run: Run) -> None:
        """A layer with nothing to show is present, empty, with a note."""
        data = recall(run, "deploy the website", "--trigger", "replan")
        assert [g["layer"] for g in data["layers"]] == ["procedure", "episode", "lesson", "insight"]
        assert all(g["empty"] and g["note"] and g["hits"] == [] for g in data["layers"])

    def test_failure_matches_episodes_on_the_error_signature(self, run: Run) -> None:
        """--trigger failure searches episodes with the error signature of the text given."""
        seed(run)
        text = "Traceback ...\n  File \"/x/y.py\", line 3\nModuleNotFoundError: No module named 'yaml'"
        data = recall(run, text, "--trigger", "failure")
        episode = data["layers"][1]
        assert data["signature"] == "ModuleNotFoundError: No module named 'yaml'"
        assert episode["query"] == data["signature"] and episode["hits"][0]["entry"]["id"] == "E-001"

    def test_lessons_learnt_from_runs_are_recalled_on_a_failure_and_a_turn(self, run: Run) -> None:
        """The distiller's known failure patterns (kind lesson) are prior experience: a failure, a turn, a
        replan and a risky action recall them after the episodes (they were never recalled at all)."""
        seed(run)
        text = "Traceback ...\nModuleNotFoundError: No module named 'yaml'"
        for trigger in ("failure", "turn", "replan", "risky"):
            data = recall(run, text, "--trigger", trigger)
            names = [group["layer"] for group in data["layers"]]
            assert names.index("lesson") == names.index("episode") + 1, trigger
            lesson = data["layers"][names.index("lesson")]
            assert lesson["query"] == data["query"], trigger  # the whole text, not the episodes' signature
            assert [hit["entry"]["id"] for hit in lesson["hits"]] == ["L-001"], trigger
        assert "lesson" not in [group["layer"] for group in recall(run, "make install", "--trigger", "act")["layers"]]

    def test_resume_returns_the_run_state_and_derives_the_query_from_it(self, run: Run) -> None:
        """--trigger resume with no query returns the run's working memory and procedures for its goal."""
        seed(run)
        run("working", "start", "--run", "r1", "--goal", "Run the test suite", "--next-step", "make install")
        data = recall(run, "--trigger", "resume")
        working = data["layers"][-1]
        assert working["layer"] == "working" and not working["empty"]
        assert working["working"]["goal"] == "Run the test suite" and working["working"]["next_step"] == "make install"
        assert data["query"] == "Run the test suite make install"

    def test_resume_of_a_run_that_does_not_exist_names_it(self, run: Run) -> None:
        """--trigger resume --run nosuch with no query: the error says the run has no working memory, not
        only that the query is empty."""
        result = run("recall", "--trigger", "resume", "--run", "nosuch", "--json")
        assert result.exit_code == 2
        assert (
            "run 'nosuch' gives none: no working memory for run 'nosuch'"
            in json.loads(result.stdout)["error"]["message"]
        )

    def test_resume_with_no_query_and_several_or_no_runs_says_why(self, run: Run) -> None:
        """--trigger resume alone, with two active runs (or none): the error says which runs, as
        `working show` does, not only that the query is empty."""
        result = run("recall", "--trigger", "resume")
        assert result.exit_code == 2 and "no run gives one: no active run" in result.stderr
        for name in ("a", "b"):
            assert run("working", "start", "--run", name, "--goal", f"{name} goal").exit_code == 0
        result = run("recall", "--trigger", "resume")
        assert result.exit_code == 2 and "several runs are active (a, b): pass --run" in result.stderr

    def test_a_run_name_that_cannot_be_one_is_refused(self, run: Run) -> None:
        """--run ../../etc: exit 2 naming the run, not a working layer that is merely empty."""
        result = run("recall", "where was I", "--trigger", "resume", "--run", "../../etc")
        assert result.exit_code == 2 and "run '../../etc'" in result.stderr

    def test_working_layer_without_a_run_is_empty_with_the_reason(self, run: Run) -> None:
        """No run known: the working group is empty and says how to start one."""
        data = recall(run, "where was I", "--trigger", "compaction")
        assert data["layers"][-1]["empty"] and "working start" in data["layers"][-1]["note"]

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["--trigger", "sometimes", "x"], "Invalid value for '--trigger'"),
            (["-k", "0", "x"], "Invalid value for '-k'"),
            (["--trigger", "act", "  "], "the query is empty"),
        ],
    )
    def test_bad_input_exits_2(self, run: Run, args: list[str], message: str) -> None:
        """An unknown trigger, k out of range or an empty query: exit 2 with the reason."""
        result = run("recall", *args)
        assert result.exit_code == 2 and message in result.output

    @pytest.mark.parametrize("args", [["--trigger", "bogus"], ["-k", "0"]])
    def test_usage_errors_print_the_error_object_with_json(self, root: Path, args: list[str]) -> None:
        """recall x --trigger bogus --json (and -k 0) through the executable's short path: exit 2 and the
        error object on stdout (code usage), as every other command gives it; the main group the same."""
        probe = (
            "import sys\n"
            "sys.argv = ['memfiles', '--root', sys.argv[1], 'recall', 'x', *sys.argv[2:], '--json']\n"
            "from memfiles.cli.entry import main\n"
            "main()\n"
        )
        done = subprocess.run([sys.executable, "-c", probe, str(root), *args], capture_output=True, text=True, cwd=REPO)
        assert done.returncode == 2
        error = json.loads(done.stdout)["error"]
        assert error["code"] == "usage" and "Invalid value" in error["message"]
        full = CliRunner().invoke(cli, ["--root", str(root), "recall", "x", *args, "--json"])
        assert full.exit_code == 2 and json.loads(full.stdout)["error"]["code"] == "usage"


class TestFastPath:
    def test_subcommand_is_found_past_the_group_options(self) -> None:
        """The dispatcher sees `recall` after --root DIR or --chroma-url=URL, and nothing else as recall."""
        assert subcommand(["recall", "x"]) == "recall"
        assert subcommand(["--root", "/p", "recall"]) == "recall"
        assert subcommand(["--chroma-url=http://h", "recall"]) == "recall"
        assert subcommand(["--help"]) is None and subcommand(["add", "recall"]) == "add"

    def test_recall_through_the_executable_loads_no_other_command(self, root: Path) -> None:
        """`memfiles recall` runs through the short path: the other commands' modules are never imported."""
        probe = (
            "import sys, runpy\n"
            "sys.argv = ['memfiles', '--root', sys.argv[1], 'recall', 'x', '--json']\n"
            "from memfiles.cli.entry import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('MODULES', ' '.join(sorted(sys.modules)), file=sys.stderr)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe, str(root)], capture_output=True, text=True, cwd=REPO, check=True
        )
        modules = set(done.stderr.split("MODULES ", 1)[1].split())
        assert json.loads(done.stdout)["trigger"] == "turn"
        for heavy in (
            "memfiles.cli.main",
            "memfiles.cli.writes",
            "memfiles.services.distiller.distill",
            "numpy",
            "chromadb",
        ):
            assert heavy not in modules

    def test_the_short_path_says_where_root_goes(self, root: Path) -> None:
        """`memfiles recall x --root DIR` said "No such option '--root'" (the other commands say where it goes),
        on stderr and in the --json error object alike."""
        probe = "import sys\nsys.argv[0] = 'memfiles'\nfrom memfiles.cli.entry import main\nmain()\n"
        done = subprocess.run(
            [sys.executable, "-c", probe, "recall", "x", "--root", str(root), "--json"],
            capture_output=True,
            text=True,
            cwd=root,
        )
        said = "--root goes before the command: memfiles --root DIR recall ..."
        assert done.returncode == 2 and said in done.stderr
        assert json.loads(done.stdout)["error"]["message"] == said


@pytest.fixture
def indexed(root: Path, run: Run) -> Iterator[Path]:
    seed(run)
    run("working", "start", "--run", "r1", "--goal", "Make the hook tests pass")
    assert run("backfill").exit_code == 0
    yield root


@pytest.mark.integration
class TestWithIndex:
    def test_local_index_answers_and_working_memory_stays_out_of_default_search(self, indexed: Path, run: Run) -> None:
        """With an index (no watcher), recall answers from it; a plain memsearch never returns working memory."""
        data = recall(run, "hook tests fail because yaml is missing", "--trigger", "failure")
        assert data["index"] == "local"
        assert data["layers"][1]["hits"][0]["entry"]["id"] == "E-001"
        env = {**os.environ, "MEMFILES_ROOT": str(indexed)}
        found = subprocess.run(
            [str(Path(sys.executable).parent / "memsearch"), "Make the hook tests pass", "--json", "-k", "50"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        assert "W-001" not in found.stdout
        only = subprocess.run(
            [str(Path(sys.executable).parent / "memsearch"), "hook tests", "--kind", "working", "--json"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        assert "W-001" in only.stdout

    def test_a_running_watcher_answers_in_one_round_trip(self, indexed: Path, run: Run) -> None:
        """With a watcher running, recall's searches go through its socket (index: watcher)."""
        watcher = Watcher(Project(load_settings(indexed)), debounce=0.1)
        watcher.start()
        try:
            data = recall(run, "run make install before the tests", "--trigger", "act")
        finally:
            watcher.stop()
        assert data["index"] == "watcher"
        assert data["layers"][0]["hits"][0]["entry"]["id"] == "P-001"
