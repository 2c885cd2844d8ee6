"""Near-duplicates: `memfiles dupes` on the index's stored vectors, its signals, and the checks of `add`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memfiles.services.upkeep.dupes import Doc, score_pairs
from tests.conftest import Run, snapshot

CHROMA = ("Chroma hangs when two processes open one folder", "Two PersistentClients on the same directory wait.")


def add(run: Run, title: str, body: str, *extra: str, kind: str = "F", area: str = "index"):  # type: ignore[no-untyped-def]
    return run("add", "-k", kind, "-t", title, "-a", area, "--body", body, *extra)


def doc(n: int, title: str, body: str = "") -> Doc:
    return Doc(f"F-{n:03d}", title, body, "index", "open", "memory/frictions.md", n)


class TestScore:
    def test_same_title_and_identical_text_are_always_flagged(self) -> None:
        """Audit's duplicate titles and near-identical vectors are near-duplicates whatever the score."""
        rng = np.random.default_rng(7)
        vectors = rng.normal(size=(6, 16)).astype(np.float32)
        vectors[5] = vectors[4] + 1e-4
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        docs = [doc(n, f"Entry {n}") for n in range(6)]
        docs[3] = doc(3, "  entry   1 ")
        flagged = {(p.a.id, p.b.id): p for p in score_pairs(docs, vectors)}
        assert set(flagged) == {("F-001", "F-003"), ("F-004", "F-005")}
        assert flagged[("F-001", "F-003")].signals["same_title"] is True
        assert flagged[("F-004", "F-005")].signals["dense"] > 0.99

    def test_the_same_body_under_two_titles_is_flagged_in_both_modes(self) -> None:
        """Two entries of the same words in the same order (titles differ): a near-duplicate at 1.0 with
        the vectors, and without them, where with two entries every shared word's IDF is 0."""
        from memfiles.services.upkeep.dedupe import lexical_pairs

        body = "Two clients on one folder hang for minutes."
        docs = [doc(1, "Chroma hangs", body), doc(2, "Store stalls", body)]
        vectors = np.asarray([[1.0, 0.0, 0.0], [0.8, 0.6, 0.0]], dtype=np.float32)  # as far apart as titles make them
        for pairs in (score_pairs(docs, vectors), lexical_pairs(docs)):
            assert [(p.a.id, p.b.id, p.score, p.signals["same_body"]) for p in pairs] == [("F-001", "F-002", 1.0, True)]
        unlike = [doc(1, "Cache", "Do not use the cache here."), doc(2, "Cache again", "Do use the cache here.")]
        stock = [doc(1, "One thing", "See title."), doc(2, "Another thing", "See title.")]
        for pair in (unlike, stock):  # a word apart ("not"), or too few words to say the same finding
            assert not any(p.signals["same_body"] for p in lexical_pairs(pair))

    def test_markdown_emphasis_is_no_rare_token(self) -> None:
        """`**Runs` (bold in a templated body) is not a code-like token two entries share."""
        from memfiles.services.upkeep.dupes import _rare_tokens

        docs = [doc(1, "A flag", "**Runs** with `--max-fanout`"), doc(2, "B flag", "**Runs** with `--antenna`")]
        assert _rare_tokens(docs) == [{"--max-fanout"}, {"--antenna"}]

    def test_a_small_project_of_unrelated_entries_flags_nothing(self) -> None:
        """Moderately close pairs in a sparse file do not stand out enough to be flagged."""
        vectors = np.eye(4, 8, dtype=np.float32) * 0.8 + 0.2
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        assert score_pairs([doc(n, f"Entry {n}") for n in range(4)], vectors) == []


class TestWithoutIndex:
    def test_a_short_entry_written_twice_is_a_duplicate(self, run: Run, root: Path) -> None:
        """No index: the same short title and body again (fewer than MIN_SHARED words) is named a
        near-duplicate, and --unique refuses it; two short entries that share one word are not."""
        assert add(run, "Pin numpy", "Pin it.", kind="T").exit_code == 0
        again = add(run, "Pin numpy", "Pin it.", kind="T")
        assert again.exit_code == 0 and "near-duplicate" in again.stderr and "T-001" in again.stderr
        before = snapshot(root)
        refused = add(run, "Pin numpy", "Pin it.", "--unique", kind="T")
        assert refused.exit_code == 1 and "T-001" in refused.stderr and snapshot(root) == before
        other = add(run, "Pin pandas", "Pin it too.", kind="T")
        assert other.exit_code == 0 and "near-duplicate" not in other.stderr

    def test_a_file_that_does_not_parse_is_named_and_the_rest_compared(self, run: Run, root: Path) -> None:
        """dupes, like the other reads, names a broken file (stderr and the JSON's skipped) and compares the
        entries of the files that parse; it used to refuse the whole project."""
        body = "Two clients on one folder hang for minutes."
        add(run, "Chroma hangs", body)
        add(run, "Store stalls", body)
        add(run, "A decision", "Made.", kind="D")
        (root / "memory" / "decisions.md").write_bytes((root / "memory" / "decisions.md").read_bytes() + b"\xff\n")
        text = run("dupes")
        assert text.exit_code == 0 and "memory/decisions.md" in text.stderr and "(skipped)" in text.stderr
        assert "F-001" in text.stdout and "the same body word for word" in text.stdout
        answer = json.loads(run("dupes", "--json").stdout)
        assert [f["path"] for f in answer["skipped"]] == ["memory/decisions.md"] and len(answer["findings"]) == 1


@pytest.mark.integration
class TestDupes:
    def test_add_warns_after_writing_and_unique_refuses(self, run: Run, root: Path) -> None:
        """add names a near-duplicate and still adds; --unique refuses with exit 1 and writes nothing."""
        add(run, *CHROMA)
        run("backfill")
        warned = add(
            run, "Two processes on one Chroma folder hang", "A second PersistentClient on one directory waits."
        )
        assert warned.exit_code == 0 and "near-duplicate" in warned.stderr and "F-001" in warned.stderr
        before = snapshot(root)
        refused = add(run, "Chroma hangs with two processes on a folder", "Two PersistentClients hang.", "--unique")
        assert refused.exit_code == 1 and "refused" in refused.stderr
        assert snapshot(root) == before
        answer = json.loads(run("dupes", "--json").stdout)
        assert answer["mode"] == "index"
        assert {(f["id"], f["target"]["id"]) for f in answer["findings"]} == {("F-001", "F-002")}

    def test_findings_show_the_score_and_each_signal(self, run: Run, root: Path) -> None:
        """--json: contract findings, code near-duplicate, detail {score, mode, signals{...}}."""
        add(run, *CHROMA)
        add(run, "Two processes on one Chroma folder hang", "A second PersistentClient on one directory waits.")
        add(run, "Release notes are written by hand", "Each release note is typed from the merged pull requests.")
        run("backfill")
        (finding,) = json.loads(run("dupes", "--json").stdout)["findings"]
        assert finding["code"] == "near-duplicate" and finding["severity"] == "warning"
        assert finding["path"] == "memory/frictions.md" and finding["target"]["type"] == "entry"
        assert set(finding["detail"]) == {"score", "mode", "signals"}
        signals = finding["detail"]["signals"]
        assert set(signals) == {"dense", "margin", "nearest", "title", "rare", "same_area", "same_title", "same_body"}
        assert signals["nearest"] == "mutual" and signals["same_area"] is True
        expected = 0.5 + signals["margin"] + 0.2 * signals["title"] + 0.1 * min(len(signals["rare"]), 2) / 2
        assert finding["detail"]["score"] == pytest.approx(min(1.0, expected), abs=1e-3)
        text = run("dupes").stdout
        assert "F-001" in text and "margin" in text and "mutual nearest" in text

    def test_dupes_reads_the_stored_vectors(self, run: Run, root: Path, monkeypatch) -> None:
        """After a backfill nothing is embedded again; an entry the index lacks is embedded alone, with a note."""
        from memfiles.index import embedder

        add(run, *CHROMA)
        add(run, "Release notes are written by hand", "Each release note is typed from the merged pull requests.")
        run("backfill")
        encoded: list[int] = []
        for cls in (embedder.NumpyBertEmbedder, embedder.SentenceTransformerEmbedder):
            original = cls.encode

            def spy(self, texts, batch_size=32, _original=original):  # type: ignore[no-untyped-def]
                encoded.append(len(texts))
                return _original(self, texts, batch_size)

            monkeypatch.setattr(cls, "encode", spy)
        assert run("dupes").exit_code == 0 and encoded == []
        path = root / "memory" / "frictions.md"
        text = path.read_text().replace("## Manual", "### F-009: Typed by hand\n\n- date: 2026-11-30\n- area: x\n"
                                        "- status: open\n\nAn entry no index has seen.\n\n## Manual")  # fmt: skip
        path.write_text(text)
        result = run("dupes")
        assert encoded == [1] and "1 entry is not in the index yet" in result.stderr

    def test_dupes_and_audit_agree_on_same_titles(self, run: Run, root: Path) -> None:
        """Two entries with one title are near-duplicates for dupes (index or not) as for audit."""
        add(run, "Severe memory usage", "The browser grows past 4 GB after a day of mail.")
        add(run, "Severe memory usage", "Compiling the layout tests swaps the build host.")
        audit = json.loads(run("audit", "--json").stdout)
        assert any("F-002 has the same title as F-001" in json.dumps(item) for item in audit["findings"])
        lexical = json.loads(run("dupes", "--json").stdout)
        assert lexical["mode"] == "lexical"
        assert [(f["id"], f["target"]["id"], f["detail"]["signals"]["same_title"]) for f in lexical["findings"]] == [
            ("F-001", "F-002", True)
        ]
        run("backfill")
        indexed = json.loads(run("dupes", "--json").stdout)
        assert indexed["mode"] == "index"
        assert [(f["id"], f["target"]["id"]) for f in indexed["findings"]] == [("F-001", "F-002")]


class TestChecks:
    @pytest.mark.parametrize("value", ["5", "-1", "nan", "inf", "abc"])
    def test_threshold_out_of_range_is_refused(self, run: Run, value: str) -> None:
        """dupes --threshold 5 (or nan, which click's FloatRange let through: it listed nothing, exit 0):
        exit 2 naming the range."""
        result = run("dupes", "--threshold", value)
        assert result.exit_code == 2 and "--threshold" in result.stderr, result.output

    def test_help_names_the_signals(self, run: Run) -> None:
        """dupes --help says which signals the score combines."""
        text = run("dupes", "--help").stdout
        for word in ("margin", "title", "rare", "nearest", "same_area", "the words"):
            assert word in text

    def test_word_overlap_ignores_trivial_overlaps(self, run: Run) -> None:
        """Without an index, one shared word is not a near-duplicate; a real rewording still is."""
        add(run, "Root one", "The first root.", kind="T")
        quiet = add(run, "t1", "one", kind="T")
        assert quiet.exit_code == 0 and "near-duplicate" not in quiet.stderr
        add(run, *CHROMA)
        loud = add(run, "Chroma hangs when two processes open the same folder", "Two PersistentClients wait.")
        assert "near-duplicate" in loud.stderr and "by word overlap" in loud.stderr

    def test_no_warning_when_the_write_fails(self, run: Run, root: Path) -> None:
        """A near-duplicate warning is printed only after the write succeeded."""
        add(run, *CHROMA)
        before = snapshot(root)
        failed = add(run, CHROMA[0], CHROMA[1], "--status", "no-such-status")
        assert failed.exit_code == 2 and "near-duplicate" not in failed.stderr
        assert snapshot(root) == before


@pytest.mark.integration
def test_dupes_asks_a_running_watcher_for_the_vectors(run: Run, root: Path) -> None:
    """While the watcher owns the store, dupes gets the stored vectors through its socket."""
    from memfiles.config import load_settings
    from memfiles.services.watch import Watcher
    from memfiles.store.project import Project

    add(run, *CHROMA)
    add(run, "Two processes on one Chroma folder hang", "A second PersistentClient on one directory waits.")
    add(run, "Release notes are written by hand", "Each release note is typed from the merged pull requests.")
    run("backfill")
    watcher = Watcher(Project(load_settings(root)), debounce=0.1, reconcile_every=60.0)
    watcher.start()
    try:
        result = run("dupes", "--json")
    finally:
        watcher.stop()
    answer = json.loads(result.stdout)
    assert answer["mode"] == "index" and "not in the index" not in result.stderr
    assert [(f["id"], f["target"]["id"]) for f in answer["findings"]] == [("F-001", "F-002")]


SCORING = """
import numpy as np
import memfiles.services.upkeep.dupes as dupes
dupes.PROGRESS_PAIRS, dupes.PROGRESS_STEP = 1_000, 100
rng = np.random.default_rng(0)
vectors = rng.normal(size=(1, 16)) + rng.normal(size=(120, 16)) * 0.01  # 120 near-copies: 7,140 pairs
vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
docs = [dupes.Doc(f"D-{n:03d}", f"Entry {n}", "body", "a", "open", "memory/decisions.md", 1) for n in range(120)]
print(len(dupes.score_pairs(docs, vectors)))
"""


def test_scoring_many_pairs_shows_a_bar_on_a_terminal_only() -> None:
    """2.1 million candidate pairs scored for 14-22 s in silence at 5,000 entries; past PROGRESS_PAIRS a
    terminal shows a bar (here lowered, on 7,140 pairs), and a pipe gets nothing."""
    import contextlib
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import sys
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    done = subprocess.run([sys.executable, "-c", SCORING], stdout=subprocess.PIPE, stderr=follower, timeout=120)
    os.close(follower)
    said = b""
    with contextlib.suppress(OSError):
        while chunk := os.read(leader, 65536):
            said += chunk
    os.close(leader)
    assert done.returncode == 0 and int(done.stdout) > 0
    assert b"scoring pairs" in said, said[-400:]
    piped = subprocess.run([sys.executable, "-c", SCORING], capture_output=True, timeout=120)
    assert piped.returncode == 0 and piped.stderr == b""
