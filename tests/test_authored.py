"""The author's words kept (services/distiller/authored.py): what is code, what is spanned, what is re-cased."""

from __future__ import annotations

import json
from pathlib import Path

from memfiles import parse
from memfiles.services.distiller.authored import is_code, sentence, title, vocabulary
from tests.conftest import Run


def test_what_is_code() -> None:
    """Shapes of code are; pairs of words, abbreviations, numbers and versions are not."""
    code = ["test_upload_retries", "core.longpaths", "app/models.py", "/var/log", "main()", "a::b", "KEY=v", "$HOME",
            ".nvmrc", "--max-fanout", "-j8", "https://example.com/a"]  # fmt: skip
    prose = ["and/or", "I/O", "TCP/IP", "e.g", "0.5", "1.2.3", "well-known", "M2", "TimeoutError"]
    assert [w for w in code if not is_code(w)] == []
    assert [w for w in prose if is_code(w)] == []


def test_commands_the_log_names_are_spanned_and_never_recased() -> None:
    """A command of the log (its tool, a backtick span, a command with options) keeps its case and gets
    a code span with its subcommand; a verb after it is prose; a first word is upper-cased only when the
    log writes it with a capital."""
    vocab = vocabulary(["The runner was busy", "Run synth with -noflatten", "ran `go test -race`"], ["npm 10.2"])
    said = {
        "npm ci fails with EINTEGRITY": "`npm ci` fails with EINTEGRITY",
        "the linker was killed": "The linker was killed",
        "flaky test_x": "flaky `test_x`",  # the log never writes "Flaky"
        "Run synth with -noflatten per hierarchy": "Run `synth` with `-noflatten` per hierarchy",
        "go test -race on main": "`go test -race` on main",
        "Set PIP_NO_CACHE_DIR=1, then retry": "Set `PIP_NO_CACHE_DIR=1`, then retry",
        "sky130 has no hold corner": "sky130 has no hold corner",
    }
    assert {text: sentence(text, vocab, spans=True) for text in said} == said
    assert sentence("npm ci fails.", vocab) == "npm ci fails"  # a title: no spans, no re-casing


def test_a_title_spans_its_urls_only() -> None:
    """A title keeps its words, but a bare URL (refused by the lint rules in a title) gets a code span,
    also when the title is clipped."""
    vocab = vocabulary([])
    assert (
        title("Crash opening https://example.com/x in a tab", vocab, 120)
        == "Crash opening `https://example.com/x` in a tab"
    )
    clipped = title("Crash " + "word " * 20 + "https://example.com/" + "x" * 80, vocab, 120)
    assert len(clipped) <= 120 and clipped.count("`") % 2 == 0


def test_a_log_of_urls_and_pasted_scripts_is_distilled(run: Run, root: Path) -> None:
    """A symptom holding a URL and a fix of 3,000 characters: filed, nothing refused (the whole domain's
    batch was refused before: md034 in a title, a body over the limit once cleaned)."""
    records = [
        {"timestamp": f"2026-11-0{n}T09:00:00Z", "run_id": f"u{n}", "signoff_achieved": True,
         "issues_encountered": [issue], "fixes_applied": [fix], "key_metrics": {}, "notes": ""}
        for n, (issue, fix) in enumerate(
            [("Login page https://example.com/login returns 502", "Restart the proxy"),
             ("Export job crashes", "Apply this script: " + "sed -i s/a/b/ https://example.com/x.sh " * 80)],
            start=1,
        )
    ]  # fmt: skip
    folder = root / "memory" / "web"
    folder.mkdir(parents=True)
    (folder / "experiences.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    result = run("distil", "--domain", "web", "--min-records", "1")
    assert result.exit_code == 0, result.output
    entries = {e.title: e for e in parse((folder / "knowledge.md").read_text()).entries}
    assert "Login page `https://example.com/login` returns 502" in entries
    assert len(entries["Export job crashes"].body) < 1000
