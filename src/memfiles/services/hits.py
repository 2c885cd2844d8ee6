"""Which search results are hits at all: the one rule every search path (memsearch, the watcher, recall,
the hooks, MCP) applies before it numbers and returns them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# A candidate whose every signal is below this carries no evidence: it shares no word with the query and
# its meaning is no nearer than unrelated text (a cosine under DENSE_ZERO). It shows as score 0.00, so it
# is left out rather than returned as a hit (docs/json.md, "What a score means").
NO_EVIDENCE = 0.01


def has_evidence(hit: Any) -> bool:
    """True when `hit` (an index Hit) names the query's id, holds it verbatim, or has a signal worth a 0.01."""
    signals = hit.signals
    if signals.get("id") or signals.get("exact") or hit.score >= NO_EVIDENCE:
        return True
    return any((signals.get(name) or 0.0) >= NO_EVIDENCE for name in ("lexical", "dense"))


def hit_objects(hits: Iterable[Any]) -> list[dict[str, Any]]:
    """The contract's hit objects of the hits with evidence, ranked 1, 2, ... in the order given."""
    return [hit.as_json(rank) for rank, hit in enumerate((h for h in hits if has_evidence(h)), start=1)]
