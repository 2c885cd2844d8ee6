"""memsearch's options, declared once: the click command (cli/search.py) is built from this table, and the
thin client (cli/quick_search.py) reads the plain form of a query with it. Standard library only, and
nothing imported at all: the thin client loads it on every query.

Each option: its parameter name, its flags, its shape ("int" a whole number of 1 or more, "multi"
repeatable and comma-separated, "text" one value, "choice" one of `choices`, "flag" no value, "file"
a path), its default, its help, and whether the thin path takes it (--batch and --chroma-url go to the
full command).
"""

from __future__ import annotations

MODES = ("hybrid", "lexical", "dense")

# (name, flags, shape, default, help, thin)
OPTIONS = (
    ("k", ("-k",), "int", 10, "How many hits (1 or more).", True),
    ("kind", ("--kind",), "multi", None, "Only this kind (decision, friction, ... or its prefix); repeatable.", True),
    ("area", ("--area",), "multi", None, "Only this area; repeatable.", True),
    ("status", ("--status",), "multi", None, "Only this status; repeatable.", True),
    ("path_glob", ("--path",), "text", None, "Only entries in files matching this glob, e.g. 'pkg/*'.", True),
    ("since", ("--since",), "text", None, "Only entries dated on or after YYYY-MM-DD.", True),
    (
        "batch_file",
        ("--batch",),
        "file",
        None,
        'JSON lines {"id", "query", "k"} in; one {"id", "query", "hits", "warnings"} line out per query.',
        False,
    ),
    ("mode", ("--mode",), "choice", "hybrid", "Ranking: fused (default), BM25 only, or embeddings only.", True),
    ("as_json", ("--json",), "flag", False, 'Print {"query", "hits", "warnings"} for machines (docs/json.md).', True),
)
# The flags the thin path reads a value for (--root is the group's, read the same way).
THIN_VALUED = {flag for _n, flags, shape, _d, _h, thin in OPTIONS if thin and shape != "flag" for flag in flags} | {
    "--root"
}
THIN_FLAGS = {flag for _n, flags, shape, _d, _h, thin in OPTIONS if thin and shape == "flag" for flag in flags}
