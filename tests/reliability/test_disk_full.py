"""A full disk: writes fail with a clear message naming the file, and every previous file (the journal
included) is left whole; the next write, once there is space, finishes or forgets the batch as the
receipt says.

Two ways: a real size-limited filesystem (a 4 MB tmpfs mounted in a private mount namespace with
`unshare -m`, which needs root, as CI runs) filled to many levels; and a simulated ENOSPC (a
sitecustomize that makes the Nth fsync fail) that runs anywhere and hits every write of a batch in turn.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability.conftest import cli, intact, no_traceback, ops_file
from tests.reliability.faults import record

HERE = Path(__file__).parent


def _can_mount() -> str | None:
    """None when a private tmpfs can be mounted here, else why not."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    if shutil.which("unshare") is None:
        return "no unshare command"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt && umount /mnt"],
        capture_output=True,
        text=True,
    )
    return None if probe.returncode == 0 else f"cannot mount a tmpfs in a mount namespace: {probe.stderr.strip()}"


def test_writes_on_a_full_tmpfs(tmp_path: Path) -> None:
    """Imports at 15 fill levels of a 4 MB tmpfs: exit 0 or a clear 'cannot write' error, nothing torn."""
    why = _can_mount()
    if why:
        pytest.skip(why)
    mount = tmp_path / "small"
    mount.mkdir()
    outside = tmp_path / "batches"
    outside.mkdir()
    script = 'mount -t tmpfs -o size=4m tmpfs "$1" && exec "$2" "$3" "$1" "$4"'
    done = subprocess.run(
        [
            "unshare",
            "-m",
            "sh",
            "-c",
            script,
            "sh",
            str(mount),
            sys.executable,
            str(HERE / "fill_disk.py"),
            str(outside),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(HERE.parents[1] / "src")},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    levels = json.loads(done.stdout)["levels"]
    failed = [level for level in levels if level["exit"] != 0]
    for level in levels:
        assert not level["traceback"], level
        assert level["unparseable"] == [], level
        assert level["old_journal_kept"], level
        assert level["finish_exit"] == 0, level
        assert level["whole_or_nothing"], level
        if level["exit"] != 0:
            assert level["exit"] == 2 and "cannot write" in level["message"] and "No space left" in level["message"]
    assert failed, "no fill level made the write fail: the filesystem was not small enough"
    assert any(level["exit"] == 0 for level in levels), "no fill level let the write through"
    record(
        "disk-full-tmpfs",
        levels=len(levels),
        refused=len(failed),
        refused_with_journal_pending=sum(level["journal_pending"] for level in failed),
        tracebacks=sum(level["traceback"] for level in levels),
        torn_files=sum(len(level["unparseable"]) for level in levels),
        not_whole_or_nothing=sum(not level["whole_or_nothing"] for level in levels),
    )


SITE = """
import errno, os
_after = int(os.environ.get("MEMFILES_FAKE_ENOSPC_AFTER", "-1"))
_real = os.fsync
_calls = [0]
def fsync(fd):
    _calls[0] += 1
    if _after >= 0 and _calls[0] > _after:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return _real(fd)
os.fsync = fsync
"""


def test_simulated_enospc_at_every_write_of_a_batch(root: Path, tmp_path: Path) -> None:
    """fsync failing with ENOSPC at the 1st, 2nd, ... write of a batch: a clear error and nothing torn, each time."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE)
    cli(root, "import", str(ops_file(tmp_path / "seed.json", 30)))
    batch = ops_file(tmp_path / "batch.json", 9, start=100)
    outcomes = []
    for after in range(12):
        env = {"PYTHONPATH": str(site), "MEMFILES_FAKE_ENOSPC_AFTER": str(after)}
        done = cli(root, "import", str(batch), "--request-id", f"r{after}", env=env, check=False)
        no_traceback(done.stderr)
        outcomes.append(done.returncode)
        if done.returncode:
            assert done.returncode == 2 and "No space left on device" in done.stderr, done.stderr
        intact(root)
        cli(root, "import", str(ops_file(tmp_path / "none.json", 0)))  # the next writer finishes a journaled batch
        applied = (root / ".memfiles").exists() and any((root / ".memfiles" / "receipts").glob("*.json"))
        ids = intact(root)
        assert len(ids) in (30 + 9 * n for n in range(after + 2)), len(ids)
        assert applied or done.returncode
    assert 2 in outcomes and 0 in outcomes
    record("disk-full-simulated", fsync_failure_points=len(outcomes), refused=outcomes.count(2), tracebacks=0)
