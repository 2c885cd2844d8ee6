"""Which search results are hits at all: the one rule every search path (memsearch, the watcher, recall,
the hooks, MCP) applies before it numbers and returns them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memfiles.index.score import carries_evidence


def has_evidence(hit: Any) -> bool:
    """True when `hit` (an index Hit) carries evidence (index/score.py `carries_evidence`)."""
    return carries_evidence(hit.score, hit.signals)


def hit_objects(hits: Iterable[Any]) -> list[dict[str, Any]]:
    """The contract's hit objects of the hits with evidence, ranked 1, 2, ... in the order given."""
    return [hit.as_json(rank) for rank, hit in enumerate((h for h in hits if has_evidence(h)), start=1)]
