"""The language server's handlers: hover, definition, references, diagnostics, completion, code actions,
symbols (the state they share is in lsp.state)."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from lsprotocol import types

from memfiles.errors import ParseError
from memfiles.format.grammar import any_entry_heading
from memfiles.format.ids import id_key
from memfiles.format.parse import parse
from memfiles.lsp import convert
from memfiles.lsp.state import MemfilesServer
from memfiles.lsp.workspace import iter_refs, scan_text

log = logging.getLogger("memfiles.lsp")
_TYPED = re.compile(r"@@([A-Za-z0-9-]*)$")  # what was typed after @@, up to the cursor


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
        ls.watch()  # whatever the client does or does not send, a write by the CLI is seen within a second
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
        ls.changed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: MemfilesServer, params: types.DidSaveTextDocumentParams) -> None:
        if ls.index is not None and not ls.index.refresh():
            ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: MemfilesServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)
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
    def definition(ls: MemfilesServer, params: types.DefinitionParams) -> types.Location | list[types.Location] | None:
        resolution, _token, _s, _e = ls.resolve_at(params.text_document.uri, params.position)
        if resolution is None:
            return None

        def heading(located: Any) -> types.Location:
            lines = located.file.text.split("\n")
            return types.Location(convert.uri_of(located.file.path), convert.whole_line(lines, located.entry.line - 1))

        if resolution.state == "ambiguous" and ls.index is not None:  # every entry that carries the id
            return [heading(located) for located in ls.index.twice.get(resolution.located.entry.id, [])]
        if resolution.located is not None:
            return heading(resolution.located)
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
        heading = any_entry_heading(line)
        entry_id = (match.group("id") if match is not None else token) or (heading[0] if heading else "")
        if not entry_id or id_key(entry_id) is None:  # an id in any case (`@@d-1`), as every command reads it
            return None
        entry_id = index.spelled(entry_id)  # @@T-2 is T-002
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
        lines, path = ls.text_of(params.text_document.uri)
        number = params.position.line
        line = lines[number] if number < len(lines) else ""
        column = convert.from_utf16(line, params.position.character)
        typed = _TYPED.search(line[:column])
        if typed is None:
            return None
        context = "\n".join(lines[max(0, number - 5) : number + 6])
        working = path is not None and index.is_working_file(path)  # W- ids belong to a run, uncommitted
        boost = ls.semantic.get(index, context)
        ranked = index.complete(context, typed.group(1), limit=50, boost=boost, hidden=working)
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
                        diagnostics=[d for d in params.context.diagnostics if d.code == "ref-retired"] or None,
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
    def entry_command(ls: MemfilesServer, *args: Any) -> dict[str, Any] | None:
        """The contract's entry object for an id (`{"entry": ...}`), for clients that show more than hover.

        pygls passes the request's `arguments` as positional arguments: `["D-001"]` arrives as "D-001",
        `[["D-001"]]` as ["D-001"]; both are taken, and the id in any spelling `show` accepts."""
        index = ls.fresh()
        first: Any = args[0] if args else None
        while isinstance(first, list | tuple):
            first = first[0] if first else None
        if index is None or not isinstance(first, str) or id_key(first) is None:
            return None
        entry_id = index.spelled(first)
        located = index.by_id.get(entry_id)
        return {"entry": index.entry_json(located)} if located is not None else None

    return server


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
