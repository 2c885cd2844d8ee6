"""Benchmark of a team on one Chroma server (docs/scale.md): five clones of one repository, one server.

  nice python scripts/bench_shared.py [--per-clone 20000] [--clones 5] [--own 500] [--queries 30]
                                      [--switches 3] [--json-out PATH] [--workdir DIR]

The clones hold --per-clone entries each (100,000 across five by default): the first is `main`, each
other one a branch of its own that prunes --own of main's entries and adds --own of its own, so the
texts are embedded once (per-clone + own x (clones - 1) of them), as the issue asks of the design.
Entries are CACM titles and abstracts (cycled to reach the size, with a variant suffix), read from
../shared/data. A real `chroma run` is started here (niced, RUST_LOG=warn) and stopped at the end.

It prints, each against a baseline measured in the same run:
- every clone's first `memfiles backfill` (a cold process), the second's as a ratio to the first's;
- `memsearch` latency p50 / p95 over CACM queries, cold (no watcher) and warm (through a watcher), in
  clone 2 against the embedded store of the same files (a git clone of the same branch, built from the
  same vectors so that nothing is embedded twice), interleaved query by query; and whether both gave
  the same hits;
- the server's disk (its folder) and memory (the `chroma run` process's resident and peak set), and
  each kind of index's disk in a clone;
- how long a watcher takes to follow `git checkout` between clone 2's branch and main (--own entries
  differ each way), with a server and with the embedded store;
- what a search that asked the server's pool instead would cost (a `query` of 50, no filter).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_common import compile_memfiles, warm_watcher
from bench_index import measured, percentiles, texts
from eval_retrieval import CONFIG, DATA, read_jsonl

BIN = Path(sys.executable).parent
GIT = ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.org", "-c", "init.defaultBranch=main"]


def git(root: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True)


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(folder: Path) -> tuple[subprocess.Popen, str]:
    import socket

    port = free_port()
    binary = shutil.which("chroma", path=str(BIN)) or "chroma"
    proc = subprocess.Popen(
        ["nice", binary, "run", "--path", str(folder), "--host", "127.0.0.1", "--port", str(port)],
        env={**os.environ, "RUST_LOG": "warn"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("chroma run did not start within 120 s")


def memory_mb(pid: int) -> tuple[float, float]:
    """(resident, peak resident) MB of a process, from /proc."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def disk_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def cpu_timed(command: list[str], env: dict[str, str]) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS in MB, stdout) of one command. The CPU time (user and system,
    the encoder process it waits for included) hardly moves with what else the machine runs, where the
    wall time of a half-hour backfill on a shared machine does."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env)
        _pid, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{command} failed: {err.read().decode()}")
        return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.read().decode()


def memfiles(root: Path, env: dict[str, str], *args: str) -> str:
    return measured([str(BIN / "memfiles"), "--root", str(root), *args], env)[2]


def import_ops(root: Path, env: dict[str, str], ops: list[dict]) -> None:
    path = root.parent / f"{root.name}-ops.json"
    path.write_text(json.dumps({"ops": ops}))
    memfiles(root, env, "import", str(path))
    path.unlink()


def make_clones(work: Path, args: argparse.Namespace, env: dict[str, str]) -> list[Path]:
    """A repository of --per-clone entries (main) on a bare origin, and one clone per branch."""
    items = texts(args.per_clone + args.own * (args.clones - 1))
    seed = work / "seed"
    (seed / "memory").mkdir(parents=True)
    (seed / "memory" / "memfiles.toml").write_text(CONFIG)
    (seed / ".gitignore").write_text(".memsearch/\n.memfiles/\n")
    import_ops(
        seed,
        env,
        [
            {
                "op": "add",
                "kind": "fact",
                "area": f"area{n % 20}",
                "title": t,
                "body": b,
                "file": f"memory/part{n % 10}.md",
            }
            for n, (t, b) in enumerate(items[: args.per_clone])
        ],
    )
    ids = [entry["id"] for entry in json.loads(memfiles(seed, env, "list", "--json"))["entries"]]
    git(work, "init", "-q", str(seed))
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "notes")
    git(work, "clone", "-q", "--bare", str(seed), str(work / "origin.git"))
    clones = []
    for k in range(args.clones):
        clone = work / f"clone-{k + 1}"
        git(work, "clone", "-q", str(work / "origin.git"), str(clone))
        if k:
            git(clone, "checkout", "-qb", f"clone-{k + 1}")
            own = items[args.per_clone + (k - 1) * args.own : args.per_clone + k * args.own]
            dropped = ids[(k - 1) * args.own : k * args.own]
            import_ops(
                clone,
                env,
                [{"op": "prune", "id": i, "reason": f"not on clone {k + 1}"} for i in dropped]
                + [
                    {"op": "add", "kind": "fact", "area": "own", "title": t, "body": b, "file": f"memory/own{k + 1}.md"}
                    for t, b in own
                ],
            )
            git(clone, "add", "-A")
            git(clone, "commit", "-qm", f"clone {k + 1}")
            git(clone, "push", "-q", "origin", f"clone-{k + 1}")
        clones.append(clone)
    return clones


def embedded_copy(work: Path, branch: str, server_env: dict[str, str], local_env: dict[str, str]) -> Path:
    """A git clone of `branch` with an embedded store built from the server's vectors (none embedded)."""
    copy = work / "embedded-2"
    git(work, "clone", "-q", "-b", branch, str(work / "origin.git"), str(copy))
    code = """
import sys, json
from pathlib import Path
from memfiles.config import load_settings
from memfiles.store.project import Project
from memfiles.index.embedder import collection_name, load_embedder
from memfiles.index.shared import SharedVectors
from memfiles.services.indexing.backfill import Prepared, backfill_session
from memfiles.services.indexing.staleness import reading_starts
from memfiles.services.indexing.index_session import entry_docs, open_index
root, url = Path(sys.argv[1]), sys.argv[2]
settings = load_settings(root)
project = Project(settings)
started = reading_starts()
found = entry_docs(project)
server = load_settings(root, index_url=url)
embedder = load_embedder(None, light=True)
shared = SharedVectors(server, collection_name(embedder.name, embedder.dimension), 600)
hashes = sorted({d.hash for d in found.docs.values()})
vectors = shared.fetch(hashes)
if len(vectors) != len(hashes):
    sys.exit(f"the pool lacks {len(hashes) - len(vectors)} of the texts")
with open_index(settings, timeout=600) as session:
    result, _ = backfill_session(project, session, None, True, False, Prepared(started, found, vectors))
print(json.dumps(result["report"]))
"""
    env = {**local_env, "MEMFILES_INDEX_COLLECTION": server_env["MEMFILES_INDEX_COLLECTION"]}
    out = subprocess.run(
        [sys.executable, "-c", code, str(copy), server_env["MEMFILES_CHROMA_URL"]],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    json.loads(out.strip().splitlines()[-1])  # its report: every vector came from the pool (else it exited)
    return copy


def query_times(
    roots: dict[str, tuple[Path, dict[str, str]]], queries: list[str]
) -> tuple[dict[str, list[float]], int]:
    """Seconds of a `memsearch QUERY -k 10 --json` process in each root, interleaved query by query; and on
    how many queries every root gave the same ids."""
    times: dict[str, list[float]] = {name: [] for name in roots}
    same = 0
    for query in queries:
        got = {}
        for name, (root, env) in roots.items():
            seconds, _rss, out = measured(
                [str(BIN / "memsearch"), "--root", str(root), query, "-k", "10", "--json"], env
            )
            times[name].append(seconds)
            got[name] = [hit["entry"]["id"] for hit in json.loads(out)["hits"]]
        same += len({tuple(ids) for ids in got.values()}) == 1
    return times, same


def small_branch(root: Path, env: dict[str, str], count: int = 10) -> None:
    """`clone-2-small`: clone-2 and `count` new entries in a file of their own (a small checkout's change)."""
    branches = subprocess.run([*GIT, "branch", "--list", "clone-2-small"], cwd=root, capture_output=True, text=True)
    if branches.stdout.strip():
        return
    git(root, "checkout", "-qb", "clone-2-small")
    ops = [
        {
            "op": "add",
            "kind": "fact",
            "area": "small",
            "title": f"Small change number {n} of a feature branch",
            "body": f"Written on the small branch, item {n}.",
            "file": "memory/small.md",
        }
        for n in range(count)
    ]
    import_ops(root, env, ops)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "small")
    git(root, "checkout", "-q", "clone-2")


def follow_checkout(root: Path, there: str, back: str, markers: dict[str, str], switches: int) -> list[float]:
    """Seconds from the end of `git checkout` to the watcher answering as the checked-out files say: each
    marker id (`markers`: id -> the one branch that holds it) found by its id on its branch, and not on
    the other. The watcher indexes a file's entries, vectors included, before its catalog shows them.
    Polled every 0.1 s (each poll is a search, which waits for a sync in progress); a second's pause
    follows each switch, untimed, so that none is timed with the previous one's syncs."""
    from memfiles.config import load_settings
    from memfiles.services.indexing.ipc import request

    settings = load_settings(root)  # the socket's place: the same whatever the index
    measured_s = []

    def present(entry_id: str) -> bool:
        # a watcher embedding what a checkout brought (the embedded store) holds its answer until done
        query = {"op": "search", "queries": [[entry_id, 1]], "mode": "hybrid", "filters": {}}
        answer = request(settings, query, 600)
        hits = answer["results"][0] if answer else []
        return bool(hits) and hits[0]["entry"]["id"] == entry_id

    for n in range(switches * 2):
        target = there if n % 2 == 0 else back
        git(root, "checkout", "-q", target)
        start = time.perf_counter()
        while any(present(m) != (home == target) for m, home in markers.items()):
            if time.perf_counter() - start > 600:
                raise SystemExit(f"the watcher did not follow the checkout of {target} within 600 s")
            time.sleep(0.1)
        measured_s.append(time.perf_counter() - start)
        time.sleep(1.0)
    return measured_s


def pool_query_ms(url: str, pool: str, queries: list[str]) -> float:
    import chromadb
    from chromadb.config import Settings

    from memfiles.index.embedder import load_embedder

    collection = chromadb.HttpClient(host=url, settings=Settings(anonymized_telemetry=False)).get_collection(
        pool, embedding_function=None
    )
    vectors = load_embedder(None, light=True).encode(queries)
    times = []
    for vector in vectors:
        start = time.perf_counter()
        collection.query(query_embeddings=[vector], n_results=50, include=["distances"])
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def watcher(root: Path, env: dict[str, str], stop: bool = False) -> None:
    args = ["--stop"] if stop else []
    subprocess.run(
        [str(BIN / "memfiles"), "--root", str(root), "watch", *args], env=env, check=not stop, capture_output=True
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-clone", type=int, default=20_000)
    parser.add_argument("--clones", type=int, default=5)
    parser.add_argument("--own", type=int, default=500)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--switches", type=int, default=3)
    parser.add_argument("--json-out", type=Path)
    parser.add_argument(
        "--workdir",
        type=Path,
        help="keep everything here (default: a temporary folder, removed); run again with the same folder to"
        " go on after the last phase it finished (its figures so far are in figures.json there)",
    )
    args = parser.parse_args()
    compile_memfiles()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="memfiles-shared-"))
    work.mkdir(parents=True, exist_ok=True)
    saved = work / "figures.json"
    figures: dict = json.loads(saved.read_text()) if saved.exists() else {}
    if figures and [figures["per_clone"], figures["clones"], figures["own"]] != [args.per_clone, args.clones, args.own]:
        raise SystemExit(f"{work} holds a run of other sizes: give another --workdir")
    figures.update({"per_clone": args.per_clone, "clones": args.clones, "own": args.own})
    figures.setdefault("pool_name", f"bench{uuid.uuid4().hex[:8]}")

    def done(phase: str) -> None:
        figures.setdefault("phases", []).append(phase)
        saved.write_text(json.dumps(figures, indent=2) + "\n")
        print(f"[{time.strftime('%H:%M:%S')}] {phase} done", flush=True)

    def ran(phase: str) -> bool:
        return phase in figures.get("phases", [])

    server, url = start_server(work / "chroma")
    base_env = {**os.environ, "MEMFILES_SEARCH_WATCH": "0"}
    base_env.pop("MEMFILES_CHROMA_URL", None)
    local_env = dict(base_env)
    server_env = {**base_env, "MEMFILES_CHROMA_URL": url, "MEMFILES_INDEX_COLLECTION": figures["pool_name"]}
    clones = [work / f"clone-{k + 1}" for k in range(args.clones)]
    copy = work / "embedded-2"
    roots = {"server": (clones[1], server_env), "embedded": (copy, local_env)}
    try:
        if not ran("clones"):
            started = time.perf_counter()
            make_clones(work, args, local_env)
            figures["clones_seconds"] = time.perf_counter() - started
            done("clones")
        if not ran("backfills"):
            backfills = []
            for clone in clones:
                seconds, cpu, rss, out = cpu_timed(
                    [str(BIN / "memfiles"), "--root", str(clone), "backfill", "--json"], server_env
                )
                report = json.loads(out)
                # the report's own `seconds` (from reading the files on) is kept beside the process's wall time
                backfills.append({**report, "wall_seconds": seconds, "cpu_seconds": cpu, "peak_rss_mb": rss})
                print(f"backfill {clone.name}: {seconds:.1f} s, embedded {report['embedded']:,}", flush=True)
            figures["backfills"] = backfills
            figures["second_over_first"] = backfills[1]["wall_seconds"] / backfills[0]["wall_seconds"]
            figures["second_over_first_cpu"] = backfills[1]["cpu_seconds"] / backfills[0]["cpu_seconds"]
            figures["pool"] = json.loads(memfiles(clones[0], server_env, "status", "--json"))["index"]["server"]
            resident, peak = memory_mb(server.pid)  # `nice` execs the server: one pid
            figures["server"] = {"disk_mb": disk_mb(work / "chroma"), "rss_mb": resident, "peak_rss_mb": peak}
            done("backfills")
        if not ran("embedded copy"):
            started = time.perf_counter()
            embedded_copy(work, "clone-2", server_env, local_env)
            figures["embedded_store_write_seconds"] = time.perf_counter() - started
            figures["local_disk_mb"] = {
                "view": disk_mb(clones[1] / ".memsearch"),
                "embedded": disk_mb(copy / ".memsearch"),
            }
            done("embedded copy")
        queries = [q["text"] for q in read_jsonl(DATA / "cacm" / "queries.jsonl")][: args.queries]
        try:
            if not ran("queries"):
                for root, env in roots.values():  # both in step with their files, as after any backfill
                    memfiles(root, env, "backfill")
                cold, same_cold = query_times(roots, queries)
                for root, env in roots.values():
                    watcher(root, env)
                    warm_watcher(root, [str(BIN / "memsearch"), "--root", str(root), "warm up"])
                warm, same_warm = query_times(roots, queries)
                figures["queries"] = {
                    "count": len(queries),
                    "cold": {name: percentiles(t) for name, t in cold.items()},
                    "warm": {name: percentiles(t) for name, t in warm.items()},
                    "same_hits": {"cold": same_cold, "warm": same_warm},
                }
                done("queries")
            if not ran("checkouts"):
                for root, env in roots.values():
                    small_branch(root, env)
                    memfiles(root, env, "backfill")
                    watcher(root, env)

                def ids(root: Path, env: dict[str, str]) -> list[str]:
                    return [e["id"] for e in json.loads(memfiles(root, env, "list", "--json"))["entries"]]

                here = ids(clones[1], server_env)
                only_main = sorted(set(ids(clones[0], server_env)) - set(here))[0]
                own = json.loads(memfiles(clones[1], server_env, "list", "--json", "--area", "own"))["entries"][-1][
                    "id"
                ]
                follow: dict[str, dict[str, list[float]]] = {}
                for name, (root, env) in roots.items():
                    git(root, "checkout", "-q", "clone-2-small")
                    small = json.loads(memfiles(root, env, "list", "--json", "--area", "small"))["entries"][-1]["id"]
                    git(root, "checkout", "-q", "clone-2")
                    time.sleep(2.0)
                    follow[name] = {
                        "big": follow_checkout(
                            root, "main", "clone-2", {own: "clone-2", only_main: "main"}, args.switches
                        ),
                        "small": follow_checkout(
                            root, "clone-2-small", "clone-2", {small: "clone-2-small"}, args.switches
                        ),
                    }
                figures["follow_checkout_seconds"] = follow
                figures["follow_checkout_sizes"] = {
                    "big": f"{args.own} entries removed and {args.own} added across two files (clone-2 and main)",
                    "small": "10 entries added in a file of their own (clone-2-small and clone-2)",
                }
                done("checkouts")
        finally:
            for root, env in roots.values():
                if root.exists():
                    watcher(root, env, stop=True)
        if not ran("pool query"):
            figures["pool_query_ms_p50"] = pool_query_ms(url, figures["pool"]["collection"], queries)
            resident, peak = memory_mb(server.pid)
            figures["server"].update({"rss_after_queries_mb": resident, "peak_rss_mb_after_queries": peak})
            done("pool query")
    finally:
        server.terminate()
        server.wait(timeout=30)
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(figures, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(figures, indent=2) + "\n")
    print_tables(figures)


def print_tables(f: dict) -> None:
    """The tables docs/scale.md carries."""
    b = f["backfills"]
    print("\n| clone | entries | embedded | reused | first backfill | its CPU time |\n|---|---|---|---|---|---|")
    for n, row in enumerate(b, 1):
        print(
            f"| {n} | {row['indexed']:,} | {row['embedded']:,} | {row['reused']:,} |"
            f" {row.get('wall_seconds', row['seconds']):.1f} s |"
            f" {row['cpu_seconds']:.1f} s |"
        )
    print(
        f"\nsecond clone / first: {f['second_over_first']:.3f}x (CPU time: {f['second_over_first_cpu']:.3f}x);"
        f" distinct texts in the pool: {f['pool']['vectors']:,}"
    )
    q = f["queries"]
    print("\n| memsearch | server p50 | server p95 | embedded p50 | embedded p95 | ratio p50 | ratio p95 |")
    print("|---|---|---|---|---|---|---|")
    for mode in ("cold", "warm"):
        s, e = q[mode]["server"], q[mode]["embedded"]
        print(
            f"| {mode} | {s[0] * 1000:.0f} ms | {s[1] * 1000:.0f} ms | {e[0] * 1000:.0f} ms | {e[1] * 1000:.0f} ms |"
            f" {s[0] / e[0]:.2f} | {s[1] / e[1]:.2f} |"
        )
    print(f"same hits: {q['same_hits']} of {q['count']} queries")
    srv = f["server"]
    print(
        f"\nserver: {srv['disk_mb']:.0f} MB on disk, {srv['rss_mb']:.0f} MB resident after the backfills,"
        f" {srv['rss_after_queries_mb']:.0f} MB after the queries, peak {srv['peak_rss_mb_after_queries']:.0f} MB;"
        f" pool {f['pool']['vectors']:,} vectors"
    )
    print(
        f"a clone's index on disk: view {f['local_disk_mb']['view']:.0f} MB,"
        f" embedded {f['local_disk_mb']['embedded']:.0f} MB"
    )
    for name, sizes in f["follow_checkout_seconds"].items():
        for size, values in sizes.items():
            print(
                f"watcher follows a {size} checkout ({name}): p50 {statistics.median(values):.2f} s,"
                f" max {max(values):.2f} s ({f['follow_checkout_sizes'][size]})"
            )
    print(f"a query of the server's pool (50, no filter): p50 {f['pool_query_ms_p50']:.1f} ms")


if __name__ == "__main__":
    main()
