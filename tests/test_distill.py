"""The distiller: load_experiences, filing each finding where it belongs, and the report."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from memfiles import parse
from memfiles.services.distiller.knowledge import parse_contradictions
from tests.conftest import Run, snapshot

FAILURES, FLAGS, QUIRKS = "Known Failure Patterns", "Successful Tool Flags", "PDK / Tool Quirks"


def record(run_id: str, day: int, issues, fixes, signoff: bool = True, notes: str = "", **metrics) -> dict:
    return {
        "timestamp": f"2026-10-{day:02d}T10:00:00Z",
        "run_id": run_id,
        "design": "core",
        "signoff_achieved": signoff,
        "issues_encountered": issues,
        "fixes_applied": fixes,
        "key_metrics": metrics or {"wns_ns": 0.1},
        "notes": notes,
    }


FANOUT = ["Hold violations after placement"], ["Cap fanout with --max-fanout 16"]
LATCH = ["Latch inferred in the baud generator"], ["Assign a default in every case branch"]


def write_log(root: Path, domain: str, records: list[dict], extra_lines: list[str] = ()) -> Path:
    folder = root / "memory" / domain
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "experiences.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + "".join(line + "\n" for line in extra_lines))
    return path


def base_records() -> list[dict]:
    return [
        record("r1", 1, *FANOUT, signoff=False, notes="One enable drove 400 flops.", wns_ns=-0.4),
        record("r2", 2, *FANOUT, notes="Capped at 16; closes. Used `abc -D 1250`.", wns_ns=0.03),
        record(
            "r3", 3, *LATCH, notes="The PDK quirk: no low-enable latch cells, so it was silently mapped.", wns_ns=0.5
        ),
        record("r4", 4, [], [], notes="Clean run.", wns_ns=0.2),
        record("r5", 5, *FANOUT, notes="Same hold pattern again.", wns_ns=0.05),
    ]


def knowledge(root: Path, domain: str = "synthesis"):
    return parse((root / "memory" / domain / "knowledge.md").read_text())


def entry(root: Path, title: str, domain: str = "synthesis"):
    return next(e for e in knowledge(root, domain).entries if e.title == title)


def distil(run: Run, domain: str = "synthesis", *args: str) -> dict:
    result = run("distil", "--domain", domain, "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["domains"][0]


def entry_json_title(root: Path, entry_id: str, domain: str = "synthesis") -> str:
    return next(e.title for e in knowledge(root, domain).entries if e.id == entry_id)


def add_by_hand(run: Run, domain: str, section: str, title: str, body: str) -> str:
    result = run(
        "add", "-k", "lesson", "-t", title, "-a", domain, "--file", f"memory/{domain}/knowledge.md",
        "--section", section, "--body", body,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


class TestLoad:
    def test_summary_has_the_seed_fields(self, run: Run, root: Path) -> None:
        """--summary-json: counts, date range, signoff rate, pairs with counts, flags, metric ranges, notes."""
        write_log(root, "synthesis", base_records())
        summary = json.loads(run("distil", "--domain", "synthesis", "--summary-json").stdout)["summaries"][0]
        assert summary["record_count"] == 5 and summary["records_skipped"] == 0
        assert summary["date_range"] == ["2026-10-01T10:00:00Z", "2026-10-05T10:00:00Z"]
        assert summary["signoff_rate"] == 0.8
        assert summary["issue_fix_pairs"][0] == {"issue": FANOUT[0][0], "fix": FANOUT[1][0], "count": 3}
        assert summary["tool_flag_candidates"] == ["--max-fanout 16", "abc -D 1250"]
        assert summary["metric_ranges"]["wns_ns"] == {"min": -0.4, "max": 0.5, "median": 0.05, "latest": 0.05}
        assert "Clean run." in summary["free_notes"]

    def test_malformed_lines_are_skipped_named_and_counted(self, run: Run, root: Path) -> None:
        """Bad JSON, bad fields and a repeated run id: a warning naming file:line each, counted as skipped."""
        lines = ["{not json", json.dumps({"timestamp": "yesterday"}), json.dumps(record("r2", 9, *LATCH))]
        lines.append(json.dumps(record("nightly, build 7", 9, *LATCH)))  # an evidence list cannot cite it
        lines.append(json.dumps(record("job: 2", 9, *LATCH)))  # nor a contradicted item ("DATE RUN: FIX")
        lines.append(json.dumps(record("a; b", 9, *LATCH)))
        write_log(root, "synthesis", base_records(), lines)
        result = run("distil", "--domain", "synthesis", "--json")
        assert result.exit_code == 0
        assert "memory/synthesis/experiences.jsonl:6: invalid JSON" in result.stderr
        assert "memory/synthesis/experiences.jsonl:7: timestamp 'yesterday' is not ISO-8601" in result.stderr
        assert "memory/synthesis/experiences.jsonl:8: run_id 'r2' was already used on line 2" in result.stderr
        assert "memory/synthesis/experiences.jsonl:9: run_id 'nightly, build 7' holds a comma" in result.stderr
        assert "memory/synthesis/experiences.jsonl:10: run_id 'job: 2' holds a colon and a space" in result.stderr
        assert "memory/synthesis/experiences.jsonl:11: run_id 'a; b' holds a semicolon and a space" in result.stderr
        assert json.loads(result.stdout)["domains"][0]["records_skipped"] == 6

    def test_a_log_of_no_records_says_why_and_a_record_repeated_without_run_id_says_so(
        self, run: Run, root: Path
    ) -> None:
        """A pretty-printed log (no line a record) is skipped saying a log holds one JSON object a line; a
        record without run_id logged twice is "the same record as line 1", not a run id nobody wrote."""
        one = {k: v for k, v in record("x", 1, *LATCH).items() if k != "run_id"}
        (root / "memory" / "pp").mkdir()
        (root / "memory" / "pp" / "experiences.jsonl").write_text(json.dumps([one], indent=2))
        report = distil(run, "pp")
        assert report["skipped"].startswith("no valid records: ") and "one JSON object a line" in report["skipped"]
        write_log(root, "twice", [one, one])
        result = run("distil", "--domain", "twice", "--min-records", "1")
        assert "memory/twice/experiences.jsonl:2: the same record as line 1 (it has no run_id)" in result.stderr

    def test_a_run_id_with_spaces_around_is_counted_once(self, run: Run, root: Path) -> None:
        """run_id "r1 " is r1, as the evidence list keeps it: distilled three times, counted once."""
        write_log(root, "synthesis", [record("r1 ", 1, *FANOUT)])
        for _ in range(3):
            distil(run, "synthesis", "--min-records", "1")
        assert entry(root, FANOUT[0][0]).evidence == ("r1",)

    def test_a_finding_longer_than_the_body_limit_is_clipped_not_refused(self, run: Run, root: Path) -> None:
        """A log line of 2,100 characters (a pasted stack trace) still becomes an entry, its body clipped
        to the limit and its title to one line; the domain is not refused."""
        write_log(root, "synthesis", [record("r1", 1, ["Error: " + "x" * 2100], ["Rerun"])])
        report = distil(run, "synthesis", "--min-records", "1")
        assert report["updated"] is True
        entry = knowledge(root).entries[0]
        assert len(entry.body) <= 2000 and len(entry.title) <= 120
        assert "Fix: Rerun." in entry.body and "Seen in 1 run" in entry.body  # the lead is clipped, not the fix
        many = [record("r1", 1, *FANOUT), *(record(f"f{n}", 2, *FANOUT, signoff=False) for n in range(199))]
        write_log(root, "sta", many)
        distil(run, "sta", "--min-records", "1")
        fanout = knowledge(root, "sta").entries[0]
        assert (
            len(fanout.body) <= 2000 and "and 189 more" in " ".join(fanout.body.split()) and len(fanout.failed) == 199
        )
        assert run("check").exit_code == 0

    def test_a_bad_metric_costs_the_metric_not_the_record(self, run: Run, root: Path) -> None:
        """ "area_um2": "big" drops that metric with a warning naming the line and key; the issue and fix stay."""
        records = base_records()
        records[2]["key_metrics"] = {"area_um2": "big", "wns_ns": 0.5, "cells": True}
        write_log(root, "synthesis", records)
        result = run("distil", "--domain", "synthesis")
        assert result.exit_code == 0
        assert 'experiences.jsonl:3: key_metrics.area_um2 is "big", not a number: metric dropped' in result.stderr
        assert "experiences.jsonl:3: key_metrics.cells is true, not a number" in result.stderr
        latch = entry(root, LATCH[0][0])
        assert latch.evidence == ("r3",) and "Fix: Assign a default in every case branch." in latch.body

    def test_threshold_and_empty_file_skip(self, run: Run, root: Path) -> None:
        """Under --min-records, or an empty log: a skip notice and no knowledge file."""
        write_log(root, "sta", base_records()[:3])
        write_log(root, "empty", [])
        for domain, said in (("sta", "3 valid records, fewer than --min-records 5"), ("empty", "no valid records")):
            result = run("distil", "--domain", domain, "--min-records", "0" if domain == "empty" else "5")
            assert result.exit_code == 0 and said in result.stdout
            assert not (root / "memory" / domain / "knowledge.md").exists()
        assert distil(run, "sta", "--dry-run")["dry_run"] is True  # a skipped domain says what it was asked
        assert run("distil", "--domain", "sta", "--min-records", "3").exit_code == 0
        assert (root / "memory" / "sta" / "knowledge.md").exists()

    def test_several_domains_in_one_call(self, run: Run, root: Path) -> None:
        """--domain a --domain b distils both (the second used to replace the first in silence); a log that
        is a folder is named as such, not called an unknown domain."""
        write_log(root, "synthesis", base_records())
        write_log(root, "sta", base_records())
        result = run("distil", "--domain", "synthesis", "--domain", "sta", "--json")
        assert result.exit_code == 0, result.output
        assert [d["domain"] for d in json.loads(result.stdout)["domains"]] == ["synthesis", "sta"]
        (root / "memory" / "odd" / "experiences.jsonl").mkdir(parents=True)
        odd = run("distil", "--domain", "odd")
        assert odd.exit_code == 2 and "memory/odd/experiences.jsonl is not a file" in odd.stderr

    def test_unknown_and_traversing_domains_are_refused(self, run: Run, root: Path) -> None:
        """'..', an absolute path, a missing log and a symlink out of the tree: exit 2 listing the valid domains."""
        write_log(root, "synthesis", base_records())
        outside = root.parent / f"{root.name}-outside"
        outside.mkdir()
        (outside / "experiences.jsonl").write_text(json.dumps(base_records()[0]) + "\n")
        os.symlink(outside, root / "memory" / "escape")
        (root / "memory" / "notes").mkdir()
        for bad in ("..", "/etc", "escape", "notes", "synthesis/../..", "nosuchdomain"):
            result = run("distil", "--domain", bad)
            assert result.exit_code == 2, bad
            assert "valid domains: synthesis" in result.stderr, (bad, result.stderr)

    def test_bad_options_exit_2_and_write_nothing(self, run: Run, root: Path) -> None:
        """--min-records -3, --domain with --all, neither: a clear message, exit 2, no file touched."""
        write_log(root, "synthesis", base_records())
        before = snapshot(root)
        negative = run("distil", "--domain", "synthesis", "--min-records", "-3")
        assert negative.exit_code == 2 and "--min-records" in negative.stderr and "-3" in negative.stderr
        both = run("distil", "--domain", "synthesis", "--all")
        assert both.exit_code == 2 and "not both" in both.stderr
        neither = run("distil")
        assert neither.exit_code == 2 and "give --domain NAME or --all" in neither.stderr
        assert snapshot(root) == before


class TestFiling:
    def test_first_run_adds_entries_and_second_changes_nothing(self, run: Run, root: Path) -> None:
        """Entries in the seed's sections and style; the same records again change nothing at all."""
        write_log(root, "synthesis", base_records())
        first = distil(run)
        assert len(first["added"][FAILURES]) == 2 and first["added"][FLAGS] and first["added"][QUIRKS]
        fanout = entry(root, FANOUT[0][0])
        assert fanout.body.startswith(f"**{FANOUT[0][0]}.**")
        assert "Fix: Cap fanout with `--max-fanout 16`." in fanout.body
        assert knowledge(root).section_of(fanout.id) == FAILURES
        text = (root / "memory" / "synthesis" / "knowledge.md").read_text()
        second = distil(run)
        assert second["added"] == {k: [] for k in first["added"]} and second["annotated"] == []
        assert not second["updated"] and second["write"] is None
        assert {d["action"] for d in second["decisions"]} == {"already", "ignored"}
        assert (root / "memory" / "synthesis" / "knowledge.md").read_text() == text
        assert run("check").exit_code == 0

    def test_a_pruned_entry_stays_pruned(self, run: Run, root: Path) -> None:
        """Pruning a distilled entry and distilling the same log again brings nothing back under a new id:
        the runs it counted were distilled once (memory/pruned.jsonl keeps it), and the decisions say so."""
        write_log(root, "synthesis", base_records())
        distil(run)
        fanout = entry(root, FANOUT[0][0])
        assert run("prune", fanout.id, "--reason", "Not a real problem on this design").exit_code == 0
        before = snapshot(root)
        again = run("distil", "--domain", "synthesis", "--explain")
        assert again.exit_code == 0, again.output
        assert snapshot(root) == before
        assert f"already distilled into {fanout.id}, since pruned: Not a real problem" in again.stdout

    def test_a_finding_seen_again_on_a_retired_entry_is_said(self, run: Run, root: Path) -> None:
        """A run showing the finding of a retired entry is counted on it, with a warning naming the entry,
        its reason and the run: the retirement said the problem was gone."""
        write_log(root, "synthesis", base_records())
        distil(run)
        fanout = entry(root, FANOUT[0][0])
        assert run("retire", fanout.id, "--reason", "The enable tree was rewritten").exit_code == 0
        write_log(root, "synthesis", [*base_records(), record("r9", 20, *FANOUT)])
        again = run("distil", "--domain", "synthesis")
        assert again.exit_code == 0, again.output
        assert f"{fanout.id} is retired (The enable tree was rewritten) but run r9 showed its finding" in again.stderr
        assert "r9" in entry(root, FANOUT[0][0]).evidence

    def test_a_failed_run_is_a_failure_not_a_confirmation(self, run: Run, root: Path) -> None:
        """The known fix without signoff goes to `failed`; `confirmed` counts only the runs where it worked."""
        write_log(root, "synthesis", base_records())
        distil(run)
        fanout = entry(root, FANOUT[0][0])
        assert fanout.evidence == ("r2", "r5") and fanout.failed == ("r1",) and fanout.confirmed == "2"
        write_log(root, "synthesis", [*base_records(), record("r6", 9, *FANOUT, signoff=False)])
        result = distil(run)
        after = entry(root, FANOUT[0][0])
        assert after.failed == ("r1", "r6") and after.evidence == ("r2", "r5") and after.confirmed == "2"
        assert fanout.id in result["failed"] and fanout.id not in result["confirmed"]

    def test_counts_come_from_one_list(self, run: Run, root: Path) -> None:
        """confirmed, evidence and the body's 'Seen in N runs' agree, after every distillation."""
        records = base_records()
        write_log(root, "synthesis", records)
        distil(run)
        for n in range(6, 9):
            records.append(record(f"r{n}", n + 3, *FANOUT, signoff=n != 7))
            write_log(root, "synthesis", records)
            distil(run)
            for found in knowledge(root).entries:
                flat = " ".join(found.body.split())
                assert found.confirmed == str(len(found.evidence)), found
                assert f"Seen in {len(found.evidence)} " in flat or "No run has confirmed" in flat, found
        fanout = entry(root, FANOUT[0][0])
        assert "Seen in 4 runs where this fix worked; 2 runs with this symptom did not reach signoff (r1, r7)" in (
            " ".join(fanout.body.split())
        )

    def test_the_first_fix_to_reach_signoff_becomes_the_entrys_fix(self, run: Run, root: Path) -> None:
        """An entry made from a failed run with no fix read its own words `No fix was recorded.` as its fix,
        so the first fix that worked was filed as contradicting them. It becomes the entry's fix."""
        issue = ["LVS fails on the missing VDDIO label in the pad ring"]
        write_log(root, "synthesis", [record("f1", 1, issue, [], signoff=False)])
        run("distil", "--domain", "synthesis", "--min-records", "1")
        fix = ["Add the missing VDDIO label to the pad ring"]
        write_log(root, "synthesis", [record("f1", 1, issue, [], signoff=False), record("f2", 2, issue, fix)])
        said = distil(run, "synthesis", "--min-records", "1")
        assert said["contradictions"] == []
        found = knowledge(root).entries[0]
        body = " ".join(found.body.split())  # as wrapped in the file
        assert found.evidence == ("f2",) and found.contradicted is None and found.failed == ("f1",)
        assert "Fix: Add the missing VDDIO label to the pad ring." in body
        assert "No fix was recorded" not in body and "Seen in 1 run where this fix worked" in body

    def test_the_first_fix_is_adopted_within_one_distil_too(self, run: Run, root: Path) -> None:
        """The failed run and the fixed one in one log: the entry the first made was new (no counting
        sentence yet), so the fix was filed as a contradiction of 'No fix was recorded.' (review)."""
        issue = ["LVS fails on the missing VDDIO label in the pad ring of the north io bank"]
        fix = ["Add the missing VDDIO label to the pad ring"]
        write_log(root, "synthesis", [record("f1", 1, issue, [], signoff=False), record("f2", 2, issue, fix)])
        said = distil(run, "synthesis", "--min-records", "1")
        found = knowledge(root).entries[0]
        assert said["contradictions"] == [] and found.evidence == ("f2",) and found.contradicted is None
        assert "Fix: Add the missing VDDIO label to the pad ring." in " ".join(found.body.split())

    def test_contradictions_are_appended_never_overwritten(self, run: Run, root: Path) -> None:
        """Two different fixes that worked: both kept, in order; the same replacing fix again adds its run."""
        records = base_records()
        write_log(root, "synthesis", records)
        distil(run)
        fanout = entry(root, FANOUT[0][0])
        records.append(record("r7", 12, FANOUT[0], ["Upsize the hold buffers by two drive strengths"]))
        write_log(root, "synthesis", records)
        first = run("distil", "--domain", "synthesis")
        assert f"Contradiction: {fanout.id}" in first.stdout and "Upsize the hold buffers" in first.stdout
        records.append(record("r8", 14, FANOUT[0], ["Move the register file next to its clock buffer"]))
        records.append(record("r9", 15, FANOUT[0], ["Upsize the hold buffers by two drive strengths"]))
        write_log(root, "synthesis", records)
        distil(run)
        after = entry(root, FANOUT[0][0])
        items = parse_contradictions(after.contradicted)
        assert [(c.runs, c.fix) for c in items] == [
            (["r7", "r9"], "Upsize the hold buffers by two drive strengths"),
            (["r8"], "Move the register file next to its clock buffer"),
        ]
        assert after.evidence == fanout.evidence and "Fix: Cap fanout with `--max-fanout 16`." in after.body

    def test_alike_sentences_about_other_things_are_not_filed_together(self, run: Run, root: Path) -> None:
        """Three traps of a sentence encoder, each a new entry: another named object (USB / DDR PHY, 0.84),
        a negation ("does not converge" / "converges", 0.9), and another symptom of one object that shares
        its fix. A paraphrase of a known symptom is still confirmed on it."""
        usb, stage = "Setup timing fails on the USB PHY clock domain", "Add a register stage after the PHY"
        pipeline = "Add a pipeline stage to the branch predictor"
        records = [
            record("r1", 1, [usb], [stage]),
            record("r2", 2, ["Setup timing fails on the DDR PHY clock domain"], ["Retime the read data path"]),
            record("r3", 3, ["Hold fixing does not converge at the fast corner"], ["Allow buffers on the enables"]),
            record("r4", 4, ["Hold fixing converges at the fast corner but adds 4% area"], ["Use delay cells"]),
            record("r5", 5, ["Setup violations on the branch predictor path"], [pipeline]),
            record("r6", 6, ["Simulation mismatch between RTL and gates in the branch predictor"], [pipeline]),
            record("r7", 7, ["Setup timing violations in the USB PHY clock domain"], [stage]),
        ]
        write_log(root, "soc", records)
        distil(run, "soc")
        entries = {e.title: e for e in knowledge(root, "soc").entries}
        assert len(entries) == 6
        assert entries[usb].evidence == ("r1", "r7")
        for title, runs in (
            ("Setup timing fails on the DDR PHY clock domain", ("r2",)),
            ("Hold fixing converges at the fast corner but adds 4% area", ("r4",)),
            ("Simulation mismatch between RTL and gates in the branch predictor", ("r6",)),
        ):
            assert entries[title].evidence == runs and not entries[title].contradicted

    def test_a_fix_reworded_by_hand_still_confirms_with_the_runs_fix(self, run: Run, root: Path) -> None:
        """Someone rewrites a distilled entry's body (its fix now reads differently); a later run with the
        symptom and the fix its evidence runs used is a confirmation, not a contradiction."""
        fix = "Lower target density to 0.7"
        records = [record("c1", 1, ["Global placement diverges at high target density"], [fix])]
        write_log(root, "pnr", records)
        distil(run, "pnr", "--min-records", "1")
        (known,) = knowledge(root, "pnr").entries
        body = "**Global placement diverges at high target density.** Drop the density to 0.7; reviewed by Ana."
        assert run("set", known.id, "--body", body).exit_code == 0
        write_log(root, "pnr", [*records, record("c6", 6, ["Global placement diverges at high target density"], [fix])])
        distil(run, "pnr", "--min-records", "1")
        (after,) = knowledge(root, "pnr").entries
        assert after.evidence == ("c1", "c6") and not after.contradicted

    def test_new_findings_get_new_entries_not_unrelated_ones(self, run: Run, root: Path) -> None:
        """New issues with new flags become new entries; congestion and --skip-io entries stay untouched."""
        hotspot = add_by_hand(
            run, "placement", FAILURES, "Congestion hotspot near the SRAM macros",
            "**Routing congestion piles up at the SRAM macro corners.** Add a 10 um halo around each macro.",
        )  # fmt: skip
        skip = add_by_hand(
            run, "placement", FLAGS, "Skip IO placement with --skip-io in early runs",
            "**Early floorplan runs do not need IO placement.** Skipping it halves the run time.",
        )  # fmt: skip
        before = {e.id: e for e in knowledge(root, "placement").entries}
        records = [
            record("p1", 1, ["Congestion hotspot near the SRAM macros"], ["Add a 10 um halo around each macro"]),
            record("p2", 2, ["Timing-driven placement overshoots the buffer budget"], ["Run with --no-buffer"]),
            record("p3", 3, ["Cells left unplaced in the power-gated region"], ["Add --cell-padding 4"]),
            record("p4", 4, ["Global placement stops early with overflow at 0.3"], ["Set --overflow-target 0.1"]),
            record("p5", 5, [], [], notes="Early run with `global_placement --skip-io`."),
        ]
        write_log(root, "placement", records)
        result = distil(run, "placement")
        assert len(result["added"][FAILURES]) == 3 and len(result["added"][FLAGS]) == 3
        flags = {e.title for e in knowledge(root, "placement").entries if e.id in result["added"][FLAGS]}
        assert flags == {
            f"`{f}` in signed-off runs" for f in ("--no-buffer", "--cell-padding 4", "--overflow-target 0.1")
        }
        after = {e.id: e for e in knowledge(root, "placement").entries}
        assert after[hotspot].evidence == ("p1",) and after[hotspot].body == before[hotspot].body
        assert after[skip].evidence == ("p5",) and not after[skip].contradicted and not after[hotspot].contradicted

    def test_a_flag_entry_counts_only_runs_that_used_the_flag(self, run: Run, root: Path) -> None:
        """A run that used `-noretime` (an option with no command) is evidence on nothing; `-setup` needs
        its command; a run that used the flag confirms it."""
        write_log(root, "synthesis", base_records())
        distil(run)
        fanout_flag = entry(root, "`--max-fanout 16` in signed-off runs")
        records = [
            *base_records(),
            record("r6", 9, [], [], notes="Retiming moved the FPU registers; `-noretime` kept them in place."),
            record("r7", 10, ["Clock gating check fails"], ["Relax it with set_clock_gating_check -setup 0.2"]),
        ]
        write_log(root, "synthesis", records)
        result = distil(run)
        assert entry(root, "`--max-fanout 16` in signed-off runs").evidence == fanout_flag.evidence
        titles = [e.title for e in knowledge(root).entries]
        assert "`set_clock_gating_check -setup 0.2` in signed-off runs" in titles
        assert not any("noretime" in t or t.startswith("`-setup") for t in titles)
        r6 = [d for d in result["decisions"] if d["run"] == "r6"]
        assert [d["action"] for d in r6] == ["ignored"]
        # a run that avoided the flag did not use it: "Do not ..." gave the flag entry its evidence
        avoided = record("r8", 11, ["Routing congestion near the macros"], ["Do not cap fanout with --max-fanout 16"])
        write_log(root, "synthesis", [*records, avoided])
        distil(run)
        assert "r8" not in entry(root, "`--max-fanout 16` in signed-off runs").evidence

    def test_a_note_stays_with_the_issue_it_speaks_of(self, run: Run, root: Path) -> None:
        """One record, two issues: each entry's body holds only its own issue's note."""
        records = base_records()
        records.append(
            record(
                "r6", 9, ["ABC crashes on large LUT mapping", "Hold slack negative at the sky130 fast corner"],
                ["Run abc with -fast on the big partitions", "Add hold buffers at the fast corner"],
                notes="ABC segfaults above 2 million LUTs. The sky130 liberty lacks a hold corner; PDK quirk.",
            )
        )  # fmt: skip
        write_log(root, "synthesis", records)
        distil(run)
        abc = entry(root, "ABC crashes on large LUT mapping")
        hold = entry(root, "Hold slack negative at the sky130 fast corner")
        assert "segfaults" in abc.body and "sky130" not in abc.body
        assert "sky130 liberty lacks a hold corner" in hold.body and "segfault" not in hold.body

    def test_paraphrases_merge_and_a_hand_written_entry_is_confirmed(self, run: Run, root: Path) -> None:
        """The same symptom worded two ways is one entry; 'Timing closes with --max-fanout 16', written
        by hand, is confirmed instead of a near-copy being added."""
        written = add_by_hand(
            run, "synthesis", FLAGS, "Timing closes with --max-fanout 16",
            "**Capping fanout at 16 closes timing.** Found by hand before the logs existed.",
        )  # fmt: skip
        records = [
            record("r1", 1, ["Hold violations after placement on the register file write port"], [FANOUT[1][0]]),
            record("r2", 2, ["Register file write port misses hold once placed"], [FANOUT[1][0]]),
            record("r3", 3, ["Hold failures on the regfile write port once the design is placed"], [FANOUT[1][0]]),
            record("r4", 4, *LATCH),
            record("r5", 5, ["Latch inferred in the UART baud generator after the divider rewrite"], LATCH[1]),
        ]
        write_log(root, "synthesis", records)
        result = distil(run)
        assert len(result["added"][FAILURES]) == 2 and result["added"][FLAGS] == []
        hold = entry(root, records[0]["issues_encountered"][0])
        assert hold.evidence == ("r1", "r2", "r3") and entry(root, LATCH[0][0]).evidence == ("r4", "r5")
        flag = next(e for e in knowledge(root).entries if e.id == written)
        assert flag.evidence == ("r1", "r2", "r3") and flag.confirmed == "3"
        assert flag.body.startswith("**Capping fanout at 16 closes timing.** Found by hand")

    def test_a_hand_written_body_is_never_rewritten(self, run: Run, root: Path) -> None:
        """An entry written by hand gains runs in its metadata; its body, counts and all, stays as written."""
        body = "**Hold violations after placement.** Seen in 2 places on the core. Cap fanout with --max-fanout 16."
        written = add_by_hand(run, "synthesis", FAILURES, "Hold violations after placement", body)
        before = next(e for e in knowledge(root).entries if e.id == written).body
        write_log(root, "synthesis", base_records())
        distil(run)
        after = next(e for e in knowledge(root).entries if e.id == written)
        assert after.body == before and after.evidence == ("r2", "r5") and after.failed == ("r1",)

    def test_unrelated_runs_that_share_words_stay_apart(self, run: Run, root: Path) -> None:
        """'Hold violations on the scan chain' is not 'Hold violations after placement': a new entry."""
        scan = ["Hold violations on the scan chain after placement"]
        records = [*base_records(), record("r6", 9, scan, ["Insert lockup latches where the chain crosses domains"])]
        write_log(root, "synthesis", records)
        distil(run)
        scan = entry(root, "Hold violations on the scan chain after placement")
        assert scan.evidence == ("r6",) and not entry(root, FANOUT[0][0]).contradicted

    def test_explain_prints_entry_score_and_why(self, run: Run, root: Path) -> None:
        """--explain: one line per finding of each record, with the entry, the score and the reason."""
        write_log(root, "synthesis", base_records())
        distil(run)
        write_log(root, "synthesis", [*base_records(), record("r6", 9, ["Hold violations once placed"], FANOUT[1])])
        out = run("distil", "--domain", "synthesis", "--explain").stdout
        fanout = entry(root, FANOUT[0][0])
        line = next(line for line in out.splitlines() if line.strip().startswith("r6 line 6: symptom"))
        assert f"confirmed -> {fanout.id} (" in line and "same fix, signed off" in line
        assert "r1 line 1: run: already" in out

    def test_a_later_day_without_new_records_changes_no_byte(self, run: Run, root: Path, monkeypatch) -> None:
        """_Last distilled: dates the last distillation that changed something, not the last run."""
        import memfiles.services.distiller.distill as distill_module

        write_log(root, "synthesis", base_records())
        distil(run)
        path = root / "memory" / "synthesis" / "knowledge.md"
        before = path.read_bytes()
        monkeypatch.setattr(distill_module, "today", lambda: "2031-01-01")
        assert not distil(run)["updated"] and path.read_bytes() == before
        write_log(root, "synthesis", [*base_records(), record("r6", 9, *LATCH)])
        assert distil(run)["updated"]
        assert "_Last distilled: 2031-01-01 from 6 experience records._" in path.read_text()

    def test_a_later_day_changes_no_byte_with_the_low_signoff_flag_either(
        self, run: Run, root: Path, monkeypatch
    ) -> None:
        """The flag sentence is wrapped in the file and one line when drafted: compared as words, a later
        day with no new record still writes nothing (`make demo` dirtied the bundled sta sample)."""
        import memfiles.services.distiller.distill as distill_module

        write_log(root, "sta", [record(f"f{n}", n + 1, *FANOUT, signoff=n == 0) for n in range(5)])
        run("distil", "--domain", "sta")
        path = root / "memory" / "sta" / "knowledge.md"
        before = path.read_bytes()
        assert "under 50%" in path.read_text()
        monkeypatch.setattr(distill_module, "today", lambda: "2031-01-01")
        assert not distil(run, "sta")["updated"] and path.read_bytes() == before

    def test_notes_line_is_replaced_and_low_signoff_flagged(self, run: Run, root: Path) -> None:
        """One _Last distilled_ line, replaced on each run; under 50% signoff the failure modes are named."""
        failing = [record(f"f{n}", n + 1, *FANOUT, signoff=n == 0) for n in range(5)]
        write_log(root, "sta", failing)
        run("distil", "--domain", "sta")
        write_log(root, "sta", [*failing, record("f9", 20, *LATCH, signoff=False)])
        run("distil", "--domain", "sta")
        notes = next(s for s in knowledge(root, "sta").sections if s.name == "Notes").intro
        assert notes.count("_Last distilled:") == 1 and "from 6 experience records._" in notes
        assert "Signoff rate is 17%, under 50%" in notes and "Hold violations after placement (4)" in notes

    def test_words_written_under_notes_by_hand_are_kept(self, run: Run, root: Path) -> None:
        """A line a person added under ## Notes was deleted by the next distil, which replaced the whole
        section; only the distiller's own lines are replaced now."""
        write_log(root, "synthesis", base_records()[:4])
        run("distil", "--domain", "synthesis", "--min-records", "4")
        path = root / "memory" / "synthesis" / "knowledge.md"
        text = path.read_text()
        mine = "Runs before October used the old PDK: read their counts with care."
        path.write_text(text.replace("_Last distilled:", mine + "\n\n_Last distilled:"))
        write_log(root, "synthesis", base_records())
        run("distil", "--domain", "synthesis")
        notes = next(s for s in knowledge(root).sections if s.name == "Notes").intro
        assert mine in notes and notes.count("_Last distilled:") == 1 and "from 5 experience records._" in notes
        # typed right under and right above the distiller's line, with no blank line between (review)
        under, above = "Ask Dana before trusting r4.", "Counts exclude the October reruns."
        text = path.read_text()
        last = next(line for line in text.split("\n") if line.startswith("_Last distilled:"))
        path.write_text(text.replace(last, f"{above}\n{last}\n{under}"))
        write_log(root, "synthesis", [*base_records(), record("r6", 6, *FANOUT)])
        run("distil", "--domain", "synthesis")
        notes = next(s for s in knowledge(root).sections if s.name == "Notes").intro
        assert under in notes and above in notes and mine in notes
        assert notes.count("_Last distilled:") == 1 and "from 6 experience records._" in notes

    def test_a_section_renamed_in_another_case_is_still_that_section(self, run: Run, root: Path) -> None:
        """`## Known failure patterns` (renamed by hand) hid its entries from the distiller: a known symptom
        became a second entry under a second `## Known Failure Patterns` heading."""
        write_log(root, "synthesis", base_records()[:4])
        run("distil", "--domain", "synthesis", "--min-records", "4")
        path = root / "memory" / "synthesis" / "knowledge.md"
        path.write_text(path.read_text().replace("## Known Failure Patterns", "## Known failure patterns"))
        before = [e.id for e in knowledge(root).entries]
        write_log(root, "synthesis", base_records())
        assert run("distil", "--domain", "synthesis").exit_code == 0
        text = path.read_text()
        assert "## Known Failure Patterns" not in text and text.count("## Known failure patterns") == 1
        assert [e.id for e in knowledge(root).entries] == before  # r5 confirmed its entry; nothing new

    def test_manual_section_is_untouched(self, run: Run, root: Path) -> None:
        """The user's Manual survives distillation byte for byte."""
        write_log(root, "synthesis", base_records()[:4])
        run("distil", "--domain", "synthesis", "--min-records", "4")
        path = root / "memory" / "synthesis" / "knowledge.md"
        manual = "## Manual\n\nAsk Dana before changing the fanout cap.   \n"
        path.write_text(path.read_text().split("## Manual")[0] + manual)
        write_log(root, "synthesis", base_records())
        run("distil", "--domain", "synthesis")
        assert path.read_text().endswith(manual)


class TestBrokenKnowledge:
    def test_a_knowledge_file_that_is_not_utf8_is_named_with_its_line(self, run: Run, root: Path) -> None:
        """A byte of Latin-1 in knowledge.md: exit 2 with a parse error object naming the file and line
        (it was a UnicodeDecodeError traceback, exit 1, nothing on stdout); the file is left as it was."""
        write_log(root, "synthesis", base_records())
        distil(run)
        path = root / "memory" / "synthesis" / "knowledge.md"
        path.write_bytes(path.read_bytes() + b"\n<!-- caf\xe9 -->\n")
        before = path.read_bytes()
        line = before.count(b"\n")
        result = run("distil", "--domain", "synthesis", "--json")
        error = json.loads(result.stdout)["error"]
        assert result.exit_code == 2 and (error["code"], error["path"], error["line"]) == (
            "parse",
            "memory/synthesis/knowledge.md",
            line,
        )
        assert path.read_bytes() == before


class TestLayout:
    def test_sections_added_later_stand_above_the_notes(self, run: Run, root: Path) -> None:
        """A domain whose first distil had only failures: the flags and quirks of a later run go above
        Notes, in the layout of a first distil, not below it (where the notes' line sat mid-file)."""
        write_log(root, "route", [record("r1", 1, ["Detailed routing leaves shorts on metal 2"], ["Add a blockage"])])
        distil(run, "route", "--min-records", "1")
        later = record("r2", 2, [], [], notes="Ran with --droute-end-iter 80. The PDK has a known issue with vias.")
        write_log(
            root, "route", [record("r1", 1, ["Detailed routing leaves shorts on metal 2"], ["Add a blockage"]), later]
        )
        distil(run, "route", "--min-records", "1")
        names = [section.name for section in knowledge(root, "route").sections]
        assert names == [FAILURES, FLAGS, QUIRKS, "Notes"]
        assert run("check").exit_code == 0


class TestCarriedOver:
    def test_an_error_left_by_hand_in_the_file_is_said_as_add_says_it(self, run: Run, root: Path) -> None:
        """A status typed by hand that check refuses: the next distil writes the file and warns, naming the
        line, as `add` into that file does (it said nothing)."""
        write_log(root, "synthesis", base_records())
        distil(run)
        path = root / "memory" / "synthesis" / "knowledge.md"
        path.write_text(path.read_text().replace("- status: active", "- status: bogus", 1))
        more = record("r6", 6, ["ABC mapping crashes on the floating point unit"], ["Map the FPU with abc9"])
        write_log(root, "synthesis", [*base_records(), more])
        report = distil(run)
        assert report["updated"]
        assert any("bad-status" in w and "there before this write" in w for w in report["warnings"]), report


class TestConcurrency:
    def test_distils_run_at_once_file_a_new_finding_once(self, run: Run, root: Path) -> None:
        """Three `memfiles distil` processes started together over one new record: each read the file
        before another wrote and added the finding again (three entries, `check` silent). Now one adds
        it and the others count it as already distilled."""
        import subprocess
        import sys

        write_log(root, "synthesis", base_records())
        distil(run)
        new = record("r6", 6, ["ABC mapping crashes on the floating point unit"], ["Map the FPU with abc9"])
        write_log(root, "synthesis", [*base_records(), new])
        binary = Path(sys.executable).parent / "memfiles"
        env = {**os.environ, "MEMFILES_SEARCH_WATCH": "0"}
        command = [str(binary), "--root", str(root), "distil", "--domain", "synthesis", "--json"]
        procs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
        outputs = [proc.communicate(timeout=300) for proc in procs]
        assert [proc.returncode for proc in procs] == [0, 0, 0], [err for _, err in outputs]
        titles = [e.title for e in knowledge(root).entries]
        assert titles.count(new["issues_encountered"][0]) == 1
        added = [json.loads(out)["domains"][0]["added"][FAILURES] for out, _ in outputs]
        assert sorted(len(ids) for ids in added) == [0, 0, 1]


class TestReport:
    def test_report_format_and_all_table(self, run: Run, root: Path) -> None:
        """The seed's per-domain block, then the --all table with skipped domains and their counts."""
        write_log(root, "synthesis", base_records())
        write_log(root, "placement", base_records()[:2])
        out = run("distil", "--all").stdout
        for label in (
            "Domain:        synthesis",
            "Records read:  5",
            "Date range:    2026-10-01T10:00:00Z → 2026-10-05T10:00:00Z",
            "Signoff rate:  80%",
            "New entries:   +2 Known Failure Patterns, +",
            "Annotations:   0 existing",
            "knowledge.md:  memory/synthesis/knowledge.md  [updated]",
        ):
            assert label in out
        assert "placement            2" in out and "skipped (2 valid records" in out
        assert "synthesis            5     80%" in out

    def test_json_uses_the_contract(self, run: Run, root: Path) -> None:
        """--json: one object holding each domain's report; what was written is the contract's write object."""
        from memfiles.contract import write_object

        write_log(root, "synthesis", base_records())
        report = json.loads(run("distil", "--all", "--json").stdout)["domains"][0]
        assert set(report["write"]) == set(write_object())
        assert report["write"]["added"] == [i for ids in report["added"].values() for i in ids]
        assert {e["id"] for e in report["write"]["entries"]} == set(report["write"]["added"])
        assert all(set(d) == {"run", "line", "finding", "text", "action", "entry", "score", "why", "signals"}
                   for d in report["decisions"])  # fmt: skip
        assert report["matching"] == "model"

    def test_dry_run_says_would_update_and_lists_titles(self, run: Run, root: Path, monkeypatch) -> None:
        """--dry-run writes nothing, says [would update] and "Would add", and its JSON `added` holds the titles
        of the entries it would add (no id is handed out); the real run then adds those titles, with ids."""
        monkeypatch.setenv("MEMFILES_MODEL", str(root / "no-such-model"))  # word overlap: fast, same filing
        write_log(root, "synthesis", base_records())
        text = run("distil", "--domain", "synthesis", "--dry-run")
        assert text.exit_code == 0 and "[would update]" in text.stdout and "[unchanged]" not in text.stdout
        assert "Would add:" in text.stdout
        dry = distil(run, "synthesis", "--dry-run")
        assert dry["dry_run"] is True and dry["updated"] is True and dry["write"] is None
        assert not (root / "memory" / "synthesis" / "knowledge.md").exists()
        titles = [title for items in dry["added"].values() for title in items]
        assert titles and not any(title.startswith("(new)") for title in titles)
        real = distil(run)
        assert real["dry_run"] is False
        added = [i for ids in real["added"].values() for i in ids]
        assert all(re.fullmatch(r"L-\d{3}", i) for i in added)
        assert sorted(entry_json_title(root, i) for i in added) == sorted(titles)
        assert "[unchanged]" in run("distil", "--domain", "synthesis", "--dry-run").stdout

    def test_without_the_model_symptoms_match_by_words_and_it_says_so(self, run: Run, root: Path, monkeypatch) -> None:
        """No model to load: the distiller still files records, by word overlap, and says so."""
        monkeypatch.setenv("MEMFILES_MODEL", str(root / "no-such-model"))
        write_log(root, "synthesis", base_records())
        first = run("distil", "--domain", "synthesis")
        assert first.exit_code == 0 and "by word overlap" in first.stdout and "[updated]" in first.stdout
        assert entry(root, FANOUT[0][0]).evidence == ("r2", "r5")
        again = distil(run)
        assert again["matching"] == "lexical" and not again["updated"]


class TestMatchingRules:
    @pytest.mark.parametrize(
        ("a", "b", "apart"),
        [
            ("Setup timing fails on the USB PHY clock domain", "Setup timing fails on the DDR PHY clock domain", True),
            ("Error E1234 in the loader", "Error E1235 in the loader", True),
            ("Hold violations on u_core", "Hold violations on u_io", True),
            ("ERROR: Setup violations at the slow corner", "Setup violations at the slow corner (WNS -0.21 ns)", False),
            ("Setup fails on the USB PHYs after CTS", "Setup fails on the USB PHY after clock tree synthesis", False),
            ("DRC violations on M2 near the SRAMs", "DRC violations on metal 2 near the SRAM macros", False),
            ("Hold fails on x86_64 builds", "Hold fails on x86-64 builds", False),
            ("Timing on gf180mcu corners", "Timing on GF180 corners", False),
        ],
    )
    def test_named_things_set_symptoms_apart_only_in_the_same_place(self, a: str, b: str, apart: bool) -> None:
        """Another acronym, numbered name or identifier where the other text has its own, the words around
        alike; not a name only one side spells out or adds, nor one extending the other."""
        from memfiles.services.distiller.matching import names_other_things

        assert names_other_things(a, b) is apart

    @pytest.mark.parametrize(
        ("a", "b", "apart"),
        [
            ("IR drop exceeds 5% in the core centre", "IR drop does not exceed 5% in the core centre", True),
            ("Hold fixing does not converge at the corner", "Hold fixing converges at the corner but adds area", True),
            ("Import fails: No module named 'yaml'", "Import fails: the yaml module is missing", False),
            ("ModuleNotFoundError: No module named 'yaml'", "ModuleNotFoundError: No module named 'yaml' in CI", False),
        ],
    )
    def test_a_negation_sets_apart_only_the_same_words_said_not(self, a: str, b: str, apart: bool) -> None:
        """`not` on one side counts when the rest is the same statement; an error's own "No module" does not."""
        from memfiles.services.distiller.matching import negated_apart

        assert negated_apart(a, b) is apart

    @pytest.mark.parametrize(
        ("a", "b", "same"),
        [
            ("Cap fanout with --max-fanout 32 before mapping", "Cap fanout with --max-fanout 16 before mapping", False),
            ("Lower target density to 0.5", "Lower target density to 0.7", False),
            ("Lower target density to 0.7.", "Lower target density to 0.5", False),  # a full stop after it
            ("Cap fanout at 32.", "Cap fanout at 16", False),
            ("Widen the channel to 20 um", "Widen the channel to 20 nm", False),  # the same number, other units
            ("Raise target density to 0.95", "Lower target density to 0.7", False),
            ("Lower target density to 0.7", "Raise target density to 0.7", False),
            ("Do not retime the design before placement", "Retime the design before placement", False),
            ("Do not pass --skip-io", "Pass --skip-io", False),  # one flag, turned off
            ("Enable --fast-route for the top level", "Disable --fast-route for the top level", False),
            ("repair_timing -hold -hold_margin 0.1", "repair_timing -hold -hold_margin 0.05", False),
            ("Widen the macro channel to 20 um", "Widen the macro channel to 20um", True),
            ("Lower target density from 0.9 to 0.7", "Lower target density from 0.85 to 0.7", True),  # the old state
            ("Upsize the 14 failing cells to X4", "Upsize the 3 failing cells to X4", True),  # how many, not a setting
            ("Rerun step 2 with the new constraints", "Rerun step 3 with the new constraints", True),
            ("Cap fanout with --max-fanout 16 before mapping", "Use --max-fanout 16", True),
            ("Lower target density to 0.7", "Reduce the target density to 0.7", True),
        ],
    )
    def test_fixes_that_set_other_values_or_turn_the_other_way_are_other_fixes(
        self, root: Path, a: str, b: str, same: bool
    ) -> None:
        """A sentence encoder puts `--max-fanout 32` beside `16`, "Lower" beside "Raise" and "Do not
        retime" beside "Retime" at 0.83 to 0.99: the same advice only with the same settings and direction.
        Numbers that set nothing (a step, a count, the state before) do not set two fixes apart."""
        from memfiles.config import load_settings
        from memfiles.services.distiller.matching import Similarity

        similarity = Similarity(load_settings(root))
        assert similarity.mode == "model"
        assert similarity.same_fix(a, b)[0] is same

    def test_run_ids_with_a_colon_join_one_contradiction(self, run: Run, root: Path) -> None:
        """Run ids from other tools (`job:2`, an ISO timestamp) are kept, and two runs with one other fix
        are one contradicted item (it split into two when a run id held a colon)."""
        symptom = "Router ran out of tracks in the macro channel"
        first = record("r1", 1, [symptom], ["Widen the macro channel to 20 um"])
        write_log(root, "cx", [first])
        distil(run, "cx", "--min-records", "1")
        others = [
            record("job:2", 2, [symptom], ["Use metal 5 for the channel"]),
            record("2026-10-03T10:00:00Z", 3, [symptom], ["Use metal 5 for the channel"]),
        ]
        write_log(root, "cx", [first, *others])
        distil(run, "cx", "--min-records", "1")
        [item] = parse_contradictions(entry(root, symptom, "cx").contradicted)
        assert item.runs == ["job:2", "2026-10-03T10:00:00Z"]

    def test_a_run_with_another_value_contradicts_the_entry(self, run: Run, root: Path) -> None:
        """A signed-off run that capped fanout at 32 where the entry says 16 is a contradiction, not a
        confirmation: the entry's evidence keeps only the runs that used its fix."""
        symptom = "Hold violations after placement on the register file write port"
        first = record("r1", 1, [symptom], ["Cap fanout with --max-fanout 16 before mapping"])
        write_log(root, "synthesis", [first])
        distil(run, "synthesis", "--min-records", "1")
        other = record("r2", 2, [symptom], ["Cap fanout with --max-fanout 32 before mapping"])
        write_log(root, "synthesis", [first, other])
        report = distil(run, "synthesis", "--min-records", "1")
        hold = entry(root, symptom)
        assert hold.evidence == ("r1",) and "r2" in (hold.contradicted or "")
        assert [item["evidence"] for item in report["contradictions"]] == ["r2"]

    def test_a_run_with_two_issues_lends_an_entry_only_its_own_fix(self, run: Run, root: Path) -> None:
        """r1 fixed the hold issue one way and the latch another; r2, the hold issue with the latch's fix,
        contradicts the hold entry (it is not confirmed by the other issue's fix)."""
        records = [record("r1", 1, [FANOUT[0][0], LATCH[0][0]], [FANOUT[1][0], LATCH[1][0]])]
        write_log(root, "synthesis", records)
        distil(run, "synthesis", "--min-records", "1")
        write_log(root, "synthesis", [*records, record("r2", 2, [FANOUT[0][0]], [LATCH[1][0]])])
        distil(run, "synthesis", "--min-records", "1")
        hold = entry(root, FANOUT[0][0])
        assert hold.evidence == ("r1",) and "r2" in (hold.contradicted or "")
