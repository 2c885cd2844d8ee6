"""Whether the index is behind the files, told cheaply for a search that no watcher answers.

With a watcher running, every save reaches the index within a second. Without one, an entry deleted or
changed by hand (an editor, `git checkout`, `git stash`) stays in the index as it was until the next
`backfill` or watcher, and a search would return it as if it still stood.

Every full comparison of the files with the index (a backfill, the watcher's catch-up and reconcile)
records when it began reading them (`checked.json` beside the catalog, a second early to allow for
coarse file clocks). A search with no watcher then looks at the memory files modified since (a walk and
a stat each), parses those only, and compares their entries with the index's: hits for entries no file
holds any more are hidden from the ranking, and a warning says the index is behind. A write's own update
of the index does not move the mark (it compared only the files it wrote), so a hand edit made before
it is still seen; the files it wrote are compared, found in step, and cost a parse each until the next
full comparison. With a Chroma server (`index_url`) the index is this clone's own view of its files
(index/view.py), so the same comparison holds there too.
"""

from __future__ import annotations

import contextlib
import json
import time
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

    def hide_gone(self, searcher: Any) -> None:
        """Keep the entries no file holds out of `searcher`'s answers, each ranking going as much deeper
        as there are of them, so that they take no place among the k."""
        if self.gone:
            searcher.hidden = set(self.gone)
            searcher.depth += len(self.gone)


CHECKED_FILE = "checked.json"
CLOCK_MARGIN_NS = 1_000_000_000  # file times come from a coarser clock than time.time_ns()


def reading_starts() -> int:
    """The mark a full comparison records, taken before it reads the first file."""
    return time.time_ns() - CLOCK_MARGIN_NS


def mark_checked(sidecar: Path, started_ns: int) -> None:
    """Record that every memory file modified before `started_ns` was compared with the index and is in
    step with it (call after a full comparison that wrote what it found)."""
    from memfiles.store.fileio import atomic_write

    with contextlib.suppress(OSError):  # derived: without it, a search compares more files, nothing worse
        sidecar.mkdir(parents=True, exist_ok=True)
        atomic_write(sidecar / CHECKED_FILE, json.dumps({"files_read_from_ns": started_ns}) + "\n")


def _checked(sidecar: Path | None) -> int | None:
    if sidecar is None:
        return None
    try:
        value = json.loads((sidecar / CHECKED_FILE).read_text(encoding="utf-8"))["files_read_from_ns"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def behind(project: Project, catalog: Catalog, sidecar: Path | None) -> Behind:
    """How the memory files modified since the last full comparison differ from what the index holds
    (every file, when none is recorded). A file that does not parse is left to the unreadable-file
    warning."""
    from memfiles.index.catalog import index_doc

    saved_at = _checked(sidecar)
    indexed: dict[str, list[str]] = {}
    for doc in catalog.docs.values():
        indexed.setdefault(doc.path, []).append(doc.id)
    on_disk: dict[str, Path] = {}
    newer: set[str] = set()
    for path in project.markdown_files():
        rel = project.rel(path)
        try:
            stamp = path.stat().st_mtime_ns
        except OSError:
            continue
        on_disk[rel] = path
        # a path the index does not know is read whatever its time: `mv` and `rsync -a` keep a moved
        # file's old time, and its entries would be taken for gone
        if saved_at is None or stamp >= saved_at or rel not in indexed:
            newer.add(rel)
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
