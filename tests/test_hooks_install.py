"""`memfiles hooks install|uninstall`: memfiles' entries in an agent's settings file, and nobody else's touched."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memfiles.services.agents.hook_agents import is_ours
from tests.conftest import DATA, Run

HOOKS = DATA / "hooks"


def place(root: Path, fixture: str, where: str) -> Path:
    path = root / where
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(HOOKS / fixture, path)
    return path


def ours(data: dict) -> dict[str, list[str]]:
    return {
        event: [item["command"] for group in groups for item in group["hooks"] if is_ours(item["command"])]
        for event, groups in data.get("hooks", {}).items()
        if isinstance(groups, list)
    }


def others(data: dict) -> dict:
    """The settings without memfiles' entries, groups it made, or events it added."""
    hooks = {}
    for event, groups in data.get("hooks", {}).items():
        if not isinstance(groups, list):
            hooks[event] = groups
            continue
        kept = [g for g in groups if not all(is_ours(item["command"]) for item in g["hooks"])]
        if kept:
            hooks[event] = kept
    return {**data, "hooks": hooks}


class TestClaudeCode:
    def test_install_keeps_every_other_hook_and_setting(self, run: Run, root: Path) -> None:
        """Others' hooks, permissions and model stay as they were; memfiles adds one entry per event."""
        path = place(root, "claude_settings_with_other_hooks.json", ".claude/settings.json")
        before = json.loads(path.read_text())
        result = run("hooks", "install", "--agent", "claude-code", "--command", "memfiles")
        assert result.exit_code == 0, result.output
        after = json.loads(path.read_text())
        assert others(after) == before
        mine = ours(after)
        assert set(mine) == {
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PostToolUseFailure",
            "PreCompact",
            "Stop",
            "SessionEnd",
        }
        assert mine["PreToolUse"] == ["memfiles hook PreToolUse"]
        assert after["hooks"]["PreToolUse"][0] == before["hooks"]["PreToolUse"][0]  # theirs first, untouched
        assert after["hooks"]["PreToolUse"][1]["matcher"] == "Bash"

    def test_install_twice_changes_nothing_and_uninstall_restores_the_file(self, run: Run, root: Path) -> None:
        """Both idempotent; install then uninstall gives back the original file byte for byte."""
        path = place(root, "claude_settings_with_other_hooks.json", ".claude/settings.json")
        original = path.read_text()
        run("hooks", "install", "--command", "memfiles")
        installed = path.read_text()
        again = run("hooks", "install", "--command", "memfiles", "--json")
        assert json.loads(again.stdout)["changed"] is False and path.read_text() == installed
        gone = run("hooks", "uninstall", "--json")
        data = json.loads(gone.stdout)
        assert data["changed"] is True and "UserPromptSubmit" in data["removed"]
        assert path.read_text() == original
        assert json.loads(run("hooks", "uninstall", "--json").stdout)["changed"] is False

    def test_uninstall_removes_only_its_own_entries_from_a_shared_group(self, run: Run, root: Path) -> None:
        """A group holding someone's hook and memfiles' keeps the other hook."""
        path = root / ".claude" / "settings.json"
        path.parent.mkdir()
        shared = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}
        shared["hooks"]["Stop"][0]["hooks"].append({"type": "command", "command": "/opt/bin/memfiles hook Stop"})
        path.write_text(json.dumps(shared))
        run("hooks", "uninstall")
        assert json.loads(path.read_text()) == {
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}
        }

    def test_a_changed_command_is_updated_in_place(self, run: Run, root: Path) -> None:
        """Installing with another --command replaces memfiles' entries rather than adding a second set."""
        run("hooks", "install", "--command", "memfiles")
        run("hooks", "install", "--command", "/opt/venv/bin/memfiles")
        data = json.loads((root / ".claude" / "settings.json").read_text())
        assert ours(data)["Stop"] == ["/opt/venv/bin/memfiles hook Stop"]
        assert all(len(groups) == 1 for groups in data["hooks"].values())

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ('{"hooks": {"Stop": [}', ".claude/settings.json:1: not valid JSON"),
            ('["a list"]', "must be a JSON object"),
            ('{"hooks": []}', '"hooks" must be an object'),
            ('{"hooks": {"Stop": {"command": "x"}}}', '"hooks.Stop" must be a list'),
            ('{"hooks": {"Stop": ["x"]}}', '"hooks.Stop" group 1 must be an object'),
            ('{"hooks": {}, "hooks": {"Stop": []}}', ':1: not valid JSON: key "hooks" given twice'),
            ("[" * 3000 + "]" * 3000, "nested too deep"),
            ("\udcff{}", "not UTF-8 text"),
        ],
    )
    def test_a_malformed_settings_file_is_refused_and_left_alone(
        self, run: Run, root: Path, text: str, message: str
    ) -> None:
        """Exit 2 naming the file (and line), for install and uninstall; the file keeps every byte."""
        path = root / ".claude" / "settings.json"
        path.parent.mkdir()
        path.write_bytes(text.encode("utf-8", "surrogateescape"))  # "\udcff": the byte 0xff, not UTF-8
        for command in (["hooks", "install"], ["hooks", "uninstall"]):
            result = run(*command)
            assert result.exit_code == 2 and message in result.output and "nothing written" in result.output
        assert path.read_bytes() == text.encode("utf-8", "surrogateescape")
        error = json.loads(run("hooks", "install", "--json").stdout)["error"]
        assert error["code"] == "parse" and error["path"] == ".claude/settings.json"

    def test_a_settings_file_that_is_a_loop_of_links_is_no_traceback(self, run: Run, root: Path) -> None:
        """settings.json -> loop.json -> settings.json: the write through links gave a RuntimeError traceback."""
        (root / ".claude").mkdir()
        (root / ".claude" / "settings.json").symlink_to("loop.json")
        (root / ".claude" / "loop.json").symlink_to("settings.json")
        result = run("hooks", "install")
        assert "Traceback" not in result.output and result.exit_code in (0, 2), result.output

    def test_dry_run_prints_the_diff_and_writes_nothing(self, run: Run, root: Path) -> None:
        """--dry-run shows what would change and creates no file."""
        result = run("hooks", "install", "--scope", "local", "--dry-run", "--command", "memfiles")
        assert result.exit_code == 0 and '+            "command": "memfiles hook SessionStart",' in result.output
        assert "would be installed in .claude/settings.local.json" in result.output
        assert not (root / ".claude").exists()

    def test_the_diff_labels_a_new_and_a_deleted_file_as_git_does(self, run: Run, root: Path) -> None:
        """The diff's second header said `(new)` for every change; a file created or deleted is labelled
        with /dev/null on its missing side, an existing one with its own name on both."""
        made = json.loads(run("hooks", "install", "--scope", "local", "--command", "memfiles", "--json").stdout)
        assert made["diff"].startswith("--- /dev/null\n+++ .claude/settings.local.json\n")
        again = json.loads(
            run("hooks", "install", "--scope", "local", "--command", "/opt/venv/bin/memfiles", "--json").stdout
        )
        assert again["diff"].startswith("--- .claude/settings.local.json\n+++ .claude/settings.local.json\n")
        gone = json.loads(run("hooks", "uninstall", "--scope", "local", "--json").stdout)
        assert gone["diff"].startswith("--- .claude/settings.local.json\n+++ /dev/null\n")

    def test_a_file_that_held_only_memfiles_hooks_goes_with_them(self, run: Run, root: Path) -> None:
        """install into no file, then uninstall: no file is left behind (not even {})."""
        run("hooks", "install", "--scope", "local", "--command", "memfiles")
        assert (root / ".claude" / "settings.local.json").exists()
        run("hooks", "uninstall", "--scope", "local")
        assert not (root / ".claude" / "settings.local.json").exists()

    def test_user_scope_writes_the_home_settings(self, run: Run, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """--scope user goes to ~/.claude/settings.json."""
        monkeypatch.setenv("HOME", str(root / "home"))
        assert run("hooks", "install", "--scope", "user", "--command", "memfiles").exit_code == 0
        assert "UserPromptSubmit" in ours(json.loads((root / "home" / ".claude" / "settings.json").read_text()))


class TestGeminiCli:
    def test_install_and_uninstall_round_trip_keeps_its_switches_and_hooks(self, run: Run, root: Path) -> None:
        """Gemini CLI's own hooks.disabled list and other hooks survive; timeouts are milliseconds; names are set."""
        path = place(root, "gemini_settings_with_other_hooks.json", ".gemini/settings.json")
        original = path.read_text()
        assert run("hooks", "install", "--agent", "gemini-cli", "--command", "memfiles").exit_code == 0
        data = json.loads(path.read_text())
        assert data["hooks"]["disabled"] == ["auto-test"] and data["general"] == {"vimMode": True}
        entry = data["hooks"]["BeforeAgent"][0]["hooks"][0]
        assert entry["name"] == "memfiles-BeforeAgent" and entry["timeout"] == 10000
        assert data["hooks"]["AfterTool"][0]["matcher"] == "run_shell_command"
        assert "PreToolUse" not in data["hooks"] and "BeforeTool" in data["hooks"]  # theirs only
        run("hooks", "uninstall", "--agent", "gemini-cli")
        assert path.read_text() == original

    def test_gemini_has_no_local_scope(self, run: Run) -> None:
        """--scope local names the scopes Gemini CLI has; exit 2."""
        result = run("hooks", "install", "--agent", "gemini-cli", "--scope", "local")
        assert result.exit_code == 2 and "gemini-cli has no 'local' scope" in result.output


@pytest.mark.parametrize(
    ("command", "mine"),
    [
        ("memfiles hook Stop", True),
        ("/home/me/.venv/bin/memfiles hook PreToolUse", True),
        ("uv run memfiles --root /p hook SessionStart", True),
        ("'/path with space/memfiles' hook Stop", True),
        ("memfiles check", False),
        ("memfiles hook Stop | tee log", False),
        ("my-memfiles-wrapper hook Stop", False),
        ("echo 'unclosed", False),
    ],
)
def test_only_memfiles_hook_commands_count_as_its_own(command: str, mine: bool) -> None:
    """Uninstall touches a command only when it runs `memfiles [--root DIR] hook EVENT`."""
    assert is_ours(command) is mine
