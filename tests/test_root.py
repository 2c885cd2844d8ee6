"""Root discovery: every folder of a project resolves to the same root, and a root given that does not
exist is refused without creating anything."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memfiles.cli.main import cli
from memfiles.config import find_root
from memfiles.errors import ConfigError

DEPTHS = ("", "pkg", "pkg/sub/deeper")


def _project(base: Path, git: bool) -> Path:
    """A project with memory/ at its top and pkg/memory/ below, optionally a git repository."""
    root = base / "proj"
    (root / "memory").mkdir(parents=True)
    (root / "pkg" / "memory").mkdir(parents=True)
    (root / "pkg" / "sub" / "deeper").mkdir(parents=True)
    if git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _memfiles(cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    """`memfiles args...` run from `cwd`, with no --root and no MEMFILES_ROOT."""
    monkeypatch.delenv("MEMFILES_ROOT", raising=False)
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _add(cwd: Path, monkeypatch: pytest.MonkeyPatch, title: str, *extra: str) -> Result:
    return _memfiles(cwd, monkeypatch, "add", "-k", "D", "-t", title, "-a", "root", "--body", "Body.", *extra)


@pytest.mark.parametrize("git", [True, False], ids=["in-git", "no-git"])
class TestSameRootFromEveryDepth:
    def test_find_root_is_the_top_from_three_depths(self, tmp_path: Path, git: bool) -> None:
        """From the root, from pkg/ (which holds its own memory/) and from pkg/sub/deeper, the root is the top."""
        root = _project(tmp_path, git)
        for depth in DEPTHS:
            assert find_root(root / depth) == root.resolve(), depth

    def test_adds_from_three_depths_share_one_id_space_and_one_state_folder(
        self, tmp_path: Path, git: bool, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`memfiles add` from each depth allocates from the whole project: D-001, D-002, D-003, and only the
        root gets a .memfiles/ (pkg/ never does)."""
        root = _project(tmp_path, git)
        (root / "pkg" / "memory" / "decisions.md").write_text("")  # a package's own memory, not a root
        ids = []
        for n, depth in enumerate(DEPTHS):
            result = _add(root / depth, monkeypatch, f"From depth {n}")
            assert result.exit_code == 0, result.output
            ids.append(result.stdout.strip())
        assert ids == ["D-001", "D-002", "D-003"]
        assert (root / ".memfiles").is_dir()
        assert not (root / "pkg" / ".memfiles").exists()
        assert not (root / "pkg" / "sub" / "deeper" / ".memfiles").exists()
        listed = _memfiles(root / "pkg" / "sub" / "deeper", monkeypatch, "list", "--json")
        assert listed.exit_code == 0
        assert "D-003" in listed.stdout

    def test_a_package_entry_counts_when_adding_from_the_package(
        self, tmp_path: Path, git: bool, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With D-001 in memory/ and D-002 in pkg/memory/, an add from pkg/ hands out D-003, not D-002 again."""
        root = _project(tmp_path, git)
        assert _add(root, monkeypatch, "At the top").stdout.strip() == "D-001"
        assert _add(root, monkeypatch, "In the package", "--file", "pkg/memory/decisions.md").exit_code == 0
        assert _add(root / "pkg", monkeypatch, "From the package").stdout.strip() == "D-003"
        assert not (root / "pkg" / ".memfiles").exists()


class TestBounds:
    def test_the_repository_top_bounds_the_walk(self, tmp_path: Path) -> None:
        """A memory/ above the repository is not this repository's root; the topmost one inside it is."""
        (tmp_path / "memory").mkdir()
        repo = tmp_path / "repo"
        (repo / "lib" / "memory").mkdir(parents=True)
        (repo / "lib" / "src").mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        assert find_root(repo / "lib" / "src") == (repo / "lib").resolve()
        (repo / "memory").mkdir()
        assert find_root(repo / "lib" / "src") == repo.resolve()

    def test_a_pyproject_marker_makes_a_root_without_memory(self, tmp_path: Path) -> None:
        """A pyproject.toml with [tool.memfiles] at the top is the root even before memory/ exists there."""
        (tmp_path / "pyproject.toml").write_text("[tool.memfiles]\nwrap = 100\n")
        (tmp_path / "pkg" / "memory").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        assert find_root(tmp_path / "pkg") == tmp_path.resolve()

    @pytest.mark.parametrize(
        ("text", "is_root"),
        [
            ("[tool]\nmemfiles = { wrap = 100 }\n", True),  # the same table in another TOML spelling
            ("tool.memfiles.wrap = 100\n", True),
            ('[tool.memfiles.kinds.risk]\nprefix = "R"\n', True),
            ('[project]\nname = "x"\n# [tool.memfiles] some day\n', False),  # a comment declares nothing
            ('[project]\ndescription = "a [tool.memfiles] table"\n', False),
            ('[project]\nname = "x"\n[tool.memfiles\n', True),  # broken TOML: found, so that settings say why
            ('[project]\ndependencies = [\n  "memfiles>=0.1",\n]\n', False),
        ],
    )
    def test_the_pyproject_marker_is_read_as_toml(self, tmp_path: Path, text: str, is_root: bool) -> None:
        """Whether a pyproject.toml marks the root is its TOML's answer, not a substring's."""
        (tmp_path / "pyproject.toml").write_text(text)
        (tmp_path / "pkg" / "memory").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        assert find_root(tmp_path / "pkg") == (tmp_path if is_root else tmp_path / "pkg").resolve()

    def test_a_package_that_depends_on_memfiles_costs_the_thin_clients_no_toml_parse(self, tmp_path: Path) -> None:
        """Root discovery on the fast paths: a pyproject.toml that names memfiles only as a dependency is
        not parsed (tomllib's imports cost about 18 ms)."""
        import sys

        (tmp_path / "memory").mkdir()
        (tmp_path / "pkg" / "src").mkdir(parents=True)
        (tmp_path / "pkg" / "pyproject.toml").write_text('[project]\ndependencies = ["memfiles>=0.1"]\n')
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        code = (
            "import sys\nfrom memfiles.root import root_folder\n"
            "print(root_folder(sys.argv[1]), 'tomllib' in sys.modules)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / "pkg" / "src")], capture_output=True, text=True, check=True
        )
        assert done.stdout.split() == [str(tmp_path.resolve()), "False"]

    def test_no_root_anywhere_is_a_clear_error(self, tmp_path: Path) -> None:
        """A folder with no memory/ above it (inside a repository): ConfigError saying to pass --root."""
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        with pytest.raises(ConfigError, match="no memory/ folder at or above") as caught:
            find_root(tmp_path)
        assert "(to start one here: mkdir memory)" in str(caught.value)  # a new user's first command


class TestGivenRoot:
    @pytest.mark.parametrize("command", [["list"], ["check"], ["add", "-k", "D", "-t", "t", "-a", "a", "--body", "b"]])
    def test_a_root_that_does_not_exist_is_refused_and_nothing_is_created(
        self, tmp_path: Path, command: list[str]
    ) -> None:
        """--root /does/not/exist: exit 2 naming it, for list, check and add, and no folder is created."""
        missing = tmp_path / "does" / "not" / "exist"
        result = CliRunner().invoke(cli, ["--root", str(missing), *command], catch_exceptions=False)
        assert result.exit_code == 2
        assert f"{missing}: no such folder" in result.stderr
        assert not (tmp_path / "does").exists()

    def test_memfiles_root_that_does_not_exist_is_refused(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """MEMFILES_ROOT naming a missing folder: add exits 2 and creates nothing."""
        missing = tmp_path / "gone"
        monkeypatch.setenv("MEMFILES_ROOT", str(missing))
        result = CliRunner().invoke(cli, ["add", "-k", "D", "-t", "t", "-a", "a", "--body", "b"])
        assert result.exit_code == 2 and "no such folder" in result.stderr
        assert not missing.exists()

    def test_a_root_that_is_a_file_is_refused(self, tmp_path: Path) -> None:
        """--root naming a file: exit 2, "not a folder", with the config error object under --json."""
        target = tmp_path / "file.txt"
        target.write_text("x")
        result = CliRunner().invoke(cli, ["list", "--json"], env={"MEMFILES_ROOT": str(target)})
        assert result.exit_code == 2 and "not a folder" in result.stderr
        assert json.loads(result.stdout)["error"]["code"] == "config"

    def test_memfiles_root_error_names_the_variable_and_the_key(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """MEMFILES_ROOT=/missing: the message names MEMFILES_ROOT (not --root) and the error's key is root."""
        missing = tmp_path / "gone"
        monkeypatch.setenv("MEMFILES_ROOT", str(missing))
        result = CliRunner().invoke(cli, ["list", "--json"])
        assert result.exit_code == 2 and f"MEMFILES_ROOT={missing}: no such folder" in result.stderr
        error = json.loads(result.stdout)["error"]
        assert (error["code"], error["key"]) == ("config", "root")
        flag = CliRunner().invoke(cli, ["--root", str(tmp_path / "other"), "list"], env={"MEMFILES_ROOT": ""})
        assert f"--root {tmp_path / 'other'}: no such folder" in flag.stderr

    @pytest.mark.parametrize("command", [["list"], ["add", "-k", "T", "-t", "t", "-a", "a", "--body", "b"]])
    def test_a_root_without_memory_is_refused(self, tmp_path: Path, command: list[str]) -> None:
        """--root src where src/ holds no memory/ (and no marker): exit 2 saying how to start a project there;
        nothing is created (no second id space beside the project's)."""
        src = tmp_path / "src"
        src.mkdir()
        result = CliRunner().invoke(cli, ["--root", str(src), *command, "--json"])
        assert result.exit_code == 2
        assert f"no memory/ folder in {src}; run `mkdir {src / 'memory'}` to start a project there" in result.stderr
        assert json.loads(result.stdout)["error"]["key"] == "root"
        assert list(src.iterdir()) == []

    def test_the_memory_folder_given_as_the_root_is_named_so(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """--root pkg/memory (the memory folder, not the root) was told to `mkdir pkg/memory/memory`; now it
        is named the memory folder, with the root to give instead (relative to where the command runs)."""
        (tmp_path / "pkg" / "memory").mkdir(parents=True)
        monkeypatch.chdir(tmp_path)
        empty = CliRunner().invoke(cli, ["--root", "pkg/memory", "list"])  # an empty folder named memory: a
        assert "run `mkdir pkg/memory/memory` to start a project there" in empty.stderr  # new project's root?
        (tmp_path / "pkg" / "memory" / "ids.txt").write_text("D 1\n")
        result = CliRunner().invoke(cli, ["--root", "pkg/memory", "list"])
        assert result.exit_code == 2
        assert "pkg/memory is the memory folder itself; give the project root: --root pkg" in result.stderr
        assert sorted(path.name for path in (tmp_path / "pkg").rglob("*")) == ["ids.txt", "memory"]  # nothing made
        monkeypatch.chdir(tmp_path / "pkg" / "memory")
        inside = CliRunner().invoke(cli, ["--root", ".", "list"])
        assert inside.exit_code == 2 and "give the project root: --root .." in inside.stderr

    @pytest.mark.parametrize("git", [True, False], ids=["in-git", "no-git"])
    def test_a_root_inside_another_project_is_refused_naming_its_root(self, tmp_path: Path, git: bool) -> None:
        """--root proj/pkg (it holds memory/, but proj/ does too): exit 2 naming proj as the root to use;
        nothing is written."""
        root = _project(tmp_path, git)
        result = CliRunner().invoke(cli, ["--root", str(root / "pkg"), "add", "-k", "T", "-t", "t", "-a", "a",
                                          "--body", "b"])  # fmt: skip
        assert result.exit_code == 2
        assert f"is inside the project rooted at {root}" in result.stderr and f"use --root {root}" in result.stderr
        assert list((root / "pkg" / "memory").iterdir()) == []

    def test_a_repository_of_its_own_below_a_project_is_a_root(self, tmp_path: Path) -> None:
        """A nested repository (its own .git) with memory/ is a root even inside another project's folder."""
        root = _project(tmp_path, True)
        inner = root / "vendor" / "lib"
        (inner / "memory").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(inner)], check=True)
        result = CliRunner().invoke(cli, ["--root", str(inner), "list", "--json"])
        assert result.exit_code == 0, result.output

    def test_root_help_says_how_the_root_is_found(self) -> None:
        """`memfiles --help` describes --root: must exist; default the topmost folder up to the repository top."""
        text = " ".join(CliRunner().invoke(cli, ["--help"]).output.split())
        assert "must be an existing folder" in text and "topmost" in text and "repository top" in text


def _command_names() -> list[str]:
    return sorted(name for name, command in cli.commands.items() if not getattr(command, "hidden", False))


@pytest.mark.parametrize("name", _command_names())
def test_every_command_outside_a_project_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Each command run with no argument in a repository that has no memory/ (no --root, no MEMFILES_ROOT):
    exit 2 with a one-line reason, never a traceback (`memfiles watch --stop` used to raise ConfigError
    from the settings it read outside its error handling); nothing is created. `hook` is the exception by
    design: an agent's hook never fails, it answers `{}` (docs/hooks.md); so is `lsp`, whose client's
    stdin, empty here, ends it before a document names a project."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    before = sorted(p.name for p in tmp_path.iterdir())
    monkeypatch.delenv("MEMFILES_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    for args in [[name], [name, "--stop"]] if name == "watch" else [[name]]:
        result = CliRunner().invoke(cli, args, input="")
        assert result.exception is None or isinstance(result.exception, SystemExit), (args, result.exception)
        assert result.exit_code == (0 if name in ("hook", "lsp") else 2), (args, result.output)
        assert "Traceback" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before
