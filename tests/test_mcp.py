"""The MCP server as a client sees it: `memfiles mcp` started as a subprocess, driven by the SDK's client."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters  # noqa: E402

pytestmark = pytest.mark.integration
MEMFILES = str(Path(sys.executable).parent / "memfiles")
TOOLS = {"search", "recall", "show", "add", "import", "working_get", "working_set", "promote"}


def drive(root: Path, scenario: Callable[[Any], Awaitable[None]], *options: str) -> None:
    """Start `memfiles --root ROOT mcp` and run `scenario(client)` against it."""

    async def main() -> None:
        # the test's environment: the SDK's default keeps PYTHONPATH out, and the server ran the installed
        # memfiles, not the code under test
        env = dict(os.environ)
        params = StdioServerParameters(
            command=MEMFILES, args=["--root", str(root), "mcp", *options], cwd=str(root), env=env
        )
        async with Client(params, read_timeout_seconds=120) as client:
            await scenario(client)

    asyncio.run(main())


def data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def error_of(result: Any) -> dict[str, Any]:
    """A tool error: its one text block is the contract's error object (docs/json.md), as `--json` prints it."""
    assert result.is_error and len(result.content) == 1
    error = json.loads(result.content[0].text)["error"]
    assert set(error) == {"code", "message", "path", "line", "op", "key", "field", "problems"}
    return error


def error_text(result: Any) -> str:
    return error_of(result)["message"]


async def until(call: Callable[[], Awaitable[bool]], seconds: float = 60) -> None:
    for _ in range(int(seconds / 0.25)):
        if await call():
            return
        await asyncio.sleep(0.25)
    raise AssertionError(f"not true within {seconds} s")


def test_tools_add_search_errors_recall_and_resources(root: Path) -> None:
    """Lists the tools, adds an entry, finds it by meaning, gets tool errors for bad input, recalls in order."""
    outside = root.parent / "outside.md"

    async def scenario(client: Any) -> None:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == TOOLS
        added = data(
            await client.call_tool(
                "add",
                {
                    "kind": "episode",
                    "title": "Chroma hung with two writer processes",
                    "area": "index",
                    "body": "Two PersistentClients on one folder waited for minutes; one owner process fixed it.",
                    "evidence": ["run:r7"],
                },
            )
        )
        assert added["added"] == ["E-001"] and added["entries"][0]["evidence"] == ["run:r7"]

        async def found() -> bool:
            hits = data(await client.call_tool("search", {"query": "why did two processes hang on the vector store"}))
            return bool(hits["hits"]) and hits["hits"][0]["entry"]["id"] == "E-001"

        await until(found)
        hit = data(await client.call_tool("search", {"query": "E-001"}))["hits"][0]
        assert set(hit) == {"rank", "score", "signals", "entry"} and hit["entry"]["path"] == "memory/episodes.md"

        assert "unknown kind" in error_text(
            await client.call_tool("add", {"kind": "nonsense", "title": "t", "area": "a", "body": "b"})
        )
        assert "k" in error_text(await client.call_tool("search", {"query": "x", "k": 0}))
        assert "query is empty" in error_text(await client.call_tool("search", {"query": "  "}))
        escape = {"kind": "lesson", "title": "t", "area": "a", "body": "b", "file": "../outside.md"}
        assert "inside a memory/ folder" in error_text(await client.call_tool("add", escape))
        assert "no entry D-404" in error_text(await client.call_tool("show", {"id": "D-404"}))
        # an argument the tool does not take was dropped in silence (`kinds`: an unfiltered search)
        said = error_text(await client.call_tool("search", {"query": "chroma", "kinds": "decision"}))
        assert "kinds: not an argument of search" in said and "kind" in said
        dangling = {"kind": "lesson", "title": "Cites a later one", "area": "a", "body": "b", "refs": ["D-77"]}
        assert "allow" in error_text(await client.call_tool("add", dangling))
        kept = data(await client.call_tool("add", {**dangling, "allow_dangling": True}))
        assert kept["added"] and any("D-077" in warning for warning in kept["warnings"])
        assert "turn" in error_text(await client.call_tool("recall", {"query": "x", "trigger": "later"}))

        recalled = data(await client.call_tool("recall", {"query": "two writers hang", "trigger": "replan"}))
        assert [g["layer"] for g in recalled["layers"]] == ["procedure", "episode", "lesson", "insight"]
        assert recalled["layers"][0]["empty"] and recalled["layers"][1]["hits"][0]["entry"]["id"] == "E-001"
        # no index here: words alone score 0.32 at most, and recall_floors are for the index's scores
        assert recalled["index"] == "files" and [g["floor"] for g in recalled["layers"]] == [0.0] * 4
        strict = data(await client.call_tool("recall", {"query": "two writers hang", "trigger": "replan", "floor": 1}))
        assert all(
            g["empty"] and "scores 1.00 or more" in g["note"] for g in strict["layers"] if g["layer"] == "episode"
        )
        assert "floor" in error_text(await client.call_tool("recall", {"query": "x", "floor": 2}))

        shown = data(await client.call_tool("show", {"id": "@" + "@e-001"}))  # apart: not a reference of ours
        assert shown["entry"]["title"] == "Chroma hung with two writer processes"
        resource = await client.read_resource("memfiles://E-001")
        assert "### E-001: Chroma hung with two writer processes" in resource.contents[0].text

    drive(root, scenario)
    assert not outside.exists()


def test_import_working_memory_and_promote(root: Path) -> None:
    """import replays by request id; working_set starts and updates a run; working_get restores it; promote."""
    (root / "memory" / "persona.md").write_text("# Persona\n\nAnswer in one paragraph.\n")

    async def scenario(client: Any) -> None:
        ops = [
            {"op": "add", "kind": "episode", "title": "Deploy waited on a table lock", "area": "db", "body": "B1."},
            {
                "op": "add",
                "kind": "episode",
                "title": "Deploy waited on a table lock again",
                "area": "db",
                "body": "B2.",
            },
        ]
        first = data(await client.call_tool("import", {"ops": ops, "request_id": "batch-1"}))
        again = data(await client.call_tool("import", {"ops": ops, "request_id": "batch-1"}))
        assert first["added"] == ["E-001", "E-002"] and again["replayed"] is True
        assert "op 1" in error_text(await client.call_tool("import", {"ops": [{"op": "add", "kind": "lesson"}]}))

        started = data(
            await client.call_tool(
                "working_set",
                {
                    "run": "r1",
                    "goal": "Ship the migration",
                    "stage": "plan",
                    "todo_add": ["Take a backup", "Run it at night"],
                },
            )
        )
        assert started["working"]["goal"] == "Ship the migration" and len(started["added"]) == 2
        data(
            await client.call_tool("working_set", {"last_observation": "lock timeout", "todo_done": ["Take a backup"]})
        )
        state = data(await client.call_tool("working_get", {"run": "r1"}))["working"]
        assert state["stage"] == "plan" and state["last_observation"] == "lock timeout"
        assert [t["task"] for t in state["todo_done"]] == ["Take a backup"]
        assert "one line" in error_text(await client.call_tool("working_set", {"stage": "a\nb"}))

        promoted = data(
            await client.call_tool("promote", {"ids": ["E-001", "E-002"], "to": "procedure", "reason": "Twice"})
        )
        assert promoted["added"] == ["P-001"] and promoted["entries"][0]["evidence"] == ["E-001", "E-002"]
        persona = await client.read_resource("memfiles://persona")
        assert "Answer in one paragraph." in persona.contents[0].text

    drive(root, scenario, "--no-watch")


def test_show_and_resources_take_any_id_spelling(root: Path, run: Any) -> None:
    """The show tool and memfiles:// resources read t-1 and @@T-0001 as T-001, as the CLI's show does; a
    word that is not an id is a tool error saying so."""
    assert run("add", "-k", "todo", "-t", "Write the journal", "-a", "store", "--body", "Crash safety.").exit_code == 0

    async def scenario(client: Any) -> None:
        for typed in ("t-1", "@@T-0001", "T-1"):
            assert data(await client.call_tool("show", {"id": typed}))["entry"]["id"] == "T-001"
        resource = await client.read_resource("memfiles://t-1")
        assert "### T-001: Write the journal" in resource.contents[0].text
        assert "'second' is not an id" in error_text(await client.call_tool("show", {"id": "second"}))
        dated = {"kind": "fact", "title": "An old note", "area": "store", "body": "Kept.", "date": "2025-03-01"}
        assert data(await client.call_tool("add", dated))["entries"][0]["date"] == "2025-03-01"
        typo = error_text(await client.call_tool("search", {"query": "journal", "status": "opne"}))
        assert "unknown status 'opne' (known:" in typo
        assert "no entry T-002" in error_text(await client.call_tool("show", {"id": "t-2"}))
        assert error_text(await client.call_tool("show", {"id": "t-2"})).strip().endswith("no entry T-002")
        unknown = error_text(await client.call_tool("show", {"id": "z-9"}))
        assert "no entry Z-009 (no kind has the prefix Z; the prefixes are D, F, T, L, K, P, E, I, W)" in unknown

    drive(root, scenario, "--no-watch")


def test_show_reads_past_a_broken_file_and_shows_a_pruned_entry(root: Path, run: Any) -> None:
    """As `show --json`: with another memory file that does not parse, the show tool and the resource
    still read the entry (the broken file named in `skipped`); a pruned id gives the entry as it was."""
    for kind, title in (("todo", "Write the journal"), ("todo", "Drop the cache"), ("friction", "Slow CI")):
        assert run("add", "-k", kind, "-t", title, "-a", "store", "--body", "Body.").exit_code == 0
    assert run("prune", "T-002", "--reason", "done elsewhere").exit_code == 0
    frictions = root / "memory" / "frictions.md"
    frictions.write_bytes(frictions.read_bytes() + b"\n\xff bad\n")

    async def scenario(client: Any) -> None:
        shown = data(await client.call_tool("show", {"id": "T-1"}))
        assert shown["entry"]["title"] == "Write the journal"
        assert [f["path"] for f in shown["skipped"]] == ["memory/frictions.md"]
        assert "### T-001: Write the journal" in (await client.read_resource("memfiles://T-1")).contents[0].text
        pruned = data(await client.call_tool("show", {"id": "t-2"}))["entry"]
        assert pruned["title"] == "Drop the cache" and pruned["pruned"]["reason"] == "done elsewhere"
        text = (await client.read_resource("memfiles://T-2")).contents[0].text
        assert "was pruned on" in text and "done elsewhere" in text and "### T-002: Drop the cache" in text
        searched = data(await client.call_tool("search", {"query": "T-002"}))  # as memsearch says it
        assert "T-002 was pruned (done elsewhere): memfiles show T-002 gives it as it was" in searched["warnings"]

    drive(root, scenario, "--no-watch")


def test_a_refused_working_set_writes_nothing(root: Path, run: Any) -> None:
    """working_set whose last part is refused (a todo that does not exist, an empty task, episode without
    end, a change to an ended run) is a tool error and writes nothing: not the run it would have started,
    not the todos before the part it could not do. Naming a todo this call adds by its text works."""

    async def scenario(client: Any) -> None:
        calls = [
            {"run": "r1", "goal": "Fix CI", "todo_add": ["first", "second"], "todo_done": ["W-999"]},
            {"run": "r2", "goal": "Other", "todo_add": [""]},
            {"run": "r3", "goal": "Third", "episode": True},
            {"run": "r5", "goal": "Fifth", "todo_add": ["ok", "x" * 200]},
            {"run": "r6", "goal": "Sixth", "todo_add": ["a", "a"], "todo_done": ["a"]},
        ]
        for call in calls:
            assert (await client.call_tool("working_set", call)).is_error
        assert not (root / "memory" / "working").exists() or not list((root / "memory" / "working").glob("*.md"))
        done = data(
            await client.call_tool("working_set", {"run": "r4", "goal": "G", "todo_add": ["a"], "todo_done": ["a"]})
        )
        assert [t["task"] for t in done["working"]["todo_done"]] == ["a"]
        again = {"run": "r4", "todo_add": ["a"], "todo_done": ["a"]}  # r4 has a todo "a" already
        before = (root / "memory" / "working" / "r4.md").read_bytes()
        assert "several todos have that text" in error_text(await client.call_tool("working_set", again))
        assert (root / "memory" / "working" / "r4.md").read_bytes() == before
        assert not (await client.call_tool("working_set", {"run": "r4", "end": True})).is_error
        before = (root / "memory" / "working" / "r4.md").read_bytes()
        assert (await client.call_tool("working_set", {"run": "r4", "todo_add": ["late"]})).is_error
        assert (root / "memory" / "working" / "r4.md").read_bytes() == before

    drive(root, scenario, "--no-watch")


def test_a_tool_that_meets_an_os_error_names_the_file(root: Path) -> None:
    """memory/working is a file, not a folder: working_set answered "Error executing tool working_set" and
    nothing more (a crash of the tool's body, which the SDK does not explain). It is the `io` error object,
    naming the file, as `memfiles working start --json` gives."""
    (root / "memory" / "working").write_text("not a folder\n")

    async def scenario(client: Any) -> None:
        error = error_of(await client.call_tool("working_set", {"run": "r1", "goal": "g"}))
        assert error["code"] == "io" and "memory/working" in error["message"], error

    drive(root, scenario, "--no-watch")


def test_a_broken_config_is_said_by_every_tool(root: Path) -> None:
    """memory/memfiles.toml with a bad value: the server still answers, and each tool call is an error
    naming the file and the key (the client saw only a closed connection before)."""
    (root / "memory" / "memfiles.toml").write_text("wrap = 7\n")

    async def scenario(client: Any) -> None:
        assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
        error = error_of(await client.call_tool("search", {"query": "anything"}))
        said = error["message"]
        assert "memfiles cannot serve this project" in said and "wrap" in said and "memfiles.toml" in said
        assert (error["code"], error["key"], error["path"]) == ("config", "wrap", "memory/memfiles.toml")
        assert "wrap" in error_text(await client.call_tool("show", {"id": "D-1"}))

    drive(root, scenario, "--no-watch")


def test_import_reports_what_the_cli_reports(root: Path, run: Any) -> None:
    """The import tool as `memfiles import --json`: every problem of a bad batch (the batch's own checks
    of the well-formed ops too: it stopped at the first ones), and after a renumber, `renumbered` and the
    references to the old id left to check (it gave `{}` and no warning). The search tool takes a kind in
    any case, by name or prefix, as memsearch does."""
    for title in ("Keep ids stable", "Ids never move"):
        assert run("add", "-k", "decision", "-t", title, "-a", "format", "--body", "Body.").exit_code == 0
    decisions = root / "memory" / "decisions.md"
    text = decisions.read_text()
    decisions.write_text(text.replace("### D-002: Ids never move", "### D-001: Ids never move"))
    assert run("add", "-k", "lesson", "-t", "Cite the rule", "-a", "format", "--body", "See D-001.").exit_code == 0
    bad = [
        {"op": "add", "kind": "friction", "title": "t", "area": "a"},
        {"op": "update", "id": "D-999", "status": "accepted"},
        {"op": "prune", "id": "banana", "reason": "r"},
    ]
    line = next(n for n, row in enumerate(decisions.read_text().splitlines(), 1) if row == "### D-001: Ids never move")

    async def scenario(client: Any) -> None:
        error = error_of(await client.call_tool("import", {"ops": bad}))
        said = error["message"]
        assert "op 1" in said and "op 2" in said and "no entry D-999" in said and "op 3" in said
        # MCP errors were plain text: the error object's code, op and every problem, as `import --json` gives
        assert error["code"] == "op" and error["op"] == 1 and [p["op"] for p in error["problems"]] == [1, 2, 3]
        done = data(
            await client.call_tool(
                "import", {"ops": [{"op": "renumber", "id": "D-001", "at": f"memory/decisions.md:{line}"}]}
            )
        )
        assert done["renumbered"] == {"D-001": "D-003"}
        assert any("L-001 refers to D-001" in warning for warning in done["warnings"]), done["warnings"]
        for kind in ("DECISION", "Decision", "d", "D"):
            assert not (await client.call_tool("search", {"query": "ids", "kind": kind})).is_error, kind
        assert "unknown kind 'nonsense'" in error_text(
            await client.call_tool("search", {"query": "x", "kind": "nonsense"})
        )

    drive(root, scenario, "--no-watch")


def test_arguments_that_fail_the_schema_are_said_in_one_line(root: Path) -> None:
    """A wrong type, a value out of range, a missing argument: `argument: what is wrong (got value)`, as
    the CLI says a bad option, not pydantic's report with its documentation link."""

    async def scenario(client: Any) -> None:
        said = error_text(await client.call_tool("search", {"query": "x", "k": 500}))
        assert "k: input should be less than or equal to" in said and "(got 500)" in said
        assert "pydantic" not in said and "validation error" not in said
        assert "trigger: input should be 'turn'" in error_text(await client.call_tool("recall", {"trigger": "bogus"}))
        assert "query: field required" in error_text(await client.call_tool("search", {}))
        assert error_of(await client.call_tool("search", {}))["code"] == "usage"
        unknown = error_of(await client.call_tool("search", {"query": "x", "kinds": "decision"}))
        assert unknown["code"] == "usage" and unknown["message"].startswith("kinds: not an argument of search")
        assert error_of(await client.call_tool("nosuch", {}))["message"] == "Unknown tool: nosuch"

    drive(root, scenario, "--no-watch")


def test_each_tool_call_forgets_what_an_earlier_one_found_of_the_index() -> None:
    """A near-duplicate check that gave up on a busy index marks it, so that its own write does not wait
    again; a tool call that follows (its add refused, say) must not take that mark for its own write."""
    from memfiles.mcp.server import _guard
    from memfiles.services.indexing import index_client

    index_client._found_busy[:] = [(0.0, "is busy", 1.0)]
    assert _guard(lambda: index_client._found_busy[:]) == []
