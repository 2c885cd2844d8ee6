"""The distiller: load_experiences, distil_knowledge and report, with the real index for dedupe."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memfiles import parse
from tests.conftest import Run


def record(run_id: str, day: int, issues, fixes, signoff: bool = True, notes: str = "", **metrics: float) -> dict:
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


class TestLoad:
    def test_summary_has_the_seed_fields(self, run: Run, root: Path) -> None:
        """--summary-json: counts, date range, signoff rate, pairs with counts, flags, metric ranges, notes."""
        write_log(root, "synthesis", base_records())
        summary = json.loads(run("distil", "--domain", "synthesis", "--summary-json").stdout)[0]
        assert summary["record_count"] == 5 and summary["records_skipped"] == 0
        assert summary["date_range"] == ["2026-10-01T10:00:00Z", "2026-10-05T10:00:00Z"]
        assert summary["signoff_rate"] == 0.8
        assert summary["issue_fix_pairs"][0] == {"issue": FANOUT[0][0], "fix": FANOUT[1][0], "count": 3}
        assert "--max-fanout" in summary["tool_flag_candidates"] and "abc -D 1250" in summary["tool_flag_candidates"]
        assert summary["metric_ranges"]["wns_ns"] == {"min": -0.4, "max": 0.5, "median": 0.05, "latest": 0.05}
        assert "Clean run." in summary["free_notes"]

    def test_malformed_lines_are_skipped_named_and_counted(self, run: Run, root: Path) -> None:
        """Bad JSON and bad fields: a warning naming file:line each, counted in records_skipped."""
        write_log(root, "synthesis", base_records(), ["{not json", json.dumps({"timestamp": "yesterday"})])
        result = run("distil", "--domain", "synthesis", "--json")
        assert result.exit_code == 0
        assert "memory/synthesis/experiences.jsonl:6: invalid JSON" in result.stderr
        assert "memory/synthesis/experiences.jsonl:7: timestamp 'yesterday' is not ISO-8601" in result.stderr
        assert json.loads(result.stdout)["records_skipped"] == 2

    def test_threshold_and_empty_file_skip(self, run: Run, root: Path) -> None:
        """Under --min-records, or an empty log: a skip notice and no knowledge file."""
        write_log(root, "sta", base_records()[:3])
        write_log(root, "empty", [])
        for domain in ("sta", "empty"):
            result = run("distil", "--domain", domain)
            assert (
                result.exit_code == 0 and "Skipped:" in result.stdout and "fewer than --min-records 5" in result.stdout
            )
            assert not (root / "memory" / domain / "knowledge.md").exists()
        assert run("distil", "--domain", "sta", "--min-records", "3").exit_code == 0
        assert (root / "memory" / "sta" / "knowledge.md").exists()

    def test_unknown_and_traversing_domains_are_refused(self, run: Run, root: Path) -> None:
        """'..', an absolute path, a missing log and a symlink out of the tree: exit 2 listing the valid domains."""
        write_log(root, "synthesis", base_records())
        outside = root.parent / f"{root.name}-outside"
        outside.mkdir()
        (outside / "experiences.jsonl").write_text(json.dumps(base_records()[0]) + "\n")
        os.symlink(outside, root / "memory" / "escape")
        (root / "memory" / "notes").mkdir()
        for bad in ("..", "/etc", "escape", "notes", "synthesis/../.."):
            result = run("distil", "--domain", bad)
            assert result.exit_code == 2, bad
            assert "valid domains: synthesis" in result.stderr, (bad, result.stderr)


class TestDistil:
    def test_first_run_adds_entries_and_second_adds_nothing(self, run: Run, root: Path) -> None:
        """Entries in the seed's sections and style; the same records again change nothing at all."""
        write_log(root, "synthesis", base_records())
        first = json.loads(run("distil", "--domain", "synthesis", "--json").stdout)
        assert len(first["added"]["Known Failure Patterns"]) == 2
        assert first["added"]["Successful Tool Flags"] and first["added"]["PDK / Tool Quirks"]
        memory = knowledge(root)
        fanout = next(e for e in memory.entries if e.title == FANOUT[0][0])
        prose = " ".join(fanout.body.split())  # the write path wraps the paragraph at 100 columns
        assert fanout.body.startswith(f"**{FANOUT[0][0]}.**") and "Fix: Cap fanout with --max-fanout 16." in prose
        assert fanout.evidence == ("r1", "r2", "r5") and fanout.confirmed == "3"
        assert memory.section_of(fanout.id) == "Known Failure Patterns"
        text = (root / "memory" / "synthesis" / "knowledge.md").read_text()
        second = json.loads(run("distil", "--domain", "synthesis", "--json").stdout)
        assert second["added"] == {k: [] for k in first["added"]} and second["annotated"] == []
        assert not second["updated"]
        assert (root / "memory" / "synthesis" / "knowledge.md").read_text() == text
        assert run("check").exit_code == 0

    def test_new_records_confirm_the_existing_entry(self, run: Run, root: Path) -> None:
        """A later record with a known finding bumps confirmed, last-seen and evidence; no second entry."""
        records = base_records()
        write_log(root, "synthesis", records)
        run("distil", "--domain", "synthesis")
        write_log(root, "synthesis", [*records, record("r6", 9, *FANOUT, notes="And again.")])
        result = json.loads(run("distil", "--domain", "synthesis", "--json").stdout)
        assert sum(len(v) for v in result["added"].values()) == 0
        fanout = next(e for e in knowledge(root).entries if e.title == FANOUT[0][0])
        assert fanout.confirmed == "4" and fanout.last_seen == "2026-10-09" and fanout.evidence[-1] == "r6"
        flag = next(e for e in knowledge(root).entries if e.title == "`--max-fanout` in signed-off runs")
        assert sorted(result["annotated"]) == sorted([fanout.id, flag.id])  # r6 signed off with the flag too

    def test_paraphrased_finding_is_confirmed_not_added(self, run: Run, root: Path) -> None:
        """An entry written by hand in other words is found through the index and confirmed."""
        write_log(root, "synthesis", base_records())
        run(
            "add",
            "-k",
            "lesson",
            "-t",
            "Hold fails after placement when a net drives hundreds of flops",
            "-a",
            "synthesis",
            "--file",
            "memory/synthesis/knowledge.md",
            "--section",
            "Known Failure Patterns",
            "--body",
            "**Hold violations once the design is placed.** Limiting fanout to 16 before mapping fixes it.",
        )
        assert run("backfill").exit_code == 0
        result = json.loads(run("distil", "--domain", "synthesis", "--json").stdout)
        assert result["dedupe"] == "index"
        assert "L-001" in result["annotated"]
        assert len(result["added"]["Known Failure Patterns"]) == 1  # the latch finding only
        assert knowledge(root).entries[0].evidence == ("r1", "r2", "r5")

    def test_contradicting_fix_is_flagged_never_overwritten(self, run: Run, root: Path) -> None:
        """Same symptom, a different fix that worked: the entry keeps its text and gains a contradiction note."""
        records = base_records()
        write_log(root, "synthesis", records)
        run("distil", "--domain", "synthesis")
        fanout = next(e for e in knowledge(root).entries if e.title == FANOUT[0][0])
        write_log(
            root,
            "synthesis",
            [*records, record("r7", 12, FANOUT[0], ["Upsize the hold buffers by two drive strengths"])],
        )
        result = run("distil", "--domain", "synthesis")
        assert f"Contradiction: {fanout.id}" in result.stdout
        after = next(e for e in knowledge(root).entries if e.id == fanout.id)
        assert after.body == fanout.body
        assert after.contradicted and "Upsize the hold buffers" in after.contradicted and "r7" in after.contradicted

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

    def test_index_unreachable_distils_with_lexical_dedupe(self, run: Run, root: Path, monkeypatch) -> None:
        """With the index on a closed port the distiller still writes, dedupes by word overlap and says so."""
        write_log(root, "synthesis", base_records())
        monkeypatch.setenv("MEMFILES_CHROMA_URL", "http://127.0.0.1:9")
        monkeypatch.setenv("MEMFILES_INDEX_TIMEOUT", "0.5")
        first = run("distil", "--domain", "synthesis")
        assert first.exit_code == 0 and "word overlap" in first.stdout
        assert "[updated]" in first.stdout
        again = json.loads(run("distil", "--domain", "synthesis", "--json").stdout)
        assert again["dedupe"] == "lexical" and not again["updated"]


@pytest.mark.integration
class TestDupes:
    def test_add_warns_and_unique_refuses(self, run: Run, root: Path) -> None:
        """add names a near-duplicate and still adds; --unique refuses with exit 1 and writes nothing."""
        run(
            "add",
            "-k",
            "F",
            "-t",
            "Chroma hangs when two processes open one folder",
            "-a",
            "index",
            "--body",
            "Two PersistentClients on the same directory wait for minutes.",
        )
        run("backfill")
        warned = run(
            "add",
            "-k",
            "F",
            "-t",
            "Two processes on one Chroma folder hang",
            "-a",
            "index",
            "--body",
            "A second PersistentClient on the same directory waits for minutes.",
        )
        assert warned.exit_code == 0 and "near-duplicate" in warned.stderr and "F-001" in warned.stderr
        before = (root / "memory" / "frictions.md").read_text()
        refused = run(
            "add",
            "-k",
            "F",
            "-t",
            "Chroma hangs with two processes on a folder",
            "-a",
            "index",
            "--body",
            "Two PersistentClients on one directory hang for minutes.",
            "--unique",
        )
        assert refused.exit_code == 1 and "refused" in refused.stderr
        assert (root / "memory" / "frictions.md").read_text() == before
        pairs = json.loads(run("dupes", "--json").stdout)
        assert pairs["mode"] == "index" and {(p["a"], p["b"]) for p in pairs["pairs"]} == {("F-001", "F-002")}


class TestLlmDrafter:
    def test_answers_are_found_bare_fenced_or_in_prose(self) -> None:
        """parse_answer takes bare JSON, one fenced block or JSON inside prose; two blocks are refused."""
        from memfiles.services.drafter import parse_answer

        ops = '{"ops": [{"op": "add"}]}'
        assert parse_answer(ops) == [{"op": "add"}]
        assert parse_answer(f"Here you go:\n```json\n{ops}\n```\nDone.") == [{"op": "add"}]
        assert parse_answer(f"Sure. {ops} Hope it helps.") == [{"op": "add"}]
        assert parse_answer('[{"op": "add"}]') == [{"op": "add"}]
        with pytest.raises(ValueError, match="more than one code block"):
            parse_answer(f"```\n{ops}\n```\n```\n{ops}\n```")
        with pytest.raises(ValueError, match="not valid JSON"):
            parse_answer("no json here")

    def test_refused_answer_is_retried_once_then_written_and_deduplicated(self, run: Run, root: Path) -> None:
        """A local fake endpoint: the first answer lacks a body and is refused with the reason; the second is
        normalised (title on one line, clipped) and written; a second distillation adds nothing."""
        import http.server
        import threading

        seen: list[dict] = []
        good = {
            "ops": [
                {
                    "op": "add",
                    "section": "Known Failure Patterns",
                    "evidence": ["r1", "r2"],
                    "title": "Hold violations\nafter placement " + "on the write port " * 10,
                    "body": "**Hold fails after placement.** Fanout was unbounded. Cap it at 16.",
                }
            ]
        }
        answers = [
            'Here:\n```json\n{"ops": [{"op": "add", "section": "Known Failure Patterns", "title": "x"}]}\n```',
            json.dumps(good),
            json.dumps(good),
        ]

        class Fake(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                seen.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                reply = json.dumps({"choices": [{"message": {"content": answers[len(seen) - 1]}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: object) -> None:
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Fake)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            write_log(root, "synthesis", base_records())
            (root / "memory" / "memfiles.toml").write_text(f'llm_url = "http://127.0.0.1:{server.server_port}/v1"\n')
            result = run("distil", "--domain", "synthesis", "--drafter", "llm", "--json")
            assert result.exit_code == 0, result.output
            assert len(seen) == 2 and "refused" in seen[1]["messages"][-1]["content"]
            assert "add needs body" in seen[1]["messages"][-1]["content"]
            entry = knowledge(root).entries[0]
            assert "\n" not in entry.title and len(entry.title) <= 120 and entry.title.endswith("…")
            assert entry.evidence == ("r1", "r2")
            again = json.loads(run("distil", "--domain", "synthesis", "--drafter", "llm", "--json").stdout)
            assert sum(len(v) for v in again["added"].values()) == 0
        finally:
            server.shutdown()


class TestDistilErrors:
    def test_unreachable_drafter_fails_cleanly_and_writes_nothing(self, run: Run, root: Path) -> None:
        """--drafter llm with nothing listening: exit 2 naming the endpoint; no knowledge file."""
        write_log(root, "synthesis", base_records())
        (root / "memory" / "memfiles.toml").write_text('llm_url = "http://127.0.0.1:9/v1"\n')
        result = run("distil", "--domain", "synthesis", "--drafter", "llm")
        assert result.exit_code == 2 and "http://127.0.0.1:9/v1" in result.stderr
        assert not (root / "memory" / "synthesis" / "knowledge.md").exists()

    def test_drafter_without_url_and_missing_choice_are_usage_errors(self, run: Run, root: Path) -> None:
        """--drafter llm with no llm_url configured, or neither --domain nor --all: exit 2."""
        write_log(root, "synthesis", base_records())
        no_url = run("distil", "--domain", "synthesis", "--drafter", "llm")
        assert no_url.exit_code == 2 and "llm_url" in no_url.stderr
        assert run("distil").exit_code == 2
