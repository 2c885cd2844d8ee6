"""The command line as text: an argument that is not UTF-8 is refused before any command reads it.

A shell hands over bytes; Python turns the ones that are not UTF-8 into lone surrogates (`caf\\xe9`
becomes `caf\\udce9`), which no file, hash or tokenizer can take: a write crashed hashing its ops and a
search crashed in the tokenizer, each with a traceback. Refused here, for `memfiles` and `memsearch`
alike: exit 2, naming the argument and the byte (and the error object on stdout under --json or
--batch). A path that is only opened is taken as it is (the value of --root, --body-file or --batch,
or an argument naming a file that exists): Linux names files in bytes. Stdlib only (json imported only
to print a refusal), so the thin clients stay thin.
"""

from __future__ import annotations

import os
import sys

# options whose value is only ever opened as a path (not --file or --at: an op stores those as text)
_PATH_OPTIONS = ("--root", "--body-file", "--batch")


def json_requested(args: list[str], names: tuple[str, ...] = ("--json",)) -> bool:
    """Whether one of the options `names` (`--json`, or `--json=...`) is given before a `--`."""
    options = args[: args.index("--")] if "--" in args else args
    return any(arg == name or arg.startswith(name + "=") for arg in options for name in names)


def refuse_undecodable(argv: list[str], prog: str) -> None:
    """Exit 2 when an argument holds bytes that are not UTF-8; return otherwise."""
    for position, arg in enumerate(argv, start=1):
        previous = argv[position - 2] if position > 1 else ""
        if previous in _PATH_OPTIONS or arg.startswith(tuple(f"{name}=" for name in _PATH_OPTIONS)):
            continue  # a path: Linux names files in bytes, and a folder called caf\xe9 is a folder
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as error:
            if os.path.lexists(arg):
                continue  # a file operand (refs, import): the same
            bad = arg[error.start]
            byte = f"byte 0x{ord(bad) - 0xDC00:02x}" if 0xDC80 <= ord(bad) <= 0xDCFF else f"U+{ord(bad):04X}"
            try:  # the bytes as given, the bad ones escaped: caf\xe9
                shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            except UnicodeEncodeError:
                shown = arg.encode("utf-8", "backslashreplace").decode("utf-8")
            message = f"argument {position} ({shown}) is not UTF-8 text ({byte}): give it in UTF-8"
            if json_requested(argv, ("--json", "--batch")):
                import json  # only on this path: the thin clients stay thin

                from memfiles.contract import error_object

                sys.stdout.write(json.dumps(error_object("usage", message), ensure_ascii=False) + "\n")
            sys.stderr.write(f"{prog}: {message}\n")
            raise SystemExit(2) from None
