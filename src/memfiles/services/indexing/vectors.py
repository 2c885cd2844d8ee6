"""The index's stored vectors, read in one call: from the watcher when one runs, else from the store.

The one place `dupes` reaches into the index for vectors, so that a change of index client touches
nothing else.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memfiles.config import Settings
from memfiles.errors import IndexUnavailable

if TYPE_CHECKING:
    import numpy as np

Embed = Callable[[list[str]], Any]


def encode_vectors(ids: list[str], hashes: list[str], vectors: np.ndarray) -> dict[str, Any]:
    """The watcher's answer: float32 vectors as base64, one row per id (JSON lines stay small)."""
    import numpy as np

    matrix = np.asarray(vectors, dtype=np.float32)
    return {
        "ids": ids,
        "hashes": hashes,
        "dimension": int(matrix.shape[1]) if matrix.ndim == 2 and len(matrix) else 0,
        "vectors": base64.b64encode(matrix.tobytes()).decode("ascii"),
    }


def _decode(answer: dict[str, Any]) -> dict[str, tuple[str, np.ndarray]]:
    import numpy as np

    ids, hashes = answer["ids"], answer["hashes"]
    if not ids:
        return {}
    matrix = np.frombuffer(base64.b64decode(answer["vectors"]), dtype=np.float32).reshape(len(ids), -1)
    return {i: (h, matrix[n]) for n, (i, h) in enumerate(zip(ids, hashes, strict=True))}


def stored_vectors(settings: Settings) -> tuple[dict[str, tuple[str, np.ndarray]], Embed]:
    """{id: (content hash, vector)} of every entry the index holds, and a function that embeds texts
    with the index's model (for entries it lacks). Raises IndexUnavailable when there is no index."""
    from memfiles.services.indexing import protocol
    from memfiles.services.indexing.index_client import index_exists
    from memfiles.services.indexing.index_session import open_index
    from memfiles.services.indexing.ipc import request

    if not index_exists(settings):
        raise IndexUnavailable("there is no index yet")
    answer = request(settings, protocol.vectors(), timeout=max(settings.index_timeout, 30.0))
    if answer is not None:

        def embed_remote(texts: list[str]) -> Any:
            from memfiles.index.embedder import load_embedder

            return load_embedder(settings.model, light=True).encode(texts)

        return _decode(answer), embed_remote
    with open_index(settings, timeout=max(settings.index_timeout, 5.0)) as session:
        if not session.store.exists():
            raise IndexUnavailable("there is no index yet")
        got = session.store.get(None, include=["embeddings", "metadatas"])
        embedder = session.embedder
    import numpy as np

    matrix = np.asarray(got["embeddings"], dtype=np.float32)
    hashes = [(m or {}).get("hash", "") for m in got["metadatas"]]
    return {i: (h, matrix[n]) for n, (i, h) in enumerate(zip(got["ids"], hashes, strict=True))}, embedder.encode
