"""`--drafter llm`: findings drafted by a model behind an OpenAI-compatible endpoint (a local fake here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Run
from tests.test_distill import base_records, knowledge, write_log


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
            decisions = json.loads(result.stdout)["domains"][0]["decisions"]
            assert {d["finding"] for d in decisions} == {"symptom"}  # the contract's word, not the section's name
            entry = knowledge(root).entries[0]
            assert "\n" not in entry.title and len(entry.title) <= 120 and entry.title.endswith("…")
            assert entry.evidence == ("r2",) and entry.failed == ("r1",) and entry.confirmed == "1"
            assert "Seen in 1 run" in " ".join(entry.body.split())
            again = json.loads(run("distil", "--domain", "synthesis", "--drafter", "llm", "--json").stdout)
            assert sum(len(v) for v in again["domains"][0]["added"].values()) == 0
            assert knowledge(root).entries[0].evidence == ("r2",)
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
        as_json = run("distil", "--domain", "synthesis", "--drafter", "llm", "--json")
        assert json.loads(as_json.stdout)["error"]["key"] == "llm_url"
        assert run("distil").exit_code == 2
