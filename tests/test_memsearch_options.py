"""memsearch's options are declared once (cli/memsearch_options.py): the click command is built from the
table, and the thin client reads the same table, so the two cannot drift apart."""

from __future__ import annotations

import ast

import click

from memfiles.cli.memsearch_options import OPTIONS, THIN_FLAGS, THIN_VALUED
from memfiles.cli.quick_search import read_args
from memfiles.cli.search import memsearch
from tests.conftest import REPO


def test_the_click_command_has_every_declared_option_and_no_other() -> None:
    declared = {flag for _name, flags, *_rest in OPTIONS for flag in flags}
    taken = {flag for param in memsearch.params if isinstance(param, click.Option) for flag in param.opts}
    assert taken - {"--root", "--chroma-url"} == declared


def test_the_thin_path_takes_the_declared_plain_options() -> None:
    plain = {flag for _name, flags, _shape, _default, _help, thin in OPTIONS if thin for flag in flags}
    assert plain | {"--root"} == THIN_VALUED | THIN_FLAGS
    assert read_args(["x", "--batch", "f"]) is None  # not the plain form: the full command reads it
    assert read_args(["x", "--kind", "F,D", "--json", "-k3"]) == {
        "query": "x",
        "k": 3,
        "kind": ["F", "D"],
        "area": [],
        "status": [],
        "path": None,
        "since": None,
        "mode": "hybrid",
        "json": True,
        "root": None,
    }


def test_the_table_imports_nothing() -> None:
    tree = ast.parse((REPO / "src" / "memfiles" / "cli" / "memsearch_options.py").read_text(encoding="utf-8"))
    imports = [ast.unparse(node) for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    assert imports == ["from __future__ import annotations"]
