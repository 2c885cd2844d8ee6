"""Filing: each new record's findings go to the entry they belong to, with a reason for every choice.

A finding is (symptom, fix, outcome). The record's symptom is compared with each failure pattern's
symptom (its title and bold lead), within the domain's file:
- same symptom, the recorded fix, signoff       -> a confirmation (evidence)
- same symptom, any fix, no signoff             -> a failure noted on the entry (failed), not a confirmation
- same symptom, a different fix, signoff        -> a contradiction, appended (never written over)
- a symptom nobody has filed                    -> a new entry
A flag is filed on the flag entries that name it (services/flags.py decides), a quirk on the quirk it
restates. Records are taken oldest first and new entries join the candidates at once, so the same
symptom worded two ways in one log becomes one entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memfiles.format.wrap import clip
from memfiles.services.experiences import Record, issue_fix_pairs, notes_for, tool_flags
from memfiles.services.flags import Flag
from memfiles.services.knowledge import FAILURES, FLAGS, NO_FIX, QUIRKS, Known, sentence
from memfiles.services.matching import NEAR, SAME, Similarity, shares_beyond

# Characters of a symptom a new entry's bold lead keeps (the title is clipped to the title limit).
LEAD_LIMIT = 300
_QUIRK = re.compile(r"\b(quirk|pdk|workaround|known issue|tool bug|undocumented|silently)\b", re.IGNORECASE)


@dataclass
class Decision:
    """What the distiller did with one finding of one record, and why (`distil --explain`)."""

    run: str
    line: int
    finding: str  # symptom, flag, quirk or run
    text: str
    action: str  # confirmed, failed, contradicted, new, already, ignored
    known: Known | None = field(repr=False)
    score: float | None
    why: str
    fix: str = ""  # the record's fix, for a contradiction

    @property
    def entry(self) -> str | None:
        """The entry's id, or '(new) title' before the write gives it one."""
        return self.known.label if self.known is not None else None

    def as_json(self) -> dict[str, object]:
        return {
            "run": self.run,
            "line": self.line,
            "finding": self.finding,
            "text": self.text,
            "action": self.action,
            "entry": self.entry,
            "score": None if self.score is None else round(self.score, 3),
            "why": self.why,
        }

    def __str__(self) -> str:
        target = f" -> {self.entry}" if self.entry else ""
        score = f" ({self.score:.2f})" if self.score is not None else ""
        said = f" {self.text!r}" if self.text else ""  # a whole run ("already distilled") has no text of its own
        return f"{self.run} line {self.line}: {self.finding}{said}: {self.action}{target}{score}: {self.why}"


def quirks_of(record: Record) -> list[str]:
    return [sentence(s) for s in re.split(r"(?<=[.!?])\s+", record.notes) if _QUIRK.search(s)]


class Filer:
    """Files records into `knowns` (the entries of one knowledge file), adding new ones as needed."""

    def __init__(self, knowns: list[Known], similarity: Similarity, title_limit: int) -> None:
        self.knowns = knowns
        self.sim = similarity
        self.title_limit = title_limit
        self.decisions: list[Decision] = []

    def prepare(self, fresh: list[Record], counted: list[Record]) -> None:
        """Embed every text the comparisons need in one batch, and teach each failure pattern the words
        of the runs it already counts: a symptom filed there once in other words is recognised again."""
        texts = [s for k in self.knowns for s in (*k.symptoms, k.fix, *(c.fix for c in k.contradictions))]
        for record in [*fresh, *counted]:
            texts += [*record.issues, *record.fixes, *quirks_of(record)]
        self.sim.prepare(texts)
        for record in counted:
            for known in self.knowns:
                if known.section == FAILURES and record.issues and known.mentions(record.key):
                    # the run's issue this entry counts it for, and the fix paired with that issue
                    closest, fix = max(
                        issue_fix_pairs(record),
                        key=lambda pair: max(self.sim.score(pair[0], s) for s in known.symptoms),
                    )
                    if closest not in known.symptoms:
                        known.symptoms.append(closest)
                    if record.key in known.evidence and fix and fix not in known.run_fixes:
                        known.run_fixes.append(fix)

    def file(self, record: Record) -> None:
        before = len(self.decisions)
        for issue, fix in issue_fix_pairs(record):
            self._symptom(record, issue, fix)
        for flag in tool_flags(record):
            self._flag(record, flag)
        for quirk in quirks_of(record):
            self._quirk(record, quirk)
        if len(self.decisions) == before:
            self.decide(record, "run", "", "ignored", None, None, "no issue, no flag and no quirk to file")

    def decide(
        self,
        record: Record,
        finding: str,
        text: str,
        action: str,
        known: Known | None,
        score: float | None,
        why: str,
        fix: str = "",
    ) -> None:
        self.decisions.append(Decision(record.key, record.line, finding, text, action, known, score, why, fix))

    def _new(self, section: str, title: str, body: str, record: Record, **extra: Any) -> Known:
        known = Known(section, clip(title, self.title_limit), body, changed=True, **extra)
        known.note("evidence" if record.signoff or section == QUIRKS else "failed", record.key, record.when)
        self.knowns.append(known)
        return known

    def best(self, section: str, text: str, fix: str | None = None) -> tuple[Known | None, float, str]:
        """The entry of `section` whose symptom is `text`'s, its score and why; (None, best score, why)."""
        # Each entry by its closest symptom; a symptom naming another thing (USB / DDR) scores 0, one that
        # negates the text stays under SAME (matching.Similarity.symptom_score).
        scored = sorted(
            (
                (*max((self.sim.symptom_score(text, s), s) for s in k.symptoms), n, k)
                for n, k in enumerate(self.knowns)
                if k.section == section
            ),
            key=lambda item: (-item[0], item[2]),
        )
        same, near = self.sim.threshold(SAME), self.sim.threshold(NEAR)
        for score, symptom, _, known in scored:
            if score >= same:
                return known, score, f"same symptom (>= {same:.2f})"
            if score < near:
                break
            # A close symptom is the same one only when the fix agrees too (the recorded fix, one its runs
            # used, or one that contradicted it), and the symptoms share a word besides the fix's:
            # unrelated runs that share words, or share a fix for one object, are not filed together.
            fixes = [known.fix, *known.run_fixes, *(c.fix for c in known.contradictions if c.runs)]
            for known_fix in fixes if fix else []:
                agree, fix_score = self.sim.same_fix(fix, known_fix)
                if known_fix and agree and shares_beyond(text, symptom, [fix, known_fix]):
                    return known, score, f"close symptom (>= {near:.2f}) and a fix it records ({fix_score:.2f})"
        best = scored[0][0] if scored else 0.0
        closest = f"closest {scored[0][3].label} at {best:.2f}" if scored else "no entry in the section yet"
        return None, best, f"no entry states this symptom ({closest}; same needs {same:.2f})"

    def _symptom(self, record: Record, issue: str, fix: str) -> None:
        known, score, why = self.best(FAILURES, issue, fix)
        if known is None:
            cause = notes_for(record, issue)
            body = f"**{sentence(clip(issue, LEAD_LIMIT))}.**"  # a pasted log line is not a lead
            if cause:
                body += f" {sentence(clip(cause, 300))}."
            body += f" Fix: {sentence(fix)}." if fix else f" {NO_FIX}"
            new = self._new(FAILURES, sentence(issue), body, record, symptoms=[issue], fix=sentence(fix))
            outcome = "signed off" if record.signoff else "did not reach signoff"
            self.decide(record, "symptom", issue, "new", new, score, f"{why}; the run {outcome}")
            return
        if known.mentions(record.key):
            self.decide(record, "symptom", issue, "already", known, score, "this run is counted on it already")
            return
        if issue not in known.symptoms:
            known.symptoms.append(issue)
        if record.signoff and fix and not known.fix and known.adopt_fix(fix):
            known.note("evidence", record.key, record.when)
            self.decide(
                record,
                "symptom",
                issue,
                "confirmed",
                known,
                score,
                f"{why}; the first fix to reach signoff: now its fix",
            )
            return
        agree, fix_score = max(self.sim.same_fix(fix, f) for f in [known.fix, *known.run_fixes])
        if not record.signoff:
            known.note("failed", record.key, record.when)
            self.decide(record, "symptom", issue, "failed", known, score, f"{why}; the run did not reach signoff")
        elif agree:
            known.note("evidence", record.key, record.when)
            self.decide(record, "symptom", issue, "confirmed", known, score, f"{why}; same fix, signed off")
        elif not fix:
            self.decide(record, "symptom", issue, "ignored", known, score, f"{why}; signed off, no fix recorded")
        else:
            earlier = next(
                (c for c in known.contradictions if c.runs and self.sim.same_fix(fix, c.fix)[0]),
                None,
            )
            known.contradict(record.key, record.when, fix, earlier)
            again = " (a fix noted before)" if earlier else ""
            self.decide(
                record,
                "symptom",
                issue,
                "contradicted",
                known,
                score,
                f"{why}; a different fix{again} reached signoff ({fix_score:.2f} to the recorded one)",
                fix,
            )

    def _flag(self, record: Record, flag: Flag) -> None:
        matches = [
            k for k in self.knowns if k.section not in (FAILURES, QUIRKS) and any(mine.covers(flag) for mine in k.flags)
        ]
        for known in matches:
            if known.mentions(record.key):
                self.decide(record, "flag", flag.text, "already", known, None, "this run is counted on it already")
            elif record.signoff:
                known.note("evidence", record.key, record.when)
                self.decide(record, "flag", flag.text, "confirmed", known, None, "names this flag; signed off")
            else:
                known.note("failed", record.key, record.when)
                self.decide(record, "flag", flag.text, "failed", known, None, "names this flag; no signoff")
        if matches:
            return
        if not record.signoff:
            self.decide(record, "flag", flag.text, "ignored", None, None, "no entry names it and the run failed")
            return
        body = f"**Runs that reached signoff used `{flag.text}`.**"
        new = self._new(FLAGS, f"`{flag.text}` in signed-off runs", body, record, symptoms=[flag.text], flags=[flag])
        self.decide(record, "flag", flag.text, "new", new, None, f"no entry names `{flag.key}`; signed off")

    def _quirk(self, record: Record, quirk: str) -> None:
        known, score, why = self.best(QUIRKS, quirk)
        if known is None:
            new = self._new(QUIRKS, quirk, f"**{quirk}.**", record, symptoms=[quirk])
            self.decide(record, "quirk", quirk, "new", new, score, why)
        elif known.mentions(record.key):
            self.decide(record, "quirk", quirk, "already", known, score, "this run is counted on it already")
        else:
            known.note("evidence", record.key, record.when)
            self.decide(record, "quirk", quirk, "confirmed", known, score, why)
