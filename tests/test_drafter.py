"""`--drafter llm`: findings drafted by a model behind an OpenAI-compatible endpoint (a local fake here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Run
from tests.test_distill import base_records, knowledge, write_log


class Model:
    """A local OpenAI-compatible endpoint whose answer is `answer(request body)`: (HTTP status, content)."""

    def __init__(self, answer) -> None:  # type: ignore[no-untyped-def]
        import http.server
        import threading

        self.seen: list[dict] = []
        seen = self.seen

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                seen.append(body)
                status, content = answer(body)
                reply = json.dumps({"choices": [{"message": {"content": content}}]}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/v1"

    def close(self) -> None:
        self.server.shutdown()


def by_domain(refused: dict[str, int], asked: list[str] | None = None) -> Model:
    """A model that answers each domain in `refused` with that HTTP status, and any other with one finding."""

    def answer(body: dict) -> tuple[int, str]:
        domain = json.loads(body["messages"][1]["content"].split("\n", 1)[1])["summary"]["domain"]
        if asked is not None:
            asked.append(domain)
        if domain in refused:
            return refused[domain], "{}"
        title, text = "Hold violations after placement", "**Hold fails after placement.** Cap the fanout at 16."
        return 200, json.dumps({"ops": [add_op("Known Failure Patterns", title, text, ["r2"])]})

    return Model(answer)


def records_of(body: dict) -> list[dict]:
    """The records a request gave the model (its last user message: JSON after the first line)."""
    text = body["messages"][1]["content"]
    return json.loads(text.split("\n", 1)[1])["records"]


def add_op(section: str, title: str, body: str, evidence: object) -> dict:
    return {"op": "add", "section": section, "title": title, "body": body, "evidence": evidence}


class TestLlmDrafter:
    def test_answers_are_found_bare_fenced_or_in_prose(self) -> None:
        """parse_answer takes bare JSON, one fenced block or JSON inside prose; two blocks are refused."""
        from memfiles.services.distiller.drafter import parse_answer

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

        model = Model(lambda body: (200, answers[len(model.seen) - 1]))
        seen = model.seen
        try:
            write_log(root, "synthesis", base_records())
            (root / "memory" / "memfiles.toml").write_text(f'llm_url = "{model.url}"\n')
            result = run("distil", "--domain", "synthesis", "--drafter", "llm", "--json")
            assert result.exit_code == 0, result.output
            assert len(seen) == 2 and "refused" in seen[1]["messages"][-1]["content"]
            assert "add needs body" in seen[1]["messages"][-1]["content"]
            decisions = json.loads(result.stdout)["domains"][0]["decisions"]
            filed = {d["finding"] for d in decisions if d["action"] != "ignored"}  # r3, r4: cited by no finding
            assert filed == {"symptom"}  # the contract's word, not the section's name
            entry = knowledge(root).entries[0]
            assert "\n" not in entry.title and len(entry.title) <= 120 and entry.title.endswith("…")
            assert entry.evidence == ("r2",) and entry.failed == ("r1",) and entry.confirmed == "1"
            assert "Seen in 1 run" in " ".join(entry.body.split())
            again = json.loads(run("distil", "--domain", "synthesis", "--drafter", "llm", "--json").stdout)
            assert sum(len(v) for v in again["domains"][0]["added"].values()) == 0
            assert knowledge(root).entries[0].evidence == ("r2",)
        finally:
            model.close()


class TestDistilErrors:
    @pytest.mark.slow
    def test_unreachable_drafter_fails_cleanly_and_writes_nothing(self, run: Run, root: Path) -> None:
        """--drafter llm with nothing listening: exit 2 naming the endpoint; no knowledge file."""
        write_log(root, "synthesis", base_records())
        (root / "memory" / "memfiles.toml").write_text('llm_url = "http://127.0.0.1:9/v1"\n')
        result = run("distil", "--domain", "synthesis", "--drafter", "llm")
        assert result.exit_code == 2 and "http://127.0.0.1:9/v1" in result.stderr
        assert not (root / "memory" / "synthesis" / "knowledge.md").exists()

    def test_a_model_that_never_answers_is_asked_once(self, run: Run, root: Path) -> None:
        """A model that takes the connection and never answers held distil 8 minutes (4 attempts of 120 s,
        not configurable). Now one request of llm_timeout, then exit 2 (`drafter`) naming the setting."""
        import socket

        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        try:
            write_log(root, "synthesis", base_records())
            url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
            (root / "memory" / "memfiles.toml").write_text(f'llm_url = "{url}"\nllm_timeout = 1\n')
            result = run("distil", "--domain", "synthesis", "--drafter", "llm", "--json")
        finally:
            listener.close()
        error = json.loads(result.stdout)["error"]
        assert result.exit_code == 2 and error["code"] == "drafter"
        assert "did not answer within 1 s (llm_timeout)" in error["message"]
        assert not (root / "memory" / "synthesis" / "knowledge.md").exists()

    def test_a_model_trickling_its_answer_is_held_to_llm_timeout_in_all(self, run: Run, root: Path) -> None:
        """llm_timeout bounded each read of the socket, not the answer: a model sending a byte every few
        seconds held a 5 s llm_timeout 33 s. The answer as a whole now gets llm_timeout (1 s here)."""
        import socket
        import threading
        import time

        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        stop = threading.Event()
        finished = threading.Event()  # the model sent all it would: a minute of trickling

        def trickle() -> None:
            connection, _ = listener.accept()
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
            try:
                for _ in range(200):  # a minute of trickling at most; then the model stops by itself
                    if stop.is_set():
                        break
                    connection.sendall(b" ")
                    time.sleep(0.3)
                else:
                    finished.set()
            except OSError:
                pass  # the client hung up
            connection.close()

        threading.Thread(target=trickle, daemon=True).start()
        try:
            write_log(root, "synthesis", base_records())
            url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
            (root / "memory" / "memfiles.toml").write_text(f'llm_url = "{url}"\nllm_timeout = 1\n')
            result = run("distil", "--domain", "synthesis", "--drafter", "llm", "--json")
            # distil gave up while the model was still trickling (a bound per read would have read on
            # until the model stopped by itself)
            assert not finished.is_set(), "distil read on until the model stopped sending"
        finally:
            stop.set()
            listener.close()
        error = json.loads(result.stdout)["error"]
        assert result.exit_code == 2 and "did not answer within 1 s (llm_timeout)" in error["message"]

    def test_drafter_without_url_and_missing_choice_are_usage_errors(self, run: Run, root: Path) -> None:
        """--drafter llm with no llm_url configured, or neither --domain nor --all: exit 2."""
        write_log(root, "synthesis", base_records())
        no_url = run("distil", "--domain", "synthesis", "--drafter", "llm")
        assert no_url.exit_code == 2 and "llm_url" in no_url.stderr
        as_json = run("distil", "--domain", "synthesis", "--drafter", "llm", "--json")
        assert json.loads(as_json.stdout)["error"]["key"] == "llm_url"
        assert run("distil").exit_code == 2


class TestWhatTheModelIsGiven:
    """Walk-through (twelfth session): the drafter sent a summary without run ids, then dropped every finding
    that named none, in silence; a flag cited by a failed run alone was filed as successful; a domain the
    drafter failed on in --all was said to have written nothing, after another domain was written."""

    def test_an_honest_model_is_given_the_runs_and_its_findings_are_filed(self, run: Run, root: Path) -> None:
        def honest(body: dict) -> tuple[int, str]:
            runs = records_of(body)
            hold = [r["run"] for r in runs if any("hold" in issue.lower() for issue in r["issues"])]
            failed = [r["run"] for r in runs if not r["signoff"]]
            ops = [
                add_op(
                    "Known Failure Patterns",
                    "Hold violations after placement",
                    "**Hold fails after placement.** One enable drove 400 flops. Cap the fanout at 16.",
                    ",".join(hold),  # a string, not a list: read as the runs it names
                ),
                # r2 signed off using it (written `--max-fanout 16` there): filed on r2 alone (r1 did not sign off)
                add_op(
                    "Successful Tool Flags",
                    "--max-fanout=16 closes hold",
                    "**--max-fanout=16.** Closed.",
                    ["r1", " r2"],
                ),
                # failed runs only: not a successful flag
                add_op("Successful Tool Flags", "Timing closes with abc -D 1250", "**abc -D 1250.** Closed.", failed),
                # a signed-off run that never used the flag: not filed either (r2 used abc -D 1250, not 12500)
                add_op("Successful Tool Flags", "Timing closes with abc -X 9", "**abc -X 9.** Closed.", ["r3"]),
                add_op("Successful Tool Flags", "Timing closes with abc -D 12500", "**abc -D 12500.**", ["r2"]),
                add_op("PDK / Tool Quirks", "A quirk from nowhere", "**No run says this.** Made up.", ["no-such-run"]),
            ]
            return 200, json.dumps({"ops": ops})

        model = Model(honest)
        try:
            write_log(root, "synthesis", base_records())
            (root / "memory" / "memfiles.toml").write_text(f'llm_url = "{model.url}"\n')
            result = run("distil", "--domain", "synthesis", "--drafter", "llm", "--json")
            assert result.exit_code == 0, result.output
            given = records_of(model.seen[0])
            assert [r["run"] for r in given] == ["r1", "r2", "r3", "r4", "r5"]
            assert {"run", "date", "signoff", "issues", "fixes"} <= set(given[0]) and given[0]["signoff"] is False
            report = json.loads(result.stdout)["domains"][0]
            filed = {e.title: e for e in knowledge(root).entries}
            assert set(filed) == {"Hold violations after placement", "--max-fanout=16 closes hold"}
            assert filed["Hold violations after placement"].failed == ("r1",)
            assert filed["--max-fanout=16 closes hold"].evidence == ("r2",)  # " r2" trimmed, as a string's ids
            warned = " | ".join(report["warnings"])
            assert "'Timing closes with abc -D 1250': no run it cites (r1) signed off using a flag it names" in warned
            assert "'Timing closes with abc -X 9': no run it cites (r3) signed off" in warned
            assert "'Timing closes with abc -D 12500': no run it cites (r2) signed off" in warned
            assert "'A quirk from nowhere' names no run of this batch (evidence: no-such-run): not filed" in warned
            ignored = {d["run"] for d in report["decisions"] if d["action"] == "ignored"}
            assert ignored == {"r3", "r4"}  # r3 cited only by a flag not filed: said in --explain, not left out
        finally:
            model.close()

    @pytest.mark.slow
    def test_a_domain_the_drafter_fails_on_does_not_hide_the_others(self, run: Run, root: Path) -> None:
        """--all: a domain written before the endpoint failed is reported (exit 1); the domains after it are
        not asked (each would wait as long, for nothing); every domain failed is the refusal (exit 2)."""
        asked: list[str] = []

        model = by_domain({"timing": 500}, asked)
        try:
            for domain in ("synthesis", "timing", "zlast", "zzlast"):
                write_log(root, domain, base_records())
            (root / "memory" / "memfiles.toml").write_text(f'llm_url = "{model.url}"\n')
            result = run("distil", "--all", "--drafter", "llm", "--json")
            assert result.exit_code == 1, result.output
            reports = {r["domain"]: r for r in json.loads(result.stdout)["domains"]}
            assert reports["timing"]["skipped"].startswith("not distilled: the drafter at")
            assert "HTTP 500" in reports["timing"]["skipped"]
            assert reports["zlast"]["skipped"] == "not distilled: not asked: the drafter failed on timing"
            # the domain that stopped it, not the last one skipped (review of the last read)
            assert reports["zzlast"]["skipped"] == "not distilled: not asked: the drafter failed on timing"
            assert set(asked) == {"synthesis", "timing"}
            assert not (root / "memory" / "timing" / "knowledge.md").exists()
            assert not (root / "memory" / "zlast" / "knowledge.md").exists()
            assert [e.title for e in knowledge(root).entries] == ["Hold violations after placement"]
            assert "not distilled, the drafter failed: timing, zlast, zzlast" in result.stderr
            alone = run("distil", "--domain", "timing", "--drafter", "llm", "--json")
            assert alone.exit_code == 2 and json.loads(alone.stdout)["error"]["code"] == "drafter"
        finally:
            model.close()

    def test_a_request_one_domain_cannot_make_does_not_stop_the_next(self, run: Run, root: Path) -> None:
        """A 400 (a domain's records too long for the model, say) is that domain's: the next is asked
        (review: every status but 401/403/404 had stopped --all). 401 stops it, and names the key."""

        model = by_domain({"big": 400, "locked": 401})
        try:
            for domain in ("big", "locked", "synthesis"):
                write_log(root, domain, base_records())
            (root / "memory" / "memfiles.toml").write_text(f'llm_url = "{model.url}"\n')
            result = run("distil", "--domain", "big", "--domain", "synthesis", "--drafter", "llm", "--json")
            assert result.exit_code == 1, result.output
            assert [e.title for e in knowledge(root).entries] == ["Hold violations after placement"]
            stopped = run("distil", "--domain", "locked", "--domain", "big", "--drafter", "llm", "--json")
            error = json.loads(stopped.stdout)["error"]
            assert (
                stopped.exit_code == 2 and "HTTP 401" in error["message"] and "MEMFILES_LLM_API_KEY" in error["message"]
            )
        finally:
            model.close()
