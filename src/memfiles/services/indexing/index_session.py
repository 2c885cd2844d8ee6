"""An open index: the store under its lock, the embedder and the catalog, and the entries of the files
as the index wants them. The local index client and the watcher both work through an IndexSession.

Everything here imports the heavy libraries lazily, inside the functions, so that `memfiles --help`,
`check` and `fmt` never pay for them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memfiles.config import Settings
from memfiles.store.project import Project

if TYPE_CHECKING:
    from memfiles.index.catalog import Catalog, IndexDoc
    from memfiles.index.chroma import VectorStore
    from memfiles.index.embedder import Embedder
    from memfiles.index.encode_worker import EncoderProcess
    from memfiles.index.filters import Filters
    from memfiles.index.search import Searcher
    from memfiles.index.sync import Plan
    from memfiles.index.vector_cache import VectorCache

# Below this many entries to embed, the numpy encoder (0.2 s to load) beats sentence-transformers (~5 s).
LIGHT_LIMIT = 64


@dataclass
class IndexSession:
    store: VectorStore
    embedder: Embedder
    settings: Settings
    _catalog: Catalog | None = field(default=None, repr=False)
    bulk: Embedder | None = field(default=None, repr=False)  # the encoder for many entries, once needed

    @property
    def catalog(self) -> Catalog:
        """The catalog, rebuilt from the store first when the saved one does not mirror it; with the
        vectors saved with it, when there are some."""
        from memfiles.index.sync import open_catalog

        if self._catalog is None:
            self._catalog = open_catalog(self.store)
            if self._catalog.vectors is None:
                self._catalog.load_vectors(self.store.sidecar)
        return self._catalog

    def exists(self) -> bool:
        return self.store.exists()

    def vectors(self) -> VectorCache | None:
        """The catalog's vectors. A catalog that mirrors the store but has none saved with it (written
        by an older memfiles) gets them from the store, saved with it: the next query needs no chromadb."""
        from memfiles.index.lexical import LexicalIndex
        from memfiles.index.sync import store_vectors

        catalog = self.catalog
        if catalog.vectors is None and self.store.exists():
            stamp = self.store.stamp()
            if stamp.steady and catalog.generation is not None and catalog.generation == stamp.generation:
                catalog.vectors = store_vectors(self.store)
                try:
                    lexical = LexicalIndex.load(self.store.sidecar)
                    if lexical.token != catalog.saved_as:
                        lexical = None
                except (OSError, ValueError, KeyError):
                    lexical = None
                catalog.save(self.store.sidecar, lexical)
        return catalog.vectors

    def searcher(self) -> Searcher:
        from memfiles.index.search import Searcher

        return Searcher(self.store, self.catalog, self.embedder, vectors=self.vectors())


@dataclass
class SavedIndex:
    """The index as its last save left it beside the store: catalog, lexical index and vectors, all of
    the store's current generation. Answers queries with numpy alone (no chromadb, no store open)."""

    catalog: Catalog
    embedder: Embedder
    settings: Settings
    sidecar: Path

    def exists(self) -> bool:
        return True

    def searcher(self) -> Searcher:
        from memfiles.index.search import Searcher

        return Searcher(None, self.catalog, self.embedder, vectors=self.catalog.vectors, sidecar=self.sidecar)


def _embedder(settings: Settings, light: bool) -> Embedder:
    from memfiles.index.embedder import load_embedder

    return load_embedder(settings.model, light=light)


@contextmanager
def open_index(
    settings: Settings,
    timeout: float = 10.0,
    light: bool = True,
    create: bool = True,
    server_timeout: float | None = None,
) -> Iterator[IndexSession]:
    """The project's index, open for the block. With `create` False, IndexUnavailable when there is none
    yet (and nothing is created). `server_timeout` (default: `timeout`) bounds each wait for a Chroma
    server, when vectors are looked up or shared there."""
    from memfiles.index.chroma import open_store
    from memfiles.index.embedder import collection_name

    embedder = _embedder(settings, light)
    name = collection_name(embedder.name, embedder.dimension)
    with open_store(settings, name, timeout, create, server_timeout) as store:
        yield IndexSession(store, embedder, settings)


def saved_index(settings: Settings, embedder: Embedder) -> SavedIndex | None:
    """The saved catalog and vectors when the store's stamp says they mirror it (read without chromadb);
    None when they do not, or when that cannot be told. Call under the store lock."""
    from memfiles.index.catalog import Catalog
    from memfiles.index.chroma import read_stamp, sidecar_folder
    from memfiles.index.embedder import collection_name

    name = collection_name(embedder.name, embedder.dimension)
    stamp = read_stamp(settings, name)
    if stamp is None or not stamp.steady or stamp.generation is None:
        return None
    folder = sidecar_folder(settings, name)
    try:
        catalog = Catalog.load(folder)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if catalog.generation != stamp.generation or catalog.load_vectors(folder) is None:
        return None
    return SavedIndex(catalog, embedder, settings, folder)


@contextmanager
def open_reader(settings: Settings, timeout: float = 10.0) -> Iterator[IndexSession | SavedIndex]:
    """The index for queries: its saved catalog and vectors when they are in step with the store (no
    chromadb), else the store opened as open_index does. Both answer exists(), searcher(), catalog."""
    from memfiles.errors import IndexUnavailable, LockTimeout
    from memfiles.index.chroma import store_exists, store_lock

    embedder = _embedder(settings, light=True)
    saved = None
    if store_exists(settings):
        lock = store_lock(settings, timeout)
        try:
            lock.acquire()
        except LockTimeout as error:
            raise IndexUnavailable(str(error)) from error
        try:
            saved = saved_index(settings, embedder)
            if saved is not None:
                yield saved
        finally:
            lock.release()
    if saved is None:
        with open_index(settings, timeout=timeout, create=False) as session:
            yield session


@dataclass
class FileDocs:
    """The index documents of the files that parse, and the files that do not (path -> message)."""

    docs: dict[str, IndexDoc]
    broken: dict[str, str]
    read: set[str]  # the paths that parsed
    # Ids two or more entries carry (a merge, a copy), each with its places ("path:line"): the index holds
    # one entry per id, the last read, until `renumber` gives the others ids of their own.
    twice: dict[str, list[str]] = field(default_factory=dict)
    entries: int = 0  # entries in the files that parse, duplicates included


def entry_docs(project: Project, paths: set[str] | None = None) -> FileDocs:
    """The index documents of every entry (or of the entries in `paths`), by id.

    A file that does not parse is named in `broken` and skipped: its entries keep what the index has.
    """
    from memfiles.index.catalog import index_doc

    schema = project.settings.schema
    files, errors = project.load_all()
    if paths is not None:
        files = [f for f in files if f.rel in paths]
        errors = [e for e in errors if e.path in paths]
    docs: dict[str, IndexDoc] = {}
    places: dict[str, list[str]] = {}
    for located in project.entries(files):
        docs[located.entry.id] = index_doc(located, schema)
        places.setdefault(located.entry.id, []).append(located.where)
    twice = {entry_id: where for entry_id, where in places.items() if len(where) > 1}
    broken = {str(e.path): e.located() for e in errors}
    return FileDocs(docs, broken, {f.rel for f in files}, twice, sum(len(where) for where in places.values()))


@contextmanager
def encoder_for(session: IndexSession, plan: Plan) -> Iterator[Embedder]:
    """The encoder for `plan`, for the block (sized_encoder). For a view of a server the count is known
    only once the view and the server gave their vectors: an encoder that chooses by the count it is
    given, whose child process (if it started one) is stopped at the end of the block."""
    if getattr(session.store, "shared", None) is None:
        with sized_encoder(session, len(plan.embed)) as encoder:
            yield encoder
        return
    chooser = _ByCount(session)
    try:
        yield chooser
    finally:
        chooser.close()


@contextmanager
def sized_encoder(session: IndexSession, count: int) -> Iterator[Embedder]:
    """The encoder for `count` texts, for the block: the session's light one for a few; for more, the
    bulk encoder the caller started early (`session.bulk`, backfill's child), else a child process started
    for them and stopped at the end of the block (index/encode_worker.py). So bulk encoding never leaves
    torch in a long-lived process: a watcher that caught up with 20,000 entries kept it for good (403 MB
    against 122 MB; issue 34). sentence-transformers, loaded once, for a model the BERT recipes do not
    take; torch in this process only when no child can be started."""
    from memfiles.index.embedder import NumpyBertEmbedder
    from memfiles.index.encode_worker import EncoderProcess

    light = session.embedder
    if count <= LIGHT_LIMIT or not isinstance(light, NumpyBertEmbedder):
        yield light
        return
    bulk = session.bulk
    if bulk is not None and (not isinstance(bulk, EncoderProcess) or bulk.alive):
        yield bulk
        return
    try:
        child = EncoderProcess(light.name, light.path, light.dimension, session.settings.bulk_precision)
    except OSError:  # no process to be had (limits): encode here, as before
        session.bulk = _embedder(session.settings, light=False)
        yield session.bulk
        return
    try:
        yield child
    finally:
        child.close()


class _ByCount:
    """The session's encoder for as many texts as it is given (see encoder_for): the light one for a few,
    for more a bulk one (sized_encoder's) kept until close()."""

    def __init__(self, session: IndexSession) -> None:
        self.session = session
        self.name = session.embedder.name
        self._stack = ExitStack()
        self._bulk: Embedder | None = None

    @property
    def dimension(self) -> int:
        return self.session.embedder.dimension

    def encode(self, texts: list[str], batch_size: int = 32, progress: Any = None) -> Any:
        if len(texts) <= LIGHT_LIMIT:
            return self.session.embedder.encode(texts, batch_size=batch_size, progress=progress)
        if self._bulk is None:
            self._bulk = self._stack.enter_context(sized_encoder(self.session, len(texts)))
        return self._bulk.encode(texts, progress=progress)  # in batches of its own choosing (its precision's)

    def close(self) -> None:
        self._stack.close()


def early_encoder(project: Project, rebuild: bool) -> EncoderProcess | None:
    """The bulk encoder in a child process, started now so that it imports torch and loads the model
    while this process opens the store (index/encode_worker.py); for a backfill that will embed more
    than LIGHT_LIMIT entries: a rebuild, or a first build (no catalog saved beside the store yet).
    None otherwise, and for models the torch recipe does not support. The files are read (to count
    the entries) only when the rest says yes; the backfill reads them again under the store lock."""
    from memfiles.index.chroma import sidecar_folder
    from memfiles.index.embedder import NumpyBertEmbedder, collection_name, resolve_model
    from memfiles.index.encode_worker import EncoderProcess

    settings = project.settings
    name, path = resolve_model(settings.model)
    if path is None or not NumpyBertEmbedder.supports(path):
        return None
    try:
        dimension = NumpyBertEmbedder(name, path).dimension
    except (OSError, ValueError, KeyError):
        return None  # the in-process path reports a broken model in its own words
    collection = collection_name(name, dimension)
    if not rebuild and (sidecar_folder(settings, collection) / "catalog.json").exists():
        return None
    docs = entry_docs(project).docs
    if len(docs) <= LIGHT_LIMIT:
        return None
    if settings.index_url and not rebuild and _few_unshared(settings, collection, docs):
        return None
    try:
        return EncoderProcess(name, path, dimension, settings.bulk_precision)
    except OSError:  # no process to be had (limits, no interpreter path): encode in this one
        return None


def _few_unshared(settings: Settings, collection: str, docs: dict[str, IndexDoc]) -> bool:
    """Whether the server already holds the vectors of all but LIGHT_LIMIT of `docs` (a clone joining
    others): then no encoder process is worth starting. False when the server cannot tell."""
    from memfiles.index.shared import ServerUnavailable, SharedVectors

    hashes = sorted({doc.hash for doc in docs.values()})
    try:
        held = SharedVectors(settings, collection, settings.lock_timeout).held(hashes)
    except ServerUnavailable:
        return False
    return len(hashes) - len(held) <= LIGHT_LIMIT


def nearest(searcher: Searcher, texts: list[str], filters: Filters, k: int) -> list[list[tuple[dict, float]]]:
    """The k nearest catalog documents of each text, by cosine, as (document fields, cosine)."""
    from dataclasses import asdict

    assert searcher.embedder is not None
    out = []
    for vector in searcher.embedder.encode(texts):
        scores = searcher.dense_scores(vector, filters, depth=k)
        out.append([(asdict(searcher.catalog.docs[i]), s) for i, s in scores.items() if i in searcher.catalog.docs])
    return out


def sync_files(
    project: Project,
    session: IndexSession,
    paths: set[str],
    pruned: set[str],
    deadline: float | None = None,
    writing: Any = None,
) -> None:
    """Bring the entries of `paths` (and the `pruned` ids) in line in an open session: the write path's update."""
    from memfiles.index.sync import apply_plan, make_plan

    if not session.store.exists():
        return  # no index yet: nothing to keep in step; backfill builds it
    found = entry_docs(project, paths)
    catalog = session.catalog
    scope = {i for i, d in catalog.docs.items() if d.path in found.read} | set(pruned) | set(found.docs)
    stored = {}
    if scope:
        got = session.store.get(sorted(scope), include=["metadatas"])
        stored = dict(zip(got["ids"], got["metadatas"], strict=True))
    plan = make_plan(found.docs, stored, session.embedder.name, scope=scope)
    catalog.broken = {**{p: m for p, m in catalog.broken.items() if p not in paths}, **found.broken}
    apply_plan(session.store, session.embedder, plan, catalog, deadline=deadline, writing=writing)
