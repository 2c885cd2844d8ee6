"""The watcher's socket protocol is declared once (services/indexing/protocol.py): the watcher answers
exactly its ops, and no client builds a request of its own."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memfiles.services.indexing import protocol
from tests.conftest import REPO, Run, watching

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


def fields(declared: tuple[str, ...], answer: dict) -> bool:
    """Whether `answer` has every declared field, the optional (`x?`) ones at most, and nothing else."""
    required = {name for name in declared if not name.endswith("?")}
    allowed = required | {name.rstrip("?") for name in declared} | {"ok"}
    return answer.get("ok") is True and required <= set(answer) <= allowed


@pytest.mark.integration
def test_a_real_watcher_answers_each_op_with_its_declared_fields(root: Path, run: Run) -> None:
    """Every op sent to a running watcher, built by its constructor: each answer has the fields ANSWERS
    declares for it, no more; a bad request gets a refusal of REFUSED's shape."""
    from memfiles.cli.watcher_wire import exchange
    from memfiles.config import load_settings
    from memfiles.services.indexing.ipc import request, socket_path

    assert set(protocol.ANSWERS) == set(protocol.OPS)
    run("add", "-k", "F", "-t", "Chroma hangs with two writers", "-a", "index", "--body", "Two clients wait.")
    run("backfill")
    settings = load_settings(root)
    hook_input = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": str(root), "prompt": "x"})
    requests = {
        "ping": protocol.ping(),
        "status": protocol.status(),
        "search": protocol.search([("two writers", 3)], {}, "hybrid"),
        "search_many": protocol.search_many([{"query": "two writers", "k": 3, "filters": {}, "mode": "hybrid"}]),
        "similar": protocol.similar(["Chroma hangs"], 3, {}),
        "vectors": protocol.vectors(),
        "sync": protocol.sync({"memory/frictions.md"}, set()),
        "backfill": protocol.backfill(False, True),
        "memsearch": protocol.memsearch(
            {"query": "two writers", "k": 3, "kind": [], "area": [], "status": [], "path": None, "since": None}
            | {"mode": "hybrid", "json": True}
        ),
        "hook": protocol.hook("UserPromptSubmit", hook_input, str(root), str(root), {}),
        "hook_settle": protocol.hook_settle(str(root), "s"),
    }
    assert list(requests) == list(protocol.OPS)
    with watching(root):
        for op, asked in requests.items():
            answer = request(settings, asked, timeout=120)
            assert answer is not None and fields(protocol.ANSWERS[op], answer), (op, answer)
        done = request(settings, protocol.backfill(False, False), timeout=300)  # not a check: all four fields
        assert done is not None and fields(protocol.ANSWERS["backfill"], done) and {"report", "warnings"} <= set(done)
        refused = exchange(str(socket_path(settings)), {"op": "no such op"}, 30)
    assert isinstance(refused, dict) and refused["ok"] is False and "no such op" in refused["error"]
    assert set(refused) <= {"ok", *(name.rstrip("?") for name in protocol.REFUSED)}


def test_declared_answers_match_the_table() -> None:
    """The docstring's table and ANSWERS say the same fields for each op."""
    doc = protocol.__doc__ or ""
    for op, declared in protocol.ANSWERS.items():
        row = next(line for line in doc.splitlines() if line.startswith(f"| {op} |"))
        said = set(re.findall(r"`(\w+)`", row.split("|")[3]))  # every field the row names, optional ones too
        assert said == {name.rstrip("?") for name in declared}, op
