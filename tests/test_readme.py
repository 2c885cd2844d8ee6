"""The README's commands: every `memfiles` and `memsearch` line it shows parses against the real CLI."""

from __future__ import annotations

import re
import shlex

import click
import pytest

from memfiles.cli.main import cli
from memfiles.cli.search import memsearch
from tests.conftest import REPO

_BLOCK = re.compile(r"```sh\n(.*?)```", re.DOTALL)


def _command_lines() -> list[list[str]]:
    """Every `memfiles ...` / `memsearch ...` command of the sh blocks of the README and docs/agents.md (the
    worked session), as argument lists."""
    text = "".join((REPO / page).read_text(encoding="utf-8") for page in ("README.md", "docs/agents.md"))
    found: list[list[str]] = []
    for block in _BLOCK.findall(text):
        for raw in block.replace("\\\n", " ").splitlines():
            words = shlex.split(raw.replace("$run", "r1").replace("$(mktemp -d)", "/tmp"), comments=True)
            command: list[str] = []
            for word in [*words, ";"]:
                if word in ("&&", "||", ";", "|", "do", "then"):
                    if command and command[0] in ("memfiles", "memsearch"):
                        found.append(command)
                    command = []
                else:
                    command.append(word.rstrip(";"))
    return found


COMMANDS = _command_lines()


def test_the_readme_shows_commands() -> None:
    """The extraction finds the README's examples (a change of fence style must not empty this test)."""
    assert len(COMMANDS) > 20


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(c)[:60] for c in COMMANDS])
def test_every_readme_command_parses(args: list[str]) -> None:
    """Each command line names a real command and options it takes, with values of the right type."""
    line = " ".join(args)
    program, rest = args[0], args[1:]
    group: click.Command = cli if program == "memfiles" else memsearch
    with group.make_context(program, list(rest), resilient_parsing=False) as context:
        while isinstance(group, click.Group):
            name, command, remaining = group.resolve_command(context, [*context._protected_args, *context.args])
            assert command is not None, f"no command {name!r} in {line!r}"
            context = command.make_context(name, remaining, parent=context)
            group = command
