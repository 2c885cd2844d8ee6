"""How much text one request may bring to a shared process, and what happens beyond it (docs/json.md#limits).

The watcher and the MCP server serve every hook, editor and search of a project: a request that costs
seconds holds all of them up. Every input path is linear in its text (tests/reliability/), and these
caps bound the text itself. Past a cap, text is cut and the answer says so in its warnings; nothing is
refused for being long. Standard library only: the thin clients import it.
"""

from __future__ import annotations

# Characters of a search query (memsearch, recall, MCP search and recall, the watcher's search ops). The
# model reads the first 256 word pieces of a query (about 1,000-1,500 characters of English) and BM25
# gains nothing from more words: 4,000 characters keep every real question whole, and a query at the cap
# costs tens of milliseconds.
QUERY_LIMIT = 4_000
# Characters of each text of an agent hook's input (a prompt, a command, a tool's output): a tool's output
# keeps its end (where the error is), every other text its start. A hook's query is cut further, to
# 2,000 characters (services/agents/hooks.py).
HOOK_TEXT_LIMIT = 20_000
# Bytes of one request line on the watcher's socket: a longer one is refused unread (a hook carrying a
# tool's whole output is the largest request a client sends).
REQUEST_LIMIT = 16 * 1024 * 1024
# Seconds of work one search request may take in the watcher once it has the index (waiting for a sync
# to finish is not counted): past it, the request stops at its next step and answers an error, so that
# no request keeps the index from the writes that wait for it.
REQUEST_BUDGET = 10.0


def cut_query(query: str) -> tuple[str, str | None]:
    """`query` within QUERY_LIMIT characters, and the warning to give when it was cut (None when not)."""
    if len(query) <= QUERY_LIMIT:
        return query, None
    return query[:QUERY_LIMIT], query_cut_warning(len(query))


def query_cut_warning(length: int) -> str:
    return (
        f"the query was cut to its first {QUERY_LIMIT:,} characters (it had {length:,}): only those were"
        " searched (docs/json.md#limits)"
    )


def cut_text(text: str, keep_end: bool = False, limit: int = HOOK_TEXT_LIMIT) -> str:
    """`text` within `limit` characters: its start, or with `keep_end` its end."""
    if len(text) <= limit:
        return text
    return text[-limit:] if keep_end else text[:limit]
