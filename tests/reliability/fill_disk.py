"""Run inside a private mount namespace with a small tmpfs at argv[1] (test_disk_full.py starts it):
a project on that filesystem, then writes at many fill levels. Prints one JSON object: what each level did.

At each level the disk is filled to leave `free` bytes, a batch is imported, and the state is read:
the command must exit 0 or fail with a clear message (no traceback); every file must parse and hold
its old or its new text whole; a batch left in the journal must be finished by the next write once
space is freed, and then the receipt must say whether the batch happened.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
LEVELS = [0, 512, 4096, 8192, 16384, 24576, 32768, 49152, 65536, 98304, 131072, 196608, 262144, 393216, 786432]
JOURNAL = Path(".memfiles") / "journal.json"


def memfiles(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMFILES_INDEX_TIMEOUT": "300"}
    return subprocess.run([str(BIN / "memfiles"), "--root", str(root), *args], capture_output=True, text=True, env=env)


def hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(".tmp") and "receipts" not in p.parts and p.name != "write.lock"
    }


def fill(mount: Path, leave: int) -> Path:
    """A filler file that leaves about `leave` bytes free on the filesystem."""
    filler = mount / "filler"
    filler.unlink(missing_ok=True)
    stat = os.statvfs(mount)
    size = max(0, stat.f_bavail * stat.f_frsize - leave)
    with open(filler, "wb") as out:
        try:
            out.truncate(0)
            chunk = b"\0" * 65536
            while size > 0:
                size -= out.write(chunk[: min(size, len(chunk))])
            out.flush()
            os.fsync(out.fileno())
        except OSError:
            pass
    return filler


def batch(path: Path, level: int) -> Path:
    ops = [
        {"op": "add", "kind": "lesson", "title": f"Level {level} lesson {n}", "area": "disk", "body": "Text. " * 40}
        for n in range(30)
    ]
    path.write_text(json.dumps({"ops": ops}))
    return path


def main() -> None:
    from memfiles.config import load_settings
    from memfiles.store.journal import Journal
    from memfiles.store.project import Project

    mount = Path(sys.argv[1])
    root = mount / "project"
    (root / "memory").mkdir(parents=True)
    outside = Path(sys.argv[2])  # batches live off the small filesystem
    seed = memfiles(root, "import", str(batch(outside / "seed.json", -1)))
    assert seed.returncode == 0, seed.stderr
    levels = []
    for level, free in enumerate(LEVELS):
        before = hashes(root)
        journal = root / JOURNAL
        journal_before = journal.read_bytes() if journal.exists() else None
        filler = fill(mount, free)
        done = memfiles(root, "import", str(batch(outside / f"b{level}.json", level)), "--request-id", f"level-{level}")
        after = hashes(root)
        project = Project(load_settings(root))
        _files, problems = project.load_all()
        changed = sorted(k for k in after if before.get(k) != after[k])
        outcome = {
            "free": free,
            "exit": done.returncode,
            "message": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "",
            "traceback": "Traceback" in done.stderr,
            "unparseable": [p.located() for p in problems],
            "changed": changed,
            "journal_pending": journal.exists(),
            "old_journal_kept": journal_before is None
            or not journal.exists()
            or journal.read_bytes() == journal_before,
        }
        filler.unlink()
        # With space again, the next writer finishes what was journaled; the receipt says whether it happened.
        (outside / "noop.json").write_text('{"ops": []}')
        finish = memfiles(root, "import", str(outside / "noop.json"))
        outcome["finish_exit"] = finish.returncode
        receipt = Journal(load_settings(root).state_dir, root).receipt(f"level-{level}")
        titles = [
            loc.entry.title
            for loc in Project(load_settings(root)).entries()
            if loc.entry.title.startswith(f"Level {level} ")
        ]
        outcome["applied"] = receipt is not None
        outcome["entries_of_batch"] = len(titles)
        outcome["whole_or_nothing"] = len(titles) == (30 if receipt is not None else 0)
        levels.append(outcome)
    print(json.dumps({"levels": levels}))


if __name__ == "__main__":
    main()
