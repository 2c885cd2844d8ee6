"""The one text grammar: entry headings of known prefixes, the CommonMark fence rule, line endings, encodings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memfiles import parse, render
from memfiles.errors import ParseError
from memfiles.format.grammar import Fence, code_spans, grammar_for, headings_of
from memfiles.format.ids import DEFAULT_KINDS, Kind, Schema
from memfiles.format.validate import body_problem
from memfiles.store.ops import normalize_automated
from memfiles.store.project import is_memory_text
from tests.conftest import REPO, Run, snapshot

ENTRY = "### D-001: First\n\n- date: 2026-01-01\n- area: a\n- status: accepted\n\n"


def _file(body: str) -> str:
    """A one-entry decisions file around `body`, in canonical form."""
    return render(parse(f"# Decisions\n\n{ENTRY}{body}\n"))


class TestEntryHeadings:
    @pytest.mark.parametrize("line", ["### UTF-8 handling", "### Step-1 of the fix", "### RFC-9110: semantics"])
    def test_sub_heading_that_is_not_a_known_id_is_body_text(self, line: str) -> None:
        """A hand-written body sub-heading that starts like an id of no known kind parses as body text."""
        memory = parse(_file(f"Intro.\n\n{line}\n\nMore."))
        assert [entry.id for entry in memory.entries] == ["D-001"]
        assert line in memory.entries[0].body

    @pytest.mark.parametrize("line", ["### UTF-8 handling", "### Step-1 of the fix"])
    def test_write_path_accepts_sub_heading_like_an_id(self, run: Run, root: Path, line: str) -> None:
        """add takes a body holding '### UTF-8 handling' and the file passes check."""
        body = f"Intro.\n\n{line}\n\nMore."
        assert run("add", "-k", "D", "-t", "t", "-a", "a", "--body", body).exit_code == 0
        assert parse((root / "memory" / "decisions.md").read_text()).entries[0].body == body
        assert run("check").exit_code == 0

    @pytest.mark.parametrize(
        ("line", "fix"),
        [
            ("### D-12 Title", "### D-12: Title"),
            ("### D-12:Title", "### D-12: Title"),
            ("### D-12:", "### D-12: Title"),
            ("### D-12", "### D-12: Title"),
            ("###D-12: Done", "### D-12: Done"),
            ("### F-7 - Dash", "### F-7: - Dash"),
        ],
    )
    def test_broken_heading_of_a_known_prefix_is_a_parse_error(self, line: str, fix: str) -> None:
        """A line that starts like a known kind's entry heading but is not one stops the parse at its line,
        and the message shows the line as it should read."""
        text = _file("Body.") + f"\n{line}\n"
        with pytest.raises(ParseError) as caught:
            parse(text)
        assert caught.value.line == text.split("\n").index(line) + 1
        assert caught.value.message == f"broken entry heading: write it as '{fix}' (id, colon, space, title)"

    def test_an_id_number_of_ten_digits_is_a_broken_heading(self) -> None:
        """'### D-1234567890: x' is refused at its line: an id's number has at most 9 digits."""
        with pytest.raises(ParseError, match="at most 9 digits") as caught:
            parse(_file("Body.") + "\n### D-1234567890: x\n")
        assert caught.value.line is not None and caught.value.line > 10

    @pytest.mark.parametrize("line", ["#### D-012: deeper", "### D-12a notes", "### d-12: lower case", "## D-012"])
    def test_other_levels_and_shapes_are_not_entry_headings(self, line: str) -> None:
        """Only level 3 with a known prefix and a number is an entry heading; the rest is text or a section."""
        memory = parse(_file(f"Body.\n\n{line}\n\nMore."))
        assert [entry.id for entry in memory.entries] == ["D-001"]

    @pytest.mark.parametrize(
        "line",
        [
            "## D-002: level two",
            "#### D-002: deeper",
            "  ### D-002: indented",
            "### d-002: lower",
            "### D\u2013002: en dash",
            "### [D-002]: brackets",
            "### D002: no dash",
            "### D 002: a space for the dash",
        ],
    )
    def test_a_stray_heading_with_metadata_is_a_parse_error(self, line: str) -> None:
        """An entry written with the wrong heading was read as a section or as text of the entry above,
        and its id handed out again: with metadata under it, it stops the parse at its line."""
        text = _file("Body.") + f"\n{line}\n\n- date: 2026-12-01\n- area: a\n- status: proposed\n\nSecond.\n"
        with pytest.raises(ParseError) as caught:
            parse(text)
        assert caught.value.line == text.split("\n").index(line) + 1
        assert caught.value.message.startswith(
            "D-002 has metadata under it but no entry heading: write it as '### D-002: "
        )
        assert body_problem(f"Text.\n\n{line}\n\n- date: 2026-12-01") is not None  # the write path refuses it

    @pytest.mark.parametrize(
        "body",
        [
            "Options we weighed:\n\n#### D-2 as it was first proposed\n\n- pros: fast\n- cons: slow",
            "#### E-12 run\n\n- loss: 0.3",
            "#### D-2: x\n\n- source: y",  # a key of the format, but none an entry needs
            "#D-3\n- date: 2026-01-01",  # no space after the #: not a heading
            "#### P1 bugs\n\n- status: two open\n- owner: me",  # a priority, not an id without its dash
            "### T1 rollout\n\n- status: done",  # no colon after the number: a sub-heading
        ],
    )
    def test_a_sub_heading_over_a_list_of_other_pairs_is_body_text(self, body: str) -> None:
        """Only an entry's metadata list (date, area or status among its keys) makes a heading of an id a
        stray entry: a list of other `- key: value` pairs under a body's sub-heading is body text."""
        memory = parse(_file(body))
        assert [entry.id for entry in memory.entries] == ["D-001"] and body in memory.entries[0].body
        assert body_problem(body) is None

    def test_stray_heading_is_checked_and_blocks_writes(self, run: Run, root: Path) -> None:
        """check names it, and no write hands out its id while it stands."""
        run("add", "-k", "D", "-t", "one", "-a", "a", "--body", "b")
        path = root / "memory" / "decisions.md"
        text = path.read_text()
        cut = text.index("## Manual")
        path.write_text(
            text[:cut] + "## D-002: by hand\n\n- date: 2026-12-01\n- area: a\n- status: proposed\n\nB.\n\n" + text[cut:]
        )
        before = snapshot(root)
        result = run("check", "--no-lint")
        assert result.exit_code == 1 and "parse-error D-002 has metadata under it" in result.stdout
        result = run("add", "-k", "D", "-t", "two", "-a", "a", "--body", "b")
        assert result.exit_code == 2 and "memory/decisions.md:" in result.stderr
        assert snapshot(root) == before

    def test_tabs_and_extra_spaces_in_a_heading_are_whitespace(self) -> None:
        """'###<tab>D-001:<tab>Title' is an entry; fmt writes it with single spaces."""
        memory = parse("# D\n\n###\tD-001:\t Title\t\n\n- date:\t2026-01-01\n- area: a\n- status: accepted\n\nB.\n")
        assert memory.entries[0].title == "Title" and memory.entries[0].date == "2026-01-01"
        assert "### D-001: Title\n" in render(memory)

    def test_configured_prefix_makes_entries_only_with_its_schema(self) -> None:
        """'### R-001: x' is an entry when the schema has a kind with prefix R, and text without it."""
        schema = Schema(kinds=(*DEFAULT_KINDS, Kind("risk", "R", ("open", "retired"), "risks.md")))
        text = "# Risks\n\n### R-001: Lock-in\n\n- date: 2026-01-01\n- area: a\n- status: open\n\nB.\n"
        assert [entry.id for entry in parse(text, None, schema).entries] == ["R-001"]
        assert parse(text).entries == []

    def test_body_problem_uses_the_same_grammar(self) -> None:
        """The write path refuses exactly what parse would take for structure, and nothing else."""
        assert body_problem("### UTF-8 handling\n\ntext") is None
        assert body_problem("### Step-1 of the fix") is None
        assert "looks like an entry heading" in (body_problem("### D-12 Title") or "")
        assert "looks like an entry heading" in (body_problem("### F-001: x") or "")
        assert "level-2 heading" in (body_problem("##") or "")
        assert "metadata under it" in (body_problem("### X-001: y\n\n- date: 2026-01-01") or "")
        assert body_problem("```\n### D-001: fenced\n## x\n```") is None

    def test_unknown_kind_entry_is_reported_by_check(self, run: Run, root: Path) -> None:
        """An entry whose prefix no kind has is named by check (unknown-prefix), not silently dropped."""
        run("add", "-k", "D", "-t", "t", "-a", "a", "--body", "b")
        path = root / "memory" / "decisions.md"
        text = path.read_text()
        cut = text.index("## Manual")
        extra = "### Q-001: From a removed kind\n\n- date: 2026-01-01\n- area: a\n- status: open\n\nB.\n\n"
        path.write_text(text[:cut] + extra + text[cut:])
        result = run("check")
        line = (text[:cut] + extra).split("\n").index("### Q-001: From a removed kind") + 1
        assert result.exit_code == 1
        assert f"memory/decisions.md:{line}: unknown-prefix Q-001 is not read as an entry" in result.stdout

    def test_unknown_kind_entry_in_a_body_is_made_plain_and_said(self, run: Run, root: Path) -> None:
        """A body holding an entry heading of an unknown kind with metadata under it is stored with the id's
        hyphen escaped (it shows the same), so that check finds no unknown-prefix entry in it."""
        body = "Text.\n\n### Q-001: x\n\n- date: 2026-01-01"
        result = run("add", "-k", "D", "-t", "t", "-a", "a", "--body", body)
        assert result.exit_code == 0 and "would read as an entry heading" in result.stderr
        stored = parse((root / "memory" / "decisions.md").read_text()).entries[0].body
        assert stored == "Text.\n\n### Q\\-001: x\n\n- date: 2026-01-01"
        assert run("check").exit_code == 0, run("check").output

    def test_readme_with_a_fenced_example_is_not_a_memory_file(self) -> None:
        """A README that shows the format inside a fence has no entry: discovery skips it."""
        readme = "# About\n\n```markdown\n### D-001: Example\n\n- date: 2026-01-01\n```\n"
        assert not is_memory_text(readme)
        assert is_memory_text("### D-001: Real\n")

    def test_watcher_heading_pattern_finds_only_those_ids(self) -> None:
        """headings_of(ids) finds a moved entry's heading, tabs allowed, and not a mere mention."""
        pattern = headings_of({"D-001", "F-002"})
        assert pattern.search("x\n### D-001: t\n") and pattern.search("###\tF-002:\tt")
        assert not pattern.search("see D-001: there\n### D-0011: t\n")

    def test_ids_in_skips_code_spans_and_fences(self) -> None:
        """An id in inline code (any backtick run) or a fenced block is a sample, not a mention; the prose
        around it, a link's text and an `@@` reference still count."""
        text = "See `D-9` and ``a `D-8` b`` but @@D-1, [D-2] and D-3.\n\n```\nD-7\n```\n~~~~\nD-6\n~~~~\nD-4"
        assert grammar_for(("D",)).ids_in(text) == ["D-1", "D-2", "D-3", "D-4"]
        assert grammar_for(("D",)).ids_in("an unclosed ` D-5") == ["D-5"]
        paragraphs = "Quote the ` character.\n\nThis replaces D-005.\n\nRun `make` after."
        assert grammar_for(("D",)).ids_in(paragraphs) == ["D-005"]  # a span never crosses a blank line
        assert grammar_for(("D",)).ids_in("An escaped \\` then D-6 and `x`.") == ["D-6"]

    def test_ids_in_counts_only_known_prefixes(self) -> None:
        """Audit's id mentions in a body come from the grammar: known prefixes only."""
        assert grammar_for(("D", "F")).ids_in("D-001, UTF-8 and F-2 but not X-9") == ["D-001", "F-2"]


class TestFence:
    @pytest.mark.parametrize(
        ("lines", "inside"),
        [
            (["````", "```", "## x", "````"], [True, True, True, True]),
            (["~~~", "```", "## x", "~~~"], [True, True, True, True]),
            (["```", "``` not a close", "```"], [True, True, True]),
            (["```js", "x", "   ```"], [True, True, True]),
            (["```x```", "## x"], [False, False]),
            (["    ```", "## x"], [False, False]),
            (["\t```", "## x"], [False, False]),
            (["   ~~~~", "~~~", "~~~~~"], [True, True, True]),
            (["> ```", "> ## x", "> ```", "## x"], [True, True, True, False]),
            (["> ```", "## x"], [True, False]),  # the quote ended, and the fence with it
            (["> > ```", "> > x", "> end", "x"], [True, True, False, False]),
            (["```", "> ```", "```"], [True, True, True]),  # a quote marker inside code is code
            ([">```", ">x", "   > ```"], [True, True, True]),
        ],
    )
    def test_commonmark_fences(self, lines: list[str], inside: list[bool]) -> None:
        """Backticks or tildes, 3 or more, up to 3 spaces in; closed by the same char at least as long."""
        fence = Fence()
        assert [fence.feed(line, n) for n, line in enumerate(lines, start=1)] == inside

    def test_level_two_heading_inside_a_long_fence_is_code(self) -> None:
        """A 4-backtick fence holding a 3-backtick line and '## x' keeps them in the entry's body."""
        body = "Intro.\n\n````md\n```\n## not a section\n```\n````"
        memory = parse(_file(body))
        assert memory.entries[0].body == body and [s.name for s in memory.sections] == [None]

    def test_inline_code_with_three_backticks_does_not_open_a_fence(self) -> None:
        """'```x```' is inline code, so a heading after it is still a heading."""
        memory = parse(_file("Use ```x``` inline.") + "## Next\n")
        assert [s.name for s in memory.sections] == [None, "Next"]


class TestLineEndings:
    def test_crlf_file_stays_crlf_through_add_fmt_and_check(self, run: Run, root: Path) -> None:
        """A CRLF file (core.autocrlf) passes check, and add and fmt keep every line CRLF, Manual included."""
        run("add", "-k", "D", "-t", "First", "-a", "a", "--body", "b")
        path = root / "memory" / "decisions.md"
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
        assert run("check").exit_code == 0 and run("fmt", "--check").exit_code == 0
        assert run("add", "-k", "D", "-t", "Second", "-a", "a", "--body", "c").exit_code == 0
        data = path.read_bytes()
        assert data.count(b"\n") == data.count(b"\r\n") and b"D-002" in data
        assert run("check").exit_code == 0

    def test_mixed_line_endings_are_named_and_fmt_makes_them_one(self, run: Run, root: Path) -> None:
        """CRLF from line 1, LF in the Manual: check says mixed-line-endings at that line; fmt writes CRLF."""
        run("add", "-k", "D", "-t", "First", "-a", "a", "--body", "b")
        path = root / "memory" / "decisions.md"
        text = path.read_text()
        cut = text.index("## Manual")
        path.write_bytes(text[:cut].replace("\n", "\r\n").encode() + (text[cut:] + "mine\n").encode())
        line = text[:cut].count("\n") + 1
        result = run("check")
        assert result.exit_code == 1
        assert result.stdout.splitlines() == [
            f"memory/decisions.md:{line}: mixed-line-endings mixed line endings: the file's lines end in CRLF"
            " but this one in LF: run memfiles fmt"
        ]
        assert run("fmt").exit_code == 0
        data = path.read_bytes()
        assert data.count(b"\n") == data.count(b"\r\n") and data.endswith(b"mine\r\n")
        assert run("check").exit_code == 0

    def test_lf_file_with_crlf_manual_is_made_lf_by_fmt(self, run: Run, root: Path) -> None:
        """An LF file whose Manual was pasted with CRLF becomes LF throughout (the old 'LF above, CRLF below')."""
        run("add", "-k", "D", "-t", "First", "-a", "a", "--body", "b")
        path = root / "memory" / "decisions.md"
        path.write_bytes(path.read_bytes() + b"pasted\r\nnotes\r\n")
        assert "mixed-line-endings" in run("check").stdout
        assert run("fmt").exit_code == 0
        assert b"\r" not in path.read_bytes() and path.read_text().endswith("pasted\nnotes\n")

    def test_stray_carriage_return_is_named_with_its_line(self, run: Run, root: Path) -> None:
        """A CR in the middle of a line (viewers break there, memfiles does not) is reported at its line."""
        run("add", "-k", "D", "-t", "First", "-a", "a", "--body", "b")
        path = root / "memory" / "decisions.md"
        text = path.read_text().replace("\nb\n", "\nb\r## Hidden\n")
        path.write_text(text)
        line = text.split("\n").index("b\r## Hidden") + 1
        assert f"memory/decisions.md:{line}: stray-cr" in run("check").stdout

    def test_write_path_turns_a_lone_cr_into_a_line_end(self, run: Run, root: Path) -> None:
        """A body with a lone CR is split there, so '## x' after it is a heading like any other (demoted)."""
        result = run("add", "-k", "D", "-t", "t", "-a", "a", "--body", "text\r## Section")
        assert result.exit_code == 0 and "demoted" in result.stderr
        assert run("add", "-k", "D", "-t", "t", "-a", "a", "--body", "one\rtwo").exit_code == 0
        bodies = [entry.body for entry in parse((root / "memory" / "decisions.md").read_text()).entries]
        assert bodies == ["text\n\n#### Section", "one\ntwo"]

    def test_bom_at_the_start_is_kept_and_the_title_still_read(self, run: Run, root: Path) -> None:
        """A file saved with a UTF-8 byte-order mark keeps it through add and fmt, and passes check."""
        run("add", "-k", "D", "-t", "First", "-a", "a", "--body", "b")
        path = root / "memory" / "decisions.md"
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
        assert parse(path.read_text()).title == "Decisions"
        assert run("check").exit_code == 0
        assert run("add", "-k", "D", "-t", "Second", "-a", "a", "--body", "c").exit_code == 0
        assert path.read_bytes().startswith(b"\xef\xbb\xbf# Decisions\n")
        assert run("check").exit_code == 0 and run("fmt", "--check").exit_code == 0

    def test_a_control_character_is_dropped_from_a_body_and_named_by_check(self, run: Run, root: Path) -> None:
        """A terminal colour code or a NUL in a body (pasted from a log) is dropped, and a warning names the
        line and the character; one left in a file by hand is a check error at its line; an automated
        writer's body and one-line fields lose the escapes whole."""
        coloured = "A log line\nsaid \x1b[31mERROR\x1b[0m here"
        result = run("add", "-k", "D", "-t", "Coloured", "-a", "a", "--body", coloured)
        assert result.exit_code == 0 and "line 2 held U+001B (an escape" in result.stderr, result.stderr
        assert parse((root / "memory" / "decisions.md").read_text()).entries[0].body == "A log line\nsaid ERROR here"
        result = run("add", "-k", "D", "-t", "Nul", "-a", "a", "--body", "x\x00y")
        assert result.exit_code == 0 and "U+0000" in result.stderr
        run("add", "-k", "D", "-t", "First", "-a", "a", "--body", "b\twith a tab stays")
        assert run("check").exit_code == 0
        path = root / "memory" / "decisions.md"
        path.write_text(path.read_text() + "\nA bell \x07 by hand.\n")
        line = path.read_text().split("\n").index("A bell \x07 by hand.") + 1
        assert f"memory/decisions.md:{line}: control-character U+0007" in run("check").stdout
        path.write_text(path.read_text().replace("A bell \x07 by hand.", "An override \u202e by hand."))
        assert f"memory/decisions.md:{line}: control-character U+202E (a bidirectional" in run("check").stdout
        path.write_text(path.read_text().replace("An override \u202e by hand.", "Met \u2068\u05d3\u05d5\u05d3\u2069."))
        assert run("check").exit_code == 0  # an isolated right-to-left name, as copy-paste gives it
        fixed = normalize_automated({"op": "add", "title": "a \x1b[1mbold\x1b[0m", "body": coloured}, Schema())
        assert fixed["title"] == "a bold" and fixed["body"] == "A log line\nsaid ERROR here"

    def test_bom_inside_the_file_is_named(self, run: Run, root: Path) -> None:
        """A byte-order mark after the start (it hides a heading from the parser) is reported at its line."""
        run("add", "-k", "D", "-t", "First", "-a", "a", "--body", "b")
        path = root / "memory" / "decisions.md"
        text = path.read_text().replace("\nb\n", "\nb\n\n\ufeff### D-002: hidden\n")
        path.write_text(text)
        line = text.split("\n").index("\ufeff### D-002: hidden") + 1
        assert f"memory/decisions.md:{line}: stray-bom" in run("check").stdout


class TestEncoding:
    @pytest.mark.parametrize("bad_line", [18, 900])
    def test_bad_byte_is_named_at_its_real_line(self, run: Run, root: Path, bad_line: int) -> None:
        """A non-UTF-8 byte on line N: check, add, list, audit and status name line N (past the first buffer too)."""
        run("add", "-k", "D", "-t", "First", "-a", "a", "--body", "b")
        path = root / "memory" / "decisions.md"
        path.write_text(path.read_text() + "".join(f"my note {n}\n" for n in range(1000)))
        lines = path.read_bytes().split(b"\n")
        lines[bad_line - 1] = lines[bad_line - 1] + b" caf\xe9"
        path.write_bytes(b"\n".join(lines))
        before = snapshot(root)
        result = run("check")
        assert result.exit_code == 1
        assert result.stdout.startswith(f"memory/decisions.md:{bad_line}: not-utf8 not UTF-8 text: byte 0xe9")
        found = json.loads(run("check", "--json").stdout)["findings"]
        assert [(f["code"], f["line"]) for f in found] == [("not-utf8", bad_line)]
        added = run("add", "-k", "D", "-t", "t", "-a", "a", "--body", "b")
        assert added.exit_code == 2 and f"memory/decisions.md:{bad_line}: not UTF-8" in added.stderr
        for command in ("list", "audit", "status"):  # each names the file at the bad byte's line
            result = run(command)
            assert f"memory/decisions.md:{bad_line}: not UTF-8" in result.stderr + result.stdout, command
        assert snapshot(root) == before


class TestDoubledCarriageReturns:
    def test_file_converted_to_crlf_twice_is_named_and_fmt_repairs_it(self, run: Run, root: Path) -> None:
        """CR CR LF line ends (unix2dos run twice): check says stray-cr at line 1, fmt writes plain CRLF."""
        run("add", "-k", "D", "-t", "First", "-a", "a", "--body", "b")
        path = root / "memory" / "decisions.md"
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\r\n"))
        result = run("check")
        assert result.exit_code == 1
        assert result.stdout.splitlines() == [
            "memory/decisions.md:1: stray-cr more than one carriage return (CR) ends the line: run memfiles fmt"
        ]
        assert run("fmt").exit_code == 0
        data = path.read_bytes()
        assert b"\r\r" not in data and data.count(b"\n") == data.count(b"\r\n")
        assert run("check").exit_code == 0


class TestOnePlace:
    FORBIDDEN = (
        "[A-Z][A-Z0-9]",
        "[A-Za-z][A-Za-z0-9]{0,",
        "`{3",
        "~{3",
        'r"^###',
        'r"^##',
        'startswith("## ")',
        'startswith("### ")',
    )

    def test_no_module_but_grammar_writes_the_id_heading_or_fence_rules(self) -> None:
        """The id regex, heading shapes and fence markers are spelled out in format/grammar.py and nowhere else."""
        source = REPO / "src" / "memfiles"
        offenders = [
            f"{path.relative_to(source)}: {pattern}"
            for path in sorted(source.rglob("*.py"))
            if path.name != "grammar.py"
            for pattern in self.FORBIDDEN
            if pattern in path.read_text(encoding="utf-8")
        ]
        assert offenders == []


def test_a_metadata_key_in_another_case_is_named_at_its_line() -> None:
    """`- Status: proposed` under a heading was read as body text, and the entry then "lacked status" at
    its heading's line; it is named at its own line, with the key to write."""
    text = "# Decisions\n\n### D-001: x\n\n- date: 2026-01-01\n- area: a\n- Status: proposed\n\nBody.\n"
    with pytest.raises(ParseError) as caught:
        parse(text)
    assert caught.value.line == 7
    assert caught.value.message == "D-001: metadata keys are lower case: write '- status:' for '- Status:'"


class TestConflictMarkers:
    """A file mid-merge (git's <<<<<<< ... >>>>>>> left in it) is never read as entries: parse names the
    opening marker's line, every write refuses and changes nothing, check reports it; a body cannot carry
    one. A conflict in a code fence counts (both sides edited a snippet); a lone `>>>>>>> text` (a deep
    quote), `=======` alone (a heading's underline) and marker lines indented by a space do not."""

    SIDES = "<<<<<<< HEAD\nWe chose Postgres.\n=======\nWe chose MySQL.\n>>>>>>> bob\n"

    def test_a_conflict_anywhere_is_a_parse_error_at_its_opening_line(self) -> None:
        text = f"# Decisions\n\n{ENTRY}{self.SIDES}"
        with pytest.raises(ParseError) as caught:
            parse(text, "memory/decisions.md")
        assert caught.value.line == 9 and "git conflict marker" in caught.value.message
        canonical = _file("Body.")
        index_end = canonical.index("<!-- memfiles:index:end -->")
        in_index = canonical[:index_end] + "<<<<<<< HEAD\n=======\n>>>>>>> bob\n" + canonical[index_end:]
        in_manual = canonical + "\n" + self.SIDES
        diff3 = canonical.replace("Body.", "<<<<<<< ours\nBody.\n||||||| base\nOld.\n=======\nNew.\n>>>>>>> theirs")
        in_fence = canonical.replace(
            "Body.", "Run:\n\n```sql\n<<<<<<< HEAD\nSELECT 3;\n=======\nSELECT 2;\n>>>>>>> bob\n```"
        )
        wide = canonical.replace("Body.", "<<<<<<<<< HEAD\nBody.\n=========\nOther.\n>>>>>>>>> theirs")
        for broken in (in_index, in_manual, diff3, in_fence, wide):
            with pytest.raises(ParseError, match="git conflict marker"):
                parse(broken)

    def test_a_lone_closing_line_an_underline_and_an_indented_example_are_text(self) -> None:
        quote = _file("From the thread:\n\n>>>>>>> deep quote of an old mail")
        assert ">>>>>>> deep quote" in parse(quote).entries[0].body
        underline = _file("Results\n=======\n\nFine.")
        assert "=======" in parse(underline).entries[0].body
        example = "A conflict looks like:\n\n```text\n <<<<<<< HEAD\n ours\n =======\n theirs\n >>>>>>> bob\n```"
        assert "<<<<<<< HEAD" in parse(_file(example)).entries[0].body
        for body in ("Results\n=======\n\nFine.", ">>>>>>> a quote", example):
            assert body_problem(body) is None, body

    def test_a_body_with_a_conflict_is_refused(self) -> None:
        problem = body_problem("Keep this.\n<<<<<<< HEAD\nor this\n=======\nor that\n>>>>>>> bob")
        assert problem is not None and "body line 2 opens a git conflict" in problem

    def test_writes_refuse_a_file_mid_merge_and_check_names_the_line(self, run: Run, root: Path) -> None:
        run("add", "-k", "D", "-t", "Use Postgres", "-a", "db", "--body", "We chose Postgres.")
        path = root / "memory" / "decisions.md"
        text = path.read_text()
        path.write_text(text.replace("We chose Postgres.\n", self.SIDES))
        line = path.read_text().splitlines().index("<<<<<<< HEAD") + 1
        before = snapshot(root)
        check = run("check", "--no-lint")
        assert check.exit_code == 1
        assert f"memory/decisions.md:{line}: parse-error a git conflict marker" in check.stdout
        for command in (
            ["add", "-k", "D", "-t", "Another", "-a", "db", "--body", "x"],
            ["set", "D-001", "--status", "accepted"],
            ["fmt"],
        ):
            result = run(*command)
            assert result.exit_code == 2, (command, result.output)
            assert f"memory/decisions.md:{line}:" in result.stderr and "a git conflict marker" in result.stderr, command
            assert "Traceback" not in result.output
        assert snapshot(root) == before
        path.write_text(text)  # resolved
        resolved = snapshot(root)
        sides = "a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> bob"
        taken = run("add", "-k", "D", "-t", "Body with one", "-a", "db", "--body", sides)
        assert taken.exit_code == 0 and "git conflict marker" in taken.stderr, taken.stderr
        assert snapshot(root) != resolved
        body = parse(path.read_text()).entries[-1].body
        assert body == "a\n\n```\n <<<<<<< HEAD\nb\n=======\nc\n >>>>>>> bob\n```"  # reads as written
        assert run("check").exit_code == 0, run("check").output


class TestEveryProblem:
    """parse with a `problems` list (check's view): every entry's problem, and the file without those entries."""

    TEXT = (
        "# Decisions\n\n### D-001: Good\n- date: 2026-01-01\n- area: a\n- status: accepted\n\nBody one.\n\n"
        "### D-002: Cased\n- date: 2026-01-01\n- Area: a\n- status: accepted\n\nBody.\n\n"
        "## D-3: A stray heading\n- date: 2026-01-01\n- area: a\n\n"
        "### D-004: Twice\n- date: 2026-01-01\n- date: 2026-01-02\n- area: a\n- status: accepted\n\nBody.\n\n"
        "### D-005: Also good\n- date: 2026-01-01\n- area: a\n- status: accepted\n\nBody five.\n"
    )

    def test_without_a_list_the_first_problem_raises_as_always(self) -> None:
        with pytest.raises(ParseError) as raised:
            parse(self.TEXT, "d.md")
        assert (raised.value.line, raised.value.message) == (
            12,
            "D-002: metadata keys are lower case: write '- area:' for '- Area:'",
        )

    def test_with_a_list_every_problem_is_collected_and_the_rest_is_read(self) -> None:
        problems: list[ParseError] = []
        memory = parse(self.TEXT, "d.md", problems=problems)
        assert [(p.line, p.message.split(":")[0]) for p in problems] == [
            (12, "D-002"),
            (17, "D-3 has metadata under it but no entry heading"),
            (23, "D-004"),
        ]
        assert [entry.id for entry in memory.entries] == ["D-001", "D-005"]
        assert memory.entries[1].body == "Body five."

    def test_a_file_broken_past_reading_still_raises(self) -> None:
        """An unclosed fence swallows the rest of the file: nothing after it is read as meant."""
        problems: list[ParseError] = []
        with pytest.raises(ParseError, match="never closed"):
            parse(self.TEXT + "\n```\nunclosed\n", "d.md", problems=problems)

    def test_one_mistake_is_one_problem_and_what_an_entry_lacks_is_said_too(self) -> None:
        """A body of bullets missing its blank line read as four unknown keys; a cased key hid that the entry
        also lacks a status (it came out only after the first was fixed). Review of the twelfth session."""
        bullets = (
            "### D-001: Pick a queue\n- date: 2026-12-02\n- area: ci\n- status: accepted\n"
            "- pro: fast\n- con: one more\n- risk: ops\n"
        )
        cased = "### D-002: B\n- date: 2026-12-02\n- Area: x\n\nBody.\n"
        problems: list[ParseError] = []
        parse(f"# D\n\n{bullets}\n{cased}", "d.md", problems=problems)
        assert [(p.line, p.message) for p in problems] == [
            (7, "D-001: unknown metadata key 'pro' (known: " + problems[0].message.split("(known: ")[1]),
            (13, "D-002: metadata keys are lower case: write '- area:' for '- Area:'"),
            (11, "D-002 lacks status (every entry has date, area, status)"),
        ]


@pytest.mark.parametrize(
    ("text", "spans"),
    [
        ("a `b` c", ["`b`"]),
        ("\\`x `a  b` y", ["`a  b`"]),  # an escaped backtick opens nothing
        ("\\\\`code`", ["`code`"]),  # an escaped backslash escapes no backtick
        ("``a ` b`` c", ["``a ` b``"]),  # closed by a run of the same length only
        ("`no close", []),
        ("a `x\nb` c", ["`x\nb`"]),  # onto the next line
        ("a `x\n\nb` c", []),  # never past a blank line
        ("`a\\` b", ["`a\\`"]),  # inside a span a backslash is text
    ],
)
def test_code_spans_as_commonmark_reads_them(text: str, spans: list[str]) -> None:
    assert [text[start:end] for start, end in code_spans(text)] == spans


def test_an_id_after_an_escaped_backtick_is_a_mention() -> None:
    """`\\`D-001` is prose (the backtick is escaped), so audit counts the id; inside a span it is not."""
    assert grammar_for(("D",)).ids_in("see \\`D-001 and `D-002`") == ["D-001"]
