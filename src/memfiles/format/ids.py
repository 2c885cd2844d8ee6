"""The kinds and their prefixes and statuses, the Schema, and next-id allocation.

The id grammar itself (`D-476`) is format/grammar.py's; ID_RE and FULL_ID_RE are re-exported here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from memfiles.format.grammar import FULL_ID_RE, Grammar, grammar_for
from memfiles.format.grammar import ID_RE as ID_RE  # re-exported: callers import the id regexes from here

# Only ASCII letters change case when an id is read: "ß".upper() is "SS", which would invent a prefix.
_ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")

RETIRED = "retired"


@dataclass(frozen=True)
class Kind:
    """A kind of entry: its name, its id prefix, its status vocabulary (first is the default), its file."""

    name: str
    prefix: str
    statuses: tuple[str, ...]
    file: str

    @property
    def default_status(self) -> str:
        return self.statuses[0]


DEFAULT_KINDS: tuple[Kind, ...] = (
    Kind("decision", "D", ("proposed", "accepted", "superseded", RETIRED), "decisions.md"),
    Kind("friction", "F", ("open", "resolved", "wontfix", RETIRED), "frictions.md"),
    Kind("todo", "T", ("open", "done", "dropped", RETIRED), "todos.md"),
    Kind("lesson", "L", ("active", RETIRED), "lessons.md"),
    Kind("fact", "K", ("active", RETIRED), "facts.md"),
    Kind("procedure", "P", ("active", RETIRED), "procedures.md"),
    Kind("episode", "E", ("recorded", "promoted", RETIRED), "episodes.md"),
    Kind("insight", "I", ("active", RETIRED), "insights.md"),
    # Run-scoped working memory: memory/working/<run>.md, one state entry and one entry per todo.
    Kind("working", "W", ("active", "done", "blocked", "ended", RETIRED), "working/default.md"),
)
# Kinds a search leaves out unless asked for by name: run-scoped state is not reusable knowledge.
HIDDEN_KINDS: tuple[str, ...] = ("working",)


@dataclass(frozen=True)
class Schema:
    """What a project's entries may be: kinds, id width (`F-014` is 3), the title and body limits."""

    kinds: tuple[Kind, ...] = DEFAULT_KINDS
    id_width: int = 3
    title_limit: int = 120
    body_limit: int = 2000

    def rules_text(self) -> str:
        """The limits as every writer is told them (CLI help, import errors, the distiller's drafter)."""
        kinds = ", ".join(f"{kind.name} ({kind.prefix})" for kind in self.kinds)
        return (
            f"title: one line of at most {self.title_limit} characters; body: at most {self.body_limit}"
            f" characters; kinds: {kinds}; date: YYYY-MM-DD"
        )

    @property
    def prefixes(self) -> tuple[str, ...]:
        return tuple(kind.prefix for kind in self.kinds)

    @property
    def grammar(self) -> Grammar:
        """The entry-heading grammar for this schema's prefixes."""
        return grammar_for(self.prefixes)

    def kind(self, name_or_prefix: str) -> Kind | None:
        """The kind named `name_or_prefix`, or whose prefix it is; None when unknown."""
        for kind in self.kinds:
            if name_or_prefix in (kind.name, kind.prefix):
                return kind
        return None

    def kind_of(self, entry_id: str) -> Kind | None:
        match = FULL_ID_RE.match(entry_id)
        return self.kind(match.group(1)) if match else None

    @property
    def status_order(self) -> tuple[str, ...]:
        """Every status of every kind, in the order the kinds list them, retired last."""
        seen: dict[str, None] = {}
        for kind in self.kinds:
            for status in kind.statuses:
                if status != RETIRED:
                    seen.setdefault(status, None)
        seen.setdefault(RETIRED, None)
        return tuple(seen)


def split_id(entry_id: str) -> tuple[str, int]:
    """`("D", 476)` for `D-476`; ValueError for anything that is not an id."""
    match = FULL_ID_RE.match(entry_id)
    if not match:
        raise ValueError(f"not an id: {entry_id!r} (expected PREFIX-NUMBER, like D-476)")
    return match.group(1), int(match.group(2))


def format_id(prefix: str, number: int, width: int = 3) -> str:
    return f"{prefix}-{number:0{width}d}"


def canonical_id(entry_id: str, width: int = 3) -> str:
    prefix, number = split_id(entry_id)
    return format_id(prefix, number, width)


def is_id(text: str) -> bool:
    return FULL_ID_RE.match(text) is not None


def id_key(text: str) -> tuple[str, int] | None:
    """(prefix, number) of an id as a person or an agent types it, or None when it is not one.

    Any case, with or without the `@@` of a reference, with or without leading zeros: `d-1`, `@@D-001`,
    `D-0001` are all ("D", 1). The one place that reads ids given as input (commands, ops, tools, refs).
    """
    token = text.strip()
    token = token[2:] if token.startswith("@@") else token
    if not token.isascii():  # "ß".upper() is "SS": only ASCII letters may change case
        return None
    match = FULL_ID_RE.match(token.upper())
    return (match.group(1), int(match.group(2))) if match else None


def id_keys_in(text: str) -> list[tuple[str, int]]:
    """The (prefix, number) of every id named in free text (a search query), in order, each once: any
    case, `@@` or not, any number of leading zeros (`what broke in t-1 and @@D-0002?` names T-1 and D-2)."""
    keys: list[tuple[str, int]] = []
    for match in ID_RE.finditer(text.translate(_ASCII_UPPER)):
        key = (match.group(1), int(match.group(2)))
        if key not in keys:
            keys.append(key)
    return keys


def normalize_id(text: str, width: int = 3) -> str:
    """`text` as the id it means, in canonical form (`d-1` -> `D-001` with width 3); ValueError saying what
    an id looks like when it is not one."""
    key = id_key(text)
    if key is None:
        raise ValueError(f"{text.strip()!r} is not an id (PREFIX-NUMBER, like D-476)")
    return format_id(key[0], key[1], width)


def evidence_id(item: str, prefixes: Iterable[str], width: int = 3) -> str | None:
    """The entry an evidence item names, in canonical form, when it is an id of a known prefix in any
    spelling (`E-1`, `e-001` and `E-0001` are E-001, as everywhere ids are read); None otherwise (a run,
    a file, a commit). The write path stores such an item canonically; audit reads a hand-written one so."""
    key = id_key(item)
    return format_id(key[0], key[1], width) if key is not None and key[0] in prefixes else None


def same_id(a: str, b: str) -> bool:
    """True when `a` and `b` name the same id, however each is spelled (`D-2` and `D-002`)."""
    key = id_key(a)
    return key is not None and key == id_key(b)


class IdAllocator:
    """Hands out ids that were never used: one number space per prefix across the whole project."""

    def __init__(self, used_ids: Iterable[str], width: int = 3) -> None:
        self.width = width
        self._high: dict[str, int] = {}
        for entry_id in used_ids:
            try:
                prefix, number = split_id(entry_id)
            except ValueError:
                continue
            if number > self._high.get(prefix, 0):
                self._high[prefix] = number

    def next_id(self, prefix: str) -> str:
        number = self._high.get(prefix, 0) + 1
        self._high[prefix] = number
        return format_id(prefix, number, self.width)
