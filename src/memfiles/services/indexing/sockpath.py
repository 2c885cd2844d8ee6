"""Where the watcher's socket lives, on plain strings with os.path: the full client (services/indexing/ipc.py) and
the thin memsearch client (cli/quick_search.py, which imports neither pathlib nor the rest of memfiles)
must find the same path."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: the thin client imports this module
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

# sockaddr_un holds 108 bytes on Linux (104 on macOS), the final NUL included.
SOCKET_PATH_LIMIT = 104


def socket_address(index_dir: str) -> str:
    """INDEX_DIR/watch.sock; in a project so deep that this path would not fit in a socket address, a
    short one in the user's own runtime folder, named by a hash of the index folder (same for every client)."""
    path = os.path.join(index_dir, "watch.sock")
    if len(os.fsencode(path)) < SOCKET_PATH_LIMIT:
        return path
    import hashlib

    key = hashlib.sha256(os.fsencode(os.path.realpath(index_dir))).hexdigest()[:24]
    return os.path.join(str(runtime_dir()), f"{key}.sock")


def socket_file(index_dir: Path) -> Path:
    from pathlib import Path

    return Path(socket_address(str(index_dir)))


def runtime_dir() -> Path:
    """$XDG_RUNTIME_DIR/memfiles when it is set, else /tmp/memfiles-<uid>; owner-only, refused when another user
    owns it (someone could otherwise plant a socket there)."""
    import tempfile
    from pathlib import Path

    from memfiles.errors import IndexUnavailable

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


def receive_line(connection: Any) -> bytes:
    """Read from a connected socket (socket's or _socket's) until a newline or the peer closes; the bytes."""
    chunks = []
    while True:
        chunk = connection.recv(1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    return b"".join(chunks)
