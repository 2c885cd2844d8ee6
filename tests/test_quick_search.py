"""The thin memsearch client prints exactly what the full command prints, and hands everything else to it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memfiles.cli.main import cli
from memfiles.cli.quick_search import here, quick, read_args
from memfiles.cli.search import memsearch
from memfiles.config import load_settings
from memfiles.services.watch import Watcher
from memfiles.store.project import Project
from tests.conftest import SAMPLE_ENTRIES as ENTRIES
from tests.conftest import Run, store_held
from tests.contract_shapes import check_command

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def patient_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMFILES_INDEX_TIMEOUT", "300")


@pytest.fixture
def watched(run: Run, root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for kind, title, area, body in ENTRIES:
        assert run("add", "-k", kind, "-t", title, "-a", area, "--body", body).exit_code == 0
    assert run("backfill").exit_code == 0
    watcher = Watcher(Project(load_settings(root)), debounce=0.1, reconcile_every=30.0)
    watcher.start()
    monkeypatch.setenv("MEMFILES_ROOT", str(root))
    yield root
    watcher.stop()


def full(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(memsearch, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def thin(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[bool, str, str]:
    capsys.readouterr()
    answered = quick(list(args))
    out = capsys.readouterr()
    return answered, out.out, out.err


def loaded_by(function: str, prefixes: tuple[str, ...], names: frozenset[str] | set[str] = frozenset()) -> str:
    """In a fresh process, `function` of cli/quick_search.py answers `signing keys --json` with D-001 first;
    the modules it loaded that start with one of `prefixes` or are among `names`, as a printed list."""
    code = (
        f"import sys\nfrom memfiles.cli.quick_search import {function}\n"
        f"assert {function}(['signing keys', '--json'])\n"
        f"heavy, names = {prefixes!r}, {sorted(names)!r}\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy) or m in names), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["hits"][0]["entry"]["id"] == "D-001"
    return out.stderr.strip().splitlines()[-1]


CASES = [
    ("signing keys on the build host",),
    ("signing keys on the build host", "--json"),
    ("why does the store hang", "-k", "2", "--kind", "F,D", "--json"),
    ("why does the store hang", "-k2", "--kind=friction", "--kind", "lesson"),
    ("max-fanout 16", "--mode", "lexical", "--json"),
    ("backups", "--mode=dense", "--area", "ops", "--status", "open", "--since", "2020-01-01"),
    ("anything", "--path", "memory/nothing-*.md"),  # no hits: "no entries match" on stderr
    ("anything", "--area", "none", "--json"),  # no hits, as JSON
]


class TestSameOutput:
    @pytest.mark.parametrize("args", CASES, ids=[" ".join(c) for c in CASES])
    def test_thin_client_prints_what_the_full_command_prints(
        self, watched: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
    ) -> None:
        """Through a running watcher, stdout and stderr equal the full command's byte for byte (exit 0)."""
        answered, out, err = thin(capsys, *args)
        assert answered, "the thin client handed a plain query to the full command"
        assert (0, out, err) == full(*args)
        if "--json" in args:
            check_command("memsearch", json.loads(out))

    def test_a_pruned_id_is_said_by_both_paths(
        self, watched: Path, run: Run, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A search for a pruned id gave unrelated hits matched on its digits and no word of the prune: both
        paths now warn, on stderr and in the JSON, byte for byte alike."""
        assert run("prune", "D-001", "--reason", "moved to the ops handbook").exit_code == 0
        for _ in range(200):  # the watcher syncs the prune
            answered, out, err = thin(capsys, "D-001", "--json")
            if answered and "D-001" not in [hit["entry"]["id"] for hit in json.loads(out)["hits"]]:
                break
            threading.Event().wait(0.1)
        said = "D-001 was pruned (moved to the ops handbook): memfiles show D-001 gives it as it was"
        assert said in json.loads(out)["warnings"] and said in err
        assert (0, out, err) == full("D-001", "--json")
        answered, out, err = thin(capsys, "d-1")
        assert answered and said in err and (0, out, err) == full("d-1")

    def test_thin_client_imports_neither_click_nor_numpy(self, watched: Path) -> None:
        """A query answered through the watcher loads none of click, numpy, chromadb or the format, nor even
        json, socket, pathlib or re."""
        heavy = ("click", "numpy", "chromadb", "torch", "memfiles.format", "memfiles.config")
        assert loaded_by("quick", heavy, {"typing", "json", "socket", "pathlib", "re"}) == "[]"


@pytest.fixture
def indexed(run: Run, root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for kind, title, area, body in ENTRIES:
        assert run("add", "-k", kind, "-t", title, "-a", area, "--body", body).exit_code == 0
    assert run("backfill").exit_code == 0
    monkeypatch.setenv("MEMFILES_ROOT", str(root))
    monkeypatch.setenv("MEMFILES_SEARCH_WATCH", "0")
    return root


def plain(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[bool, str, str]:
    capsys.readouterr()
    answered = here(list(args))
    out = capsys.readouterr()
    return answered, out.out, out.err


class TestInProcess:
    @pytest.mark.parametrize("args", CASES, ids=[" ".join(c) for c in CASES])
    def test_no_watcher_prints_what_the_full_command_prints(
        self, indexed: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
    ) -> None:
        """With no watcher, the plain form answered in process (no click) equals the full command byte for
        byte, warnings about unreadable files included."""
        decisions = indexed / "memory" / "decisions.md"
        decisions.write_bytes(decisions.read_bytes() + b"\n\xff\n")  # a memory file that is not UTF-8
        assert CliRunner().invoke(cli, ["backfill"]).exit_code == 0  # the file's entries kept as they were
        answered, out, err = plain(capsys, *args)
        assert "decisions.md" in err
        assert answered, "a plain query with no watcher went to the full command"
        assert (0, out, err) == full(*args)

    def test_it_imports_no_click(self, indexed: Path) -> None:
        """The in-process path loads neither click nor chromadb nor torch."""
        assert loaded_by("here", ("click", "chromadb", "torch")) == "[]"

    def test_a_pruned_id_is_said_in_process_too(
        self, indexed: Path, run: Run, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """With no watcher the in-process path answers (the first search of all): it said nothing of a
        pruned id the full command warns of (review). The same bytes; a --batch line carries it too."""
        assert run("prune", "D-001", "--reason", "moved to the ops handbook").exit_code == 0
        said = "D-001 was pruned (moved to the ops handbook): memfiles show D-001 gives it as it was"
        answered, out, err = plain(capsys, "D-001", "--json")
        assert answered and said in json.loads(out)["warnings"] and said in err
        assert (0, out, err) == full("D-001", "--json")
        batch = indexed / "q.jsonl"
        batch.write_text('{"id": "a", "query": "d-1"}\n{"id": "b", "query": "signing keys"}\n')
        code, out, _err = full("--batch", str(batch))
        lines = [json.loads(line) for line in out.splitlines()]
        assert code == 0 and said in lines[0]["warnings"] and said not in lines[1]["warnings"]

    def test_what_it_cannot_word_goes_to_the_full_command(
        self, indexed: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A bad kind, status or date, a server, no index, a broken config: nothing printed here; the full
        command words it (exit 2)."""
        for args in (("q", "--kind", "nosuchkind"), ("q", "--status", "nosuch"), ("q", "--since", "2026-13-01")):
            assert plain(capsys, *args) == (False, "", "")
            assert full(*args)[0] == 2
        monkeypatch.setenv("MEMFILES_CHROMA_URL", "http://localhost:1")
        assert plain(capsys, "q") == (False, "", "")
        monkeypatch.delenv("MEMFILES_CHROMA_URL")
        (indexed / "memory" / "memfiles.toml").write_text("wrap = [\n", encoding="utf-8")
        assert plain(capsys, "q") == (False, "", "")
        code, _out, err = full("q")
        assert code == 2 and "memfiles.toml" in err

    @pytest.mark.slow
    def test_a_busy_index_is_said_here_once_as_the_full_command_says_it(
        self, indexed: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Another process holds the store: the in-process path waits search_timeout once and exits as the
        full command does (message, JSON error object, code), instead of handing over to wait again."""
        monkeypatch.setenv("MEMFILES_SEARCH_TIMEOUT", "1")
        with store_held(indexed):
            for args in (("signing keys",), ("signing keys", "--json")):
                capsys.readouterr()
                with pytest.raises(SystemExit) as exited:
                    here(list(args))
                out = capsys.readouterr()
                assert "the index is busy" in out.err
                assert (exited.value.code, out.out, out.err) == full(*args)

    def test_escape_sequences_in_a_body_are_removed_as_click_removes_them(
        self, indexed: Path, run: Run, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A body holding ANSI escapes (put there by hand: the write path refuses them, check names them),
        printed to a pipe: the same bytes as the full command (click strips them from a stream that is not
        a terminal)."""
        body = "Shown in bold on a terminal."
        assert (
            run("add", "-k", "fact", "-t", "Escape colour codes in notes", "-a", "cli", "--body", body).exit_code == 0
        )
        facts = indexed / "memory" / "facts.md"
        facts.write_text(facts.read_text().replace("in bold on", "in \033[1mbold\033[0m on"))
        assert run("backfill").exit_code == 0
        answered, out, err = plain(capsys, "escape colour codes", "-k", "1")
        assert answered and "\033" not in out and "bold" in out
        assert (0, out, err) == full("escape colour codes", "-k", "1")

    def test_ctrl_c_is_aborted_as_click_says_it(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import memfiles.cli.quick_search as quick_search

        def interrupted(argv: list[str]) -> bool:
            raise KeyboardInterrupt

        monkeypatch.setattr(quick_search, "quick", interrupted)
        monkeypatch.setattr(sys, "argv", ["memsearch", "q"])
        with pytest.raises(SystemExit) as exited:
            quick_search.main()
        assert exited.value.code == 1 and capsys.readouterr().err == "\nAborted!\n"

    def test_no_index_is_said_as_the_full_command_says_it(
        self, run: Run, root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """No index yet: exit 2 naming `memfiles backfill`, the same bytes as the full command (and its JSON
        error object with --json)."""
        monkeypatch.setenv("MEMFILES_ROOT", str(root))
        for args in (("anything",), ("anything", "--json")):
            capsys.readouterr()
            with pytest.raises(SystemExit) as exited:
                here(list(args))
            out = capsys.readouterr()
            assert "memfiles backfill" in out.err
            assert (exited.value.code, out.out, out.err) == full(*args)


class TestHandsOver:
    @pytest.mark.parametrize(
        "args",
        [
            ("q", "--batch", "-"),
            ("-h",),
            ("q", "--chroma-url", "http://localhost:1"),
            ("q", "extra"),
            ("q", "-k", "0"),
            ("q", "-k"),
            ("  ",),
            ("q", "--mode", "fuzzy"),
            ("--", "-q"),
            ("q", "--unknown"),
            ("q", "-k", "²"),  # a digit to str.isdigit, not to int()
            ("q", "--root", ""),  # `.` to click, "not given" to root discovery
        ],
    )
    def test_forms_it_does_not_take_go_to_the_full_command(self, args: tuple[str, ...]) -> None:
        """Batch, help, a server, bad values and unknown options are read by the full command, never here."""
        assert read_args(list(args)) is None

    def test_refusals_and_no_watcher_print_nothing(
        self, watched: Path, run: Run, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An unknown kind or a bad date is refused by the watcher: the thin client prints nothing and the
        full command words the error (exit 2)."""
        for args in (("q", "--kind", "nosuchkind"), ("q", "--since", "2026-13-01")):
            answered, out, err = thin(capsys, *args)
            assert (answered, out, err) == (False, "", "")
            assert full(*args)[0] == 2

    def test_no_watcher_means_the_full_command(
        self, run: Run, root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without a watcher (or with a server configured) the thin client prints nothing and says so."""
        monkeypatch.setenv("MEMFILES_ROOT", str(root))
        assert thin(capsys, "anything") == (False, "", "")
        (root / ".memsearch").mkdir()
        (root / ".memsearch" / "watch.sock").write_text("")  # a stale socket file: nobody listens
        assert thin(capsys, "anything") == (False, "", "")
        monkeypatch.setenv("MEMFILES_CHROMA_URL", "http://localhost:1")
        assert thin(capsys, "anything") == (False, "", "")


def leave_a_watcher(bin_dir: Path, env: dict[str, str]) -> None:
    """A memsearch that finds no watcher, and says it left one behind."""
    first = subprocess.run(
        [str(bin_dir / "memsearch"), "signing keys"], capture_output=True, text=True, env=env, timeout=600
    )
    assert first.returncode == 0 and "started a watcher in the background" in first.stderr, first.stderr


class TestWatcherLeftBehind:
    def test_a_search_without_watcher_leaves_one_and_the_next_is_thin(
        self, run: Run, root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With search_watch on (the default), a memsearch that found no watcher starts one, says so on
        stderr with how to stop it and turn it off, prints its hits as usual; the next query is thin."""
        for kind, title, area, body in ENTRIES:
            assert run("add", "-k", kind, "-t", title, "-a", area, "--body", body).exit_code == 0
        assert run("backfill").exit_code == 0
        env = {**os.environ, "MEMFILES_ROOT": str(root), "MEMFILES_SEARCH_WATCH": "1"}
        monkeypatch.setenv("MEMFILES_ROOT", str(root))
        bin_dir = Path(sys.executable).parent
        try:
            first = subprocess.run(
                [str(bin_dir / "memsearch"), "signing keys", "--json"],
                capture_output=True,
                text=True,
                env=env,
                timeout=600,
            )
            assert first.returncode == 0, first.stderr
            assert json.loads(first.stdout)["hits"][0]["entry"]["id"] == "D-001"
            assert "started a watcher in the background" in first.stderr
            assert "memfiles watch --stop" in first.stderr and "MEMFILES_SEARCH_WATCH=0" in first.stderr
            answered = False
            for _ in range(600):  # the watcher loads and catches up; the thin path answers once it is ready
                answered, out, _err = thin(capsys, "signing keys", "--json")
                if answered:
                    break
                threading.Event().wait(0.5)
            assert answered
            assert json.loads(out)["hits"][0]["entry"]["id"] == "D-001"
        finally:
            subprocess.run([str(bin_dir / "memfiles"), "watch", "--stop"], env=env, capture_output=True, timeout=120)

    @pytest.mark.slow
    def test_a_watcher_left_behind_exits_once_idle(self, run: Run, root: Path) -> None:
        """The watcher a memsearch leaves behind exits by itself after `watch_idle_exit` seconds with no
        query and no change (here MEMFILES_WATCH_IDLE_EXIT=2), and its log says why."""
        from memfiles.services.indexing.daemon import log_path
        from memfiles.services.indexing.ipc import request

        for kind, title, area, body in ENTRIES:
            assert run("add", "-k", kind, "-t", title, "-a", area, "--body", body).exit_code == 0
        assert run("backfill").exit_code == 0
        env = {**os.environ, "MEMFILES_ROOT": str(root), "MEMFILES_SEARCH_WATCH": "1", "MEMFILES_WATCH_IDLE_EXIT": "2"}
        settings = load_settings(root)
        bin_dir = Path(sys.executable).parent
        try:
            leave_a_watcher(bin_dir, env)
            seen = False
            for _ in range(1200):  # it starts, catches up, waits two idle seconds and exits
                answer = request(settings, {"op": "ping"}, timeout=5)
                seen = seen or answer is not None
                if seen and answer is None:
                    break
                threading.Event().wait(0.25)
            assert seen and answer is None
            assert "idle exit after 2 s" in log_path(settings).read_text()
        finally:
            subprocess.run([str(bin_dir / "memfiles"), "watch", "--stop"], env=env, capture_output=True, timeout=120)

    @pytest.mark.slow
    def test_a_changed_idle_exit_holds_after_the_restart_it_causes(self, run: Run, root: Path) -> None:
        """watch_idle_exit changed while a watcher left behind runs: it starts again on the new settings, but
        kept the idle exit written on its command line (it exited after the old 600 s, or the old 6). It
        now reads the setting at each start."""
        from memfiles.services.indexing.daemon import log_path
        from memfiles.services.indexing.ipc import request

        for kind, title, area, body in ENTRIES:
            assert run("add", "-k", kind, "-t", title, "-a", area, "--body", body).exit_code == 0
        assert run("backfill").exit_code == 0
        config = root / "memory" / "memfiles.toml"
        config.write_text("watch_idle_exit = 600\n")
        env = {**os.environ, "MEMFILES_ROOT": str(root), "MEMFILES_SEARCH_WATCH": "1"}
        env.pop("MEMFILES_WATCH_IDLE_EXIT", None)
        settings = load_settings(root)
        bin_dir = Path(sys.executable).parent
        try:
            leave_a_watcher(bin_dir, env)
            for _ in range(1200):
                if request(settings, {"op": "ping"}, timeout=5) is not None:
                    break
                threading.Event().wait(0.25)
            config.write_text("watch_idle_exit = 2\n")
            gone = False
            for _ in range(1200):  # it notices, starts again on the new settings, waits two idle seconds, exits
                threading.Event().wait(0.25)
                text = log_path(settings).read_text() if log_path(settings).exists() else ""
                if "idle exit after 2 s" in text:
                    gone = True
                    break
            assert gone, log_path(settings).read_text()
        finally:
            subprocess.run([str(bin_dir / "memfiles"), "watch", "--stop"], env=env, capture_output=True, timeout=120)

    def test_a_write_without_watcher_leaves_one_that_indexes_it(self, run: Run, root: Path) -> None:
        """With search_watch on, `add` with an index and no watcher does not open the store: it starts a
        watcher, says so, and the watcher indexes the new entry as it catches up."""
        for kind, title, area, body in ENTRIES:
            assert run("add", "-k", kind, "-t", title, "-a", area, "--body", body).exit_code == 0
        assert run("backfill").exit_code == 0
        env = {**os.environ, "MEMFILES_ROOT": str(root), "MEMFILES_SEARCH_WATCH": "1"}
        bin_dir = Path(sys.executable).parent
        title = "Webhooks are retried with exponential backoff"
        try:
            added = subprocess.run(
                [
                    str(bin_dir / "memfiles"),
                    "add",
                    "-k",
                    "decision",
                    "-t",
                    title,
                    "-a",
                    "api",
                    "--body",
                    "Up to 8 tries.",
                ],
                capture_output=True,
                text=True,
                env=env,
                timeout=600,
            )
            assert added.returncode == 0, added.stderr
            new_id = added.stdout.strip()
            assert (
                "started a watcher in the background (pid" in added.stderr and "memfiles watch --stop" in added.stderr
            )
            first = None
            for _ in range(600):  # the watcher loads the model and catches up with the files
                hits = subprocess.run(
                    [str(bin_dir / "memsearch"), "retry webhooks backoff", "--json"],
                    capture_output=True,
                    text=True,
                    env={**env, "MEMFILES_SEARCH_WATCH": "0"},  # this reader leaves nothing of its own
                    timeout=600,
                )
                found = json.loads(hits.stdout)["hits"] if hits.returncode == 0 else []
                first = found[0]["entry"]["id"] if found else None
                if first == new_id:
                    break
                threading.Event().wait(0.5)
            assert first == new_id
            assert (root / ".memsearch" / "watch.pid").exists()  # the one the add started
        finally:
            subprocess.run([str(bin_dir / "memfiles"), "watch", "--stop"], env=env, capture_output=True, timeout=120)

    def test_a_write_with_a_broken_model_starts_no_watcher_and_says_why(self, run: Run, root: Path) -> None:
        """The configured model's weights are broken (not a safetensors file): a watcher would exit at once,
        so `add` starts none (no "started a watcher" claim) and warns, naming the model, that the write is
        on disk but not indexed; exit 0, the entry written."""
        import shutil

        from memfiles.index.embedder import resolve_model
        from memfiles.services.indexing.daemon import live_watchers

        shutil.copytree(resolve_model(None)[1], root / "mymodel")  # type: ignore[arg-type]
        (root / "memory" / "memfiles.toml").write_text('model = "mymodel"\n')
        for kind, title, area, body in ENTRIES:
            assert run("add", "-k", kind, "-t", title, "-a", area, "--body", body).exit_code == 0
        assert run("backfill").exit_code == 0
        (root / "mymodel" / "model.safetensors").write_bytes(b"not weights")
        env = {**os.environ, "MEMFILES_ROOT": str(root), "MEMFILES_SEARCH_WATCH": "1"}
        bin_dir = Path(sys.executable).parent
        try:
            added = subprocess.run(
                [str(bin_dir / "memfiles"), "add", "-k", "todo", "-t", "Audit the logs", "-a", "ops", "--body", "B."],
                capture_output=True,
                text=True,
                env=env,
                timeout=600,
            )
            assert added.returncode == 0, added.stderr
            assert (
                added.stdout.strip() == "T-001"
                and "### T-001: Audit the logs" in (root / "memory" / "todos.md").read_text()
            )
            assert "started a watcher" not in added.stderr
            assert f"the model at {root / 'mymodel'} cannot be loaded" in added.stderr
            assert "not a safetensors file" in added.stderr and "the files are written" in added.stderr
            assert "run `memfiles backfill --rebuild`" in added.stderr  # the cause's own fix, said once
            assert live_watchers(load_settings(root)) == []
        finally:
            subprocess.run([str(bin_dir / "memfiles"), "watch", "--stop"], env=env, capture_output=True, timeout=120)

    def test_a_watcher_catching_up_queues_a_write_and_lets_a_duplicate_check_compare_words(
        self, run: Run, root: Path
    ) -> None:
        """Before its catch-up ends, the watcher takes a write's update into its queue at once, and refuses a
        near-duplicate check at once (the writer then compares words): no write waits for a starting watcher."""
        from memfiles.services.watch.dispatch import answer

        watcher = Watcher(Project(load_settings(root)), debounce=0.1)  # not started: still catching up
        assert answer(watcher, {"op": "sync", "paths": ["memory/decisions.md"]}) == {"ok": True, "queued": True}
        assert len(watcher.debouncer) == 1
        refused = answer(watcher, {"op": "similar", "texts": ["x"], "k": 3})
        assert refused["ok"] is False and "catching up" in refused["error"]
        refused = answer(watcher, {"op": "memsearch", "query": "signing keys", "k": 3})  # then the full command
        assert refused["ok"] is False and "catching up" in refused["error"]

    @pytest.mark.parametrize("setting", ["MEMFILES_SEARCH_WATCH=0", "MEMFILES_CHROMA_URL"])
    def test_opted_out_or_a_failed_search_starts_nothing(self, run: Run, root: Path, setting: str) -> None:
        """search_watch off, or a search that fails (here: a server configured and no view of this clone
        yet): the search starts no watcher and says nothing."""
        from memfiles.cli.search import memsearch as command

        for kind, title, area, body in ENTRIES[:2]:
            assert run("add", "-k", kind, "-t", title, "-a", area, "--body", body).exit_code == 0
        assert run("backfill").exit_code == 0
        env = {"MEMFILES_SEARCH_WATCH": "0"} if setting.endswith("=0") else {"MEMFILES_SEARCH_WATCH": "1"}
        args = ["--root", str(root), "signing keys"]
        if setting == "MEMFILES_CHROMA_URL":
            args += ["--chroma-url", "http://127.0.0.1:9"]  # nothing listens: the search fails, no watcher
        result = CliRunner(env=env).invoke(command, args, catch_exceptions=False)
        assert "started a watcher" not in result.stderr
        assert not (root / ".memsearch" / "watch.out").exists()
