"""The `memfiles` executable: `memfiles recall` and `memfiles hook` take short paths that load only
their own command.

An agent may call recall on every turn, and its hooks fire on every prompt and command, so their
start-up must not pay for importing every other command (the distiller, the index commands ...);
`hook` does not even import click. Everything else goes to the full command group.
"""

from __future__ import annotations

import contextlib
import os
import sys

_GROUP_OPTIONS_WITH_VALUE = ("--root", "--chroma-url")


def subcommand(argv: list[str]) -> str | None:
    """The subcommand named on the command line, past the group's own options; None if there is none."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _GROUP_OPTIONS_WITH_VALUE:
            skip = True
        elif arg.startswith("-"):
            if not any(arg.startswith(f"{option}=") for option in _GROUP_OPTIONS_WITH_VALUE):
                return None  # --help, --version, or an unknown option: the full group answers
        else:
            return arg
    return None


def main() -> None:
    try:
        _dispatch()
    except SystemExit as done:
        _leave(done.code)
        raise
    except KeyboardInterrupt:
        _leave(130)  # as a shell reports an interrupted command
        raise
    _leave(0)


def _leave(code: object) -> None:
    """Exit at once, skipping the interpreter's finalisation, when a write's index update was given up on
    and still runs (services/indexing/index_client.abandoned): the command's output is flushed and its code kept."""
    client = sys.modules.get("memfiles.services.indexing.index_client")
    if client is None or not client.abandoned():
        return
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): printed to stderr, exit 1, as Python does
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be said
            stream.flush()
    os._exit(code)


def _dispatch() -> None:
    command = subcommand(sys.argv[1:])
    if command != "hook":  # a hook reads its event from stdin and never fails its agent
        from memfiles.cli.argv import refuse_undecodable

        refuse_undecodable(sys.argv[1:], "memfiles")
    if command == "hook" and "_MEMFILES_COMPLETE" not in os.environ and not {"-h", "--help"} & set(sys.argv[1:]):
        from memfiles.cli.hook_entry import main as hook

        hook(sys.argv[1:])
    elif command == "recall" and "_MEMFILES_COMPLETE" not in os.environ:
        from memfiles.cli.recall_group import thin

        thin(prog_name="memfiles")
    else:
        from memfiles.cli.main import cli

        cli(prog_name="memfiles")
