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


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _lsp_session(root: Path, *requests: dict, cwd: Path | None = None) -> bytes:
    """What `memfiles lsp` writes for an initialize, `requests`, then shutdown and exit, on one pipe."""
    start = {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": start},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        *requests,
        {"jsonrpc": "2.0", "id": 99, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    command = [str(BIN / "memfiles"), *([] if cwd else ["--root", str(root)]), "lsp"]
    frames = b"".join(_frame(m) for m in messages)
    return subprocess.run(command, input=frames, capture_output=True, timeout=120, cwd=cwd).stdout


def _answers(stdout: bytes) -> dict[object, dict]:
    """The responses in a stream of framed JSON-RPC messages, by request id."""
    found = {}
    while stdout:
        head, _, rest = stdout.partition(b"\r\n\r\n")
        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        message, stdout = json.loads(rest[:length]), rest[length:]
        if "id" in message and "method" not in message:
            found[message["id"]] = message
    return found


def test_the_lsp_answers_a_request_it_cannot_read(root: Path) -> None:
    """hover with `params: {}`, `null` or a negative position: an answer with JSON-RPC's invalid-params
    error (-32602), where pygls dropped the request and the editor waited for its own timeout; the
    requests after them are answered as ever."""
    uri = (root / "x.py").as_uri()
    hover = "textDocument/hover"
    stdout = _lsp_session(
        root,
        {"jsonrpc": "2.0", "id": 2, "method": hover, "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": hover, "params": None},
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": hover,
            "params": {"textDocument": {"uri": uri}, "position": {"line": -1, "character": -5}},
        },
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": hover,
            "params": {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}},
        },
    )
    answers = _answers(stdout)
    assert [answers[n]["error"]["code"] for n in (2, 3, 4)] == [-32602, -32602, -32602], answers
    assert "error" not in answers[5] and "error" not in answers[99]


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


def test_the_lsp_says_a_refused_config_is_not_a_missing_project(root: Path) -> None:
    """memory/memfiles.toml with a bad value: the warning says the project's settings are refused, naming
    the key (it said "no project here", in a project)."""
    (root / "memory" / "memfiles.toml").write_text("wrap = 7\n")
    said = _lsp_session(root, cwd=root).decode()
    assert "the project's settings are refused" in said and "wrap" in said and "no project here" not in said
