"""The watcher's local socket: one JSON line in, one JSON line out, on .memsearch/watch.sock, written and
read by the product's one codec for its own lines (memfiles/jsonline.py), as the thin clients do.

The client side imports only the standard library, so a `memsearch` that finds a watcher running
never loads numpy, torch or chromadb.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import socketserver
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memfiles.config import Settings
from memfiles.errors import IndexUnavailable
from memfiles.jsonline import dumps, loads
from memfiles.limits import REQUEST_LIMIT
from memfiles.services.indexing.sockpath import SOCKET_PATH_LIMIT as SOCKET_PATH_LIMIT
from memfiles.services.indexing.sockpath import receive_line, socket_file
from memfiles.services.indexing.sockpath import runtime_dir as runtime_dir

DISCARD_LIMIT = 16 * REQUEST_LIMIT  # bytes of a refused request read and dropped before the connection closes


def socket_path(settings: Settings) -> Path:
    """.memsearch/watch.sock, or a short path when that one would not fit (services/indexing/sockpath.py)."""
    return socket_file(settings.index_dir)


def peer_uid(connection: socket.socket) -> int | None:
    """The user id of the process at the other end of a local socket (Linux SO_PEERCRED), None if unknown."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    data = connection.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    return int(struct.unpack("3i", data)[1])


def pid_path(settings: Settings) -> Path:
    return settings.index_dir / "watch.pid"


class _Left(OSError):
    """The watcher took the connection and closed it without answering (it was shutting down)."""


def request(settings: Settings, payload: dict[str, Any], timeout: float = 30.0) -> dict[str, Any] | None:
    """The watcher's answer to `payload`, or None when no watcher listens here.

    A watcher that drops the connection unanswered and is gone a moment later was exiting (stopped, or
    its idle exit): that is no watcher, and the caller goes on without it. One that is still there (or a
    new one) is asked once more. Raises IndexUnavailable when a watcher listens but fails or does not
    answer in time.
    """
    path = socket_path(settings)
    for attempt in range(2):
        if not path.exists():
            return None
        try:
            answer = _ask(path, payload, timeout)
        except _Left as error:
            if attempt:
                raise IndexUnavailable(f"the watcher's socket failed: {error}") from error
            threading.Event().wait(0.2)  # its exit removes the socket file right after closing it
            continue
        if answer is None or answer.get("gone"):  # gone: a watcher exiting because it is stale (watcher.stale)
            return None
        if not answer.get("ok"):
            raise IndexUnavailable(f"the watcher refused: {answer.get('error', 'no reason given')}")
        return answer
    return None  # unreachable: the second attempt returns or raises


def _ask(path: Path, payload: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    """One exchange; None when nobody listens. Raises _Left, or IndexUnavailable on a timeout or failure."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(timeout)
    try:
        try:
            client.connect(str(path))
        except (ConnectionRefusedError, FileNotFoundError):
            return None  # a socket left by a watcher that died: nobody listens
        client.sendall(_line(payload))
        return _read_line(client)
    except (ConnectionResetError, BrokenPipeError, _Left) as error:
        raise _Left(str(error)) from error
    except TimeoutError as error:
        raise IndexUnavailable(f"the watcher did not answer within {timeout:g} s") from error
    except OSError as error:
        raise IndexUnavailable(f"the watcher's socket failed: {error}") from error
    finally:
        client.close()


def _read_line(connection: socket.socket) -> dict[str, Any]:
    data = receive_line(connection)
    if not data:
        raise _Left("the watcher closed the connection without answering")
    try:
        answer = loads(data)
    except ValueError as error:
        raise IndexUnavailable(f"the watcher's answer is not JSON ({error})") from None
    if not isinstance(answer, dict):
        raise IndexUnavailable("the watcher's answer is not a JSON object")
    return answer


def _line(value: dict[str, Any]) -> bytes:
    """One line of the protocol (services/indexing/protocol.py): JSON in ASCII, ended by a newline."""
    return dumps(value).encode("ascii") + b"\n"


def _discard_line(connection: socket.socket, reader: Any, read: bytes) -> None:
    """Read the rest of a refused request line in pieces, keeping none of it, for at most DISCARD_LIMIT
    bytes and 5 s between pieces: a client still writing it gets the refusal, not a broken pipe (the
    hooks' thin client then answers the call in its own process)."""
    connection.settimeout(5)
    taken = len(read)
    while not read.endswith(b"\n") and taken < DISCARD_LIMIT:
        read = reader.readline(1 << 20)
        if not read:
            return
        taken += len(read)


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
                try:  # read its request first (never acted on): a reply and close before it is sent breaks its pipe
                    self.request.settimeout(5)
                    self.rfile.readline(REQUEST_LIMIT)  # a hook call carries a tool's output: read it all
                    self.wfile.write(_line(reply))
                except OSError:
                    pass
                return
            line = self.rfile.readline(REQUEST_LIMIT + 1)
            if len(line) > REQUEST_LIMIT:  # refused: no client takes more memory than that
                log.warning("refused a request of more than %d bytes", REQUEST_LIMIT)
                reply = {
                    "ok": False,
                    "error": f"the request is larger than {REQUEST_LIMIT:,} bytes (docs/json.md#limits)",
                }
                with contextlib.suppress(OSError):
                    _discard_line(self.request, self.rfile, line)  # so that the client reads the refusal
                    self.wfile.write(_line(reply))
                return
            try:
                request = loads(line)
                if not isinstance(request, dict):
                    raise ValueError("a request is one JSON object")
                reply = answer(request)
                said = _line(reply)
            except Exception as error:  # one bad request (or an answer that is not JSON) must not stop the server
                log.warning("request failed: %s", error)
                reply = {"ok": False, "error": f"{type(error).__name__}: {error}"}
                said = _line(reply)
            try:
                self.wfile.write(said)
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
