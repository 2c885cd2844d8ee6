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

from memfiles.config import Settings, load_settings
from memfiles.errors import MemfilesError
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


@contextmanager
def errors_to_exit(as_json: bool = False) -> Iterator[None]:
    """Turn the domain errors of the layers below into a message on stderr and an exit code; with
    `as_json`, print the error object on stdout as well (docs/json.md)."""
    try:
        yield
    except MemfilesError as error:
        if as_json:
            from memfiles.contract import error_for

            print_json(error_for(error))
        raise CommandError(str(error), error.exit_code) from error


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


def warn(message: str) -> None:
    click.echo(f"memfiles: warning: {message}", err=True)


root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="MEMFILES_ROOT",
    help="Project root (the folder holding memory/). Default: the nearest one above the current folder.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines instead of text.")
