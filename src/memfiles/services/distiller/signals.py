"""Every piece of evidence that a record's finding is an entry's, and how they are weighed together.

A finding (a symptom, a fix, the run's tool and area) is compared with each entry of its section on four
signals, each shown per decision by `distil --explain`:

- **meaning**: the cosine of the two symptoms (the bundled model; word overlap without it), against the
  entry's closest symptom (its title, its bold lead, the wordings of the runs filed on it). When the fix
  is the same, the words the fix itself holds are left out of both symptoms first: two symptoms of one
  object share its fix's words ("... in the branch predictor" / "Add a pipeline stage to the branch
  predictor") without being one symptom.
- **fix**: the record's fix is one the entry records (its own, one its runs used, one that contradicted
  it), identical or near-identical (matching.Similarity.same_fix).
- **rare**: both name an identifier (a test or function name, an error code, a file, a flag) that at
  most RARE_DF entries of the section name; the run's tool (`ESLint` of eslint) is not one.
- **same place** and **other place**: the run's tool (`tool` of the record, its version left out) and
  area (`area`, `component`, `service`, `stage`, `module`) against those of the entry's runs. The same
  place is what the most telling field that agrees tells: 1 less the share of the log's runs that have
  its value (a tool every run uses tells nothing); counted once, not once a field, since a tool and a
  stage go together (onnx and export: counted twice, they filed "ONNX export fails on the custom
  attention op" on "CUDA out of memory while exporting the model to ONNX"). The other place is the
  share of the fields both give that differ: a run's tool can follow from its fix (certbot, then
  cert-manager), so it has a weight of its own. Where a run ran (`job`, runner, host, branch) is no
  part of either: one job meets many failures.

score = meaning + fix x FIX + rare x RARE + same place x SAME - other place x OTHER; the entry with the
highest score takes the finding when it reaches THRESHOLD (0.80: STS-B's "the same statement", see
matching.py; 0.60 for word overlap), so that a symptom worded the same way is filed there on its
meaning alone, and one worded otherwise needs the rest of the evidence to make up the difference.
Two guards stay rules: symptoms that name different things in the same place score nothing
(matching.names_other_things), and a symptom one negates takes the entry only with the same fix
(matching.negated_apart).

The weights are read off a grid on labelled logs (scripts/distil_fit.py says how): `python
scripts/eval_distil.py --fit` prints those chosen on every domain (the ones below), and `python
scripts/eval_distil.py` reports each domain distilled with the weights chosen without it
(docs/distiller.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memfiles.services.distiller.matching import names_other_things, negated_apart

if TYPE_CHECKING:
    from memfiles.services.distiller.knowledge import Known
    from memfiles.services.distiller.matching import Similarity


@dataclass(frozen=True)
class Weights:
    """How much each signal adds to the meaning, and the score that files a finding on an entry."""

    fix: float
    rare: float
    same: float  # the same place (tool or area)
    other: float  # another place
    threshold: float

    def as_json(self) -> dict[str, float]:
        return {"fix": self.fix, "rare": self.rare, "same": self.same, "other": self.other, "threshold": self.threshold}


# `python scripts/eval_distil.py --fit` on all eight labelled domains (eval/distil), rounded to 0.01.
WEIGHTS = {
    "model": Weights(fix=0.50, rare=0.05, same=0.20, other=0.00, threshold=0.80),
    "lexical": Weights(fix=0.55, rare=0.20, same=0.30, other=0.00, threshold=0.60),
}
# An identifier is rare when at most this many entries of the section name it.
RARE_DF = 2
# The fields of a record that say what the run worked with (tool) and on (area); where it ran (job,
# runner, host, branch) says little about which failure it met.
TOOL_KEYS = ("tool",)
AREA_KEYS = ("area", "component", "service", "stage", "module")
WHERE_KEYS = TOOL_KEYS + AREA_KEYS

_EDGES = ".,;:()[]{}<>\"'`*!?"
# EINTEGRITY, ENOSPC, SIGKILL, EAI_AGAIN; not an acronym of four letters or fewer (NCCL, CUDA, HTTP)
_SHOUTED = re.compile(r"^(?:[A-Z][A-Z\d]{4,}|[A-Z][A-Z\d]*_[A-Z\d_]+)$")  # a word, not an entry id
_NUMBERED = re.compile(r"^[A-Za-z][A-Za-z-]*\d[\w-]*$")  # E501, sky130, ORA-00942, TS2345


def identifiers(text: str) -> set[str]:
    """The code-like words of a text (lower case): test and function names, error codes, files, flags."""
    from memfiles.index.text import code_like

    found = set()
    for word in text.split():
        token = word.strip(_EDGES)
        if len(token) >= 3 and (code_like(token) or _SHOUTED.match(token) or _NUMBERED.match(token)):
            found.add(token.lower())
    return found


def where_of(context: dict[str, Any]) -> dict[str, str]:
    """A record's tool and area, by field, without versions (`pytest 8.1` is `pytest`)."""
    found = {}
    for key in WHERE_KEYS:
        value = context.get(key)
        if isinstance(value, str):
            words = [w for w in value.lower().split() if not any(c.isdigit() for c in w)]
            if words:
                found[key] = " ".join(words)
    return found


@dataclass
class Signals:
    """The evidence that a finding is one entry's, each signal with what it rests on."""

    known: Known
    meaning: float = 0.0
    symptom: str = ""  # the entry's symptom it was compared with
    without: list[str] = field(default_factory=list)  # the fix's words left out of both symptoms
    same_fix: str | None = None  # the entry's fix the record's agrees with
    fix_score: float | None = None  # how close the record's fix is to the entry's closest one
    rare: list[str] = field(default_factory=list)
    where: dict[str, float] = field(default_factory=dict)  # field -> 1 - the value's share, or -1
    guard: str | None = None  # why the entry cannot take the finding whatever the score
    needs_fix: bool = False  # a negated symptom: only the same fix files it here

    def same_place(self) -> float:
        """The most a field that agrees tells (1 less its value's share of the log's runs); 0 for none."""
        return max((v for v in self.where.values() if v >= 0), default=0.0)

    def other_place(self) -> float:
        """The share of the fields both give that differ."""
        return sum(v < 0 for v in self.where.values()) / len(self.where) if self.where else 0.0

    def features(self) -> list[float]:
        """[meaning, fix, rare, same place, other place]: what the weights multiply (scripts/distil_fit.py)."""
        return [
            self.meaning,
            float(self.same_fix is not None),
            float(bool(self.rare)),
            self.same_place(),
            self.other_place(),
        ]

    def score(self, weights: Weights) -> float:
        meaning, fix, rare, same, other = self.features()
        return meaning + fix * weights.fix + rare * weights.rare + same * weights.same - other * weights.other

    def takes(self, weights: Weights) -> bool:
        """Whether the entry takes the finding (its score reaches the threshold, no guard says no)."""
        if self.guard or (self.needs_fix and self.same_fix is None):
            return False
        return self.score(weights) >= weights.threshold

    def explain(self, weights: Weights) -> str:
        """Each signal, with what it adds, and the sum against the threshold."""
        meaning = f"meaning {self.meaning:.2f}"
        if self.without:
            meaning += f" (without the fix's words: {', '.join(self.without)})"
        parts = [meaning]
        if self.same_fix is not None:
            parts.append(f"same fix +{weights.fix:.2f}")
        if self.rare:
            parts.append(f"rare {', '.join(self.rare)} +{weights.rare:.2f}")
        same = [k for k, v in sorted(self.where.items()) if v >= 0]
        other = [k for k, v in sorted(self.where.items()) if v < 0]
        if same:
            parts.append(f"same {', '.join(same)} {self.same_place() * weights.same:+.2f}")
        if other:
            parts.append(f"other {', '.join(other)} {-self.other_place() * weights.other:+.2f}")
        text = f"{' + '.join(parts)} = {self.score(weights):.2f}"
        if self.guard:
            return f"{text}; {self.guard}"
        if self.needs_fix and self.same_fix is None:
            return f"{text}; one negates the other: only the same fix files it here"
        return f"{text} {'>=' if self.score(weights) >= weights.threshold else '<'} {weights.threshold:.2f}"

    def as_json(self, weights: Weights) -> dict[str, Any]:
        return {
            "entry": self.known.label,
            "meaning": round(self.meaning, 3),
            "symptom": self.symptom,
            "without": self.without,
            "same_fix": self.same_fix,
            "rare": self.rare,
            "where": {k: round(v, 3) for k, v in self.where.items()},
            "guard": self.guard or ("negation: needs the same fix" if self.needs_fix else None),
            "score": round(self.score(weights), 3),
            "threshold": weights.threshold,
        }


def _words(text: str) -> set[str]:
    from memfiles.index.text import tokenize

    return set(tokenize(text))


def _plain(text: str) -> str:
    """The text's plain words: its identifiers left out."""
    return " ".join(w for w in text.split() if not identifiers(w))


def _without(text: str, words: set[str]) -> str:
    """`text` with each plain word whose stem is among `words` left out; an identifier (`event_ts`)
    stays: two symptoms naming one is evidence of one symptom, not of one object."""
    from memfiles.index.text import tokenize

    return " ".join(w for w in text.split() if identifiers(w) or not set(tokenize(w)) & words)


def weigh(
    sim: Similarity,
    text: str,
    fix: str | None,
    where: dict[str, str],
    known: Known,
    rare_pool: set[str],
    shares: dict[tuple[str, str], float] | None = None,
) -> Signals:
    """The signals of finding (`text`, `fix`, `where`) on `known`; `rare_pool` holds the section's rare
    identifiers, `shares` the share of the log's runs each (field, value) has."""
    signals = Signals(known)
    scored = [(sim.score(text, symptom), symptom) for symptom in known.symptoms]
    if not scored:
        return signals
    # the closest wording that names nothing else in its place (USB / DDR); if every one does, the guard
    open_ = [(score, symptom) for score, symptom in scored if not names_other_things(text, symptom)]
    signals.meaning, signals.symptom = max(open_ or scored)
    if not open_:
        signals.guard = "names another thing in the same place"
    signals.needs_fix = negated_apart(text, signals.symptom)
    if fix:
        for known_fix in known.fixes():
            agree, fix_score = sim.same_fix(fix, known_fix)
            if signals.fix_score is None or fix_score > signals.fix_score:
                signals.fix_score = fix_score
            if agree and signals.same_fix is None:
                signals.same_fix = known_fix
        if signals.same_fix is not None:
            # what the two symptoms share that the fix says is the fix's object, not the symptom's
            shared = _words(_plain(text)) & _words(_plain(signals.symptom)) & (_words(fix) | _words(signals.same_fix))
            if shared:
                signals.without = sorted(shared)
                signals.meaning = sim.score(_without(text, shared), _without(signals.symptom, shared))
    # the tool's own name (`ESLint` of eslint) is the where signal's, not an identifier of the symptom
    tools = {word for value in where.values() for word in value.split()}
    mine = {token for token in identifiers(text) if token not in tools}
    signals.rare = sorted(mine & rare_pool & known.identifiers())
    for key, value in where.items():
        theirs = known.where.get(key)
        if theirs:
            signals.where[key] = 1.0 - (shares or {}).get((key, value), 0.0) if value in theirs else -1.0
    return signals


def where_shares(contexts: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """The share of the runs each (field, value) of tool and area has."""
    from collections import Counter

    counts = Counter(item for context in contexts for item in where_of(context).items())
    return {item: n / len(contexts) for item, n in counts.items()} if contexts else {}


def rare_pool(knowns: list[Known]) -> set[str]:
    """The identifiers at most RARE_DF of these entries name."""
    from collections import Counter

    counts = Counter(token for known in knowns for token in known.identifiers())
    return {token for token, n in counts.items() if n <= RARE_DF}
