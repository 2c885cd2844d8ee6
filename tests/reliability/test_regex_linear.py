"""Every regular expression of the package that reads text from a user, an agent or a file runs in time
linear in the text: the systematic check of issue 34.

The patterns are collected, not listed: every compiled pattern at module level in memfiles, the
patterns a Grammar builds for the
default kinds, the default `hooks_risky` patterns, and those made per id (renumber, references). Each
is run over every hostile shape of tests/reliability/hostile.py (runs of one character, joined pieces,
the line starts of memory files, logs and errors followed by a run). A shape that costs more than a
millisecond at 1,000 characters is a suspect (a linear pattern takes microseconds there); a suspect
must cost at most 20x as much at 10,000 characters as at 1,000 (linear: about 10x; a pattern that
rescans the input from each position: about 100x). The cost is a ratio measured in the same run.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import memfiles
from tests.reliability.hostile import best_time, hostile

SMALL, LARGE = 1_000, 10_000
SUSPECT = 0.001  # seconds at SMALL characters: a linear pattern takes microseconds
LIMIT = 20.0  # 10x the characters: linear is ~10x, quadratic ~100x


def module_patterns() -> dict[str, re.Pattern[str]]:
    """Every compiled str pattern at module level in memfiles, by dotted name."""
    found: dict[str, re.Pattern[str]] = {}
    for module in pkgutil.walk_packages(memfiles.__path__, "memfiles."):
        name = module.name
        if name.endswith("__main__"):
            continue
        loaded = importlib.import_module(name)
        for attribute, value in vars(loaded).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                found[f"{name}.{attribute}"] = value
    return found


def built_patterns() -> dict[str, re.Pattern[str]]:
    """The patterns memfiles builds at run time from settings and ids, for the defaults."""
    from memfiles.config import HOOKS_RISKY
    from memfiles.format.grammar import Grammar, headings_of
    from memfiles.format.ids import Schema
    from memfiles.lsp.workspace import bare_id_pattern
    from memfiles.services.distiller.knowledge import mention_pattern
    from memfiles.store.renumber import id_token

    grammar = Grammar(Schema().prefixes)
    found = {f"Grammar.{name}": value for name, value in vars(grammar).items() if isinstance(value, re.Pattern)}
    found["headings_of"] = headings_of(["D-001", "F-002"])
    found["renumber.id_token"] = id_token("D-001")
    found["workspace.bare_id_pattern"] = bare_id_pattern("D-001")
    found["knowledge.mention_pattern"] = mention_pattern("sta-0144")
    found.update({f"hooks_risky[{n}]": re.compile(p, re.IGNORECASE) for n, p in enumerate(HOOKS_RISKY)})
    return found


PATTERNS = {**module_patterns(), **built_patterns()}


def _cost(pattern: re.Pattern[str], text: str) -> float:
    def run() -> None:
        for _ in pattern.finditer(text):
            pass
        pattern.fullmatch(text)

    return best_time(run, repeats=2)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern_is_linear(name: str) -> None:
    """The pattern costs at most 20x as much on 10,000 characters of any hostile shape as on 1,000."""
    pattern = PATTERNS[name]
    large = hostile(LARGE)
    slow = []
    for shape, text in hostile(SMALL).items():
        small_cost = _cost(pattern, text)
        if small_cost < SUSPECT:
            continue
        large_cost = _cost(pattern, large[shape])
        if large_cost > LIMIT * small_cost:
            slow.append(f"{shape}: {small_cost * 1000:.2f} ms -> {large_cost * 1000:.1f} ms")
    assert not slow, f"{name} ({pattern.pattern!r}) grows faster than the text: " + "; ".join(slow[:5])


def test_every_pattern_is_collected() -> None:
    """The scan sees the patterns issue 34 found quadratic, and the line patterns of the format."""
    for expected in (
        "memfiles.index.search._CODE_LIKE",
        "memfiles.services.agents.failures._PATH",
        "memfiles.services.agents.failures._TYPED_ERROR",
        "memfiles.format.grammar._ANY_ENTRY_RE",
        "memfiles.format.toc._ATX_HEADING",
        "Grammar._stray",
    ):
        assert expected in PATTERNS
