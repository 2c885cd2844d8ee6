"""The format's invariants: byte-exact round trip of canonical files, idempotent formatting."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memfiles import Entry, MemoryFile, Section, parse, render
from tests.conftest import DATA, REPO


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

    def test_crlf_file_is_read_and_written_with_lf(self) -> None:
        """A file saved with CRLF parses; fmt writes LF."""
        text = render(MemoryFile(title="T")).replace("\n", "\r\n")
        assert "\r" not in render(parse(text))


# --- Hypothesis: any valid model renders to text that parses back to the same model ---------------------

_word = st.text(alphabet=st.characters(whitelist_categories=("Lu", "Ll", "Nd")), min_size=1, max_size=8)
_line = st.lists(_word, min_size=1, max_size=6).map(" ".join)
_date = st.dates().map(lambda d: f"{d.year:04d}-{d.month:02d}-{d.day:02d}")
_body_line = st.one_of(_line, _line.map(lambda s: "- " + s), _line.map(lambda s: "> " + s), st.just(""))
_body = st.lists(_body_line, min_size=1, max_size=6).map(lambda ls: "\n".join(ls).strip() or "x")
_ids = st.lists(st.integers(1, 999), min_size=1, max_size=6, unique=True)


@st.composite
def memory_files(draw: st.DrawFn) -> MemoryFile:
    numbers = draw(_ids)
    entries = [
        Entry(
            id=f"D-{n:03d}",
            title=draw(_line),
            date=draw(_date),
            area=draw(_word),
            status=draw(st.sampled_from(["proposed", "accepted", "superseded"])),
            body=draw(_body),
            refs=tuple(draw(st.lists(st.sampled_from(["D-001", "F-014", "L-2"]), max_size=2, unique=True))),
            tags=tuple(draw(st.lists(_word, max_size=2, unique=True))),
        )
        for n in numbers
    ]
    split = draw(st.integers(0, len(entries)))
    sections = [Section(None, "", tuple(entries[:split]))] if split else []
    if entries[split:]:
        sections.append(Section(draw(_line), draw(st.one_of(st.just(""), _line)), tuple(entries[split:])))
    manual = draw(st.one_of(st.none(), _body.map(lambda b: f"## Manual\n\n{b}\n")))
    return MemoryFile(
        title=draw(st.one_of(st.none(), _line)),
        preamble=draw(st.one_of(st.just(""), _line)),
        sections=tuple(sections),
        manual=manual,
    )


class TestHypothesis:
    @settings(max_examples=200, deadline=None)
    @given(memory_files())
    def test_parse_of_render_is_identity(self, memory: MemoryFile) -> None:
        """parse(render(m)) == m, and the rendered text is a fixed point of formatting."""
        text = render(memory)
        again = parse(text)
        assert again == memory
        assert render(again) == text

    @settings(max_examples=200, deadline=None)
    @given(st.text(alphabet="#-: \nabcDF0123`~>", max_size=200))
    def test_arbitrary_text_parses_or_fails_cleanly(self, text: str) -> None:
        """Any text either parses (and then formats idempotently) or raises ParseError with a line."""
        from memfiles.errors import ParseError

        try:
            memory = parse(text)
        except ParseError as error:
            assert error.line is None or error.line >= 1
            return
        once = render(memory)
        assert render(parse(once)) == once


def test_fixture_directory_exists() -> None:
    """The fixtures this module reads are where it expects them."""
    assert Path(DATA / "canonical.md").is_file()


class TestOwnMemory:
    def test_own_memory_passes_check_fmt_and_refs(self) -> None:
        """This repository's memory/ passes check and fmt --check, and its code has no dangling refs."""
        from click.testing import CliRunner

        from memfiles.cli.main import cli

        for args in (["check"], ["fmt", "--check"], ["refs", "--dangling"]):
            result = CliRunner().invoke(cli, ["--root", str(REPO), *args])
            assert result.exit_code == 0, (args, result.output)
