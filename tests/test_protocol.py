"""The watcher's socket protocol is declared once (services/indexing/protocol.py): the watcher answers
exactly its ops, and no client builds a request of its own."""

from __future__ import annotations

import re

from memfiles.services.indexing import protocol
from tests.conftest import REPO

SOURCE = REPO / "src" / "memfiles"


def test_the_watcher_answers_exactly_the_declared_ops() -> None:
    dispatch = (SOURCE / "services" / "watch" / "dispatch.py").read_text(encoding="utf-8")
    answered = set(re.findall(r'op == "(\w+)"', dispatch))
    for group in re.findall(r"op in \(([^)]*)\)", dispatch):
        answered |= set(re.findall(r'"(\w+)"', group))
    assert answered == set(protocol.OPS)


def test_every_request_is_built_by_the_protocol_module() -> None:
    literal = re.compile(r'\{"op": "(' + "|".join(protocol.OPS) + r')"')
    offenders = [
        f"{path.relative_to(SOURCE)}:{number}"
        for path in sorted(SOURCE.rglob("*.py"))
        if path.name != "protocol.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if literal.search(line)
    ]
    assert offenders == []


def test_each_constructor_makes_its_op() -> None:
    made = [
        protocol.ping(),
        protocol.status(),
        protocol.search([("q", 3)], {"kind": ["decision"]}, "hybrid"),
        protocol.search_many([{"query": "q", "k": 3}]),
        protocol.similar(["t"], 5, {}),
        protocol.vectors(),
        protocol.sync({"memory/b.md", "memory/a.md"}, set()),
        protocol.backfill(False, True),
        protocol.memsearch({key: None for key in protocol.MEMSEARCH_KEYS}),
        protocol.hook("Stop", "{}", "/r", "/r", {"PATH": "/bin"}),
        protocol.hook_settle("/r", "s"),
    ]
    assert [request["op"] for request in made] == list(protocol.OPS)
    assert made[2]["queries"] == [["q", 3]] and made[6]["paths"] == ["memory/a.md", "memory/b.md"]


def test_the_module_imports_nothing() -> None:
    """The thin clients load it on every query and hook call."""
    import ast

    tree = ast.parse((SOURCE / "services" / "indexing" / "protocol.py").read_text(encoding="utf-8"))
    runtime = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    assert [ast.unparse(node) for node in runtime] == ["from __future__ import annotations"]
