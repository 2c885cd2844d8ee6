"""The bulk encoder in a child process (index/encode_worker.py): the same vectors as in process, errors
said in the in-process words, a child that dies or is left unused never hangs the parent, and a first
backfill of many entries never imports torch in the process that opens the store."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memfiles.errors import IndexUnavailable
from memfiles.index.bert_torch import TorchBertEmbedder
from memfiles.index.embedder import ModelUnavailable, resolve_model
from memfiles.index.encode_worker import EncoderFailed, EncoderProcess
from tests.conftest import add_ops, snapshot

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
TEXTS = [
    "coverage aggregation",
    "The batch files cannot be used as the coverage map: merging them drops the lines no batch touched.",
    "∑∫∂√∞≈ ⓐⓑⓒ",
    "",
    "long " * 400,
    *[f"entry {n} about the hold violations of block {n % 7}" for n in range(40)],
]


def _child(path: Path | None = None) -> EncoderProcess:
    name, bundled = resolve_model(None)
    assert bundled is not None
    return EncoderProcess(name, path or bundled, 384)


@pytest.mark.slow
def test_same_vectors_as_the_in_process_encoder_request_after_request() -> None:
    child = _child()
    try:
        reported: list[int] = []
        vectors = child.encode(TEXTS, batch_size=16, progress=reported.append)
        expected = TorchBertEmbedder(*resolve_model(None)).encode(TEXTS, batch_size=16)
        assert vectors.shape == (len(TEXTS), 384) and vectors.dtype == np.float32
        assert np.abs(vectors - expected).max() < 1e-6
        assert sum(reported) == len(TEXTS)
        again = child.encode(TEXTS[:2])  # the child serves one request after another
        assert np.abs(again - expected[:2]).max() < 1e-6
        assert child.encode([]).shape == (0, 384)
    finally:
        child.close()


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@pytest.mark.slow
def test_a_bfloat16_child_says_so_and_stays_within_a_cosine_of_float32() -> None:
    """bfloat16 forced (emulated where the CPU lacks it, so this runs anywhere): the reply says so, the
    vectors are unit length, not float32's bit for bit, and within a cosine of 0.9999 of them."""
    name, bundled = resolve_model(None)
    assert bundled is not None
    texts = [t for t in TEXTS if t]  # an empty text's vector is zero
    expected = TorchBertEmbedder(name, bundled).encode(texts, batch_size=16)
    child = EncoderProcess(name, bundled, 384, "bfloat16")
    try:
        assert child.precision is None
        vectors = child.encode(texts, batch_size=16)
        assert child.precision == "bfloat16"
    finally:
        child.close()
    assert np.abs(vectors - expected).max() > 1e-5  # computed otherwise, not float32 again
    assert _cosines(vectors, expected).min() > 0.9999
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def _cpu_has_amx() -> bool | None:
    """What the kernel says of this CPU's AMX tiles (Linux); None where it cannot be told."""
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return None
    return "amx_tile" in flags.split()


def test_bfloat16_batches_come_in_few_lengths() -> None:
    """In bfloat16 every batch is padded to a multiple of 32 positions (oneDNN keeps kernels per shape:
    one length per batch grew the child by about 1 MB an entry); the mask covers the real tokens only,
    and float32 keeps each batch at its longest text."""
    from memfiles.index.bert_torch import BFLOAT16_LENGTH_STEP

    name, bundled = resolve_model(None)
    assert bundled is not None
    for precision in ("bfloat16", "float32"):
        encoder = TorchBertEmbedder(name, bundled, precision)
        encodings = encoder.tokenizer.encode_batch(["coverage aggregation", "hold violations " * 20])
        ids, mask, _types = encoder._padded(encodings)
        longest = max(len(e.ids) for e in encodings)
        if precision == "bfloat16":
            assert ids.shape[1] % BFLOAT16_LENGTH_STEP == 0 and ids.shape[1] >= longest
        else:
            assert ids.shape[1] == longest
        assert mask.sum(axis=1).tolist() == [len(e.ids) for e in encodings]


def test_auto_precision_is_bfloat16_only_where_the_cpu_multiplies_it() -> None:
    """ "auto" is bfloat16 exactly where the CPU has AMX tiles: torch's probe is checked against what the
    kernel says of the CPU, then the child against the probe."""
    from memfiles.index.bert_torch import native_bfloat16

    amx = _cpu_has_amx()
    if amx is not None:
        assert native_bfloat16() == amx
    name, bundled = resolve_model(None)
    assert bundled is not None
    for precision, expected in (("auto", "bfloat16" if native_bfloat16() else "float32"), ("float32", "float32")):
        child = EncoderProcess(name, bundled, 384, precision)
        try:
            child.encode(["coverage aggregation"])
            assert child.precision == expected, precision
        finally:
            child.close()


def test_a_broken_model_is_said_in_the_in_process_words(tmp_path: Path) -> None:
    """Weights truncated after the parent looked: ModelUnavailable, with the recovery the in-process
    encoder gives, on every request; no traceback."""
    broken = tmp_path / "model"
    shutil.copytree(resolve_model(None)[1], broken)  # type: ignore[arg-type]
    (broken / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{")
    child = _child(broken)
    try:
        for _ in range(2):
            with pytest.raises(ModelUnavailable) as caught:
                child.encode(["anything"])
            assert "cannot be loaded" in str(caught.value) and "backfill --rebuild" in str(caught.value)
    finally:
        child.close()


def test_a_child_that_died_is_an_index_error_not_a_hang() -> None:
    child = _child()
    try:
        assert child._process is not None
        child._process.kill()
        child._process.wait()
        with pytest.raises(EncoderFailed, match="encoder process ended unexpectedly"):
            child.encode(["anything"])
    finally:
        child.close()


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ("[1, 2]", "said"),
        ("not json at all", "said"),
        ('{"rows": 5, "dimension": 384, "precision": "float32"}', "5 x 384 vectors for 1 texts"),
        ('{"rows": 1, "dimension": 3, "precision": "float32"}', "1 x 3 vectors for 1 texts"),
        ('{"rows": 1, "dimension": 384}', "said"),
    ],
)
def test_a_child_that_answers_nonsense_is_stopped_and_named(
    monkeypatch: pytest.MonkeyPatch, reply: str, said: str
) -> None:
    """A reply that is not the wire's (a library printing on the child's stdout through some path the
    child did not redirect, a version mismatch): EncoderFailed, the child stopped, never a traceback."""
    import memfiles.index.encode_worker as worker

    boot = f"import sys; sys.stdin.readline(); print({reply!r}, flush=True); sys.stdin.readline()"
    monkeypatch.setattr(worker, "_BOOT", boot)
    child = _child()
    try:
        with pytest.raises(EncoderFailed, match="ended unexpectedly") as caught:
            child.encode(["one text"])
        assert said in str(caught.value)
        assert not child.alive
    finally:
        child.close()


def test_an_encoder_failure_is_not_a_damaged_store() -> None:
    """--rebuild discards a store that fails as a store; an encoder process that died says nothing
    about the store and must not cost it."""
    from memfiles.services.indexing.index_client import _damaged

    assert not _damaged(EncoderFailed("the encoder process ended unexpectedly (exit -9)"))
    assert _damaged(IndexUnavailable("the index at .memsearch/chroma failed"))


def test_close_stops_a_child_still_loading() -> None:
    child = _child()
    process = child._process
    assert process is not None
    child.close()
    assert process.returncode == -signal.SIGKILL  # killed while importing torch, not waited for
    with pytest.raises(IndexUnavailable, match="closed"):
        child.encode(["anything"])
    child.close()  # twice is harmless


BACKFILL = """
import json, sys
from memfiles.config import load_settings
from memfiles.services.indexing.index_client import LocalIndex
result = LocalIndex(load_settings(sys.argv[1])).backfill(rebuild=len(sys.argv) > 2)
print(json.dumps({"torch": "torch" in sys.modules, "indexed": result["report"]["indexed"]}))
"""


@pytest.mark.slow
def test_first_backfill_and_rebuild_encode_in_a_child(tmp_path: Path) -> None:
    """A first build of 70 entries (above the light encoder's 64): the store is written by this process,
    torch is imported only by the child; a rebuild too; the vectors are searchable."""
    (tmp_path / "memory").mkdir()
    (tmp_path / "ops.json").write_text(add_ops(70))
    env = {**os.environ, "MEMFILES_SEARCH_WATCH": "0"}
    subprocess.run(
        [str(BIN / "memfiles"), "--root", str(tmp_path), "import", str(tmp_path / "ops.json")], env=env, check=True
    )
    for extra in ([], ["rebuild"]):
        done = subprocess.run(
            [sys.executable, "-c", BACKFILL, str(tmp_path), *extra], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"torch": False, "indexed": 70}
    found = subprocess.run(
        [str(BIN / "memsearch"), "--root", str(tmp_path), "--json", "Entry number 42"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["hits"][0]["entry"]["title"] == "Entry number 42"


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_a_backfill_stores_vectors_in_the_bulk_precision_set(tmp_path: Path, precision: str) -> None:
    """`bulk_precision` (here by its variable) reaches the child: float32 stores the in-process float32
    vectors to 1e-6; bfloat16 others, within a cosine of 0.9999."""
    from memfiles.config import load_settings
    from memfiles.index.chroma import open_store
    from memfiles.index.embedder import collection_name

    (tmp_path / "memory").mkdir()
    (tmp_path / "ops.json").write_text(add_ops(70))
    env = {**os.environ, "MEMFILES_SEARCH_WATCH": "0", "MEMFILES_BULK_PRECISION": precision}
    for command in (["import", str(tmp_path / "ops.json")], ["backfill"]):
        done = subprocess.run(
            [str(BIN / "memfiles"), "--root", str(tmp_path), *command], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
    name, bundled = resolve_model(None)
    assert bundled is not None
    with open_store(load_settings(tmp_path), collection_name(name, 384)) as store:
        got = store.collection.get(include=["embeddings", "documents"])
    stored = np.asarray(got["embeddings"], dtype=np.float32)
    expected = TorchBertEmbedder(name, bundled).encode(list(got["documents"]), batch_size=16)
    assert len(stored) == 70
    if precision == "float32":
        assert np.abs(stored - expected).max() < 1e-6
    else:
        assert np.abs(stored - expected).max() > 1e-5
        assert _cosines(stored, expected).min() > 0.9999


@pytest.mark.slow
def test_backfill_with_a_broken_model_exits_2_and_writes_no_index(tmp_path: Path) -> None:
    broken = tmp_path / "model"
    shutil.copytree(resolve_model(None)[1], broken)  # type: ignore[arg-type]
    (broken / "model.safetensors").write_bytes(b"not weights")
    project = tmp_path / "project"
    (project / "memory").mkdir(parents=True)
    (project / "ops.json").write_text(add_ops(70))
    env = {**os.environ, "MEMFILES_SEARCH_WATCH": "0", "MEMFILES_MODEL": str(broken)}
    subprocess.run(
        [str(BIN / "memfiles"), "--root", str(project), "import", str(project / "ops.json")], env=env, check=True
    )
    before = snapshot(project)
    done = subprocess.run(
        [str(BIN / "memfiles"), "--root", str(project), "backfill"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "cannot be loaded" in done.stderr and "Traceback" not in done.stderr
    assert not list((project / ".memsearch").rglob("catalog.json"))
    assert snapshot(project) == before  # the memory files are untouched


NOISY = """
import sys
import memfiles.index.encode_worker as worker
served = worker._serve
def noisy(*args):
    print("a library talking on stdout")
    served(*args)
worker._serve = noisy
worker.main()
"""


def test_what_the_child_prints_goes_to_stderr_not_into_the_replies() -> None:
    name, path = resolve_model(None)
    done = subprocess.run(
        [sys.executable, "-c", NOISY, name, str(path), "float32"],
        input=json.dumps({"texts": ["one text"], "batch_size": 16}).encode() + b"\n",
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert b"a library talking" in done.stderr and b"a library talking" not in done.stdout
    first, second, vectors = done.stdout.split(b"\n", 2)
    assert json.loads(first) == {"done": 1}
    assert json.loads(second) == {"rows": 1, "dimension": 384, "precision": "float32"}
    assert len(vectors) == 384 * 4


def test_the_current_folder_shadows_nothing_in_the_child(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`python -c` puts the current folder first on sys.path; a json.py where memfiles runs must not be
    imported by the child in place of the real module."""
    (tmp_path / "json.py").write_text("raise SystemExit('the json.py of the current folder was imported')\n")
    monkeypatch.chdir(tmp_path)
    child = _child()
    try:
        assert child.encode(["one text"]).shape == (1, 384)
    finally:
        child.close()


def test_a_failure_while_the_child_encodes_closes_it() -> None:
    """Work done meanwhile that fails (encode_texts' `meanwhile`) stops the child: its reply to the
    abandoned request can never be read as the answer to a later one."""
    from memfiles.index.sync import encode_texts

    child = _child()

    def fails() -> None:
        raise OSError("disk full while building the lexical index")

    try:
        with pytest.raises(OSError, match="disk full"):
            encode_texts(child, ["one text", "two texts"], fails)
        assert not child.alive
        with pytest.raises(EncoderFailed, match="closed"):
            child.encode(["one text"])
    finally:
        child.close()


ORPHAN = """
import sys, os
from memfiles.index.embedder import resolve_model
from memfiles.index.encode_worker import EncoderProcess
child = EncoderProcess(*resolve_model(None), 384)
child.submit(["a text about coverage aggregation, again and again"] * 20000)
print(child._process.pid, flush=True)
os._exit(0)  # as if killed: nothing closes the child
"""


@pytest.mark.slow
def test_a_child_leaves_soon_after_its_parent_is_killed() -> None:
    """A parent killed mid-backfill does not leave the child encoding for minutes: the child's next
    progress line, one per batch, meets a closed pipe."""
    import time

    done = subprocess.run([sys.executable, "-c", ORPHAN], capture_output=True, text=True, timeout=120)
    pid = int(done.stdout.split()[0])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        if Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            return  # exited, waiting for init to reap it
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
    pytest.fail("the orphaned encoder child was still running 60 s after its parent died")
