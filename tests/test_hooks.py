"""`memfiles hook EVENT`: recorded hook inputs in, the agent's JSON out; never in the agent's way."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memfiles.config import load_settings
from memfiles.errors import ConfigError
from memfiles.hook_events import HOOKS_TIMEOUT
from memfiles.services.agents import hook_state, hooks
from memfiles.services.distiller.experiences import parse_record
from memfiles.services.hook_text import CLOSE, OPEN, Item, render, strip_injected
from tests.conftest import DATA, REPO, Run, watching

HOOKS = DATA / "hooks"
SESSION = "4b1f2a9e-7c3d-4e21-9a58-0f6e2d8c1b77"
RUN = "session-4b1f2a9e-7c3d-4e21-9a58-0f6e2d8c1b77"


def recorded(name: str, **changes: Any) -> str:
    """A recorded hook input (tests/data/hooks/NAME.json), with `changes` laid over it."""
    data = json.loads((HOOKS / f"{name}.json").read_text())
    return json.dumps({**data, **changes})


def hook(run: Run, event: str, name: str, **changes: Any) -> dict[str, Any]:
    result = run("hook", event, input=recorded(name, **changes))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def context(out: dict[str, Any]) -> str:
    return out.get("hookSpecificOutput", {}).get("additionalContext", "")


def log_lines(root: Path) -> list[str]:
    path = root / ".memfiles" / "hooks.log"
    return path.read_text().splitlines() if path.exists() else []


def configure(root: Path, **values: Any) -> None:
    lines = [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    (root / "memory" / "memfiles.toml").write_text("\n".join(lines) + "\n")


class TestInjectedText:
    def test_the_marker_and_what_it_wraps_are_stripped_even_when_cut_short(self) -> None:
        """strip_injected drops every injected block, and an unclosed one to the end of the text."""
        text = f"before {OPEN}\n- P-001 x\n{CLOSE} middle {OPEN} cut off"
        assert strip_injected(text) == "before  middle "
        assert strip_injected("nothing injected") == "nothing injected"

    def test_render_keeps_to_the_budget_and_shortens_a_sentence_before_dropping_an_entry(self) -> None:
        """Entries come as `ID title — first sentence (path:line)`, within the budget, marker included."""
        body = "First sentence that is rather long and keeps going for a while. Second sentence."
        items = [Item(f"P-00{n}", f"Procedure {n}", body, "memory/procedures.md", 9 * n) for n in range(1, 6)]
        text, shown = render([("header:", items)], 400)
        assert text.startswith(OPEN) and text.endswith(CLOSE) and len(text) <= 400
        assert "- P-001 Procedure 1 — First sentence that is rather long" in text
        assert "(memory/procedures.md:9)" in text and "Second sentence" not in text
        assert shown == [line.split()[1] for line in text.splitlines() if line.startswith("- ")]
        assert render([("header:", [])], 400) == ("", [])

    def test_working_memory_and_distilled_records_drop_injected_context(self) -> None:
        """What a hook injected never comes back as a record's issue or note."""
        injected = f"{OPEN}\n- E-001 Hook tests failed — pytest failed.\n{CLOSE}"
        record = parse_record(
            {
                "timestamp": "2026-11-30T09:00:00Z",
                "issues_encountered": [f"yaml missing {injected}", injected],
                "notes": f"fixed it {injected}",
            },
            1,
        )
        assert record.issues == ["yaml missing"] and record.notes == "fixed it"


class TestFailureDetection:
    @pytest.mark.parametrize(
        ("name", "failed"),
        [
            ("post_tool_use_ok", False),
            ("post_tool_use_traceback", True),
            ("post_tool_use_failure", True),
            ("post_tool_use_failure_interrupt", False),
            ("gemini_after_tool_failure", True),
            ("gemini_after_tool_ok", False),
        ],
    )
    def test_a_failure_is_a_non_zero_exit_an_error_or_a_typed_error(self, name: str, failed: bool) -> None:
        """Success and a user's interrupt are not failures; an error, an exit code or a traceback are."""
        call = hooks.parse_call(None, recorded(name))
        assert (hooks.failure(call) is not None) is failed

    def test_an_exit_code_in_the_response_counts(self) -> None:
        """An agent that reports the exit code (exit_code, exitCode) gets a failure for a non-zero one."""
        for response, failed in (({"stdout": "x", "exit_code": 2}, True), ({"stdout": "x", "exitCode": 0}, False)):
            call = hooks.parse_call("PostToolUse", recorded("post_tool_use_ok", tool_response=response))
            assert (hooks.failure(call) is not None) is failed

    def test_a_failure_event_without_an_error_field_reads_the_tools_response(self) -> None:
        """PostToolUseFailure from an agent that sends the tool's response rather than `error`: the
        failure's text is what the tool said, so its signature can be found."""
        data = json.loads(recorded("post_tool_use_failure"))
        del data["error"]
        data["tool_response"] = {"stderr": "E   ModuleNotFoundError: No module named 'yaml'", "exit_code": 1}
        call = hooks.parse_call(None, json.dumps(data))
        assert "ModuleNotFoundError: No module named 'yaml'" in (hooks.failure(call) or "")
        del data["tool_response"]
        assert hooks.failure(hooks.parse_call(None, json.dumps(data))) == "the tool failed"


class TestNeverInTheWay:
    @pytest.mark.parametrize(
        "stdin",
        ["not json {", "[1, 2]", "", json.dumps({"session_id": "s", "hook_event_name": "NoSuchEvent"})],
    )
    def test_bad_input_gives_no_context_exit_0_and_a_log_line(self, run: Run, root: Path, stdin: str) -> None:
        """Input that is not the contract's: {} on stdout, exit 0, and the reason in .memfiles/hooks.log."""
        result = run("hook", input=stdin)
        assert result.exit_code == 0 and json.loads(result.stdout) == {}
        assert log_lines(root), "the problem is logged"

    def test_no_index_gives_no_context_and_says_so_in_the_log(self, run: Run, root: Path) -> None:
        """A project without an index: the prompt passes untouched; the log says to build one."""
        assert hook(run, "UserPromptSubmit", "user_prompt_submit") == {}
        assert "no index yet" in log_lines(root)[-1] and f"session={SESSION}" in log_lines(root)[-1]

    def test_a_bad_setting_gives_no_context_and_names_the_key(self, run: Run, root: Path) -> None:
        """A broken memfiles.toml never blocks the agent; the log names the file and the key."""
        configure(root, hooks_budget="large")
        assert hook(run, "UserPromptSubmit", "user_prompt_submit") == {}
        assert "memory/memfiles.toml: hooks_budget" in log_lines(root)[-1]

    def test_hooks_turned_off_do_nothing(self, run: Run, root: Path) -> None:
        """hooks_enabled = false: no context, no state, no working memory, even for a failure."""
        configure(root, hooks_enabled=False)
        assert hook(run, "PostToolUseFailure", "post_tool_use_failure") == {}
        assert not (root / ".memfiles" / "hooks").exists() and not (root / "memory" / "working").exists()

    def test_outside_a_project_the_executable_prints_an_empty_object(self, tmp_path: Path) -> None:
        """The real executable, in a folder with no memory/ and with garbage input: {} and exit 0."""
        env = {k: v for k, v in os.environ.items() if k not in ("MEMFILES_ROOT", "CLAUDE_PROJECT_DIR")}
        done = subprocess.run(
            [str(Path(sys.executable).parent / "memfiles"), "hook", "UserPromptSubmit"],
            input="{not json",
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
        )
        assert done.returncode == 0 and json.loads(done.stdout) == {} and done.stderr == ""

    def test_the_hook_path_imports_neither_click_nor_the_index(self, root: Path) -> None:
        """`memfiles hook` takes the short path: no click, no other command, no numpy or chromadb."""
        done = hook_probe(root, "print('MODULES', ' '.join(sorted(sys.modules)), file=sys.stderr)\n")
        modules = set(done.stderr.split("MODULES ", 1)[1].split())
        assert json.loads(done.stdout) == {}
        for heavy in (
            "click",
            "memfiles.cli.main",
            "memfiles.services.distiller.distill",
            "numpy",
            "chromadb",
            "torch",
        ):
            assert heavy not in modules

    def test_a_call_given_up_on_keeps_nothing(self, run: Run, root: Path) -> None:
        """In the watcher the worker of a call outlives its deadline: once {} has gone back, nothing the
        call found is remembered as injected (the agent never saw it) and no state is saved."""
        from memfiles.services.agents.hook_run import run_hook

        run("add", "-k", "episode", "-t", "Hook tests failed on a missing yaml module", "-a", "ci", "--body", EPISODE)
        configure(root, hooks_timeout=0.3, hooks_watch=False)
        hit = {"id": "E-001", "score": 0.99, "path": "memory/episodes.md", "line": 8}

        answered = threading.Event()

        def fast(items: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
            return [[hit] for _ in items]

        def slow(items: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
            time.sleep(1.5)  # a watcher busy with a long sync
            answered.set()
            return [[hit] for _ in items]

        out = run_hook("UserPromptSubmit", lambda: recorded("user_prompt_submit", session_id="late"), root, ask=slow)
        assert out == {}
        # the worker goes on after the {}: wait for it to end, so that what it would save is there to see
        for worker in [t for t in threading.enumerate() if t.name == "memfiles-hook"]:
            worker.join(60)
            assert not worker.is_alive()
        assert answered.is_set(), "the search the call gave up on never answered: nothing was tested"
        assert not hook_state.state_path(root / ".memfiles", "late").exists()
        assert any("gave up after 0.3 s" in line for line in log_lines(root))
        # the same call answered in time does save its state: what is absent above was left out
        run_hook("UserPromptSubmit", lambda: recorded("user_prompt_submit", session_id="on-time"), root, ask=fast)
        assert hook_state.state_path(root / ".memfiles", "on-time").exists()

    def test_the_executable_logs_input_that_is_not_json(self, root: Path) -> None:
        """Bad input through the installed executable (whose thin path has not imported json): {} and the
        same log line as in process."""
        assert executable_hook(root, "UserPromptSubmit", "{not json") == {}
        assert "the hook input is not JSON (line 1" in log_lines(root)[-1]

    def test_a_hung_watcher_is_cut_off_by_the_hard_timeout(self, run: Run, root: Path) -> None:
        """A watcher that accepts and never answers: the hook gives up at hooks_timeout with {} and a log line."""
        configure(root, hooks_timeout=0.5, hooks_watch=False)
        (root / ".memsearch" / "chroma").mkdir(parents=True)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(root / ".memsearch" / "watch.sock"))
        server.listen(8)
        try:
            assert hook(run, "UserPromptSubmit", "user_prompt_submit") == {}
        finally:
            server.close()
        # any line, not the last: the abandoned worker thread may log its own reset once the server closes
        assert any("gave up after 0.5 s" in line for line in log_lines(root)), log_lines(root)


class TestWorkingMemory:
    def test_a_failure_is_written_to_the_sessions_run(self, run: Run, root: Path) -> None:
        """PostToolUseFailure starts the session's run (goal: its first prompt) with the failure in it."""
        hook(run, "UserPromptSubmit", "user_prompt_submit")
        hook(run, "PostToolUseFailure", "post_tool_use_failure")
        state = json.loads(run("working", "show", "--run", RUN, "--json").stdout)["working"]
        assert state["goal"].startswith("The hook tests fail with a missing yaml module")
        assert state["last_action"] == "Bash: pytest tests/test_hooks.py (Run the hook tests)"
        assert state["last_observation"] == "ModuleNotFoundError: No module named 'yaml'"
        assert state["blockers"] == ["ModuleNotFoundError: No module named 'yaml'"]
        hook(run, "PostToolUse", "post_tool_use_traceback")  # the same signature again: one blocker
        state = json.loads(run("working", "show", "--run", RUN, "--json").stdout)["working"]
        assert state["blockers"] == ["ModuleNotFoundError: No module named 'yaml'"]

    def test_injected_context_in_a_failure_is_not_written_back(self, run: Run) -> None:
        """An error text that carries an injected block: the working memory gets the error, not the block."""
        error = f"ModuleNotFoundError: No module named 'yaml' {OPEN}\n- E-001 old episode\n{CLOSE}"
        hook(run, "PostToolUseFailure", "post_tool_use_failure", error=error)
        state = json.loads(run("working", "show", "--run", RUN, "--json").stdout)["working"]
        assert OPEN not in json.dumps(state) and "E-001" not in json.dumps(state)

    def test_a_coloured_failure_is_written_without_its_colour_codes(self, run: Run) -> None:
        """A tool's output in colour (pytest's red FAILED): the working memory gets the words, not the escapes
        a body refuses (the failure used to be dropped with a logged error)."""
        error = "\x1b[31mModuleNotFoundError: No module named 'yaml'\x1b[0m"
        hook(run, "PostToolUseFailure", "post_tool_use_failure", error=error)
        state = json.loads(run("working", "show", "--run", RUN, "--json").stdout)["working"]
        assert state["last_observation"] == "ModuleNotFoundError: No module named 'yaml'"
        assert "\\u001b" not in json.dumps(state)

    def test_compaction_gives_the_working_memory_back_first_and_exactly(self, run: Run, root: Path) -> None:
        """PreCompact saves the run; SessionStart compact injects it first, each value as saved, with no index."""
        run("working", "start", "--run", "fix-ci", "--goal", "Make the hook tests pass", "--next-step", "pin pyyaml")
        run("working", "set", "--run", "fix-ci", "--hypothesis", "the dev extra lacks `pyyaml>=6`; see tests/x.py:3")
        assert hook(run, "PreCompact", "pre_compact") == {}  # PreCompact takes no context
        saved = hook_state.load(root / ".memfiles", SESSION).saved
        assert saved is not None and saved["run"] == "fix-ci"
        text = context(hook(run, "SessionStart", "session_start_compact"))
        lines = text.splitlines()
        assert lines[0] == OPEN and lines[1].startswith("memfiles: working memory of run fix-ci (active)")
        assert "- goal: Make the hook tests pass" in lines
        assert "- hypothesis: the dev extra lacks `pyyaml>=6`; see tests/x.py:3" in lines
        assert "- next_step: pin pyyaml" in lines and lines[-1] == CLOSE

    def test_session_end_ends_only_the_run_the_hooks_started_and_removes_the_state(self, run: Run, root: Path) -> None:
        """SessionEnd ends the hooks' run (an episode with hooks_episode), never a user's; the state goes."""
        configure(root, hooks_episode=True)
        hook(run, "UserPromptSubmit", "user_prompt_submit")
        hook(run, "PostToolUseFailure", "post_tool_use_failure")
        assert hook(run, "SessionEnd", "session_end") == {}
        state = json.loads(run("working", "show", "--run", RUN, "--json").stdout)["working"]
        assert state["status"] == "ended" and state["promoted"] == ["E-001"]
        episode = json.loads(run("show", "E-001", "--json").stdout)["entry"]
        assert episode["source"] == f"run:{RUN}" and "ModuleNotFoundError" in episode["body"]
        assert not hook_state.state_path(root / ".memfiles", SESSION).exists()
        run("working", "start", "--run", "mine", "--goal", "A run of my own")
        hook(run, "SessionStart", "session_start_resume", session_id="other-session")  # adopts the one active run
        hook(run, "SessionEnd", "session_end", session_id="other-session")
        assert json.loads(run("working", "show", "--run", "mine", "--json").stdout)["working"]["status"] == "active"

    def test_the_llm_drafter_names_the_episode_and_a_failing_one_falls_back(self, run: Run, root: Path) -> None:
        """hooks_drafter = "llm": the model at llm_url gives title and outcome; when it fails, the episode
        is the deterministic one and the log says why."""
        import http.server
        import threading

        answers = ['{"ops": [{"title": "Pinned pyyaml\\nin the dev extra", "outcome": "The hook tests pass again."}]}']

        class Fake(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                content = answers.pop(0) if answers else "no JSON at all"
                reply = json.dumps({"choices": [{"message": {"content": content}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: object) -> None:
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Fake)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{server.server_port}/v1"
            configure(root, hooks_episode=True, hooks_drafter="llm", llm_url=url)
            for session in ("one", "two"):
                hook(run, "UserPromptSubmit", "user_prompt_submit", session_id=session)
                hook(run, "PostToolUseFailure", "post_tool_use_failure", session_id=session)
                hook(run, "SessionEnd", "session_end", session_id=session)
        finally:
            server.shutdown()
        drafted = json.loads(run("show", "E-001", "--json").stdout)["entry"]
        assert drafted["title"] == "Pinned pyyaml in the dev extra"
        assert drafted["body"].startswith("The hook tests pass again.")
        fallback = json.loads(run("show", "E-002", "--json").stdout)["entry"]
        assert fallback["title"].startswith("The hook tests fail with a missing yaml module")
        assert any("drafter" in line and "session=two" in line for line in log_lines(root))

    def test_a_model_that_never_answers_still_leaves_the_episode(self, run: Run, root: Path) -> None:
        """hooks_drafter = "llm" and a model that takes the connection and never answers: the drafter's four
        attempts of 20 s outlasted the hook's write, and the episode was lost (the run stayed active). One
        attempt, within llm_timeout (1 s here), then the deterministic episode."""
        import socket

        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)  # connections are taken and never answered
        try:
            url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
            configure(root, hooks_episode=True, hooks_drafter="llm", llm_url=url, llm_timeout=1)
            hook(run, "UserPromptSubmit", "user_prompt_submit", session_id="hung")
            hook(run, "PostToolUseFailure", "post_tool_use_failure", session_id="hung")
            hook(run, "SessionEnd", "session_end", session_id="hung")
        finally:
            listener.close()
        episode = json.loads(run("show", "E-001", "--json").stdout)["entry"]
        assert episode["title"].startswith("The hook tests fail with a missing yaml module")
        assert any("did not answer within 1 s" in line and "session=hung" in line for line in log_lines(root))

    def test_stale_session_states_are_swept_at_session_start(self, run: Run, root: Path) -> None:
        """A session that never reached SessionEnd leaves a state that the next SessionStart sweeps after a week."""
        hook(run, "UserPromptSubmit", "user_prompt_submit", session_id="old")
        old = hook_state.state_path(root / ".memfiles", "old")
        os.utime(old, (0, 0))
        hook(run, "SessionStart", "session_start_startup")
        assert not old.exists() and hook_state.state_path(root / ".memfiles", SESSION).exists()


class TestSettings:
    @pytest.mark.parametrize(
        ("values", "message"),
        [
            ({"hooks_risky": ["(unclosed"]}, 'hooks_risky: "(unclosed" is not a regular expression'),
            ({"hooks_floor": 1.5}, "hooks_floor: must be a number from 0 to 1"),
            ({"hooks_enabled": "yes"}, "hooks_enabled: must be true or false"),
            ({"hooks_drafter": "gpt"}, 'hooks_drafter: must be "deterministic" or "llm"'),
            ({"hooks_budget": 50}, "hooks_budget: must be a whole number from 200 to 100000"),
        ],
    )
    def test_each_hook_setting_has_a_rule(self, root: Path, values: dict[str, Any], message: str) -> None:
        """A bad hooks_* value is refused naming the file, the key and what it takes."""
        configure(root, **values)
        with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
            load_settings(root)

    def test_memfiles_hooks_turns_them_off_from_the_environment(self, root: Path, monkeypatch: Any) -> None:
        """MEMFILES_HOOKS=off (or 0, false, no) turns the hooks off; another word is refused."""
        monkeypatch.setenv("MEMFILES_HOOKS", "off")
        assert load_settings(root).hooks_enabled is False
        monkeypatch.setenv("MEMFILES_HOOKS", "maybe")
        with pytest.raises(ConfigError, match="MEMFILES_HOOKS"):
            load_settings(root)


EPISODE = "pytest failed with ModuleNotFoundError: No module named 'yaml'; installing the dev extra fixed it."


@pytest.fixture
def warm(root: Path, run: Run, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A project with procedures, episodes, a lesson and insights, indexed, and a watcher running in this process
    (settings of its own as the indirect parameter: a watcher exits when the config changes under it)."""
    ops = [
        ("procedure", "Run make install before the test suite", "The dev extra brings pyyaml and pre-commit."),
        ("procedure", "Take a database snapshot before a migration", "Staging lost columns twice: pg_dump first."),
        ("episode", "Hook tests failed on a missing yaml module", EPISODE),
        (
            "episode",
            "A force push erased commits on main",
            "git push --force on main lost two commits; the reflog saved them.",
        ),
        (
            "lesson",
            "No module named yaml when the hook tests run",
            "The hook tests import yaml, which only the dev extra brings. Fix: make install, then run them again.",
        ),
        (
            "insight",
            "Test dependencies belong in one extra",
            "Every dependency a test imports is declared in the dev extra.",
        ),
    ]
    batch = {"ops": [{"op": "add", "kind": k, "title": t, "area": "ci", "body": b} for k, t, b in ops]}
    assert run("import", "-", input=json.dumps(batch)).exit_code == 0
    configure(root, **getattr(request, "param", {"hooks_timeout": 60, "hooks_watch": False}))  # CI answers slowly
    assert run("backfill").exit_code == 0
    with watching(root):
        yield root


@pytest.mark.integration
class TestWarm:
    def test_a_prompt_gets_its_layers_in_order_once_per_session(self, warm: Path, run: Run) -> None:
        """The prompt's procedure, episode and insight come in the seed's order; the same prompt again gets nothing."""
        out = hook(run, "UserPromptSubmit", "user_prompt_submit")
        assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
        text = context(out)
        ids = [line.split()[1] for line in text.splitlines() if line.startswith("- ")]
        assert "E-001" in ids and len(text) <= 1500
        assert ids == sorted(ids, key=lambda i: "PELI".index(i[0]))
        assert "- E-001 Hook tests failed on a missing yaml module — pytest failed with" in text
        assert "(memory/episodes.md:" in text
        assert hook(run, "UserPromptSubmit", "user_prompt_submit") == {}
        assert context(hook(run, "UserPromptSubmit", "user_prompt_submit", session_id="another"))  # a new session

    def test_a_prompt_with_nothing_relevant_gets_nothing(self, warm: Path, run: Run) -> None:
        """Below the floor nothing is injected: an off-topic prompt passes untouched."""
        assert hook(run, "UserPromptSubmit", "user_prompt_submit_offtopic") == {}

    def test_a_risky_command_brings_the_episodes_of_similar_actions(self, warm: Path, run: Run) -> None:
        """git push --force matches hooks_risky: its episode comes before the command runs."""
        text = context(hook(run, "PreToolUse", "pre_tool_use_risky"))
        assert "a risky or irreversible command" in text and "E-002 A force push erased commits on main" in text

    def test_a_failure_brings_the_episode_of_its_signature(self, warm: Path, run: Run) -> None:
        """PostToolUseFailure: the episode with the same error signature, named in the header, and the
        lesson learnt from it (a known failure pattern with its fix: lessons were never injected)."""
        text = context(hook(run, "PostToolUseFailure", "post_tool_use_failure"))
        assert "`ModuleNotFoundError: No module named 'yaml'`" in text and "E-001" in text
        assert "- L-001 No module named yaml when the hook tests run — The hook tests import yaml" in text

    @pytest.mark.parametrize("warm", [{"hooks_timeout": 60, "hooks_watch": False, "hooks_budget": 250}], indirect=True)
    def test_the_budget_bounds_what_is_injected(self, warm: Path, run: Run) -> None:
        """With hooks_budget = 250 the context holds at most 250 characters, marker included."""
        text = context(hook(run, "UserPromptSubmit", "user_prompt_submit"))
        assert text and len(text) <= 250

    def test_an_answer_leaves_its_insights_for_the_next_prompt(self, warm: Path, run: Run) -> None:
        """Stop takes no context: the insight on the answer comes with the next prompt, under its own header."""
        assert hook(run, "Stop", "stop") == {}
        text = context(hook(run, "UserPromptSubmit", "user_prompt_submit_offtopic"))
        assert "insights that bear on your last answer" in text and "I-001" in text

    def test_gemini_cli_events_answer_in_its_names(self, warm: Path, run: Run) -> None:
        """BeforeAgent and AfterTool get the same recall, with hookEventName as Gemini CLI sent it."""
        out = hook(run, "BeforeAgent", "gemini_before_agent")
        assert out["hookSpecificOutput"]["hookEventName"] == "BeforeAgent" and "E-001" in context(out)
        assert hook(run, "AfterTool", "gemini_after_tool_ok") == {}

    def test_session_start_starts_a_watcher_when_an_index_has_none(self, root: Path, run: Run) -> None:
        """With an index and no watcher, SessionStart starts one in the background; later hooks are warm."""
        from memfiles.services.indexing import ipc

        run("add", "-k", "procedure", "-t", "Run make install first", "-a", "ci", "--body", "The dev extra.")
        assert run("backfill").exit_code == 0
        settings = load_settings(root)
        assert hook(run, "SessionStart", "session_start_startup") == {}
        assert "started the watcher" in log_lines(root)[-1]
        try:
            answer = None
            for _ in range(3000):  # the model loads in the new process; a loaded machine is slow
                answer = ipc.request(settings, {"op": "ping"}, timeout=60)
                if answer is not None:
                    break
                time.sleep(0.1)
            assert answer is not None, (root / ".memsearch" / "watch.log").read_text()
        finally:
            pid_file = root / ".memsearch" / "watch.pid"
            for _ in range(600):  # the pid file is written once the watcher holds its lock
                if pid_file.exists() and pid_file.read_text().strip():
                    os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
                    break
                time.sleep(0.1)

    def test_session_start_restores_then_adds_procedures_for_the_goal(self, warm: Path, run: Run) -> None:
        """After a resume: the run's working memory first, then procedures for its goal and next step."""
        run("working", "start", "--run", "fix-ci", "--goal", "Make the test suite pass", "--next-step", "make install")
        text = context(hook(run, "SessionStart", "session_start_resume"))
        assert text.index("working memory of run fix-ci") < text.index("P-001 Run make install before the test suite")


def executable_hook(root: Path, event: str, stdin: str, **env: str) -> dict[str, Any]:
    """The installed `memfiles hook EVENT` in its own process, as an agent runs it, with `env` added."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "memfiles"), "--root", str(root), "hook", event],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return json.loads(done.stdout)


def hook_probe(root: Path, report: str, session: str = "probe") -> subprocess.CompletedProcess[str]:
    """`memfiles hook UserPromptSubmit` run by the executable's own entry in a fresh interpreter, then
    `report` (Python, printing to stderr what it found in sys.modules)."""
    probe = (
        "import sys\n"
        "sys.argv = ['memfiles', '--root', sys.argv[1], 'hook', 'UserPromptSubmit']\n"
        "from memfiles.cli.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n" + report
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(root)],
        input=recorded("user_prompt_submit", session_id=session),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.integration
class TestAnsweredByTheWatcher:
    """With a watcher running, the executable is a thin client: the watcher answers the whole call."""

    def test_the_watcher_answers_as_the_hooks_own_process_would(self, warm: Path) -> None:
        """The same input (two sessions, so that neither has seen an entry) gives the same output through
        the watcher as computed in this process, which asks the watcher only to search."""
        from memfiles.services.agents.hook_run import run_hook

        thin = executable_hook(warm, "UserPromptSubmit", recorded("user_prompt_submit", session_id="thin"))
        here = run_hook("UserPromptSubmit", lambda: recorded("user_prompt_submit", session_id="here"), warm)
        assert context(thin) and thin == here
        assert hook_state.load(warm / ".memfiles", "thin").injected  # the watcher kept the session's memory

    def test_the_callers_environment_travels_with_the_call(self, warm: Path, run: Run) -> None:
        """MEMFILES_HOOKS=0 in the agent's environment turns the hooks off though the watcher was started
        without it; $MEMFILES_RUN chooses the run a failure is written to."""
        assert executable_hook(warm, "UserPromptSubmit", recorded("user_prompt_submit"), MEMFILES_HOOKS="0") == {}
        run("working", "start", "--run", "mine", "--goal", "Fix the hook tests")
        out = executable_hook(warm, "PostToolUseFailure", recorded("post_tool_use_failure"), MEMFILES_RUN="mine")
        assert "E-001" in context(out)
        executable_hook(warm, "PreCompact", recorded("pre_compact"), MEMFILES_RUN="mine")  # waits for the write
        state = json.loads(run("working", "show", "--run", "mine", "--json").stdout)["working"]
        assert state["blockers"] == ["ModuleNotFoundError: No module named 'yaml'"]
        assert not (warm / "memory" / "working" / f"{RUN}.md").exists()

    def test_a_failure_written_after_the_answer_is_there_for_the_next_call(self, warm: Path, run: Run) -> None:
        """The watcher writes a failure right after answering; the session's next calls (PreCompact, run in
        the hook's own process, included) see it."""
        executable_hook(warm, "UserPromptSubmit", recorded("user_prompt_submit"))
        executable_hook(warm, "PostToolUseFailure", recorded("post_tool_use_failure"))
        assert executable_hook(warm, "PreCompact", recorded("pre_compact")) == {}
        saved = hook_state.load(warm / ".memfiles", SESSION).saved
        assert saved is not None and saved["run"] == RUN
        assert saved["blockers"] == ["ModuleNotFoundError: No module named 'yaml'"]

    @pytest.mark.parametrize("warm", [{"hooks_watch": False}], indirect=True)  # the default hooks_timeout
    def test_the_thin_client_imports_only_the_standard_librarys_core(self, warm: Path) -> None:
        """Answered by the watcher, a hook call loads neither click nor the settings, the format, the index,
        nor json, socket, pathlib or re: its cost is starting Python (the settings are read in full only
        by the first call after a change of the config, which remembers hooks_timeout)."""
        report = (
            "heavy = ('click', 'numpy', 'chromadb', 'torch', 'memfiles.format', 'memfiles.config',"
            " 'memfiles.services.agents.hook_run', 'memfiles.store')\n"
            "stdlib = {'typing', 'json', 'socket', 'pathlib', 're'}\n"
            "print(sorted(m for m in sys.modules if m.startswith(heavy) or m in stdlib), file=sys.stderr)\n"
        )
        first = hook_probe(warm, report, session="first")
        assert "'memfiles.config'" in first.stderr.strip().splitlines()[-1]  # no memo yet: read in full
        done = hook_probe(warm, report, session="second")
        assert "E-001" in context(json.loads(done.stdout))
        assert done.stderr.strip().splitlines()[-1] == "[]"

    @pytest.mark.parametrize("warm", [{"hooks_timeout": 30, "hooks_watch": False}], indirect=True)
    def test_a_configured_timeout_is_read_once_per_change_of_the_config(
        self, warm: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """hooks_timeout set: the thin client reads the settings in full once, keeps the value beside what
        it was read from, and reads them again only when that changes: the config files' text, or a
        MEMFILES_* variable (a bad one: the hook's own process answers, and says which)."""
        from memfiles.cli.hook_entry import hooks_timeout

        configure(warm, hooks_timeout=30, hooks_watch=False)
        assert hooks_timeout(str(warm)) == 30.0
        kept = warm / ".memfiles" / "settings.memo"
        assert json.loads(kept.read_text())["values"] == {"hooks_timeout": 30.0}
        done = hook_probe(warm, "print('memfiles.config' in sys.modules, file=sys.stderr)\n")
        assert "E-001" in context(json.loads(done.stdout)) and done.stderr.strip().endswith("False")
        monkeypatch.setenv("MEMFILES_HOOKS", "maybe")  # a variable changed: read in full, which refuses it
        assert hooks_timeout(str(warm)) is None
        monkeypatch.delenv("MEMFILES_HOOKS")
        assert hooks_timeout(str(warm)) == 30.0
        configure(warm, hooks_timeout=0.5, hooks_watch=False)
        assert hooks_timeout(str(warm)) == 0.5
        configure(warm, hooks_timeout="soon")  # a bad value: the hook's own process answers (and logs it)
        assert hooks_timeout(str(warm)) is None
        (warm / "memory" / "memfiles.toml").write_text("# hooks_timeout = 1, some day\n")  # a comment sets nothing
        assert hooks_timeout(str(warm)) == HOOKS_TIMEOUT

    def test_a_bad_variable_in_the_agents_environment_is_logged_and_changes_nothing(self, warm: Path) -> None:
        """MEMFILES_HOOKS=maybe in the agent's environment: the thin client cannot read the settings, so
        the hook's own process answers; it refuses the setting by name, injects nothing, keeps no session
        state and writes no working memory, even for a failure."""
        before = sorted(p.name for p in (warm / "memory").rglob("*"))
        out = executable_hook(warm, "PostToolUseFailure", recorded("post_tool_use_failure"), MEMFILES_HOOKS="maybe")
        assert out == {}
        assert "MEMFILES_HOOKS" in log_lines(warm)[-1]
        assert sorted(p.name for p in (warm / "memory").rglob("*")) == before
        assert not hook_state.state_path(warm / ".memfiles", SESSION).exists()

    def test_a_bad_variable_sent_with_the_call_is_refused_by_the_watcher_too(self, warm: Path) -> None:
        """The same variable reaching the watcher with a call (a client that sends it as it is): the
        watcher reads the settings with the caller's variables, refuses the setting by name in the log,
        answers {} and writes nothing."""
        from memfiles.cli.watcher_wire import exchange
        from memfiles.services.indexing import protocol

        before = sorted(p.name for p in (warm / "memory").rglob("*"))
        raw = recorded("post_tool_use_failure", cwd=str(warm))
        asked = protocol.hook("PostToolUseFailure", raw, str(warm), str(warm), {"MEMFILES_HOOKS": "maybe"})
        answer = exchange(str(warm / ".memsearch" / "watch.sock"), asked, 60)
        assert isinstance(answer, dict) and answer["ok"] is True and json.loads(answer["text"]) == {}
        assert "MEMFILES_HOOKS" in log_lines(warm)[-1]
        assert sorted(p.name for p in (warm / "memory").rglob("*")) == before
        assert not hook_state.state_path(warm / ".memfiles", SESSION).exists()

    @pytest.mark.parametrize(
        ("request_", "message"),
        [
            ({"op": "hook", "event": "UserPromptSubmit", "input": "{}"}, "needs root, input and env"),
            ({"op": "hook", "root": "x", "input": 5, "env": {}}, "needs root, input and env"),
            ({"op": "hook_settle"}, "needs a session"),
        ],
    )
    def test_a_malformed_hook_op_is_refused_by_name(self, warm: Path, request_: dict, message: str) -> None:
        """The socket's hook ops check their fields: a refusal saying what is missing, nothing run."""
        from memfiles.cli.watcher_wire import exchange

        answer = exchange(str(warm / ".memsearch" / "watch.sock"), request_, 60)
        assert isinstance(answer, dict) and answer["ok"] is False and message in answer["error"]

    def test_another_projects_call_is_refused(self, warm: Path) -> None:
        """A hook op naming another root is refused (its client then answers the call itself)."""
        from memfiles.cli.watcher_wire import exchange

        request = {"op": "hook", "event": "UserPromptSubmit", "input": "{}", "root": "/", "env": {}}
        answer = exchange(str(warm / ".memsearch" / "watch.sock"), request, 60)
        assert isinstance(answer, dict) and answer["ok"] is False and "serves" in answer["error"]


def test_two_sessions_never_share_a_run() -> None:
    """`agentrun-2026-A` and `agentrun-2026-B` both became session-agentrun-202: one run, and the first
    session to end ended the other's. A UUID is kept whole; a long or odd id gets a digest of the whole."""
    from memfiles.services.agents.hook_working import session_run

    assert session_run("agentrun-2026-A") != session_run("agentrun-2026-B")
    assert session_run(SESSION) == f"session-{SESSION}"
    long_a, long_b = "x" * 60 + "a", "x" * 60 + "b"
    assert session_run(long_a) != session_run(long_b) and len(session_run(long_a)) <= 64
    assert session_run("a/b c") != session_run("a/bc")
