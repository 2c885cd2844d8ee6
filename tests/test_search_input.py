"""memsearch as a careless user or a confused agent feeds it: ids in odd spellings, queries that match
nothing, and every refusal as one JSON error object (real model, real Chroma store, real watcher)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memfiles.cli.main import cli
from memfiles.cli.search import memsearch as memsearch_command
from memfiles.config import load_settings
from memfiles.index.filters import Filters
from memfiles.services.indexing import index_client
from memfiles.services.watch import Watcher
from memfiles.store.project import Project
from tests.contract_shapes import check_command, check_shape

pytestmark = pytest.mark.integration

ENTRIES = [
    ("decision", "Ids are never reused", "format", "Old references must not move."),
    ("todo", "Write the release notes", "release", "Summarise the changes for users."),
    (
        "friction",
        "Chroma hangs with two writers",
        "index",
        "Two PersistentClients on one folder hang for minutes; route writes through one process.",
    ),
]


def cli_in(root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--root", str(root), *args], catch_exceptions=False)


def search_in(root: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(memsearch_command, ["--root", str(root), *args], input=input, catch_exceptions=False)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One project of three entries, indexed once for the module (every test here only reads it)."""
    root = tmp_path_factory.mktemp("search-input")
    (root / "memory").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MEMFILES_INDEX_TIMEOUT", "300")
        for kind, title, area, body in ENTRIES:
            assert cli_in(root, "add", "-k", kind, "-t", title, "-a", area, "--body", body).exit_code == 0
        assert cli_in(root, "backfill").exit_code == 0
    return root


def hits_of(result: Result) -> list[dict]:
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    check_command("memsearch", found)
    return found["hits"]


class TestIdsInAnySpelling:
    @pytest.mark.parametrize(
        "query", ["T-1", "t-001", "@@T-1", "@@t-0001", "T-0000001", "what does T-1 say?", "see @@t-1."]
    )
    def test_an_id_in_any_spelling_comes_first(self, indexed: Path, query: str) -> None:
        """T-1, t-001, @@T-1, @@t-0001 and an id inside a sentence all put T-001 first, scored 1.0."""
        first = hits_of(search_in(indexed, query, "--json"))[0]
        assert first["entry"]["id"] == "T-001" and first["signals"]["id"] is True and first["score"] == 1.0

    def test_two_ids_in_one_query_come_first_in_order(self, indexed: Path) -> None:
        """'f-1 and @@D-1' puts F-001 then D-001 first, both named."""
        hits = hits_of(search_in(indexed, "f-1 and @@D-1", "--json"))
        assert [h["entry"]["id"] for h in hits[:2]] == ["F-001", "D-001"]
        assert all(h["signals"]["id"] for h in hits[:2])

    def test_an_id_that_does_not_exist_is_no_hit(self, indexed: Path) -> None:
        """T-9 names no entry: nothing is returned for it (the other entries share nothing with it)."""
        assert hits_of(search_in(indexed, "T-9", "--json")) == []

    def test_a_filter_still_applies_to_a_named_id(self, indexed: Path) -> None:
        """T-1 with --kind decision does not return the todo."""
        assert "T-001" not in [h["entry"]["id"] for h in hits_of(search_in(indexed, "T-1", "--kind", "D", "--json"))]

    def test_the_watcher_reads_ids_the_same_way(self, indexed: Path) -> None:
        """Answered warm by a running watcher, @@t-1 still puts T-001 first and a nonsense query has no hits."""
        watcher = Watcher(Project(load_settings(indexed)), debounce=0.1, reconcile_every=1.0)
        watcher.start()
        try:
            client = index_client.connect(load_settings(indexed))
            assert isinstance(client, index_client.WatcherIndex)
            named, nonsense = client.search([("@@t-1", 5), ("zzqx vvkw", 5)], Filters())
            assert named[0]["entry"]["id"] == "T-001" and named[0]["score"] == 1.0
            assert nonsense == []
        finally:
            watcher.stop()


def test_kind_and_status_filters_take_any_case(indexed: Path) -> None:
    """--kind f --status Open finds the open friction, as memfiles list reads those filters."""
    hits = hits_of(search_in(indexed, "chroma writers", "--kind", "f", "--status", "Open", "--json"))
    assert [h["entry"]["id"] for h in hits] == ["F-001"]


class TestNoEvidenceNoHit:
    @pytest.mark.parametrize("query", ["zzqx vvkw", "T-1"])
    def test_no_hit_scores_zero(self, indexed: Path, query: str) -> None:
        """No returned hit has a score of 0 or signals that are all nothing: 'T-1' returns T-001 alone."""
        for hit in hits_of(search_in(indexed, query, "--json")):
            signals = hit["signals"]
            assert hit["score"] > 0 or signals["id"] or signals["exact"]
            assert signals["id"] or signals["exact"] or max(signals["lexical"] or 0, signals["dense"] or 0) >= 0.01

    def test_a_query_matching_nothing_says_so(self, indexed: Path) -> None:
        """A query sharing no word or meaning with any entry prints 'no entries match' and exits 0."""
        result = search_in(indexed, "zzqx vvkw")
        assert result.exit_code == 0 and result.stdout == "" and "no entries match" in result.stderr

    def test_batch_lines_leave_nothing_hits_out_too(self, indexed: Path, tmp_path: Path) -> None:
        """--batch: the line of a nonsense query has "hits": [], the id line only the named entry."""
        batch = tmp_path / "q.jsonl"
        batch.write_text('{"id": 1, "query": "zzqx vvkw"}\n{"id": 2, "query": "@@T-1"}\n')
        lines = [json.loads(line) for line in search_in(indexed, "--batch", str(batch)).stdout.splitlines()]
        assert lines[0]["hits"] == [] and [h["entry"]["id"] for h in lines[1]["hits"]] == ["T-001"]


def one_error(result: Result, code: str, one_line: bool = False) -> dict:
    """The single error object a refusal printed on stdout (exit 2), checked against the contract."""
    assert result.exit_code == 2, result.output
    if one_line:
        assert len(result.stdout.splitlines()) == 1, result.stdout
    error = json.loads(result.stdout)
    assert set(error) == {"error"}
    check_shape(error["error"], "error")
    assert error["error"]["code"] == code, error
    assert error["error"]["message"] in result.stderr
    return error["error"]


class TestJsonErrors:
    @pytest.mark.parametrize(
        ("args", "code", "words"),
        [
            (["", "--json"], "usage", "the query is empty"),
            (["   ", "--json"], "usage", "the query is empty"),
            (["--json"], "usage", "give a QUERY or --batch FILE"),
            (["x", "--kind", "wish", "--json"], "usage", "unknown kind 'wish'"),
            (["x", "--status", "bogus", "--json"], "usage", "unknown status 'bogus'"),
            (["x", "--status", "open,bogus", "--json"], "usage", "unknown status 'bogus'"),
            (["x", "--since", "yesterday", "--json"], "usage", "not a date"),
            (["x", "--since", "2026-13-01", "--json"], "usage", "not a date"),
            (["x", "-k", "0", "--json"], "usage", "-k"),
            (["x", "-k", "two", "--json"], "usage", "-k"),
            (["x", "--bogus", "--json"], "usage", "--bogus"),
        ],
    )
    def test_a_bad_query_or_option_is_one_error_object(
        self, indexed: Path, args: list[str], code: str, words: str
    ) -> None:
        """With --json, each refusal prints one error object on stdout naming the problem, exit 2."""
        assert words in one_error(search_in(indexed, *args), code)["message"]

    def test_an_unknown_kind_lists_the_kinds(self, indexed: Path) -> None:
        """--kind wish says which kinds there are, so the next try can be right."""
        assert "decision (D)" in one_error(search_in(indexed, "x", "--kind", "wish", "--json"), "usage")["message"]

    def test_a_missing_batch_file_is_an_io_error(self, indexed: Path, tmp_path: Path) -> None:
        """--batch of a file that is not there: code io naming the file, on one line, without --json too."""
        missing = tmp_path / "nope.jsonl"
        error = one_error(search_in(indexed, "--batch", str(missing)), "io", one_line=True)
        assert error["path"] == str(missing) and "no such file" in error["message"]

    @pytest.mark.parametrize(
        ("text", "line", "words"),
        [
            ('{"query": "ids"}\nnot json\n', 2, "invalid JSON"),
            ('{"query": 5}\n', 1, "expected"),
            ('{"query": "ids"}\n\n{"query": "  "}\n', 3, "the query is empty"),
            ('{"query": "ids", "k": 0}\n', 1, "k must be"),
            ('["ids"]\n', 1, "expected"),
            ('{"query": "ids", "query": "other"}\n', 1, 'key "query" given twice'),
            ('{"query": "ids", "kind": "decision"}\n', 1, "a query line takes id, query and k, not kind"),
            ('{"query": "ids"}\n' + "[" * 3000 + "]" * 3000 + "\n", 2, "nested too deep"),
        ],
    )
    def test_a_bad_batch_line_is_one_json_error_naming_its_line(
        self, indexed: Path, tmp_path: Path, text: str, line: int, words: str
    ) -> None:
        """--batch output is JSON lines, so a bad line is one JSON line: code parse, the file and the line."""
        batch = tmp_path / "q.jsonl"
        batch.write_text(text)
        error = one_error(search_in(indexed, "--batch", str(batch)), "parse", one_line=True)
        assert (error["path"], error["line"]) == (str(batch), line) and words in error["message"]

    def test_an_empty_or_undecodable_batch_is_an_io_error(self, indexed: Path, tmp_path: Path) -> None:
        """An empty batch file and one that is not UTF-8 are io errors naming the file."""
        batch = tmp_path / "q.jsonl"
        batch.write_text("\n  \n")
        assert "is empty" in one_error(search_in(indexed, "--batch", str(batch)), "io", one_line=True)["message"]
        batch.write_bytes(b'{"query": "caf\xe9"}\n')
        assert one_error(search_in(indexed, "--batch", str(batch)), "io", one_line=True)["line"] == 1

    def test_a_batch_usage_error_is_json_too(self, indexed: Path, tmp_path: Path) -> None:
        """--batch with a query as well, or with a bad option, answers with one JSON line (no --json needed)."""
        batch = tmp_path / "q.jsonl"
        batch.write_text('{"query": "ids"}\n')
        assert (
            "give a QUERY or --batch" in one_error(search_in(indexed, "x", "--batch", str(batch)), "usage")["message"]
        )
        one_error(search_in(indexed, "--batch", str(batch), "--kind"), "usage", one_line=True)
        one_error(search_in(indexed, f"--batch={batch}", "--since", "soon"), "usage", one_line=True)

    def test_without_json_a_refusal_prints_nothing_on_stdout(self, indexed: Path) -> None:
        """A refusal without --json or --batch keeps stdout empty and says why on stderr."""
        result = search_in(indexed, "x", "--kind", "wish")
        assert result.exit_code == 2 and result.stdout == "" and "unknown kind 'wish'" in result.stderr


@pytest.fixture
def bare(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "memory").mkdir()
    yield tmp_path


def test_recall_without_an_index_reads_ids_in_any_spelling(bare: Path) -> None:
    """With no index, recall's file search still puts the entry named by a lower-case reference first."""
    assert (
        cli_in(bare, "add", "-k", "procedure", "-t", "Run the linter first", "-a", "ci", "--body", "Always.").exit_code
        == 0
    )
    assert (
        cli_in(bare, "add", "-k", "procedure", "-t", "Then the tests", "-a", "ci", "--body", "Always.").exit_code == 0
    )
    query = "what does " + "@" + "@p-2 say"  # written apart: `memfiles refs` here would take it for a reference
    found = json.loads(cli_in(bare, "recall", query, "--trigger", "act", "--json").stdout)
    group = next(layer for layer in found["layers"] if layer["layer"] == "procedure")
    assert group["hits"][0]["entry"]["id"] == "P-002"
    assert group["hits"][0]["signals"]["id"] is True  # as with an index: `p-2` names P-002


class TestBadModel:
    @pytest.mark.parametrize("model", ["missing-folder/", "memory"])
    @pytest.mark.parametrize("command", [["recall", "ids", "--trigger", "turn"], ["status"]])
    def test_recall_and_status_name_the_model_setting(
        self, indexed: Path, monkeypatch: pytest.MonkeyPatch, model: str, command: list[str]
    ) -> None:
        """A model folder that is missing or holds no model: recall and status exit 2 naming `model`."""
        monkeypatch.setenv("MEMFILES_MODEL", str(indexed / model))
        result = cli_in(indexed, *command)
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert "`model` setting (or MEMFILES_MODEL)" in result.stderr
        error = one_error(cli_in(indexed, *command, "--json"), "index")
        assert error["key"] == "model"

    def test_memsearch_names_the_model_setting(self, indexed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """memsearch with a model folder that does not exist: one error object with key `model`, exit 2."""
        monkeypatch.setenv("MEMFILES_MODEL", str(indexed / "nowhere"))
        error = one_error(search_in(indexed, "ids", "--json"), "index")
        assert error["key"] == "model" and "nowhere" in error["message"]


class TestBackfillSkipped:
    def test_backfill_json_names_each_file_it_could_not_read(self, bare: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A file that does not parse and one that is not UTF-8 are each an `unparseable` finding in `skipped`
        (path and line) of backfill --json and backfill --check --json; the other entries are indexed."""
        monkeypatch.setenv("MEMFILES_INDEX_TIMEOUT", "300")
        assert (
            cli_in(bare, "add", "-k", "D", "-t", "Ids are never reused", "-a", "f", "--body", "Never.").exit_code == 0
        )
        (bare / "memory" / "broken.md").write_text("# Broken\n\n### D-9: x\n\nno metadata\n")
        (bare / "memory" / "latin.md").write_bytes(b"# Notes\n\n### D-8: caf\xe9\n\n- date: 2026-01-01\n")
        result = cli_in(bare, "backfill", "--json")
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        check_command("backfill", report)
        assert report["indexed"] == 1
        places = {(item["path"], item["line"]) for item in report["skipped"]}
        assert places == {("memory/broken.md", 5), ("memory/latin.md", 3)}
        assert all(item["code"] == "unparseable" for item in report["skipped"])
        assert "memory/broken.md:5:" in result.stderr and "memory/latin.md:3:" in result.stderr
        check = cli_in(bare, "backfill", "--check", "--json")
        drift = json.loads(check.stdout)
        check_command("backfill --check", drift)
        assert {(item["path"], item["line"]) for item in drift["skipped"]} == places

    def test_backfill_json_skips_nothing_when_every_file_parses(
        self, bare: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With every file readable, `skipped` is [] (the key is always there)."""
        monkeypatch.setenv("MEMFILES_INDEX_TIMEOUT", "300")
        assert (
            cli_in(bare, "add", "-k", "D", "-t", "Ids are never reused", "-a", "f", "--body", "Never.").exit_code == 0
        )
        assert json.loads(cli_in(bare, "backfill", "--json").stdout)["skipped"] == []
