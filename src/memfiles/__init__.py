"""memfiles: a project's working notes as Markdown files, checked by commands and searchable by meaning.

The public API is small and imports nothing heavy: the format (parse, render, validate), the project
(discovery and the write path) and the errors. The semantic index lives in `memfiles.index` and is
imported only by the commands that need it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing would cost the thin client time
if TYPE_CHECKING:
    from memfiles.errors import ConfigError, IndexUnavailable, MemfilesError, OpError, ParseError
    from memfiles.format.model import Entry, MemoryFile, Section
    from memfiles.format.parse import parse
    from memfiles.format.render import render

# Each public name and the module that defines it, imported on first use (PEP 562): a submodule such as
# the thin memsearch client (cli/quick_search.py) then starts without loading the format's modules.
_PUBLIC = {
    "ConfigError": "memfiles.errors",
    "IndexUnavailable": "memfiles.errors",
    "MemfilesError": "memfiles.errors",
    "OpError": "memfiles.errors",
    "ParseError": "memfiles.errors",
    "Entry": "memfiles.format.model",
    "MemoryFile": "memfiles.format.model",
    "Section": "memfiles.format.model",
    "parse": "memfiles.format.parse",
    "render": "memfiles.format.render",
}

__all__ = [
    "ConfigError",
    "Entry",
    "IndexUnavailable",
    "MemfilesError",
    "MemoryFile",
    "OpError",
    "ParseError",
    "Section",
    "__version__",
    "parse",
    "render",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    if name in _PUBLIC:
        import importlib

        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'memfiles' has no attribute {name!r}")
