"""Recall from the situation: a command read for its task, the memory's own commands, floors per layer,
the seed's order on act, promoted episodes giving way, failures known by their output. The reading is
tested alone; what reaches the agent is tested with the real model, a real index and a real watcher."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memfiles.config import load_settings
from memfiles.errors import ConfigError
from memfiles.services.agents import hooks
from memfiles.services.agents.failures import error_lines, error_signature, failed_by_output
from memfiles.services.agents.situation import Vocabulary, environment, read, steps, tasks_of
from tests.conftest import Run, watching

SESSION = "5c2e8f1a-0b7d-4c3e-8a91-2f6d0e4b7c55"


def spans(command: str, words: Vocabulary) -> tuple[str, ...]:
    return read(command, words, command=True, prose=False).spans


def tasks(text: str, command: bool = True) -> list[str]:
    return [task.sentence.split(":")[0].split(" ")[0] for task in tasks_of(text, command)]


class TestReadingACommand:
    def test_a_command_line_is_its_simple_commands_without_wrappers(self) -> None:
        """`&&`, pipes, sudo and env, uv run and python -m are set aside: the tool is what runs."""
        found = steps("cd api && sudo -E env STAGE=1 uv run python -m alembic upgrade head | tee log")
        assert [(step.tool, step.words) for step in found] == [("alembic", ("upgrade", "head")), ("tee", ("log",))]
        assert steps("bash -c 'make release VERSION=1.2'")[0].tool == "make"
        assert steps('echo "unterminated') == []  # an unclosed quote is not an error

    @pytest.mark.parametrize(
        ("command", "task"),
        [
            ("kubectl apply -f deploy/api.yaml --context prod", "deploy"),
            ("helm upgrade --install api ./chart -n staging", "deploy"),
            ("./scripts/deploy_prod.sh", "deploy"),
            ("make release VERSION=1.10.0", "release"),
            ("cd packages/ui && npm publish --access public", "release"),
            ("alembic upgrade head", "run"),
            ("python manage.py migrate", "run"),
            ('psql "$URL" -c "ALTER TABLE payments ADD COLUMN currency text"', "run"),
            ("git push origin main --force", "force"),
            ("terraform destroy -target=aws_s3_bucket.x", "delete"),
        ],
    )
    def test_a_command_is_read_for_its_task(self, command: str, task: str) -> None:
        """The tool and its subcommand (or the SQL a database client is given) say what the command does."""
        assert task in tasks(command)

    @pytest.mark.parametrize("command", ["ls -la src", "git status", "terraform fmt -recursive", "cat README.md"])
    def test_a_harmless_command_does_no_task(self, command: str) -> None:
        """Reading files and formatting are no task to recall for (terraform fmt is not terraform apply)."""
        assert tasks(command) == []

    def test_the_environment_is_spelled_out(self) -> None:
        """`--context prod`, `prod.tfvars`, "to staging": the environment in the memory's words."""
        assert environment("kubectl apply -f x.yaml --context prod") == "production"
        assert environment("terraform apply -var-file=stg.tfvars") == "staging"
        assert environment("ls -la") is None

    def test_a_prompt_is_read_for_its_task_in_the_memorys_words(self) -> None:
        """The sentence keeps the words the memory's titles use (api) and drops the rest (yaml)."""
        words = Vocabulary(words={"deploy", "api", "staging", "production"})
        reading = read("please deploy the api to prod", words)
        assert reading.queries("procedure") == ["deploy api to production"]
        assert reading.queries("episode") == ["deploy failed api to production"]  # as a run's record says it
        command = read("kubectl apply -f deploy/api.yaml --context prod", words, command=True, prose=False)
        assert command.sentences == ("deploy api to production",)
        assert read("write a haiku about autumn", words) == read("", words)


class TestTheMemorysOwnCommands:
    @staticmethod
    def vocabulary(*spans: str) -> Vocabulary:
        class Entry:
            title, area = "t", "a"

            def __init__(self, body: str) -> None:
                self.body = body

        return Vocabulary.of([Entry(" ".join(f"`{span}`" for span in spans))])

    def test_a_command_is_an_instance_of_the_one_written_with_placeholders_and_another_environment(self) -> None:
        """`make release VERSION=x.y.z` and `kubectl apply ... --context staging` are what the command at hand
        runs with its own values: the memory's command is searched verbatim."""
        words = self.vocabulary("make release VERSION=x.y.z", "kubectl apply -f deploy/api.yaml --context staging")
        assert spans("make release VERSION=1.10.0", words) == ("make release VERSION=x.y.z",)
        found = spans("kubectl apply -f deploy/api.yaml --context prod", words)
        assert found == ("kubectl apply -f deploy/api.yaml --context staging",)

    def test_another_path_another_flag_or_a_force_is_another_command(self) -> None:
        """`pytest tests/dags` is not `pytest tests/unit`; `pnpm install --frozen-lockfile` is not a bare
        `pnpm install`; `git push --force` is not the `git push --follow-tags` a release procedure names."""
        words = self.vocabulary(
            "python -m pytest tests/dags", "pnpm install --frozen-lockfile", "git push --follow-tags"
        )
        assert spans("python -m pytest tests/unit -q", words) == ()
        assert spans("python -m pytest tests/dags -x", words) == ("python -m pytest tests/dags",)
        assert spans("pnpm install", words) == ()
        assert spans("git push --force-with-lease origin feat", words) == ()
        assert spans("git push --follow-tags origin main", words) == ("git push --follow-tags",)


class TestFailuresKnownByTheirOutput:
    @pytest.mark.parametrize(
        "stderr",
        [
            "psql:sql/report.sql:3: ERROR:  column users.last_login does not exist\nLINE 1: SELECT last_login",
            "fatal: not a git repository (or any of the parent directories): .git",
            "error[E0425]: cannot find value `x` in this scope",
            "│ Error: No valid credential sources found",
            "npm ERR! code E404",
            "ERROR 1064 (42000) at line 1: You have an error in your SQL syntax",
            "Error relocating /usr/local/bin/tern: __res_init: symbol not found",
        ],
    )
    def test_an_error_line_of_a_common_tool_is_a_failure(self, stderr: str) -> None:
        """Whatever the exit code (psql -f exits 0 after an ERROR), the line's shape says the command failed."""
        assert failed_by_output(stderr) and error_lines(stderr)

    @pytest.mark.parametrize(
        "stderr", ["warning: unused import `std::io`", "npm WARN deprecated inflight@1.0.6", "Compiling tern v2.6.0"]
    )
    def test_warnings_and_progress_are_not(self, stderr: str) -> None:
        assert not failed_by_output(stderr)

    def test_an_apis_error_object_on_stdout_is_a_failure(self) -> None:
        """curl exits 0 with PostgREST's error: the object says it."""
        body = '{"code":"42501","details":null,"message":"new row violates row-level security policy"}'
        assert failed_by_output("", body) and not failed_by_output("", '{"id": 3, "name": "ok"}')

    def test_the_signature_starts_at_the_tools_mark(self) -> None:
        """Two psql runs of different files meet: the signature is the error from its mark on."""
        one = error_signature("psql:a.sql:3: ERROR:  column users.last_login does not exist")
        two = error_signature("psql:/tmp/b.sql:12: ERROR:  column users.last_login does not exist")
        assert one == two == "ERROR: column users.last_login does not exist"
        panic = error_signature("thread 'main' panicked at src/parse.rs:212:31:\nbyte index 7 is not a char boundary")
        assert panic == "thread 'main' panicked at parse.rs:N:N: byte index N is not a char boundary"

    @pytest.mark.parametrize(
        "response",
        [
            {"stdout": "", "stderr": "psql:m.sql:3: ERROR:  column users.last_login does not exist\n"},
            {"llmContent": "Command: psql -f m.sql\nStdout: (empty)\nStderr: ERROR:  relation x does not exist\n"
             "Exit Code: 0"},
        ],
    )  # fmt: skip
    def test_the_hook_reads_a_failure_with_no_exit_code(self, response: dict[str, Any]) -> None:
        """Claude Code's PostToolUse carries no exit code, Gemini CLI's says 0: the stderr says it failed."""
        data = {"session_id": "s", "tool_name": "Bash", "tool_input": {"command": "psql -f m.sql"}}
        call = hooks.parse_call("PostToolUse", json.dumps({**data, "tool_response": response}))
        assert "does not exist" in (hooks.failure(call) or "")
        call = hooks.parse_call(
            "PostToolUse", json.dumps({**data, "tool_response": {"stdout": "3 rows", "stderr": ""}})
        )
        assert hooks.failure(call) is None


class TestFloorSettings:
    def test_a_layers_floor_is_set_and_the_others_keep_theirs(self, root: Path) -> None:
        """recall_floors = {procedure = 0.3}: that layer's floor; a hooks_floor set stands for every layer
        of the hooks, as it did."""
        (root / "memory" / "memfiles.toml").write_text("recall_floors = {procedure = 0.3}\n")
        settings = load_settings(root)
        assert settings.floor("procedure") == 0.3 and settings.floor("episode") == 0.4
        (root / "memory" / "memfiles.toml").write_text("hooks_floor = 0.6\n")
        settings = load_settings(root)
        assert settings.floor("lesson", hooks=True) == 0.6 and settings.floor("lesson") == 0.4

    @pytest.mark.parametrize(
        ("value", "message"),
        [
            ("{decision = 0.3}", "recall_floors: has no layer decision"),
            ("{episode = 2}", "recall_floors: episode must be a number from 0 to 1"),
            ("0.3", "recall_floors: must be a table of layer = floor"),
        ],
    )
    def test_a_bad_floor_is_refused_by_name(self, root: Path, value: str, message: str) -> None:
        (root / "memory" / "memfiles.toml").write_text(f"recall_floors = {value}\n")
        with pytest.raises(ConfigError, match=message):
            load_settings(root)


# A project as a new user has it (the walk-through): a deploy procedure naming its command, the
# lesson about kubectl's context, deploy episodes, a release procedure and its failed run, a migration.
MEMORY = [
    ("procedure", "Deploy the API to staging before production", "deploy",
     "Apply to staging first: `kubectl apply -f deploy/api.yaml --context staging`, wait for the rollout, run "
     "the smoke test, then apply with `--context prod`. Only images the release job has pushed."),
    ("lesson", "kubectl without --context goes to whatever context was last used", "deploy",
     "A kubectl command without --context acts on the current context, and twice that was prod."),
    ("episode", "Prod deploy sat in ImagePullBackOff for 20 minutes", "deploy",
     "kubectl apply of deploy/api.yaml to prod referenced an image tag the release job had not pushed yet."),
    ("episode", "Worker deploy to staging crashed on a missing REDIS_URL", "deploy",
     "kubectl apply -f deploy/worker.yaml on staging: CrashLoopBackOff, KeyError: 'REDIS_URL'."),
    ("procedure", "Release a new version", "release",
     "Run the fuzz targets for ten minutes first, then `cargo release minor --execute` from a clean main."),
    ("episode", "Release of 2.3 failed on the fuzz step", "release",
     "The release workflow's fuzz step found a crash in parse_line; 2.3.0 was held back a day."),
    ("procedure", "Run database migrations with a snapshot first", "db",
     "Take `pg_dump -Fc app > app.dump` before `alembic upgrade head`; check `alembic current` afterwards."),
    ("episode", "Report query failed: the last_login column did not exist yet", "db",
     "psql reported ERROR:  column users.last_login does not exist: the migration adding it had not run on "
     "staging. Ran alembic upgrade head there first."),
    ("insight", "Incidents start from a step skipped on staging", "deploy",
     "Four of five incidents followed a change that skipped staging or its smoke test."),
]  # fmt: skip


@pytest.fixture
def walked(root: Path, run: Run) -> Iterator[Path]:
    """That project, indexed, with a watcher running in this process."""
    ops = [{"op": "add", "kind": k, "title": t, "area": a, "body": b} for k, t, a, b in MEMORY]
    assert run("import", "-", input=json.dumps({"ops": ops})).exit_code == 0
    (root / "memory" / "memfiles.toml").write_text("hooks_timeout = 60\nhooks_watch = false\n")
    assert run("backfill").exit_code == 0
    with watching(root):
        yield root


def hook(run: Run, event: str, **data: Any) -> str:
    result = run("hook", event, input=json.dumps({"session_id": data.pop("session", SESSION), **data}))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout).get("hookSpecificOutput", {}).get("additionalContext", "")


def injected(text: str) -> list[str]:
    return [line.split()[1] for line in text.splitlines() if line.startswith("- ") and line[2:3].isupper()]


def recalled(run: Run, *args: str) -> dict[str, Any]:
    result = run("recall", *args, "--json")
    assert result.exit_code == 0, result.output
    return {group["layer"]: group for group in json.loads(result.stdout)["layers"]}


@pytest.mark.integration
class TestWhatReachesTheAgent:
    def test_a_deploy_command_brings_its_procedure_and_the_lesson_before_it_runs(self, walked: Path, run: Run) -> None:
        """PreToolUse for `kubectl apply -f deploy/api.yaml --context prod` brought nothing in 10 of 10
        sessions (the lesson scored 0.24 under the 0.40 floor): the procedure naming the command, and the
        lesson, now come first."""
        text = hook(
            run,
            "PreToolUse",
            tool_name="Bash",
            tool_input={"command": "kubectl apply -f deploy/api.yaml --context prod"},
        )
        assert injected(text)[:1] == ["P-001"] and "L-001" in injected(text)
        assert "risky or irreversible" in text

    def test_a_release_prompt_and_a_deploy_prompt_bring_their_procedures(self, walked: Path, run: Run) -> None:
        """ "deploy the API to staging" scored its procedure 0.394, under the one floor."""
        assert "P-001" in injected(hook(run, "UserPromptSubmit", prompt="deploy the API to staging"))
        release = injected(hook(run, "UserPromptSubmit", prompt="let's cut the next release", session="two"))
        assert "P-002" in release and "E-003" in release

    def test_a_failure_only_stderr_reports_brings_the_run_that_failed_the_same_way(
        self, walked: Path, run: Run
    ) -> None:
        """psql exits 0 after `ERROR:  column ... does not exist` (no exit code in Claude Code's PostToolUse):
        the episode of that error comes, and the failure is the run's working memory."""
        stderr = "psql:sql/report.sql:3: ERROR:  column users.last_login does not exist\nLINE 1: SELECT last_login\n"
        text = hook(
            run, "PostToolUse", tool_name="Bash", tool_input={"command": "psql -f sql/report.sql"},
            tool_response={"stdout": "", "stderr": stderr, "interrupted": False},
        )  # fmt: skip
        assert "E-004" in injected(text) and "ERROR: column users.last_login does not exist" in text
        hook(run, "PreCompact", hook_event_name="PreCompact")  # runs after the watcher's write of the failure
        state = json.loads(run("working", "show", "--run", f"session-{SESSION}", "--json").stdout)["working"]
        assert state["blockers"] == ["ERROR: column users.last_login does not exist"]

    def test_act_brings_procedures_then_episodes_of_the_same_task(self, walked: Path, run: Run) -> None:
        """recall --trigger act gave procedures only, even when the last run of the same task failed: the
        release's failed run now follows the release procedure."""
        found = recalled(run, "release version 2.4", "--trigger", "act")
        assert list(found) == ["procedure", "episode"]
        assert found["procedure"]["hits"][0]["entry"]["id"] == "P-002"
        assert [hit["entry"]["id"] for hit in found["episode"]["hits"]][:1] == ["E-003"]

    def test_a_promoted_episode_gives_way_to_its_procedure(self, walked: Path, run: Run) -> None:
        """Promoted episodes were injected beside their procedure: once promoted, an episode's place is its
        procedure's, in recall and in the hooks."""
        result = run("promote", "E-001", "E-002", "--to", "procedure", "--reason", "Two deploys failed", "--json")
        new = json.loads(result.stdout)["added"][0]
        assert json.loads(run("show", new, "--json").stdout)["entry"]["title"].lower().startswith("deploy")
        run("backfill")
        found = recalled(run, "the prod deploy sat in ImagePullBackOff", "--trigger", "turn", "--floor", "0")
        assert not {"E-001", "E-002"} & {hit["entry"]["id"] for hit in found["episode"]["hits"]}
        assert new in [hit["entry"]["id"] for hit in found["procedure"]["hits"]]
        text = hook(run, "UserPromptSubmit", prompt="the prod deploy sat in ImagePullBackOff again", session="three")
        assert not {"E-001", "E-002"} & set(injected(text)) and new in injected(text)

    def test_a_layer_under_its_floor_is_empty_and_says_what_it_held(self, walked: Path, run: Run) -> None:
        """recall returned a layer whose best hit scored 0.04 as not empty: each layer now has its floor,
        and an empty one says so, naming its best hit under it; --floor 0 shows everything."""
        found = recalled(run, "a haiku about autumn leaves and the smoke of chimneys", "--trigger", "replan")
        assert all(group["empty"] and not group["hits"] for group in found.values())
        notes = [group["note"] for group in found.values()]
        assert all(note.startswith(f"no {layer} ") for layer, note in zip(found, notes, strict=True))
        assert all(group["floor"] == load_settings(walked).floor(layer) for layer, group in found.items())
        everything = recalled(run, "deploy", "--trigger", "replan", "--floor", "0")
        assert everything["procedure"]["floor"] == 0 and everything["procedure"]["hits"]
