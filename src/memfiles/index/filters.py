"""Search filters: which entries a query may return, tested on one document, on the catalog's columns,
or pushed down to Chroma as a `where` clause. Kind, area and status take several values (any of them)."""

from __future__ import annotations

import fnmatch
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from memfiles.format.ids import HIDDEN_KINDS
from memfiles.format.model import area_key
from memfiles.index.catalog import Catalog, IndexDoc

if TYPE_CHECKING:
    import numpy as np

_CHOICES = ("kind", "area", "status")


def _passes(key: str, value: str, wanted: tuple[str, ...]) -> bool:
    """Whether a document's `key` value is one of `wanted`. An area matches in any case, as `list --area`
    matches it (an area is free text: `Format` and `format` are one area to whoever types it)."""
    if key == "area":
        return area_key(value) in {area_key(item) for item in wanted}
    return value in wanted


def _values(value: str | tuple[str, ...] | list[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    values = (value,) if isinstance(value, str) else tuple(value)
    return values or None


@dataclass(frozen=True)
class Filters:
    """Restrictions that combine (AND); within kind, area or status any listed value passes (OR)."""

    kind: tuple[str, ...] | None = None
    area: tuple[str, ...] | None = None
    status: tuple[str, ...] | None = None
    path: str | None = None  # a glob over paths relative to the root
    since: str | None = None  # YYYY-MM-DD
    # Kinds left out unless `kind` names them: run-scoped working memory is not a default search hit.
    hidden: tuple[str, ...] = HIDDEN_KINDS

    def __post_init__(self) -> None:
        for key in _CHOICES:  # a single string is one value; the socket sends lists
            object.__setattr__(self, key, _values(getattr(self, key)))
        object.__setattr__(self, "hidden", tuple(self.hidden))

    @property
    def hides(self) -> tuple[str, ...]:
        return self.hidden if self.kind is None else ()

    def as_json(self) -> dict[str, Any]:
        return {key: (list(v) if isinstance(v, tuple) else v) for key, v in asdict(self).items() if v is not None}

    def accepts(self, doc: IndexDoc) -> bool:
        return (
            all(getattr(self, key) is None or _passes(key, getattr(doc, key), getattr(self, key)) for key in _CHOICES)
            and doc.kind not in self.hides
            and (self.path is None or fnmatch.fnmatch(doc.path, self.path))
            and (self.since is None or doc.date_num >= int(self.since.replace("-", "")))
        )

    def where(self, catalog: Catalog) -> dict[str, Any] | None:
        clauses: list[dict[str, Any]] = []
        for key in _CHOICES:
            values = getattr(self, key)
            if values is not None and key == "area":  # the spellings the catalog holds, in any case
                spelled = sorted({d.area for d in catalog.docs.values() if _passes(key, d.area, values)})
                values = tuple(spelled) or values
            if values is not None:
                clauses.append({key: values[0]} if len(values) == 1 else {key: {"$in": list(values)}})
        if self.hides:
            clauses.append({"kind": {"$nin": list(self.hides)}})
        if self.path is not None:
            paths = sorted({d.path for d in catalog.docs.values() if fnmatch.fnmatch(d.path, self.path)})
            clauses.append({"path": {"$in": paths or ["\0none"]}})
        if self.since is not None:
            clauses.append({"date_num": {"$gte": int(self.since.replace("-", ""))}})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def mask(self, catalog: Catalog) -> np.ndarray:
        """Which catalog rows pass, computed on columns (no Python loop over the rows)."""
        import numpy as np

        keep = np.ones(len(catalog.order), dtype=bool)
        for key in _CHOICES:
            wanted = getattr(self, key)
            if wanted is not None:
                codes, values = catalog.column(key)
                keep &= np.isin(codes, [n for n, value in enumerate(values) if _passes(key, value, wanted)])
        if self.hides:
            codes, values = catalog.column("kind")
            hidden = [n for n, value in enumerate(values) if value in self.hides]
            if hidden:
                keep &= ~np.isin(codes, hidden)
        if self.path is not None:
            codes, values = catalog.column("path")
            matching = [n for n, value in enumerate(values) if fnmatch.fnmatch(value, self.path)]
            keep &= np.isin(codes, matching)
        if self.since is not None:
            codes, values = catalog.column("date_num")
            keep &= np.asarray(values)[codes] >= int(self.since.replace("-", ""))
        return keep

    @property
    def active(self) -> bool:
        return bool(self.hides) or any(getattr(self, key) is not None for key in (*_CHOICES, "path", "since"))
