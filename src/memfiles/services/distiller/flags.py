"""Tool flags named in experience records and knowledge entries: what counts as one, and when two agree.

A flag is a command-line option a run used. A long option on its own (`--max-fanout 16`) is a flag, and
so is a one-letter option with a value (`-n 4`, `-j8`, `-O2`: how build and test tools are told how
many jobs or which level); any other single-dash option is an option of a command (`-setup` of
`set_clock_gating_check`) and only counts with its command (`set_clock_gating_check -setup`). A
backtick-quoted command counts whole (`abc -D 1250`), and so does a command a sentence starts with, with
its short options (`pytest -n 4`, `go test -race`), or with a subcommand (`git config --system`). Two
uses are the same flag when the command matches and the entry's options (with their numeric values:
`--max-fanout 16` is not `--max-fanout 32`, `-j8` is `-j 8`, but `--max-fanout` is either) are all
among the run's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BACKTICK = re.compile(r"`([^`\n]{2,100})`")
_OPTION = re.compile(r"^(--?[A-Za-z][\w-]*)(?:=(\S+))?$")
# A one-letter option with its value glued on: `-j8`, `-O2`, `-n4` (read as `-j 8`, `-O 2`, `-n 4`).
_GLUED = re.compile(r"^(-[A-Za-z])(\d+(?:\.\d+)?[a-zA-Z%]{0,3})$")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?(?:[a-zA-Z%]{0,3})?$")
# A word written like a command: snake_case (set_clock_groups, repair_timing) or a dotted tool name.
_COMMAND = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
_PLAIN_WORD = re.compile(r"^[a-z][a-z0-9]*$")
# Words between a command and its option in prose ("run synth with -noflatten").
_CONNECTORS = frozenset({"with", "using", "via", "and", "plus", "or"})
# Words after which a plain word names a command ("run synth ...", "used abc ...", "build with make -j8").
_LAUNCH = frozenset(
    {"run", "ran", "runs", "running", "rerun", "use", "used", "uses", "using", "call", "called", "with", "via"}
)
# Words a sentence may start with that are not a command, even right before an option ("then -n 4").
_NOT_COMMANDS = frozenset(
    {"a", "an", "the", "then", "and", "or", "so", "but", "we", "it", "this", "that", "also", "only", "just", "now"}
)
# Subcommand words a command line may hold before its first option (`go test -race`).
_SUBCOMMANDS = 2
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
    glued = _GLUED.match(token)
    if glued:
        return glued.group(1), glued.group(2)
    match = _OPTION.match(token)
    if not match or match.group(1).startswith("---"):
        return None
    return match.group(1), match.group(2)


def _stands_alone(option: str) -> bool:
    """A long option, or a one-letter option with a number (`-n 4`, `-j 8`): a flag without its command."""
    return option.startswith("--") or (len(option.split(" ", 1)[0]) == 2 and " " in option)


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
    written: list[str] = []  # each option as the text writes it (`-j8`, not `-j 8`)
    start = 0
    position = 0

    def close(end: int) -> None:
        if options and (command or any(_stands_alone(o) for o in options)):
            if command is None:
                # Long options (and one-letter ones with a value) without a command are flags on their own.
                for option, text in zip(options, written, strict=True):
                    if _stands_alone(option):
                        found.append(Flag(None, frozenset({option}), text))
            else:
                text = " ".join(tokens[start:end]) if quoted else " ".join([command, *written])
                found.append(Flag(command, frozenset(options), text))
        options.clear()
        written.clear()

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
        option = f"{name} {value}" if value is not None and _NUMBER.match(value) else name
        options.append(option)
        # a long option reads as its normal form (`--x=1` as `--x 1`); a short one as written (`-j8`)
        written.append(option if name.startswith("--") else " ".join(tokens[position:end]))
        position = end
        if position >= len(tokens) or not _option(tokens[position]):
            close(position)
    return found


def _owner(tokens: list[str], position: int, quoted: bool) -> tuple[str | None, int]:
    """The command an option at `position` belongs to, and where that command starts; (None, position)."""
    if quoted and position > 0 and not _option(tokens[0]):
        # `git config --system`: the command and the subcommand words before its first option, as a
        # command line in prose is read (`synth -top core` is `synth`: `-top` comes first)
        words = [tokens[0]]
        for word in tokens[1:position]:
            if len(words) > _SUBCOMMANDS or not _PLAIN_WORD.match(word) or word in _CONNECTORS:
                break
            words.append(word)
        if len(words) == position:
            return " ".join(words), 0
        return tokens[0], 0
    # A command a sentence starts with owns its short options (`pytest -n 4`, `go test -race`), and its
    # long ones when it has a subcommand (`git config --system`); one word before a long option is a
    # verb of prose as often as a command ("pass --no-retime"), and the option stands alone.
    line = _command_line(tokens, position)
    if line is not None and (not tokens[position].startswith("--") or " " in line[0]):
        return line
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


def _command_line(tokens: list[str], position: int) -> tuple[str, int] | None:
    """The command a text starts with, right before the option at `position` (`pytest -n 4`, `go test
    -race`, "build with make -j8"): one to three lower-case words, the first not a word of prose."""
    first = max(0, position - 1 - _SUBCOMMANDS)
    for start in range(first, position):
        words = tokens[start:position]
        at_start = start == 0 or tokens[start - 1].lower() in _LAUNCH
        if (
            at_start
            and words[0] not in _NOT_COMMANDS
            and words[0] not in _LAUNCH
            and all(_PLAIN_WORD.match(word) and word not in _CONNECTORS for word in words)
        ):
            return " ".join(words), start
    return None


# A word that turns what follows it down: "Do not pass --skip-io" uses no flag (matching.py reads the same).
NEGATION = re.compile(r"\b(?:not|no|never|cannot|without|none|\w+n't)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.;!?])\s+")


# What turns a flag down besides a negation: "Build with -j2 instead of -j8" did not use `-j8`.
_REPLACED = re.compile(r"\b(?:instead of|rather than|in place of)\b", re.IGNORECASE)
_CLAUSE = re.compile(r"[,;:]|\b(?:so|but|then|because|after|once)\b", re.IGNORECASE)
_FLAG_TOKEN = re.compile(r"`[^`]*`|(?<![\w-])--?\w[\w.=/-]*")


def _where(part: str, flag: Flag) -> int:
    """Where `flag` stands in `part` (its text, else the first of its options found), 0 when unsure."""
    if (at := part.find(flag.text)) >= 0:  # as written: `-j` of `-j8` is found in `-j2` before it
        return at
    found = [part.find(option.split()[0]) for option in flag.options]
    return min((at for at in found if at >= 0), default=0)


def used_flags(text: str) -> list[Flag]:
    """The flags `text` says were used: those of find_flags, less any that a negation or "instead of"
    turns down in its own clause ("Do not cap fanout with --max-fanout 16" used none; "Build with -j2
    instead of -j8" used `-j2`; "the default did not close, so we used --max-fanout 16" and "pass
    --no-retime and --max-fanout 16" used theirs)."""
    used = []
    for part in _SENTENCE_END.split(text):
        masked = _FLAG_TOKEN.sub(lambda m: " " * len(m.group(0)), part)  # `--no-retime` holds no negation
        for flag in find_flags(part):
            where = _where(part, flag)
            clause = max((m.end() for m in _CLAUSE.finditer(masked, 0, where)), default=0)
            if NEGATION.search(masked, clause, where) is None and _REPLACED.search(masked, clause, where) is None:
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
