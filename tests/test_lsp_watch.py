"""The language server keeps itself current and reads ids as every command does: a real server, a real
client with Neovim 0.10's capabilities (it never sends didChangeWatchedFiles), real CLI writes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from click.testing import CliRunner
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from memfiles.cli.main import cli

in_module_loop = pytest.mark.asyncio(loop_scope="module")
AT = "@@"  # written apart so that `memfiles refs --dangling` on this repository does not read these
SOURCE = f"# The rule is {AT}d-001 (lower case), the new one {AT}D-002, and {AT}t-9 never was.\n"


def _cli(root: Path, *args: str, input: str | None = None) -> str:
    result = CliRunner().invoke(cli, ["--root", str(root), *args], input=input, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lsp-watch")
    (root / "memory").mkdir()
    _cli(root, "add", "-k", "decision", "-t", "Ids are never reused", "-a", "format", "--body", "Old refs hold.")
    _cli(root, "working", "start", "--run", "fix-ci", "--goal", "Make the coverage job pass")
    _cli(root, "working", "todo", "add", "--run", "fix-ci", "Read the coverage map")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text(SOURCE, encoding="utf-8")
    return root


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "memfiles.cli", "lsp"]),
    scope="module",
)
async def client(lsp_client: LanguageClient, project: Path):
    capabilities = client_capabilities("neovim@v0.10.0")  # no dynamic didChangeWatchedFiles
    assert not capabilities.workspace.did_change_watched_files.dynamic_registration
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            root_uri=project.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="project")],
        )
    )
    yield
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, path: Path, text: str, language: str = "python") -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text))
    )
    return uri


async def _until(client: LanguageClient, uri: str, check, timeout: float = 120.0) -> list[types.Diagnostic]:
    """Wait, sending nothing to the server, until the diagnostics published for `uri` pass `check`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        found = client.diagnostics.get(uri)
        if found is not None and check(found):
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"diagnostics for {uri} never passed: {client.diagnostics.get(uri)}")


@in_module_loop
async def test_a_cli_write_is_diagnosed_with_no_request_and_no_file_event(
    client: LanguageClient, project: Path
) -> None:
    """An editor that never sends didChangeWatchedFiles (Neovim 0.7-0.10) kept a dangling reference's error
    until its next request after `memfiles add` made the entry: the server now looks at the memory files
    itself and republishes on its own."""
    uri = _open(client, project / "src" / "app.py", SOURCE)
    found = await _until(client, uri, lambda d: any("D-002" in x.message for x in d))
    assert any(d.code == "ref-dangling" and "no entry D-002" in d.message for d in found)
    env = {**os.environ, "MEMFILES_SEARCH_WATCH": "0"}
    subprocess.run(
        [str(Path(sys.executable).parent / "memfiles"), "--root", str(project), "add", "-k", "decision",
         "-t", "References name entries by id", "-a", "format", "--body", "Any case."],
        check=True, capture_output=True, env=env,
    )  # fmt: skip
    found = await _until(client, uri, lambda d: not any("D-002" in x.message for x in d))
    assert [d.code for d in found] == ["ref-dangling"]  # only @@t-9 is left


@in_module_loop
async def test_an_id_in_any_case_is_a_reference(client: LanguageClient, project: Path) -> None:
    """`@@d-001` names D-001 for hover and references, as every command takes ids in any case; a lower-case
    id that names nothing is dangling under its canonical spelling."""
    uri = _open(client, project / "src" / "app.py", SOURCE)
    column = SOURCE.index(f"{AT}d-001") + 4
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, column))
    )
    assert hover is not None and "D-001: Ids are never reused" in hover.contents.value  # type: ignore[union-attr]
    found = await _until(client, uri, lambda d: any(x.code == "ref-dangling" for x in d))
    assert any("no entry T-009" in d.message for d in found)
    sites = await client.text_document_references_async(
        types.ReferenceParams(
            context=types.ReferenceContext(include_declaration=False),
            text_document=types.TextDocumentIdentifier(uri),
            position=types.Position(0, column),
        )
    )
    assert sites and any(site.uri == uri and site.range.start.character == column - 4 for site in sites)


@in_module_loop
async def test_working_ids_are_offered_in_working_files_only(client: LanguageClient, project: Path) -> None:
    """Completion in a source file offered the per-run, uncommitted W- ids of working memory; it offers
    them in a working file, where they mean something, and nowhere else."""
    uri = _open(client, project / "src" / "notes.py", "# coverage, see @@\n")
    result = await client.text_document_completion_async(
        types.CompletionParams(types.TextDocumentIdentifier(uri), types.Position(0, len("# coverage, see @@")))
    )
    assert isinstance(result, types.CompletionList)
    labels = [item.label for item in result.items]
    assert "D-001" in labels and not any(label.startswith("W-") for label in labels)
    path = project / "memory" / "working" / "fix-ci.md"
    text = path.read_text() + "\nsee @@\n"
    uri = _open(client, path, text, "markdown")
    result = await client.text_document_completion_async(
        types.CompletionParams(types.TextDocumentIdentifier(uri), types.Position(text.count("\n") - 1, 6))
    )
    assert isinstance(result, types.CompletionList)
    assert any(item.label.startswith("W-") for item in result.items)


def test_refs_reads_an_id_in_any_case(project: Path) -> None:
    """`memfiles refs` took `@@t-1` for no reference at all; it is one, ref-ok with the spelling to use."""
    found = json.loads(_cli(project, "refs", str(project / "src"), "--json"))["findings"]
    lower = next(f for f in found if f["detail"]["token"] == f"{AT}d-001")
    assert lower["code"] == "ref-ok" and lower["id"] == "D-001" and f"write it {AT}D-001" in lower["message"]
    missing = next(f for f in found if f["detail"]["token"] == f"{AT}t-9")
    assert (
        missing["code"] == "ref-dangling" and missing["id"] == "T-009" and missing["message"].endswith("no entry T-009")
    )
