"""The watcher's local socket: owner-only, a client of another user refused (by file mode, and by the
peer's credentials when the mode is loosened), nothing listening on a network interface, and a project
path too deep for a socket address still served (through a short path in the user's runtime folder)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from memfiles.config import load_settings
from memfiles.services.indexing.ipc import SOCKET_PATH_LIMIT, pid_path, socket_path
from tests.reliability.conftest import cli, memsearch, no_traceback, ops_file
from tests.reliability.faults import wait_for_watcher

pytestmark = pytest.mark.integration
PROBE_USER = "memfiles-probe"


def _other_uid() -> int:
    """A second, unprivileged user: created with useradd when it does not exist (the tests run as root)."""
    if os.geteuid() != 0:
        pytest.skip("a second uid needs root to switch to it; run as root (CI does)")
    try:
        return pwd.getpwnam(PROBE_USER).pw_uid
    except KeyError:
        pass
    if shutil.which("useradd") is None:
        return 65534  # nobody: exists everywhere, owns nothing here
    subprocess.run(["useradd", "--system", "--no-create-home", PROBE_USER], check=True, capture_output=True)
    return pwd.getpwnam(PROBE_USER).pw_uid


def _as_user(uid: int, path: Path) -> str:
    """Connect to the socket at `path` as `uid` in a forked child and send a ping; what happened, as text."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        os.close(read)
        outcome = ""
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.settimeout(30)
            client.connect(str(path))
            client.sendall(b'{"op": "ping"}\n')
            outcome = client.recv(65536).decode()
        except OSError as error:
            outcome = f"OSError {error.errno} {error.strerror}"
        os.write(write, outcome.encode())
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.close(read)
    os.waitpid(child, 0)
    return data.decode()


@pytest.fixture
def open_root() -> Iterator[Path]:
    """A project under a folder every user may traverse (pytest's own temp folders are 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="memfiles-sec-"))
    folder.chmod(0o755)
    (folder / "memory").mkdir()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _listening_inodes() -> set[str]:
    inodes = set()
    for table in ("tcp", "tcp6", "udp", "udp6"):
        try:
            lines = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            listening = fields[3] == "0A" if table.startswith("tcp") else fields[3] == "07"
            if listening:
                inodes.add(fields[9])
    return inodes


def _socket_inodes(pid: int) -> set[str]:
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(target[8:-1])
    return found


def test_socket_owner_only_other_user_refused_no_network(open_root: Path, tmp_path: Path) -> None:
    """The socket is 0600 and a second uid cannot connect; loosened to 0666, the watcher still refuses that
    uid by its credentials; the watcher has no TCP or UDP socket listening."""
    uid = _other_uid()
    cli(open_root, "import", str(ops_file(tmp_path / "seed.json", 5)))
    cli(open_root, "backfill")
    cli(open_root, "watch")
    try:
        wait_for_watcher(open_root)
        settings = load_settings(open_root)
        path = socket_path(settings)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert "OSError 13" in _as_user(uid, path)  # EACCES: the file mode keeps the other user out
        path.chmod(0o666)
        answer = _as_user(uid, path)
        refusal = json.loads(answer)
        assert refusal["ok"] is False and "owner" in refusal["error"], answer
        assert json.loads(memsearch(open_root, "D-001", "--json").stdout)["hits"]  # the owner is still served
        pid = int(pid_path(settings).read_text())
        assert not (_socket_inodes(pid) & _listening_inodes()), "the watcher listens on a network socket"
    finally:
        cli(open_root, "watch", "--stop", check=False)


def test_deep_project_path_gets_a_short_socket(tmp_path: Path) -> None:
    """A project whose .memsearch/watch.sock would pass the 108-byte socket limit is served all the same."""
    deep = tmp_path
    while len(os.fsencode(deep / ".memsearch" / "watch.sock")) < SOCKET_PATH_LIMIT + 40:
        deep = deep / "a-rather-long-folder-name"
    (deep / "memory").mkdir(parents=True)
    cli(deep, "import", str(ops_file(tmp_path / "seed.json", 5)))
    cli(deep, "backfill")
    started = cli(deep, "watch", check=False)
    no_traceback(started.stderr)
    assert started.returncode == 0, started.stderr
    try:
        wait_for_watcher(deep)
        path = socket_path(load_settings(deep))
        assert len(os.fsencode(path)) < SOCKET_PATH_LIMIT and path.exists()
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        status = json.loads(cli(deep, "status", "--json").stdout)
        assert status["watcher"]["running"] is True
        assert json.loads(memsearch(deep, "D-001", "--json").stdout)["hits"][0]["entry"]["id"] == "D-001"
    finally:
        stopped = cli(deep, "watch", "--stop", check=False)
    assert stopped.returncode == 0 and not socket_path(load_settings(deep)).exists()
