"""The semantic index with real parts: the bundled model, a real Chroma store (embedded and server)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Run, store_held

pytestmark = pytest.mark.integration

ENTRIES = [
    (
        "friction",
        "The batch files cannot be used as the coverage map",
        "ci",
        "Each test batch writes its own partial file; merging them drops the lines no batch touched, so the"
        " totals are wrong. Read the raw counters instead.",
    ),
    (
        "lesson",
        "Timing closes with --max-fanout 16",
        "synthesis",
        "Hold violations after placement went away once one driver could feed at most sixteen sinks.",
    ),
    (
        "decision",
        "Release builds are signed on the build host only",
        "release",
        "Signing keys never leave the build host; developers get unsigned artifacts.",
    ),
    (
        "fact",
        "The staging database is restored from production every night",
        "ops",
        "A nightly job copies last night's production backup into staging at 02:00 UTC.",
    ),
    (
        "friction",
        "Chroma hangs when two processes open the same folder",
        "index",
        "A second PersistentClient on the same directory waits for minutes; one process must own the store.",
    ),
    ("todo", "Document the on-call rota in the runbook", "ops", "Nobody knows who is on call during holidays."),
]


@pytest.fixture(autouse=True)
def patient_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """The write path's wait for the index is a speed bound (bench_write.py measures it), not behaviour:
    on a loaded machine the tests wait for the index to answer rather than see a warning."""
    monkeypatch.setenv("MEMFILES_INDEX_TIMEOUT", "300")


@pytest.fixture
def filled(run: Run, root: Path) -> Path:
    for kind, title, area, body in ENTRIES:
        assert run("add", "-k", kind, "-t", title, "-a", area, "--body", body).exit_code == 0
    return root


@pytest.fixture
def memsearch(root: Path):
    from click.testing import CliRunner

    from memfiles.cli.search import memsearch as command

    def invoke(*args: str, input: str | None = None):
        return CliRunner().invoke(command, ["--root", str(root), *args], input=input, catch_exceptions=False)

    return invoke


def memsearch_in(root: Path, *args: str):
    from click.testing import CliRunner

    from memfiles.cli.search import memsearch as command

    return CliRunner().invoke(command, ["--root", str(root), *args], catch_exceptions=False)


def ids_of(result) -> list[str]:
    assert result.exit_code == 0, result.output
    return [hit["entry"]["id"] for hit in json.loads(result.stdout)["hits"]]


class TestSearch:
    def test_no_index_is_a_clear_error(self, filled: Path, memsearch) -> None:
        """Before any backfill: exit 2 and a message naming memfiles backfill."""
        result = memsearch("coverage")
        assert result.exit_code == 2 and "memfiles backfill" in result.stderr

    def test_meaning_matches_without_shared_words(self, filled: Path, run: Run, memsearch) -> None:
        """'coverage aggregation' finds the entry about batch files and the coverage map first."""
        assert run("backfill").exit_code == 0
        assert ids_of(memsearch("how do we aggregate test coverage?", "--json"))[0] == "F-001"
        # no word in common with F-002 (the old query here shared "process" and "owns" with it, and
        # "database" with K-001: a near tie decided by the lexical weight, not a meaning match)
        assert ids_of(memsearch("vector db freezes with concurrent access", "--json"))[0] == "F-002"

    def test_ids_flags_and_rare_terms_hit_exactly(self, filled: Path, run: Run, memsearch) -> None:
        """An id comes first; a flag and a rare token find the entry that holds them."""
        run("backfill")
        assert ids_of(memsearch("K-001", "--json"))[0] == "K-001"
        assert ids_of(memsearch("--json", "--", "--max-fanout"))[0] == "L-001"  # -- ends the options
        assert ids_of(memsearch("PersistentClient", "--json"))[0] == "F-002"

    def test_filters_combine_and_json_has_the_fields(self, filled: Path, run: Run, memsearch) -> None:
        """--kind, --area, --status, --path and --since are ANDed; --json carries the promised fields."""
        run("backfill")
        hits = json.loads(memsearch("who is on call during the holidays", "--kind", "todo", "--json").stdout)["hits"]
        assert [h["entry"]["id"] for h in hits] == ["T-001"]
        assert set(hits[0]) == {"rank", "score", "signals", "entry"}
        assert ids_of(memsearch("staging database backups", "--area", "ops", "--kind", "fact", "--json")) == ["K-001"]
        assert ids_of(memsearch("coverage", "--kind", "F", "--status", "resolved", "--json")) == []
        assert ids_of(memsearch("coverage map; chroma hangs", "--path", "memory/friction*", "--json")) in (
            ["F-001", "F-002"],
            ["F-002", "F-001"],
        )
        assert ids_of(memsearch("coverage", "--since", "2999-01-01", "--json")) == []
        empty = memsearch("coverage", "--since", "2999-01-01")
        assert empty.exit_code == 0 and "no entries match" in empty.stderr

    def test_batch_answers_each_line(self, filled: Path, run: Run, memsearch, root: Path) -> None:
        """--batch: one {"id", "query", "hits"} line per query line; a bad line names its number, exit 2."""
        run("backfill")
        batch = root / "q.jsonl"
        wide = "coverage map, chroma, signing keys"  # three entries hold a word of it: k 2 keeps two
        batch.write_text(
            f'{{"id": "a", "query": "{wide}", "k": 2}}\n{{"id": 7, "query": "signing keys"}}\n'
            '{"id": null, "query": "rota"}\n'  # a null id is no id: the line's number, as with none
        )
        lines = [json.loads(line) for line in memsearch("--batch", str(batch)).stdout.splitlines()]
        assert [(item["id"], item["query"]) for item in lines] == [("a", wide), (7, "signing keys"), (3, "rota")]
        assert len(lines[0]["hits"]) == 2 and lines[1]["hits"][0]["entry"]["id"] == "D-001"
        batch.write_text('{"id": "a", "query": "x"}\n{"query": 5}\n')
        bad = memsearch("--batch", str(batch))
        assert bad.exit_code == 2 and "q.jsonl:2" in bad.stderr
        batch.write_text('{"id": "a", "query": "x"}\n{"query": "  "}\n')
        empty = memsearch("--batch", str(batch))
        assert empty.exit_code == 2 and "q.jsonl:2" in empty.stderr and "give a query" in empty.stderr


class TestBackfillAndWritePath:
    def test_a_long_lived_process_writes_to_a_store_built_again_by_another(
        self, filled: Path, run: Run, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """This process opened the store; .memsearch/ was then deleted and a backfill in another process
        built it again. A write here updated the index through chromadb's cached client of the old files
        ("attempt to write a readonly database"), and the entry was missing from search with no warning
        (the MCP server, a long-lived process, met it). Now the new store is opened afresh."""
        monkeypatch.setenv("MEMFILES_SEARCH_WATCH", "0")
        assert run("backfill").exit_code == 0  # in this process: its client of the store is cached
        shutil.rmtree(filled / ".memsearch")
        env = {**os.environ, "MEMFILES_SEARCH_WATCH": "0"}
        rebuilt = subprocess.run(
            [sys.executable, "-m", "memfiles.cli", "--root", str(filled), "backfill"], env=env, capture_output=True
        )
        assert rebuilt.returncode == 0, rebuilt.stderr
        added = run("add", "-k", "K", "-t", "Axolotls regrow limbs", "-a", "bio", "--body", "Salamanders.", "--json")
        assert added.exit_code == 0 and json.loads(added.stdout)["warnings"] == []
        check = run("backfill", "--check", "--json")
        assert check.exit_code == 0 and json.loads(check.stdout)["missing_or_stale"] == [], check.stdout

    def test_a_backfill_on_a_terminal_shows_its_progress(self, run: Run, root: Path) -> None:
        """A backfill of a few dozen entries (seconds, most of them loading the model) shows a bar on a
        terminal; it was silent below 256 entries."""
        import fcntl
        import pty
        import struct
        import termios

        ops = [
            {
                "op": "add",
                "kind": "fact",
                "title": f"Fact number {n} about the build",
                "area": "a",
                "body": f"Body {n}.",
            }
            for n in range(20)
        ]
        (root / "ops.json").write_text(json.dumps({"ops": ops}))
        assert run("import", str(root / "ops.json")).exit_code == 0
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal's width
        env = {**os.environ, "MEMFILES_SEARCH_WATCH": "0"}
        command = [sys.executable, "-m", "memfiles.cli", "--root", str(root), "backfill"]
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=follower, env=env, timeout=600)
        os.close(follower)
        said = b""
        with contextlib.suppress(OSError):  # the terminal's other end reads until it is empty
            while chunk := os.read(leader, 65536):
                said += chunk
        os.close(leader)
        assert done.returncode == 0 and b"indexed 20" in done.stdout
        assert b"embedding" in said and b"/20 " in said, said[-400:]

    def test_incremental_backfill_and_drift(self, filled: Path, run: Run, memsearch) -> None:
        """Unchanged entries are not embedded again; a hand edit is drift until the next backfill."""
        first = json.loads(run("backfill", "--json").stdout)
        assert first["indexed"] == len(ENTRIES)
        again = json.loads(run("backfill", "--json").stdout)
        assert again["indexed"] == 0 and again["unchanged"] == len(ENTRIES)
        path = filled / "memory" / "decisions.md"
        path.write_text(path.read_text().replace("developers get unsigned artifacts", "laptops never sign"))
        check = run("backfill", "--check", "--json")
        assert check.exit_code == 1 and json.loads(check.stdout)["missing_or_stale"] == ["D-001"]
        assert json.loads(run("backfill", "--json").stdout)["indexed"] == 1
        assert run("backfill", "--check").exit_code == 0

    def test_a_search_with_no_watcher_says_the_index_is_behind_a_hand_edit(
        self, filled: Path, run: Run, memsearch
    ) -> None:
        """An entry deleted by hand (an editor, a branch switch) with no watcher running was still a hit,
        with no word that the index was behind. It is left out now, and a warning names the file; the
        next backfill ends the warning, not a later write. The files saved before the last backfill are
        not read at all."""
        run("backfill")
        assert ids_of(memsearch("on-call rota", "--json"))[0] == "T-001"
        assert "behind" not in memsearch("on-call rota").stderr
        path = filled / "memory" / "todos.md"
        text = path.read_text()
        path.write_text(text[: text.index("### T-001")].rstrip() + "\n")
        result = memsearch("on-call rota", "--json")
        assert "T-001" not in ids_of(result)
        assert "the index is behind the files: memory/todos.md changed since its last sync" in result.stderr
        assert "1 entry no file holds any more left out" in result.stderr
        # and in the JSON, for an agent that reads stdout alone (it held query and hits only)
        warned = " ".join(json.loads(result.stdout)["warnings"])
        assert "the index is behind the files: memory/todos.md changed since its last sync" in warned
        # a write's own index update compares only the file it wrote: the hand edit is still seen
        assert run("add", "-k", "fact", "-t", "Staging has its own keys", "-a", "ops", "--body", "b").exit_code == 0
        result = memsearch("on-call rota", "--json")
        assert "T-001" not in ids_of(result) and "memory/todos.md changed since its last sync" in result.stderr
        run("backfill")
        result = memsearch("on-call rota", "--json")
        assert "T-001" not in ids_of(result) and "behind" not in result.stderr

    def test_fmt_tells_the_index_what_it_rewrote(self, filled: Path, run: Run, memsearch) -> None:
        """fmt wrote files and told the index nothing: `### D-1:` respelled D-001 left the index behind
        (a warning at every search with no watcher) until a backfill. It updates the index as a write does."""
        run("backfill")
        path = filled / "memory" / "decisions.md"
        hand = (
            "### D-7: Nightly builds run on the spare runner\n\n"
            "- date: 2026-12-01\n- area: ci\n- status: proposed\n\nB.\n"
        )
        path.write_text(path.read_text().replace("## Manual", hand + "\n## Manual"))
        assert run("fmt").exit_code == 0 and "### D-007:" in path.read_text()
        result = memsearch("spare runner", "--json")
        assert ids_of(result)[0] == "D-007" and "behind" not in result.stderr
        assert run("backfill", "--check").exit_code == 0

    def test_recall_and_mcp_searches_say_the_index_is_behind_too(self, filled: Path, run: Run) -> None:
        """The shared search of recall and the MCP server (filtered_search) dropped the index's own
        warnings: an MCP `search` with no watcher answered a hand-deleted entry's old place in silence."""
        from memfiles.config import load_settings
        from memfiles.services.agents.recall import filtered_search

        run("backfill")
        path = filled / "memory" / "todos.md"
        text = path.read_text()
        path.write_text(text[: text.index("### T-001")].rstrip() + "\n")
        warnings: list[str] = []
        hits, _ = filtered_search(load_settings(filled), [("on-call rota", {}, 5)], warnings=warnings)
        assert "T-001" not in [hit["entry"]["id"] for hit in hits[0]]
        assert any("the index is behind the files: memory/todos.md" in said for said in warnings), warnings

    def test_a_file_moved_with_its_old_time_is_not_taken_for_gone(self, filled: Path, run: Run, memsearch) -> None:
        """`mv` (and rsync -a, tar) keeps a file's modification time: a memory file moved to a package
        after the last backfill looked unchanged, so its entries were taken for gone and hidden (review)."""
        run("backfill")
        source = filled / "memory" / "todos.md"
        stamp = source.stat()
        (filled / "pkg" / "memory").mkdir(parents=True)
        target = filled / "pkg" / "memory" / "todos.md"
        source.rename(target)
        os.utime(target, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        result = memsearch("on-call rota", "--json")
        assert ids_of(result)[0] == "T-001", result.stderr

    def test_hidden_entries_take_no_place_among_the_k(self, run: Run, root: Path, memsearch) -> None:
        """60 entries of a file deleted by hand filled each ranking's 50 places: the search returned none of
        the 20 that still stand. The rankings go as much deeper as there are hidden entries."""
        ops = [
            {
                "op": "add",
                "kind": "decision",
                "title": f"SQLite write lock tuning {n}",
                "area": "db",
                "body": f"Tune the sqlite write lock, case {n}.",
                "file": "memory/branch.md",
            }
            for n in range(60)
        ] + [
            {
                "op": "add",
                "kind": "decision",
                "title": f"Storage engine choice {n}",
                "area": "db",
                "body": f"We keep sqlite as the storage engine, note {n}.",
                "file": "memory/keep.md",
            }
            for n in range(20)
        ]
        assert run("import", "-", input=json.dumps({"ops": ops})).exit_code == 0
        run("backfill")
        (root / "memory" / "branch.md").unlink()
        found = ids_of(memsearch("sqlite write lock", "-k", "10", "--json"))
        assert len(found) == 10 and all(int(i.split("-")[1]) > 60 for i in found)

    def test_write_path_keeps_the_index_in_step(self, filled: Path, run: Run, memsearch) -> None:
        """add, set and prune update the index themselves: no drift afterwards, and the new entry is found."""
        run("backfill")
        run(
            "add",
            "-k",
            "lesson",
            "-t",
            "Flaky tests came from a shared temp folder",
            "-a",
            "ci",
            "--body",
            "Two workers wrote the same temp path; give each its own.",
        )
        run("set", "F-001", "--status", "resolved")
        run("prune", "T-001", "--reason", "moved to the wiki")
        assert run("backfill", "--check").exit_code == 0
        assert ids_of(memsearch("tests that fail at random", "--json"))[0] == "L-002"
        assert ids_of(memsearch("coverage", "--status", "resolved", "--json")) == ["F-001"]
        assert "T-001" not in ids_of(memsearch("on-call rota", "--json"))

    def test_a_project_of_no_entries_gets_an_empty_index(self, run: Run, root: Path, memsearch) -> None:
        """backfill in a project with no entries yet makes an index that holds none: memsearch then says
        no entries match (it used to send the user back to backfill, which could not help), status agrees
        with itself, and the first entry added is found."""
        assert run("backfill").exit_code == 0
        empty = memsearch("anything")
        assert empty.exit_code == 0 and "no entries match" in empty.stderr, empty.stderr
        status = json.loads(run("status", "--json").stdout)
        assert status["index"]["exists"] is True and status["index"]["entries"] == 0
        added = run("add", "-k", "D", "-t", "First decision of an empty project", "-a", "x", "--body", "B.")
        assert added.exit_code == 0
        assert ids_of(memsearch("first decision", "--json")) == ["D-001"]

    def test_rebuild_starts_from_empty(self, filled: Path, run: Run) -> None:
        """--rebuild embeds everything again."""
        run("backfill")
        assert json.loads(run("backfill", "--rebuild", "--json").stdout)["indexed"] == len(ENTRIES)
        both = run("backfill", "--rebuild", "--check")  # one writes everything, the other nothing: refused
        assert both.exit_code == 2 and "--rebuild and --check do not go together" in both.output


@pytest.mark.slow
class TestConcurrency:
    def test_a_write_waits_once_for_a_busy_store(self, filled: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
        """Another process holds the store: the write's near-duplicate check waits index_timeout and falls
        back to word overlap; the write's own update then only looks again (it waited index_timeout a
        second time before) and says the index is busy. The file is written all the same."""
        run("backfill")
        monkeypatch.setenv("MEMFILES_INDEX_TIMEOUT", "1")
        monkeypatch.setenv("MEMFILES_SEARCH_WATCH", "0")
        title = "Signing keys rotate every quarter, not every year"
        with store_held(filled):
            result = run("add", "-k", "D", "-t", title, "-a", "security", "--body", "Rotation.", "--json")
        assert result.exit_code == 0
        warnings = json.loads(result.stdout)["warnings"]
        assert "the index is busy (this write waited 1 s for it already): run memfiles backfill later" in warnings
        assert not any("did not answer" in warning for warning in warnings), warnings
        assert title in run("list").stdout

    def test_backfill_queries_and_adds_at_once(self, filled: Path, run: Run, tmp_path: Path) -> None:
        """Backfills, searches and adds in parallel processes all succeed and leave no drift."""
        run("backfill")
        bin_dir = Path(sys.executable).parent
        env = {**os.environ, "MEMFILES_ROOT": str(filled)}

        def spawn(*command: str) -> subprocess.Popen:
            return subprocess.Popen(
                [str(bin_dir / command[0]), *command[1:]],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )

        procs = []
        for n in range(3):
            procs.append(
                spawn(
                    "memfiles",
                    "add",
                    "-k",
                    "K",
                    "-t",
                    f"Concurrent fact {n}",
                    "-a",
                    "race",
                    "--body",
                    f"Fact number {n}.",
                )
            )
            procs.append(spawn("memsearch", "coverage", "--json"))
            procs.append(spawn("memfiles", "backfill"))
        for proc in procs:
            _out, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, (proc.args, err)
        run("backfill")
        assert run("backfill", "--check").exit_code == 0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real `chroma run` on loopback, stopped after the module's tests."""
    binary = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    if binary is None:
        pytest.fail("the chroma command (from the chromadb package) is not installed")
    port = _free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    proc = subprocess.Popen(
        [binary, "run", "--path", str(data), "--host", "127.0.0.1", "--port", str(port)],
        env={**os.environ, "RUST_LOG": "warn"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("chroma run did not start within 30 s")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def hung_server() -> Iterator[str]:
    """A server that accepts every connection and never answers (a Chroma server stopped with SIGSTOP)."""
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(50)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    listener.close()
    for connection in held:
        connection.close()


class TestServerMode:
    @pytest.mark.slow
    def test_a_server_that_never_answers_costs_a_clone_nothing_but_a_warning(
        self, filled: Path, run: Run, memsearch, hung_server: str, monkeypatch
    ) -> None:
        """With a server that takes connections and never answers, `add` hung for ever (chromadb's HTTP
        session has no timeout), and then waited for it and warned. The server now holds only shared
        vectors (a clone's entries are in its own view): backfill builds the view with the vectors
        embedded here and says the server did not answer; a write and a search never wait for it; status
        says it did not answer (exit 1), with the view's drift beside it."""
        monkeypatch.setenv("MEMFILES_CHROMA_URL", hung_server)
        monkeypatch.setenv("MEMFILES_INDEX_TIMEOUT", "2")
        monkeypatch.setenv("MEMFILES_SEARCH_TIMEOUT", "3")
        monkeypatch.setenv("MEMFILES_LOCK_TIMEOUT", "2")
        built = run("backfill", "--json")
        assert built.exit_code == 0 and json.loads(built.stdout)["embedded"] == len(ENTRIES)
        assert "did not answer within 2 s" in built.stderr and "embedded here" in built.stderr
        added = run(
            "add", "-k", "K", "-t", "Warthogs dig burrows", "-a", "bio", "--body", "With their snouts.", "--json"
        )
        assert added.exit_code == 0 and json.loads(added.stdout)["warnings"] == []
        assert ids_of(memsearch("warthogs", "--json"))[0] == "K-002"
        assert run("backfill", "--check").exit_code == 0
        status = run("status")  # what the clone sees, and why the server could not say what it holds: exit 1
        assert (
            status.exit_code == 1 and "drift:    none" in status.stdout and "did not answer within 2 s" in status.stdout
        )
        said = json.loads(run("status", "--json").stdout)
        assert said["drift"] is not None and said["index"]["error"] is None
        assert said["index"]["server"]["url"] == hung_server and "did not answer" in said["index"]["server"]["error"]
        # a long lock_timeout is not how long a server that never answers may hold a command: the wait is capped
        from memfiles.index import chroma

        monkeypatch.setenv("MEMFILES_LOCK_TIMEOUT", "600")
        monkeypatch.setattr(chroma, "SERVER_CONNECT_MAX", 1.5)
        said = json.loads(run("status", "--json").stdout)
        assert "did not answer within 1.5 s" in said["index"]["server"]["error"]

    def test_a_server_that_is_down_costs_a_clone_nothing_but_a_warning(
        self, filled: Path, run: Run, memsearch, monkeypatch
    ) -> None:
        """The server on a closed port: backfill builds this clone's view and warns once; a write is indexed
        with no warning (its vector is embedded here, and shared by a later backfill); search answers."""
        monkeypatch.setenv("MEMFILES_CHROMA_URL", f"http://127.0.0.1:{_free_port()}")
        built = run("backfill")
        assert built.exit_code == 0 and built.stderr.count("warning") == 1 and "127.0.0.1" in built.stderr
        added = run("add", "-k", "D", "-t", "Written while the server was away", "-a", "x", "--body", "b")
        assert added.exit_code == 0 and added.stdout.strip() == "D-002" and added.stderr == ""
        assert run("backfill", "--check").exit_code == 0
        assert ids_of(memsearch("written while the server was away", "--json"))[0] == "D-002"

    def test_backfill_search_and_write_path_against_a_server(
        self, filled: Path, run: Run, memsearch, chroma_server: str, monkeypatch
    ) -> None:
        """The same code against `chroma run`: backfill, search, and the write path's update."""
        monkeypatch.setenv("MEMFILES_CHROMA_URL", chroma_server)
        assert json.loads(run("backfill", "--rebuild", "--json").stdout)["indexed"] == len(ENTRIES)
        both = run("backfill", "--rebuild", "--check")  # one writes everything, the other nothing: refused
        assert both.exit_code == 2 and "--rebuild and --check do not go together" in both.output
        assert ids_of(memsearch("how do we aggregate test coverage?", "--json"))[0] == "F-001"
        run("add", "-k", "K", "-t", "Backups are kept for thirty days", "-a", "ops", "--body", "Then deleted.")
        assert run("backfill", "--check").exit_code == 0
        assert not (filled / ".memsearch" / "chroma").exists()

    def test_two_projects_on_one_server_keep_their_own_indexes(
        self, filled: Path, run: Run, chroma_server: str, monkeypatch, tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        """Every project on a server used one collection (per model): a second project's search returned the
        first one's entries under paths it does not have, and its backfill removed them. Each project now
        has its own (its folder's name and a key of its place, or index_collection), two folders of one
        name (here) included."""
        from click.testing import CliRunner

        from memfiles.cli.main import cli

        monkeypatch.setenv("MEMFILES_CHROMA_URL", chroma_server)
        other = tmp_path_factory.mktemp("elsewhere") / filled.name
        (other / "memory").mkdir(parents=True)

        def run_in(root: Path, *args: str):
            return CliRunner().invoke(cli, ["--root", str(root), *args], catch_exceptions=False)

        assert run("backfill", "--rebuild").exit_code == 0
        run_in(other, "add", "-k", "D", "-t", "Use paper bags", "-a", "shop", "--body", "Plastic ones tear.")
        assert json.loads(run_in(other, "backfill", "--json").stdout)["removed"] == 0
        assert set(ids_of(memsearch_in(other, "vector db freezes with concurrent access", "--json"))) <= {"D-001"}
        assert ids_of(memsearch_in(other, "which bags do we use", "--json"))[0] == "D-001"
        check = run("backfill", "--check")  # the first project's index lost nothing to the second's backfill
        assert check.exit_code == 0, check.output
        assert ids_of(memsearch_in(filled, "vector db freezes with concurrent access", "--json"))[0] == "F-002"

    @pytest.mark.parametrize(
        ("given", "resolved"),
        [
            ("localhost:8000", "http://localhost:8000/api/v2"),
            ("http://127.0.0.1", "http://127.0.0.1:8000/api/v2"),
            ("http://[::1]:18765", "http://[::1]:18765/api/v2"),
            ("https://chroma.example:443/base/", "https://chroma.example:443/base/api/v2"),
            ("https://chroma.example/base", "https://chroma.example:443/base/api/v2"),
        ],
    )
    def test_the_url_reaches_chromadb_whole(self, given: str, resolved: str) -> None:
        """index_url as chromadb's own resolve_url reads it: the port defaults to 8000, an IPv6 host keeps its
        brackets (`http://[::1]:18765` failed with "Invalid port") and a path is kept (it was dropped)."""
        from chromadb.api.base_http_client import BaseHTTPClient

        from memfiles.index.chroma import server_address

        assert BaseHTTPClient.resolve_url(server_address(given), False, "/api/v2", 8000) == resolved


class TestSearchUsage:
    def test_bad_usage_is_exit_2(self, filled: Path, memsearch) -> None:
        """A bad --since, a query and --batch together, neither, or an unknown kind: exit 2 with the reason."""
        assert "not a date" in memsearch("x", "--since", "2026-13-01").output
        assert memsearch("x", "--since", "2026-13-01").exit_code == 2
        assert memsearch("x", "--batch", "-").exit_code == 2
        assert memsearch().exit_code == 2
        unknown = memsearch("x", "--kind", "wish")
        assert unknown.exit_code == 2 and "unknown kind 'wish'" in unknown.stderr

    @pytest.mark.parametrize("k", ["0", "-1", "two"])
    def test_k_below_one_is_exit_2(self, filled: Path, memsearch, k: str) -> None:
        """-k 0, -k -1 and -k two are refused with exit 2, naming -k."""
        result = memsearch("coverage", "-k", k)
        assert result.exit_code == 2 and "-k" in result.output

    @pytest.mark.parametrize("query", ["", "   ", "\t\n"])
    def test_empty_query_is_exit_2(self, filled: Path, memsearch, query: str) -> None:
        """An empty or blank query is refused ("give a query") instead of returning arbitrary hits."""
        result = memsearch(query)
        assert result.exit_code == 2 and "give a query" in result.output

    def test_no_index_creates_nothing(self, filled: Path, run: Run, memsearch) -> None:
        """memsearch and backfill --check in a project without an index exit with a reason and create no folder."""
        assert memsearch("coverage").exit_code == 2
        check = run("backfill", "--check", "--json")
        assert check.exit_code == 1 and "no index yet" in check.stderr
        assert sorted(json.loads(check.stdout)["missing_or_stale"]) == [
            "D-001",
            "F-001",
            "F-002",
            "K-001",
            "L-001",
            "T-001",
        ]
        assert not (filled / ".memsearch").exists()


class TestHitsAndScores:
    def test_hit_object_carries_the_whole_entry(self, filled: Path, run: Run, memsearch) -> None:
        """A hit is {rank, score, signals, entry}; the entry object has refs, tags and the body (docs/json.md)."""
        run("add", "-k", "D", "-t", "Sign on the build host", "-a", "release", "--ref", "D-001", "--body", "See D-001.")
        run("backfill")
        found = json.loads(memsearch("D-002", "--json").stdout)
        assert found["query"] == "D-002"
        hit = found["hits"][0]
        assert hit["rank"] == 1 and hit["score"] == 1.0 and hit["signals"]["id"] is True
        assert hit["entry"]["refs"] == ["D-001"] and hit["entry"]["body"] == "See D-001."
        assert hit["entry"]["kind"] == "decision" and hit["entry"]["section"] is None

    def test_id_query_is_case_insensitive(self, filled: Path, run: Run, memsearch) -> None:
        """memsearch d-001 finds D-001 first, as D-001 does."""
        run("backfill")
        assert ids_of(memsearch("d-001", "--json"))[0] == "D-001"
        assert ids_of(memsearch("what about k-001?", "--json"))[0] == "K-001"

    def test_filters_repeat_as_or(self, filled: Path, run: Run, memsearch) -> None:
        """--kind F --kind T keeps frictions and todos; --area and --status repeat the same way."""
        run("backfill")
        every = "coverage map, chroma, on-call rota, signing keys, staging database, fanout"  # a word of each
        kinds = ids_of(memsearch(every, "--kind", "F", "--kind", "todo", "--json"))
        assert sorted(kinds) == ["F-001", "F-002", "T-001"]
        areas = ids_of(memsearch(every, "--area", "ops", "--area", "release", "--json"))
        assert sorted(areas) == ["D-001", "K-001", "T-001"]
        statuses = ids_of(memsearch(every, "--status", "open", "--status", "accepted", "--kind", "F", "--json"))
        assert sorted(statuses) == ["F-001", "F-002"]

    def test_scores_mean_the_same_across_queries(self, filled: Path, run: Run, memsearch) -> None:
        """A relevant hit scores above 0.5 and an unrelated query's best hit below it; scores lie in [0, 1]."""
        run("backfill")
        relevant = json.loads(memsearch("signing keys stay on the build host", "--json").stdout)["hits"]
        unrelated = json.loads(memsearch("banana bread recipe with walnuts", "--json").stdout)["hits"]
        assert relevant[0]["entry"]["id"] == "D-001" and relevant[0]["score"] >= 0.5
        assert unrelated == [] or unrelated[0]["score"] < 0.3
        for hit in relevant + unrelated:
            assert 0.0 <= hit["score"] <= 1.0
            assert set(hit["signals"]) == {"id", "exact", "lexical", "dense"}
        scores = [hit["score"] for hit in relevant]
        assert scores == sorted(scores, reverse=True)

    def test_verbatim_flag_outranks_meaning(self, filled: Path, run: Run, memsearch) -> None:
        """A code-like query held verbatim is flagged exact and scores at least 0.9."""
        run("backfill")
        hit = json.loads(memsearch("--json", "--", "--max-fanout").stdout)["hits"][0]
        assert hit["entry"]["id"] == "L-001" and hit["signals"]["exact"] is True and hit["score"] >= 0.9


class TestBrokenFiles:
    def test_one_broken_file_does_not_stop_search_or_status(self, filled: Path, run: Run, memsearch) -> None:
        """With one file that does not parse, memsearch and status work on the others and name the file."""
        run("backfill")
        (filled / "memory" / "broken.md").write_text("# Notes\n\n### K-050: Broken\n\n- date: nope\n\nBody.\n")
        assert run("backfill").exit_code == 0
        found = memsearch("signing keys", "--json")
        assert found.exit_code == 0 and ids_of(found)[0] == "D-001"
        assert "memory/broken.md" in found.stderr
        status = run("status", "--json")
        assert status.exit_code == 0 and "memory/broken.md" in status.stderr
        report = json.loads(status.stdout)
        assert report["drift"]["unreadable"] == ["memory/broken.md"] and report["drift"]["on_disk"] == len(ENTRIES)
        assert run("backfill", "--check").exit_code == 0
        text = run("status").stdout  # the counts said "N on disk, M in the index, drift: none" with M > N
        assert "on disk (and those of 1 file that does not parse, kept as indexed)" in text
        again = run("backfill")  # warm: the time said is the whole backfill's, reading included
        seconds = float(again.stdout.rsplit(" in ", 1)[1].split()[0])
        assert again.exit_code == 0 and seconds > 0.0

    def test_status_counts_an_indexed_file_that_broke_as_kept(self, filled: Path, run: Run) -> None:
        """A file indexed, then broken by hand: its entries stay in the index, so the index holds more than
        the files that parse; status said so as "N on disk, M in the index, drift: none" with M > N. It
        now says whose entries those are; audit's closing line counts the skipped file."""
        run("backfill")
        decisions = filled / "memory" / "decisions.md"
        decisions.write_text(decisions.read_text().replace("### D-001: ", "### D-001 ", 1))
        report = json.loads(run("status", "--json").stdout)
        assert report["drift"]["indexed"] > report["drift"]["on_disk"]
        text = run("status").stdout
        assert f"entries:  {report['drift']['on_disk']} on disk (and those of 1 file that does not parse, kept" in text
        audit = run("audit")
        assert audit.exit_code == 1
        assert audit.stderr.strip().splitlines()[-1].endswith("; skipped 1 file that does not parse")

    @pytest.mark.parametrize("cut", [0, 100])
    def test_a_truncated_lexical_index_is_rebuilt(self, filled: Path, run: Run, memsearch, cut: int) -> None:
        """bm25.npz emptied or cut short (a full disk, a crash): search goes on (it was EOFError or
        BadZipFile, a traceback) and a plain backfill writes it anew (it said "unchanged")."""
        from memfiles.config import load_settings
        from memfiles.index.lexical import LexicalIndex

        run("backfill")
        settings = load_settings(filled)
        saved = next(settings.index_dir.rglob("bm25.npz"))
        saved.write_bytes(saved.read_bytes()[:cut])
        found = memsearch("signing keys", "--json")
        assert found.exit_code == 0 and ids_of(found)[0] == "D-001"
        assert run("recall", "signing keys", "--json").exit_code == 0
        assert run("backfill").exit_code == 0
        assert LexicalIndex.load(saved.parent).size == len(ENTRIES)


class TestContract:
    def test_index_commands_follow_the_contract(self, filled: Path, run: Run, memsearch, root: Path) -> None:
        """memsearch (one query and --batch), backfill, backfill --check and status print their documented
        objects (tests/contract_shapes.py, docs/json.md)."""
        from tests.contract_shapes import check_command

        check_command("status", json.loads(run("status", "--json").stdout))
        check_command("backfill", json.loads(run("backfill", "--json").stdout))
        check_command("backfill --check", json.loads(run("backfill", "--check", "--json").stdout))
        check_command("memsearch", json.loads(memsearch("coverage map", "--json").stdout))
        (root / "q.jsonl").write_text('{"id": "a", "query": "signing keys", "k": 2}\n{"query": "D-001"}\n')
        lines = memsearch("--batch", str(root / "q.jsonl")).stdout.splitlines()
        assert len(lines) == 2
        for line in lines:
            check_command("memsearch --batch", json.loads(line))
        check_command("status", json.loads(run("status", "--json").stdout))
        check_command("error", json.loads(memsearch("-k", "0", "x", "--json").stdout))

    def test_a_hits_entry_is_the_entry_show_gives(self, run: Run, memsearch, root: Path) -> None:
        """Every metadata key reaches a hit's entry object: `failed` and `promoted` were always [] there."""
        (root / "memory" / "lessons.md").write_text(
            "# Lessons\n\n### L-001: Flatten before synthesis\n\n- date: 2026-12-01\n- area: synthesis\n"
            "- status: active\n- refs: L-002\n- tags: mem, synth\n- source: distilled\n- confirmed: 2026-12-01\n"
            "- last-seen: 2026-12-01\n- evidence: run-1, run-2\n- failed: run-3\n- contradicted: 2026-12-01\n"
            "- promoted: L-002\n\nSynthesis ran out of memory until the design was flattened first.\n\n"
            "### L-002: Second\n\n- date: 2026-12-01\n- area: synthesis\n- status: active\n\nB.\n"
        )
        assert run("fmt").exit_code == 0 and run("backfill").exit_code == 0
        shown = json.loads(run("show", "L-001", "--json").stdout)["entry"]
        assert shown["failed"] == ["run-3"] and shown["promoted"] == ["L-002"]
        hit = json.loads(memsearch("L-001", "--json").stdout)["hits"][0]["entry"]
        assert hit == {key: shown[key] for key in hit} and set(shown) - set(hit) <= {"body", "pruned"}


class TestStatus:
    def test_status_json_shape_and_instants(self, filled: Path, run: Run) -> None:
        """status --json is {root, watcher, index, drift}; before a backfill index.exists is false, drift null."""
        before = json.loads(run("status", "--json").stdout)
        assert set(before) == {"root", "watcher", "index", "drift", "skipped"}
        assert before["index"]["exists"] is False and before["drift"] is None
        assert not (filled / ".memsearch").exists()
        run("backfill")
        after = json.loads(run("status", "--json").stdout)
        assert after["root"] == str(filled) and after["watcher"]["running"] is False
        assert after["index"]["entries"] == len(ENTRIES) and after["index"]["catalog"]["in_step"] is True
        assert after["drift"]["missing_or_stale"] == [] and after["drift"]["on_disk"] == len(ENTRIES)


def _catalog(root: Path) -> dict:
    folders = [p for p in (root / ".memsearch").iterdir() if (p / "catalog.json").exists()]
    return json.loads((folders[0] / "catalog.json").read_text())


class TestGeneration:
    def test_a_catalog_behind_the_store_is_rebuilt_not_trusted(self, filled: Path, run: Run, memsearch) -> None:
        """A catalog saved before the store's last write (as a watcher killed before its save leaves it):
        memsearch finds the new entry by id and meaning, no KeyError, and backfill saves a catalog in step."""
        run("backfill")
        folder = next(p for p in (filled / ".memsearch").iterdir() if (p / "catalog.json").exists())
        saved = {name: (folder / name).read_bytes() for name in ("catalog.json", "bm25.npz", "bm25-vocab.json")}
        run("add", "-k", "K", "-t", "Backups are kept for thirty days", "-a", "ops", "--body", "Then deleted.")
        for name, data in saved.items():
            (folder / name).write_bytes(data)  # the sidecar as it was before the add
        assert "K-002" not in {d["id"] for d in _catalog(filled)["docs"]}
        assert ids_of(memsearch("K-002", "--json"))[0] == "K-002"
        assert ids_of(memsearch("how long are backups kept", "--json"))[0] == "K-002"
        assert "K-002" in {d["id"] for d in _catalog(filled)["docs"]}  # the rebuilt catalog was saved
        for name, data in saved.items():
            (folder / name).write_bytes(data)
        assert run("backfill").exit_code == 0
        assert "K-002" in {d["id"] for d in _catalog(filled)["docs"]}
        assert json.loads(run("status", "--json").stdout)["index"]["catalog"]["in_step"] is True
        assert run("backfill", "--check").exit_code == 0

    def test_a_lexical_index_saved_by_another_recipe_is_rebuilt(self, filled: Path, run: Run, memsearch) -> None:
        """A bm25 index saved by a memfiles with other BM25 parameters (same catalog save) is not used:
        the searcher builds one from the catalog. Its weights are zeroed here, so ranking with it would
        show no lexical signal at all."""
        import io

        import numpy as np

        from memfiles.index.lexical import RECIPE

        run("backfill")
        folder = next(p for p in (filled / ".memsearch").iterdir() if (p / "catalog.json").exists())
        before = json.loads(memsearch("sixteen sinks placement", "--json").stdout)["hits"][0]
        assert before["entry"]["id"] == "L-001" and before["signals"]["lexical"] > 0
        arrays = dict(np.load(folder / "bm25.npz"))
        arrays["weights"] = np.zeros_like(arrays["weights"])
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        (folder / "bm25.npz").write_bytes(buffer.getvalue())
        vocab = json.loads((folder / "bm25-vocab.json").read_text())
        (folder / "bm25-vocab.json").write_text(json.dumps({**vocab, "recipe": "k1=1.2 b=0.75 title=2"}))
        after = json.loads(memsearch("sixteen sinks placement", "--json").stdout)["hits"][0]
        assert after == before
        # a backfill with nothing to embed saves one of this recipe, so readers stop rebuilding it
        assert run("backfill").exit_code == 0
        assert json.loads((folder / "bm25-vocab.json").read_text())["recipe"] == RECIPE
        assert np.load(folder / "bm25.npz")["weights"].any()
        assert json.loads(memsearch("sixteen sinks placement", "--json").stdout)["hits"][0] == before

    def test_neighbours_move_the_ranks_from_the_cache_and_from_the_store_alike(
        self, filled: Path, run: Run, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The ranking's last step (score.neighbourly over the candidates' stored vectors) runs in the
        searcher, with the vectors from the saved cache or from Chroma itself, to the same ranks; and a
        pool under NEIGHBOUR_POOL is left as fused."""
        import numpy as np

        from memfiles.config import load_settings
        from memfiles.index import score
        from memfiles.index.search import Searcher
        from memfiles.services.indexing.index_session import open_index

        assert run("backfill").exit_code == 0
        monkeypatch.setattr(score, "NEIGHBOUR_POOL", 2)  # this project holds 6 entries
        with open_index(load_settings(filled)) as session:
            cached = session.searcher()
            assert cached.vectors is not None
            direct = Searcher(session.store, session.catalog, session.embedder, vectors=None)
            found = cached.signals("test coverage totals are wrong")
            lexical, dense = found.lexical or {}, found.dense or {}
            assert lexical and dense
            moved = cached.fused_ranks(lexical, dense, score.LEXICAL_WEIGHT)
            assert direct.fused_ranks(lexical, dense, score.LEXICAL_WEIGHT) == pytest.approx(moved)
            weight = score.NEIGHBOUR_WEIGHT
            assert weight > 0
            monkeypatch.setattr(score, "NEIGHBOUR_WEIGHT", 0.0)
            plain = cached.fused_ranks(lexical, dense, score.LEXICAL_WEIGHT)
            ids = sorted(plain)
            stored = session.store.vectors(ids)
            matrix = np.asarray([stored[i] for i in ids], dtype=np.float32)
            near = score.nearest(matrix, score.NEIGHBOURS)
            expected = score.neighbourly(np.asarray([plain[i] for i in ids]), near, weight, pool=2)
            assert [moved[i] for i in ids] == pytest.approx(expected.tolist())
            assert [moved[i] for i in ids] != pytest.approx([plain[i] for i in ids])
            monkeypatch.setattr(score, "NEIGHBOUR_WEIGHT", weight)
            monkeypatch.setattr(score, "NEIGHBOUR_POOL", len(ids) + 1)
            assert cached.fused_ranks(lexical, dense, score.LEXICAL_WEIGHT) == plain
