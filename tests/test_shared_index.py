"""A team on one Chroma server: clones and branches share the vectors, and each sees exactly its own files.

Every test runs against a real `chroma run` started here, with clones made by git from one repository.
A clone's entries live in its own view (.memsearch/view); the server holds each text's vector once, by
content (docs/search.md, index/shared.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memfiles.cli.main import cli
from tests.conftest import SAMPLE_ENTRIES, watching
from tests.contract_shapes import check_command
from tests.reliability.faults import free_port, start_chroma

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GIT = ["git", "-c", "user.name=Team", "-c", "user.email=team@example.org", "-c", "init.defaultBranch=main"]
BASE = [
    *SAMPLE_ENTRIES,  # D-001, K-001, F-001, L-001
    ("todo", "Rotate the on-call rota before the holidays", "ops", "Two people are away in December."),
    ("fact", "Coverage maps are merged from batch files", "ci", "Each shard writes one; the last job merges them."),
]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real `chroma run` for the module's tests (each test uses clones and a pool of its own); or the
    Chroma deployment at MEMFILES_TEST_CHROMA_URL, when set (docs/scale.md: what runs unchanged there)."""
    given = os.environ.get("MEMFILES_TEST_CHROMA_URL")
    if given:
        yield given
        return
    port = free_port()
    proc = start_chroma(tmp_path_factory.mktemp("chroma-team"), port)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=10)


def memfiles(root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--root", str(root), *args], catch_exceptions=False)


def ok(root: Path, *args: str) -> Result:
    result = memfiles(root, *args)
    assert result.exit_code == 0, (args, result.output)
    return result


def search(root: Path, query: str, k: int = 10) -> dict:
    from memfiles.cli.search import memsearch

    result = CliRunner().invoke(memsearch, ["--root", str(root), query, "-k", str(k), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def ids(root: Path, query: str, k: int = 10) -> list[str]:
    return [hit["entry"]["id"] for hit in search(root, query, k)["hits"]]


def on_disk(root: Path) -> dict[str, tuple[str, str]]:
    """Each entry the clone's files hold: id -> (title, status)."""
    listed = json.loads(ok(root, "list", "--json").stdout)["entries"]
    return {entry["id"]: (entry["title"], entry["status"]) for entry in listed}


def answers_from_its_own_files(root: Path, *queries: str) -> None:
    """Every hit of every query is an entry this clone's files hold, as they hold it (title, status)."""
    held = on_disk(root)
    for query in queries:
        for hit in search(root, query)["hits"]:
            entry = hit["entry"]
            assert held.get(entry["id"]) == (entry["title"], entry["status"]), (root.name, query, entry)


def git(root: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True, text=True).stdout


def backfill(root: Path, *args: str) -> dict:
    return json.loads(ok(root, "backfill", "--json", *args).stdout)


@pytest.fixture
def team(tmp_path: Path, server: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A repository of six entries on a bare origin, clone A on main and clone B on a new branch `feature`,
    both pointing at the server. Nothing is indexed yet."""
    monkeypatch.setenv("MEMFILES_CHROMA_URL", server)
    # One pool per test: the vectors of one test's texts must not be found by the next one's first clone.
    monkeypatch.setenv("MEMFILES_INDEX_COLLECTION", f"t{uuid.uuid4().hex[:12]}")
    seed = tmp_path / "seed"
    (seed / "memory").mkdir(parents=True)
    for kind, title, area, body in BASE:
        ok(seed, "add", "-k", kind, "-t", title, "-a", area, "--body", body)
    git(tmp_path, "init", "-q", str(seed))
    (seed / ".gitignore").write_text(".memsearch/\n.memfiles/\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "notes")
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(tmp_path / "origin.git"))
    a, b = tmp_path / "clone-a", tmp_path / "clone-b"
    for clone in (a, b):
        git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(clone))
    git(b, "checkout", "-qb", "feature")
    return a, b


def pool(server: str, collection: str) -> object:
    """The server's pool of shared vectors, read directly (what the tests check the clones against)."""
    import chromadb
    from chromadb.config import Settings

    client = chromadb.HttpClient(host=server, settings=Settings(anonymized_telemetry=False))
    return client.get_collection(collection, embedding_function=None)


def pool_of(root: Path) -> str:
    status = json.loads(memfiles(root, "status", "--json").stdout)
    return status["index"]["server"]["collection"]


def copy_entry(source: Path, entry_id: str, target: Path) -> None:
    """Put the block of `entry_id` from `source` into `target` (above its Manual section), as a merge
    resolved by hand keeping both sides does."""
    text = source.read_text(encoding="utf-8")
    start = text.index(f"### {entry_id}:")
    ends = [i for i in (text.find("\n### ", start + 1), text.find("\n## ", start + 1)) if i != -1]
    block = text[start : min(ends)].rstrip("\n") + "\n\n"
    into = target.read_text(encoding="utf-8")
    cut = into.index("## Manual")
    target.write_text(into[:cut] + block + into[cut:], encoding="utf-8")


class TestTwoClones:
    def test_each_clone_sees_exactly_its_own_files_and_the_second_embeds_nothing_shared(
        self, team: tuple[Path, Path], server: str
    ) -> None:
        """Two clones on two branches of one repository, one server. Before: with one collection shared,
        each clone found the other's entries, an entry the other pruned was gone, and each backfill evicted
        the other's entries. Now each answers from its own view: adds of one id in both, a prune, a
        retire, a renumber after a merge, a backfill of the other, a branch switch; and what one clone
        embedded the other reuses."""
        a, b = team
        first = backfill(a)
        assert first["indexed"] == len(BASE) and first["embedded"] == len(BASE) and first["reused"] == 0
        joined = backfill(b)  # the vectors are on the server already: B embeds nothing
        assert joined["indexed"] == len(BASE) and joined["embedded"] == 0 and joined["reused"] == len(BASE)
        assert pool(server, pool_of(a)).count() == len(BASE)

        # One id added in both clones, each with its own text.
        assert (
            ok(
                a, "add", "-k", "D", "-t", "Deploys go out on Tuesdays only", "-a", "ops", "--body", "Never on Fridays."
            ).stdout.strip()
            == "D-002"
        )
        assert (
            ok(
                b, "add", "-k", "D", "-t", "Deploys are frozen for December", "-a", "ops", "--body", "Nobody ships."
            ).stdout.strip()
            == "D-002"
        )
        assert search(a, "D-002")["hits"][0]["entry"]["title"] == "Deploys go out on Tuesdays only"
        assert search(b, "D-002")["hits"][0]["entry"]["title"] == "Deploys are frozen for December"
        ok(
            b,
            "add",
            "-k",
            "T",
            "-t",
            "Write the migration guide for the new index",
            "-a",
            "docs",
            "--body",
            "Before 2.0.",
        )

        # B prunes K-001: A's files still hold it, so A still finds it; B does not, and says it was pruned.
        ok(b, "prune", "K-001", "--reason", "the staging database is gone")
        assert ids(a, "when is the staging database restored")[0] == "K-001"
        assert "K-001" not in ids(b, "when is the staging database restored")
        assert any("K-001 was pruned" in warning for warning in search(b, "K-001")["warnings"])

        # A retires T-001: its status changes in A only.
        ok(a, "retire", "T-001", "--reason", "the rota moved to the ops tool")
        assert search(a, "T-001")["hits"][0]["entry"]["status"] == "retired"
        assert search(b, "T-001")["hits"][0]["entry"]["status"] != "retired"

        # A backfills (and shares its D-002): B's own entries stay, and B finds none of A's.
        backfill(a)
        assert ids(b, "migration guide for the new index")[0] == "T-002"
        assert "Deploys go out on Tuesdays only" not in json.dumps(search(b, "which day do deploys go out"))
        answers_from_its_own_files(a, "deploys", "staging database", "migration guide", "on-call rota")
        answers_from_its_own_files(b, "deploys", "staging database", "migration guide", "on-call rota")

        # B merges A's D-002 by hand (both sides kept) and renumbers the copy; A knows no D-003.
        copy_entry(a / "memory" / "decisions.md", "D-002", b / "memory" / "decisions.md")
        line = next(
            n
            for n, text in enumerate((b / "memory" / "decisions.md").read_text().splitlines(), 1)
            if text.startswith("### D-002: Deploys go out")
        )
        ok(b, "renumber", "D-002", "--at", f"memory/decisions.md:{line}")
        assert backfill(b)["indexed"] == 0  # the renumber's own update indexed D-003
        assert search(b, "D-003")["hits"][0]["entry"]["title"] == "Deploys go out on Tuesdays only"
        assert search(b, "D-002")["hits"][0]["entry"]["title"] == "Deploys are frozen for December"
        assert "D-003" not in ids(a, "D-003 deploys")

        # Each clone's status names the server, the pool and what this clone sees: no drift in either.
        for clone in (a, b):
            status = json.loads(ok(clone, "status", "--json").stdout)
            assert status["index"]["server"]["url"] == server and status["index"]["server"]["error"] is None
            assert status["index"]["server"]["collection"].startswith("memfiles-vectors-all-minilm-l6-v2-384")
            assert status["drift"]["indexed"] == status["drift"]["on_disk"] == len(on_disk(clone))
            assert not (status["drift"]["missing_or_stale"] or status["drift"]["orphaned"] or status["drift"]["retag"])
            shown = ok(clone, "status").stdout
            assert f"server:   {server}, collection memfiles-vectors-" in shown and "drift:    none" in shown
            check_command("status", status)

        # B switches to main: with no watcher, a search hides what only `feature` held and says the index
        # is behind; a backfill brings the view to main's files, reusing every vector.
        git(b, "add", "-A")
        git(b, "commit", "-qm", "feature notes")
        git(b, "checkout", "-q", "main")
        behind = search(b, "migration guide for the new index")
        assert "T-002" not in [hit["entry"]["id"] for hit in behind["hits"]]
        assert any("behind the files" in warning for warning in behind["warnings"])
        switched = backfill(b)  # main's entries: every vector is in the pool (A's first backfill shared them)
        assert switched["embedded"] == 0 and switched["reused"] == 1 and switched["removed"] == 3
        assert set(on_disk(b)) == {"D-001", "K-001", "F-001", "L-001", "T-001", "K-002"}
        assert ids(b, "when is the staging database restored")[0] == "K-001"  # main still holds it
        answers_from_its_own_files(b, "deploys", "staging database", "migration guide", "on-call rota")
        assert memfiles(b, "backfill", "--check").exit_code == 0
        assert memfiles(a, "backfill", "--check").exit_code == 0

    def test_concurrent_backfills_in_both_clones(self, team: tuple[Path, Path], server: str) -> None:
        """Both clones backfill at once (separate processes), each with entries of its own and some texts
        in common: both finish, each sees its own entries only, and the pool holds each text once."""
        a, b = team
        common = [("fact", f"Shared fact number {n}", "team", f"Written in both clones, {n}.") for n in range(40)]
        for clone, name in ((a, "main"), (b, "feature")):
            ops = [
                {"op": "add", "kind": kind, "title": title, "area": area, "body": body}
                for kind, title, area, body in [
                    *common,
                    *[("lesson", f"Lesson {n} of {name}", name, f"Learnt on {name}, {n}.") for n in range(40)],
                ]
            ]
            (clone / "ops.json").write_text(json.dumps({"ops": ops}))
            ok(clone, "import", str(clone / "ops.json"))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        procs = [
            subprocess.Popen(
                [str(BIN / "memfiles"), "--root", str(clone), "backfill", "--json"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for clone in (a, b)
        ]
        reports = []
        for proc in procs:
            out, err = proc.communicate(timeout=900)
            assert proc.returncode == 0, err
            reports.append(json.loads(out))
        assert all(report["indexed"] == len(BASE) + 80 for report in reports)
        texts = len(BASE) + 40 + 80  # the common ones once, each clone's lessons
        assert pool(server, pool_of(a)).count() == texts
        for clone, other in ((a, "feature"), (b, "main")):
            assert memfiles(clone, "backfill", "--check").exit_code == 0
            assert not any(f"of {other}" in hit["entry"]["title"] for hit in search(clone, "lesson learnt", 50)["hits"])
            answers_from_its_own_files(clone, "lesson learnt", "shared fact")


class TestServerRestart:
    def test_a_server_killed_mid_write_is_recovered_by_the_next_backfill(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The server killed while a backfill publishes (half of the vectors written), then started
        again: the backfill finishes this clone's view all the same (saying the server failed); the
        next backfill shares what the pool lacks from the view, embedding nothing; a row that is not a
        unit vector (a half-written one) is never reused: a joining clone embeds that text again."""
        from memfiles.index import shared

        port = free_port()
        data = tmp_path / "chroma-data"
        proc = start_chroma(data, port)
        url = f"http://127.0.0.1:{port}"
        monkeypatch.setenv("MEMFILES_CHROMA_URL", url)
        a, b = tmp_path / "a", tmp_path / "b"
        (a / "memory").mkdir(parents=True)
        ops = [
            {"op": "add", "kind": "fact", "title": f"Fact {n} about the build farm", "area": "ci", "body": f"Node {n}."}
            for n in range(120)
        ]
        (a / "ops.json").write_text(json.dumps({"ops": ops}))
        ok(a, "import", str(a / "ops.json"))
        monkeypatch.setattr(shared, "UPSERT_BATCH", 30)
        real = shared.SharedVectors.publish
        batches = []

        def publish(self, hashes, vectors, model):  # kill the server after the second batch of 30
            original = self._call

            def call(action):
                if len(batches) == 2:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
                batches.append(1)
                return original(action)

            self._call = call
            try:
                return real(self, hashes, vectors, model)
            finally:
                self._call = original

        try:
            monkeypatch.setattr(shared.SharedVectors, "publish", publish)
            first = memfiles(a, "backfill", "--json")
            assert first.exit_code == 0 and json.loads(first.stdout)["embedded"] == 120
            assert "failed" in first.stderr and "not shared" in first.stderr
            monkeypatch.setattr(shared.SharedVectors, "publish", real)
            assert len(ids(a, "build farm node", 10)) == 10  # the view is whole
            proc = start_chroma(data, port)
            collection = pool_of(a)
            assert pool(url, collection).count() == 60  # the two batches written before the kill
            again = backfill(a)  # shares the 60 the pool lacks, from the view: no encoder runs
            assert again["embedded"] == 0 and pool(url, collection).count() == 120
            stored = pool(url, collection).get(include=["embeddings"])
            view = json.loads(ok(a, "list", "--json").stdout)["entries"]
            assert len(view) == 120 and len(stored["ids"]) == 120
            # A row that is not a vector of the model (a half-written one) is not trusted.
            bad = stored["ids"][0]
            pool(url, collection).update(ids=[bad], embeddings=[[0.01] * len(stored["embeddings"][0])])
            (b / "memory").mkdir(parents=True)
            (b / "memory" / "facts.md").write_text((a / "memory" / "facts.md").read_text())
            joined = backfill(b)
            assert joined["embedded"] == 1 and joined["reused"] == 119
            fixed = pool(url, collection).get(ids=[bad], include=["embeddings"])["embeddings"][0]
            assert abs(sum(x * x for x in fixed) - 1.0) < 1e-3
            assert len(ids(b, "build farm node", 10)) == 10
        finally:
            proc.kill()
            proc.wait()


class TestRebuild:
    def test_search_answers_throughout_a_rebuild(
        self, team: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A rebuild on a server emptied the collection first: for minutes every search said "no entries
        match", exit 0. It now encodes before it takes the index and replaces the view at once: every
        search made while it runs answers with hits, none waits for it to finish (search_timeout 3 s)."""
        a, _b = team
        ops = [
            {"op": "add", "kind": "lesson", "title": f"Lesson {n} on flaky tests", "area": "ci", "body": f"Retry {n}."}
            for n in range(150)
        ]
        (a / "ops.json").write_text(json.dumps({"ops": ops}))
        ok(a, "import", str(a / "ops.json"))
        backfill(a)
        before = json.loads(ok(a, "status", "--json").stdout)["index"]["generation"]
        monkeypatch.setenv("MEMFILES_SEARCH_TIMEOUT", "3")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "MEMFILES_BULK_PRECISION": "float32"}
        rebuild = subprocess.Popen(
            [str(BIN / "memfiles"), "--root", str(a), "backfill", "--rebuild", "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        answered = []
        while rebuild.poll() is None:
            found = ids(a, "flaky tests", 5)
            assert len(found) == 5
            answered.append(found)
        out, err = rebuild.communicate()
        assert rebuild.returncode == 0, err
        assert json.loads(out)["embedded"] == len(BASE) + 150
        assert answered, "no search ran while the rebuild did"
        after = json.loads(ok(a, "status", "--json").stdout)["index"]
        assert after["generation"] != before and after["entries"] == len(BASE) + 150
        assert len(ids(a, "flaky tests", 5)) == 5


class TestWatcherOnAServer:
    def test_the_watcher_follows_checkouts_pulls_and_rebases(self, team: tuple[Path, Path]) -> None:
        """`memfiles watch` refused to run with a server, so nothing followed a branch switch. It now keeps
        this clone's view in step: a checkout, a pull and a rebase each show in its answers (polled here;
        how fast is measured in scripts/bench_shared.py), and status through it names the server."""
        from memfiles.services.indexing.index_client import connect

        a, b = team
        backfill(a)
        backfill(b)
        ok(b, "add", "-k", "T", "-t", "Write the migration guide for the new index", "-a", "docs", "--body", "Soon.")
        git(b, "add", "-A")
        git(b, "commit", "-qm", "feature notes")
        from memfiles.config import load_settings

        def until(check, what: str) -> None:
            deadline = time.monotonic() + 60
            while not check():
                assert time.monotonic() < deadline, f"the watcher did not follow {what}"
                time.sleep(0.1)

        def watched_ids(query: str) -> list[str]:
            client = connect(load_settings(b))
            assert client.where == "watcher"
            from memfiles.index.filters import Filters

            return [hit["entry"]["id"] for hit in client.search([(query, 5)], Filters())[0]]

        with watching(b):
            assert watched_ids("migration guide for the new index")[0] == "T-002"
            git(b, "checkout", "-q", "main")
            until(lambda: "T-002" not in watched_ids("migration guide for the new index"), "a checkout")
            git(b, "checkout", "-q", "feature")
            until(lambda: watched_ids("migration guide for the new index")[:1] == ["T-002"], "a checkout back")
            # A pushes a new entry; B pulls it (main), then rebases feature on it.
            ok(a, "add", "-k", "L", "-t", "Pin the compiler version in CI images", "-a", "ci", "--body", "Drift.")
            git(a, "add", "-A")
            git(a, "commit", "-qm", "a lesson")
            git(a, "push", "-q", "origin", "main")
            git(b, "checkout", "-q", "main")
            git(b, "pull", "-q", "--ff-only", "origin", "main")
            until(lambda: watched_ids("pin the compiler version")[:1] == ["L-002"], "a pull")
            git(b, "checkout", "-q", "feature")
            git(b, "rebase", "-q", "main")
            until(
                lambda: (
                    watched_ids("pin the compiler version")[:1] == ["L-002"]
                    and watched_ids("migration guide for the new index")[:1] == ["T-002"]
                ),
                "a rebase",
            )
            status = connect(load_settings(b)).status()
            assert status["watcher"]["running"] and status["index"]["server"]["error"] is None
            assert status["index"]["server"]["url"] == os.environ["MEMFILES_CHROMA_URL"]
            # An agent's hook is answered by this watcher too (its thin client), from the clone's view.
            probe = (
                "import sys\nsys.argv = ['memfiles', '--root', sys.argv[1], 'hook', 'UserPromptSubmit']\n"
                "from memfiles.cli.entry import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
                "print('memfiles.services.agents.hook_run' in sys.modules, file=sys.stderr)\n"
            )
            for session in ("first", "second"):  # the first reads the settings in full and remembers them
                call = {"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": str(b)}
                done = subprocess.run(
                    [sys.executable, "-c", probe, str(b)],
                    input=json.dumps({**call, "prompt": "Which compiler version do the CI images pin?"}),
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                assert done.returncode == 0 and done.stderr.strip().endswith("False"), done.stderr
                assert "L-002" in done.stdout, done.stdout
        assert memfiles(b, "backfill", "--check").exit_code == 0

    def test_a_search_leaves_a_watcher_with_a_server_too(
        self, team: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """memsearch with no watcher starts one in the background (search_watch), a server configured or not."""
        a, _b = team
        backfill(a)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "MEMFILES_SEARCH_WATCH": "1"}
        first = subprocess.run(
            [str(BIN / "memsearch"), "--root", str(a), "signing keys"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        try:
            assert first.returncode == 0 and "started a watcher in the background" in first.stderr, first.stderr
        finally:
            subprocess.run(
                [str(BIN / "memfiles"), "--root", str(a), "watch", "--stop"], env=env, capture_output=True, timeout=120
            )


class TestGarbageCollection:
    def test_gc_removes_only_what_no_clone_used_and_nothing_else_removes_a_vector(
        self, team: tuple[Path, Path], server: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Vectors no clone marked used for the given time go with `memfiles gc`; a backfill never removes
        one, however many entries it drops; a clone whose vectors were removed still searches, and shares
        them again at its next mark."""
        a, b = team
        backfill(a)
        ok(b, "add", "-k", "T", "-t", "Write the migration guide for the new index", "-a", "docs", "--body", "Soon.")
        backfill(b)
        collection = pool_of(a)
        shared = pool(server, collection)
        assert shared.count() == len(BASE) + 1
        # B drops most of its entries and backfills: the pool keeps every vector.
        for entry_id in ("D-001", "K-001", "F-001"):
            ok(b, "prune", entry_id, "--reason", "moved")
        assert backfill(b)["removed"] == 0 and shared.count() == len(BASE) + 1  # (prune told the view)
        # Everything last used 40 days ago; then A marks its own as used (its daily touch, made due).
        old = int(time.time()) - 40 * 86_400
        every = shared.get(include=[])["ids"]
        shared.update(ids=every, metadatas=[{"used": old}] * len(every))
        from memfiles.index import shared as sharing

        with monkeypatch.context() as paged:  # read a page of 2 at a time: four pages
            paged.setattr(sharing, "UPSERT_BATCH", 2)
            assert json.loads(ok(a, "gc", "--unused-for", "30", "--dry-run", "--json").stdout)["removed"] == len(every)
        for path in (a / ".memsearch").rglob("touched.json"):
            path.unlink()
        backfill(a)
        dry = json.loads(ok(a, "gc", "--unused-for", "30", "--dry-run", "--json").stdout)
        check_command("gc", dry)
        assert dry["removed"] == 1 and dry["dry_run"] and shared.count() == len(BASE) + 1
        done = json.loads(ok(b, "gc", "--unused-for", "30", "--json").stdout)
        assert done["removed"] == 1 and done["kept"] == len(BASE) and shared.count() == len(BASE)
        assert ok(b, "gc", "--unused-for", "30").stdout.startswith("removed 0 vectors unused for 30 days")
        assert ids(b, "migration guide for the new index")[0] == "T-002"  # B's view still has its vector
        for path in (b / ".memsearch").rglob("touched.json"):
            path.unlink()
        assert backfill(b)["embedded"] == 0
        assert shared.count() == len(BASE) + 1  # B's mark shared it again

    def test_gc_without_a_server_is_refused(self, run, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """gc with no index_url: exit 2 naming the setting; a bad --unused-for: exit 2 naming the option."""
        monkeypatch.delenv("MEMFILES_CHROMA_URL", raising=False)
        refused = run("gc", "--unused-for", "30", "--json")
        assert refused.exit_code == 2 and json.loads(refused.stdout)["error"]["key"] == "index_url"
        for bad in ("0", "nan", "-3", "thirty"):
            result = run("gc", "--unused-for", bad)
            assert result.exit_code == 2 and "--unused-for" in result.output
