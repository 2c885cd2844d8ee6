"""Misplaced use of the CLI: the stdio servers (lsp, mcp) started by hand on a terminal, and group options
given after the command: each says what to do instead of waiting or failing obscurely."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


@pytest.mark.parametrize(("command", "words"), [("lsp", "your editor"), ("mcp", "an MCP client")])
def test_a_server_on_a_terminal_refuses_with_exit_2(root: Path, command: str, words: str) -> None:
    """memfiles lsp / mcp with a terminal on stdin exit 2 naming who starts them, with no traceback."""
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [str(BIN / "memfiles"), "--root", str(root), command],
            stdin=follower,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 2, done.stderr
    assert words in done.stderr and "Traceback" not in done.stderr and done.stdout == ""


def test_the_lsp_on_a_pipe_still_serves(root: Path) -> None:
    """With a pipe on stdin (as an editor starts it) the server runs and ends at end of input, exit 0."""
    done = subprocess.run(
        [str(BIN / "memfiles"), "--root", str(root), "lsp"], input="", capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["list", "--root", "."], "--root goes before the command: memfiles --root DIR list ..."),
        (["working", "show", "--root", "."], "memfiles --root DIR working show ..."),
        (["status", "--chroma-url", "http://x"], "--chroma-url goes before the command"),
    ],
)
def test_a_group_option_after_the_command_says_where_it_goes(root: Path, args: list[str], words: str) -> None:
    """--root (or --chroma-url) after the command: exit 2 saying it goes before it, as JSON with --json."""
    from click.testing import CliRunner

    from memfiles.cli.main import cli

    result = CliRunner().invoke(cli, args, prog_name="memfiles")
    assert result.exit_code == 2 and words in result.stderr
    as_json = CliRunner().invoke(cli, [*args, "--json"], prog_name="memfiles")
    assert as_json.exit_code == 2 and words in json.loads(as_json.stdout)["error"]["message"]
