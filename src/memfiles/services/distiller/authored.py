"""The author's words kept: what the distiller writes from a log keeps its commands, flags and identifiers
as written, in code spans, and never re-cases them.

A record says "git config --system core.longpaths true" or "npm ci fails with EINTEGRITY"; a body that
reads "Fix: Git config ..." or "Npm ci fails ..." has changed a command. What counts as code:
- an option and its value (`--max-fanout 16`, `-j8`, `-n 4`);
- a word shaped like code: snake_case (`test_upload_retries`), a dotted or slashed name
  (`core.longpaths`, `app/models.py`), a call (`main()`), `a::b`, `KEY=value`, `$HOME`, a URL;
- a command the domain's log names: the first word of a record's `tool` (`npm 10.2`), of a backtick
  span, or of a command written with its options (services/distiller/flags.py) anywhere in the log; with the
  words the log writes after it before its options (`go test`), or else the one word after it that
  reads as a subcommand (`npm ci`, `git clone`; not "mypy reports", a verb of prose). A command the
  log never marks as one (no backticks, no options, no `tool`) is left as written, unspanned.

A run of these (with an option's number, and `true` or `false` after a setting) is one code span. A
sentence's first letter is upper-cased only when its first word is a plain word of prose that the log
itself writes with a capital somewhere ("the linker ..." becomes "The linker ..." in a log that says
"The"): never a code span, a command, a word with a digit (`sky130`) or a capital inside (`macOS`),
nor a word the author never capitalised. A CamelCase or all-caps name (`TimeoutError`,
`EINTEGRITY`) is left as written, unspanned: it cannot be re-cased.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from memfiles.format.wrap import one_line
from memfiles.services.distiller.flags import find_flags

_BACKTICK_SPAN = re.compile(r"`[^`\n]*`")
_OPTION = re.compile(r"^--?[A-Za-z][\w.-]*(?:=\S+)?$")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?[a-zA-Z%]{0,3}$")
# Words shaped like code: snake_case, a dotted name with letters (`core.longpaths`, `setup.cfg`), a call,
# `a::b`, KEY=value, $VAR, a dotfile (`.nvmrc`). Not "e.g." nor "0.5" nor "v1.2".
_CODE = re.compile(
    r"^(?:\$\w+|(?=[\w.-]*?[A-Za-z])[\w.-]*+\(\)|\w+(?:::\w+)+|[A-Za-z_][\w.-]*=\S+|\.[A-Za-z][\w.-]*"
    r"|[\w-]*[A-Za-z0-9]_[\w-]*|[\w-]*[A-Za-z0-9](?:\.[A-Za-z][\w-]*)+)$"
)
# A path: slashes, and something no pair of words has ("and/or", "I/O", "pass/fail"): a start at / . ~,
# a closing /, three parts or more, or a part that is a file name or holds _ (`app/models.py`).
_PATH = re.compile(r"^[\w.~-]*/[\w./-]*$")
_URL = re.compile(r"^(?:https?|ftps?)://\S+$")
_ABBREVIATION = re.compile(r"^(?:[A-Za-z]\.)+[A-Za-z]?$")  # e.g, i.e, U.S
_PLAIN = re.compile(r"^[a-z][a-z0-9-]*$")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")  # "The", "Docker": a word the author writes with a capital
# After a setting (`core.longpaths true`); "on" and "no" are words of prose as often.
_VALUE_WORDS = frozenset({"true", "false"})
_LEADING = "([{\"'"
_TRAILING = ".,;:!?)]}\"'"


@dataclass(frozen=True)
class Vocabulary:
    """The commands a domain's log names (lower case), the words it writes after each before options,
    and the words it writes with a capital (lower case)."""

    commands: frozenset[str] = frozenset()
    phrases: frozenset[tuple[str, ...]] = field(default_factory=frozenset)
    capitalised: frozenset[str] = frozenset()


NO_VOCABULARY = Vocabulary()


def vocabulary(texts: Iterable[str], tools: Iterable[str] = ()) -> Vocabulary:
    """Learn the commands of a log from its texts (backtick spans, commands with options) and tools."""
    commands: set[str] = set()
    phrases: set[tuple[str, ...]] = set()
    capitalised: set[str] = set()
    for tool in tools:
        words = tool.split()
        if words and _PLAIN.match(words[0].lower()):
            commands.add(words[0].lower())
    for text in texts:
        capitalised.update(w.lower() for w in _CAPITALISED.findall(_BACKTICK_SPAN.sub(" ", text)))
        for span in _BACKTICK_SPAN.findall(text):
            words = span.strip("`").split()
            head = _head(words)
            if head:
                commands.add(head[0])
                phrases.add(tuple(head))
        for flag in find_flags(text):
            if flag.command:
                words = flag.command.split()
                if all(_PLAIN.match(w) for w in words):
                    commands.add(words[0])
                    phrases.add(tuple(words))
    return Vocabulary(frozenset(commands), frozenset(phrases), frozenset(capitalised))


def _head(words: list[str]) -> list[str]:
    """The command words a command line starts with (before its first option or argument)."""
    head = []
    for word in words[:3]:
        if not _PLAIN.match(word):
            break
        head.append(word)
    return head


def _split(token: str) -> tuple[str, str, str]:
    """(leading punctuation, the word, trailing punctuation); a call keeps its parentheses (`main()`)."""
    core = token.lstrip(_LEADING)
    word = core.rstrip(_TRAILING)
    if word.endswith("(") and core[len(word) :].startswith(")"):
        word += ")"
    return token[: len(token) - len(core)], word, core[len(word) :]


def is_code(word: str) -> bool:
    """A word shaped like code (not a command name: that needs the log)."""
    if not word or _ABBREVIATION.match(word) or _NUMBER.match(word):
        return False
    if _URL.match(word):
        return True
    if _PATH.match(word):
        parts = word.split("/")
        return word[0] in "/.~" or word.endswith("/") or len(parts) > 2 or any(_CODE.match(part) for part in parts)
    return bool(_OPTION.match(word) or _CODE.match(word))


def code_spans(text: str, vocab: Vocabulary = NO_VOCABULARY) -> str:
    """`text` with its commands, flags and identifiers in code spans; spans already there kept."""
    out: list[str] = []
    last = 0
    for match in _BACKTICK_SPAN.finditer(text):
        out.append(_spans(text[last : match.start()], vocab))
        out.append(match.group(0))
        last = match.end()
    out.append(_spans(text[last:], vocab))
    return "".join(out)


def _spans(text: str, vocab: Vocabulary) -> str:
    parts = re.split(r"(\s+)", text)
    tokens, gaps = parts[0::2], [*parts[1::2], ""]
    kinds = _kinds(tokens, vocab)
    pieces: list[str] = []
    n = 0
    while n < len(tokens):
        end = n
        if kinds[n]:
            # one span over a run of code, unless punctuation parts it ("-j8, then --retries 3")
            while (
                end + 1 < len(tokens)
                and kinds[end + 1]
                and not _split(tokens[end])[2]
                and not _split(tokens[end + 1])[0]
            ):
                end += 1
            lead, tail = _split(tokens[n])[0], _split(tokens[end])[2]
            inner = "".join(token + gap for token, gap in zip(tokens[n : end + 1], [*gaps[n:end], ""], strict=True))
            pieces.append(f"{lead}`{inner[len(lead) : len(inner) - len(tail)]}`{tail}")
        else:
            pieces.append(tokens[n])
        pieces.append(gaps[end])
        n = end + 1
    return "".join(pieces)


def _kinds(tokens: list[str], vocab: Vocabulary) -> list[str | None]:
    """What each token is: 'code' (part of a code span) or None (prose)."""
    words = [_split(t)[1] for t in tokens]
    kinds: list[str | None] = [None] * len(tokens)
    n = 0
    while n < len(words):
        word = words[n]
        if word.lower() == word and word in vocab.commands and _PLAIN.match(word):
            kinds[n] = "code"
            # the words the log writes after this command (`npm ci`), or up to two before an option
            longest = max(
                (len(p) for p in vocab.phrases if p[0] == word and tuple(words[n : n + len(p)]) == p), default=1
            )
            for k in range(n + 1, n + longest):
                kinds[k] = "code"
            after = n + longest
            optioned = False
            for k in range(after, min(after + 2, len(words) - 1)):
                if not _PLAIN.match(words[k]) or _split(tokens[k])[2] or _PROSE_AFTER.match(words[k]):
                    break  # "synth with -noflatten": `with` is prose
                if _OPTION.match(words[k + 1]) or is_code(words[k + 1]):
                    for j in range(after, k + 1):
                        kinds[j] = "code"
                    optioned = True
                    break
            if not optioned and longest == 1 and _subcommand(words, tokens, n + 1):
                kinds[n + 1] = "code"  # `npm ci` fails, `git clone` on ..., but not `mypy` reports
            n += 1
            continue
        if is_code(word):
            kinds[n] = "code"
            # an option's value, or a value word after code (`core.longpaths true`)
            following = words[n + 1] if n + 1 < len(words) else ""
            option = _OPTION.match(word)
            valued = (option and _NUMBER.match(following)) or (not option and following in _VALUE_WORDS)
            if following and not _split(tokens[n])[2] and valued:
                kinds[n + 1] = "code"
                n += 1
        n += 1
    return kinds


# Words after a command that are prose, not a subcommand: "mypy reports", "helm silently keeps".
_PROSE_AFTER = re.compile(
    r"^(?:.*(?:s|ed|ing|ly)|a|an|the|on|in|at|of|for|to|with|using|via|from|by|is|was|and|or|but|plus|then)$"
)


def _subcommand(words: list[str], tokens: list[str], at: int) -> bool:
    """Whether the word at `at`, right after a command, is its subcommand (`ci` of `npm ci`): a plain
    lower-case word, no punctuation before it, not a word of prose (a verb in -s or -ed, a preposition)."""
    if at >= len(words) or _split(tokens[at - 1])[2] or _split(tokens[at])[0]:
        return False
    return bool(_PLAIN.match(words[at])) and not _PROSE_AFTER.match(words[at])


def sentence(text: str, vocab: Vocabulary = NO_VOCABULARY, spans: bool = False) -> str:
    """One line, no closing full stop, the first letter upper-cased when the first word is a word of
    prose the log writes with a capital (never code, a command of the log, a word with a digit or an
    inner capital); with `spans`, commands, flags and identifiers in code spans (for a body: a title
    keeps the words as they were written)."""
    text = one_line(text).rstrip(".;:, ")
    if spans:
        text = code_spans(text, vocab)
    if not text or text.startswith("`"):
        return text
    first = _split(text.split(" ", 1)[0])[1]
    if not first[:1].islower() or not _prose_word(first, vocab):
        return text
    return text[:1].upper() + text[1:]


def _prose_word(word: str, vocab: Vocabulary) -> bool:
    """True when upper-casing the word's first letter changes no name: a plain word the log writes with a
    capital elsewhere, not a command."""
    return (
        word.isalpha()
        and word[1:].lower() == word[1:]
        and word in vocab.capitalised
        and word not in vocab.commands
        and not is_code(word)
    )


def title(text: str, vocab: Vocabulary, limit: int) -> str:
    """A title from the log's words: as `sentence` writes it without code spans, clipped to `limit`,
    but for its URLs, which a title may not hold bare (the lint rule set's md034): each in a code span."""
    from memfiles.format.wrap import clip

    text = sentence(text, vocab)
    urls = sum(1 for word in text.split() if _URL.match(_split(word)[1]))
    if not urls:
        return clip(text, limit)
    words = clip(text, limit - 2 * urls).split(" ")
    return " ".join(_spans(word, vocab) if _URL.match(_split(word)[1]) else word for word in words)


def plain(text: str) -> str:
    """The text without code-span backticks: what a span says, for comparing it with a log's words."""
    return _BACKTICK_SPAN.sub(lambda m: m.group(0)[1:-1], text)
