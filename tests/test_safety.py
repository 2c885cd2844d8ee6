"""Safety of the write path across processes: the lock, atomic writes, the journal after a crash."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memfiles.config import load_settings
from memfiles.services.upkeep.check import check_project
from memfiles.store.project import Project

ADDER = """
import sys
from click.testing import CliRunner
from memfiles.cli.main import cli
root, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
runner = CliRunner()
for n in range(count):
    result = runner.invoke(cli, ["--root", root, "add", "-k", "decision", "-t", f"w{worker} n{n}", "-a", "race",
                                 "--body", f"From worker {worker}, entry {n}."])
    assert result.exit_code == 0, result.output
    print(result.stdout.strip(), flush=True)
"""


@pytest.mark.slow
class TestConcurrentWriters:
    def test_eight_processes_adding_fifty_each(self, root: Path, tmp_path: Path) -> None:
        """8 processes x 50 adds at once: 400 entries, 400 distinct ids, every file passes check."""
        script = tmp_path / "adder.py"
        script.write_text(ADDER)
        procs = [
            subprocess.Popen([sys.executable, str(script), str(root), str(w), "50"], stdout=subprocess.PIPE, text=True)
            for w in range(8)
        ]
        printed = []
        for proc in procs:
            out, _ = proc.communicate(timeout=300)
            assert proc.returncode == 0
            printed.extend(out.split())
        assert len(printed) == 400 and len(set(printed)) == 400
        project = Project(load_settings(root))
        ids = [located.entry.id for located in project.entries()]
        assert sorted(ids) == sorted(printed)
        problems, _count = check_project(project)
        assert problems == []


KILLER = """
import sys
from memfiles.config import load_settings
from memfiles.services.write import write_ops
from memfiles.store.ops import parse_ops
from memfiles.store.project import Project
root = sys.argv[1]
settings = load_settings(root)
project = Project(settings)
n = 0
print("ready", flush=True)
while True:
    ops = [{"op": "add", "kind": k, "title": f"{k} {n}", "area": "crash", "body": "x " * 400} for k in ("D", "F", "L")]
    write_ops(project, parse_ops({"ops": ops}, settings.schema))
    n += 1
"""


@pytest.mark.slow
class TestCrash:
    def test_kill_mid_write_leaves_every_file_parseable(self, root: Path, tmp_path: Path) -> None:
        """A writer killed with SIGKILL at random moments never leaves a torn or inconsistent file behind."""
        script = tmp_path / "killer.py"
        script.write_text(KILLER)
        for delay in (0.3, 0.45, 0.6, 0.75, 0.9):
            proc = subprocess.Popen([sys.executable, str(script), str(root)], stdout=subprocess.PIPE, text=True)
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            time.sleep(delay)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            project = Project(load_settings(root))
            _files, errors = project.load_all()
            assert errors == []
        # The next writer finishes any batch a kill interrupted; then the three files agree.
        settings = load_settings(root)
        from memfiles.services.write import write_ops
        from memfiles.store.ops import parse_ops

        write_ops(Project(settings), parse_ops({"ops": []}, settings.schema))
        assert not (settings.state_dir / "journal.json").exists()
        problems, _ = check_project(Project(settings))
        assert problems == []
        counts = {}
        for located in Project(settings).entries():
            counts[located.entry.prefix] = counts.get(located.entry.prefix, 0) + 1
        assert len(set(counts.values())) == 1, counts  # every batch of 3 landed whole or not at all
        # the id marks are written in the same journaled batch: they agree with the files after any kill
        from memfiles.store.id_marks import MarksFile

        marks = MarksFile(settings.memory_dir).read()
        assert marks is not None and marks.high == counts
        assert all(not name.endswith(".tmp") for name in os.listdir(root / "memory"))


class TestJournal:
    def test_interrupted_batch_is_finished_by_the_next_writer(self, root: Path) -> None:
        """A journal left by a crash between two file replacements is replayed under the lock."""
        from memfiles.store.journal import Journal

        settings = load_settings(root)
        journal = Journal(settings.state_dir, root)
        (root / "memory" / "a.md").write_text("old a")
        settings.state_dir.mkdir()
        from memfiles.store.journal import digest

        record = {
            "request_id": "r1",
            "result": {"result": {"added": ["X"], "updated": [], "retired": [], "pruned": []}},
            "files": {
                "memory/a.md": {"before": digest("old a"), "after": "new a"},
                "memory/b.md": {"before": None, "after": "new b"},
            },
        }
        (settings.state_dir / "journal.json").write_text(json.dumps(record))
        assert journal.recover() is True
        assert (root / "memory" / "a.md").read_text() == "new a"
        assert (root / "memory" / "b.md").read_text() == "new b"
        assert journal.receipt("r1") == record["result"]

    def test_journal_refuses_to_overwrite_a_file_changed_since(self, root: Path) -> None:
        """If a file no longer holds the batch's old text, replay stops with a clear message."""
        from memfiles.errors import MemfilesError
        from memfiles.store.journal import Journal, digest

        settings = load_settings(root)
        settings.state_dir.mkdir()
        (root / "memory" / "a.md").write_text("edited by hand")
        record = {"request_id": None, "result": {}, "files": {"memory/a.md": {"before": digest("old"), "after": "x"}}}
        (settings.state_dir / "journal.json").write_text(json.dumps(record))
        with pytest.raises(MemfilesError, match="changed while a batch was being written"):
            Journal(settings.state_dir, root).recover()
        assert (root / "memory" / "a.md").read_text() == "edited by hand"


class TestLock:
    def test_lock_times_out_with_a_clear_message(self, root: Path) -> None:
        """A writer that cannot get the lock in time says who holds it."""
        from memfiles.errors import LockTimeout
        from memfiles.store.lock import FileLock

        path = root / ".memfiles" / "write.lock"
        with FileLock(path), pytest.raises(LockTimeout, match=f"pid {os.getpid()}") as caught:
            FileLock(path, timeout=0.1).acquire()
        assert str(caught.value).startswith("the memory files are busy: another process")
        with FileLock(path), pytest.raises(LockTimeout, match=r"^the index is busy: "):
            FileLock(path, timeout=0.0, busy="the index is busy").acquire()


@pytest.mark.parametrize("command", [("list",), ("status",), ("show", "D-001", "--json")])
def test_a_reader_that_leaves_early_is_no_error(root: Path, command: tuple[str, ...]) -> None:
    """`memfiles list | head -1`: the pipe closed before the output is written is exit 1 in silence
    (as memsearch and click do), not `memfiles: broken pipe` with exit 2."""
    env = {**os.environ, "MEMFILES_SEARCH_WATCH": "0"}
    cli = [sys.executable, "-m", "memfiles.cli", "--root", str(root)]
    subprocess.run([*cli, "add", "-k", "D", "-t", "One", "-a", "a", "--body", "b"], env=env, check=True)
    child = subprocess.Popen([*cli, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # before the child has started Python: its first write meets a closed pipe
    said = child.stderr.read().decode()
    assert child.wait(timeout=60) == 1 and said == "", said
