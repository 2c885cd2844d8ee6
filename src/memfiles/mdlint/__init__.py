"""The Markdown lint rule set of memory files: PyMarkdown's rules, chosen and configured for the format.

`rules` holds the defaults and reads the user's `[tool.pymarkdown]`; `engine` runs PyMarkdown over a file
cut into entry-sized chunks (PyMarkdown's cost grows faster than the file) with a cache; `clean` is the
stdlib rewrite the write path applies to bodies so that what it writes passes. See docs/lint.md.

This layer sits beside `format/`: it depends on `format/` and on PyMarkdown (imported only when a chunk
has to be scanned), and nothing in it touches the index.
"""
