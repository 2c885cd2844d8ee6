"""Benchmark `memfiles lsp` (hover, completion on 10,000 entries) and the lint cost of `memfiles check`.

    python scripts/bench_lsp.py                 # the language server: hover and completion latency
    python scripts/bench_lsp.py --lint          # check with and without lint, cold and warm cache
    python scripts/bench_lsp.py --entries 2000 --requests 50   # a quick run

Times are medians (and p95) in ms, each also as a ratio to a same-run baseline measured in this
process: the time to parse one 100-entry memory file. The target is hover and completion under 50 ms,
and a CLI write seen (diagnostics republished, the server sent nothing) within a second.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memfiles.format.model import Entry, MemoryFile, Section
from memfiles.format.parse import parse
from memfiles.format.render import render

KINDS = [("D", "decisions.md", "accepted"), ("F", "frictions.md", "open"), ("L", "lessons.md", "active")]
WORDS = [
    "parser",
    "index",
    "watcher",
    "chroma",
    "batch",
    "journal",
    "fence",
    "wrap",
    "manual",
    "lint",
    "hover",
    "cache",
    "store",
    "embed",
    "query",
    "coverage",
    "aggregation",
    "lock",
    "crash",
    "replay",
    "ledger",
    "prune",
    "retire",
    "successor",
    "title",
    "body",
    "area",
    "status",
]


def make_project(root: Path, entries: int, files_per_kind: int = 4) -> list[str]:
    """A memory/ with `entries` entries in canonical form, spread over a few files per kind; their ids."""
    memory = root / "memory"
    memory.mkdir(parents=True)
    ids = []
    per_file = max(1, entries // (len(KINDS) * files_per_kind))
    number = 0
    for prefix, name, status in KINDS:
        for part in range(files_per_kind):
            batch = []
            for _ in range(per_file):
                number += 1
                # three common words and three from a vocabulary of 3,000, as real titles mix them
                common = [WORDS[(number * 7 + k * 3) % len(WORDS)] for k in range(3)]
                words = common + [f"term{(number * 31 + k * 977) % 3000}" for k in range(3)]
                body = f"Entry {number} says that the {words[0]} and the {words[1]} need the {words[2]}. " * 3
                entry_id = f"{prefix}-{number:05d}"
                batch.append(
                    Entry(entry_id, " ".join(words).capitalize(), "2026-11-29", words[3], status, body.strip())
                )
                ids.append(entry_id)
            folder = memory if part == 0 else memory / f"pkg{part}"
            folder.mkdir(exist_ok=True)
            text = render(MemoryFile(name[:-3].capitalize(), sections=(Section(None, "", tuple(batch)),)))
            (folder / name).write_text(text, encoding="utf-8")
    return ids


def baseline_ms() -> float:
    """Median time to parse one 100-entry memory file: the unit the other figures are divided by."""
    entries = tuple(
        Entry(f"D-{n:03d}", f"Title {n}", "2026-01-01", "a", "accepted", "Body text. " * 20) for n in range(1, 101)
    )
    text = render(MemoryFile("Decisions", sections=(Section(None, "", entries),)))
    times = []
    for _ in range(30):
        start = time.perf_counter()
        parse(text)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def summary(name: str, times: list[float], base: float) -> str:
    times = sorted(times)
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    median = statistics.median(times)
    return f"{name:<28} median {median:7.2f} ms  p95 {p95:7.2f} ms  ratio {median / base:6.2f}"


async def bench_server(root: Path, ids: list[str], requests: int, base: float) -> None:
    from lsprotocol import types
    from pygls.lsp.client import BaseLanguageClient

    client = BaseLanguageClient("bench", "1")

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(_client: BaseLanguageClient, _params: types.RegistrationParams) -> None:
        return None

    published: list[tuple[float, int]] = []  # (when, how many dangling references)

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(*args: object) -> None:  # (client, params)
        params = args[-1]
        published.append((time.time(), sum(d.code == "ref-dangling" for d in params.diagnostics)))  # type: ignore[attr-defined]

    started = time.perf_counter()
    await client.start_io(sys.executable, "-m", "memfiles.cli", "--root", str(root), "lsp")
    await client.initialize_async(
        types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=root.as_uri())
    )
    client.initialized(types.InitializedParams())
    at = "@@"
    lines = [f"# see {at}{ids[(n * 997) % len(ids)]} about the parser and the watcher cache" for n in range(requests)]
    source = root / "src.py"
    source.write_text("\n".join([*lines, "# coverage aggregation of the batch journal, see " + at]) + "\n")
    uri = source.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, source.read_text()))
    )
    first = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, 10))
    )
    assert first is not None, "no hover: the server did not index the project"
    print(f"{'start + index + first hover':<28} {(time.perf_counter() - started) * 1000:9.1f} ms")
    hovers, completions = [], []
    for n in range(requests):
        start = time.perf_counter()
        await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(n, 10))
        )
        hovers.append((time.perf_counter() - start) * 1000)
    last = len(lines)
    column = len("# coverage aggregation of the batch journal, see ") + 2
    for _ in range(requests):
        start = time.perf_counter()
        result = await client.text_document_completion_async(
            types.CompletionParams(types.TextDocumentIdentifier(uri), types.Position(last, column))
        )
        completions.append((time.perf_counter() - start) * 1000)
    assert result is not None and result.items, "no completion items"
    print(summary("hover", hovers, base))
    print(summary("completion (50 items)", completions, base))
    print(summary("CLI write to diagnostics", await _writes_seen(root, ids, uri, client, published), base))
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


async def _writes_seen(root: Path, ids: list[str], uri: str, client, published: list) -> list[float]:
    """From a CLI write's file on disk to the server's diagnostics without it, sending the server nothing
    (the client never asked to watch files): `memfiles add` makes the entry an open document cites."""
    from lsprotocol import types

    at = "@@"
    number = max(int(i.split("-")[1]) for i in ids if i.startswith("D-"))
    wanted = [f"D-{number + n:03d}" for n in range(1, 6)]
    text = "".join(f"# see {at}{entry_id}\n" for entry_id in wanted)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=2, uri=uri),
            [types.TextDocumentContentChangeWholeDocument(text)],
        )
    )
    seen = []
    for left in range(len(wanted) - 1, -1, -1):
        while not published or published[-1][1] != left + 1:
            await asyncio.sleep(0.01)
        add = ["add", "-k", "decision", "-t", f"Written by the CLI, {left} left", "-a", "bench", "--body", "x"]
        subprocess.run(
            [sys.executable, "-m", "memfiles.cli", "--root", str(root), *add], check=True, capture_output=True
        )
        written = max(path.stat().st_mtime for path in (root / "memory").glob("decisions*.md"))
        while published[-1][1] != left:
            await asyncio.sleep(0.01)
        seen.append((published[-1][0] - written) * 1000)
    return seen


def time_command(args: list[str], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, capture_output=True, check=False)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def bench_lint(entries: int) -> None:
    """`memfiles check` on this repository's memory/ and on `entries` generated entries, lint on and off."""
    base = time_command([sys.executable, "-c", "pass"], runs=5)
    print(f"{'python -c pass (baseline)':<40} {base:8.0f} ms")
    repo = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as name:
        root = Path(name)
        make_project(root, entries, files_per_kind=3)
        for label, where in (("this repository", repo), (f"{entries} entries", root)):
            check = [sys.executable, "-m", "memfiles.cli", "--root", str(where), "check"]
            cache = where / ".memfiles" / "lint-cache.json"
            cache.unlink(missing_ok=True)
            cold = time_command(check, runs=1)
            warm = time_command(check)
            off = time_command([*check, "--no-lint"])
            for what, value in (("lint, cold cache", cold), ("lint, warm cache", warm), ("--no-lint", off)):
                print(f"check {label + ', ' + what:<34} {value:8.0f} ms  ratio {value / base:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--lint", action="store_true", help="time check with and without lint instead")
    args = parser.parse_args()
    if args.lint:
        bench_lint(min(args.entries, 1000))
        return
    base = baseline_ms()
    print(f"{'baseline: parse 100 entries':<28} median {base:7.2f} ms")
    with tempfile.TemporaryDirectory() as name:
        root = Path(name)
        ids = make_project(root, args.entries)
        print(f"{len(ids)} entries in {len(list((root / 'memory').rglob('*.md')))} files")
        asyncio.run(bench_server(root, ids, args.requests, base))


if __name__ == "__main__":
    main()
