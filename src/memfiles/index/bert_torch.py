"""The BERT recipe of index/embedder.py in torch, for bulk encoding: the kernels sentence-transformers
runs (one fused attention call per layer), without importing sentence-transformers and transformers,
which cost ~4 s of a cold backfill's start-up. Vectors equal sentence-transformers' to 1e-5 (tested).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from memfiles.index.embedder import DEFAULT_MODEL, NumpyBertEmbedder, _model_failed

if TYPE_CHECKING:
    import numpy as np


class TorchBertEmbedder(NumpyBertEmbedder):
    """The same BERT recipe in torch, for bulk work: the kernels sentence-transformers runs, without
    importing sentence-transformers and transformers (~4 s of a cold backfill's start-up)."""

    @cached_property
    def model(self) -> dict[str, Any]:
        import torch
        from safetensors.torch import load_file

        try:
            weights = load_file(str(self.path / "model.safetensors"))
        except Exception as error:  # deleted or truncated since `supports` looked
            raise _model_failed(self.path, error, self.name == DEFAULT_MODEL) from error
        for n in range(self.layers):
            p = f"encoder.layer.{n}.attention.self"
            weights[f"{p}.qkv.weight"] = torch.cat([weights[f"{p}.{m}.weight"] for m in ("query", "key", "value")])
            weights[f"{p}.qkv.bias"] = torch.cat([weights[f"{p}.{m}.bias"] for m in ("query", "key", "value")])
        return {name: value.float() if value.is_floating_point() else value for name, value in weights.items()}

    def _encode_batch(self, encodings: list[Any]) -> np.ndarray:
        import torch
        import torch.nn.functional as F

        w = self.model
        padded_ids, padded_mask, padded_types = self._padded(encodings)
        with torch.inference_mode():
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
            weights = mask.unsqueeze(-1).to(x.dtype)
            pooled = (x * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return F.normalize(pooled, p=2, dim=1).numpy().astype("float32")
