"""Sharing vectors through a Chroma server, as the services use it: what status says of the server, a
rebuild's vectors encoded before the index is opened, and `memfiles gc`, which removes from the server's
pool the vectors no clone has used for a given time.

Nothing but gc ever removes a shared vector (a backfill publishes and marks, never deletes:
index/shared.py), so a clone on a branch nobody else has checked out keeps its vectors on the server
however other clones backfill. A clone whose vectors were removed still has them in its own view: its
searches are unaffected, and its next daily mark shares them again.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from memfiles.config import Settings
from memfiles.errors import ConfigError, IndexUnavailable
from memfiles.store.project import Project

if TYPE_CHECKING:
    from memfiles.services.indexing.backfill import Prepared

DAY = 86_400


def collect_garbage(settings: Settings, unused_for_days: float, dry_run: bool = False) -> dict[str, Any]:
    """Remove (or with `dry_run` only count) the pool's vectors whose `used` mark is older than
    `unused_for_days`; {"server", "collection", "unused_for_days", "removed", "kept", "dry_run"}."""
    from memfiles.index.embedder import collection_name, load_embedder
    from memfiles.index.shared import SharedVectors

    if not settings.index_url:
        raise ConfigError(
            "gc removes unused vectors from a Chroma server's shared pool: no index_url is set here (the"
            " embedded index holds this clone's own entries only, and `memfiles backfill` keeps it in step)",
            key="index_url",
        )
    embedder = load_embedder(settings.model, light=True)
    shared = SharedVectors(settings, collection_name(embedder.name, embedder.dimension), settings.lock_timeout)
    before = int(time.time() - unused_for_days * DAY)
    unused = shared.unused(before)
    removed = len(unused)
    if unused and not dry_run:
        shared.remove_unused(unused, before)
        removed -= len(shared.held(unused))  # a clone that marked one used meanwhile kept it
    return {
        "server": settings.index_url,
        "collection": shared.name,
        "unused_for_days": unused_for_days,
        "removed": removed,
        "kept": shared.count() - (removed if dry_run else 0),
        "dry_run": dry_run,
    }


def server_facts(settings: Settings, collection: str | None) -> dict[str, Any] | None:
    """With a Chroma server: its address, the pool of shared vectors of this index's model and how many it
    holds (index/shared.py), or why the server could not say. None for the embedded store."""
    if not settings.index_url:
        return None
    from memfiles.index.embedder import collection_name, load_embedder
    from memfiles.index.shared import ServerUnavailable, SharedVectors

    if collection is None:  # no index here yet (or it could not be read): the pool the model's would use
        try:
            embedder = load_embedder(settings.model, light=True)
            collection = collection_name(embedder.name, embedder.dimension)
        except IndexUnavailable as error:
            return {"url": settings.index_url, "collection": None, "vectors": None, "error": str(error)}
    shared = SharedVectors(settings, collection, settings.lock_timeout)
    facts: dict[str, Any] = {"url": settings.index_url, "collection": shared.name, "vectors": None, "error": None}
    try:
        facts["vectors"] = shared.count()
    except ServerUnavailable as error:
        facts["error"] = str(error)
    return facts


def rebuild_vectors(project: Project, bulk: Any) -> Prepared:
    """A rebuild's vectors, encoded (and with a server published) before the index is opened, with `bulk`
    (an encoder process started early) or the model's own encoders."""
    from memfiles.index.embedder import collection_name, load_embedder
    from memfiles.index.shared import SharedVectors
    from memfiles.services.indexing.backfill import prepare_rebuild
    from memfiles.services.indexing.index_session import LIGHT_LIMIT

    settings = project.settings
    light = load_embedder(settings.model, light=True)

    def encoder(count: int) -> AbstractContextManager[Any]:
        if bulk is not None:
            return nullcontext(bulk)
        return nullcontext(light if count <= LIGHT_LIMIT else load_embedder(settings.model, light=False))

    shared = None
    if settings.index_url:
        shared = SharedVectors(settings, collection_name(light.name, light.dimension), settings.lock_timeout)
    return prepare_rebuild(project, encoder, shared)
