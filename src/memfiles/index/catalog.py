"""What the index holds for each entry: one document keyed by id, its metadata tags and content hash.

The catalog is the index's own list of those documents, saved beside the store as JSON with the
lexical index built from it. It is derived like everything in .memsearch/: lost, it is rebuilt.
Both carry the store's generation (see index/chroma.py): a catalog whose generation is not the
store's is a copy of an older store and is rebuilt from the store before anyone reads it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memfiles.format.ids import Schema
from memfiles.format.model import LIST_KEYS, META_KEYS, REQUIRED_KEYS, Entry
from memfiles.store.fileio import atomic_write
from memfiles.store.project import Located

if TYPE_CHECKING:
    import numpy as np

    from memfiles.index.lexical import LexicalIndex
    from memfiles.index.vector_cache import VectorCache

CATALOG_VERSION = 2  # 2: entries carry their other metadata (refs, tags, ...) and the store's generation
# The entry's metadata besides what the index filters on; kept as one JSON string (Chroma holds no lists).
# Every metadata key an entry has besides the three every entry has (as Entry's fields are named): a
# hit's entry object is the one `show` gives (docs/json.md), `failed` and `promoted` included.
EXTRA_KEYS = tuple(key.replace("-", "_") for key in META_KEYS if key not in REQUIRED_KEYS)
_CORE_KEYS = ("kind", "area", "status", "path", "line", "section", "date", "title", "hash")


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
    extra: str = "{}"  # JSON of the EXTRA_KEYS that are set

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
            "extra": self.extra,
            "model": model,
        }

    def body(self) -> str:
        return self.text.split("\n\n", 1)[1] if "\n\n" in self.text else ""

    def entry(self) -> Entry:
        """The entry as the files held it when it was indexed."""
        try:
            extra = json.loads(self.extra)
        except ValueError:
            extra = {}
        values = {
            key: (tuple(extra.get(key) or ()) if key in LIST_KEYS else extra.get(key))
            for key in EXTRA_KEYS
            if key in extra
        }
        return Entry(
            id=self.id,
            title=self.title,
            date=self.date,
            area=self.area,
            status=self.status,
            body=self.body(),
            line=self.line,
            **values,
        )

    def entry_object(self) -> dict[str, Any]:
        """The contract's entry object (docs/json.md)."""
        from memfiles.contract import entry_object

        return entry_object(
            self.entry(), kind=self.kind or None, path=self.path or None, line=self.line, section=self.section
        )

    @classmethod
    def from_store(cls, doc_id: str, text: str | None, meta: dict[str, Any] | None) -> IndexDoc:
        """The document as the vector store holds it (what a catalog is rebuilt from)."""
        meta = meta or {}
        values: dict[str, Any] = {key: meta.get(key) for key in _CORE_KEYS}
        for key in ("kind", "area", "status", "path", "section", "date", "title", "hash"):
            values[key] = str(values[key] or "")
        values["line"] = int(values["line"] or 0)
        return cls(id=doc_id, text=text or "", extra=str(meta.get("extra") or "{}"), **values)


_FIELDS = frozenset(f.name for f in fields(IndexDoc))


def _saved_doc(item: dict[str, Any]) -> IndexDoc:
    """A document of a saved catalog. One with exactly the fields `Catalog.save` writes takes the saved
    values as they are, skipping the frozen dataclass's `__init__` (0.1 s of a cold search at 10,000
    entries went to it); any other shape goes through `__init__`."""
    if item.keys() == _FIELDS:
        doc = object.__new__(IndexDoc)
        doc.__dict__.update(item)
        return doc
    return IndexDoc(**{k: v for k, v in item.items() if k in _FIELDS})


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def extra_json(entry: Entry) -> str:
    values: dict[str, Any] = {}
    for key in EXTRA_KEYS:
        value = getattr(entry, key)
        if value:
            values[key] = list(value) if key in LIST_KEYS else value
    return json.dumps(values, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


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
        extra=extra_json(entry),
    )


def same_tags(doc: IndexDoc, metadata: dict[str, Any] | None, model: str) -> bool:
    return metadata is not None and all(metadata.get(key) == value for key, value in doc.metadata(model).items())


def lexical_index(docs: list[IndexDoc]) -> LexicalIndex:
    from memfiles.index.lexical import LexicalIndex, document_tokens

    return LexicalIndex.build([document_tokens(d.title, d.body()) for d in docs], ids=[d.id for d in docs])


class Catalog:
    """The documents of one collection, by id, in a stable order (the lexical index's rows).

    `generation` is the store generation the documents mirror (None: not known to mirror any, so the
    next reader rebuilds it); `broken` names the files that did not parse at the last sync, whose
    entries the index keeps as they were. `vectors`, when known, is the store's vectors as of the same
    generation (index/vector_cache.py), saved with the catalog under the same token.
    """

    def __init__(
        self,
        docs: dict[str, IndexDoc],
        generation: str | None = None,
        broken: dict[str, str] | None = None,
        vectors: VectorCache | None = None,
    ) -> None:
        self.docs = docs
        self.order = list(docs)
        self.generation = generation
        self.broken = dict(broken or {})
        self.vectors = vectors
        self.saved_as: str | None = None  # the token the lexical index saved with this catalog carries

    def add(self, docs: list[IndexDoc]) -> None:
        """Documents found in the store but not here (another client wrote them): appended in place."""
        for doc in docs:
            if doc.id not in self.docs:
                self.docs[doc.id] = doc
        self.order = list(self.docs)

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
        """The saved catalog; ValueError when it is of another version or not a catalog at all."""
        data = json.loads((folder / "catalog.json").read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("version") != CATALOG_VERSION:
            raise ValueError("catalog of another version")
        docs = {item["id"]: _saved_doc(item) for item in data["docs"]}
        catalog = cls(docs, data.get("generation"), data.get("broken"))
        catalog.saved_as = data.get("saved_as")
        return catalog

    def load_vectors(self, folder: Path) -> VectorCache | None:
        """The vectors saved with this catalog (memory-mapped), attached to it; None when there are none
        of this save (an older memfiles, or a crash between the writes)."""
        from memfiles.index.vector_cache import VectorCache

        try:
            self.vectors = VectorCache.load(folder, self.saved_as)
        except (OSError, ValueError, TypeError, KeyError):
            self.vectors = None
        return self.vectors

    def save(self, folder: Path, index: LexicalIndex | None = None) -> LexicalIndex:
        """Write the vectors (when known) and the lexical index (built here unless given), then the
        catalog; returns that index.

        All carry one fresh token, so a reader can tell a lexical index or vectors from another save (a
        crash between the writes) and rebuild them.
        """
        folder.mkdir(parents=True, exist_ok=True)
        docs = [self.docs[doc_id] for doc_id in self.order]
        index = index or lexical_index(docs)
        token = uuid.uuid4().hex
        if self.vectors is not None:
            self.vectors.save(folder, token)
        index.save(folder, token)
        data = {
            "version": CATALOG_VERSION,
            "generation": self.generation,
            "saved_as": token,
            "broken": self.broken,
            "docs": [asdict(d) for d in docs],
        }
        atomic_write(folder / "catalog.json", json.dumps(data, ensure_ascii=False))
        self.saved_as = token
        return index
