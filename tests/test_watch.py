"""The watcher with a real watchdog observer on temp folders, the real model and a real Chroma store.

Waits are on conditions with timeouts (polling the watcher through its socket), never bare sleeps.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memfiles.config import load_settings
from memfiles.index.filters import Filters
from memfiles.services.indexing import index_client
from memfiles.services.indexing.ipc import request
from memfiles.services.watch import Watcher, WatcherRunning
from memfiles.store.project import Project
from tests.conftest import Run, watching

pytestmark = pytest.mark.integration
BIN = Path(sys.executable).parent


def wait_until(predicate: Callable[[], object], timeout: float = 15.0) -> None:
    tick = threading.Event()
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return
        tick.wait(0.05)
    raise AssertionError(f"condition not met within {timeout} s")


def watch(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`memfiles watch ARGS` on the project at `root`, as its own process."""
    env = {**os.environ, "MEMFILES_ROOT": str(root)}
    return subprocess.run([str(BIN / "memfiles"), "watch", *args], capture_output=True, text=True, env=env, timeout=600)


def entry(entry_id: str, title: str, body: str, status: str = "open") -> str:
    return f"### {entry_id}: {title}\n\n- date: 2026-11-01\n- area: test\n- status: {status}\n\n{body}\n"


def memory_file(*entries: str) -> str:
    return "# Notes\n\n" + "\n".join(entries)


def write_atomic(path: Path, text: str) -> None:
    """As editors save: a temp file beside the target, renamed over it."""
    temp = path.with_name(f".{path.name}.swp")
    temp.write_text(text)
    os.replace(temp, path)


@pytest.fixture(autouse=True)
def patient_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """How fast the write path reaches the index is measured in benchmarks, not here: on a loaded
    machine a write waits for the watcher's answer instead of printing a timeout warning."""
    monkeypatch.setenv("MEMFILES_INDEX_TIMEOUT", "300")


@pytest.fixture
def watcher(root: Path, run: Run) -> Iterator[Watcher]:
    run(
        "add",
        "-k",
        "F",
        "-t",
        "Chroma hangs with two writers",
        "-a",
        "index",
        "--body",
        "Two PersistentClients on one folder wait for minutes.",
    )
    run("backfill")
    with watching(root, reconcile_every=1.0) as w:
        yield w


@contextlib.contextmanager
def restarted(watcher: Watcher, root: Path, while_down: Callable[[], object]) -> Iterator[Watcher]:
    """Stop the fixture's watcher, do `while_down`, and run a new watcher for the block."""
    watcher.stop()
    watcher.stop = lambda: None  # type: ignore[method-assign]  # stopped: the fixture's stop must do nothing
    while_down()
    with watching(root) as again:
        yield again


def hits(root: Path, query: str, **filters: str) -> list[dict]:
    """The entry objects of the hits, best first."""
    settings = load_settings(root)
    return [h["entry"] for h in index_client.search(settings, [(query, 5)], Filters(**filters))[0]]


def first(root: Path, query: str) -> dict:
    """The entry object of the best hit, or {} while nothing matches (an id not indexed yet is no hit)."""
    found = hits(root, query)
    return found[0] if found else {}


def drift(root: Path) -> dict:
    return index_client.backfill(Project(load_settings(root)), check=True)["drift"]


def no_drift(root: Path) -> bool:
    d = drift(root)
    return not (d["missing_or_stale"] or d["retag"] or d["orphaned"])


class TestEdits:
    def test_editor_atomic_save_is_followed(self, watcher: Watcher, root: Path) -> None:
        """A temp-file-and-rename save (no Modified event on the target) reaches the index."""
        path = root / "memory" / "frictions.md"
        write_atomic(path, path.read_text().replace("wait for minutes", "deadlock on the sqlite file"))
        wait_until(lambda: "deadlock" in first(root, "deadlock on the sqlite file").get("body", ""))

    def test_in_place_write_and_new_file(self, watcher: Watcher, root: Path) -> None:
        """A plain write of a new file is indexed; editing it in place updates it."""
        path = root / "memory" / "notes.md"
        path.write_text(memory_file(entry("K-001", "Backups are kept thirty days", "Then deleted.")))
        wait_until(lambda: first(root, "K-001").get("id") == "K-001")
        with open(path, "w") as handle:
            handle.write(memory_file(entry("K-001", "Backups are kept ninety days", "Then deleted.")))
        wait_until(lambda: first(root, "K-001").get("title") == "Backups are kept ninety days")
        assert no_drift(root)

    def test_delete_removes_entries(self, watcher: Watcher, root: Path) -> None:
        """Deleting a file takes its entries out of the index."""
        (root / "memory" / "frictions.md").unlink()
        wait_until(lambda: no_drift(root) and drift(root)["indexed"] == 0)

    def test_entry_moved_between_files_keeps_id_and_vector(self, watcher: Watcher, root: Path) -> None:
        """Cut from one file, pasted into another: same id, new path, not embedded again."""
        upserted: list[str] = []
        original = watcher.session.store.upsert
        watcher.session.store.upsert = lambda ids, *rest: upserted.extend(ids) or original(ids, *rest)
        source = root / "memory" / "frictions.md"
        moved = entry("F-001", "Chroma hangs with two writers", "Two PersistentClients on one folder wait for minutes.")
        (root / "memory" / "archive.md").write_text(memory_file(moved))
        write_atomic(source, memory_file())
        wait_until(lambda: first(root, "F-001").get("path") == "memory/archive.md")
        wait_until(lambda: no_drift(root))
        assert upserted == []  # only its tags changed

    def test_invalid_save_keeps_last_good_entries(self, watcher: Watcher, root: Path) -> None:
        """A save that does not parse keeps the old entries searchable and is reported; the next good save wins."""
        path = root / "memory" / "frictions.md"
        good = path.read_text()
        write_atomic(path, good.replace("- status: open", "- status open"))
        wait_until(lambda: "memory/frictions.md" in watcher.catalog.broken)
        assert hits(root, "F-001")[0]["id"] == "F-001"
        write_atomic(path, good.replace("wait for minutes", "recovered"))
        wait_until(lambda: "recovered" in first(root, "F-001").get("body", ""))
        assert watcher.catalog.broken == {}

    def test_new_package_folder_is_watched(self, watcher: Watcher, root: Path) -> None:
        """A memory/ folder created under a new package after the start is found and indexed."""
        folder = root / "pkg" / "memory"
        folder.mkdir(parents=True)
        (folder / "notes.md").write_text(memory_file(entry("K-007", "The package keeps its own notes", "Yes.")))
        wait_until(lambda: first(root, "K-007").get("id") == "K-007")
        assert hits(root, "K-007")[0]["path"] == "pkg/memory/notes.md"

    def test_status_through_the_watcher_is_the_documented_object(self, watcher: Watcher, root: Path, run: Run) -> None:
        """status answered by a watcher left out `index.error`, which the contract says is always there."""
        from tests.contract_shapes import check_command

        said = json.loads(run("status", "--json").stdout)
        check_command("status", said)
        assert said["watcher"]["running"] is True and said["index"]["error"] is None

    def test_a_package_folder_deleted_and_made_again_is_still_watched(self, watcher: Watcher, root: Path) -> None:
        """A branch without the package and back (or `git stash -u`): the folder goes and comes again. The
        watcher reused the watch whose emitter died with the old folder, and no later edit in it was seen
        (only the periodic reconcile, 30 s later, caught up). Each edit is seen at once now."""
        watcher.reconcile_every = 3600.0  # only the folder watch may find the edits below
        folder = root / "pkg" / "memory"
        folder.mkdir(parents=True)
        text = memory_file(entry("K-007", "The package keeps its own notes", "Beavers build dams."))
        (folder / "notes.md").write_text(text)
        wait_until(lambda: first(root, "K-007").get("id") == "K-007")
        shutil.rmtree(root / "pkg")
        wait_until(lambda: first(root, "K-007") == {})
        folder.mkdir(parents=True)
        (folder / "notes.md").write_text(text)
        wait_until(lambda: first(root, "K-007").get("id") == "K-007")
        write_atomic(folder / "notes.md", text.replace("dams.", "dams and lodges."))
        wait_until(lambda: "lodges" in first(root, "K-007").get("body", ""))


class TestUsage:
    @pytest.mark.parametrize("value", ["abc", "-1", "nan"])
    def test_bad_idle_window_is_exit_2(self, run: Run, root: Path, monkeypatch, value: str) -> None:
        """A MEMFILES_WATCH_SAVE_AFTER that is not a number of seconds is refused, naming it; nothing starts."""
        monkeypatch.setenv("MEMFILES_WATCH_SAVE_AFTER", value)
        result = run("watch")
        assert result.exit_code == 2 and "MEMFILES_WATCH_SAVE_AFTER" in result.stderr
        assert not (root / ".memsearch" / "watch.pid").exists()


class TestIdleExit:
    def test_a_watcher_with_no_query_and_no_change_stops_itself(self, watcher: Watcher, root: Path) -> None:
        """--idle-exit: after that many seconds with nothing asked and nothing changed, the watcher stops
        on its own; a ping (a client only asking whether a watcher runs) does not count as use, nor does a
        status (a status bar polling it kept the watcher and its model in memory for good)."""
        watcher.stop()
        watcher.stop = lambda: None  # type: ignore[method-assign]
        settings = load_settings(root)
        with watching(root, idle_exit=1.0) as idle:
            deadline = time.monotonic() + 60
            turn = 0
            while not idle.stopping.is_set() and time.monotonic() < deadline:  # asked all along, every 0.2 s
                request(settings, {"op": "status" if turn % 2 else "ping"}, timeout=30)
                turn += 1
                time.sleep(0.2)
            assert idle.stopping.is_set()

    @pytest.mark.slow
    def test_queries_and_edits_keep_it_running(self, watcher: Watcher, root: Path) -> None:
        """Each query and each change to a memory file counts the idle time from zero again; once they
        stop, so does the watcher."""
        watcher.stop()
        watcher.stop = lambda: None  # type: ignore[method-assign]
        settings = load_settings(root)
        notes = root / "memory" / "notes.md"
        with watching(root, idle_exit=3.0) as idle:
            # each one is seen to count the idle time from zero again (the watcher's own clock, not this
            # test's pace: a loaded machine that stalls the loop must not fail it)
            for turn in range(6):
                before = time.monotonic()
                if turn % 2:
                    asked = {"op": "search", "queries": [["edited", 1]], "filters": {}}
                    assert request(settings, asked, timeout=30) is not None
                else:
                    write_atomic(notes, memory_file(entry("K-010", f"Edited {turn} times", "b")))
                wait_until(lambda since=before: idle.last_active >= since, timeout=60)
            quiet_from = idle.last_active
            wait_until(idle.stopping.is_set, timeout=60)
            assert time.monotonic() - quiet_from >= 3.0  # it stopped once quiet for its idle exit, not before

    @pytest.fixture
    def spawned(self, run: Run, root: Path) -> Iterator[int]:
        """A watcher just spawned in the background as memsearch or a hook spawns one (not listening yet);
        its pid. Killed afterwards if a test left it running."""
        from memfiles.services.indexing.daemon import spawn_background

        run("add", "-k", "F", "-t", "A friction", "-a", "index", "--body", "Body.")
        run("backfill")
        pid = spawn_background(load_settings(root), "search")
        assert pid is not None
        try:
            yield pid
        finally:
            watch(root, "--stop")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def test_stop_right_after_a_spawn_stops_the_watcher_that_does_not_answer_yet(
        self, spawned: int, root: Path
    ) -> None:
        """`memfiles watch --stop` at once after memsearch (or a hook) spawned a watcher, before it listens:
        the spawner's pid file names it, so --stop stops it instead of saying no watcher runs."""
        from memfiles.services.indexing.daemon import _gone

        stopped = watch(root, "--stop")
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.strip() == f"stopped the watcher (pid {spawned})"
        assert _gone(spawned)
        again = watch(root, "--stop")
        assert again.returncode == 1 and "no watcher is running" in again.stderr

    def test_watch_right_after_a_spawn_reports_the_watcher_that_won(self, spawned: int, root: Path) -> None:
        """`memfiles watch` at once after memsearch spawned a watcher that does not listen yet: its own
        child loses the race for the project (and exits), and the command reports the one that won, exit 0,
        instead of "the watcher exited (code 1) before it answered"."""
        started = watch(root)
        assert started.returncode == 0, started.stderr
        assert f"(pid {spawned})" in started.stdout, started.stdout

    def test_status_calls_a_watcher_that_does_not_answer_yet_starting(self, run: Run, root: Path) -> None:
        """A live watcher process of this project that does not answer (yet) is `starting` with its pid in
        `status`, text and JSON, not "not running"; once it is gone, status says not running again. The
        process stands still (it sleeps under a watcher's command line), so the test does not race it."""
        from memfiles.services.indexing.daemon import starting_path

        run("add", "-k", "F", "-t", "A friction", "-a", "index", "--body", "Body.")
        run("backfill")
        code = "import time; time.sleep(120)"
        still = subprocess.Popen([sys.executable, "-c", code, "--root", str(root), "watch", "--foreground"])
        try:
            starting_path(load_settings(root)).write_text(f"{still.pid}\n")
            shown = run("status", "--json")
            assert shown.exit_code == 0, shown.output
            watcher = json.loads(shown.stdout)["watcher"]
            assert (watcher["running"], watcher["starting"], watcher["pid"]) == (False, True, still.pid)
            text = run("status")
            assert f"watcher:  starting, pid {still.pid} (it does not answer yet)" in text.stdout
        finally:
            still.kill()
            still.wait()
        after = json.loads(run("status", "--json").stdout)["watcher"]
        assert (after["running"], after["starting"], after["pid"]) == (False, False, None)

    @pytest.mark.parametrize("value", ["-1", "nan", "inf", "604801"])
    def test_a_bad_idle_exit_is_exit_2(self, run: Run, root: Path, value: str) -> None:
        """--idle-exit takes seconds, 0 (never) or more; anything else is refused before a watcher starts."""
        result = run("watch", "--idle-exit", value)
        assert result.exit_code == 2 and "--idle-exit" in result.stderr
        assert not (root / ".memsearch" / "watch.pid").exists()


class TestOwnership:
    def test_second_watcher_refuses(self, watcher: Watcher, root: Path) -> None:
        """One watcher per project; the second says which pid owns it."""
        with pytest.raises(WatcherRunning, match=f"pid {os.getpid()}"):
            Watcher(Project(load_settings(root))).start()

    def test_watch_while_one_runs_exits_0(self, watcher: Watcher, run: Run) -> None:
        """`memfiles watch` when a watcher already runs: exit 0 naming its pid, so `memfiles watch && memfiles
        status` (the README's line) goes on; no second watcher is started."""
        result = run("watch")
        assert result.exit_code == 0, result.output
        assert result.stdout.strip() == f"watcher already running (pid {os.getpid()})"
        assert result.stderr == ""
        told = run("watch", "--idle-exit", "60")  # nothing to apply it to: said, not silently dropped
        assert told.exit_code == 0 and "--idle-exit not applied" in told.stderr

    def test_stop_works_while_the_config_is_broken(self, run: Run, root: Path) -> None:
        """A config broken while a watcher runs does not keep `watch --stop` from stopping it: the error is
        said as a warning, the watcher is stopped, exit 0; other commands still refuse the config."""
        from memfiles.services.indexing.daemon import _gone

        run("add", "-k", "F", "-t", "A friction", "-a", "index", "--body", "Body.")
        run("backfill")
        started = watch(root)
        assert started.returncode == 0, started.stderr
        pid = int(started.stdout.split("pid ")[1].split(")")[0])
        try:
            (root / "memory" / "memfiles.toml").write_text('watch_torch = "yes"\n')
            stopped = watch(root, "--stop")
            assert stopped.returncode == 0, stopped.stderr
            assert stopped.stdout.strip() == f"stopped the watcher (pid {pid})" and _gone(pid)
            assert "warning: memory/memfiles.toml: watch_torch" in stopped.stderr
            assert "stopping the watcher all the same" in stopped.stderr
            again = watch(root)
            assert again.returncode == 2 and "memory/memfiles.toml: watch_torch" in again.stderr
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def test_a_command_waiting_on_the_store_hands_over_to_a_watcher_that_started_meanwhile(
        self, watcher: Watcher, root: Path
    ) -> None:
        """A command that found no watcher and waits for the store lock, while a watcher starts and takes
        the store for its life: it asks the watcher instead of waiting out lock_timeout and failing with
        "busy" (a `status` right after a memsearch spawned one used to)."""
        from memfiles.index.chroma import store_lock

        watcher.stop()
        watcher.stop = lambda: None  # type: ignore[method-assign]
        settings = load_settings(root)
        held = store_lock(settings, 5)
        held.acquire()  # the store is busy (as a starting watcher makes it) before the command looks
        answers: dict[str, object] = {}

        def status() -> None:
            try:
                answers["status"] = index_client.connect(settings).status()
            except Exception as error:  # said by the assertion below
                answers["error"] = error

        asking = threading.Thread(target=status)
        asking.start()
        time.sleep(0.3)  # it found no watcher and waits for the store
        late = Watcher(Project(settings), debounce=0.1)
        starting = threading.Thread(target=late.start)
        starting.start()
        try:
            wait_until(lambda: request(settings, {"op": "ping"}, timeout=5) is not None, timeout=60)
            time.sleep(1.5)  # past HANDOVER_AFTER: the command has asked whether a watcher answers now
            held.release()  # the watcher gets the store, catches up and answers the command
            asking.join(120)
            starting.join(120)
            assert "error" not in answers, answers.get("error")
            assert answers["status"]["watcher"]["running"] is True  # type: ignore[index]
        finally:
            held.release()
            late.stop()

    def test_write_path_goes_through_the_watcher(self, watcher: Watcher, run: Run, root: Path) -> None:
        """memfiles add while watching: no 'index busy', the entry is searchable at once."""
        result = run("add", "-k", "D", "-t", "Route writes through the owner", "-a", "index", "--body", "Always.")
        assert result.exit_code == 0 and result.stderr == ""
        assert hits(root, "D-001")[0]["id"] == "D-001"

    def test_restart_catches_up_with_changes_made_while_down(self, watcher: Watcher, root: Path) -> None:
        """Stop, edit, start again: the new watcher indexes what changed meanwhile."""
        later = root / "memory" / "later.md"
        with restarted(watcher, root, lambda: later.write_text(memory_file(entry("K-002", "Written meanwhile", "b")))):
            assert hits(root, "K-002")[0]["id"] == "K-002"
            assert no_drift(root)

    def test_a_lexical_index_of_another_recipe_is_saved_again_by_the_watcher(
        self, watcher: Watcher, root: Path
    ) -> None:
        """A bm25 index saved by another recipe (an older memfiles) when the watcher starts: its catch-up
        backfill, with nothing to embed, saves one of this recipe, so commands that run without a
        watcher stop rebuilding it on every open."""
        from memfiles.index.lexical import RECIPE

        vocab = next((root / ".memsearch").glob("*/bm25-vocab.json"))
        stale = {**json.loads(vocab.read_text()), "recipe": "k1=1.2 b=0.75 title=2"}
        with restarted(watcher, root, lambda: vocab.write_text(json.dumps(stale))):
            assert first(root, "two writers hang")["id"] == "F-001"
            deadline = time.monotonic() + 60
            while json.loads(vocab.read_text()).get("recipe") != RECIPE and time.monotonic() < deadline:
                time.sleep(0.1)
            assert json.loads(vocab.read_text())["recipe"] == RECIPE

    def test_an_unreadable_lexical_index_after_a_backfill_is_built_from_the_catalog(
        self, watcher: Watcher, root: Path
    ) -> None:
        """The watcher's reload after a backfill meets a vocabulary file it cannot use (another writer, a
        torn disk): it builds the index from its catalog instead of raising."""
        vocab = next((root / ".memsearch").glob("*/bm25-vocab.json"))
        vocab.write_text("[]")
        index = watcher.keeper.searcher_lexical_from_disk()
        assert sorted(index.ids) == sorted(watcher.keeper.catalog.order) and index.scores("writers").any()


TOPICS = [
    ("Signing keys rotate every ninety days", "The key service issues a new signing key each quarter."),
    ("Invoices are rendered as PDF on the worker", "The web process never renders documents itself."),
    ("The staging database is refreshed on Mondays", "A snapshot of production, scrubbed, replaces it weekly."),
    ("Feature flags live in the config repository", "Each flag has an owner and an expiry date."),
]


@pytest.mark.slow
class TestBursts:
    def test_thousand_file_burst_converges(self, watcher: Watcher, root: Path) -> None:
        """1,000 files written at once (a branch switch) end equal to a fresh backfill: no drift."""
        folder = root / "memory" / "burst"
        folder.mkdir()
        for n in range(1000):
            (folder / f"f{n:04d}.md").write_text(memory_file(entry(f"E-{n + 1:03d}", f"Episode {n}", f"Run {n}.")))
        wait_until(lambda: drift(root)["indexed"] == 1001 and no_drift(root), timeout=240)

    def test_concurrent_adds_while_watching(self, watcher: Watcher, root: Path) -> None:
        """4 processes adding at once while the watcher runs: every entry indexed, no drift, no warning.
        The four say unrelated things: whether one add's near-duplicate check sees another's entry
        depends on timing, and that is not what this test is about."""
        env = {**os.environ, "MEMFILES_ROOT": str(root)}
        procs = [
            subprocess.Popen(
                [
                    str(BIN / "memfiles"),
                    "add",
                    "-k",
                    "K",
                    "-t",
                    TOPICS[n][0],
                    "-a",
                    "race",
                    "--body",
                    TOPICS[n][1],
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(4)
        ]
        for proc in procs:
            _out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0 and "warning" not in err, err
        wait_until(lambda: drift(root)["indexed"] == 5 and no_drift(root))


@pytest.mark.slow
class TestCrash:
    def test_kill_9_then_restart(self, root: Path, run: Run) -> None:
        """A watcher killed with SIGKILL leaves a socket and pid file; the next one cleans up and serves."""
        run("add", "-k", "F", "-t", "Something to find", "-a", "x", "--body", "Body.")
        env = {**os.environ, "MEMFILES_ROOT": str(root)}
        first = subprocess.Popen(
            [str(BIN / "memfiles"), "watch", "--foreground"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        settings = load_settings(root)
        wait_until(lambda: _status(settings) is not None, timeout=60)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        assert (root / ".memsearch" / "watch.sock").exists()
        assert request(settings, {"op": "ping"}) is None  # a dead socket reads as "no watcher"
        (root / "memory" / "extra.md").write_text(memory_file(entry("K-001", "Added while the watcher was dead", "b")))
        started = subprocess.run([str(BIN / "memfiles"), "watch"], env=env, capture_output=True, text=True, timeout=120)
        assert started.returncode == 0, started.stderr
        try:
            status = json.loads(
                subprocess.run(
                    [str(BIN / "memfiles"), "status", "--json"], env=env, capture_output=True, text=True, check=True
                ).stdout
            )
            assert status["watcher"]["running"] and status["index"]["entries"] == 2
            assert not status["drift"]["missing_or_stale"]
        finally:
            subprocess.run([str(BIN / "memfiles"), "watch", "--stop"], env=env, check=False)

    def test_kill_9_before_the_catalog_save(self, root: Path, run: Run) -> None:
        """A watcher killed after a sync but before its idle catalog save (the window widened by
        MEMFILES_WATCH_SAVE_AFTER): the next memsearch finds the synced entry with no KeyError, and a
        plain backfill saves a catalog in step with the store."""
        from memfiles.index.chroma import open_store
        from memfiles.index.embedder import collection_name, load_embedder

        run("add", "-k", "F", "-t", "Something to find", "-a", "x", "--body", "Body.")
        run("backfill")
        settings = load_settings(root)
        env = {**os.environ, "MEMFILES_ROOT": str(root), "MEMFILES_WATCH_SAVE_AFTER": "3600"}
        watcher = subprocess.Popen(
            [str(BIN / "memfiles"), "watch", "--foreground"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            wait_until(lambda: _status(settings) is not None, timeout=120)
            (root / "memory" / "later.md").write_text(
                memory_file(entry("K-001", "Backups are kept for thirty days", "Then they are deleted."))
            )
            wait_until(lambda: first(root, "K-001").get("id") == "K-001", timeout=60)
            status = _status(settings)
            assert status is not None and status["index"]["catalog"]["saved"] is False  # inside the window
        finally:
            os.kill(watcher.pid, signal.SIGKILL)
            watcher.wait()
        embedder = load_embedder(None, light=True)
        name = collection_name(embedder.name, embedder.dimension)
        sidecar = root / ".memsearch" / name / "catalog.json"
        on_disk = json.loads(sidecar.read_text())
        with open_store(settings, name) as store:
            generation = store.stamp().generation
        assert "K-001" not in {d["id"] for d in on_disk["docs"]} and on_disk["generation"] != generation
        assert hits(root, "K-001")[0]["id"] == "K-001"  # the store's entry, read into a rebuilt catalog
        assert hits(root, "how long do we keep backups")[0]["id"] == "K-001"
        sidecar.write_text(json.dumps(on_disk))  # stale again: a plain backfill must repair it
        backfill = subprocess.run(
            [str(BIN / "memfiles"), "backfill", "--json"], env=env, capture_output=True, text=True, check=True
        )
        assert json.loads(backfill.stdout)["indexed"] == 0  # nothing to embed: only the catalog was behind
        repaired = json.loads(sidecar.read_text())
        assert "K-001" in {d["id"] for d in repaired["docs"]} and repaired["generation"] == generation
        assert no_drift(root)


def _status(settings) -> dict | None:
    try:
        return request(settings, {"op": "status"}, timeout=60)
    except Exception:
        return None


class TestWarmClient:
    def test_memsearch_through_the_watcher_imports_nothing_heavy(self, watcher: Watcher, root: Path) -> None:
        """A memsearch answered by the watcher loads neither torch, chromadb nor numpy in the client."""
        code = (
            "import json, sys\nfrom click.testing import CliRunner\nfrom memfiles.cli.search import memsearch\n"
            f"r = CliRunner().invoke(memsearch, ['--root', {str(root)!r}, 'two writers', '--json'])\n"
            "assert r.exit_code == 0, r.output\n"
            "print(json.dumps([json.loads(r.stdout)['hits'][0]['entry']['id'], sorted(sys.modules)]))"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        first, modules = json.loads(out.strip().splitlines()[-1])
        assert first == "F-001"
        assert not {"torch", "chromadb", "numpy", "sentence_transformers"} & set(modules)


class TestTorchQueries:
    """With `watch_torch` on, a watcher asked its first query answers the next ones with the torch encoder
    (bert_torch.py), loaded in the background; the same hits and scores as the numpy encoder gave. Off by
    default: the watcher stays on numpy and never imports torch (issue 34)."""

    @pytest.fixture(autouse=True)
    def torch_on(self, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
        if request.node.name != "test_watch_torch_off_keeps_numpy":
            monkeypatch.setenv("MEMFILES_WATCH_TORCH", "1")

    @staticmethod
    def scored(root: Path, query: str) -> list[tuple[str, float]]:
        settings = load_settings(root)
        return [(h["entry"]["id"], h["score"]) for h in index_client.search(settings, [(query, 5)], Filters())[0]]

    def test_the_first_query_switches_queries_to_torch(self, watcher: Watcher, root: Path, run: Run) -> None:
        from memfiles.index.bert_torch import TorchBertEmbedder
        from memfiles.index.embedder import NumpyBertEmbedder

        run("add", "-k", "F", "-t", "Backfill stalls on a locked store", "-a", "index", "--body", "It waits.")
        wait_until(lambda: first(root, "locked store").get("id") == "F-002", timeout=120)
        wait_until(lambda: isinstance(watcher.keeper.searcher.embedder, TorchBertEmbedder), timeout=120)
        assert watcher.session.bulk is watcher.keeper.searcher.embedder  # one torch model, shared with syncs
        assert _status(load_settings(root))["watcher"]["query_encoder"] == "torch"  # type: ignore[index]
        assert "(queries in torch)" in run("status").stdout
        with_torch = self.scored(root, "two writers hang")
        with watcher.keeper.mutex:
            watcher.keeper.searcher.embedder = watcher.session.embedder  # numpy, for the same query
        assert type(watcher.keeper.searcher.embedder) is NumpyBertEmbedder
        with_numpy = self.scored(root, "two writers hang")
        assert [i for i, _ in with_torch] == [i for i, _ in with_numpy] and with_torch[0][0] == "F-001"
        assert all(abs(a - b) < 1e-4 for (_, a), (_, b) in zip(with_torch, with_numpy, strict=True))

    def test_queries_go_on_in_numpy_while_torch_loads(
        self, root: Path, run: Run, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The load runs without the keeper's mutex: held at its start (a gate the test opens), queries,
        a status and a write's sync are answered meanwhile, in numpy; once it is let go, torch takes over."""
        from memfiles.index.bert_torch import TorchBertEmbedder
        from memfiles.index.embedder import NumpyBertEmbedder
        from memfiles.services.watch.keeper import IndexKeeper

        run("add", "-k", "F", "-t", "Chroma hangs with two writers", "-a", "index", "--body", "They wait.")
        run("backfill")
        gate, reached = threading.Event(), threading.Event()
        load = IndexKeeper._torch_encoder

        def held(keeper: IndexKeeper, light: object) -> object:
            reached.set()
            assert gate.wait(300)
            return load(keeper, light)

        monkeypatch.setattr(IndexKeeper, "_torch_encoder", held)
        with watching(root) as w:
            try:
                assert first(root, "two writers hang")["id"] == "F-001"  # starts the load
                assert reached.wait(120)
                answers: list[object] = []
                asking = threading.Thread(
                    target=lambda: answers.extend(
                        [
                            first(root, "two writers hang")["id"],
                            request(load_settings(root), {"op": "status"}, timeout=120) is not None,
                            run("add", "-k", "T", "-t", "Watch the loader", "-a", "index", "--body", "B.").exit_code,
                        ]
                    ),
                    daemon=True,
                )
                asking.start()
                asking.join(120)  # with the load holding the mutex, these would wait for the gate
                assert answers == ["F-001", True, 0]
                assert type(w.keeper.searcher.embedder) is NumpyBertEmbedder
                assert _status(load_settings(root))["watcher"]["query_encoder"] == "loading torch"  # type: ignore[index]
            finally:
                gate.set()
            w.keeper.settle(timeout=120)
            assert isinstance(w.keeper.searcher.embedder, TorchBertEmbedder)
            wait_until(lambda: first(root, "watch the loader").get("id") == "T-001", timeout=120)

    def test_watch_torch_off_keeps_numpy(self, root: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
        """The default: queries in numpy, torch never loaded."""
        from memfiles.index.embedder import NumpyBertEmbedder

        run("add", "-k", "F", "-t", "Chroma hangs with two writers", "-a", "index", "--body", "They wait.")
        run("backfill")
        monkeypatch.delenv("MEMFILES_WATCH_TORCH", raising=False)
        with watching(root) as w:
            assert first(root, "two writers hang")["id"] == "F-001"
            assert w.keeper._torch_queries is None and type(w.keeper.searcher.embedder) is NumpyBertEmbedder
            assert _status(load_settings(root))["watcher"]["query_encoder"] == "numpy"  # type: ignore[index]

    def test_torch_that_cannot_load_leaves_numpy_answering(
        self, root: Path, run: Run, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        """torch missing (its module cannot be imported): a warning in the log, queries go on in numpy."""
        from memfiles.index.embedder import NumpyBertEmbedder

        run("add", "-k", "F", "-t", "Chroma hangs with two writers", "-a", "index", "--body", "They wait.")
        run("backfill")
        monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
        with watching(root) as w:
            assert first(root, "two writers hang")["id"] == "F-001"
            w.keeper.settle(timeout=120)
            assert type(w.keeper.searcher.embedder) is NumpyBertEmbedder
            assert first(root, "two writers hang")["id"] == "F-001"
        assert "queries stay on the numpy encoder: torch could not be loaded" in caplog.text


class TestStale:
    """A watcher whose project changed under it (config, folder, index folder) stops serving and exits:
    before, it answered with the old settings, and backfill asked it and found no drift."""

    def test_a_config_change_sends_clients_on_without_it(self, watcher: Watcher, root: Path, run: Run) -> None:
        settings = load_settings(root)
        assert request(settings, {"op": "ping"}, timeout=30) is not None
        (root / "memory" / "memfiles.toml").write_text(
            '[kinds.risk]\nprefix = "R"\nstatuses = ["open", "mitigated"]\nfile = "risks.md"\n'
        )
        assert request(settings, {"op": "ping"}, timeout=30) is None  # it answers "gone": no watcher
        assert watcher.stopping.is_set()
        watcher.stop()  # what its process does once `stopping` is set: the store lock is free again
        result = run("add", "-k", "risk", "-t", "Vendor lock-in on the queue service", "-a", "infra", "--body", "x")
        assert result.exit_code == 0, result.stderr
        assert first(root, "R-001").get("id") == "R-001"
        assert no_drift(root)

    def test_a_deleted_index_folder_makes_it_exit(self, watcher: Watcher, root: Path) -> None:
        import shutil

        shutil.rmtree(load_settings(root).index_dir)
        wait_until(watcher.stopping.is_set, timeout=30)  # its reconcile loop (every 1 s here) sees it

    def test_a_moved_project_makes_it_exit(self, watcher: Watcher, root: Path) -> None:
        moved = root.with_name(root.name + "-moved")
        root.rename(moved)
        try:
            wait_until(watcher.stopping.is_set, timeout=30)
        finally:
            watcher.stop()
            moved.rename(root)

    @pytest.mark.slow
    def test_a_watcher_process_starts_again_on_a_changed_config(self, root: Path, run: Run) -> None:
        """`memfiles watch` in the background: the config changes, the process (the same pid) serves the
        new settings, and an entry of a kind the change added is indexed; a broken config stops it."""
        run("add", "-k", "D", "-t", "Ids are never reused", "-a", "format", "--body", "Old references stay.")
        assert run("backfill").exit_code == 0
        assert watch(root).returncode == 0
        settings = load_settings(root)
        try:
            pid = request(settings, {"op": "ping"}, timeout=60)["pid"]
            (root / "memory" / "memfiles.toml").write_text(
                '[kinds.risk]\nprefix = "R"\nstatuses = ["open", "mitigated"]\nfile = "risks.md"\n'
            )
            result = run("add", "-k", "risk", "-t", "Vendor lock-in on the queue service", "-a", "infra", "--body", "x")
            assert result.exit_code == 0, result.stderr

            def serves_the_risk() -> bool:
                try:
                    answer = request(load_settings(root), {"op": "ping"}, timeout=60)
                except Exception:
                    return False
                return answer is not None and answer.get("ready") and first(root, "R-001").get("id") == "R-001"

            wait_until(serves_the_risk, timeout=120)
            assert request(settings, {"op": "ping"}, timeout=60)["pid"] == pid
            (root / "memory" / "memfiles.toml").write_text("wrap = true\n")
            request(settings, {"op": "ping"}, timeout=60)  # it sees the change, and its new process refuses it
            wait_until(lambda: not _alive(pid), timeout=120)
            assert "wrap: must be" in (root / ".memsearch" / "watch.out").read_text()
            assert "could not start: memory/memfiles.toml: wrap" in (root / ".memsearch" / "watch.log").read_text()
        finally:
            (root / "memory" / "memfiles.toml").unlink(missing_ok=True)
            watch(root, "--stop")

    @pytest.mark.slow
    def test_a_stop_asked_for_after_a_config_change_is_a_stop(self, root: Path, run: Run) -> None:
        """`watch --stop` right after a config edit: its ping finds the watcher stale (a restart is due),
        then its signal stops it for good; the restart used to win and the stop fail after 60 s."""
        run("add", "-k", "D", "-t", "Ids are never reused", "-a", "format", "--body", "Old references stay.")
        assert run("backfill").exit_code == 0
        assert watch(root).returncode == 0
        settings = load_settings(root)
        pid = request(settings, {"op": "ping"}, timeout=60)["pid"]
        try:
            (root / "memory" / "memfiles.toml").write_text("wrap = 80\n")
            stopped = watch(root, "--stop")
            assert stopped.returncode == 0, stopped.stderr
            wait_until(lambda: not _alive(pid), timeout=60)
        finally:
            if _alive(pid):  # left running by a failure: no watcher outlives its test
                os.kill(pid, signal.SIGKILL)

    def test_a_config_change_that_leaves_the_settings_changes_nothing(self, watcher: Watcher, root: Path) -> None:
        """A version bump in pyproject.toml (no [tool.memfiles] change): the watcher goes on serving."""
        (root / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2"\n')
        assert request(load_settings(root), {"op": "ping"}, timeout=30) is not None
        assert not watcher.stopping.is_set()
        (root / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "3"\n')
        assert request(load_settings(root), {"op": "ping"}, timeout=30) is not None
        assert not watcher.stopping.is_set()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class TestSuccession:
    """A watcher on its way out takes its socket away at once and never removes a successor's files."""

    def test_an_index_folder_made_anew_makes_it_exit(self, watcher: Watcher, root: Path, run: Run) -> None:
        """rm -rf .memsearch, then a backfill makes the folder anew: another folder, whose store this
        watcher does not hold (it ran on, failing every reconcile, and a second watcher joined it)."""
        import shutil

        shutil.rmtree(load_settings(root).index_dir)
        assert run("backfill").exit_code == 0
        wait_until(watcher.stopping.is_set, timeout=30)  # its reconcile loop (every 1 s here) sees it

    @pytest.mark.slow
    def test_a_watcher_started_just_after_a_kill_is_the_one_that_runs(self, root: Path, run: Run) -> None:
        """kill, then `memfiles watch` at once: the dying one no longer answers (it said 'already running'
        and then was gone), the new one waits for its lock, and its socket outlives the old one's exit."""
        run("add", "-k", "D", "-t", "Ids are never reused", "-a", "format", "--body", "Old references stay.")
        assert run("backfill").exit_code == 0
        assert watch(root).returncode == 0
        settings = load_settings(root)
        old = request(settings, {"op": "ping"}, timeout=60)["pid"]
        new = None
        try:
            os.kill(old, signal.SIGTERM)
            started = watch(root)
            assert started.returncode == 0, started.stderr
            assert "already running" not in started.stdout
            wait_until(lambda: not _alive(old), timeout=60)
            answer = request(settings, {"op": "ping"}, timeout=60)
            assert answer is not None and answer["pid"] != old
            new = answer["pid"]
        finally:
            stopped = watch(root, "--stop")
            for pid in (old, new):
                if pid is not None and _alive(pid):
                    os.kill(pid, signal.SIGKILL)
        assert stopped.returncode == 0, stopped.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--debounce", "nan"], "'--debounce': must be a number from 0 up to 60, got nan"),
        (["--debounce", "-1"], "'--debounce'"),
        (["--reconcile-every", "0"], "'--reconcile-every': must be a number above 0"),
        (["--reconcile-every", "nan"], "'--reconcile-every'"),
    ],
)
def test_watch_refuses_timings_that_are_no_number_of_seconds(run: Run, args: list[str], words: str) -> None:
    """A debounce of NaN or below 0 and a reconcile period of 0 or NaN: exit 2 naming the option (a
    watcher started with them, reconciling without pause)."""
    result = run("watch", "--foreground", *args)
    assert result.exit_code == 2 and words in result.output
