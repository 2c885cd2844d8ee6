"""The language server's state: the project's workspace index, lint in a worker thread, the semantic boost.

Every request first refreshes the workspace index by stat (cheap), so files saved by other tools or a
branch switch are seen; open documents are re-diagnosed when anything changed. Lint diagnostics of
memory files come from a worker thread: PyMarkdown is slow on a chunk it has not seen, and the reference
and check diagnostics should not wait for it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from memfiles import __version__
from memfiles.config import find_root, load_settings
from memfiles.contract import Finding
from memfiles.errors import ConfigError, MemfilesError
from memfiles.format.ids import ID_RE
from memfiles.lsp import convert
from memfiles.lsp.workspace import WorkspaceIndex, iter_refs
from memfiles.services.upkeep.check import text_findings
from memfiles.store.project import Project

log = logging.getLogger("memfiles.lsp")
# Seconds of no edits before a changed document is diagnosed again (edits within it are coalesced).
CHANGE_SETTLE = 0.15
# How often the server looks at the memory files itself (a stat of each: microseconds), so that a write by
# the CLI is diagnosed within a second in an editor that never sends didChangeWatchedFiles or any request.
WATCH_INTERVAL = 0.25


class _Unanswerable:
    """What a request that could not be read becomes once its error is sent: pygls drops a message whose
    `jsonrpc` is not its version (with a log line), so nothing else answers it."""

    jsonrpc = None


class AnsweringProtocol(LanguageServerProtocol):
    """pygls' protocol, except that a request whose params cannot be read (`hover` with `params: {}`, a
    negative position) is answered with its JSON-RPC error (-32602) instead of dropped: the client waited
    for an answer until its own timeout; and positions are always UTF-16 (below)."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        if data.get("method") == "initialize" and isinstance(data.get("params"), dict):
            # pygls takes the client's first encoding (Neovim offers utf-8 first) and says so, but every
            # column memfiles sends or reads is counted in UTF-16 (convert.py), the encoding each client
            # must support: without the offer, UTF-16 it is, and a line with 设计 before @@D-1 points right.
            general = (data["params"].get("capabilities") or {}).get("general")
            if isinstance(general, dict):
                general.pop("positionEncodings", None)
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if "jsonrpc" not in data or "id" not in data or "method" not in data:
                raise  # a notification has nobody to answer; a response is not ours to answer
            self._send_response(data["id"], error=error.to_response_error())
            return _Unanswerable()


class MemfilesServer(LanguageServer):
    """A pygls server holding the project's workspace index (None until a project is found)."""

    def __init__(self, root: Path | None = None) -> None:
        super().__init__(
            "memfiles",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=AnsweringProtocol,
        )
        self.root_option = root
        self.index: WorkspaceIndex | None = None
        self.lint_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memfiles-lint")
        self.lint_cache: Any = None
        self.lint_versions: dict[str, int] = {}
        self.lint_tasks: set[asyncio.Task[None]] = set()
        self.pending: dict[str, asyncio.TimerHandle] = {}  # a document's diagnostics, waiting for typing to pause
        self.semantic = SemanticBoost()
        self.watching: asyncio.TimerHandle | None = None  # the next look at the memory files (watch)

    # --- the project ------------------------------------------------------------------------------------

    def open_project(self, root_path: str | None) -> None:
        try:
            # the editor's folder may be a package inside the project: the CLI's root rules decide
            root = self.root_option or (find_root(Path(root_path)) if root_path else None)
            settings = load_settings(root)
        except MemfilesError as error:
            if isinstance(error, ConfigError) and error.path:  # a project, whose config file is refused
                said = f"memfiles: the project's settings are refused: {error}"
                self.window_show_message(types.ShowMessageParams(types.MessageType.Warning, said))
                return
            self.window_show_message(
                types.ShowMessageParams(types.MessageType.Warning, f"memfiles: no project here ({error})")
            )
            return
        project = Project(settings)
        self.index = WorkspaceIndex.open(project)

    def watch(self) -> None:
        """Look at the memory files every WATCH_INTERVAL seconds, on the server's own loop (so never while a
        request is being answered), and re-diagnose the open documents when one changed. Started once the
        client is initialized; it ends with the loop."""
        if self.watching is not None:
            return
        loop = asyncio.get_event_loop()

        def tick() -> None:
            try:
                self.fresh(rescan=False)  # the files and folders known: a new package's memory/ on a request
            except Exception as error:  # a file caught half-written, a folder gone: the next look sees it
                log.warning("watching the memory files: %s", error)
            self.watching = loop.call_later(WATCH_INTERVAL, tick)

        self.watching = loop.call_later(WATCH_INTERVAL, tick)

    def fresh(self, rescan: bool = True) -> WorkspaceIndex | None:
        """The index, brought up to date with the disk; open documents are re-diagnosed if it changed."""
        if self.index is None:
            return None
        if self.index.refresh(rescan=rescan):
            self.publish_all()
        return self.index

    def text_of(self, uri: str) -> tuple[list[str], Path | None]:
        """The document's lines as the editor holds them (or as on disk, for one not open)."""
        try:
            source = self.workspace.get_text_document(uri).source
        except (OSError, UnicodeDecodeError):  # a document neither open nor readable: nothing to answer
            source = ""
        return source.split("\n"), convert.path_of(uri)

    def serves(self, path: Path | None) -> bool:
        """Whether `path` is a file of the project this server answers for: a reference in another project
        (a second workspace folder) or in no project names that one's entries, or none, not these."""
        index = self.index
        if index is None or path is None:
            return False
        root = index.project.root
        if Path(os.path.abspath(path)).is_relative_to(root):
            return True
        try:  # the workspace opened through a link (/tmp is /private/tmp on macOS): as Project.rel reads it
            return path.resolve().is_relative_to(root)
        except OSError:
            return False

    def ref_at(self, uri: str, position: types.Position) -> tuple[str, re.Match[str] | None, int, int]:
        """The reference (or, in a memory file, bare id) under the cursor: (token, REF_RE match, start, end)."""
        lines, path = self.text_of(uri)
        if position.line >= len(lines) or not self.serves(path):
            return "", None, 0, 0
        line = lines[position.line]
        column = convert.from_utf16(line, position.character)
        for match in iter_refs(line):
            if match.start() <= column <= match.end():
                return match.group(0), match, match.start(), match.end()
        index = self.index
        if index is not None and path is not None and index.is_memory_file(path):
            prefixes = set(index.project.settings.schema.prefixes)
            for match in ID_RE.finditer(line):  # a bare id of a kind the project has: not UTF-8 or SHA-256
                if match.start() <= column <= match.end() and match.group(1) in prefixes:
                    return match.group(0), None, match.start(), match.end()
        return "", None, 0, 0

    def resolve_at(self, uri: str, position: types.Position):
        index = self.fresh()
        token, match, start, end = self.ref_at(uri, position)
        if index is None or not token:
            return None, token, start, end
        resolution = index.resolve(match) if match is not None else index.resolve_id(token)
        return resolution, token, start, end

    # --- diagnostics --------------------------------------------------------------------------------------

    def quick_diagnostics(self, uri: str) -> list[types.Diagnostic]:
        """References that do not resolve, and in a memory file what `check` says about it."""
        index = self.index
        if index is None:
            return []
        lines, path = self.text_of(uri)
        if not self.serves(path):
            return []  # another project's file (a second workspace folder), or none's: not this one's to judge
        found = []
        for number, line in enumerate(lines):
            for match in iter_refs(line):
                diagnostic = convert.ref_diagnostic(
                    line, number, match.start(), match.end(), match.group(0), index.resolve(match)
                )
                if diagnostic is not None:
                    found.append(diagnostic)
        if path is not None and index.is_memory_file(path):
            found.extend(convert.finding_diagnostic(lines, f) for f in self.check_findings(path, "\n".join(lines)))
        return found

    def check_findings(self, path: Path, text: str) -> list[Finding]:
        index = self.index
        assert index is not None
        project = index.project
        rel = project.rel(path)
        others = [(f.rel, f.memory) for f in index.loaded_files() if f.rel != rel]
        return text_findings(project, rel, text, others, set(index.pruned))

    def publish(self, uri: str, extra: list[types.Diagnostic] | None = None) -> None:
        diagnostics = self.quick_diagnostics(uri) + (extra or [])
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))

    def changed(self, uri: str) -> None:
        """A document was edited: diagnose it once the edits pause for CHANGE_SETTLE seconds. Re-checking a
        memory file of 1,000 entries on every keystroke (about 0.2 s each) queued hovers behind the typing."""
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self.lint_versions.pop(uri, None)  # a lint still running is of text that is gone: not published

        def settled() -> None:
            self.pending.pop(uri, None)
            if uri in self.workspace.text_documents:
                self.publish(uri)
                self.schedule_lint(uri)

        self.pending[uri] = asyncio.get_event_loop().call_later(CHANGE_SETTLE, settled)

    def forget(self, uri: str) -> None:
        """A document was closed: nothing waits for it any more."""
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self.lint_versions.pop(uri, None)

    def publish_all(self) -> None:
        for uri in list(self.workspace.text_documents):
            self.publish(uri)
            self.schedule_lint(uri)

    def schedule_lint(self, uri: str) -> None:
        """Lint a memory file in the worker thread; publish when done, unless the document moved on."""
        index = self.index
        path = convert.path_of(uri)
        if index is None or path is None or not index.is_memory_file(path):
            return
        document = self.workspace.get_text_document(uri)
        version = document.version or 0
        self.lint_versions[uri] = version
        text = document.source
        loop = asyncio.get_event_loop()

        def work() -> list[Finding]:
            from memfiles.services.lint import lint_text, open_cache

            if self.lint_cache is None:
                self.lint_cache = open_cache(index.project)
            found = lint_text(index.project, index.project.rel(path), text, self.lint_cache)
            self.lint_cache.save()
            return found

        async def later() -> None:
            try:
                found = await loop.run_in_executor(self.lint_pool, work)
            except Exception as error:  # lint must never take the server down
                log.warning("lint failed for %s: %s", uri, error)
                return
            if self.lint_versions.get(uri) != version or uri not in self.workspace.text_documents:
                return
            lines = document.source.split("\n")
            self.publish(uri, [convert.finding_diagnostic(lines, f) for f in found])

        self.lint_tasks.add(task := loop.create_task(later()))
        task.add_done_callback(self.lint_tasks.discard)


class SemanticBoost:
    """Ids a running watcher finds nearest in meaning to the text around the cursor, with a rank bonus.

    Never waits: the first completion at a place is lexical and sends the question to the watcher in a
    worker thread; the editor asks again as the user types (the list is incomplete), and by then the answer
    is here. Only a watcher already running is asked: the server never loads the model, so completion stays
    fast and torch-free.
    """

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memfiles-semantic")
        self.answers: dict[str, dict[str, float]] = {}
        self.asked: set[str] = set()

    def get(self, index: WorkspaceIndex, context: str) -> dict[str, float] | None:
        from memfiles.services.indexing.ipc import socket_path

        settings = index.project.settings
        if not context.strip() or not socket_path(settings).exists():
            return None
        key = context[-2000:]
        if key in self.answers:
            return self.answers[key]
        if key not in self.asked:
            self.asked.add(key)
            self.pool.submit(self._ask, settings, key)
        return None

    def _ask(self, settings: Any, text: str) -> None:
        from memfiles.index.filters import Filters
        from memfiles.services.indexing.index_client import connect

        try:  # only a watcher is asked: the editor never loads the model
            hits: list[dict[str, Any]] | None = connect(settings, watcher_only=True).search([(text, 20)], Filters())[0]
        except MemfilesError:
            hits = None
        finally:
            self.asked.discard(text)
        if hits is not None:
            if len(self.answers) > 256:
                self.answers.clear()
            self.answers[text] = {
                hit["entry"]["id"]: 5.0 * (len(hits) - rank) / len(hits) for rank, hit in enumerate(hits)
            }
