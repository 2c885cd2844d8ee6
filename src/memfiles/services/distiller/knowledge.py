"""A domain's knowledge file as the distiller sees it: each entry's symptom, fix, flags and runs.

An entry records runs in three lists: `evidence` (runs that confirm it: the symptom with the recorded
fix, and signoff; or a flag used in a signed-off run), `failed` (runs with the symptom, or using the
flag, that did not reach signoff) and `contradicted` (runs where a different fix reached signoff,
appended one item per fix, never overwritten). `confirmed` is the length of `evidence`, and the
sentence the distiller ends its own bodies with ("Seen in N runs ...") is written from the same lists,
so the three cannot disagree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memfiles.format.model import Entry
from memfiles.format.wrap import one_line
from memfiles.services.distiller.authored import plain
from memfiles.services.distiller.flags import Flag, find_flags

FAILURES = "Known Failure Patterns"
FLAGS = "Successful Tool Flags"
QUIRKS = "PDK / Tool Quirks"
NOTES = "Notes"
SECTIONS = (FAILURES, FLAGS, QUIRKS)

_LEAD = re.compile(r"^\*\*(.+?)\*\*")
NO_FIX = "No fix was recorded."  # what a new failure pattern's body says in place of "Fix: ..."
_NO_FIX_RE = re.compile(r"\s+".join(map(re.escape, NO_FIX.split())))
_FIX = re.compile(r"\bFix: (.*?)\.(?= [A-Z]|$)")
# The distiller's own closing sentence, exactly as trailer() writes it (and as the first distiller did);
# a body that ends with one is rewritten from the lists, any other body is left as written.
_FAILED = r"(?:; \d+ runs? (?:with this symptom|that used it) did not reach signoff \([^()]*\))?"
# Each alternative starts where a run of blanks starts (the lookbehind): free to start inside one, the
# pattern rescanned the rest of the run from each position (quadratic; issue 34).
_TRAILER = re.compile(
    r"(?<!\s)\s*(?:Seen in \d+ (?:runs?(?: where this fix worked| that reached signoff)?|signed-off runs?)"
    rf"|No run has confirmed this fix yet|No run with it has reached signoff yet){_FAILED}\.$"
    r"|(?<!\s)\s*(?:Seen|Noted) in \d+ runs? \(\d{4}-\d{2}-\d{2}(?: to \d{4}-\d{2}-\d{2})?\)"
    r"(?:, \d+ of them signed off)?\.$"
    r"|(?<!\s)\s*It appears in the fixes or notes of \d+ signed-off runs? \([^()]*\)\.$"
)
# One contradiction: "2026-11-10 sta-0144, sta-0150: Pipeline the multiplier output"; items joined by "; ".
_ITEM = re.compile(r"(\d{4}-\d{2}-\d{2}) ((?:(?!: |; ).)+?): (.*?)(?=; \d{4}-\d{2}-\d{2} |$)")
# What a run id must not hold, since the lists that cite runs are cut there: `evidence` and `failed` at
# commas, and a `contradicted` value into items at "; " and each item's runs from its fix at ": " (_ITEM).
RUN_SEPARATORS = {",": "a comma", ": ": "a colon and a space", "; ": "a semicolon and a space"}


def mention_pattern(key: str) -> re.Pattern[str]:
    """`key` (a run id) as a whole token of free text: not part of a longer word or dashed name."""
    return re.compile(rf"(?<![\w-]){re.escape(key)}(?![\w-])")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


@dataclass
class Contradiction:
    """A different fix that reached signoff, and the runs where it did (no runs: an older free-form note)."""

    date: str
    runs: list[str]
    fix: str

    def render(self) -> str:
        if not self.runs:
            return self.fix
        return f"{self.date} {', '.join(self.runs)}: {self.fix.replace(';', ',')}"


def parse_contradictions(text: str | None) -> list[Contradiction]:
    """The items of a `contradicted` value; a value in another form is kept whole, as one item."""
    if not text:
        return []
    items = [
        Contradiction(m.group(1), [r.strip() for r in m.group(2).split(",") if r.strip()], m.group(3))
        for m in _ITEM.finditer(text)
    ]
    return items if items and "; ".join(c.render() for c in items) == text else [Contradiction("", [], text)]


@dataclass
class Known:
    """One knowledge entry (in the file, or to be added by this distillation)."""

    section: str
    title: str
    body: str
    symptoms: list[str]
    fix: str = ""
    flags: list[Flag] = field(default_factory=list)
    run_fixes: list[str] = field(default_factory=list)  # the fixes of the runs it counts as evidence (the log's)
    evidence: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    contradictions: list[Contradiction] = field(default_factory=list)
    last_seen: str = ""
    id: str | None = None
    entry: Entry | None = None
    changed: bool = False
    where: dict[str, set[str]] = field(default_factory=dict)  # the tools and areas of its runs, by field

    def fixes(self) -> list[str]:
        """The fixes it records: its own, those its runs used, and those that contradicted it."""
        found = [self.fix, *self.run_fixes, *(c.fix for c in self.contradictions if c.runs)]
        return list(dict.fromkeys(fix for fix in found if fix))

    def identifiers(self) -> set[str]:
        """The code-like words its symptoms name (signals.identifiers)."""
        from memfiles.services.distiller.signals import identifiers

        return {token for symptom in self.symptoms for token in identifiers(symptom)}

    def ran(self, where: dict[str, str]) -> None:
        """Learn the tool and area of one more of its runs."""
        for key, value in where.items():
            self.where.setdefault(key, set()).add(value)

    @property
    def label(self) -> str:
        return self.id or f"(new) {self.title}"

    @property
    def generated(self) -> bool:
        """True when the body's last paragraph ends with the distiller's counting sentence."""
        return bool(_TRAILER.search(one_line(self.body.rsplit("\n\n", 1)[-1])))

    def runs(self) -> set[str]:
        return {*self.evidence, *self.failed, *(r for c in self.contradictions for r in c.runs)}

    def mentions(self, key: str) -> bool:
        """True when run `key` is already counted here (also when named in a free-form contradiction)."""
        if key in self.runs():
            return True
        pattern = mention_pattern(key)
        return any(not c.runs and pattern.search(c.fix) for c in self.contradictions)

    def note(self, bucket: str, key: str, when: str) -> None:
        getattr(self, bucket).append(key)
        self.last_seen = max(self.last_seen, when)
        self.changed = True

    def adopt_fix(self, fix: str, written: str) -> bool:
        """Take `fix` as the entry's fix when it has none and its body is the distiller's own (`No fix was
        recorded.` becomes `Fix: <written>.`); False when it cannot (a body written by hand is left alone)."""
        if self.fix or not (self.generated or self.id is None):  # a new entry's body is the distiller's own
            return False
        body, replaced = _NO_FIX_RE.subn(f"Fix: {written}.", self.body, count=1)  # wrapped anywhere
        if not replaced:
            return False
        self.fix, self.body, self.changed = fix, body, True
        return True

    def contradict(self, key: str, when: str, fix: str, same_as: Contradiction | None) -> None:
        """Record a different fix that worked (`fix` as it is to be written): appended as a new item, or
        one more run of the same fix."""
        self.last_seen = max(self.last_seen, when)
        self.changed = True
        if same_as is not None:
            same_as.runs.append(key)
        else:
            self.contradictions.append(Contradiction(when, [key], fix))

    def contradicted_value(self) -> str | None:
        return "; ".join(c.render() for c in self.contradictions) or None

    def trailer(self) -> str:
        """The counting sentence, written from the lists alone."""
        seen, failed = len(self.evidence), len(self.failed)
        if self.section == QUIRKS:
            return f"Seen in {_plural(seen, 'run')}."
        if self.section == FLAGS:
            text = f"Seen in {_plural(seen, 'signed-off run')}"
            if failed:
                text += f"; {_plural(failed, 'run')} that used it did not reach signoff ({_listed(self.failed)})"
            return text + "."
        if seen or not failed:
            what = "where this fix worked" if self.fix else "that reached signoff"
            text = f"Seen in {_plural(seen, 'run')} {what}"
        else:
            text = "No run has confirmed this fix yet" if self.fix else "No run with it has reached signoff yet"
        if failed:
            text += f"; {_plural(failed, 'run')} with this symptom did not reach signoff ({_listed(self.failed)})"
        return text + "."

    def current_body(self) -> str:
        """The body with its counting sentence brought up to date (a body written by hand is left alone)."""
        if self.entry is not None and not self.generated:
            return self.body
        *before, last = self.body.split("\n\n")  # only the last paragraph holds the sentence
        last = f"{_TRAILER.sub('', one_line(last)).rstrip()} {self.trailer()}".strip()
        return "\n\n".join([*before, last])


# Runs a counting sentence names; the rest are counted ("and 190 more"): the metadata lists them all.
LISTED_RUNS = 10


def _listed(runs: list[str]) -> str:
    named = ", ".join(runs[:LISTED_RUNS])
    return named if len(runs) <= LISTED_RUNS else f"{named} and {len(runs) - LISTED_RUNS} more"


def known_from(entry: Entry, section: str | None) -> Known:
    """An entry of the file as the distiller matches against it."""
    flat = one_line(entry.body)
    lead = _LEAD.match(flat)
    # compared as words: the code spans the distiller puts around commands are no part of the symptom
    symptoms = [plain(entry.title)] + ([plain(lead.group(1).rstrip("."))] if lead else [])
    fix_match = _FIX.search(flat)
    if fix_match:
        fix = plain(fix_match.group(1))
    else:
        rest = flat[lead.end() :] if lead else flat
        fix = _TRAILER.sub("", rest).strip()
        if fix == NO_FIX or fix.endswith(" " + NO_FIX):
            fix = ""  # the distiller's words for no fix are not a fix (a first fix was "contradicting" them)
    title_flags = find_flags(entry.title) or find_flags(lead.group(1) if lead else "") or find_flags(flat)
    contradictions = parse_contradictions(entry.contradicted)
    return Known(
        section=section or "",
        title=entry.title,
        body=entry.body,
        symptoms=symptoms,
        fix=fix,
        flags=title_flags,
        evidence=list(entry.evidence),
        failed=list(entry.failed),
        contradictions=contradictions,
        last_seen=entry.last_seen or "",
        id=entry.id,
        entry=entry,
    )
