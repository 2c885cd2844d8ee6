"""Hostile input at every entry point that reads a query, an agent's text or a source file costs time
linear in its length (issue 34): memsearch, the searcher below it, recall, the MCP tools, the hooks,
refs, distil and the language server. (add, import, check and fmt, which read text through the write
path's repairs and the Markdown lint, are held the same way in test_write_linear.py.)

Each entry point gets single tokens of 10,000 and 100,000 characters (a word, and runs of `(`, `[`,
backticks, `*`, `_`, `<`, `\\`, `#`), in one process, one size right after the other, best of three;
the 100,000 case must cost at most 20x the 10,000 case (linear work: about 10x, or less where a cap
applies; a pattern that rescans the rest of the input from each position: about 100x). A ratio in
one run, never a wall-clock bound. Before issue 34 a 100,000-character word took memsearch 42 s.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memfiles.cli.main import cli
from memfiles.config import load_settings
from memfiles.store.project import Project
from tests.reliability.hostile import ENTRY_POINT_KINDS, best_time, token

SMALL, LARGE = 10_000, 100_000
LIMIT = 20.0
FLOOR = 0.02  # seconds: below this at 100,000 characters nothing grew that matters (timer noise)

pytestmark = pytest.mark.slow

ENTRIES = [
    ("procedure", "Run make install before the test suite", "tooling", "The dev extra brings pyyaml and pre-commit."),
    (
        "episode",
        "Hook tests failed on a missing yaml module",
        "tooling",
        "ModuleNotFoundError: No module named 'yaml'.",
    ),
    ("lesson", "Timing closes with --max-fanout 16", "synthesis", "Hold violations went away at sixteen sinks."),
    ("insight", "Agents recall more when pushed than when asked", "agents", "Hooks beat tools the agent must call."),
    ("decision", "Release builds are signed on the build host only", "release", "Keys never leave the host."),
    ("friction", "Chroma hangs when two processes open one folder", "index", "One process must own the store."),
    ("fact", "The staging database is restored every night", "ops", "A job copies the backup at 02:00 UTC."),
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A small indexed project (no watcher), with a doc and a source file for refs and the LSP."""
    root = tmp_path_factory.mktemp("linear")
    (root / "memory").mkdir()
    ops = [{"op": "add", "kind": k, "title": t, "area": a, "body": b} for k, t, a, b in ENTRIES]
    invoke(root, "import", "-", input=json.dumps({"ops": ops}))
    invoke(root, "backfill")
    (root / "docs").mkdir()
    # a hook gives up after hooks_timeout (2 s) and answers {}: a give-up would be timed, not the work
    (root / "memory" / "memfiles.toml").write_text("hooks_timeout = 60\n")
    yield root


def invoke(root: Path, *args: str, input: str | None = None) -> Any:
    result = CliRunner().invoke(cli, ["--root", str(root), *args], input=input, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return result


def holds_linear(call: Callable[[str], object], kind: str) -> None:
    """`call` on a hostile token of LARGE characters costs at most LIMIT x the SMALL one, in this run."""
    call(token(kind, 100))  # warm: imports, the model, caches
    small = best_time(lambda: call(token(kind, SMALL)))
    large = best_time(lambda: call(token(kind, LARGE)))
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    print(f"FIGURES {json.dumps({'test': test, 'small_ms': small * 1000, 'large_ms': large * 1000})}")
    assert large < FLOOR or large <= LIMIT * small, (
        f"{kind!r}: {small * 1000:.1f} ms at {SMALL:,} characters, {large * 1000:.1f} ms at {LARGE:,}"
        f" ({large / small:.0f}x)"
    )


@pytest.fixture
def searcher(project: Path) -> Iterator[Any]:
    from memfiles.services.indexing.index_session import open_reader

    with open_reader(load_settings(project)) as session:
        yield session.searcher()


@pytest.mark.parametrize("kind", ENTRY_POINT_KINDS)
def test_memsearch(project: Path, kind: str) -> None:
    """`memsearch QUERY --json`, the full command in this process (the query is cut at QUERY_LIMIT)."""
    from memfiles.cli.search import memsearch

    def call(query: str) -> None:
        result = CliRunner().invoke(memsearch, ["--root", str(project), "--json", "--", query])
        assert result.exit_code == 0, result.output

    holds_linear(call, kind)


@pytest.mark.parametrize("kind", ENTRY_POINT_KINDS)
def test_searcher_without_the_cap(searcher: Any, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The searcher itself (ids, BM25, the model, verbatim matches) with the query limit lifted: linear
    below any cap, so that the cap is a bound on cost, not what hides a quadratic step."""
    import memfiles.index.search as search_module

    monkeypatch.setattr(search_module, "QUERY_LIMIT", 10 * LARGE)
    holds_linear(lambda query: searcher.search(query, 5), kind)


@pytest.mark.parametrize("trigger", ["turn", "failure"])
@pytest.mark.parametrize("kind", ENTRY_POINT_KINDS)
def test_recall(project: Path, kind: str, trigger: str) -> None:
    """recall (the CLI's and the MCP tool's service); `failure` also reads the error signature of it all."""
    from memfiles.services.agents.recall import recall

    holds_linear(lambda query: recall(Project(load_settings(project)), query, trigger), kind)


@pytest.mark.parametrize("tool", ["search", "show", "working_get"])
@pytest.mark.parametrize("kind", ENTRY_POINT_KINDS)
def test_mcp_tools(project: Path, kind: str, tool: str) -> None:
    """The MCP server's tool bodies with the token as their text argument (a bad id or run is refused)."""
    from memfiles.errors import MemfilesError
    from memfiles.mcp.server import Tools
    from memfiles.services.agents import working

    tools = Tools(load_settings(project))

    def call(text: str) -> None:
        try:
            if tool == "search":
                tools.search(text, 5, None, None, None)
            elif tool == "show":
                tools.show(text)
            else:
                working.require(tools.project, working.resolve_run(tools.project, text))
        except MemfilesError:
            pass

    holds_linear(call, kind)


def _hook_input(event: str, text: str, session: str) -> dict[str, Any]:
    base = {"session_id": session, "hook_event_name": event, "cwd": "/nowhere"}
    if event == "UserPromptSubmit":
        return {**base, "prompt": text}
    if event == "PreToolUse":
        return {**base, "tool_name": "Bash", "tool_input": {"command": f"git push {text}", "description": text}}
    if event == "PostToolUseFailure":
        return {**base, "tool_name": "Bash", "tool_input": {"command": "pytest"}, "error": f"ValueError: {text}"}
    return {**base, "last_assistant_message": text}  # Stop


@pytest.mark.parametrize("event", ["UserPromptSubmit", "PreToolUse", "PostToolUseFailure", "Stop"])
@pytest.mark.parametrize("kind", ENTRY_POINT_KINDS)
def test_hooks(project: Path, searcher: Any, kind: str, event: str) -> None:
    """A hook call answered as the watcher answers it (its own search in place of the socket), the write a
    failure leaves included: the input's texts are cut at HOOK_TEXT_LIMIT before any pattern reads them."""
    from memfiles.services.agents.hook_run import run_hook
    from memfiles.services.indexing.searches import search_many

    session = f"linear-{kind.encode().hex()}-{event}"  # one session: a failure's run is written again

    def call(text: str) -> None:
        raw = json.dumps(_hook_input(event, text, session))
        run_hook(event, lambda: raw, project, ask=lambda items: search_many(searcher, items))
        for thread in threading.enumerate():  # a failure's write runs after the answer: it is the call's too
            if thread.name == "memfiles-hook-write":
                thread.join(60)

    holds_linear(call, kind)
    log = project / ".memfiles" / "hooks.log"
    assert "gave up" not in (log.read_text() if log.exists() else ""), "a hook gave up: its time is the deadline's"


@pytest.mark.parametrize("kind", ENTRY_POINT_KINDS)
def test_refs(project: Path, kind: str) -> None:
    """`memfiles refs` over a source file holding the token, references to it and into a doc whose
    headings hold it too (the doc's anchors are read line by line)."""
    from memfiles.services.upkeep.refs import scan_references

    source, doc = project / "src.py", project / "docs" / "hostile.md"

    def call(text: str) -> None:
        doc.write_text(f"# {text}\n\n## a {text} b ##\n", encoding="utf-8")
        source.write_text(f"# {text} @@D-001 @@doc:hostile#x{text} @@{text}\nx = '{text}'\n", encoding="utf-8")
        scan_references(Project(load_settings(project)), [source])

    holds_linear(call, kind)


@pytest.mark.parametrize("kind", ENTRY_POINT_KINDS)
def test_distil(project: Path, kind: str) -> None:
    """`distil --dry-run` of a log whose issues, fixes and notes are the token (matched by word overlap)."""
    from memfiles.services.distiller.distill import distil_domain

    folder = project / "memory" / "hostile"
    folder.mkdir(exist_ok=True)

    def call(text: str) -> None:
        records = [
            {
                "timestamp": f"2026-10-0{day}T10:00:00Z",
                "run_id": f"r{day}",
                "signoff_achieved": day % 2 == 0,
                "issues_encountered": [f"Hold violations {text}"],
                "fixes_applied": [f"Cap fanout {text}"],
                "key_metrics": {"wns_ns": 0.1},
                "notes": f"The PDK quirk: {text}. Used `abc {text}`.",
            }
            for day in range(1, 6)
        ]
        (folder / "experiences.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        distil_domain(Project(load_settings(project)), "hostile", dry_run=True, use_model=False)

    holds_linear(call, kind)


@pytest.mark.parametrize("kind", ENTRY_POINT_KINDS)
def test_language_server(project: Path, kind: str) -> None:
    """The language server's work on an open document holding the token: diagnostics, the reference under
    the cursor (hover, definition) and completion after `@@`."""
    from lsprotocol import types
    from pygls.workspace import Workspace

    from memfiles.lsp.convert import uri_of
    from memfiles.lsp.server import build_server

    server = build_server(project)
    server.protocol._workspace = Workspace(uri_of(project))  # what the client's `initialize` sets up
    server.open_project(str(project))
    complete = server.protocol.fm.features[types.TEXT_DOCUMENT_COMPLETION]
    path = project / "open.py"
    uri = uri_of(path)

    AT = "@@"  # spelled apart, so that `refs --dangling` over this file sees no reference

    def call(text: str) -> None:
        source = f"# {text} see @@D-001 and @@{text}\nx = 1 # {AT}D-00{text}\n{text} @@"
        server.workspace.put_text_document(types.TextDocumentItem(uri, "python", 1, source))
        server.quick_diagnostics(uri)
        line = source.split("\n")[0]
        server.resolve_at(uri, types.Position(0, line.index("@@D-001") + 3))
        last = source.split("\n")[2]
        complete(types.CompletionParams(types.TextDocumentIdentifier(uri), types.Position(2, len(last))))
        server.workspace.remove_text_document(uri)

    holds_linear(call, kind)
