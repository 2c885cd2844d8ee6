"""The format's invariants: byte-exact round trip of canonical files, idempotent formatting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memfiles import Entry, MemoryFile, Section, parse, render
from memfiles.errors import OpError, ParseError
from memfiles.format.grammar import is_manual_name
from memfiles.format.ids import Schema
from memfiles.format.validate import body_problem, validate_file
from memfiles.markdown.body import prepare
from memfiles.store.ops import parse_op
from tests.conftest import DATA, REPO, Run


class TestRoundTrip:
    def test_canonical_fixture_round_trips_byte_for_byte(self) -> None:
        """render(parse(t)) == t for a canonical file with sections, fences, hard breaks and a Manual."""
        text = (DATA / "canonical.md").read_text(encoding="utf-8")
        assert render(parse(text)) == text

    def test_messy_file_formats_to_expected(self) -> None:
        """Blank lines, metadata order and a missing index are put right; the Manual stays byte for byte."""
        text = (DATA / "messy.md").read_text(encoding="utf-8")
        expected = (DATA / "messy.expected.md").read_text(encoding="utf-8")
        assert render(parse(text)) == expected
        assert parse(text).manual == "## Manual\nkeep   this   exactly  \n"

    @pytest.mark.parametrize("name", ["canonical.md", "messy.md"])
    def test_formatting_is_idempotent(self, name: str) -> None:
        """fmt(fmt(t)) == fmt(t)."""
        once = render(parse((DATA / name).read_text(encoding="utf-8")))
        assert render(parse(once)) == once

    def test_project_memory_round_trips(self) -> None:
        """Every memory file of this repository is canonical."""
        files = sorted((REPO / "memory").rglob("*.md"))
        assert files, "the repository's own memory/ has files"
        for path in files:
            text = path.read_text(encoding="utf-8")
            assert render(parse(text, path)) == text, path

    def test_manual_without_trailing_newline_is_kept(self) -> None:
        """The Manual section's bytes survive even without a final newline."""
        text = render(MemoryFile(title="T", manual="## Manual\n\nno newline at the end"))
        assert text.endswith("no newline at the end")
        assert render(parse(text)) == text

    @pytest.mark.parametrize("heading", ["## manual", "## MANUAL"])
    def test_a_manual_heading_in_any_case_is_the_users_own(self, run: Run, root: Path, heading: str) -> None:
        """`## manual` typed by hand is the Manual, as `--section manual` is refused for being it: check
        linted it and fmt reflowed the notes."""
        path = root / "memory" / "decisions.md"
        notes = f"{heading}\n\nmy notes   with trailing   \n* star\n"
        entry = "### D-001: hand made\n\n- date: 2026-12-01\n- area: a\n- status: proposed\n\nbody\n\n"
        path.write_text(f"# Decisions\n\n{entry}{notes}")
        assert parse(path.read_text()).manual == notes
        assert run("fmt").exit_code == 0 and path.read_text().endswith(notes)
        assert run("check").exit_code == 0
        assert run("add", "-k", "D", "-t", "x", "-a", "a", "--body", "b").exit_code == 0
        assert path.read_text().endswith(notes)

    def test_crlf_file_keeps_crlf_throughout(self) -> None:
        """A file saved with CRLF parses and formats back to CRLF everywhere, the Manual included."""
        text = render(MemoryFile(title="T", manual="## Manual\n\nmine\n")).replace("\n", "\r\n")
        assert render(parse(text)) == text

    def test_mixed_file_formats_to_its_first_line_ending(self) -> None:
        """A file whose first line ends in LF but whose Manual has CRLF lines formats to LF throughout."""
        text = render(MemoryFile(title="T")) + "\n## Manual\r\n\r\nmine\r\n"
        assert "\r" not in render(parse(text))


# --- Hypothesis: any valid model renders to text that parses back to the same model ---------------------

_word = st.text(alphabet=st.characters(whitelist_categories=("Lu", "Ll", "Nd")), min_size=1, max_size=8)
_line = st.lists(_word, min_size=1, max_size=6).map(" ".join)
_date = st.dates().map(lambda d: f"{d.year:04d}-{d.month:02d}-{d.day:02d}")
# Markdown's structural characters, indentation, tabs and stray CRs, as a hand or an agent types them.
_MARKS = "`~#:->*|<=_[]()!\\. \t\r"
_rich_line = st.one_of(
    _line,
    st.text(alphabet=_MARKS + "abcDFXU0123", max_size=24),
    st.sampled_from(
        [
            *("```", "````", "~~~", "```py", "   ```", "    code", "### UTF-8 handling", "### Step-1 of it", "# x"),
            *("|a|b|", "<!-- -->", "-", "  - nested"),  # the body separator, and first lines that need it
        ]
    ),
    st.tuples(st.sampled_from(["", " ", "  ", "    ", "\t"]), _line).map("".join),
    st.tuples(st.sampled_from(["- ", "> ", "1. ", "### ", "#### ", "* "]), _line).map("".join),
)
_rich_text = st.lists(_rich_line, min_size=1, max_size=8).map("\n".join)


def _valid_body(body: str) -> bool:
    """A body the model can hold: what the write path would accept, and stored as the parser reads it."""
    lines = body.split("\n")
    return (
        bool(lines[0].strip())
        and bool(lines[-1].strip())
        and not any(line.endswith("\r") for line in lines)
        and body_problem(body) is None
    )


_body = st.one_of(
    st.lists(
        st.one_of(_line, _line.map(lambda s: "- " + s), _line.map(lambda s: "> " + s), st.just("")), min_size=1
    ).map(lambda ls: "\n".join(ls).strip() or "x"),
    _rich_text.filter(_valid_body),
)
_title = st.one_of(_line, st.text(alphabet=_MARKS + "abc", min_size=1, max_size=20)).filter(
    lambda t: t.strip() == t and t != ""
)
_ids = st.lists(st.integers(1, 999), min_size=1, max_size=6, unique=True)


@st.composite
def memory_files(draw: st.DrawFn) -> MemoryFile:
    numbers = draw(_ids)
    entries = [
        Entry(
            id=f"D-{n:03d}",
            title=draw(_title),
            date=draw(_date),
            area=draw(_word),
            status=draw(st.sampled_from(["proposed", "accepted", "superseded"])),
            body=draw(_body),
            # never the entry itself (check's bad-ref, as the write path refuses it)
            refs=tuple(
                ref
                for ref in draw(st.lists(st.sampled_from(["D-001", "F-014", "L-2"]), max_size=2, unique=True))
                if ref != f"D-{n:03d}"
            ),
            tags=tuple(draw(st.lists(_word, max_size=2, unique=True))),
        )
        for n in numbers
    ]
    split = draw(st.integers(0, len(entries)))
    sections = [Section(None, "", tuple(entries[:split]))] if split else []
    if entries[split:]:
        # a section named Manual, in any case, is the user's own and ends the entries (is_manual_name)
        name = draw(_line.filter(lambda line: not is_manual_name(line)))
        sections.append(Section(name, draw(st.one_of(st.just(""), _line)), tuple(entries[split:])))
    manual_text = _rich_text.filter(lambda b: not any(line.endswith("\r") for line in b.split("\n")))
    manual = draw(st.one_of(st.none(), manual_text.map(lambda b: f"## Manual\n\n{b}\n")))
    return MemoryFile(
        title=draw(st.one_of(st.none(), _line)),
        preamble=draw(st.one_of(st.just(""), _line)),
        sections=tuple(sections),
        manual=manual,
        newline=draw(st.sampled_from(["\n", "\r\n"])),
        bom=draw(st.booleans()),
    )


class TestHypothesis:
    @settings(max_examples=200, deadline=None)
    @given(memory_files())
    def test_parse_of_render_is_identity(self, memory: MemoryFile) -> None:
        """parse(render(m)) == m, and the rendered text is a fixed point of formatting that check accepts."""
        text = render(memory)
        again = parse(text)
        assert again == memory
        assert render(again) == text
        assert {item.code for item in validate_file("x.md", again, text, Schema())} <= {"stray-cr", "entry-in-manual"}

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet="#-: \n\r\t`~>|abcDF0123\ufeff", max_size=200))
    @example("\n\ufeff")  # a BOM after blank lines once moved and changed the file on a second fmt
    @example("a\r\r\nb\n")
    def test_arbitrary_text_parses_or_fails_cleanly(self, text: str) -> None:
        """Any text either parses (and then formats idempotently) or raises ParseError with a line."""
        try:
            memory = parse(text)
        except ParseError as error:
            assert error.line is None or error.line >= 1
            return
        once = render(memory)
        assert render(parse(once)) == once
        codes = {item.code for item in validate_file("x.md", parse(once), once, Schema())}
        assert not codes & {"stale-index", "not-canonical", "mixed-line-endings"}

    @settings(max_examples=300, deadline=None)
    @given(st.one_of(_rich_text, st.text(alphabet=_MARKS + "\nab", max_size=120)), st.sampled_from([0, 12, 100]))
    @example("0 0\n0000000000  0", 12)  # two spaces inside a line made a second wrap break elsewhere
    def test_write_path_never_writes_an_unparseable_file(self, body: str, width: int) -> None:
        """A body the write path stores renders to a file that parses back to that body, and preparing it
        again changes nothing."""
        schema = Schema()
        try:
            op = parse_op({"op": "add", "kind": "D", "title": "t", "area": "a", "body": body}, 1, schema, width)
        except OpError:
            return
        stored = prepare(op.fields["body"], width, schema).text
        assert prepare(stored, width, schema).text == stored
        entry = Entry(id="D-001", title="t", date="2026-01-01", area="a", status="proposed", body=stored)
        text = render(MemoryFile(title="T", sections=(Section(None, "", (entry,)),), manual="## Manual\n"))
        assert parse(text).entries[0].body == stored


def test_fixture_directory_exists() -> None:
    """The fixtures this module reads are where it expects them."""
    assert Path(DATA / "canonical.md").is_file()


class TestOwnMemory:
    def test_own_memory_passes_check_fmt_and_refs(self) -> None:
        """This repository's memory/ passes check, fmt --check and audit (`make demo` runs it: evidence that
        cites a moved file fails it; staleness, which depends on today's date, is left out), and its code
        has no dangling refs."""
        from click.testing import CliRunner

        from memfiles.cli.main import cli

        for args in (["check"], ["fmt", "--check"], ["refs", "--dangling"], ["audit", "--stale-days", "36500"]):
            result = CliRunner().invoke(cli, ["--root", str(REPO), *args])
            assert result.exit_code == 0, (args, result.output)


class TestBodySeparator:
    """A body opening with a `-` item or an indented line would render as more of the metadata list:
    canonical form puts `<!-- -->` between them, and parse drops it (format/grammar.py)."""

    HEAD = "# Lessons\n\n### L-001: T\n\n- date: 2026-01-01\n- area: a\n- status: active\n\n"

    def _file(self, text: str) -> str:
        return render(parse(text))  # with its index, as fmt writes it

    @pytest.mark.parametrize(
        "body",
        [
            "- one\n- two",
            "  indented prose",
            "    code",
            "\tcode",
            " \tcode",
            "-",
            "-\nmore",
            " - one",
        ],
    )
    def test_the_separator_goes_in_and_the_body_is_the_body(self, body: str) -> None:
        text = self._file(self.HEAD + body + "\n")
        assert f"- status: active\n\n<!-- -->\n\n{body}\n" in text
        assert parse(text).entries[0].body == body
        assert render(parse(text)) == text
        assert validate_file("memory/lessons.md", parse(text), text, Schema()) == []

    @pytest.mark.parametrize(
        "body", ["Prose.", "1. first", "* star", "-dash-word", " one space", "<!-- own -->", "x\n- y"]
    )
    def test_no_separator_where_the_body_cannot_join_the_list(self, body: str) -> None:
        text = self._file(self.HEAD + body + "\n")
        assert "<!-- -->" not in text and parse(text).entries[0].body == body

    def test_a_file_without_it_is_not_canonical_until_fmt(self) -> None:
        text = self._file(self.HEAD + "Prose.\n").replace("Prose.", "- one\n- two")
        found = validate_file("memory/lessons.md", parse(text), text, Schema())
        assert [f.code for f in found] == ["not-canonical"]
        assert found[0].line == text.split("\n").index("- one") + 1
        assert "needs <!-- --> above it: run memfiles fmt" in found[0].message

    def test_a_body_given_with_the_separator_keeps_it(self, root: Path, run: Run) -> None:
        """Canonical form puts one more above it, which parse drops: the body comes back as given."""
        result = run("add", "-k", "L", "-t", "T", "-a", "a", "--body", "<!-- -->\n\n- one", "--json")
        assert result.exit_code == 0, result.output
        shown = run("show", "L-001", "--json")
        assert json.loads(shown.output)["entry"]["body"] == "<!-- -->\n\n- one"
        assert run("check").exit_code == 0

    def test_a_note_names_the_line_of_the_body_as_given(self, root: Path, run: Run) -> None:
        """A body given with its own separator: the warning about its `# Heading` names line 5, as given."""
        result = run("add", "-k", "L", "-t", "T", "-a", "a", "--body", "<!-- -->\n\nIntro.\n\n# Heading")
        assert result.exit_code == 0
        assert "the level-1 heading at line 5 became level 4" in result.output, result.output
