"""Tool flags named in experience records and knowledge entries: what counts as one, and when two agree.

A flag is a command-line option a run used. A long option on its own (`--max-fanout 16`) is a flag; a
single-dash option is an option of a command (`-setup` of `set_clock_gating_check`) and only counts
with its command (`set_clock_gating_check -setup`). A backtick-quoted command counts whole (`abc -D
1250`). Two uses are the same flag when the command matches and the entry's options (with their
numeric values: `--max-fanout 16` is not `--max-fanout 32`, but `--max-fanout` is either) are all
among the run's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BACKTICK = re.compile(r"`([^`\n]{2,100})`")
_OPTION = re.compile(r"^(--?[A-Za-z][\w-]*)(?:=(\S+))?$")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?(?:[a-zA-Z%]{0,3})?$")
# A word written like a command: snake_case (set_clock_groups, repair_timing) or a dotted tool name.
_COMMAND = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
_PLAIN_WORD = re.compile(r"^[a-z][a-z0-9]*$")
# Words between a command and its option in prose ("run synth with -noflatten").
_CONNECTORS = frozenset({"with", "using", "via", "and", "plus", "or"})
# Words after which a plain word names a command ("run synth ...", "used abc ...").
_LAUNCH = frozenset({"run", "ran", "runs", "running", "rerun", "use", "used", "uses", "using", "call", "called"})
_STRIP = ".,;:()[]{}\"'"


@dataclass(frozen=True)
class Flag:
    """One use of a flag: the command (None for a long option on its own), its options, the text as written."""

    command: str | None
    options: frozenset[str]  # "--max-fanout 16", "-noflatten": the option with its numeric value, if any
    text: str

    @property
    def key(self) -> str:
        """A stable name for the flag: the command, then its options in order."""
        return " ".join(([self.command] if self.command else []) + sorted(self.options))

    def covers(self, other: Flag) -> bool:
        """True when a run that used `other` used this flag: the same command (a long option on its own
        goes with any command: `--skip-io` covers `global_placement --skip-io`) and at least these options."""
        same_command = self.command is None or self.command == other.command
        return same_command and bool(self.options) and all(_has(other.options, o) for o in self.options)


def _has(options: frozenset[str], option: str) -> bool:
    """An option without a value (`--droute-end-iter`) is there whatever value the run gave it."""
    return option in options or (" " not in option and any(o.split(" ", 1)[0] == option for o in options))


def _option(token: str) -> tuple[str, str | None] | None:
    match = _OPTION.match(token)
    if not match or match.group(1).startswith("---"):
        return None
    return match.group(1), match.group(2)


def _value(token: str, quoted: bool) -> bool:
    """Whether `token` after an option is its value: a number, or anything but an option inside backticks."""
    if _option(token):
        return False
    return bool(_NUMBER.match(token)) or (quoted and bool(token))


def _scan(text: str, quoted: bool) -> list[Flag]:
    tokens = [token.strip(_STRIP) for token in text.split()]
    tokens = [token for token in tokens if token]
    found: list[Flag] = []
    command: str | None = None
    options: list[str] = []
    start = 0
    position = 0

    def close(end: int) -> None:
        if options and (command or any(o.startswith("--") for o in options)):
            if command is None:
                # Long options without a command are flags each on their own.
                for option in options:
                    if option.startswith("--"):
                        found.append(Flag(None, frozenset({option}), option))
            else:
                written = " ".join(tokens[start:end]) if quoted else " ".join([command, *options])
                found.append(Flag(command, frozenset(options), written))
        options.clear()

    while position < len(tokens):
        token = tokens[position]
        parsed = _option(token)
        if parsed is None:
            position += 1
            continue
        if not options:
            command, start = _owner(tokens, position, quoted)
        name, value = parsed
        end = position + 1
        if value is None and end < len(tokens) and _value(tokens[end], quoted):
            value = tokens[end]
            end += 1
        options.append(f"{name} {value}" if value is not None and _NUMBER.match(value) else name)
        position = end
        if position >= len(tokens) or not _option(tokens[position]):
            close(position)
    return found


def _owner(tokens: list[str], position: int, quoted: bool) -> tuple[str | None, int]:
    """The command an option at `position` belongs to, and where that command starts; (None, position)."""
    if quoted and position > 0 and not _option(tokens[0]):
        return tokens[0], 0
    back = position - 1
    if back >= 0 and tokens[back].lower() in _CONNECTORS:
        back -= 1
    if back < 0:
        return None, position
    word = tokens[back]
    if _COMMAND.match(word):
        return word, back
    if _PLAIN_WORD.match(word) and back > 0 and tokens[back - 1].lower() in _LAUNCH:
        return word, back
    return None, position


# A word that turns what follows it down: "Do not pass --skip-io" uses no flag (matching.py reads the same).
NEGATION = re.compile(r"\b(?:not|no|never|cannot|without|none|\w+n't)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.;!?])\s+")


_CLAUSE = re.compile(r"[,;:]|\b(?:so|but|then|because|after|once)\b", re.IGNORECASE)
_FLAG_TOKEN = re.compile(r"`[^`]*`|(?<![\w-])--?\w[\w.=/-]*")


def _where(part: str, flag: Flag) -> int:
    """Where `flag` stands in `part` (its text, else the first of its options found), 0 when unsure."""
    found = [part.find(text) for text in (flag.text, *(option.split()[0] for option in flag.options))]
    return min((at for at in found if at >= 0), default=0)


def used_flags(text: str) -> list[Flag]:
    """The flags `text` says were used: those of find_flags, less any that a negation turns down in its
    own clause ("Do not cap fanout with --max-fanout 16" used none; "the default did not close, so we
    used --max-fanout 16" and "pass --no-retime and --max-fanout 16" used theirs)."""
    used = []
    for part in _SENTENCE_END.split(text):
        masked = _FLAG_TOKEN.sub(lambda m: " " * len(m.group(0)), part)  # `--no-retime` holds no negation
        for flag in find_flags(part):
            where = _where(part, flag)
            clause = max((m.end() for m in _CLAUSE.finditer(masked, 0, where)), default=0)
            if NEGATION.search(masked, clause, where) is None:
                used.append(flag)
    return general(used)


def find_flags(text: str) -> list[Flag]:
    """Every flag used in `text`: backtick-quoted commands first, then options written in prose."""
    found = [flag for fragment in _BACKTICK.findall(text) for flag in _scan(fragment, quoted=True)]
    found += _scan(_BACKTICK.sub(" ", text), quoted=False)
    return general(found)


def general(found: list[Flag]) -> list[Flag]:
    """The flags without repeats. One use named twice (`synth -top core -noflatten` in the notes, "synth
    with -noflatten" in the fix) is one flag: the general form, which later runs confirm whatever they add."""
    unique: dict[str, Flag] = {}
    for flag in found:
        unique.setdefault(flag.key, flag)
    flags = list(unique.values())
    return [f for f in flags if not any(g is not f and g.covers(f) and g.command == f.command for g in flags)]
