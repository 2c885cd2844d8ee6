"""The layering: the core and the checks import nothing heavy; every command has help and is documented."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from memfiles.cli.main import cli
from tests.conftest import REPO

HEAVY = ["torch", "chromadb", "sentence_transformers", "watchdog", "numpy", "transformers"]


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


class TestImports:
    def test_format_core_is_stdlib_only(self) -> None:
        """memfiles.format imports none of chromadb, torch, watchdog or click."""
        loaded = _modules_after("import memfiles.format.parse, memfiles.format.render, memfiles.format.validate")
        assert not loaded & {*HEAVY, "click"}

    def test_import_memfiles_is_light(self) -> None:
        """`import memfiles` imports no heavy library."""
        assert not _modules_after("import memfiles") & set(HEAVY)

    def test_check_command_is_light(self) -> None:
        """Running `memfiles check` on this repository imports neither torch nor chromadb."""
        code = (
            "from click.testing import CliRunner\nfrom memfiles.cli.main import cli\n"
            "result = CliRunner().invoke(cli, ['--root', '.', 'check'])\n"
            "assert result.exit_code == 0, result.output  # a check that failed early proves nothing\n"
            "assert 'files ok' in result.output, result.output"
        )
        assert not _modules_after(code) & set(HEAVY)

    def test_memsearch_help_is_light(self) -> None:
        """`memsearch --help` imports neither torch nor chromadb."""
        code = (
            "from click.testing import CliRunner\nfrom memfiles.cli.search import memsearch\n"
            "CliRunner().invoke(memsearch, ['--help'])"
        )
        assert not _modules_after(code) & set(HEAVY)

    @pytest.mark.parametrize(
        "args",
        [
            ["list"],
            ["show", "D-001"],
            ["check", "--no-lint"],
            ["hook", "UserPromptSubmit"],
        ],
    )
    def test_reads_never_import_the_markdown_reader(self, args: list[str]) -> None:
        """Reads (list, show, a check without lint, a prompt hook) never import markdown-it-py, which only
        a write, fmt or a lint pays for (docs/lint.md)."""
        code = (
            "import os\nos.environ['MEMFILES_SEARCH_WATCH'] = '0'\n"
            "from click.testing import CliRunner\nfrom memfiles.cli.main import cli\n"
            f"r = CliRunner().invoke(cli, ['--root', '.', *{args!r}], input='{{\"prompt\": \"hello\"}}')\n"
            "assert r.exit_code in (0, 1), r.output"
        )
        assert "markdown_it" not in _modules_after(code)

    def test_query_path_does_not_import_torch(self) -> None:
        """The query embedder (numpy) loads without torch or sentence-transformers."""
        code = "from memfiles.index.embedder import load_embedder\nload_embedder(None, light=True).encode(['x'])"
        loaded = _modules_after(code)
        assert "torch" not in loaded and "sentence_transformers" not in loaded


class TestHelp:
    @pytest.mark.parametrize("name", sorted(cli.commands))
    def test_every_command_has_help_with_an_example_and_is_in_the_readme(self, name: str) -> None:
        """`memfiles NAME --help` works, shows an example, and the README mentions `memfiles NAME`."""
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0
        assert "Example" in result.output
        assert f"memfiles {name}" in (REPO / "README.md").read_text(encoding="utf-8")
