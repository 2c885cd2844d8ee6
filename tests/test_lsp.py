"""`memfiles lsp` driven end to end: the real server in a subprocess, a real LSP client (pytest-lsp)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
import pytest_lsp
from click.testing import CliRunner
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from memfiles.cli.main import cli

in_module_loop = pytest.mark.asyncio(loop_scope="module")  # one server for the module's tests

AT = "@@"  # written apart so that `memfiles refs --dangling` on this repository does not take these for its own
SOURCE = f"""\
# The parser keeps the Manual byte for byte: see {AT}D-001.
# The old rule was {AT}D-002, and {AT}D-099 never existed.
# Set-up is in {AT}doc:guide#set-up-steps; what it replaced: {AT}T-001.
def parse(): ...
"""


def _cli(root: Path, *args: str, input: str | None = None) -> None:
    result = CliRunner().invoke(cli, ["--root", str(root), *args], input=input, catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lsp-project")
    (root / "memory").mkdir()
    ops = [
        {"op": "add", "kind": "decision", "title": "The Manual section is kept byte for byte", "area": "format",
         "body": "The parser keeps everything from the Manual heading to the end of the file verbatim."},
        {"op": "add", "kind": "decision", "title": "Bodies are wrapped by the formatter", "area": "format",
         "body": "An early rule: fmt re-wrapped every body. It changed code blocks."},
        {"op": "add", "kind": "decision", "title": "Only the write path wraps prose", "area": "format",
         "body": "fmt leaves bodies as written; the write path wraps the prose it is given (see D-001)."},
        {"op": "add", "kind": "todo", "title": "Write a crash recovery journal", "area": "store",
         "body": "A batch interrupted by a crash must be replayed or rolled back whole."},
        {"op": "add", "kind": "friction", "title": "Coverage aggregation needs the batch map", "area": "index",
         "body": "The batch files cannot be used as the coverage map; aggregation needs its own."},
    ]  # fmt: skip
    _cli(root, "import", "-", input=json.dumps({"ops": ops}))
    _cli(root, "retire", "D-002", "--successor", "D-003", "--reason", "it changed code blocks")
    _cli(root, "prune", "T-001", "--reason", "done and forgotten")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("# Guide\n\n## Set-up steps\n\nRun it.\n", encoding="utf-8")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text(SOURCE, encoding="utf-8")
    return root


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "memfiles.cli", "lsp"]),
    scope="module",
)
async def client(lsp_client: LanguageClient, project: Path):
    registrations: list[types.Registration] = []

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(_client: LanguageClient, params: types.RegistrationParams) -> None:
        registrations.extend(params.registrations)  # the server asks to be told of saves by other tools

    lsp_client.registrations = registrations  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=project.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="project")],
        )
    )
    yield
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, path: Path, text: str | None = None) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text or path.read_text())
        )
    )
    return uri


async def _diagnostics(client: LanguageClient, uri: str, want: str, timeout: float = 60.0) -> list[types.Diagnostic]:
    """Wait until the diagnostics published for `uri` include one with code `want`."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        found = client.diagnostics.get(uri, [])
        if any(d.code == want for d in found):
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {want} diagnostic for {uri}: {client.diagnostics.get(uri)}")


async def _hover(client: LanguageClient, uri: str, line: int, character: int) -> str:
    result = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, character))
    )
    assert result is not None
    assert isinstance(result.contents, types.MarkupContent)
    return result.contents.value


@in_module_loop
async def test_hover_shows_the_entry(client: LanguageClient, project: Path) -> None:
    """Hovering @@D-001 in a source file shows its title, kind, status, area and body."""
    uri = _open(client, project / "src" / "app.py")
    text = await _hover(client, uri, 0, 52)
    assert "D-001: The Manual section is kept byte for byte" in text
    assert "decision" in text and "format" in text
    assert "verbatim" in text


@in_module_loop
async def test_hover_on_a_retired_id_names_the_successor_and_reason(client: LanguageClient, project: Path) -> None:
    """Hovering a retired reference names its successor and the reason it was retired."""
    uri = (project / "src" / "app.py").as_uri()
    text = await _hover(client, uri, 1, 22)
    assert "successor is **D-003**" in text
    assert "it changed code blocks" in text


@in_module_loop
async def test_hover_on_a_pruned_id_shows_its_reason(client: LanguageClient, project: Path) -> None:
    """Hovering a pruned id shows the pruned entry and the reason from the ledger."""
    uri = (project / "src" / "app.py").as_uri()
    line = SOURCE.split("\n")[2]
    text = await _hover(client, uri, 2, line.index(f"{AT}T-001") + 3)
    assert "pruned" in text and "done and forgotten" in text
    assert "crash recovery journal" in text


@in_module_loop
async def test_definition_goes_to_the_entry_heading(client: LanguageClient, project: Path) -> None:
    """Go to definition on @@D-001 lands on its heading in memory/decisions.md."""
    uri = (project / "src" / "app.py").as_uri()
    result = await client.text_document_definition_async(
        types.DefinitionParams(types.TextDocumentIdentifier(uri), types.Position(0, 52))
    )
    assert isinstance(result, types.Location)
    assert result.uri.endswith("/memory/decisions.md")
    lines = (project / "memory" / "decisions.md").read_text().split("\n")
    assert lines[result.range.start.line].startswith("### D-001: ")


@in_module_loop
async def test_definition_of_a_doc_reference_goes_to_the_anchor(client: LanguageClient, project: Path) -> None:
    """Go to definition on a doc reference lands on that heading of docs/guide.md."""
    uri = (project / "src" / "app.py").as_uri()
    result = await client.text_document_definition_async(
        types.DefinitionParams(types.TextDocumentIdentifier(uri), types.Position(2, 20))
    )
    assert isinstance(result, types.Location)
    assert result.uri.endswith("/docs/guide.md") and result.range.start.line == 2


@in_module_loop
async def test_diagnostics_for_dangling_and_retired_references(client: LanguageClient, project: Path) -> None:
    """Opening a source file reports a missing id as an error and @@D-002 as a warning naming D-003."""
    uri = _open(client, project / "src" / "app.py")
    found = await _diagnostics(client, uri, "ref-dangling")
    dangling = [d for d in found if d.code == "ref-dangling"]
    retired = [d for d in found if d.code == "ref-retired"]
    assert [d.severity for d in dangling] == [types.DiagnosticSeverity.Error]
    assert "D-099" in dangling[0].message
    assert retired and retired[0].severity == types.DiagnosticSeverity.Warning and "D-003" in retired[0].message
    assert not any("D-001" in d.message for d in found)


@in_module_loop
async def test_completion_ranks_by_the_words_around_the_cursor(client: LanguageClient, project: Path) -> None:
    """Completion after @@ offers ids with titles, the one matching the surrounding words first."""
    text = "# crash recovery: a batch must be replayed whole\n# coverage aggregation map, see @@\n"
    uri = _open(client, project / "src" / "notes.py", text)
    result = await client.text_document_completion_async(
        types.CompletionParams(
            types.TextDocumentIdentifier(uri), types.Position(1, len("# coverage aggregation map, see @@"))
        )
    )
    assert isinstance(result, types.CompletionList) and result.items
    first = result.items[0]
    assert first.label == "F-001" and "Coverage aggregation" in (first.detail or "")
    assert first.data["id"] == "F-001" and first.data["kind"] == "friction"  # the contract's entry object
    assert "T-001" not in [item.label for item in result.items]  # pruned ids are not offered


@in_module_loop
async def test_code_action_replaces_a_retired_reference(client: LanguageClient, project: Path) -> None:
    """The quick fix on @@D-002 replaces it with its successor @@D-003."""
    uri = (project / "src" / "app.py").as_uri()
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(uri),
            types.Range(types.Position(1, 0), types.Position(1, 40)),
            types.CodeActionContext(diagnostics=[]),
        )
    )
    assert actions and len(actions) == 1
    action = actions[0]
    assert isinstance(action, types.CodeAction) and action.edit and action.edit.changes
    (edit,) = action.edit.changes[uri]
    assert edit.new_text == "@@D-003"
    line = SOURCE.split("\n")[1]
    assert (edit.range.start.character, edit.range.end.character) == (
        line.index(f"{AT}D-002"),
        line.index(f"{AT}D-002") + 7,
    )


@in_module_loop
async def test_references_find_code_and_memory(client: LanguageClient, project: Path) -> None:
    """References to D-001 are the source file's citation and another entry's bare mention; from D-003's
    heading, D-002's successor line."""
    uri = (project / "src" / "app.py").as_uri()
    found = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=types.TextDocumentIdentifier(uri),
            position=types.Position(0, 52),
            context=types.ReferenceContext(include_declaration=True),
        )
    )
    assert found and {Path(loc.uri).name for loc in found} >= {"app.py", "decisions.md"}
    lines = (project / "memory" / "decisions.md").read_text().split("\n")
    cited = [lines[loc.range.start.line] for loc in found if loc.uri.endswith("decisions.md")]
    assert cited[0].startswith("### D-001: ")  # the declaration, asked for
    assert any("(see D-001)" in line for line in cited)  # a bare mention in another entry's body
    assert not any(line.startswith("- [D-001]") for line in cited)  # not the generated index
    memory_uri = (project / "memory" / "decisions.md").as_uri()
    lines = (project / "memory" / "decisions.md").read_text().split("\n")
    heading = next(n for n, line in enumerate(lines) if line.startswith("### D-003: "))
    _open(client, project / "memory" / "decisions.md")
    found = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=types.TextDocumentIdentifier(memory_uri),
            position=types.Position(heading, 5),
            context=types.ReferenceContext(include_declaration=False),
        )
    )
    assert found and any(lines[loc.range.start.line].startswith("- successor: D-003") for loc in found)


@in_module_loop
async def test_document_and_workspace_symbols(client: LanguageClient, project: Path) -> None:
    """A memory file's symbols are its entries; a workspace symbol search finds an entry by title words."""
    uri = _open(client, project / "memory" / "decisions.md")
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(types.TextDocumentIdentifier(uri))
    )
    names = [s.name for s in symbols or []]
    assert names[:3] == [
        "D-001: The Manual section is kept byte for byte",
        "D-002: Bodies are wrapped by the formatter",
        "D-003: Only the write path wraps prose",
    ]
    found = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="write path prose"))
    assert [s.name for s in found or []] == ["D-003: Only the write path wraps prose"]


@in_module_loop
async def test_memory_file_diagnostics_include_check_and_lint(client: LanguageClient, project: Path) -> None:
    """A memory file edited in the editor gets the lint findings `check` would report (md009 here)."""
    path = project / "memory" / "frictions.md"
    text = path.read_text().replace("needs its own.", "needs its own.   ")
    uri = _open(client, path, text)
    found = await _diagnostics(client, uri, "md009")
    assert any(d.code == "md009" and d.severity == types.DiagnosticSeverity.Warning for d in found)


@in_module_loop
async def test_a_file_changed_by_another_tool_is_picked_up(client: LanguageClient, project: Path) -> None:
    """An entry added by the CLI while the server runs is hovered at once; a dangling id it fills is cleared."""
    uri = (project / "src" / "later.py").as_uri()
    _open(client, project / "src" / "later.py", "# see @@F-002\n")
    await _diagnostics(client, uri, "ref-dangling")
    _cli(project, "add", "--kind", "friction", "--title", "A friction added behind the server's back", "--area", "x",
         "--body", "Written by another process.")  # fmt: skip
    text = await _hover(client, uri, 0, 9)
    assert "A friction added behind the server's back" in text
    assert [r.method for r in client.registrations] == [types.WORKSPACE_DID_CHANGE_WATCHED_FILES]  # type: ignore[attr-defined]
    for _ in range(100):
        if not any(d.code == "ref-dangling" for d in client.diagnostics.get(uri, [])):
            break
        await asyncio.sleep(0.05)
    assert not any(d.code == "ref-dangling" for d in client.diagnostics.get(uri, []))


@in_module_loop
@pytest.mark.parametrize("arguments", [["D-001"], [["D-001"]], ["d-1"], [f"{AT}D-0001"]])
async def test_entry_command_takes_the_id_in_either_shape(
    client: LanguageClient, project: Path, arguments: list
) -> None:
    """workspace/executeCommand memfiles.entry answers {"entry"} for ["D-001"] (pygls unpacks it), for
    [["D-001"]], and for the id in any spelling show takes."""
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="memfiles.entry", arguments=arguments)
    )
    assert result is not None and result["entry"]["id"] == "D-001"
    assert result["entry"]["title"] == "The Manual section is kept byte for byte"


@in_module_loop
async def test_entry_command_without_an_id_answers_null(client: LanguageClient, project: Path) -> None:
    """memfiles.entry with no id, a word, or an id nothing carries answers null."""
    for arguments in ([], ["second"], ["D-099"]):
        result = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="memfiles.entry", arguments=arguments)
        )
        assert result is None


@in_module_loop
async def test_an_unpadded_reference_resolves_to_its_entry(client: LanguageClient, project: Path) -> None:
    """`@@D-1` while D-001 exists is not dangling: hover shows D-001; only the truly missing id is reported."""
    path = project / "src" / "short.py"
    path.write_text(f"# see {AT}D-1 and {AT}D-077\n", encoding="utf-8")
    uri = _open(client, path)
    found = await _diagnostics(client, uri, "ref-dangling")
    assert [d.message for d in found if d.code == "ref-dangling"] == ["no entry D-077"]
    text = await _hover(client, uri, 0, 9)
    assert "**D-001: The Manual section is kept byte for byte**" in text
    assert f"write it `{AT}D-001`" in text  # as `memfiles refs` says it


def test_hover_and_completion_path_imports_nothing_heavy() -> None:
    """The server module and its index (open, refresh, resolve, complete) import no torch, chromadb or numpy."""
    from tests.test_layers import HEAVY, _modules_after

    code = (
        "import memfiles.lsp.server\nfrom memfiles.config import load_settings\n"
        "from memfiles.store.project import Project\n"
        "from memfiles.lsp.workspace import WorkspaceIndex\n"
        "index = WorkspaceIndex.open(Project(load_settings('.')))\nindex.refresh()\n"
        "index.resolve_id('D-001')\nindex.complete('the parser and the index', '')\nindex.search_titles('index')"
    )
    assert not _modules_after(code) & set(HEAVY)


@pytest.fixture(scope="module")
def no_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("no-project")
    (folder / ".git").mkdir()  # a repository without memory/: the root search stops here
    (folder / "app.py").write_text(f"# see {AT}D-001\n", encoding="utf-8")
    return folder


PLAIN_SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "memfiles.cli", "lsp"])


def _plain_start(folder: Path) -> types.InitializeParams:
    """An editor without capabilities opening `folder`."""
    return types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=folder.as_uri())


async def _hover_or_none(client: LanguageClient, uri: str, line: int, character: int) -> types.Hover | None:
    position = types.Position(line, character)
    return await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri), position))


@pytest_lsp.fixture(config=PLAIN_SERVER)
async def lost_client(lsp_client: LanguageClient, no_project: Path):
    await lsp_client.initialize_session(_plain_start(no_project))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_without_a_project_the_server_says_so_and_answers_nothing(
    lost_client: LanguageClient, no_project: Path
) -> None:
    """Started outside any project, the server shows one warning and answers hover with nothing."""
    uri = _open(lost_client, no_project / "app.py")
    assert await _hover_or_none(lost_client, uri, 0, 8) is None
    assert any("no project here" in message.message for message in lost_client.messages)


@pytest.fixture
def package_project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "memory").mkdir()
    _cli(tmp_path, "add", "-k", "decision", "-t", "The root decision", "-a", "x", "--body", "At the root.")
    (tmp_path / "app.py").write_text(f"# see {AT}D-201\n", encoding="utf-8")
    return tmp_path


@pytest_lsp.fixture(config=PLAIN_SERVER)
async def package_client(lsp_client: LanguageClient, package_project: Path):
    await lsp_client.initialize_session(_plain_start(package_project))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_a_new_package_memory_folder_is_found_without_the_client_telling(
    package_client: LanguageClient, package_project: Path
) -> None:
    """A package's memory/ folder created by another tool while the server runs, with no file-watch
    notification from the client: its entry is hovered within seconds (it took up to a minute)."""
    uri = _open(package_client, package_project / "app.py")
    first = await _hover_or_none(package_client, uri, 0, 9)
    assert first is not None and "no entry D-201" in str(first.contents), first  # hovered, and not found yet
    folder = package_project / "pkg" / "memory"
    folder.mkdir(parents=True)
    (folder / "decisions.md").write_text(
        "# Decisions\n\n### D-201: A package decision\n\n- date: 2026-12-01\n- area: pkg\n- status: accepted\n\n"
        "Kept in the package.\n",
        encoding="utf-8",
    )
    for _ in range(100):  # the server looks again for new memory/ folders every 2 s
        await asyncio.sleep(0.1)
        found = await _hover_or_none(package_client, uri, 0, 9)
        if found is not None and "A package decision" in str(found.contents):
            return
    raise AssertionError("the package's entry was not found within 10 s")


@pytest.fixture
def semantic_project(tmp_path: Path) -> Path:
    """Three entries; the one about hanging writers shares no title word with the text typed below."""
    (tmp_path / "memory").mkdir()
    ops = [
        {"op": "add", "kind": "decision", "title": "Ids are never reused after pruning", "area": "format",
         "body": "A pruned number stays in the ledger so that an old reference cannot point at a new entry."},
        {"op": "add", "kind": "decision", "title": "The parser keeps the Manual section verbatim", "area": "format",
         "body": "Everything from the Manual heading to the end of the file is kept byte for byte."},
        {"op": "add", "kind": "friction", "title": "Chroma hangs with two writers", "area": "index",
         "body": "Two PersistentClients on one folder wait for minutes; route every write through one process."},
    ]  # fmt: skip
    _cli(tmp_path, "import", "-", input=json.dumps({"ops": ops}))
    _cli(tmp_path, "backfill")
    return tmp_path


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "memfiles.cli", "lsp"]))
async def semantic_client(lsp_client: LanguageClient, semantic_project: Path):
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=semantic_project.as_uri())
    )
    yield
    await lsp_client.shutdown_session()


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.asyncio
async def test_completion_is_semantic_when_a_watcher_runs(
    semantic_client: LanguageClient, semantic_project: Path
) -> None:
    """With a watcher running, completion puts first the entry nearest in meaning to the surrounding text."""
    from memfiles.config import load_settings
    from memfiles.services.watch import Watcher
    from memfiles.store.project import Project

    typed = "# the database store freezes when several processes save at the same time, see @@"
    uri = _open(semantic_client, semantic_project / "db.py", typed + "\n")
    params = types.CompletionParams(types.TextDocumentIdentifier(uri), types.Position(0, len(typed)))

    async def first_label() -> str:
        result = await semantic_client.text_document_completion_async(params)
        assert isinstance(result, types.CompletionList) and len(result.items) == 3
        return result.items[0].label

    assert await first_label() == "D-001"  # no word in common, no watcher: the default order
    watcher = Watcher(Project(load_settings(semantic_project)), debounce=0.1, reconcile_every=1.0)
    await asyncio.get_running_loop().run_in_executor(None, watcher.start)
    try:
        labels = []
        for _ in range(60):  # the watcher answers once it has caught up and warmed its model
            labels.append(await first_label())
            if labels[-1] == "F-001":
                break
            await asyncio.sleep(0.5)
        assert labels[-1] == "F-001", labels
    finally:
        watcher.stop()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "memfiles.cli", "lsp"]))
async def neovim(lsp_client: LanguageClient, project: Path):
    """A client that offers UTF-8 positions first, as Neovim 0.10 does."""
    result = await lsp_client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities("neovim"), root_uri=project.as_uri())
    )
    lsp_client.encoding = result.capabilities.position_encoding  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_positions_are_utf16_whatever_the_client_offers_first(neovim: LanguageClient, project: Path) -> None:
    """pygls took Neovim's first offer (utf-8) and said so, while every column memfiles computes is UTF-16:
    after 设计说明 on a line, a diagnostic fell under the CJK text and hover inside @@D-099 showed another
    entry. The server announces UTF-16, and its columns are UTF-16."""
    assert neovim.encoding == types.PositionEncodingKind.Utf16  # type: ignore[attr-defined]
    line = f"# 设计说明 {AT}D-099 and {AT}D-001"
    uri = _open(neovim, project / "src" / "cjk.py", line + "\n")
    found = await _diagnostics(neovim, uri, "ref-dangling")
    dangling = next(d for d in found if d.code == "ref-dangling")
    start = line.index(AT + "D-099")  # every character here is one UTF-16 unit
    assert (dangling.range.start.character, dangling.range.end.character) == (start, start + 7)
    assert "D-001" in await _hover(neovim, uri, 0, line.index(AT + "D-001") + 3)


@pytest.mark.asyncio
async def test_references_find_every_spelling_of_the_id(neovim: LanguageClient, project: Path) -> None:
    """Hover, definition and `memfiles refs` read `@@D-1` and `@@D-0001` as D-001; Find References saw
    only the exact `@@D-001`."""
    line = f"# {AT}D-001 and {AT}D-1 and {AT}D-0001"
    uri = _open(neovim, project / "src" / "spellings.py", line + "\n")  # open only: nothing on disk
    found = await neovim.text_document_references_async(
        types.ReferenceParams(
            text_document=types.TextDocumentIdentifier(uri),
            position=types.Position(0, line.index(AT + "D-1 ") + 3),
            context=types.ReferenceContext(include_declaration=False),
        )
    )
    here = sorted(loc.range.start.character for loc in found or [] if loc.uri == uri)
    assert here == [line.index(AT + "D-001"), line.index(AT + "D-1 "), line.index(AT + "D-0001")]


@pytest.mark.asyncio
async def test_a_word_shaped_like_an_id_of_no_kind_is_no_reference(neovim: LanguageClient, project: Path) -> None:
    """In a memory file, hovering `UTF-8` or `SHA-256` said "no entry UTF-8": only the project's prefixes
    make a bare id."""
    path = project / "memory" / "decisions.md"
    text = path.read_text() + "\nFiles are UTF-8; hashes are SHA-256, see D-001.\n"
    uri = _open(neovim, path, text)
    row = len(text.split("\n")) - 2
    line = text.split("\n")[row]
    for word in ("UTF-8", "SHA-256"):
        said = await neovim.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(row, line.index(word) + 1))
        )
        assert said is None, said
    assert "D-001" in await _hover(neovim, uri, row, line.index("D-001") + 2)


@pytest.mark.asyncio
async def test_a_file_of_another_project_is_not_judged_by_this_one(
    neovim: LanguageClient, project: Path, tmp_path: Path
) -> None:
    """The server answers for its own project: a file in a second workspace folder (or in none) had its
    references checked against this project's entries (`no entry D-004` where that project has one)."""
    elsewhere = tmp_path / "other-project" / "src"
    elsewhere.mkdir(parents=True)
    line = f"# {AT}D-999 and {AT}D-001"
    uri = _open(neovim, elsewhere / "b.py", line + "\n")
    deadline = asyncio.get_running_loop().time() + 30
    while uri not in neovim.diagnostics and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    assert not neovim.diagnostics.get(uri)
    said = await neovim.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, line.index("D-001")))
    )
    assert said is None


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "memfiles.cli", "lsp"]))
async def linked(lsp_client: LanguageClient, project: Path, tmp_path_factory: pytest.TempPathFactory):
    """A client that opened the project through a link to it (macOS's /tmp is /private/tmp)."""
    link = tmp_path_factory.mktemp("link") / "project"
    link.symlink_to(project)
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities("neovim"), root_uri=link.as_uri())
    )
    lsp_client.link = link  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_a_project_opened_through_a_link_is_served(linked: LanguageClient) -> None:
    """The check for files outside the project compared the link's path with the resolved root: a
    workspace opened through a link got no hover and no diagnostics (review)."""
    link = linked.link  # type: ignore[attr-defined]
    line = f"# {AT}D-999 and {AT}D-001"
    uri = _open(linked, link / "src" / "via-link.py", line + "\n")
    assert any(d.code == "ref-dangling" for d in await _diagnostics(linked, uri, "ref-dangling"))
    assert "D-001" in await _hover(linked, uri, 0, line.index(AT + "D-001") + 3)
