"""A clone's view of a shared index (index/view.py): all-or-nothing writes, a rebuild that readers see only
once it is complete, lookups by content, the `where` clauses of index/filters.py, and a damaged view."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from memfiles.index.catalog import IndexDoc
from memfiles.index.filters import Filters
from memfiles.index.view import FORMAT, ViewStore, read_view_stamp
from tests.conftest import SAMPLE_ENTRIES, Run


def docs(count: int, start: int = 0) -> list[IndexDoc]:
    kinds = ["decision", "fact", "friction", "lesson", "working"]
    return [
        IndexDoc(
            id=f"K-{n:03d}",
            text=f"Title {n}\n\nBody {n}.",
            kind=kinds[n % len(kinds)],
            area=f"area{n % 3}",
            status="open" if n % 2 else "active",
            path=f"memory/part{n % 4}.md",
            line=n,
            section="",
            date=f"2026-0{1 + n % 9}-01",
            title=f"Title {n}",
            hash=f"hash{n}",
        )
        for n in range(start, start + count)
    ]


def unit(rows: int, seed: int = 0) -> np.ndarray:
    matrix = np.random.default_rng(seed).standard_normal((rows, 8)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def write(view: ViewStore, items: list[IndexDoc], vectors: np.ndarray, replace: bool = False) -> str:
    _before, generation = view.begin_write()
    args = ([d.id for d in items], vectors, [d.text for d in items], [d.metadata("m") for d in items])
    if replace:
        view.replace_all(generation, *args)
    else:
        view.upsert(*args)
    view.finish_write(generation)
    return generation


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "view" / "view.sqlite3"


class TestWrites:
    def test_a_write_that_never_finishes_leaves_the_view_as_it_was(self, path: Path) -> None:
        """A process that dies between begin_write and finish_write: its rows are not there, the stamp is
        the one before, and the next writer starts clean."""
        view = ViewStore(path, "c", path.parent / "c")
        generation = write(view, docs(3), unit(3))
        view.begin_write()
        view.upsert(["K-100"], unit(1), ["t"], [{"hash": "h"}])
        view.delete(["K-000"])
        view.close()  # as a process killed here would: never committed
        again = ViewStore(path, "c", path.parent / "c")
        assert again.count() == 3 and again.vectors(["K-100"]) == {}
        assert again.stamp().generation == generation and again.stamp().steady
        assert read_view_stamp(path, "c") == again.stamp()

    def test_a_rebuild_is_seen_whole_or_not_at_all(self, path: Path) -> None:
        """replace_all inside the write's transaction: a reader (another connection) sees the old rows until
        finish_write, then only the new ones."""
        view = ViewStore(path, "c", path.parent / "c")
        write(view, docs(5), unit(5))
        _before, generation = view.begin_write()
        view.replace_all(generation, ["K-900"], unit(1, 9), ["new"], [{"hash": "new"}])
        reader = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        assert reader.execute("SELECT COUNT(*) FROM rows").fetchone()[0] == 5
        view.finish_write(generation)
        assert [row[0] for row in reader.execute("SELECT id FROM rows")] == ["K-900"]
        assert read_view_stamp(path, "c").generation == generation

    def test_vectors_by_content_and_rows_as_chroma_gives_them(self, path: Path) -> None:
        view = ViewStore(path, "c", path.parent / "c")
        items, vectors = docs(4), unit(4)
        write(view, items, vectors)
        found = view.vectors_by_hash(["hash2", "nope"])
        assert list(found) == ["hash2"] and np.array_equal(found["hash2"], vectors[2])
        got = view.get(["K-003", "K-404"], include=["documents", "metadatas", "embeddings"])
        assert got["ids"] == ["K-003"] and got["documents"] == ["Title 3\n\nBody 3."]
        assert got["metadatas"][0]["hash"] == "hash3" and np.array_equal(got["embeddings"][0], vectors[3])
        view.update_metadata(["K-003"], [{**items[3].metadata("m"), "status": "retired"}])
        assert view.all_metadata()["K-003"]["status"] == "retired"

    def test_query_with_the_filters_where_clauses_is_exact(self, path: Path) -> None:
        """Every `where` shape index/filters.py writes (one value, $in, $nin of hidden kinds, $gte, $and) gives
        the rows a brute-force filter gives, nearest first."""
        from memfiles.index.catalog import Catalog

        view = ViewStore(path, "c", path.parent / "c")
        items, vectors = docs(60), unit(60)
        write(view, items, vectors)
        catalog = Catalog({d.id: d for d in items})
        query = unit(1, 5)[0]
        for filters in (
            Filters(kind="fact"),
            Filters(kind=("fact", "lesson"), status="open"),
            Filters(area="AREA1", since="2026-05-01"),
            Filters(path="memory/part1.md"),
            Filters(),
        ):
            where = filters.where(catalog)
            expected = sorted(
                ((d.id, float(vectors[n] @ query)) for n, d in enumerate(items) if filters.accepts(d)),
                key=lambda item: -item[1],
            )[:10]
            got = view.query(query, 10, where)
            assert [i for i, _ in got] == [i for i, _ in expected], filters
            assert np.allclose([s for _, s in got], [s for _, s in expected])


class TestDamagedView:
    @pytest.mark.parametrize("how", ["garbage", "another format"])
    def test_a_damaged_view_is_said_and_rebuilt(self, run: Run, root: Path, how: str, monkeypatch) -> None:
        """A view file that is not one (bytes overwritten) or of another format: memsearch says which file
        and to run `backfill --rebuild` (exit 2, no traceback); the rebuild discards it and builds it again
        (the server is down here: the vectors are embedded in place, with one warning)."""
        import socket

        from click.testing import CliRunner

        from memfiles.cli.search import memsearch

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        monkeypatch.setenv("MEMFILES_CHROMA_URL", f"http://127.0.0.1:{port}")
        for kind, title, area, body in SAMPLE_ENTRIES:
            run("add", "-k", kind, "-t", title, "-a", area, "--body", body)
        assert run("backfill").exit_code == 0
        view = root / ".memsearch" / "view" / "view.sqlite3"
        if how == "garbage":
            view.write_bytes(b"not a database at all " * 500)
        else:
            with sqlite3.connect(view) as connection:
                connection.execute(f"PRAGMA user_version = {FORMAT + 98}")
        searched = CliRunner().invoke(memsearch, ["--root", str(root), "signing keys", "--json"])
        assert searched.exit_code == 2 and "Traceback" not in searched.output
        error = json.loads(searched.stdout)["error"]
        assert error["code"] == "index" and "view" in error["message"] and "backfill --rebuild" in error["message"]
        rebuilt = run("backfill", "--rebuild", "--json")
        assert rebuilt.exit_code == 0 and json.loads(rebuilt.stdout)["indexed"] == len(SAMPLE_ENTRIES)
        found = CliRunner().invoke(memsearch, ["--root", str(root), "who signs release builds", "--json"])
        assert json.loads(found.stdout)["hits"][0]["entry"]["id"] == "D-001"
