"""Text for the lexical index: tokens (stemmed, stop words out, compounds kept whole) and query clean-up."""

from __future__ import annotations

import re
from functools import lru_cache

_STOPWORD_TEXT = """
a about above after again against all am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
now of off on once only or other our ours ourselves out over own same she should so some such than that
the their theirs them themselves then there these they this those through to too under until up very was
we were what when where which while who whom why will with would you your yours yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

# English question framing: words that say a question is being asked, not what it is about ("what did
# we learn about X?", "can you show me X"). Generic on purpose (wh-words, auxiliaries, pronouns, request
# verbs), not the vocabulary of any one collection's queries (see docs/retrieval.md for its effect).
_FRAMING_TEXT = """
what which who whom whose where when why how is are was were am be been do does did can could would should
will shall i we me us my our you your please tell show find list give want need looking know learn learned
learnt any there about regarding concerning
"""
FRAMING = frozenset(_FRAMING_TEXT.split())
# Only a whole word, optionally followed by sentence punctuation, is framing: `how-to`, `on-call`,
# `--what`, `what.py`, `"what"` and `What()` are never touched.
_PLAIN_WORD = re.compile(r"([A-Za-z]+)[?.,;:!]*")
_TOKEN = re.compile(r"[0-9a-z]+(?:[-_.][0-9a-z]+)*")


def strip_framing(query: str) -> str:
    """The query without its question framing words (whole words only); the query itself when little
    would be left."""
    kept = []
    for word in query.split():
        plain = _PLAIN_WORD.fullmatch(word)
        if plain is None or plain.group(1).lower() not in FRAMING:
            kept.append(word)
    stripped = " ".join(kept).strip(" ?.,;:!")
    return stripped if len(stripped) >= 3 else query


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    try:
        import Stemmer

        return Stemmer.Stemmer("english").stemWord
    except ImportError:  # pragma: no cover - PyStemmer is a dependency of the index extra
        return lambda word: word


def tokenize(text: str) -> list[str]:
    """Lower-cased, stemmed tokens; a compound like `max-fanout` or `f-160` also counts whole."""
    stem = _stemmer()
    tokens: list[str] = []
    for match in _TOKEN.finditer(text.lower()):
        word = match.group(0)
        parts = re.split(r"[-_.]", word)
        if len(parts) > 1:
            tokens.append(word)
        for part in parts:
            if part and part not in STOPWORDS:
                tokens.append(stem(part))
    return tokens


def code_like(token: str) -> bool:
    """A class name, error string, frame, path or flag: the tokens two reports of one bug share verbatim."""
    if len(token) < 4 or token.isdigit():
        return False
    if token[0] == "-":
        return len(token) > 3 and token.lstrip("-")[:1].isalpha()  # --max-fanout, -noflatten
    if "_" in token or "::" in token or "->" in token or token.startswith("0x"):
        return True  # NS_ERROR_FAILURE, set_clock_groups, ns::Foo, 0x80004005
    if "." in token:
        return token[0].isalpha() and any(c.isalpha() for c in token.rsplit(".", 1)[-1])  # nsFoo.cpp, a.b.c
    return any(c.isupper() for c in token[1:]) and any(c.islower() for c in token)  # nsIFoo, ensureVisible
