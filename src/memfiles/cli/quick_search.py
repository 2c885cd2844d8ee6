"""The `memsearch` entry point: when a watcher runs, a thin client that asks it over the socket and prints
the answer, importing neither click nor the format, the config or the index (a query costs little more
than starting Python); in every other case the full command (cli/search.py), unchanged.

The thin path takes only the plain form: one QUERY with -k, --kind, --area, --status, --path, --since,
--mode, --json and --root. Anything else (--batch, --help, --chroma-url, a Chroma server configured, an
option it does not know, a value it cannot read) goes to the full command, and so does every refusal
of the watcher: errors are always worded and coded by the full command. Both print through
cli/hits_text.py, so the same hits give the same bytes (tests/test_quick_search.py).
"""

from __future__ import annotations

import json
import os
import socket
import sys

from memfiles.cli.hits_text import NO_HITS, hit_lines, json_text, split_values
from memfiles.root import INDEX_DIR, MEMORY_DIR, find_root
from memfiles.services.sockpath import socket_file

VALUED = {"-k", "--kind", "--area", "--status", "--path", "--since", "--mode", "--root"}
MODES = ("hybrid", "lexical", "dense")
TIMEOUT = 60.0  # as the full command waits for the watcher (services/index_client.py)


def read_args(argv: list[str]) -> dict[str, object] | None:
    """The options of a plain memsearch call, or None when the full command must read them."""
    got: dict[str, list[str]] = {name: [] for name in VALUED}
    query = None
    as_json = False
    at = 0
    while at < len(argv):
        token = argv[at]
        at += 1
        if token == "--json":
            as_json = True
            continue
        name, value = token, None
        if token.startswith("--") and "=" in token:
            name, value = token.split("=", 1)
        elif token.startswith("-k") and len(token) > 2 and not token.startswith("--"):
            name, value = "-k", token[2:]
        if name in VALUED:
            if value is None:
                if at >= len(argv):
                    return None
                value = argv[at]
                at += 1
            got[name].append(value)
            continue
        if token.startswith("-") or query is not None:
            return None  # an option the thin path does not take, `--`, or a second QUERY
        query = token
    single = {name: values[-1] if values else None for name, values in got.items()}  # click: the last one wins
    k = single["-k"] or "10"
    mode = single["--mode"] or "hybrid"
    if query is None or not query.strip() or not k.isdigit() or int(k) < 1 or mode not in MODES:
        return None
    return {
        "query": query,
        "k": int(k),
        "kind": list(split_values(got["--kind"]) or ()),
        "area": list(split_values(got["--area"]) or ()),
        "status": list(split_values(got["--status"]) or ()),
        "path": single["--path"],
        "since": single["--since"],
        "mode": mode,
        "json": as_json,
        "root": single["--root"],
    }


def _server_configured(root: object) -> bool:
    """Whether this project's index is a Chroma server (a flag, the environment or a config file names
    one): the watcher does not serve those; the full command reads the setting properly."""
    if os.environ.get("MEMFILES_CHROMA_URL"):
        return True
    for name in (os.path.join(MEMORY_DIR, "memfiles.toml"), "pyproject.toml"):
        try:
            with open(os.path.join(str(root), name), encoding="utf-8", errors="replace") as handle:
                if "index_url" in handle.read():
                    return True
        except OSError:
            continue
    return False


def ask_watcher(args: dict[str, object]) -> dict[str, object] | None:
    """The watcher's answer ({"hits", "warnings"}), or None when the full command must answer."""
    try:
        root = find_root(given=args["root"])  # type: ignore[arg-type]
        if _server_configured(root):
            return None
        path = socket_file(root / INDEX_DIR)
        if not path.exists():
            return None
        request = {key: args[key] for key in ("query", "k", "kind", "area", "status", "path", "since", "mode")}
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(TIMEOUT)
            client.connect(str(path))
            client.sendall(json.dumps({"op": "memsearch", **request}).encode("utf-8") + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = client.recv(1 << 16)
                if not chunk:
                    break
                data += chunk
        answer = json.loads(data)
    except Exception:
        return None
    if not isinstance(answer, dict) or answer.get("ok") is not True:
        return None
    return answer


def quick(argv: list[str]) -> bool:
    """Answer through a running watcher and print; False (nothing printed) when the full command must."""
    args = read_args(argv)
    answer = ask_watcher(args) if args is not None else None
    if args is None or answer is None:
        return False
    hits = answer["hits"]
    for message in answer.get("warnings") or ():  # type: ignore[union-attr]
        sys.stderr.write(f"memfiles: warning: {message}\n")
    if args["json"]:
        sys.stdout.write(json_text({"query": args["query"], "hits": hits}))
    else:
        if not hits:
            sys.stderr.write(NO_HITS + "\n")
        lines = hit_lines(hits, str(args["query"]))  # type: ignore[arg-type]
        sys.stdout.write("".join(line + "\n" for line in lines))
    sys.stdout.flush()
    return True


def main() -> None:
    if not quick(sys.argv[1:]):
        from memfiles.cli.search import memsearch

        memsearch()
