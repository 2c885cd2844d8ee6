"""The `memsearch` entry point: when a watcher runs, a thin client that sends the query over the socket
and prints the text the watcher rendered; in every other case the full command (cli/search.py), unchanged.

Thin means a query costs little more than starting Python: this module imports only os, sys and the C
modules _socket and _json (json, socket and pathlib would each cost about as much as starting Python
again), and from memfiles only modules that do the same: root.py and services/indexing/sockpath.py (plain
strings), memsearch_options.py, services/indexing/protocol.py, and watcher_wire.py with jsonline.py. The
watcher renders stdout and stderr with services/indexing/search_text.py, as the full command does, so the same
hits give the same bytes (tests/test_quick_search.py).

With no watcher, the same plain form is answered in this process by `here`, through the full command's
client, filters and rendering but without click's command tree.

The thin path takes only the plain form: one QUERY with -k, --kind, --area, --status, --path, --since,
--mode, --json and --root. Anything else (--batch, --help, --chroma-url, an option it does not know, a
value it cannot read) goes to the full command, and so does every refusal of the watcher: errors are
always worded and coded by the full command. A watcher answers for its clone whether or not a Chroma
server shares the clone's vectors (docs/search.md); with none running, `here` leaves a server to the
full command.
"""

from __future__ import annotations

import os
import sys

from memfiles.cli.memsearch_options import MODES, THIN_FLAGS, THIN_VALUED
from memfiles.cli.watcher_wire import exchange
from memfiles.root import INDEX_DIR, root_folder
from memfiles.services.indexing import protocol
from memfiles.services.indexing.sockpath import socket_address

VALUED = THIN_VALUED  # the options the plain form takes, as the click command declares them
TIMEOUT = 60.0  # as the full command waits for the watcher (services/indexing/index_client.py)


def split_values(values: tuple[str, ...] | list[str]) -> tuple[str, ...] | None:
    """Repeated options, each of which may also be a comma-separated list (the full command's rule too)."""
    found = tuple(part.strip() for value in values for part in value.split(",") if part.strip())
    return found or None


def read_args(argv: list[str]) -> dict[str, object] | None:
    """The options of a plain memsearch call, or None when the full command must read them."""
    got: dict[str, list[str]] = {name: [] for name in VALUED}
    query = None
    as_json = False
    at = 0
    while at < len(argv):
        token = argv[at]
        at += 1
        if token in THIN_FLAGS:  # --json
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
    if query is None or not query.strip() or not (k.isascii() and k.isdigit()) or int(k) < 1 or mode not in MODES:
        return None
    if single["--root"] == "":
        return None  # click reads it as `.`, root discovery as "not given": the full command decides
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


def ask_watcher(args: dict[str, object]) -> tuple[str, str] | None:
    """The (stdout, stderr) the watcher rendered, or None when the full command must answer."""
    try:
        root = root_folder(given=args["root"])  # type: ignore[arg-type]
        path = socket_address(os.path.join(root, INDEX_DIR))
        if not os.path.exists(path):
            return None
        answer = exchange(path, protocol.memsearch(args), TIMEOUT)
    except Exception:
        return None
    if not isinstance(answer, dict) or answer.get("ok") is not True:
        return None
    out, err = answer.get("out"), answer.get("err")
    if not isinstance(out, str) or not isinstance(err, str):
        return None
    return out, err


def quick(argv: list[str]) -> bool:
    """Answer through a running watcher and print; False (nothing printed) when the full command must."""
    args = read_args(argv)
    answer = ask_watcher(args) if args is not None else None
    if answer is None:
        return False
    _print(*answer)
    return True


def _print(out: str, err: str) -> None:
    """Write as click.echo does: ANSI escape sequences (a body may hold them) removed from a stream that is
    not a terminal, so a pipe gets the full command's bytes."""
    for text, stream in ((err, sys.stderr), (out, sys.stdout)):
        if not text:
            continue
        if "\033" in text and not stream.isatty():
            import re

            text = re.sub(r"\033\[[0-?]*[ -/]*[@-~]", "", text)  # click's own pattern (click/_compat.py)
        stream.write(text)
        stream.flush()


def here(argv: list[str]) -> bool:
    """With no watcher, a plain query answered in this process without click's command tree (the full
    command's imports cost a cold search 60 ms), printing what the full command prints: the same client,
    filters and rendering. False (nothing printed) for anything the full command must word: a form the
    thin path does not take, a server, a watcher that answers (it refused the thin client), a bad kind,
    status, date or config. An error of the search itself (no index, a busy index, a missing model) is
    said here, worded and coded as the full command words it: handing it over would wait a second time."""
    args = read_args(argv)
    if args is None or os.environ.get("MEMFILES_CHROMA_URL"):
        return False
    from memfiles.config import load_settings
    from memfiles.errors import MemfilesError
    from memfiles.services.indexing.index_client import connect, leave_watcher
    from memfiles.services.indexing.search_request import request_filters
    from memfiles.services.indexing.search_text import rendered

    try:
        settings = load_settings(args["root"])  # type: ignore[arg-type]
        if settings.index_url:
            return False
        filters = request_filters(settings.schema, args)
        client = connect(settings)
        if client.where != "local":
            return False
    except MemfilesError:
        return False
    from memfiles.limits import cut_query

    query, cut = cut_query(str(args["query"]))  # as the watcher cuts it (services/watch/dispatch.py)
    k, mode = int(args["k"]), str(args["mode"])  # type: ignore[call-overload]
    try:
        hits = client.search([(query, k)], filters, mode)[0]
    except MemfilesError as error:  # said here, as the full command says it: asking it would wait again
        from memfiles.contract import error_for
        from memfiles.services.indexing.search_text import json_text

        _print(json_text(error_for(error)) if args["json"] else "", f"memfiles: {error}\n")
        raise SystemExit(error.exit_code) from None
    started = leave_watcher(settings, client, "so that the next search is fast")
    from memfiles.services.indexing.search_text import pruned_notes

    warnings = [
        *([cut] if cut else []),
        *client.warnings,
        *pruned_notes(settings.memory_dir, settings.schema.prefixes, query, hits),
    ]
    _print(*rendered(query, hits, bool(args["json"]), warnings, (started,) if started else ()))
    return True


def main() -> None:
    from memfiles.cli.argv import refuse_undecodable

    refuse_undecodable(sys.argv[1:], "memsearch")
    try:
        answered = quick(sys.argv[1:]) or here(sys.argv[1:])
    except BrokenPipeError:  # `memsearch ... | head -1`: the reader left; exit 1 as the full command does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None
    except KeyboardInterrupt:  # Ctrl-C while it waits for a busy index: as click says it
        sys.stderr.write("\nAborted!\n")
        raise SystemExit(1) from None
    if not answered:
        from memfiles.cli.search import memsearch

        memsearch()
