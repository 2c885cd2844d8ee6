"""memfiles: a project's working notes as Markdown files, checked by commands and searchable by meaning.

The public API is small and imports nothing heavy: the format (parse, render, validate), the project
(discovery and the write path) and the errors. The semantic index lives in `memfiles.index` and is
imported only by the commands that need it.
"""

from memfiles.errors import ConfigError, IndexUnavailable, MemfilesError, OpError, ParseError
from memfiles.format.model import Entry, MemoryFile, Section
from memfiles.format.parse import parse
from memfiles.format.render import render

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
