"""How alike two short texts are (a symptom and an entry's symptom, two fixes), for the distiller.

The distiller compares a record's symptom with each entry's symptom, not with templated bodies: both
are one sentence, which is what a sentence encoder is made for. It uses the bundled model (the numpy
encoder: no torch, no index needed) and falls back to word overlap when the model cannot be loaded.
How the symptoms' meaning is weighed with the other evidence is services/distiller/signals.py's; here are the
guards that set alike sentences apart (another named thing, a negation), and when two fixes are one.

SAME 0.80, read off STS-B (1,500 sentence pairs with human scores 0-5; the cosine of the bundled model):
two sentences this close say the same thing (pairs scored 3+: precision 0.91). Two fixes this close
(or naming the same flag) are the same fix, unless they set something to other values or turn it the
other way.
"""

from __future__ import annotations

import re
from typing import Any

from memfiles.config import Settings
from memfiles.services.distiller.flags import NEGATION, find_flags

SAME = "same"
# (cosine, Jaccard of stemmed words). On STS-B pairs scored 3+, Jaccard 0.6 has the precision of cosine
# 0.80 (0.91). `python scripts/eval_distil.py --stsb` prints the table.
THRESHOLDS = {SAME: (0.80, 0.6)}
# A negation sets two symptoms apart when the rest of their words, in order, match this well
# (difflib's ratio of the stemmed words): the same statement but for the `not`.
NEGATION_OVERLAP = 0.7


# What names one object among others: an acronym (USB, DDR, SRAM), a word with digits (M2, sky130), an
# identifier (u_core). Two symptoms that name different ones in the same place are about different
# things, however alike their sentences (a sentence encoder puts "on the USB PHY" and "on the DDR PHY"
# at 0.84).
_MARKER = re.compile(r"\b(?:[A-Z]{2,}[0-9]*|[A-Za-z]+[0-9][A-Za-z0-9]*|\w+_\w+)\b")
_NEGATION = NEGATION
# The words of a fix as other_values reads them: options (-x, --max-fanout), numbers (16, 0.7, 5%), words.
_TOKEN = re.compile(r"--?[A-Za-z][\w-]*|\d+(?:\.\d+)?%?|[A-Za-z]+|=")
_NUMBER = re.compile(r"\d+(?:\.\d+)?%?")
# A number is a setting when one of these (or an option) stands just before it: "density to 0.7", "at 32",
# "a margin of 0.1", "--max-fanout 16". Other numbers ("step 2", "the 14 failing cells", "from 0.9")
# tell which or how many, and two fixes that differ in them can still be the same advice.
_SETTING_WORDS = frozenset({"to", "at", "=", "of", "by", "is", "as", "than"})
# Short words after a number that are not its unit ("32 before mapping" has none; "20 um" has one).
_NOT_UNITS = frozenset(
    {"a", "an", "and", "as", "at", "by", "for", "if", "in", "is", "of", "on", "or", "per", "so", "the", "to"}
)
# Words that turn a fix the other way: "Lower target density" is not "Raise target density". A closed set
# of English direction words, none taken from the evaluation logs' fixes.
_OPPOSITES = {
    frozenset(pair)
    for pair in (
        ("increase", "decrease"),
        ("increased", "decreased"),
        ("raise", "lower"),
        ("raised", "lowered"),
        ("higher", "lower"),
        ("more", "less"),
        ("more", "fewer"),
        ("larger", "smaller"),
        ("bigger", "smaller"),
        ("widen", "narrow"),
        ("loosen", "tighten"),
        ("relax", "tighten"),
        ("enable", "disable"),
        ("enabled", "disabled"),
        ("on", "off"),
        ("add", "remove"),
        ("added", "removed"),
        ("before", "after"),
        ("up", "down"),
        ("min", "max"),
        ("minimum", "maximum"),
        ("allow", "forbid"),
        ("keep", "drop"),
    )
}


def _sequence(text: str) -> list[str]:
    return [word.lower() for word in re.findall(r"[\w.%-]+", text)]


def names_other_things(a: str, b: str) -> bool:
    """True when one text names a thing (acronym, numbered name, identifier) where the other names
    another, the words around them alike ("on the USB PHY" / "on the DDR PHY"). A name the other text
    only spells out or leaves out ("after CTS" / "after clock tree synthesis", "ERROR:" in front) is not
    that, nor one that extends the other (`gf180` / `gf180mcu`, `x86` / `x86_64`)."""
    words_a, words_b = _sequence(a), _sequence(b)
    mine = {m.lower() for m in _MARKER.findall(a)} - set(words_b)
    theirs = {m.lower() for m in _MARKER.findall(b)} - set(words_a)
    for x in mine:
        for y in theirs:
            if x.startswith(y) or y.startswith(x):
                continue
            around_x = _around(words_a, x)
            if any(side and side in around_x for side in _around(words_b, y)):
                return True
    return False


def other_values(a: str, b: str) -> bool:
    """True when the two texts set one thing to other values: a setting (a number after `to`, `at`, `of`,
    `=`, ... or after an option) that both give under the same word, with no value in common: "density to
    0.5" / "to 0.7", "--max-fanout 32" / "--max-fanout 16", "20 um" / "20 nm". "20 um" and "20um" are one
    value; "from 0.9 to 0.7" / "from 0.85 to 0.7" set the same; "step 2" / "step 3" set nothing."""
    mine, theirs = _settings(a), _settings(b)
    return any(not (mine[key] & theirs[key]) for key in mine.keys() & theirs.keys())


def _settings(text: str) -> dict[str, set[tuple[float, str]]]:
    """The text's settings: the word (or option) before each, and the values given there with their units."""
    tokens = [token.lower() for token in _TOKEN.findall(text)]
    found: dict[str, set[tuple[float, str]]] = {}
    for n, token in enumerate(tokens):
        if n == 0 or not _NUMBER.fullmatch(token):
            continue
        before = tokens[n - 1]
        if before not in _SETTING_WORDS and not before.startswith("-"):
            continue
        after = tokens[n + 1] if n + 1 < len(tokens) else ""
        unit = (
            "%"
            if token.endswith("%")
            else after
            if after.isalpha() and len(after) <= 3 and after not in _NOT_UNITS
            else ""
        )
        found.setdefault(before, set()).add((float(token.rstrip("%")), unit))
    return found


def opposed(a: str, b: str) -> bool:
    """True when one text says a direction word where the other says its opposite ("Lower" / "Raise",
    "enable" / "disable"), or one negates what the other says, their other words mostly the same."""
    if negated_apart(a, b):
        return True
    words_a, words_b = _sequence(a), _sequence(b)
    only_a, only_b = set(words_a) - set(words_b), set(words_b) - set(words_a)
    turned = {word for x in only_a for y in only_b if frozenset((x, y)) in _OPPOSITES for word in (x, y)}
    if not turned:
        return False
    from difflib import SequenceMatcher

    left = [word for word in words_a if word not in turned]
    right = [word for word in words_b if word not in turned]
    return bool(left and right) and SequenceMatcher(None, left, right).ratio() >= NEGATION_OVERLAP


def _around(words: list[str], marker: str) -> set[tuple[str, str]]:
    """The words just before and just after each place `marker` stands, as ("before", w) / ("after", w)."""
    found: set[tuple[str, str]] = set()
    for n, word in enumerate(words):
        if word == marker:
            if n > 0:
                found.add(("before", words[n - 1]))
            if n + 1 < len(words):
                found.add(("after", words[n + 1]))
    return found


def negated_apart(a: str, b: str) -> bool:
    """True when one text says `not` (no, never, cannot ...) and the other does not, of something both
    say, their other words mostly the same: "IR drop exceeds 5%" and "IR drop does not exceed 5%" embed
    at 0.97 and say opposite things. "No module named yaml" beside "the yaml module is missing" says no
    such thing, nor "renames columns without a version bump" beside "renamed the column again": what it
    turns down (a version bump) the other never says."""
    negated, other = (a, b) if _NEGATION.search(a) else (b, a)
    if not _NEGATION.search(negated) or _NEGATION.search(other):
        return False
    from difflib import SequenceMatcher

    from memfiles.index.text import tokenize

    theirs = set(tokenize(other))
    # what each negation turns down: the first two words of weight after it
    if not any(set(tokenize(negated[m.end() :])[:2]) & theirs for m in _NEGATION.finditer(negated)):
        return False
    left, right = tokenize(_NEGATION.sub(" ", a)), tokenize(_NEGATION.sub(" ", b))
    return bool(left and right) and SequenceMatcher(None, left, right).ratio() >= NEGATION_OVERLAP


def _words(text: str) -> set[str]:
    from memfiles.index.text import tokenize

    return set(tokenize(text))


class Similarity:
    """Cosine of the bundled model's embeddings, cached per text; word overlap when there is no model."""

    def __init__(self, settings: Settings, use_model: bool = True) -> None:
        self.mode = "lexical"
        self.reason = ""
        self._vectors: dict[str, Any] = {}
        self._embedder: Any = None
        if use_model:
            try:
                from memfiles.index.embedder import NumpyBertEmbedder, load_embedder, resolve_model

                _, path = resolve_model(settings.model)
                if path is None or not NumpyBertEmbedder.supports(path):
                    raise ValueError(f"model {settings.model!r} is not a local BERT folder")
                self._embedder = load_embedder(settings.model, light=True)
                self.mode = "model"
            except Exception as error:  # no model: the distiller still works, on words
                self.reason = f"{type(error).__name__}: {error}"

    def prepare(self, texts: list[str]) -> None:
        """Embed every text not seen yet, in one batch."""
        if self._embedder is None:
            return
        todo = list(dict.fromkeys(t for t in texts if t and t not in self._vectors))
        if not todo:
            return
        try:
            vectors = self._embedder.encode(todo)
        except Exception as error:  # a broken model folder: fall back for the whole run
            self._embedder, self.mode, self.reason = None, "lexical", f"{type(error).__name__}: {error}"
            return
        self._vectors.update(zip(todo, vectors, strict=True))

    def score(self, a: str, b: str) -> float:
        if not a or not b:
            return 0.0
        if a.lower() == b.lower():
            return 1.0
        if self._embedder is not None:
            self.prepare([a, b])
            if self._embedder is not None:
                return float(self._vectors[a] @ self._vectors[b])
        left, right = _words(a), _words(b)
        return len(left & right) / len(left | right) if left and right else 0.0

    def threshold(self, level: str) -> float:
        return THRESHOLDS[level][0 if self.mode == "model" else 1]

    def same_fix(self, a: str, b: str) -> tuple[bool, float]:
        """Whether two fixes are the same advice: the same flag, or close in meaning; and the score.

        Neither is enough when they set a flag or a value to other values (`--max-fanout 32` / `16`,
        "density to 0.5" / "to 0.7") or turn it the other way ("Lower" / "Raise", "Do not pass --skip-io"
        / "Pass --skip-io"): a sentence encoder puts those at 0.83 to 0.99."""
        if not a and not b:
            return True, 1.0
        mine, theirs = find_flags(a), find_flags(b)
        shared = [f for f in mine for g in theirs if f.covers(g) or g.covers(f)]
        best = max([self.score(a, b)] + [self.score(a, part) for part in _sentences(b)])
        if other_values(a, b) or opposed(a, b):  # the same flag turned off, or set otherwise, is other advice
            return False, best
        if shared:
            return True, best
        return best >= self.threshold(SAME), best


def _sentences(text: str) -> list[str]:
    import re

    return [part for part in re.split(r"(?<=[.!?])\s+", text) if part and part != text]
