"""The index's stored vectors, read in one call (the index client's `vectors`, services/indexing/index_client.py):
from the watcher when one runs, as base64 float32 rows, else from the store opened here.

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
Vectors = dict[str, tuple[str, "np.ndarray"]]


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


def answer_vectors(settings: Settings, answer: dict[str, Any]) -> tuple[Vectors, Embed]:
    """The watcher's answer read back, with this process's own encoder for texts the index lacks (loaded
    only when one is asked for)."""
    import numpy as np

    def embed_here(texts: list[str]) -> Any:
        from memfiles.index.embedder import load_embedder

        return load_embedder(settings.model, light=True).encode(texts)

    ids, hashes = answer["ids"], answer["hashes"]
    if not ids:
        return {}, embed_here
    matrix = np.frombuffer(base64.b64decode(answer["vectors"]), dtype=np.float32).reshape(len(ids), -1)
    return {i: (h, matrix[n]) for n, (i, h) in enumerate(zip(ids, hashes, strict=True))}, embed_here


def session_vectors(session: Any) -> tuple[Vectors, Embed]:
    """What an open index session holds, with its encoder."""
    import numpy as np

    got = session.store.get(None, include=["embeddings", "metadatas"])
    matrix = np.asarray(got["embeddings"], dtype=np.float32)
    hashes = [(m or {}).get("hash", "") for m in got["metadatas"]]
    vectors = {i: (h, matrix[n]) for n, (i, h) in enumerate(zip(got["ids"], hashes, strict=True))}
    return vectors, session.embedder.encode


def stored_vectors(settings: Settings) -> tuple[Vectors, Embed]:
    """{id: (content hash, vector)} of every entry the index holds, and a function that embeds texts
    with the index's model (for entries it lacks). Raises IndexUnavailable when there is no index."""
    from memfiles.services.indexing.index_client import connect, index_exists

    if not index_exists(settings):
        raise IndexUnavailable("there is no index yet")
    return connect(settings).vectors()
