"""Whether the index is behind the files, told cheaply for a search that no watcher answers.

With a watcher running, every save reaches the index within a second. Without one, an entry deleted or
changed by hand (an editor, `git checkout`, `git stash`) stays in the index as it was until the next
`backfill` or watcher, and a search would return it as if it still stood. So a search with no watcher
looks at the memory files saved after the index's catalog was (their modification times: one walk and
a stat each, a few milliseconds), parses those only, and compares their entries with the index's: hits
for entries no file holds any more are dropped, and a warning says the index is behind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memfiles.errors import ParseError

if TYPE_CHECKING:
    from memfiles.index.catalog import Catalog
    from memfiles.store.project import Project


@dataclass
class Behind:
    """Files whose entries the index holds otherwise than they stand, and ids no file holds any more."""

    paths: list[str] = field(default_factory=list)
    gone: set[str] = field(default_factory=set)

    def warning(self) -> str | None:
        if not self.paths:
            return None
        shown = ", ".join(self.paths[:3]) + (f" and {len(self.paths) - 3} more" if len(self.paths) > 3 else "")
        count = len(self.gone)
        gone = f"; {count} {'entry' if count == 1 else 'entries'} no file holds any more left out" if count else ""
        return (
            f"the index is behind the files: {shown} changed since its last sync{gone}; `memfiles backfill`"
            " brings it in step (a running watcher keeps it so)"
        )

    def drop_gone(self, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """`hits` without those of entries no file holds, ranked 1, 2, ... again."""
        if not self.gone:
            return hits
        kept = [hit for hit in hits if hit["entry"]["id"] not in self.gone]
        return [{**hit, "rank": rank} for rank, hit in enumerate(kept, start=1)]


def behind(project: Project, catalog: Catalog, sidecar: Path | None) -> Behind:
    """How the files saved since the catalog's save differ from what it holds (all files when there is
    no saved catalog to date it). A file that does not parse is left to the unreadable-file warning."""
    from memfiles.index.catalog import index_doc

    saved_at = None
    if sidecar is not None:
        try:
            saved_at = (sidecar / "catalog.json").stat().st_mtime_ns
        except OSError:
            saved_at = None
    on_disk: dict[str, Path] = {}
    newer: set[str] = set()
    for path in project.markdown_files():
        rel = project.rel(path)
        try:
            stamp = path.stat().st_mtime_ns
        except OSError:
            continue
        on_disk[rel] = path
        if saved_at is None or stamp >= saved_at:
            newer.add(rel)
    indexed: dict[str, list[str]] = {}
    for doc in catalog.docs.values():
        indexed.setdefault(doc.path, []).append(doc.id)
    look = newer | (set(indexed) - set(on_disk))
    if not look:
        return Behind()
    schema = project.settings.schema
    now: dict[str, Any] = {}
    for rel in sorted(newer):
        try:
            loaded = project.load_file(on_disk[rel])
        except ParseError:
            look.discard(rel)  # its entries are searched as they were (unreadable_warnings says so)
            continue
        if loaded is not None:
            now.update((located.entry.id, index_doc(located, schema)) for located in project.entries([loaded]))
    changed: set[str] = set()
    gone: set[str] = set()
    for rel in look:
        for entry_id in indexed.get(rel, []):
            if entry_id not in now:
                gone.add(entry_id)
                changed.add(rel)
            elif now[entry_id] != catalog.docs[entry_id]:
                changed.add(rel)
    for entry_id, doc in now.items():
        if catalog.docs.get(entry_id) != doc:
            changed.add(doc.path)
    return Behind(sorted(changed), gone)
