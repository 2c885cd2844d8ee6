"""load_experiences: memory/<domain>/experiences.jsonl read, checked and summarised (stage 1 of distil).

A record is one JSON object a line: `timestamp` (ISO-8601), `signoff_achieved` (bool),
`issues_encountered` and `fixes_applied` (a list of strings, or one string), `key_metrics` (numbers by
name), `notes` (text); any other field (design, tool, run_id...) is kept as context.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memfiles import jsonin
from memfiles.errors import MemfilesError
from memfiles.format.wrap import control_character
from memfiles.jsonin import json_type
from memfiles.services.distiller.flags import Flag, general, used_flags
from memfiles.services.distiller.knowledge import RUN_SEPARATORS
from memfiles.services.hook_text import strip_injected

EXPERIENCES = "experiences.jsonl"
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass
class Record:
    line: int
    timestamp: str
    signoff: bool
    issues: list[str]
    fixes: list[str]
    metrics: dict[str, float]
    notes: str
    context: dict[str, Any]
    key: str  # stable across rewrites of the file: the run id, else a hash of the record

    @property
    def when(self) -> str:
        return self.timestamp[:10]


@dataclass
class Experiences:
    domain: str
    path: Path
    records: list[Record] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # 'path:line: why' of each line left out
    warnings: list[str] = field(default_factory=list)  # 'path:line: why' of a field dropped from a kept record

    def summary(self) -> dict[str, Any]:
        """The structured summary the seed asks of load_experiences."""
        records = sorted(self.records, key=lambda r: r.timestamp)
        pairs: dict[tuple[str, str], dict[str, Any]] = {}
        for record in records:
            for issue, fix in issue_fix_pairs(record):
                item = pairs.setdefault((issue.lower(), fix.lower()), {"issue": issue, "fix": fix, "count": 0})
                item["count"] += 1
        metrics: dict[str, dict[str, float]] = {}
        for name in sorted({m for r in records for m in r.metrics}):
            values = [r.metrics[name] for r in records if name in r.metrics]
            metrics[name] = {
                "min": min(values),
                "max": max(values),
                "median": statistics.median(values),
                "latest": values[-1],
            }
        return {
            "domain": self.domain,
            "record_count": len(records),
            "records_skipped": len(self.skipped),
            "date_range": [records[0].timestamp, records[-1].timestamp] if records else [],
            "signoff_rate": round(sum(r.signoff for r in records) / len(records), 3) if records else 0.0,
            "issue_fix_pairs": sorted(pairs.values(), key=lambda p: (-p["count"], p["issue"])),
            "tool_flag_candidates": sorted({flag.text for r in records for flag in tool_flags(r)}),
            "metric_ranges": metrics,
            "free_notes": [r.notes for r in records if r.notes],
        }


def issue_fix_pairs(record: Record) -> list[tuple[str, str]]:
    """Issues paired with the fix at the same position; an issue without one pairs with ''."""
    return [(issue, record.fixes[n] if n < len(record.fixes) else "") for n, issue in enumerate(record.issues)]


def tool_flags(record: Record) -> list[Flag]:
    """The flags a run used, as its fixes and notes name them (services/distiller/flags.py says what counts)."""
    return general([flag for text in (*record.fixes, record.notes) for flag in used_flags(text)])


def _content(text: str) -> set[str]:
    from memfiles.index.text import tokenize

    return {token for token in tokenize(text) if not token.isdigit()}


def notes_for(record: Record, issue: str) -> str:
    """The sentences of the record's notes about `issue`: a note stays with the issue it speaks of.

    Each sentence goes to the issue (with its fix) it shares the most words with, and to none when it
    shares none, so one issue's note never lands in another issue's entry.
    """
    pairs = issue_fix_pairs(record)
    words = [_content(f"{i} {f}") for i, f in pairs]
    mine = [n for n, (i, _) in enumerate(pairs) if i == issue]
    kept = []
    for sentence in _SENTENCE.split(record.notes):
        tokens = _content(sentence)
        overlaps = [len(tokens & w) for w in words]
        if overlaps and max(overlaps) > 0 and any(overlaps[n] == max(overlaps) for n in mine):
            kept.append(sentence.strip())
    return " ".join(kept)


def _strings(value: Any, name: str) -> list[str]:
    """The field's texts, without what a memfiles hook injected into the agent that wrote the record."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return [text for item in value if (text := strip_injected(item).strip())]
    raise ValueError(f"{name} must be a string or a list of strings")


FIELDS = ("timestamp", "signoff_achieved", "issues_encountered", "fixes_applied", "key_metrics", "notes")


def _meant_field(name: str) -> str | None:
    """The record field a context key looks like a misspelling or a short form of (`signoff`, `fixes`)."""
    import difflib

    lowered = name.lower()
    for known in FIELDS:
        if known != lowered and (known.startswith(lowered) or lowered == known.split("_")[0]):
            return known
    close = difflib.get_close_matches(lowered, FIELDS, n=1, cutoff=0.8)
    return close[0] if close else None


def parse_record(value: Any, line: int, warnings: list[str] | None = None) -> Record:
    """One record; a field that cannot be used but need not cost the record (a metric that is not a
    number) is dropped and named in `warnings` as 'key_metrics.area_um2: ...'."""
    dropped = warnings if warnings is not None else []
    if not isinstance(value, dict):
        raise ValueError("a record is a JSON object")
    timestamp = value.get("timestamp")
    if timestamp is None:
        raise ValueError("timestamp is missing (ISO-8601 text)")
    if not isinstance(timestamp, str):
        raise ValueError(f"timestamp is {json.dumps(timestamp)}, not ISO-8601 text")
    try:
        dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"timestamp {timestamp!r} is not ISO-8601") from None
    signoff = value.get("signoff_achieved", False)
    if not isinstance(signoff, bool):
        raise ValueError("signoff_achieved must be true or false")
    if "signoff_achieved" not in value and not any(_meant_field(name) == "signoff_achieved" for name in value):
        # a run filed as a failure because a field was left out: said, as a misspelt one is
        dropped.append("no signoff_achieved: read as not signed off (its fixes confirm nothing)")
    metrics = value.get("key_metrics") or {}
    if not isinstance(metrics, dict):
        dropped.append(f"key_metrics must be an object of numbers, got {json_type(metrics)}: metrics dropped")
        metrics = {}
    metrics = dict(metrics)  # the record as written stays as written: its hash is its key
    for name, number in list(metrics.items()):
        if not isinstance(number, int | float) or isinstance(number, bool) or not math.isfinite(number):
            dropped.append(f"key_metrics.{name} is {json.dumps(number)}, not a number: metric dropped")
            del metrics[name]
    notes = value.get("notes") or ""
    if not isinstance(notes, str):
        raise ValueError("notes must be text")
    context = {k: v for k, v in value.items() if k not in FIELDS}
    for name in context:  # "signoff" for signoff_achieved would silently read as no signoff: say so
        meant = _meant_field(name)
        if meant:
            dropped.append(f"{name!r} is not a field: did you mean {meant!r}? (kept as context, not read as {meant})")
    run_id = context.get("run_id")
    canonical = json.dumps(value, sort_keys=True, ensure_ascii=False)
    given = str(run_id).strip() if run_id is not None else ""  # "r1 " is r1, as an evidence list keeps it
    key = given or "r" + hashlib.sha256(canonical.encode()).hexdigest()[:10]
    # `job:42` and `2026-12-01T20:35:34Z` are fine, `job: 42` is not (knowledge.RUN_SEPARATORS)
    unfit = next((said for mark, said in RUN_SEPARATORS.items() if mark in key), None) or control_character(key)
    if unfit:
        raise ValueError(
            f"run_id {key!r} holds {unfit}: an entry's evidence or contradiction list cannot cite it; give the"
            " run another id"
        )
    issues = _strings(value.get("issues_encountered"), "issues_encountered")
    fixes = _strings(value.get("fixes_applied"), "fixes_applied")
    if issues and len(fixes) > len(issues):  # fixes pair with issues by position: the rest has none
        extra = "; ".join(repr(fix) for fix in fixes[len(issues) :])
        dropped.append(
            f"{len(fixes)} fixes for {len(issues)} issue{'s' * (len(issues) > 1)}: a fix pairs with the issue at"
            f" its position, so {extra} fixes no issue (read for its flags only)"
        )
    return Record(
        line,
        timestamp,
        signoff,
        issues,
        fixes,
        {k: float(v) for k, v in metrics.items()},
        strip_injected(notes).strip(),
        context,
        key,
    )


def load_experiences(memory_dir: Path, domain: str, rel: str) -> Experiences:
    """Every valid record of a domain; malformed lines are skipped and named, never fatal."""
    path = memory_dir / domain / EXPERIENCES
    result = Experiences(domain, path)
    if not path.is_file():
        return result
    seen: dict[str, int] = {}
    for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as error:
            result.skipped.append(
                f"{rel}:{number}: not UTF-8 text (byte 0x{raw[error.start]:02x} at column {error.start + 1})"
            )
            continue
        if not line.strip():
            continue
        dropped: list[str] = []
        try:
            record = parse_record(jsonin.loads(line), number, dropped)
            if record.key in seen:
                if not str(record.context.get("run_id") or "").strip():  # keyed by a digest: the same record
                    raise ValueError(f"the same record as line {seen[record.key]} (it has no run_id)")
                raise ValueError(f"run_id {record.key!r} was already used on line {seen[record.key]}")
            seen[record.key] = number
            result.records.append(record)
            result.warnings += [f"{rel}:{number}: {why}" for why in dropped]
        except json.JSONDecodeError as error:
            result.skipped.append(f"{rel}:{number}: invalid JSON ({error.msg}, column {error.colno})")
        except ValueError as error:
            result.skipped.append(f"{rel}:{number}: {error}")
    return result


def valid_domains(memory_dir: Path) -> list[str]:
    """Subfolders of memory/ that hold an experiences.jsonl (symlinks out of the tree excluded)."""
    root = memory_dir.resolve()
    found = []
    if memory_dir.is_dir():
        for child in sorted(memory_dir.iterdir()):
            if child.is_dir() and (child / EXPERIENCES).is_file():
                resolved = (child / EXPERIENCES).resolve()
                if resolved.is_relative_to(root) and child.resolve().parent == root:
                    found.append(child.name)
    return found


def check_domain(memory_dir: Path, domain: str) -> str:
    """`domain` when it names a valid domain; a clear error listing the valid ones otherwise."""
    domains = valid_domains(memory_dir)
    log = memory_dir / domain / EXPERIENCES
    if "/" not in domain and domain not in (".", "..") and log.exists() and not log.is_file():
        raise MemfilesError(f"memory/{domain}/{EXPERIENCES} is not a file: the domain's log is one JSON record a line")
    if domain not in domains or "/" in domain or domain in (".", ".."):
        listed = ", ".join(domains) or "none (no memory/<domain>/experiences.jsonl yet)"
        raise MemfilesError(f"unknown domain {domain!r}; valid domains: {listed}")
    return domain
