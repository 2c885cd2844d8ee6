"""`memfiles lsp` under edits: typing in a large memory file, and references into a file that does not parse."""

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

in_module_loop = pytest.mark.asyncio(loop_scope="module")
AT = "@@"  # apart, so that `memfiles refs --dangling` on this repository does not read these


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lsp-edits")
    (root / "memory").mkdir()
    ops = [
        {
            "op": "add",
            "kind": "fact",
            "title": f"Fact number {n} about the build",
            "area": f"a{n % 7}",
            "body": f"Body {n}.",
        }
        for n in range(300)
    ]
    ops.append(
        {"op": "add", "kind": "decision", "title": "A decision in a file broken later", "area": "x", "body": "b"}
    )
    result = CliRunner().invoke(cli, ["--root", str(root), "import", "-"], input=json.dumps({"ops": ops}))
    assert result.exit_code == 0, result.output
    decisions = root / "memory" / "decisions.md"
    decisions.write_text(decisions.read_text().replace("- date: ", "- dat: ", 1))  # a typo: the file no longer parses
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text(f"# see {AT}D-1\n", encoding="utf-8")
    return root


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "memfiles.cli", "lsp"]), scope="module"
)
async def client(lsp_client: LanguageClient, project: Path):
    published: list[str] = []

    class Recorded(dict):  # the client's store of diagnostics, noting each publication
        def __setitem__(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
            published.append(uri)
            super().__setitem__(uri, diagnostics)

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(_client: LanguageClient, params: types.RegistrationParams) -> None:
        pass  # the server asks to hear of saves by other tools

    lsp_client.diagnostics = Recorded()
    lsp_client.published = published  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities("visual-studio-code"), root_uri=project.as_uri())
    )
    yield
    await lsp_client.shutdown_session()


async def _settled(client: LanguageClient, uri: str, timeout: float = 60.0) -> list[types.Diagnostic]:
    deadline = asyncio.get_running_loop().time() + timeout
    while uri not in client.diagnostics and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    return client.diagnostics[uri]


@in_module_loop
async def test_a_reference_into_a_file_that_does_not_parse_is_unreadable(client: LanguageClient, project: Path) -> None:
    """As `memfiles refs` says: ref-unreadable (a warning naming the file), not ref-dangling (no entry)."""
    uri = (project / "src" / "a.py").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri, "python", 1, (project / "src" / "a.py").read_text())
        )
    )
    found = await _settled(client, uri)
    assert [(d.code, d.severity) for d in found] == [("ref-unreadable", types.DiagnosticSeverity.Warning)]
    assert "memory/decisions.md, which does not parse" in found[0].message
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, 8))
    )
    assert hover is not None and "which does not parse" in hover.contents.value  # type: ignore[union-attr]


@in_module_loop
async def test_a_burst_of_edits_is_diagnosed_once_it_pauses(client: LanguageClient, project: Path) -> None:
    """Thirty edits in a row to a memory file of 300 entries: the server re-checks it when the typing pauses,
    not once per edit (each check of a large file held every other request back)."""
    path = project / "memory" / "facts.md"
    uri = path.as_uri()
    text = path.read_text()
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "markdown", 1, text)))
    await _settled(client, uri)
    await asyncio.sleep(1.0)  # the open's lint too
    published = client.published  # type: ignore[attr-defined]
    published.clear()
    for version in range(2, 32):
        text = text.replace("Body 1.", f"Body 1 {version}.", 1)
        change = types.TextDocumentContentChangeWholeDocument(text=text)
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(types.VersionedTextDocumentIdentifier(version=version, uri=uri), [change])
        )
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier((project / "src" / "a.py").as_uri()), types.Position(0, 8))
    )
    assert hover is not None
    for _ in range(100):  # the settled check and its lint
        if published.count(uri) >= 2:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)
    assert 1 <= published.count(uri) <= 6, published.count(uri)  # per edit, it was 31


def test_an_id_two_entries_carry_is_ambiguous_in_the_editor_too(tmp_path: Path) -> None:
    """After a merge left two `### D-003`, `memfiles refs` said ref-ambiguous (error) while the editor's
    index resolved the first one in silence: hover showed it and no diagnostic appeared."""
    from memfiles.config import load_settings
    from memfiles.lsp import convert
    from memfiles.lsp.workspace import WorkspaceIndex
    from memfiles.store.project import Project

    (tmp_path / "memory").mkdir()
    block = "### D-003: {}\n\n- date: 2026-12-01\n- area: a\n- status: proposed\n\nB.\n\n"
    (tmp_path / "memory" / "decisions.md").write_text("# Decisions\n\n" + block.format("Ours") + block.format("Theirs"))
    index = WorkspaceIndex.open(Project(load_settings(tmp_path)))
    resolution = index.resolve_id("D-003")
    assert resolution.state == "ambiguous" and "carried by 2 entries" in resolution.message
    line = "see @@" + "D-003"
    diagnostic = convert.ref_diagnostic(line, 0, 4, len(line), "@@" + "D-003", resolution)
    assert diagnostic is not None and diagnostic.code == "ref-ambiguous"
    assert "Ours" not in convert.hover_markdown(index, resolution, "@@" + "D-003")
