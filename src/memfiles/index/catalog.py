"""What the index holds for each entry: one document keyed by id, its metadata tags and content hash.

The catalog is the index's own list of those documents, saved beside the store as JSON with the
lexical index built from it. It is derived like everything in .memsearch/: lost, it is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memfiles.format.ids import Schema
from memfiles.store.fileio import atomic_write
from memfiles.store.project import Located

if TYPE_CHECKING:
    import numpy as np

    from memfiles.index.lexical import LexicalIndex


@dataclass(frozen=True)
class IndexDoc:
    """One entry as the index stores it."""

    id: str
    text: str
    kind: str
    area: str
    status: str
    path: str
    line: int
    section: str
    date: str
    title: str
    hash: str

    @property
    def date_num(self) -> int:
        digits = self.date.replace("-", "")
        return int(digits) if digits.isdigit() else 0

    def metadata(self, model: str) -> dict[str, Any]:
        """The tags Chroma filters on (no None values: Chroma refuses them)."""
        return {
            "kind": self.kind,
            "area": self.area,
            "status": self.status,
            "path": self.path,
            "line": self.line,
            "section": self.section,
            "date": self.date,
            "date_num": self.date_num,
            "title": self.title,
            "hash": self.hash,
            "model": model,
        }

    def body(self) -> str:
        return self.text.split("\n\n", 1)[1] if "\n\n" in self.text else ""


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def index_doc(located: Located, schema: Schema) -> IndexDoc:
    entry = located.entry
    kind = schema.kind_of(entry.id)
    text = f"{entry.title}\n\n{entry.body}"
    return IndexDoc(
        id=entry.id,
        text=text,
        kind=kind.name if kind else "",
        area=entry.area,
        status=entry.status,
        path=located.file.rel,
        line=entry.line,
        section=located.section or "",
        date=entry.date,
        title=entry.title,
        hash=content_hash(text),
    )


def same_tags(doc: IndexDoc, metadata: dict[str, Any] | None, model: str) -> bool:
    return metadata is not None and all(metadata.get(key) == value for key, value in doc.metadata(model).items())


def lexical_index(docs: list[IndexDoc]) -> LexicalIndex:
    from memfiles.index.lexical import LexicalIndex, document_tokens

    return LexicalIndex.build([document_tokens(d.title, d.body()) for d in docs], ids=[d.id for d in docs])


class Catalog:
    """The documents of one collection, by id, in a stable order (the lexical index's rows)."""

    def __init__(self, docs: dict[str, IndexDoc]) -> None:
        self.docs = docs
        self.order = list(docs)

    def column(self, name: str) -> tuple[np.ndarray, list[Any]]:
        """A tag as (codes per row, distinct values): filters over 100,000 rows become array compares."""
        import numpy as np

        cache = self.__dict__.setdefault("_columns", {})
        if name not in cache or cache[name][2] is not self.order:
            values: dict[Any, int] = {}
            codes = np.fromiter(
                (values.setdefault(getattr(self.docs[i], name), len(values)) for i in self.order),
                dtype=np.int32,
                count=len(self.order),
            )
            cache[name] = (codes, list(values), self.order)
        codes, distinct, _ = cache[name]
        return codes, distinct

    @property
    def row(self) -> dict[str, int]:
        """Each id's row in the lexical index."""
        if getattr(self, "_row_order", None) is not self.order:
            self._row = {doc_id: n for n, doc_id in enumerate(self.order)}
            self._row_order = self.order
        return self._row

    @classmethod
    def load(cls, folder: Path) -> Catalog:
        data = json.loads((folder / "catalog.json").read_text(encoding="utf-8"))
        return cls({item["id"]: IndexDoc(**item) for item in data["docs"]})

    def save(self, folder: Path, index: LexicalIndex | None = None) -> LexicalIndex:
        """Write the catalog and its lexical index (built here unless given); returns that index."""
        folder.mkdir(parents=True, exist_ok=True)
        docs = [self.docs[doc_id] for doc_id in self.order]
        index = index or lexical_index(docs)
        index.save(folder)
        atomic_write(folder / "catalog.json", json.dumps({"docs": [asdict(d) for d in docs]}, ensure_ascii=False))
        return index
