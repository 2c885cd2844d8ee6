"""`memfiles hook EVENT` without click: the path an agent's hook takes on every prompt and tool call.

It imports the standard library and the hook services only, reads the group's own options by hand,
and whatever happens prints one JSON object and exits 0 (exit 2 would block the user's prompt).
`memfiles hook --help` goes to the full command group instead.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> None:
    root: str | None = None
    event: str | None = None
    args = iter(argv)
    try:
        for arg in args:
            if arg == "--root":
                root = next(args, None)
            elif arg.startswith("--root="):
                root = arg.split("=", 1)[1]
            elif arg == "--chroma-url":
                next(args, None)  # a hook asks the watcher only (docs/hooks.md)
            elif arg == "hook" or arg.startswith("-"):
                continue
            elif event is None:
                event = arg
        from memfiles.services.hook_run import main as run

        run(event, root, sys.stdin, sys.stdout)
    except BaseException:
        sys.stdout.write("{}\n")
        sys.stdout.flush()
    sys.exit(0)
