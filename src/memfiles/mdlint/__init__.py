"""The Markdown lint rule set of memory files: markdownlint's rules as rumdl runs them, chosen for the format.

`rules` holds the defaults and reads the user's `[tool.rumdl]` (or `[tool.pymarkdown]`, translated);
`engine` runs rumdl over a file cut into entry-sized chunks, bounded in time, with a cache; `fixes`
applies rumdl's fixes (and a few of memfiles' own) only where a text renders as before. See docs/lint.md.

This layer sits beside `format/`: it depends on `format/`, on the rumdl binary (run as a subprocess) and,
to compare renderings, on markdown/ (imported only when fixes are applied); nothing in it touches the index.
"""
