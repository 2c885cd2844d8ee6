"""Filing: each new record's findings go to the entry they belong to, with a reason for every choice.

A finding is (symptom, fix, outcome), with the run's tool and area. It is weighed against each failure
pattern of the domain's file on every piece of evidence (services/distiller/signals.py: the symptoms' meaning,
the same fix, a rare identifier both name, the tool and area), and filed on the entry that scores
highest, when that reaches the threshold:
- that entry, the recorded fix, signoff          -> a confirmation (evidence)
- that entry, any fix, no signoff                -> a failure noted on the entry (failed), not a confirmation
- that entry, a different fix, signoff           -> a contradiction, appended (never written over)
- no entry                                       -> a new entry
A flag is filed on the flag entries that name it (services/distiller/flags.py decides), a quirk on the quirk it
restates. Records are taken oldest first and new entries join the candidates at once, so the same
symptom worded two ways in one log becomes one entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memfiles.format.wrap import clip
from memfiles.services.distiller.authored import NO_VOCABULARY, Vocabulary, sentence, vocabulary
from memfiles.services.distiller.authored import title as authored_title
from memfiles.services.distiller.experiences import Record, issue_fix_pairs, notes_for, tool_flags
from memfiles.services.distiller.flags import Flag
from memfiles.services.distiller.knowledge import FAILURES, FLAGS, NO_FIX, QUIRKS, Known
from memfiles.services.distiller.matching import Similarity
from memfiles.services.distiller.signals import WEIGHTS, Signals, Weights, rare_pool, weigh, where_of, where_shares

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
    fix: str = ""  # the record's fix as the entry records it, for a contradiction
    signals: dict[str, Any] | None = None  # the evidence on the entry it went to (or the closest one)

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
            "signals": self.signals,
        }

    def __str__(self) -> str:
        target = f" -> {self.entry}" if self.entry else ""
        score = f" ({self.score:.2f})" if self.score is not None else ""
        said = f" {self.text!r}" if self.text else ""  # a whole run ("already distilled") has no text of its own
        return f"{self.run} line {self.line}: {self.finding}{said}: {self.action}{target}{score}: {self.why}"


def log_vocabulary(records: list[Record]) -> Vocabulary:
    """The commands a log names (services/distiller/authored.py): in its texts, and the records' `tool`."""
    return vocabulary(
        [text for r in records for text in (*r.issues, *r.fixes, r.notes)],
        [str(r.context["tool"]) for r in records if isinstance(r.context.get("tool"), str)],
    )


def quirks_of(record: Record, vocab: Vocabulary = NO_VOCABULARY) -> list[str]:
    return [sentence(s, vocab) for s in re.split(r"(?<=[.!?])\s+", record.notes) if _QUIRK.search(s)]


class Filer:
    """Files records into `knowns` (the entries of one knowledge file), adding new ones as needed."""

    def __init__(
        self, knowns: list[Known], similarity: Similarity, title_limit: int, weights: Weights | None = None
    ) -> None:
        self.knowns = knowns
        self.sim = similarity
        self.title_limit = title_limit
        self.weights = weights or WEIGHTS[similarity.mode]
        self.decisions: list[Decision] = []
        self.vocab = NO_VOCABULARY
        self.shares: dict[tuple[str, str], float] = {}

    def prepare(self, fresh: list[Record], counted: list[Record]) -> None:
        """Embed every text the comparisons need in one batch, learn the log's commands (to write them as
        written), and teach each failure pattern the words, tools and areas of the runs it counts: a
        symptom filed there once in other words is recognised again."""
        records = [*fresh, *counted]
        self.vocab = log_vocabulary(records)
        self.shares = where_shares([r.context for r in records])
        texts = [s for k in self.knowns for s in (*k.symptoms, *k.fixes())]
        for record in records:
            texts += [*record.issues, *record.fixes, *quirks_of(record, self.vocab)]
        self.sim.prepare(texts)
        for record in counted:
            for known in self.knowns:
                if not known.mentions(record.key):
                    continue
                known.ran(where_of(record.context))
                if known.section == FAILURES and record.issues:
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
        for quirk in quirks_of(record, self.vocab):
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
        signals: Signals | None = None,
    ) -> None:
        evidence = signals.as_json(self.weights) if signals is not None else None
        self.decisions.append(
            Decision(record.key, record.line, finding, text, action, known, score, why, fix, evidence)
        )

    def _new(self, section: str, title: str, body: str, record: Record, **extra: Any) -> Known:
        known = Known(section, title, body, changed=True, **extra)
        known.note("evidence" if record.signoff or section == QUIRKS else "failed", record.key, record.when)
        known.ran(where_of(record.context))
        self.knowns.append(known)
        return known

    def candidates(self, section: str, text: str, fix: str | None, where: dict[str, str]) -> list[Signals]:
        """The evidence of the finding on every entry of `section`, highest score first (file order on ties)."""
        knowns = [k for k in self.knowns if k.section == section]
        pool = rare_pool(knowns)
        weighed = [weigh(self.sim, text, fix, where, known, pool, self.shares) for known in knowns]
        order = {id(known): n for n, known in enumerate(knowns)}
        return sorted(weighed, key=lambda s: (-s.score(self.weights), order[id(s.known)]))

    def match(
        self, section: str, text: str, fix: str | None = None, record: Record | None = None
    ) -> tuple[Known | None, Signals | None, str]:
        """The entry of `section` that takes the finding, its evidence and why; (None, the closest, why)."""
        where = where_of(record.context) if record is not None else {}
        weighed = self.candidates(section, text, fix, where)
        for signals in weighed:
            if signals.takes(self.weights):
                return signals.known, signals, signals.explain(self.weights)
        if not weighed:
            return None, None, "no entry in the section yet"
        closest = weighed[0]
        return None, closest, f"no entry takes it (closest {closest.known.label}: {closest.explain(self.weights)})"

    def best(self, section: str, text: str) -> tuple[Known | None, float, str]:
        """The entry of `section` whose symptom is `text`'s, its score and why (the LLM drafter's findings)."""
        known, signals, why = self.match(section, text)
        return known, signals.score(self.weights) if signals else 0.0, why

    def title(self, text: str) -> str:
        """A new entry's title from the record's words (services/distiller/authored.title)."""
        return authored_title(text, self.vocab, self.title_limit)

    def say(self, text: str, spans: bool = True) -> str:
        """The record's words as an entry writes them: commands, flags and identifiers kept as written."""
        return sentence(text, self.vocab, spans=spans)

    def _symptom(self, record: Record, issue: str, fix: str) -> None:
        known, signals, why = self.match(FAILURES, issue, fix, record)
        score = signals.score(self.weights) if signals else None
        if known is None:
            cause = notes_for(record, issue)
            body = f"**{self.say(clip(issue, LEAD_LIMIT))}.**"  # a pasted log line is not a lead
            if cause:
                body += f" {self.say(clip(cause, 300))}."
            body += f" Fix: {self.say(clip(fix, LEAD_LIMIT))}." if fix else f" {NO_FIX}"  # a pasted script neither
            new = self._new(FAILURES, self.title(issue), body, record, symptoms=[issue], fix=self.say(fix, spans=False))
            outcome = "signed off" if record.signoff else "did not reach signoff"
            self.decide(record, "symptom", issue, "new", new, score, f"{why}; the run {outcome}", signals=signals)
            return
        if known.mentions(record.key):
            self.decide(
                record, "symptom", issue, "already", known, score, "this run is counted on it already", signals=signals
            )
            return
        if issue not in known.symptoms:
            known.symptoms.append(issue)
        known.ran(where_of(record.context))
        if record.signoff and fix and not known.fix and known.adopt_fix(self.say(fix, spans=False), self.say(fix)):
            known.note("evidence", record.key, record.when)
            self.decide(
                record,
                "symptom",
                issue,
                "confirmed",
                known,
                score,
                f"{why}; the first fix to reach signoff: now its fix",
                signals=signals,
            )
            return
        agree, fix_score = max(self.sim.same_fix(fix, f) for f in [known.fix, *known.run_fixes])
        if not record.signoff:
            known.note("failed", record.key, record.when)
            self.decide(
                record,
                "symptom",
                issue,
                "failed",
                known,
                score,
                f"{why}; the run did not reach signoff",
                signals=signals,
            )
        elif agree:
            known.note("evidence", record.key, record.when)
            self.decide(
                record, "symptom", issue, "confirmed", known, score, f"{why}; same fix, signed off", signals=signals
            )
        elif not fix:
            self.decide(
                record,
                "symptom",
                issue,
                "ignored",
                known,
                score,
                f"{why}; signed off, no fix recorded",
                signals=signals,
            )
        else:
            earlier = next(
                (c for c in known.contradictions if c.runs and self.sim.same_fix(fix, c.fix)[0]),
                None,
            )
            said = self.say(fix, spans=False)
            known.contradict(record.key, record.when, said, earlier)
            again = " (a fix noted before)" if earlier else ""
            self.decide(
                record,
                "symptom",
                issue,
                "contradicted",
                known,
                score,
                f"{why}; a different fix{again} reached signoff ({fix_score:.2f} to the recorded one)",
                said,
                signals=signals,
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
        title = clip(f"`{flag.text}` in signed-off runs", self.title_limit)
        new = self._new(FLAGS, title, body, record, symptoms=[flag.text], flags=[flag])
        self.decide(record, "flag", flag.text, "new", new, None, f"no entry names `{flag.key}`; signed off")

    def _quirk(self, record: Record, quirk: str) -> None:
        known, signals, why = self.match(QUIRKS, quirk, None, record)
        score = signals.score(self.weights) if signals else None
        if known is None:
            new = self._new(
                QUIRKS, self.title(quirk), f"**{self.say(clip(quirk, LEAD_LIMIT))}.**", record, symptoms=[quirk]
            )
            self.decide(record, "quirk", quirk, "new", new, score, why, signals=signals)
        elif known.mentions(record.key):
            self.decide(
                record, "quirk", quirk, "already", known, score, "this run is counted on it already", signals=signals
            )
        else:
            known.note("evidence", record.key, record.when)
            known.ran(where_of(record.context))
            self.decide(record, "quirk", quirk, "confirmed", known, score, why, signals=signals)
