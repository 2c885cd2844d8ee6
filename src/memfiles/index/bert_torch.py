"""The BERT recipe of index/embedder.py in torch, for bulk encoding and a watcher's queries: the kernels
sentence-transformers runs (one fused attention call per layer), without importing sentence-transformers
and transformers, which cost ~4 s of a cold backfill's start-up. Vectors equal sentence-transformers' to
1e-5 (tested).

The tensors are the numpy recipe's memory map, shared rather than copied (88 MB a process less). One
query runs on one thread, as the numpy recipe's does: on two threads its median was 8 ms against 10.5 ms
idle, but its 90th percentile 128 ms against 40 ms with two other busy processes on the 2 cores.

A bulk encoder may compute in bfloat16 (`precision`, the `bulk_precision` setting): the matrix products
and the attention in bfloat16 under torch's autocast, the layer norms, the pooling and the
normalisation in float32. On a CPU with AMX that encodes 1,000 CACM entries about 2x faster, the
vectors within a cosine of 0.9999 of float32's (tested; docs/benchmarks.md). Queries stay in float32.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memfiles.index.embedder import NumpyBertEmbedder

if TYPE_CHECKING:
    import numpy as np


PRECISIONS = ("auto", "float32", "bfloat16")
# Texts per forward pass of a bulk encode in bfloat16 (float32's is index/embedder.py's EMBED_BATCH, 16): on
# 1,000 CACM entries, medians of 3 alternating runs, 3.23 / 2.58 / 2.85 s at 16 / 32 / 64 against float32's
# 5.03 s at 16 and 5.28 s at 32 (2026-12-02, AMX, idle; /tmp scratch timing, table in docs/benchmarks.md).
BFLOAT16_BATCH = 32
# In bfloat16 a batch is padded to a multiple of this many positions. oneDNN's AMX kernels are made and
# kept per shape: cut by token count, every batch had a length of its own, and the encoder child grew by
# about 1 MB an entry (4.8 GB at 5,000 entries, a newcomer's walk-through). Padded so, 3,000 CACM
# entries peak at 840 MB against 1,730 MB, and 5,000 at 863 MB; and encode no slower (18.5 s against
# 19.9 s at 3,000; /tmp scratch timing, 2026-12-02, idle).
BFLOAT16_LENGTH_STEP = 32


def native_bfloat16() -> bool:
    """True when this CPU multiplies bfloat16 matrices in hardware (AMX), where bfloat16 pays; elsewhere
    torch emulates it, slower than float32. Imports torch."""
    import torch

    try:
        return bool(torch.cpu._is_amx_tile_supported())
    except (AttributeError, RuntimeError):  # a torch without the probe: float32, as before
        return False


class TorchBertEmbedder(NumpyBertEmbedder):
    """The same BERT recipe in torch, for bulk work: the kernels sentence-transformers runs, without
    importing sentence-transformers and transformers (~4 s of a cold backfill's start-up).

    `precision` is one of PRECISIONS: "auto" is bfloat16 where `native_bfloat16()`, else float32."""

    def __init__(self, name: str, path: Path, precision: str = "float32") -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        super().__init__(name, path)
        self.precision = precision

    @cached_property
    def bfloat16(self) -> bool:
        """Whether this encoder computes in bfloat16 (its `precision` resolved on this CPU)."""
        return self.precision == "bfloat16" or (self.precision == "auto" and native_bfloat16())

    def _padded(self, encodings: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The batch as the numpy recipe pads it; in bfloat16, on to a multiple of BFLOAT16_LENGTH_STEP
        positions (the padding is masked: the vectors do not change)."""
        ids, mask, types = super()._padded(encodings)
        if not self.bfloat16:
            return ids, mask, types
        length = ids.shape[1]
        positions = self.weights["embeddings.position_embeddings.weight"].shape[0]
        wanted = min(-(-length // BFLOAT16_LENGTH_STEP) * BFLOAT16_LENGTH_STEP, max(length, positions))
        if wanted == length:
            return ids, mask, types
        import numpy as np

        more = ((0, 0), (0, wanted - length))
        return np.pad(ids, more), np.pad(mask, more), np.pad(types, more)

    @classmethod
    def sharing(cls, numpy_encoder: NumpyBertEmbedder) -> TorchBertEmbedder:
        """The torch form of `numpy_encoder`, over the same arrays (its memory map and fused weights)."""
        torch_encoder = cls(numpy_encoder.name, numpy_encoder.path)
        torch_encoder.__dict__["weights"] = numpy_encoder.weights  # where cached_property keeps its value
        return torch_encoder

    def warm_up(self) -> None:
        """Import torch, load the tensors and the tokenizer and run torch's first call now, on this thread
        and its thread count (not through `encode`, which would set the process's default)."""
        self._encode_batch(self.tokenizer.encode_batch(["warm up"]))

    @cached_property
    def model(self) -> dict[str, Any]:
        """The numpy recipe's tensors (the file's memory map, fused query-key-value included) as torch's."""
        import warnings

        import torch

        with warnings.catch_warnings():  # read-only memory: inference never writes to its weights
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            return {name: torch.from_numpy(array) for name, array in self.weights.items()}

    @contextmanager
    def _blas_threads(self, limit: int | None) -> Iterator[None]:
        """torch held to `limit` threads (None: as it is); a few texts run on one (see the module's note).

        torch.set_num_threads sets the calling thread's count and the process's default, which a thread
        takes when it first runs torch: callers must not encode on two threads at once (the watcher
        encodes under its keeper's mutex only; bulk encodes in a child process)."""
        import torch

        if limit is None:
            yield
            return
        before = torch.get_num_threads()
        torch.set_num_threads(limit)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    def _encode_batch(self, encodings: list[Any]) -> np.ndarray:
        import torch
        import torch.nn.functional as F

        w = self.model
        padded_ids, padded_mask, padded_types = self._padded(encodings)
        autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bfloat16)
        with torch.inference_mode(), autocast:
            ids = torch.from_numpy(padded_ids)
            mask = torch.from_numpy(padded_mask).bool()
            types = torch.from_numpy(padded_types)
            batch, length = ids.shape
            heads, head = self.heads, self.hidden // self.heads

            def norm(x: Any, prefix: str) -> Any:
                return F.layer_norm(x, (self.hidden,), w[f"{prefix}.weight"], w[f"{prefix}.bias"], self.eps)

            def dense(x: Any, prefix: str) -> Any:
                return F.linear(x, w[f"{prefix}.weight"], w[f"{prefix}.bias"])

            x = (
                F.embedding(ids, w["embeddings.word_embeddings.weight"])
                + w["embeddings.position_embeddings.weight"][:length]
                + F.embedding(types, w["embeddings.token_type_embeddings.weight"])
            )
            x = norm(x, "embeddings.LayerNorm")
            attention_mask = mask[:, None, None, :] if not bool(mask.all()) else None
            for n in range(self.layers):
                p = f"encoder.layer.{n}"
                qkv = dense(x, f"{p}.attention.self.qkv").view(batch, length, 3, heads, head).permute(2, 0, 3, 1, 4)
                context = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], attn_mask=attention_mask)
                context = context.transpose(1, 2).reshape(batch, length, self.hidden)
                x = norm(dense(context, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
                inner = F.gelu(dense(x, f"{p}.intermediate.dense"))
                x = norm(dense(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
            x = x.float()  # float32 already: a layer norm's output, under autocast too
            weights = mask.unsqueeze(-1).to(x.dtype)
            pooled = (x * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return F.normalize(pooled, p=2, dim=1).numpy().astype("float32")
