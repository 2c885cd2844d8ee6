"""The one reader of CommonMark: markdown-it-py's token stream, for the write path and fmt.

memfiles' own line grammar (entry headings, ids, metadata, the fence rule `parse` needs) is
format/grammar.py's; everything else about Markdown in a body (what is a heading, a list, code, a
paragraph) is read here, from markdown-it-py, never approximated by hand. Read commands (list, show,
memsearch, the hooks) never import this package: only writes, fmt and the tests do.
"""
