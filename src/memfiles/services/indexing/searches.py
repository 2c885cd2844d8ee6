"""Searches over an open searcher, as every search path (memsearch, the watcher, recall, the hooks, MCP)
runs them: which results are hits at all (the one rule applied before they are numbered and returned),
and several filtered searches at once, each distinct query embedded once."""

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


def search_many(
    searcher: Any, items: list[dict[str, Any]], deadline: float | None = None
) -> list[list[dict[str, Any]]]:
    """Several filtered searches over one open searcher, each distinct query embedded once.

    The watcher answers its `search_many` op with this (with the request's `deadline`, index/search.py
    `within`), and the local path calls it too. The shared encoder is handed to each search, never set
    on the searcher: the watcher runs requests at once over one searcher."""
    from memfiles.index.filters import Filters

    memo = _MemoEmbedder(searcher.embedder) if searcher.embedder is not None else None
    if memo is not None:
        # every distinct query in one batch: an agent's hook asks several layers and several readings of
        # the situation at once, and one forward pass over a few short texts costs about what one does
        texts = [item["query"] for item in items if item.get("mode", "hybrid") != "lexical" and item["query"].strip()]
        if len(set(texts)) > 1:
            memo.encode(list(dict.fromkeys(texts)))
    return [
        hit_objects(
            searcher.search(
                item["query"],
                int(item["k"]),
                Filters(**item.get("filters", {})),
                item.get("mode", "hybrid"),
                deadline=deadline,
                embedder=memo,
            )
        )
        for item in items
    ]


class _MemoEmbedder:
    """An embedder that encodes each text once per batch of searches."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.memo: dict[str, Any] = {}

    def encode(self, texts: list[str]) -> Any:
        missing = [text for text in texts if text not in self.memo]
        if missing:
            for text, vector in zip(missing, self.inner.encode(missing), strict=True):
                self.memo[text] = vector
        return [self.memo[text] for text in texts]
