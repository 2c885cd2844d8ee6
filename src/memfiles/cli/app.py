"""What every command shares: the project it runs in, error-to-exit-code mapping, JSON printing."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

import click

from memfiles.cli.argv import json_requested
from memfiles.config import SETTINGS, Settings, load_settings
from memfiles.contract import error_for, error_object
from memfiles.errors import MemfilesError, os_error  # os_error: re-exported, as callers use it
from memfiles.store.project import Project


class App:
    """The state a command gets through `pass_app`: options of the group, the project, on first use."""

    def __init__(self, root: Path | None, chroma_url: str | None = None) -> None:
        self.root_option = root
        self.chroma_url = chroma_url

    @cached_property
    def settings(self) -> Settings:
        return load_settings(self.root_option, index_url=self.chroma_url)

    @cached_property
    def project(self) -> Project:
        return Project(self.settings)


pass_app = click.make_pass_decorator(App, ensure=True)


class CommandError(click.ClickException):
    """A MemfilesError as click shows it, keeping the error's exit code (2 bad input, 1 refused)."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code

    def show(self, file: Any = None) -> None:
        click.echo(f"memfiles: {self.format_message()}", err=True)


def error_json(error: Exception) -> dict[str, Any]:
    """The contract's error object for a domain error (or a usage error) with its place: file and line,
    op position and field (and every problem of a batch), config key."""
    if isinstance(error, click.UsageError):
        return error_object("usage", error.format_message())
    return error_for(error)


def _wants_json() -> bool:
    context = click.get_current_context(silent=True)
    return bool(context is not None and context.params.get("as_json"))


@contextmanager
def errors_to_exit(as_json: bool | None = None, one_line: bool = False) -> Iterator[None]:
    """Turn the domain errors of the layers below into a message on stderr and an exit code; with --json
    (or `as_json`), the error object on stdout as well, so a machine reads why without parsing the message
    (`one_line`: on one line, for a command whose output is JSON lines)."""
    wants_json = _wants_json if as_json is None else (lambda: as_json)
    try:
        try:
            yield
        except BrokenPipeError:
            raise  # `memfiles status | head -1`: the reader left; click exits 1 in silence
        except OSError as error:  # a file of memfiles' own where it cannot be used: said, not a traceback
            raise os_error(error) from error
    except MemfilesError as error:
        if wants_json():
            print_json(error_json(error), one_line)
        raise CommandError(str(error), error.exit_code) from error
    except click.UsageError as error:
        if wants_json() and not getattr(error, "json_printed", False):
            print_json(error_json(error), one_line)
            error.json_printed = True  # type: ignore[attr-defined]  # the group must not print it again
        raise


class JsonErrorsCommand(click.Command):
    """A lone command (memsearch) that, given --json, prints the error object for a usage error raised
    while its options are parsed (`-k 0`, an unknown option), before its body runs."""

    json_options: tuple[str, ...] = ("--json",)  # the options after which the command answers in JSON
    json_lines_options: tuple[str, ...] = ()  # ... and those after which it answers in JSON lines

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        wanted = json_requested(list(args), self.json_options + self.json_lines_options)
        one_line = json_requested(list(args), self.json_lines_options)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as error:
            _say_where_it_goes(error)
            if wanted and not getattr(error, "json_printed", False):
                print_json(error_json(error), one_line)
                error.json_printed = True  # type: ignore[attr-defined]
            raise


def _say_where_it_goes(error: click.UsageError) -> None:
    """A group's option given after the command (`memfiles list --root DIR`): say where it goes."""
    name = getattr(error, "option_name", None)
    if isinstance(error, click.NoSuchOption) and name in ("--root", "--chroma-url"):
        words = (error.ctx.command_path if error.ctx else "memfiles COMMAND").split()
        value = "DIR" if name == "--root" else "URL"
        where = " ".join([words[0], name, value, *words[1:]])
        error.message = f"{name} goes before the command: {where} ..."
        error.possibilities = None  # type: ignore[misc]  # not "Did you mean '--floor'?" (recall's)


class JsonErrorsGroup(click.Group):
    """A group whose commands, given --json, print the error object for a usage error too (an unknown
    option, a missing argument), which click raises before the command runs."""

    def invoke(self, ctx: click.Context) -> Any:
        args = [*getattr(ctx, "_protected_args", []), *ctx.args]  # click empties them before parsing
        options = args[: args.index("--")] if "--" in args else args
        try:
            return super().invoke(ctx)
        except click.UsageError as error:
            _say_where_it_goes(error)
            if "--json" in options and not getattr(error, "json_printed", False):
                print_json(error_json(error))
            raise
        except BrokenPipeError:
            raise
        except (MemfilesError, OSError) as raised:  # outside a command's errors_to_exit (`app.settings`...)
            error = os_error(raised) if isinstance(raised, OSError) else raised
            if "--json" in options:
                print_json(error_json(error))
            raise CommandError(str(error), error.exit_code) from error


def print_json(value: Any, one_line: bool = False) -> None:
    json.dump(value, sys.stdout, ensure_ascii=False, indent=None if one_line else 2)
    sys.stdout.write("\n")


def refuse_a_terminal(server: str, client: str) -> None:
    """A stdio server (lsp, mcp) started by hand on a terminal would wait in silence for JSON-RPC that never
    comes: say who starts it instead (exit 2)."""
    if sys.stdin.isatty():
        raise CommandError(
            f"memfiles {server} speaks JSON-RPC on stdin/stdout: {client} starts it; run by hand on a terminal it"
            " would only wait"
        )


def warn(message: str) -> None:
    click.echo(f"memfiles: warning: {message}", err=True)


root_option = click.option(
    "--root",
    type=click.Path(path_type=Path),  # checked by find_root, which names the problem (and --json reports it)
    envvar="MEMFILES_ROOT",
    help=(
        "Project root (the folder holding memory/); must be an existing folder that holds memory/ (or a"
        " marker), not one inside another project's tree. Default: the topmost folder"
        " holding memory/ (or a pyproject.toml with [tool.memfiles]) from the current folder up to the"
        " repository top, so every folder of a project finds the same root."
    ),
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines instead of text.")


class Number(click.ParamType):
    """A finite number from `low` to `high` (`above` low when `strict`): click's FloatRange lets NaN through,
    since every comparison with it is false (`dupes --threshold nan` listed nothing and exited 0)."""

    name = "number"

    def __init__(self, low: float, high: float, strict: bool = False) -> None:
        self.low, self.high, self.strict = low, high, strict

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        import math

        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        too_low = number <= self.low if self.strict else number < self.low
        if not math.isfinite(number) or too_low or number > self.high:
            bound = f"above {self.low:g}" if self.strict else f"from {self.low:g}"
            self.fail(f"must be a number {bound} up to {self.high:g}, got {value}", param, ctx)
        return number


def setting_option(key: str, help: str | None = None) -> Any:
    """The command-line option of setting `key`, as memfiles.config.SETTINGS declares it (its flag, its
    environment variable, its help): every command that takes it declares it through this."""
    setting = SETTINGS[key]
    assert setting.flag is not None, key
    return click.option(setting.flag, envvar=setting.env, help=help or setting.help)


chroma_url_option = setting_option("index_url", "Use the Chroma server at this URL for the index (index_url).")
