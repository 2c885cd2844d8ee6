"""What the thin clients (cli/quick_search.py for memsearch, cli/hook_entry.py for agents' hooks) share:
one request line to the watcher's socket and one answer line back, written and read with the C modules
_socket and _json only. json, socket and pathlib would each cost about as much as starting Python again,
and these clients run on every query and every hook call.
"""

from __future__ import annotations

import os

from memfiles.root import MEMORY_DIR
from memfiles.services.indexing.sockpath import receive_line


class Unanswered(Exception):
    """The watcher did not answer in time (it accepted the call and then said nothing)."""


def server_configured(root: str) -> bool:
    """Whether this project's index shares its vectors through a Chroma server (the environment or a config
    file names one): the hooks' thin client leaves those to the full command, which reads the setting
    properly (and goes through this clone's watcher all the same)."""
    if os.environ.get("MEMFILES_CHROMA_URL"):
        return True
    return any("index_url" in text for text in config_texts(root))


def config_texts(root: str) -> list[str]:
    """The text of the project's config files that exist (memory/memfiles.toml, pyproject.toml)."""
    texts = []
    for name in (os.path.join(MEMORY_DIR, "memfiles.toml"), "pyproject.toml"):
        try:
            with open(os.path.join(root, name), encoding="utf-8", errors="replace") as handle:
                texts.append(handle.read())
        except OSError:
            continue
    return texts


def encoded(value: object) -> str:
    """JSON of a request's values: strings, whole numbers, booleans, None, lists and string-keyed objects."""
    from _json import encode_basestring_ascii

    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ",".join(encoded(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{encode_basestring_ascii(str(k))}:{encoded(v)}" for k, v in value.items()) + "}"
    return encode_basestring_ascii(str(value))


class _Decoding:
    """What _json's C scanner reads its settings from (the attributes json.JSONDecoder gives it)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return float(name.lower().replace("infinity", "inf"))


def decoded(text: str) -> object:
    """The JSON value `text` holds (surrounding white space allowed); ValueError when it holds none."""
    from _json import make_scanner

    start = len(text) - len(text.lstrip())
    try:
        value, end = make_scanner(_Decoding())(text, start)
    except (StopIteration, ValueError, SystemError, RecursionError):
        # SystemError: the C scanner reports bad JSON through json.decoder, which is not imported here
        raise ValueError("not JSON") from None
    if text[end:].strip():
        raise ValueError("extra data after the JSON value")
    return value


def exchange(path: str, request: dict[str, object], timeout: float) -> object:
    """Send `request` as one line to the socket at `path` and read one line back, decoded.

    OSError when nobody listens there (the call never reached a watcher); once it has been sent,
    Unanswered for every way of not getting an answer within `timeout` seconds: silence, a closed or
    reset connection, an answer that is not JSON. A call that reached the watcher is never sent again."""
    import _socket

    line = (encoded(request) + "\n").encode("utf-8")
    client = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        client.settimeout(min(timeout, 5.0))
        client.connect(path)
        client.settimeout(timeout)
        try:
            client.sendall(line)
            data = receive_line(client)
            return decoded(data.decode("utf-8"))
        except TimeoutError:
            raise Unanswered(f"the watcher did not answer within {timeout:g} s") from None
        except (OSError, ValueError) as error:
            raise Unanswered(f"the watcher did not answer ({error or type(error).__name__})") from None
    finally:
        client.close()
