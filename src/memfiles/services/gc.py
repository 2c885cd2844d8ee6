"""`memfiles gc`: remove from a Chroma server's pool the vectors no clone has used for a given time.

Nothing else ever removes a shared vector (a backfill publishes and marks, never deletes: index/shared.py),
so a clone on a branch nobody else has checked out keeps its vectors on the server however other clones
backfill. A clone whose vectors were removed still has them in its own view: its searches are
unaffected, and its next daily touch shares them again.
"""

from __future__ import annotations

import time
from typing import Any

from memfiles.config import Settings
from memfiles.errors import ConfigError

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
