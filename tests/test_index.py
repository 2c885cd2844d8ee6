"""The semantic index with real parts: the bundled model, a real Chroma store (embedded and server)."""

from __future__ import annotations

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

from tests.conftest import Run

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


def ids_of(result) -> list[str]:
    assert result.exit_code == 0, result.output
    return [hit["id"] for hit in json.loads(result.stdout)]


class TestSearch:
    def test_no_index_is_a_clear_error(self, filled: Path, memsearch) -> None:
        """Before any backfill: exit 2 and a message naming memfiles backfill."""
        result = memsearch("coverage")
        assert result.exit_code == 2 and "memfiles backfill" in result.stderr

    def test_meaning_matches_without_shared_words(self, filled: Path, run: Run, memsearch) -> None:
        """'coverage aggregation' finds the entry about batch files and the coverage map first."""
        assert run("backfill").exit_code == 0
        assert ids_of(memsearch("how do we aggregate test coverage?", "--json"))[0] == "F-001"
        assert ids_of(memsearch("who owns the vector database process", "--json"))[0] == "F-002"

    def test_ids_flags_and_rare_terms_hit_exactly(self, filled: Path, run: Run, memsearch) -> None:
        """An id comes first; a flag and a rare token find the entry that holds them."""
        run("backfill")
        assert ids_of(memsearch("K-001", "--json"))[0] == "K-001"
        assert ids_of(memsearch("--json", "--", "--max-fanout"))[0] == "L-001"  # -- ends the options
        assert ids_of(memsearch("PersistentClient", "--json"))[0] == "F-002"

    def test_filters_combine_and_json_has_the_fields(self, filled: Path, run: Run, memsearch) -> None:
        """--kind, --area, --status, --path and --since are ANDed; --json carries the promised fields."""
        run("backfill")
        hits = json.loads(memsearch("anything about operations", "--kind", "todo", "--json").stdout)
        assert [h["id"] for h in hits] == ["T-001"]
        assert set(hits[0]) >= {"id", "score", "title", "kind", "area", "status", "date", "path", "line", "text"}
        assert ids_of(memsearch("operations", "--area", "ops", "--kind", "fact", "--json")) == ["K-001"]
        assert ids_of(memsearch("coverage", "--kind", "F", "--status", "resolved", "--json")) == []
        assert ids_of(memsearch("coverage", "--path", "memory/friction*", "--json"))[:2] in (["F-001", "F-002"],)
        assert ids_of(memsearch("coverage", "--since", "2999-01-01", "--json")) == []
        empty = memsearch("coverage", "--since", "2999-01-01")
        assert empty.exit_code == 0 and "no entries match" in empty.stderr

    def test_batch_answers_each_line(self, filled: Path, run: Run, memsearch, root: Path) -> None:
        """--batch: one {"id", "hits"} line per query line; a bad line names its number, exit 2."""
        run("backfill")
        batch = root / "q.jsonl"
        batch.write_text('{"id": "a", "query": "coverage map", "k": 2}\n{"id": 7, "query": "signing keys"}\n')
        lines = [json.loads(line) for line in memsearch("--batch", str(batch)).stdout.splitlines()]
        assert [item["id"] for item in lines] == ["a", 7]
        assert len(lines[0]["hits"]) == 2 and lines[1]["hits"][0]["id"] == "D-001"
        batch.write_text('{"id": "a", "query": "x"}\n{"query": 5}\n')
        bad = memsearch("--batch", str(batch))
        assert bad.exit_code == 2 and "q.jsonl:2" in bad.stderr


class TestBackfillAndWritePath:
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

    def test_unreachable_index_costs_one_warning(self, filled: Path, run: Run, root: Path) -> None:
        """With the index URL on a closed port the write succeeds within the timeout; backfill repairs later."""
        run("backfill")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        from click.testing import CliRunner

        from memfiles.cli.main import cli

        start = time.monotonic()
        result = CliRunner().invoke(
            cli,
            [
                "--root",
                str(root),
                "--chroma-url",
                f"http://127.0.0.1:{port}",
                "add",
                "-k",
                "D",
                "-t",
                "Written while the index was away",
                "-a",
                "x",
                "--body",
                "b",
            ],
            catch_exceptions=False,
        )
        assert time.monotonic() - start < 2.0 + 1.5
        assert result.exit_code == 0 and result.stdout.strip() == "D-002"
        assert result.stderr.count("warning") == 1 and "cannot open the index" in result.stderr
        check = run("backfill", "--check", "--json")
        assert check.exit_code == 1 and json.loads(check.stdout)["missing_or_stale"] == ["D-002"]
        run("backfill")
        assert run("backfill", "--check").exit_code == 0

    def test_rebuild_starts_from_empty(self, filled: Path, run: Run) -> None:
        """--rebuild embeds everything again."""
        run("backfill")
        assert json.loads(run("backfill", "--rebuild", "--json").stdout)["indexed"] == len(ENTRIES)


@pytest.mark.slow
class TestConcurrency:
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


class TestServerMode:
    def test_backfill_search_and_write_path_against_a_server(
        self, filled: Path, run: Run, memsearch, chroma_server: str, monkeypatch
    ) -> None:
        """The same code against `chroma run`: backfill, search, and the write path's update."""
        monkeypatch.setenv("MEMFILES_CHROMA_URL", chroma_server)
        assert json.loads(run("backfill", "--rebuild", "--json").stdout)["indexed"] == len(ENTRIES)
        assert ids_of(memsearch("how do we aggregate test coverage?", "--json"))[0] == "F-001"
        run("add", "-k", "K", "-t", "Backups are kept for thirty days", "-a", "ops", "--body", "Then deleted.")
        assert run("backfill", "--check").exit_code == 0
        assert not (filled / ".memsearch" / "chroma").exists()


class TestSearchUsage:
    def test_bad_usage_is_exit_2(self, filled: Path, memsearch) -> None:
        """A bad --since, a query and --batch together, neither, or an unknown kind: exit 2 with the reason."""
        assert "not a date" in memsearch("x", "--since", "2026-13-01").output
        assert memsearch("x", "--since", "2026-13-01").exit_code == 2
        assert memsearch("x", "--batch", "-").exit_code == 2
        assert memsearch().exit_code == 2
        unknown = memsearch("x", "--kind", "wish")
        assert unknown.exit_code == 2 and "unknown kind 'wish'" in unknown.stderr
