"""The `memfiles` executable: `memfiles recall` takes a short path that loads only its own command.

An agent may call recall on every turn, so its start-up must not pay for importing every other
command (the distiller, the index commands ...). Everything else goes to the full command group.
"""

from __future__ import annotations

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
    if subcommand(sys.argv[1:]) == "recall" and "_MEMFILES_COMPLETE" not in os.environ:
        from memfiles.cli.thin import thin

        thin(prog_name="memfiles")
    else:
        from memfiles.cli.main import cli

        cli(prog_name="memfiles")
