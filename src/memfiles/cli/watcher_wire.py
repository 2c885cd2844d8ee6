"""What the thin clients (cli/quick_search.py for memsearch, cli/hook_entry.py for agents' hooks) share:
one request line to the watcher's socket and one answer line back, through the C module _socket and the
product's one JSON codec (memfiles/jsonline.py). socket and pathlib would each cost about as much as
starting Python again, and these clients run on every query and every hook call.
"""

from __future__ import annotations

from memfiles.jsonline import dumps, loads
from memfiles.services.indexing.sockpath import receive_line


class Unanswered(Exception):
    """The watcher did not answer in time (it accepted the call and then said nothing)."""


def exchange(path: str, request: dict[str, object], timeout: float) -> object:
    """Send `request` as one line to the socket at `path` and read one line back, decoded.

    OSError when nobody listens there (the call never reached a watcher); once it has been sent,
    Unanswered for every way of not getting an answer within `timeout` seconds: silence, a closed or
    reset connection, an answer that is not JSON. A call that reached the watcher is never sent again."""
    import _socket

    line = (dumps(request) + "\n").encode("ascii")
    client = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        client.settimeout(min(timeout, 5.0))
        client.connect(path)
        client.settimeout(timeout)
        try:
            client.sendall(line)
            data = receive_line(client)
            return loads(data)
        except TimeoutError:
            raise Unanswered(f"the watcher did not answer within {timeout:g} s") from None
        except (OSError, ValueError) as error:
            raise Unanswered(f"the watcher did not answer ({error or type(error).__name__})") from None
    finally:
        client.close()
