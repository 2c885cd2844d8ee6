"""The watcher's local socket: one JSON line in, one JSON line out, on .memsearch/watch.sock.

The client side imports only the standard library, so a `memsearch` that finds a watcher running
never loads numpy, torch or chromadb.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import socketserver
import struct
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memfiles.config import Settings
from memfiles.errors import IndexUnavailable

# sockaddr_un holds 108 bytes on Linux (104 on macOS), the final NUL included.
SOCKET_PATH_LIMIT = 104


def socket_path(settings: Settings) -> Path:
    """.memsearch/watch.sock; in a project so deep that this path would not fit in a socket address, a
    short one in the user's own runtime folder, named by a hash of the index folder (same for every client)."""
    path = settings.index_dir / "watch.sock"
    if len(os.fsencode(path)) < SOCKET_PATH_LIMIT:
        return path
    key = hashlib.sha256(os.fsencode(settings.index_dir.resolve())).hexdigest()[:24]
    return runtime_dir() / f"{key}.sock"


def runtime_dir() -> Path:
    """$XDG_RUNTIME_DIR/memfiles when it is set, else /tmp/memfiles-<uid>; owner-only, refused when another user
    owns it (someone could otherwise plant a socket there)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    folder = Path(base) / "memfiles" if base else Path(tempfile.gettempdir()) / f"memfiles-{os.getuid()}"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.lstat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise IndexUnavailable(
            f"{folder} (where the watcher's socket goes, the project path being too long for one) is not"
            " yours alone: remove it, or set XDG_RUNTIME_DIR to a private folder"
        )
    return folder


def peer_uid(connection: socket.socket) -> int | None:
    """The user id of the process at the other end of a local socket (Linux SO_PEERCRED), None if unknown."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    data = connection.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    return int(struct.unpack("3i", data)[1])


def pid_path(settings: Settings) -> Path:
    return settings.index_dir / "watch.pid"


def request(settings: Settings, payload: dict[str, Any], timeout: float = 30.0) -> dict[str, Any] | None:
    """The watcher's answer to `payload`, or None when no watcher listens here.

    Raises IndexUnavailable when a watcher listens but fails or does not answer in time.
    """
    path = socket_path(settings)
    if settings.index_url or not path.exists():
        return None
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(timeout)
    try:
        try:
            client.connect(str(path))
        except (ConnectionRefusedError, FileNotFoundError):
            return None  # a socket left by a watcher that died: nobody listens
        client.sendall(json.dumps(payload).encode("utf-8") + b"\n")
        answer = _read_line(client)
    except TimeoutError as error:
        raise IndexUnavailable(f"the watcher did not answer within {timeout:g} s") from error
    except OSError as error:
        raise IndexUnavailable(f"the watcher's socket failed: {error}") from error
    finally:
        client.close()
    if not answer.get("ok"):
        raise IndexUnavailable(f"the watcher refused: {answer.get('error', 'no reason given')}")
    return answer


def _read_line(connection: socket.socket) -> dict[str, Any]:
    chunks = []
    while True:
        chunk = connection.recv(1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    data = b"".join(chunks)
    if not data:
        raise OSError("the watcher closed the connection without answering")
    return json.loads(data)


def serve(path: Path, answer: Callable[[dict[str, Any]], dict[str, Any]]) -> socketserver.ThreadingUnixStreamServer:
    """Listen on `path` (owner-only) in a background thread; each request line gets `answer`'s reply."""
    log = logging.getLogger("memfiles.watch")
    path.unlink(missing_ok=True)  # left by a watcher that died: the caller holds the owner lock

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            uid = peer_uid(self.request)
            if uid is not None and uid != os.getuid():  # the socket is 0600; this holds even if it is not
                log.warning("refused a client of user %d: the watcher answers its owner only", uid)
                reply: dict[str, Any] = {"ok": False, "error": "refused: this watcher answers its owner's user only"}
                self.wfile.write(json.dumps(reply).encode("utf-8") + b"\n")
                return
            line = self.rfile.readline()
            try:
                reply = answer(json.loads(line))
            except Exception as error:  # one bad request must not stop the server
                log.warning("request failed: %s", error)
                reply = {"ok": False, "error": f"{type(error).__name__}: {error}"}
            try:
                self.wfile.write(json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n")
            except (BrokenPipeError, ConnectionResetError):
                log.info("a client left before its answer (%s)", reply.get("error") or "ok")

    old = os.umask(0o177)  # the socket is its owner's only
    try:
        server = socketserver.ThreadingUnixStreamServer(str(path), Handler)
    finally:
        os.umask(old)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="memfiles-socket", daemon=True).start()
    return server
