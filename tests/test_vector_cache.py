"""The vectors saved beside the catalog mirror the store after every write, and a reader never trusts a stale copy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memfiles.config import load_settings
from memfiles.index.vector_cache import VectorCache
from tests.conftest import SAMPLE_ENTRIES as ENTRIES
from tests.conftest import Run

pytestmark = pytest.mark.integration


BACKUPS = "Backups are kept thirty days"


@pytest.fixture(autouse=True)
def patient_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMFILES_INDEX_TIMEOUT", "300")


@pytest.fixture
def indexed(run: Run, root: Path) -> Path:
    for kind, title, area, body in ENTRIES:
        assert run("add", "-k", kind, "-t", title, "-a", area, "--body", body).exit_code == 0
    assert run("backfill").exit_code == 0
    return root


def saved_and_stored(root: Path) -> tuple[VectorCache | None, dict[str, np.ndarray]]:
    """The vectors the reader would use (None: it would ask the store) and the store's own vectors."""
    from memfiles.index.chroma import open_store
    from memfiles.index.embedder import collection_name, load_embedder
    from memfiles.services.indexing.index_session import open_reader

    settings = load_settings(root)
    with open_reader(settings) as reader:
        cache = reader.catalog.vectors if reader.__class__.__name__ == "SavedIndex" else None
        if cache is not None:
            cache = VectorCache(list(cache.ids), list(cache.entries), np.array(cache.matrix))
    embedder = load_embedder(settings.model, light=True)
    with open_store(settings, collection_name(embedder.name, embedder.dimension)) as store:
        got = store.collection.get(include=["embeddings"])
        stored = {i: np.asarray(v, dtype=np.float32) for i, v in zip(got["ids"], got["embeddings"], strict=True)}
    return cache, stored


def assert_mirrors(root: Path) -> VectorCache:
    """The saved vectors exist, hold exactly the store's ids and equal its vectors row for row."""
    cache, stored = saved_and_stored(root)
    assert cache is not None, "the reader fell back to the store: no vectors in step were saved"
    assert sorted(cache.ids) == sorted(stored)
    for n, chroma_id in enumerate(cache.ids):
        assert np.allclose(cache.matrix[n], stored[chroma_id], atol=1e-6), chroma_id
    return cache


class TestMirror:
    def test_every_write_leaves_vectors_equal_to_the_store(self, indexed: Path, run: Run) -> None:
        """After backfill, add, set (new body), retire and prune, the saved vectors equal the store's."""
        before = assert_mirrors(indexed)
        old = before.matrix[before.ids.index("D-001")].copy()
        assert run("add", "-k", "fact", "-t", BACKUPS, "-a", "ops", "--body", "Then gone.").exit_code == 0
        assert "K-002" in assert_mirrors(indexed).ids
        assert run("set", "D-001", "--body", "Signing moved to a hardware token in the office.").exit_code == 0
        after = assert_mirrors(indexed)
        assert not np.allclose(after.matrix[after.ids.index("D-001")], old, atol=1e-4)  # the new body's vector
        assert run("retire", "L-001", "--reason", "the flow changed").exit_code == 0
        assert_mirrors(indexed)
        assert run("prune", "F-001", "--reason", "a duplicate").exit_code == 0
        assert_mirrors(indexed)

    def test_a_file_edited_by_hand_is_mirrored_after_backfill(self, indexed: Path, run: Run) -> None:
        """An edit no command saw: backfill re-embeds the entry and the saved vectors follow."""
        path = next((indexed / "memory").glob("decisions.md"))
        path.write_text(path.read_text().replace("Keys never leave the host.", "Keys live in a vault now."))
        assert run("backfill").exit_code == 0
        assert_mirrors(indexed)


class TestStaleness:
    def test_vectors_of_another_save_are_never_used(self, indexed: Path, run: Run) -> None:
        """Vectors whose token is not the catalog's (a crash between two writes) send the reader to the store."""
        folder = next(p for p in (indexed / ".memsearch").iterdir() if (p / "vectors.json").exists())
        data = json.loads((folder / "vectors.json").read_text())
        data["token"] = "0" * 32
        (folder / "vectors.json").write_text(json.dumps(data))
        cache, _ = saved_and_stored(indexed)
        assert cache is None
        result = run_search(indexed, "signing keys on the build host")
        assert result[0] == "D-001"

    def test_a_catalog_behind_the_store_is_not_trusted(self, indexed: Path, run: Run) -> None:
        """Catalog and vectors restored from before a write (the store moved on): the reader asks the store
        and finds the new entry by meaning."""
        folder = next(p for p in (indexed / ".memsearch").iterdir() if (p / "vectors.json").exists())
        saved = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
        assert run("add", "-k", "fact", "-t", BACKUPS, "-a", "ops", "--body", "Then gone.").exit_code == 0
        moved = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
        assert moved != saved, "the write did not reach the index: no catalog is behind anything"
        for name, data in saved.items():
            (folder / name).write_bytes(data)
        cache, _ = saved_and_stored(indexed)
        assert cache is None or "K-002" in cache.ids
        assert run_search(indexed, "how long do we keep backups")[0] == "K-002"


def run_search(root: Path, query: str) -> list[str]:
    from click.testing import CliRunner

    from memfiles.cli.search import memsearch

    result = CliRunner().invoke(memsearch, ["--root", str(root), query, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return [hit["entry"]["id"] for hit in json.loads(result.stdout)["hits"]]


class TestReaderWeight:
    def test_a_query_in_step_does_not_import_chromadb(self, indexed: Path) -> None:
        """With catalog and vectors in step, memsearch answers with numpy alone: chromadb is never imported."""
        code = (
            "import sys\nfrom memfiles.cli.search import memsearch\n"
            "try:\n    memsearch(['signing keys', '--json'], standalone_mode=False)\nfinally:\n"
            "    print('CHROMADB' if 'chromadb' in sys.modules else 'NO-CHROMADB', file=sys.stderr)\n"
        )
        env = {**os.environ, "MEMFILES_ROOT": str(indexed)}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["hits"][0]["entry"]["id"] == "D-001"
        assert out.stderr.strip().splitlines()[-1] == "NO-CHROMADB"


class TestExactSearch:
    def test_filtered_search_equals_brute_force_and_passages_reduce_to_the_best(self) -> None:
        """Every filter mask gives the exact top of the rows it keeps; an entry stored as two passages
        scores by its better one."""
        rng = np.random.default_rng(3)
        matrix = rng.standard_normal((500, 16)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        order = [f"E-{n:03d}" for n in range(400)]
        ids = order + [f"E-{n:03d}#2" for n in range(100)]
        entries = order + order[:100]
        cache = VectorCache(ids, entries, matrix)
        query = matrix[7] + matrix[450]
        query /= np.linalg.norm(query)
        per_entry = {e: -np.inf for e in order}
        for n, e in enumerate(entries):
            per_entry[e] = max(per_entry[e], float(matrix[n] @ query))
        blocks = np.zeros(len(order), dtype=bool)
        blocks[40:140] = blocks[300:380] = True  # two runs of kept rows, with passages: multiplied run by run
        masks = [rng.random(len(order)) < share for share in (1.0, 0.5, 0.1, 0.01, 0.0)]  # full, gather
        for allowed in [*masks, blocks, ~blocks]:
            got = cache.search(query, order, 20, allowed)
            exact = sorted(((e, s) for n, (e, s) in enumerate(per_entry.items()) if allowed[n]), key=lambda x: -x[1])
            assert list(got) == [e for e, _ in exact[:20]]
            assert np.allclose(list(got.values()), [s for _, s in exact[:20]], atol=1e-5)
        assert cache.scores_of(query, ["E-050"])["E-050"] == pytest.approx(per_entry["E-050"], abs=1e-5)


def test_a_saved_catalog_loads_equal_to_what_was_saved(tmp_path: Path) -> None:
    """Catalog.save then Catalog.load gives equal, hashable documents (the fast path that skips the frozen
    dataclass's __init__); an item of another shape (a field missing, one unknown) still loads through
    __init__, and one missing a required field is refused."""
    import json

    import pytest

    from memfiles.index.catalog import Catalog, IndexDoc

    docs = {
        f"F-{n:03d}": IndexDoc(
            f"F-{n:03d}", f"T {n}\n\nB {n}", "fact", "a", "open", "memory/x.md", n, "", "2026-11-30", f"T {n}", str(n)
        )
        for n in range(1, 4)
    }
    Catalog(docs).save(tmp_path)
    loaded = Catalog.load(tmp_path)
    assert loaded.docs == docs and list(loaded.docs) == list(docs)
    assert {hash(d) for d in loaded.docs.values()} == {hash(d) for d in docs.values()}
    assert loaded.docs["F-001"].body() == "B 1" and loaded.docs["F-001"].date_num == 20261130
    data = json.loads((tmp_path / "catalog.json").read_text())
    del data["docs"][0]["extra"]
    data["docs"][1]["unknown"] = 1
    (tmp_path / "catalog.json").write_text(json.dumps(data))
    again = Catalog.load(tmp_path)
    assert again.docs["F-001"].extra == "{}" and again.docs["F-002"] == docs["F-002"]
    del data["docs"][2]["hash"]
    (tmp_path / "catalog.json").write_text(json.dumps(data))
    with pytest.raises(TypeError):
        Catalog.load(tmp_path)
