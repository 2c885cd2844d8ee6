"""Writes fed what a careless user or a confused agent gives: two `add --unique` at once, un-retiring,
control characters in one-line fields, an empty memory file, `## ` in a section name, a kind misspelt,
evidence on add and set, and the error objects of refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memfiles import parse
from memfiles.config import load_settings
from memfiles.store.lock import FileLock
from tests.conftest import Run, snapshot


def entry(run: Run, entry_id: str) -> dict:
    result = run("show", entry_id, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["entry"]


def _holds_open(pid: int, path: Path) -> bool:
    """True when process `pid` has `path` open (it is waiting for the lock on it)."""
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see a process wait for the lock")
def test_two_concurrent_unique_adds_add_one(run: Run, root: Path) -> None:
    """Two `memfiles add --unique` processes that both checked for near-duplicates before either wrote:
    under the write lock the second sees the first's entry and is refused (exit 1, refused error listing
    it); the file holds one entry."""
    assert run("add", "-k", "T", "-t", "Unrelated chore", "-a", "x", "--body", "Nothing alike.").exit_code == 0
    lock_path = load_settings(root).state_dir / "write.lock"
    args = [
        sys.executable, "-m", "memfiles.cli", "--root", str(root), "add", "--kind", "todo", "--unique", "--json",
        "--title", "Rotate the signing keys before the release", "--area", "release",
        "--body", "The signing keys expire in March; rotate them before tagging the release.",
    ]  # fmt: skip
    with FileLock(lock_path, 5.0):  # both processes do their check, then wait here for the lock
        procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        for proc in procs:
            while not _holds_open(proc.pid, lock_path.resolve()):
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.05)
    outputs = [proc.communicate(timeout=300) for proc in procs]
    codes = sorted(proc.returncode for proc in procs)
    assert codes == [0, 1], outputs
    winner = next(json.loads(out) for (out, _err), proc in zip(outputs, procs, strict=True) if proc.returncode == 0)
    loser = next(json.loads(out) for (out, _err), proc in zip(outputs, procs, strict=True) if proc.returncode == 1)
    new_id = winner["added"][0]
    assert loser["error"]["code"] == "refused"
    assert [p["id"] for p in loser["error"]["problems"]] == [new_id]
    assert loser["error"]["problems"][0]["path"] == "memory/todos.md"
    text = (root / "memory" / "todos.md").read_text()
    assert text.count("Rotate the signing keys before the release") == 2  # the heading and its index line


class TestUnique:
    def test_refused_error_lists_the_near_duplicates(self, run: Run, root: Path) -> None:
        """add --unique of an entry already there: exit 1, the refused error's problems name its id and place."""
        body = "The signing keys expire in March; rotate them before tagging the release."
        assert run("add", "-k", "T", "-t", "Rotate the signing keys", "-a", "r", "--body", body).exit_code == 0
        before = snapshot(root)
        result = run("add", "-k", "T", "-t", "Rotate the signing keys", "-a", "r", "--body", body, "--unique", "--json")
        assert result.exit_code == 1
        error = json.loads(result.stdout)["error"]
        assert error["code"] == "refused"
        assert [(p["id"], p["path"], p["field"], p["op"]) for p in error["problems"]] == [
            ("T-001", "memory/todos.md", "title", None)
        ]
        assert isinstance(error["problems"][0]["line"], int)
        assert snapshot(root) == before

    def test_import_unique_names_the_op_of_each_near_duplicate(self, run: Run, root: Path) -> None:
        """import --unique whose second add repeats an entry: exit 1, the problem names op 2 and the entry."""
        body = "The signing keys expire in March; rotate them before tagging the release."
        assert run("add", "-k", "T", "-t", "Rotate the signing keys", "-a", "r", "--body", body).exit_code == 0
        ops = {
            "ops": [
                {"op": "add", "kind": "lesson", "title": "Unrelated lesson", "area": "a", "body": "Nothing alike."},
                {"op": "add", "kind": "todo", "title": "Rotate the signing keys", "area": "r", "body": body},
            ]
        }
        before = snapshot(root)
        result = run("import", "-", "--unique", "--json", input=json.dumps(ops))
        assert result.exit_code == 1
        problems = json.loads(result.stdout)["error"]["problems"]
        assert [(p["op"], p["id"]) for p in problems] == [(2, "T-001")]
        assert snapshot(root) == before

    def test_import_unique_refuses_two_adds_of_one_batch_that_repeat_each_other(self, run: Run, root: Path) -> None:
        """Two identical adds in one import --unique (an agent's retry folded into its batch), and a third
        in other words of the second: exit 1, the problems name ops 2 and 3, nothing written."""
        body = "Pin numpy below 3 until the memmap reader is ported."
        add = {"op": "add", "kind": "lesson", "title": "Pin numpy", "area": "a", "body": body}
        reworded = {**add, "title": "Keep numpy pinned", "body": "Pin numpy below 3 until the memmap reader is ported!"}
        result = run("import", "-", "--unique", "--json", input=json.dumps({"ops": [add, add, reworded]}))
        assert result.exit_code == 1, result.output
        problems = json.loads(result.stdout)["error"]["problems"]
        assert [p["op"] for p in problems] == [2, 3] and "repeats op 1" in problems[0]["message"]
        assert not (root / "memory" / "lessons.md").exists()
        assert run("import", "-", "--unique", input=json.dumps({"ops": [add, reworded]})).exit_code == 1
        assert run("import", "-", "--unique", input=json.dumps({"ops": [add]})).exit_code == 0


class TestUnretire:
    def test_a_live_status_clears_successor_and_reason(self, run: Run) -> None:
        """set T-002 --status open on a retired T-002: successor and reason go, a warning says so, check passes."""
        for title in ("First", "Second", "Third"):
            assert run("add", "-k", "T", "-t", title, "-a", "a", "--body", f"{title} body.").exit_code == 0
        assert run("retire", "T-002", "--successor", "T-003", "--reason", "merged").exit_code == 0
        result = run("set", "T-002", "--status", "open", "--json")
        assert result.exit_code == 0, result.output
        written = json.loads(result.stdout)
        assert any("T-002 is no longer retired" in w and "T-003" in w for w in written["warnings"])
        shown = entry(run, "T-002")
        assert (shown["status"], shown["successor"], shown["reason"]) == ("open", None, None)
        assert run("check", "--no-lint").exit_code == 0


class TestTags:
    def test_a_tag_given_twice_is_stored_once(self, run: Run) -> None:
        """--tag a --tag a --tag b stores `a, b`, as a ref given twice is stored once."""
        result = run(
            "add", "-k", "T", "-t", "Tagged", "-a", "a", "--body", "b", "--tag", "a", "--tag", "a", "--tag", "b"
        )
        assert result.exit_code == 0, result.output
        assert entry(run, "T-001")["tags"] == ["a", "b"]


class TestDates:
    @pytest.mark.parametrize(("given", "said"), [("2099-01-01", "is after today"), ("0001-01-01", "is before 1970")])
    def test_an_unlikely_date_is_kept_with_a_warning(self, run: Run, given: str, said: str) -> None:
        """--date in the future or before 1970: written as given (exit 0), with a warning naming the entry;
        today's date says nothing."""
        result = run("add", "-k", "T", "-t", "Dated", "-a", "a", "--body", "b", "--date", given, "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["warnings"] == [f"T-001: date {given} {said}; kept as given (a typo?)"]
        assert entry(run, "T-001")["date"] == given
        plain = run("add", "-k", "T", "-t", "Undated", "-a", "a", "--body", "other words", "--json")
        assert json.loads(plain.stdout)["warnings"] == []


class TestOneLineFields:
    @pytest.mark.parametrize(
        "option, value, named",
        [
            ("--title", "Tab\tinside", "a tab"),
            ("--area", "are\x1ba", "U+001B"),
            ("--title", "Fine\u202etxt.exe", "U+202E (a bidirectional control"),  # shows as "Fineexe.txt"
            ("--tag", "t\tag", "a tab"),
            ("--section", "De\tsign", "a tab"),
        ],
    )
    def test_control_characters_are_refused(self, run: Run, root: Path, option: str, value: str, named: str) -> None:
        """A tab or an escape in a one-line field: exit 2 naming the field and the character; nothing written."""
        args = {"--title": "A title", "--area": "a"}
        args[option] = value
        extra = [] if option in ("--title", "--area") else [option, value]
        before = snapshot(root)
        result = run("add", "-k", "T", "-t", args["--title"], "-a", args["--area"], "--body", "b", *extra)
        assert result.exit_code == 2
        assert named in result.stderr and option.lstrip("-") in result.stderr
        assert "add needs" not in result.stderr  # refused for what it holds, not also called missing
        assert snapshot(root) == before

    def test_a_clean_title_passes_check(self, run: Run) -> None:
        """The refusal is not a side effect of other input: the same add without the tab passes check."""
        assert run("add", "-k", "T", "-t", "Tab inside", "-a", "a", "--body", "b").exit_code == 0
        assert run("check").exit_code == 0

    def test_the_automated_path_collapses_control_characters(self) -> None:
        """normalize_automated (the distiller's and the drafter's path) makes a tab in a title a space."""
        from memfiles.format.ids import Schema
        from memfiles.store.ops import normalize_automated, parse_op

        raw = {"op": "add", "kind": "lesson", "title": "A\tB\x1b", "area": "x\ty", "body": "b"}
        op = normalize_automated(raw, Schema())
        assert (op["title"], op["area"]) == ("A B", "x y")
        assert parse_op(op, 1, Schema()).get("title") == "A B"

    @pytest.mark.parametrize("given", ["## Design", "##Design", "  ### Design"])
    def test_section_marks_are_stripped(self, run: Run, root: Path, given: str) -> None:
        """--section "## Design" files the entry under `## Design`, not `## ## Design`."""
        assert run("add", "-k", "T", "-t", "A todo", "-a", "a", "--body", "b", "--section", given).exit_code == 0
        text = (root / "memory" / "todos.md").read_text()
        assert "\n## Design\n" in text and "## #" not in text
        assert entry(run, "T-001")["section"] == "Design"

    def test_a_section_of_marks_only_is_refused(self, run: Run) -> None:
        """--section "##" is an empty name: exit 2."""
        result = run("add", "-k", "T", "-t", "A todo", "-a", "a", "--body", "b", "--section", "##")
        assert result.exit_code == 2 and "section is empty" in result.stderr


class TestKindAndEvidence:
    def test_a_misspelt_kind_gets_a_suggestion(self, run: Run) -> None:
        """--kind decison: exit 2, 'did you mean 'decision'?'."""
        result = run("add", "-k", "decison", "-t", "x", "-a", "a", "--body", "b")
        assert result.exit_code == 2 and "did you mean 'decision'?" in result.stderr

    def test_kind_in_another_case_is_taken(self, run: Run) -> None:
        """--kind Decision and --kind d are the decision kind."""
        assert run("add", "-k", "Decision", "-t", "x", "-a", "a", "--body", "b").stdout.strip() == "D-001"
        assert run("add", "-k", "d", "-t", "y", "-a", "a", "--body", "b").stdout.strip() == "D-002"

    def test_evidence_on_add_and_set(self, run: Run) -> None:
        """add --evidence (repeatable) records it; set --evidence replaces the list."""
        result = run("add", "-k", "L", "-t", "x", "-a", "a", "--body", "b", "--evidence", "run:r7", "--evidence",
                     "commit:abc123")  # fmt: skip
        assert result.exit_code == 0, result.output
        assert entry(run, "L-001")["evidence"] == ["run:r7", "commit:abc123"]
        assert run("set", "L-001", "--evidence", "docs/x.md").exit_code == 0
        assert entry(run, "L-001")["evidence"] == ["docs/x.md"]


class TestEmptyFile:
    @pytest.mark.parametrize("content", [b"", b"  \n\n\t\n"])
    def test_add_writes_over_an_empty_file_and_check_names_it(self, run: Run, root: Path, content: bytes) -> None:
        """A zero-byte or whitespace-only memory/todos.md: check reports empty-file (info, exit 0); add writes
        a memory file over it."""
        (root / "memory" / "todos.md").write_bytes(content)
        checked = run("check", "--json")
        assert checked.exit_code == 0
        assert [(f["code"], f["path"], f["severity"]) for f in json.loads(checked.stdout)["findings"]] == [
            ("empty-file", "memory/todos.md", "info")
        ]
        result = run("add", "-k", "todo", "-t", "First", "-a", "a", "--body", "b")
        assert result.exit_code == 0 and result.stdout.strip() == "T-001", result.output
        text = (root / "memory" / "todos.md").read_text()
        assert text.startswith("# Todos\n") and "### T-001: First" in text
        assert run("check").exit_code == 0

    def test_a_markdown_file_with_text_is_still_refused(self, run: Run, root: Path) -> None:
        """A todos.md holding prose (not a memory file) is never written over: exit 2, as before."""
        (root / "memory" / "todos.md").write_text("Some notes of mine.\n")
        result = run("add", "-k", "todo", "-t", "First", "-a", "a", "--body", "b")
        assert result.exit_code == 2 and "exists but is not a memory file" in result.stderr
        assert (root / "memory" / "todos.md").read_text() == "Some notes of mine.\n"


class TestErrorObjects:
    def test_show_of_an_id_in_a_broken_file_is_a_parse_error_with_its_place(self, run: Run, root: Path) -> None:
        """show D-001 --json when decisions.md does not parse: code parse, path and line of the break."""
        assert run("add", "-k", "D", "-t", "First", "-a", "a", "--body", "b").exit_code == 0
        path = root / "memory" / "decisions.md"
        lines = path.read_text().split("\n")
        lines.insert(lines.index("### D-001: First") + 1, "### D-7 broken heading")
        path.write_text("\n".join(lines))
        result = run("show", "D-001", "--json")
        assert result.exit_code == 2
        error = json.loads(result.stdout)["error"]
        assert (error["code"], error["path"]) == ("parse", "memory/decisions.md")
        assert error["line"] == lines.index("### D-7 broken heading") + 1

    def test_ambiguous_error_names_both_places(self, run: Run, root: Path) -> None:
        """show of an id two entries carry: problems holds both (id, path, line); path/line the one to renumber."""
        assert run("add", "-k", "D", "-t", "First", "-a", "a", "--body", "b").exit_code == 0
        (root / "pkg" / "memory").mkdir(parents=True)
        (root / "pkg" / "memory" / "decisions.md").write_text(
            "# Decisions\n\n### D-001: Copy\n\n- date: 2026-01-01\n- area: a\n- status: proposed\n\nb\n"
        )
        result = run("show", "D-001", "--json")
        assert result.exit_code == 2
        error = json.loads(result.stdout)["error"]
        places = [(p["id"], p["path"], p["line"]) for p in error["problems"]]
        assert places == [("D-001", "memory/decisions.md", 8), ("D-001", "pkg/memory/decisions.md", 3)]
        assert (error["code"], error["path"], error["line"]) == ("ambiguous", "pkg/memory/decisions.md", 3)


class TestStateFilesOfTheWrongKind:
    """A file memfiles keeps that is a folder, or not UTF-8, or a folder it keeps that is a file: exit 2
    naming it (check: a finding), never a traceback, nothing written."""

    @pytest.mark.parametrize(
        ("spoil", "command", "words"),
        [
            ("state-is-a-file", ("add",), ".memfiles: is a file, where memfiles keeps a folder of its own"),
            ("lock-is-a-folder", ("add",), "write.lock: is a directory"),
            ("ids-is-a-folder", ("add",), "ids.txt: is a folder, where memfiles keeps a file"),
            ("ids-not-utf8", ("add",), "ids.txt:1: not UTF-8 text: byte 0xff"),
            ("ledger-is-a-folder", ("prune", "D-001", "--reason", "r"), "pruned.jsonl: is a folder"),
        ],
    )
    def test_a_write_is_refused_naming_the_file(self, run: Run, root: Path, spoil: str, command, words: str) -> None:
        import shutil

        assert run("add", "-k", "D", "-t", "one", "-a", "a", "--body", "b").exit_code == 0
        state, memory = root / ".memfiles", root / "memory"
        if spoil == "state-is-a-file":
            shutil.rmtree(state)
            state.write_text("")
        elif spoil == "lock-is-a-folder":
            (state / "write.lock").unlink(missing_ok=True)
            (state / "write.lock").mkdir()
        elif spoil == "ids-is-a-folder":
            (memory / "ids.txt").unlink()
            (memory / "ids.txt").mkdir()
        elif spoil == "ids-not-utf8":
            (memory / "ids.txt").write_bytes(b"\xff")
        else:
            (memory / "pruned.jsonl").mkdir()
        before = (memory / "decisions.md").read_text()
        args = command if command != ("add",) else ("add", "-k", "D", "-t", "two", "-a", "a", "--body", "b")
        result = run(*args, "--json")
        assert result.exit_code == 2 and words in result.stderr, result.stderr
        assert json.loads(result.stdout)["error"]["code"] in ("io", "parse")
        assert (memory / "decisions.md").read_text() == before

    @pytest.mark.parametrize("spoil", ["ids-is-a-folder", "ids-not-utf8"])
    def test_check_reports_the_marks_file(self, run: Run, root: Path, spoil: str) -> None:
        run("add", "-k", "D", "-t", "one", "-a", "a", "--body", "b")
        ids = root / "memory" / "ids.txt"
        ids.unlink()
        if spoil == "ids-is-a-folder":
            ids.mkdir()
        else:
            ids.write_bytes(b"D 1\n\xff\n")
        result = run("check", "--no-lint")
        assert result.exit_code == 1 and "memory/ids.txt" in result.stdout and "ids-file" in result.stdout


class TestNewSections:
    def test_a_new_section_goes_above_a_closing_section_of_text(self, run: Run, root: Path) -> None:
        """A file that ends with a section of text and no entries (a distiller's Notes): a section op and
        an add into a new section both land above it; after an empty placeholder heading (no text), a new
        section goes at the end as before."""
        ops = [
            {"op": "add", "kind": "fact", "title": "First fact", "area": "a", "body": "B.", "section": "Facts"},
            {"op": "section", "file": "memory/facts.md", "section": "Notes", "intro": "Written last."},
        ]
        assert run("import", "-", input=json.dumps({"ops": ops})).exit_code == 0
        later = [
            {"op": "section", "file": "memory/facts.md", "section": "Later", "intro": "Kept for later."},
            {"op": "add", "kind": "fact", "title": "Second fact", "area": "a", "body": "B.", "section": "Other"},
        ]
        assert run("import", "-", input=json.dumps({"ops": later})).exit_code == 0
        names = [s.name for s in parse((root / "memory" / "facts.md").read_text()).sections]
        assert names == ["Facts", "Later", "Other", "Notes"]
        empty = [{"op": "add", "kind": "todo", "title": "A todo", "area": "a", "body": "B.", "section": "Now"}]
        empty.append({"op": "section", "file": "memory/todos.md", "section": "Placeholder", "intro": ""})
        assert run("import", "-", input=json.dumps({"ops": empty})).exit_code == 0
        again = [{"op": "add", "kind": "todo", "title": "Another", "area": "a", "body": "B.", "section": "Next"}]
        assert run("import", "-", input=json.dumps({"ops": again})).exit_code == 0
        names = [s.name for s in parse((root / "memory" / "todos.md").read_text()).sections]
        assert names == ["Now", "Placeholder", "Next"]


def test_a_failed_replace_names_the_file_not_its_temp_file(tmp_path: Path) -> None:
    """os.replace failing (here: a folder where the file goes; an immutable file did the same) raised
    an error naming the temp file beside it, which every message then showed; it names the file now,
    and no temp file is left."""
    from memfiles.store.fileio import atomic_write

    target = tmp_path / "settings.json"
    target.mkdir()
    (target / "keep").write_text("x")
    with pytest.raises(OSError) as caught:
        atomic_write(target, "{}\n")
    assert caught.value.filename == str(target)
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]


def test_an_editors_lock_link_is_no_memory_file(run: Run, root: Path) -> None:
    """Emacs links `.#decisions.md` to `user@host.pid:time` while a buffer is modified. The link was named
    by its target (`memory/me@laptop...: cannot read`), which is not hidden, so check failed and every
    write exited 2 until the buffer was saved. A hidden name is skipped whatever it links to."""
    assert run("add", "-k", "decision", "-t", "Use flock", "-a", "index", "--body", "b").exit_code == 0
    (root / "memory" / ".#decisions.md").symlink_to("me@laptop.4242:1733000000")
    assert run("check").exit_code == 0
    assert run("add", "-k", "todo", "-t", "Another", "-a", "index", "--body", "b").exit_code == 0
    assert run("fmt", "--check").exit_code == 0


def test_a_linked_memory_file_is_named_by_its_place_and_never_written_out(run: Run, root: Path, tmp_path: Path) -> None:
    """memory/linked.md, a link to a file kept elsewhere: list named it by the target's absolute path. It
    is memory/linked.md now; it is read, but a write to it is refused naming the link and where it leads
    (memfiles writes only inside the project's memory folders), and the link stays a link."""
    shared = tmp_path / "elsewhere" / "linked.md"
    shared.parent.mkdir()
    shared.write_text(
        "## Notes\n\n### K-001: Linked fact\n\n- date: 2026-12-01\n- area: a\n- status: active\n\nA fact.\n"
    )
    link = root / "memory" / "linked.md"
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(shared)
    listed = json.loads(run("list", "--json").stdout)["entries"]
    assert [entry["path"] for entry in listed] == ["memory/linked.md"]
    before = shared.read_text()
    refused = run("set", "K-1", "--title", "Linked fact, kept elsewhere")
    assert refused.exit_code == 2 and "memory/linked.md is a link to" in refused.stderr, refused.output
    added = run("add", "-k", "fact", "-t", "Another", "-a", "a", "--body", "b", "--file", "memory/linked.md")
    assert added.exit_code == 2
    assert "memory/linked.md is a link to" in added.stderr and "outside the project's memory folders" in added.stderr
    assert link.is_symlink() and shared.read_text() == before
    formatted = run("fmt", "--json")  # fmt rewrote the file out there (its generated index): no more (review)
    found = json.loads(formatted.stdout)["findings"]
    assert formatted.exit_code == 2 and [(f["code"], f["path"]) for f in found] == [("link-out", "memory/linked.md")]
    assert link.is_symlink() and shared.read_text() == before

    (root / "loop.md").symlink_to(root / "memory" / "loop.md")
    (root / "memory" / "loop.md").symlink_to(root / "loop.md")
    looped = run("check")
    assert "Traceback" not in looped.output and looped.exit_code in (0, 1)


ABANDONING_ADD = """
import atexit, sys
atexit.register(lambda: print("finalised", file=sys.stderr))
sys.argv = ["memfiles", "--root", sys.argv[1], "add", "-k", "T", "-t", "Racing the index", "-a", "t", "--body", "x"]
from memfiles.cli.entry import main
main()
"""


@pytest.mark.slow
def test_a_write_that_gives_up_on_the_index_leaves_without_finalising(tmp_path: Path) -> None:
    """index_timeout shorter than opening the store: the write is done and warns, and the process leaves
    by os._exit while the update's thread is still in chromadb (no atexit handler runs): finalising the
    interpreter under that thread crashed it now and then (SIGSEGV, SIGABRT) after a successful write."""
    (tmp_path / "memory").mkdir()
    env = {**os.environ, "MEMFILES_SEARCH_WATCH": "0"}
    memfiles = str(Path(sys.executable).parent / "memfiles")
    for command in (["add", "-k", "T", "-t", "First", "-a", "t", "--body", "x"], ["backfill"]):
        done = subprocess.run([memfiles, "--root", str(tmp_path), *command], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [sys.executable, "-c", ABANDONING_ADD, str(tmp_path)],
        env={**env, "MEMFILES_INDEX_TIMEOUT": "0.001"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "T-002"
    assert "the index did not answer within 0.001 s" in done.stderr
    assert "finalised" not in done.stderr
    assert "### T-002: Racing the index" in (tmp_path / "memory" / "todos.md").read_text()
