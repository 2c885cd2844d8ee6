"""The language server: hover, definition, references, diagnostics, completion, code actions, symbols.

Every request first refreshes the workspace index by stat (cheap), so files saved by other tools or a
branch switch are seen; the client's file watcher (registered at start) and didSave refresh it too.
Lint diagnostics of memory files come from a worker thread: PyMarkdown is slow on a chunk it has not
seen, and the reference and check diagnostics should not wait for it.
"""

from __future__ import annotations

import asyncio
import logging
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from memfiles import __version__
from memfiles.config import find_root, load_settings
from memfiles.contract import Finding
from memfiles.errors import MemfilesError, ParseError
from memfiles.format.ids import ID_RE
from memfiles.format.parse import ENTRY_HEADING_RE, parse
from memfiles.format.validate import validate_file, validate_ids
from memfiles.lsp import convert
from memfiles.services.workspace import WorkspaceIndex, iter_refs, scan_text
from memfiles.store.project import Project

log = logging.getLogger("memfiles.lsp")
_TYPED = re.compile(r"@@([A-Za-z0-9-]*)$")


class MemfilesServer(LanguageServer):
    """A pygls server holding the project's workspace index (None until a project is found)."""

    def __init__(self, root: Path | None = None) -> None:
        super().__init__("memfiles", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.root_option = root
        self.index: WorkspaceIndex | None = None
        self.lint_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memfiles-lint")
        self.lint_cache: Any = None
        self.lint_versions: dict[str, int] = {}
        self.lint_tasks: set[asyncio.Task[None]] = set()
        self.semantic = SemanticBoost()

    # --- the project ------------------------------------------------------------------------------------

    def open_project(self, root_path: str | None) -> None:
        try:
            # the editor's folder may be a package inside the project: the CLI's root rules decide
            root = self.root_option or (find_root(Path(root_path)) if root_path else None)
            settings = load_settings(root)
        except MemfilesError as error:
            self.window_show_message(
                types.ShowMessageParams(types.MessageType.Warning, f"memfiles: no project here ({error})")
            )
            return
        project = Project(settings)
        self.index = WorkspaceIndex.open(project)

    def fresh(self) -> WorkspaceIndex | None:
        """The index, brought up to date with the disk; open documents are re-diagnosed if it changed."""
        if self.index is None:
            return None
        if self.index.refresh():
            self.publish_all()
        return self.index

    def text_of(self, uri: str) -> tuple[list[str], Path | None]:
        """The document's lines as the editor holds them (or as on disk, for one not open)."""
        try:
            source = self.workspace.get_text_document(uri).source
        except (OSError, UnicodeDecodeError):  # a document neither open nor readable: nothing to answer
            source = ""
        return source.split("\n"), convert.path_of(uri)

    def ref_at(self, uri: str, position: types.Position) -> tuple[str, re.Match[str] | None, int, int]:
        """The reference (or, in a memory file, bare id) under the cursor: (token, REF_RE match, start, end)."""
        lines, path = self.text_of(uri)
        if position.line >= len(lines):
            return "", None, 0, 0
        line = lines[position.line]
        column = convert.from_utf16(line, position.character)
        for match in iter_refs(line):
            if match.start() <= column <= match.end():
                return match.group(0), match, match.start(), match.end()
        index = self.index
        if index is not None and path is not None and index.is_memory_file(path):
            for match in ID_RE.finditer(line):
                if match.start() <= column <= match.end():
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
        try:
            memory = parse(text, rel)
        except ParseError as error:
            return [Finding("parse", "error", rel, error.line or 1, error.message)]
        problems: list[Any] = list(validate_file(rel, memory, text, project.settings.schema))
        others = [(f.rel, f.memory) for f in index.loaded_files() if f.rel != rel]
        problems += [p for p in validate_ids([(rel, memory), *others]) if p.path == rel]
        problems += [
            Finding("check", "error", rel, entry.line, f"{entry.id} was pruned; its number cannot be reused")
            for entry in memory.entries
            if entry.id in index.pruned
        ]
        return [
            p
            if isinstance(p, Finding)
            else Finding(getattr(p, "code", "check"), getattr(p, "severity", "error"), rel, p.line, p.message)
            for p in problems
        ]

    def publish(self, uri: str, extra: list[types.Diagnostic] | None = None) -> None:
        diagnostics = self.quick_diagnostics(uri) + (extra or [])
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))

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


def build_server(root: Path | None = None) -> MemfilesServer:
    server = MemfilesServer(root)

    @server.feature(types.INITIALIZE)
    def initialize(ls: MemfilesServer, params: types.InitializeParams) -> None:
        root_path = None
        if params.workspace_folders:
            first = convert.path_of(params.workspace_folders[0].uri)
            root_path = str(first) if first else None
        elif params.root_uri:
            first = convert.path_of(params.root_uri)
            root_path = str(first) if first else None
        elif params.root_path:
            root_path = params.root_path
        ls.open_project(root_path)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: MemfilesServer, params: types.InitializedParams) -> None:
        capabilities = ls.client_capabilities.workspace
        watched = capabilities.did_change_watched_files if capabilities else None
        if watched and watched.dynamic_registration:
            watchers = [types.FileSystemWatcher(glob_pattern=g) for g in ("**/memory/**/*.md", "**/pruned.jsonl")]
            options = types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers)
            registration = types.Registration(
                id="memfiles-watch", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options
            )
            try:
                await ls.client_register_capability_async(types.RegistrationParams(registrations=[registration]))
            except Exception as error:  # a client that refuses only loses the push; the stat check remains
                log.info("file watching not registered: %s", error)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: MemfilesServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.fresh()
        ls.publish(params.text_document.uri)
        ls.schedule_lint(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: MemfilesServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)
        ls.schedule_lint(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: MemfilesServer, params: types.DidSaveTextDocumentParams) -> None:
        if ls.index is not None and not ls.index.refresh():
            ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: MemfilesServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.lint_versions.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(params.text_document.uri, []))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: MemfilesServer, params: types.DidChangeWatchedFilesParams) -> None:
        if ls.index is not None and ls.index.refresh(force=True):
            ls.publish_all()

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: MemfilesServer, params: types.HoverParams) -> types.Hover | None:
        resolution, token, start, end = ls.resolve_at(params.text_document.uri, params.position)
        if resolution is None or ls.index is None:
            return None
        lines, _ = ls.text_of(params.text_document.uri)
        return types.Hover(
            contents=types.MarkupContent(
                types.MarkupKind.Markdown, convert.hover_markdown(ls.index, resolution, token)
            ),
            range=convert.span(lines[params.position.line], params.position.line, start, end),
        )

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: MemfilesServer, params: types.DefinitionParams) -> types.Location | None:
        resolution, _token, _s, _e = ls.resolve_at(params.text_document.uri, params.position)
        if resolution is None:
            return None
        if resolution.located is not None:
            located = resolution.located
            line = located.entry.line - 1
            lines = located.file.text.split("\n")
            return types.Location(convert.uri_of(located.file.path), convert.whole_line(lines, line))
        if resolution.target is not None:
            line = resolution.anchor_line or 0
            return types.Location(
                convert.uri_of(resolution.target), types.Range(types.Position(line, 0), types.Position(line, 0))
            )
        return None

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    def references(ls: MemfilesServer, params: types.ReferenceParams) -> list[types.Location] | None:
        index = ls.fresh()
        if index is None:
            return None
        lines, _path = ls.text_of(params.text_document.uri)
        token, match, _s, _e = ls.ref_at(params.text_document.uri, params.position)
        line = lines[params.position.line] if params.position.line < len(lines) else ""
        heading = ENTRY_HEADING_RE.match(line)
        entry_id = (match.group("id") if match is not None else token) or (heading.group(1) if heading else "")
        if not entry_id or not ID_RE.fullmatch(entry_id):
            return None
        overlay = {}
        for uri, document in ls.workspace.text_documents.items():
            open_path = convert.path_of(uri)
            if open_path is not None:
                overlay[open_path] = document.source
        found = []
        for site in index.references(entry_id, overlay):
            site_lines = overlay.get(site.path)
            text = site_lines.split("\n") if site_lines is not None else _read_lines(site.path)
            line_text = text[site.line] if site.line < len(text) else ""
            found.append(
                types.Location(convert.uri_of(site.path), convert.span(line_text, site.line, site.start, site.end))
            )
        if params.context.include_declaration and entry_id in index.by_id:
            located = index.by_id[entry_id]
            found.insert(
                0,
                types.Location(
                    convert.uri_of(located.file.path),
                    convert.whole_line(located.file.text.split("\n"), located.entry.line - 1),
                ),
            )
        return found

    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=["@"], resolve_provider=True)
    )
    def completion(ls: MemfilesServer, params: types.CompletionParams) -> types.CompletionList | None:
        index = ls.fresh()
        if index is None:
            return None
        lines, _ = ls.text_of(params.text_document.uri)
        number = params.position.line
        line = lines[number] if number < len(lines) else ""
        column = convert.from_utf16(line, params.position.character)
        typed = _TYPED.search(line[:column])
        if typed is None:
            return None
        context = "\n".join(lines[max(0, number - 5) : number + 6])
        ranked = index.complete(context, typed.group(1), limit=50, boost=ls.semantic.get(index, context))
        start = typed.start(1)
        edit_range = convert.span(line, number, start, column)
        items = []
        for rank, (located, _score) in enumerate(ranked):
            entry = located.entry
            items.append(
                types.CompletionItem(
                    label=entry.id,
                    kind=types.CompletionItemKind.Reference,
                    detail=f"{entry.title} · {entry.status}",
                    sort_text=f"{rank:05d}",
                    filter_text=f"{entry.id} {entry.title}",
                    text_edit=types.TextEdit(edit_range, entry.id),
                    deprecated=entry.status == "retired" or None,
                    data=index.entry_json(located, body=False),
                )
            )
        return types.CompletionList(is_incomplete=True, items=items)

    @server.feature(types.COMPLETION_ITEM_RESOLVE)
    def completion_resolve(ls: MemfilesServer, item: types.CompletionItem) -> types.CompletionItem:
        """The body, as hover shows it, only for the item the editor highlights: 50 bodies per keystroke
        would cost more than the ranking."""
        index = ls.index
        if index is not None and item.label in index.by_id:
            markdown = convert.hover_markdown(index, index.resolve_id(item.label), item.label)
            item.documentation = types.MarkupContent(types.MarkupKind.Markdown, markdown)
        return item

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )
    def code_action(ls: MemfilesServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        index = ls.fresh()
        if index is None:
            return None
        uri = params.text_document.uri
        lines, _ = ls.text_of(uri)
        actions = []
        for number in range(params.range.start.line, min(params.range.end.line + 1, len(lines))):
            line = lines[number]
            for match in iter_refs(line):
                if not match.group("id"):
                    continue
                resolution = index.resolve(match)
                if resolution.state != "retired" or resolution.successor is None:
                    continue
                successor = resolution.successor.entry
                edit_range = convert.span(line, number, match.start(), match.end())
                actions.append(
                    types.CodeAction(
                        title=f"Replace {match.group(0)} with @@{successor.id} ({successor.title})",
                        kind=types.CodeActionKind.QuickFix,
                        is_preferred=True,
                        diagnostics=[d for d in params.context.diagnostics if d.code == "retired"] or None,
                        edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(edit_range, f"@@{successor.id}")]}),
                    )
                )
        return actions

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbols(ls: MemfilesServer, params: types.DocumentSymbolParams) -> list[types.DocumentSymbol] | None:
        index = ls.fresh()
        lines, path = ls.text_of(params.text_document.uri)
        if index is None or path is None or not index.is_memory_file(path):
            return None
        try:
            memory = parse("\n".join(lines), index.project.rel(path))
        except ParseError:
            return None
        return _symbols(memory, lines)

    @server.feature(types.WORKSPACE_SYMBOL)
    def workspace_symbols(ls: MemfilesServer, params: types.WorkspaceSymbolParams) -> list[types.SymbolInformation]:
        index = ls.fresh()
        if index is None:
            return []
        found = []
        for located in index.search_titles(params.query):
            lines = located.file.text.split("\n")
            found.append(
                types.SymbolInformation(
                    name=f"{located.entry.id}: {located.entry.title}",
                    kind=types.SymbolKind.Key,
                    location=types.Location(
                        convert.uri_of(located.file.path), convert.whole_line(lines, located.entry.line - 1)
                    ),
                    container_name=located.file.rel,
                )
            )
        return found

    @server.command("memfiles.entry")
    def entry_command(ls: MemfilesServer, args: list[Any]) -> dict[str, Any] | None:
        """The contract's entry object for an id (`{"entry": ...}`), for clients that show more than hover."""
        index = ls.fresh()
        entry_id = str(args[0]).removeprefix("@@") if args else ""
        if index is None or entry_id not in index.by_id:
            return None
        return {"entry": index.entry_json(index.by_id[entry_id])}

    return server


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
        from memfiles.services import ipc

        settings = index.project.settings
        if not context.strip() or not ipc.socket_path(settings).exists():
            return None
        key = context[-2000:]
        if key in self.answers:
            return self.answers[key]
        if key not in self.asked:
            self.asked.add(key)
            self.pool.submit(self._ask, settings, key)
        return None

    def _ask(self, settings: Any, text: str) -> None:
        from memfiles.services import ipc

        try:
            answer = ipc.request(settings, {"op": "search", "queries": [[text, 20]], "mode": "hybrid"}, 10.0)
        except MemfilesError:
            answer = None
        finally:
            self.asked.discard(text)
        if answer:
            hits = answer.get("results", [[]])[0]
            if len(self.answers) > 256:
                self.answers.clear()
            self.answers[text] = {hit["id"]: 5.0 * (len(hits) - rank) / len(hits) for rank, hit in enumerate(hits)}


def _symbols(memory: Any, lines: list[str]) -> list[types.DocumentSymbol]:
    symbols: list[types.DocumentSymbol] = []
    starts = [e.line for e in memory.entries] + [s.line for s in memory.sections if s.name] + [len(lines) + 1]
    if memory.manual_line:
        starts.append(memory.manual_line)

    def end_of(line: int) -> int:
        return min(s for s in starts if s > line) - 2

    for section in memory.sections:
        children = []
        for entry in section.entries:
            last = max(end_of(entry.line), entry.line - 1)
            children.append(
                types.DocumentSymbol(
                    name=f"{entry.id}: {entry.title}",
                    detail=f"{entry.status} · {entry.area} · {entry.date}",
                    kind=types.SymbolKind.Key,
                    range=types.Range(
                        types.Position(entry.line - 1, 0),
                        types.Position(last, len(lines[last]) if last < len(lines) else 0),
                    ),
                    selection_range=convert.whole_line(lines, entry.line - 1),
                )
            )
        if section.name is None:
            symbols.extend(children)
            continue
        last_line = max([c.range.end.line for c in children] + [section.line - 1])
        symbols.append(
            types.DocumentSymbol(
                name=section.name,
                kind=types.SymbolKind.Namespace,
                range=types.Range(types.Position(section.line - 1, 0), types.Position(last_line, 0)),
                selection_range=convert.whole_line(lines, section.line - 1),
                children=children,
            )
        )
    return symbols


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").split("\n")
    except OSError:
        return []


def serve(root: Path | None = None) -> None:
    """Run the server on stdin/stdout until the client says exit."""
    build_server(root).start_io()


__all__ = ["build_server", "scan_text", "serve"]
