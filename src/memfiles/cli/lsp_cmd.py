"""`memfiles lsp`: the language server for editors (thin: the server lives in memfiles.lsp)."""

from __future__ import annotations

import click

from memfiles.cli.app import App, CommandError, pass_app, refuse_a_terminal


@click.command("lsp")
@click.option(
    "--stdio", is_flag=True, help="Speak LSP on stdin/stdout (the default; accepted for editors that pass it)."
)
@pass_app
def lsp(app: App, stdio: bool) -> None:
    """Run the language server on stdin/stdout: hover, go to definition, references, diagnostics and
    completion for @@ID, @@doc:<path>#<anchor> and @@skill:<name>#<anchor> in any file, and the check and lint
    findings of memory files as you type. Set-up for Neovim, VS Code and Helix: docs/lsp.md.

    \b
    Example:
      memfiles lsp
      memfiles --root ~/src/project lsp --stdio
    """
    refuse_a_terminal("lsp", "your editor (set-up for Neovim, VS Code and Helix: docs/lsp.md)")
    try:
        from memfiles.lsp.server import serve
    except ImportError as error:
        raise CommandError(
            f"memfiles lsp needs the lsp extra ({error.name} is missing): pip install 'memfiles[lsp]'"
        ) from error
    serve(app.root_option)
