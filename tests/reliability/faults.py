"""Helpers of the fault tests that are not fixtures: kill points, a record of the figures, the index as a
fresh process reads it, a fresh copy of a project."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from memfiles.config import load_settings
from memfiles.services.indexing.ipc import request
from memfiles.store.batch import Batch
from memfiles.store.project import Project

SEED = int(os.environ.get("MEMFILES_FAULT_SEED", "20261130"))
REPORT = os.environ.get("MEMFILES_FAULT_REPORT")  # a JSON-lines file the figures of each test are appended to


def rng(name: str) -> random.Random:
    """Random kill points, reproducible per test (MEMFILES_FAULT_SEED changes them all)."""
    return random.Random(f"{SEED}:{name}")


def record(test: str, **figures: Any) -> None:
    """Print the figures of a run (pytest -s shows them) and append them to MEMFILES_FAULT_REPORT."""
    line = json.dumps({"test": test, "when": time.strftime("%Y-%m-%d %H:%M"), **figures})
    print(f"\nFIGURES {line}", file=sys.stderr)
    if REPORT:
        with open(REPORT, "a", encoding="utf-8") as out:
            out.write(line + "\n")


def kill_after(proc: subprocess.Popen, delay: float) -> bool:
    """SIGKILL `proc` after `delay` seconds; True when it was still running (a real crash point)."""
    try:
        proc.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True


def finish_pending(root: Path) -> str:
    """What the next writer does first: finish a batch a killed writer left in the journal. Returns where the
    kill landed: "before" (no journal: nothing was written), "inside" (a journal was finished), "after"."""
    batch = Batch(Project(load_settings(root)))
    pending = batch.journal.path.exists()
    with batch.lock():
        batch.journal.recover()
    return "inside" if pending else "outside"


STATE = """
import json, sys
from memfiles.config import load_settings
from memfiles.services.indexing.index_session import open_index
settings = load_settings(sys.argv[1])
with open_index(settings, timeout=600, create=False) as session:
    stored = session.store.all_metadata()
    catalog = session.catalog
    stamp = session.store.stamp()
    print(json.dumps({"store": stored, "catalog": {i: d.hash for i, d in catalog.docs.items()},
                      "in_step": stamp.steady and catalog.generation == stamp.generation}))
"""


def index_state(root: Path) -> dict[str, Any]:
    """The store's metadata by id and the catalog a reader gets, as a fresh process sees them."""
    done = subprocess.run(
        [sys.executable, "-c", STATE, str(root)], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def copy_project(source: Path, target: Path) -> Path:
    """A copy of a project (memory files and index), as a crash point's fresh start."""
    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns("watch.sock", "watch.pid", "*.lock"))
    return target


def wait_for_watcher(root: Path, timeout: float = 600) -> dict[str, Any]:
    settings = load_settings(root)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            answer = request(settings, {"op": "ping"}, timeout=5)
        except Exception:
            answer = None
        if answer is not None and answer.get("ready"):
            return answer
        time.sleep(0.1)
    raise AssertionError(f"the watcher did not come up within {timeout} s")


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_chroma(data: Path, port: int) -> subprocess.Popen:
    """A real `chroma run` on loopback, answering once its port accepts connections."""
    import socket

    binary = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    assert binary is not None, "the chroma command (from the chromadb package) is not installed"
    proc = subprocess.Popen(
        [binary, "run", "--path", str(data), "--host", "127.0.0.1", "--port", str(port)],
        env={**os.environ, "RUST_LOG": "warn"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("chroma run did not start within 120 s")


class SlowProxy:
    """A TCP proxy on loopback that holds every chunk `delay` seconds before passing it on: a slow server."""

    def __init__(self, target_port: int, delay: float) -> None:
        import socket
        import threading

        self.delay = delay
        self.target = target_port
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.stopping = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while not self.stopping.is_set():
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: Any, sink: Any) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                time.sleep(self.delay)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(2)

    def close(self) -> None:
        self.stopping.set()
        self.server.close()
