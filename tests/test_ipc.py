"""The socket client against real Unix-socket servers that misbehave as an exiting watcher does."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from memfiles.config import load_settings
from memfiles.errors import IndexUnavailable
from memfiles.services.indexing.ipc import request, serve, socket_path
from memfiles.services.indexing.sockpath import receive_line


def listener(path: Path) -> socket.socket:
    path.parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)
    return server


def drop(server: socket.socket, times: int, then=None) -> threading.Thread:
    """Accept `times` connections and close each unanswered (as a server closing its backlog), then `then`."""

    def serve() -> None:
        for _ in range(times):
            connection, _ = server.accept()
            connection.close()
        if then is not None:
            then()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def answer_once(server: socket.socket, said: bytes):
    """Accept one connection, read its request and answer `said` (bytes, as they are)."""

    def answer() -> None:
        connection, _ = server.accept()
        with connection:
            connection.recv(1 << 16)
            connection.sendall(said)

    return answer


def test_a_watcher_that_drops_the_request_and_goes_is_no_watcher(root: Path) -> None:
    """The watcher closed the connection unanswered and its socket file is gone a moment later (its idle
    exit, or a stop): the client reads that as "no watcher", so the command goes on without one."""
    settings = load_settings(root)
    path = socket_path(settings)
    server = listener(path)

    def leave() -> None:
        server.close()
        path.unlink()

    thread = drop(server, 1, then=leave)
    assert request(settings, {"op": "ping"}, timeout=10) is None
    thread.join(10)


def test_a_watcher_that_keeps_dropping_requests_is_an_error(root: Path) -> None:
    """A watcher still there that drops the request twice is a failing watcher, said as such."""
    settings = load_settings(root)
    server = listener(socket_path(settings))
    thread = drop(server, 2)
    with pytest.raises(IndexUnavailable, match="socket failed"):
        request(settings, {"op": "ping"}, timeout=10)
    thread.join(10)
    server.close()


def test_a_dropped_request_is_asked_again_of_the_watcher_that_is_there(root: Path) -> None:
    """Dropped once, then answered (a new watcher took the socket): the client gets that answer."""
    settings = load_settings(root)
    server = listener(socket_path(settings))

    thread = drop(server, 1, then=answer_once(server, b'{"ok": true, "pid": 7}\n'))
    assert request(settings, {"op": "ping"}, timeout=10) == {"ok": True, "pid": 7}
    thread.join(10)
    server.close()


@pytest.mark.parametrize("said", [b"not json\n", b"[1, 2]\n", b"\xff\xfe\n"])
def test_an_answer_that_is_not_a_json_object_is_said_as_such(root: Path, said: bytes) -> None:
    """A process on the socket that answers something else: IndexUnavailable naming it, no traceback."""
    settings = load_settings(root)
    server = listener(socket_path(settings))

    thread = drop(server, 0, then=answer_once(server, said))
    with pytest.raises(IndexUnavailable, match="answer is not"):
        request(settings, {"op": "ping"}, timeout=10)
    thread.join(10)
    server.close()


def test_the_server_answers_every_line_in_one_codec(root: Path) -> None:
    """serve(): a request that is not one JSON object gets a refusal and the server goes on; any text,
    lone surrogates included (an undecodable file name travels so), comes back as it went; an answer
    that is not JSON is a refusal too, not a dropped line the client would send again."""
    settings = load_settings(root)
    path = socket_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    asked_for: list[str] = []

    def answer(asked: dict) -> dict:
        asked_for.append(asked["op"])
        return {"ok": True, "echo": asked["text"] if asked["op"] == "ping" else {1, 2}}

    server = serve(path, answer)
    try:
        for line in (b"[1]\n", b"{\n", b"\xff\n"):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.settimeout(10)
                client.connect(str(path))
                client.sendall(line)
                answer = json.loads(receive_line(client))
            assert answer["ok"] is False and answer["error"], line
        text = "caf\u00e9 \u2014 \U0001f600 \udcff"
        assert request(settings, {"op": "ping", "text": text}, timeout=10) == {"ok": True, "echo": text}
        with pytest.raises(IndexUnavailable, match="refused: TypeError"):
            request(settings, {"op": "sync", "text": ""}, timeout=10)
        assert asked_for == ["ping", "sync"]  # asked once
    finally:
        server.shutdown()
        server.server_close()
