"""The watcher and the MCP server serve every hook, editor and search of a project: one request must never
hold up another (issue 34). Real parts: a watcher in this process or a background one, real hook and
memsearch client processes, a real MCP client session.

The figures (another client's ordinary query while one client sends 100,000-character queries without
pause) are measured by scripts/bench_concurrency.py; these tests hold what must never happen, without timing
anything: a search held mid-way keeps no other search, status or write waiting; a request past its budget
is stopped and says so; a 1 MB one-word query through the watcher or through MCP is answered (cut, with a
warning) and every other client is answered meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memfiles.cli.main import cli
from memfiles.config import load_settings
from memfiles.errors import IndexUnavailable
from memfiles.index.search import Searcher
from memfiles.limits import QUERY_LIMIT
from memfiles.services.indexing.ipc import request
from tests.conftest import watching
from tests.reliability.conftest import BIN
from tests.reliability.conftest import cli as run_cli

MEGABYTE = 1_000_000
ENTRIES = [
    ("procedure", "Run make install before the test suite", "tooling", "The dev extra brings pyyaml and pre-commit."),
    ("friction", "Chroma hangs when two processes open one folder", "index", "One process must own the store."),
    ("decision", "Release builds are signed on the build host only", "release", "Keys never leave the host."),
    ("lesson", "Timing closes with --max-fanout 16", "synthesis", "Hold violations went away at sixteen sinks."),
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shared"
    (root / "memory").mkdir(parents=True)
    ops = [{"op": "add", "kind": k, "title": t, "area": a, "body": b} for k, t, a, b in ENTRIES]
    result = CliRunner().invoke(cli, ["--root", str(root), "import", "-"], input=json.dumps({"ops": ops}))
    assert result.exit_code == 0, result.output
    assert CliRunner().invoke(cli, ["--root", str(root), "backfill"]).exit_code == 0
    return root


def ordinary(root: Path, query: str = "two processes hang on one folder") -> list[dict[str, Any]]:
    answer = request(load_settings(root), {"op": "search", "queries": [[query, 3]]}, timeout=120)
    assert answer is not None
    return answer["results"][0]


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[threading.Event, threading.Event]]:
    """A search for a query starting with HOLD stops in its verbatim-match step until `release` is set;
    `reached` says it got there (it then holds the index as a reader)."""
    reached, release = threading.Event(), threading.Event()
    exact = Searcher.exact_matches

    def slow(self: Searcher, query: str, filters: Any) -> set[str]:
        if query.startswith("HOLD"):
            reached.set()
            assert release.wait(120)
        return exact(self, query, filters)

    monkeypatch.setattr(Searcher, "exact_matches", slow)
    yield reached, release
    release.set()


def test_a_slow_search_holds_up_no_other_request(project: Path, held: tuple[threading.Event, threading.Event]) -> None:
    """While one search is stuck in the middle of its work, other searches, a status and a write's index
    update are answered (before issue 34 one mutex served them in turn, and they waited for it)."""
    reached, release = held
    settings = load_settings(project)
    with watching(project) as watcher:
        slow: list[Any] = []
        stuck = threading.Thread(
            target=lambda: slow.append(request(settings, {"op": "search", "queries": [["HOLD-1 x", 3]]}, 120))
        )
        stuck.start()
        assert reached.wait(60)
        assert ordinary(project)[0]["entry"]["id"] == "F-001"
        assert request(settings, {"op": "status"}, timeout=120)["watcher"]["running"]
        assert request(settings, {"op": "memsearch", "query": "signed builds", "k": 3, "json": True}, 120)["ok"]
        # a write's update waits for searches in flight to finish, and is not refused meanwhile
        stuck_alive = stuck.is_alive()
        release.set()
        stuck.join(120)
        assert stuck_alive and slow and slow[0]["ok"]
        request(settings, {"op": "sync", "paths": ["memory/frictions.md"], "pruned": []}, timeout=120)
        assert watcher.keeper.state.syncs >= 1


def test_a_request_past_its_budget_is_stopped(
    project: Path, held: tuple[threading.Event, threading.Event], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search still working when its budget runs out stops at its next step with an error saying so;
    the index is free again for the next request."""
    import memfiles.services.watch.dispatch as dispatch

    reached, release = held
    settings = load_settings(project)
    with watching(project):
        assert ordinary(project)[0]["entry"]["id"] == "F-001"  # the model loaded, at the full budget
        with monkeypatch.context() as patch:
            patch.setattr(dispatch, "REQUEST_BUDGET", 2.0)
            threading.Timer(6.0, release.set).start()  # the held step outlasts the budget
            with pytest.raises(IndexUnavailable, match="longer than its budget"):
                request(settings, {"op": "search", "queries": [["HOLD-2 x", 3]]}, timeout=120)
        assert reached.is_set()
        assert ordinary(project)[0]["entry"]["id"] == "F-001"


def _hook(root: Path, prompt: str, session: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [str(BIN / "memfiles"), "hook", "UserPromptSubmit"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(root)},
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps({"session_id": session, "prompt": prompt, "cwd": str(root)}))
    process.stdin.close()
    return process


@pytest.mark.slow
def test_a_megabyte_word_through_the_watcher_leaves_every_other_client_answered(project: Path) -> None:
    """A real background watcher: one client sends a 1,000,000-character one-word query (as memsearch's thin
    client sends what it is given); meanwhile agents' UserPromptSubmit hooks get their context and memsearch
    its hits. The huge query is answered too, searched by its first QUERY_LIMIT characters, with a warning."""
    settings = load_settings(project)
    run_cli(project, "watch")
    try:
        huge: list[Any] = []
        sender = threading.Thread(
            target=lambda: huge.append(
                request(settings, {"op": "memsearch", "query": "a" * MEGABYTE, "k": 5, "json": True}, timeout=600)
            )
        )
        sender.start()
        hooks = [_hook(project, "how do I run the test suite after make install?", f"s{n}") for n in range(3)]
        searches = [
            subprocess.run(
                [str(BIN / "memsearch"), "--root", str(project), "--json", "signed release builds"],
                capture_output=True,
                text=True,
                timeout=600,
            )
            for _ in range(3)
        ]
        answers = []
        for process in hooks:
            assert process.stdout is not None and process.stderr is not None
            answers.append((process.stdout.read(), process.stderr.read()))
            process.wait(600)
        sender.join(600)
        for out, err in answers:
            assert "P-001" in json.loads(out)["hookSpecificOutput"]["additionalContext"], (out, err)
        for done in searches:
            assert done.returncode == 0 and json.loads(done.stdout)["hits"][0]["entry"]["id"] == "D-001", done.stderr
        assert huge and huge[0]["ok"], huge
        said = json.loads(huge[0]["out"])
        assert len(said["query"]) == QUERY_LIMIT and any("cut to its first" in w for w in said["warnings"])
        log = (
            (project / ".memfiles" / "hooks.log").read_text() if (project / ".memfiles" / "hooks.log").exists() else ""
        )
        assert "gave up" not in log
    finally:
        run_cli(project, "watch", "--stop", check=False)


@pytest.mark.slow
def test_a_megabyte_word_through_mcp_leaves_the_other_requests_answered(project: Path) -> None:
    """A real MCP client session: a 1,000,000-character one-word `search` in flight, and ordinary searches, a
    recall and a show sent at the same time on the same session, all answered; the huge one says it was cut."""
    from mcp import Client, StdioServerParameters

    async def main() -> None:
        # env: the SDK hands a server only a few safe variables (not PYTHONPATH): the memfiles under test
        params = StdioServerParameters(
            command=str(BIN / "memfiles"), args=["--root", str(project), "mcp"], cwd=str(project), env=dict(os.environ)
        )
        async with Client(params, read_timeout_seconds=600) as client:
            await client.call_tool("search", {"query": "warm up"})
            calls = [
                client.call_tool("search", {"query": "a" * MEGABYTE}),
                *(client.call_tool("search", {"query": "two processes hang on one folder"}) for _ in range(3)),
                client.call_tool("recall", {"query": "run the test suite", "trigger": "act"}),
                client.call_tool("show", {"id": "D-001"}),
            ]
            results = await asyncio.gather(*calls)
            assert not any(result.is_error for result in results), [r.content for r in results if r.is_error]
            payloads = [json.loads(result.content[0].text) for result in results]
            assert len(payloads[0]["query"]) == QUERY_LIMIT
            assert any("cut to its first" in warning for warning in payloads[0]["warnings"])
            assert all(p["hits"][0]["entry"]["id"] == "F-001" for p in payloads[1:4])
            assert payloads[4]["layers"][0]["hits"][0]["entry"]["id"] == "P-001"
            assert payloads[5]["entry"]["id"] == "D-001"

    asyncio.run(main())


def test_a_request_line_past_the_limit_is_refused(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The watcher's socket keeps at most REQUEST_LIMIT bytes of a request: a longer one is refused, the rest
    read and dropped so that the client reads why, and the watcher goes on answering."""
    import memfiles.services.indexing.ipc as ipc

    monkeypatch.setattr(ipc, "REQUEST_LIMIT", 4096)
    settings = load_settings(project)
    with watching(project):
        with pytest.raises(IndexUnavailable, match="larger than"):
            request(settings, {"op": "search", "queries": [["b" * 10_000, 3]]}, timeout=60)
        assert ordinary(project)[0]["entry"]["id"] == "F-001"


def test_bulk_encoding_leaves_no_torch_in_the_watcher(tmp_path: Path) -> None:
    """A watcher that catches up with more entries than the light encoder takes encodes them in a child
    process that exits when done: the watcher never has torch loaded (before: 403 MB against 122 MB)."""
    root = tmp_path / "bulk"
    (root / "memory").mkdir(parents=True)
    ops = [
        {"op": "add", "kind": "fact", "title": f"Fact number {n} about widgets", "area": "bulk", "body": f"Body {n}."}
        for n in range(90)
    ]
    assert CliRunner().invoke(cli, ["--root", str(root), "import", "-"], input=json.dumps({"ops": ops})).exit_code == 0
    assert CliRunner().invoke(cli, ["--root", str(root), "backfill"]).exit_code == 0
    (root / "memory" / "facts.md").write_text(
        (root / "memory" / "facts.md").read_text().replace("about widgets", "about gadgets")
    )  # every entry changed: the catch-up embeds all 90 again
    run_cli(root, "watch")
    try:
        pid = int((root / ".memsearch" / "watch.pid").read_text())
        for n in range(10):
            ordinary(root, f"fact number {n} about gadgets")
        maps = Path(f"/proc/{pid}/maps").read_text()
        assert "libtorch" not in maps and "/torch/" not in maps
        log = (root / ".memsearch" / "watch.log").read_text()
        assert "indexed 90" in log or "caught up" in log
    finally:
        run_cli(root, "watch", "--stop", check=False)


def test_no_test_only_switch_was_needed(tmp_path: Path) -> None:
    """The caps are plain constants of memfiles.limits, documented in docs/json.md (no environment switch)."""
    import memfiles.limits as limits

    text = (Path(__file__).resolve().parents[2] / "docs" / "json.md").read_text()
    for value in (limits.QUERY_LIMIT, limits.HOOK_TEXT_LIMIT):
        assert f"{value:,}" in text
    assert "MEMFILES_" not in Path(limits.__file__).read_text()
    assert sys.modules["memfiles.limits"] is limits


def test_the_index_lock_shares_readers_and_gives_a_writer_its_turn() -> None:
    """Readers hold it together; a writer waits for them and keeps new readers out until it has had its
    turn; the writer may take it again and read under it; a reader may read again while a writer waits."""
    from memfiles.services.watch.sharing import SharedLock

    lock = SharedLock()
    order: list[str] = []
    first_in, writer_waiting, release = threading.Event(), threading.Event(), threading.Event()

    def reader(name: str, hold: threading.Event | None) -> None:
        with lock.shared():
            order.append(f"{name} in")
            if hold is not None:
                first_in.set()
                assert hold.wait(30)
                with lock.shared():  # reading again while the writer waits: no deadlock
                    order.append(f"{name} again")
            order.append(f"{name} out")

    def writer() -> None:
        writer_waiting.set()
        with lock, lock, lock.shared():  # reentrant, and it may read under its own hold
            order.append("writer")

    first = threading.Thread(target=reader, args=("r1", release))
    first.start()
    assert first_in.wait(30)
    second = threading.Thread(target=reader, args=("r2", None))
    second.start()
    second.join(30)  # readers share: r2 went in and out while r1 holds it
    assert order == ["r1 in", "r2 in", "r2 out"]
    write = threading.Thread(target=writer)
    write.start()
    assert writer_waiting.wait(30)
    for _ in range(600):  # until the writer waits for its turn
        if lock._waiting:
            break
        threading.Event().wait(0.05)
    late = threading.Thread(target=reader, args=("r3", None))
    late.start()
    threading.Event().wait(0.2)
    assert "writer" not in order and "r3 in" not in order  # the writer waits for r1; r3 waits for the writer
    release.set()
    for thread in (first, write, late):
        thread.join(30)
    assert order[3:] == ["r1 again", "r1 out", "writer", "r3 in", "r3 out"]
