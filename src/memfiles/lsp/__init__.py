"""`memfiles lsp`: a language server for `@@` references and memory files (pygls over stdio).

`server` holds the protocol handlers; the project's entries come from lsp.workspace, the check and
lint findings from services.check / services.lint. See docs/lsp.md.
"""
