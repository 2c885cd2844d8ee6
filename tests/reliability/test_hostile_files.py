"""Malformed and hostile files and paths: Markdown edge cases (CRLF, BOM, tabs, bad bytes, a heading in a fence,
`## Manual` in a body, 10 MB files, 100,000 entries, empty bodies) and paths outside the memory folders
(`../`, absolute, symlinks), a symlink loop in the tree. Each gives a clear answer and loses nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memfiles.config import load_settings
from memfiles.store.project import Project
from tests.conftest import Run, snapshot
from tests.reliability.conftest import cli, intact, no_traceback
from tests.reliability.faults import record


def entry(entry_id: str, title: str, body: str, status: str = "accepted") -> str:
    return f"### {entry_id}: {title}\n\n- date: 2026-11-01\n- area: edge\n- status: {status}\n\n{body}\n"


def write_file(root: Path, text: str, name: str = "decisions.md", raw: bytes | None = None) -> Path:
    path = root / "memory" / name
    path.write_bytes(raw if raw is not None else text.encode())
    return path


def add(run: Run, title: str) -> str:
    result = run("add", "-k", "decision", "-t", title, "-a", "edge", "--body", f"{title}.")
    assert result.exit_code == 0, result.output
    return result.stdout.split()[-1]


class TestMarkdownEdges:
    def test_crlf_file_stays_crlf_through_a_write(self, run: Run, root: Path) -> None:
        """A CRLF file: check passes, a write keeps CRLF throughout, Manual included."""
        write_file(
            root, ("# Decisions\n\n" + entry("D-001", "One", "Body.") + "\n## Manual\n\nmine\n").replace("\n", "\r\n")
        )
        run("fmt")
        assert run("check", "--no-lint").exit_code == 0
        add(run, "Two")
        data = (root / "memory" / "decisions.md").read_bytes()
        assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
        assert data.endswith(b"## Manual\r\n\r\nmine\r\n")

    def test_bom_tabs_and_empty_body(self, run: Run, root: Path) -> None:
        """A BOM is kept, a tab-indented body line is kept, an entry with an empty body is reported, not lost."""
        write_file(
            root, "\ufeff# Decisions\n\n" + entry("D-001", "Tabbed", "\tcode with a tab") + entry("D-002", "Empty", "")
        )
        result = run("check", "--no-lint")
        no_traceback(result.output)
        add_result = run("add", "-k", "decision", "-t", "Three", "-a", "edge", "--body", "Three.")
        if result.exit_code == 0:
            assert add_result.exit_code == 0
            assert (root / "memory" / "decisions.md").read_bytes().startswith(b"\xef\xbb\xbf")
            assert "\tcode with a tab" in (root / "memory" / "decisions.md").read_text()
        else:
            assert "decisions.md:" in result.output
        ids = {loc.entry.id for loc in Project(load_settings(root)).load_all().entries()}
        assert {"D-001", "D-002"} <= ids

    def test_bad_byte_named_at_its_line(self, run: Run, root: Path) -> None:
        """A non-UTF-8 byte on line 11: check names line 11, list works on the other files, add refuses, exit 2."""
        add(run, "In another file")
        text = "# Frictions\n\n" + entry("F-001", "Bad byte", "Fine line.\nSo far.\nHere: \xff.", "open")
        write_file(root, "", "frictions.md", raw=text.encode().replace("\xff".encode(), b"\xff"))
        before = snapshot(root)
        result = run("check", "--no-lint")
        assert result.exit_code == 1 and "frictions.md:11:" in result.output, result.output
        listed = run("list", "--json")
        assert listed.exit_code == 0 and "frictions.md:11" in listed.stderr
        refused = run("add", "-k", "friction", "-t", "X", "-a", "edge", "--body", "X.")
        assert refused.exit_code == 2 and "frictions.md:11" in refused.stderr and snapshot(root) == before

    def test_heading_in_a_fence_and_manual_in_a_body(self, run: Run, root: Path) -> None:
        """'### D-009: x' inside a code fence is body text; a body saying '## Manual' through the CLI is refused
        (it would end the entries), a hand-written one is reported at its line."""
        body = "Before.\n\n```\n### D-009: not an entry\n```\n\nAfter."
        first = run("add", "-k", "decision", "-t", "Fenced", "-a", "edge", "--body", body)
        assert first.exit_code == 0, first.output
        memory = Project(load_settings(root)).load()
        assert [e.id for f in memory for e in f.memory.entries] == ["D-001"]
        refused = run("add", "-k", "decision", "-t", "Manual", "-a", "edge", "--body", "Text.\n\n## Manual\n\nmore")
        no_traceback(refused.output)
        assert (refused.exit_code == 2 and "op 1" in refused.stderr) or "body" in refused.stderr

    def test_ten_megabyte_file_and_20000_entries(self, root: Path, tmp_path: Path) -> None:
        """A 10 MB memory file and a 20,000-entry file: fmt and check read both, an add lands after them."""
        big_files(root, 20_000)

    @pytest.mark.heavy
    def test_ten_megabyte_file_and_100000_entries(self, root: Path, tmp_path: Path) -> None:
        """The same with a 100,000-entry file."""
        big_files(root, 100_000)


def big_files(root: Path, count: int) -> None:
    """A 10 MB file of 5,299 entries and a file of `count` short ones, formatted, checked and written to."""
    big_body = ("A long line of prose about a subsystem. " * 2 + "\n") * 24
    entries = [entry(f"D-{n:03d}", f"Big {n}", big_body) for n in range(1, 5300)]
    write_file(root, "# Decisions\n\n" + "\n".join(entries))
    assert (root / "memory" / "decisions.md").stat().st_size > 10_000_000
    many = [entry(f"K-{n:06d}", f"Fact {n}", f"Fact {n}.", "active") for n in range(1, count + 1)]
    write_file(root, "# Facts\n\n" + "\n".join(many), "facts.md")
    cli(root, "fmt", "--no-lint", timeout=3600)
    added = cli(root, "add", "-k", "fact", "-t", "After a hundred thousand", "-a", "edge", "--body", "x.")
    assert added.stdout.split()[-1] == f"K-{count + 1:03d}"  # the configured id_width (3), not the hand-written one
    ids = intact(root)
    assert len(ids) == 5299 + count + 1
    record("big-files", decisions_bytes=(root / "memory" / "decisions.md").stat().st_size, entries=len(ids))


class TestPaths:
    @pytest.mark.parametrize(
        "target", ["../outside.md", "/tmp/memfiles-outside.md", "memory/../outside.md", "memory/x.txt"]
    )
    def test_add_file_outside_the_memory_folders_is_refused(self, run: Run, root: Path, target: str) -> None:
        """--file pointing outside memory/ (../, absolute, not Markdown): exit 2, nothing written anywhere."""
        before = snapshot(root)
        result = run("add", "-k", "decision", "-t", "Escape", "-a", "edge", "--body", "x.", "--file", target)
        assert result.exit_code == 2 and ("memory/ folder" in result.stderr or ".md" in result.stderr), result.output
        assert snapshot(root) == before and not (root.parent / "outside.md").exists()
        assert not Path("/tmp/memfiles-outside.md").exists()

    def test_import_op_and_symlink_outside_are_refused(self, run: Run, root: Path, tmp_path: Path) -> None:
        """An import op whose file is ../, absolute, or a symlink in memory/ leading out: refused by op number."""
        outside = tmp_path / "elsewhere"
        outside.mkdir()
        (outside / "target.md").write_text("# Target\n\n" + entry("D-500", "Out there", "x."))
        (root / "memory" / "link.md").symlink_to(outside / "target.md")
        (root / "memory" / "linked").symlink_to(outside)
        ops = [
            {"op": "add", "kind": "decision", "title": f"T{n}", "area": "a", "body": "b.", "file": path}
            for n, path in enumerate(["../x.md", str(outside / "target.md"), "memory/link.md", "memory/linked/new.md"])
        ]
        batch = tmp_path / "batch.json"
        batch.write_text(json.dumps({"ops": ops}))
        before = (outside / "target.md").read_text()
        result = run("import", str(batch))
        assert result.exit_code == 2, result.output
        for position in (1, 2, 3, 4):
            assert f"op {position}: file" in result.stderr, result.stderr
        assert (outside / "target.md").read_text() == before and not (outside / "new.md").exists()

    def test_symlink_loop_does_not_hang_discovery(self, run: Run, root: Path) -> None:
        """memory/loop -> memory and pkg/loop -> .. : discovery ends, the entries are listed once."""
        add(run, "Only one")
        (root / "memory" / "loop").symlink_to(root / "memory")
        (root / "pkg").mkdir()
        (root / "pkg" / "loop").symlink_to(root)
        (root / "memory" / "self").symlink_to(root / "memory" / "self")  # a link to itself: ELOOP
        result = run("list", "--json")
        assert result.exit_code == 0, result.output
        assert [e["id"] for e in json.loads(result.stdout)["entries"]] == ["D-001"]
        assert run("check", "--no-lint").exit_code == 0
        os.unlink(root / "memory" / "self")
