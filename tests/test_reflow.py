"""The write path's re-flow of long list items and quotes (mdlint/clean.py): what it must never do.

The cases come from a review of the change that re-flows an item's or a quote's whole paragraph; each
is a body whose rendering the re-flow would otherwise have changed, or a line it left over the width.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memfiles.format.wrap import normalize_body
from memfiles.mdlint.clean import clean_body
from tests.conftest import Run, snapshot

ITEM = "- " + " ".join(["alpha"] * 17)  # 103 columns: over the width, so its paragraph is re-flowed
BETA = " ".join(["beta"] * 18)


def stored(body: str) -> list[str]:
    return clean_body(normalize_body(body, 100), 100).split("\n")


def test_an_html_line_under_an_item_stays_a_line_of_its_own() -> None:
    """`<!-- note -->` or `<details>` under an item's text opens an HTML block there; joined to the text
    above it would become inline HTML inside the paragraph."""
    assert stored(f"{ITEM}\n  <!-- note -->")[-1] == "  <!-- note -->"
    assert stored(f"{ITEM}\n  <details>\n  <summary>x</summary>")[-2:] == ["  <details>", "  <summary>x</summary>"]


def test_spaces_inside_a_code_span_are_kept() -> None:
    """A code span's run of spaces is its content: neither the join nor the wrap may collapse it."""
    assert stored(f"{ITEM}\n  with `a  b` inside")[-1] == "  with `a  b` inside"
    lines = stored("- " + "alpha " * 14 + "`x  y` " + "omega " * 5)
    assert "`x  y`" in lines[0] and all(len(line) <= 100 for line in lines)


def test_a_hard_break_is_kept_and_fits_in_the_width() -> None:
    lines = stored(f"{ITEM}\n  {BETA} xy  \n  after")
    assert all(len(line) <= 100 for line in lines), lines
    assert lines[-2:] == ["  xy  ", "  after"]


@pytest.mark.parametrize(
    ("word", "what"),
    [
        ("`a > b`", "a quote marker inside code, which no backslash can escape"),
        ("<div>", "an HTML block start"),
        ("<!--", "an HTML comment, which would hide the rest of the text"),
    ],
)
def test_no_line_starts_with_a_word_that_opens_a_block(word: str, what: str) -> None:
    lines = stored(f"{ITEM}\n  {BETA} {word} gamma delta")
    assert all(len(line) <= 100 for line in lines), (what, lines)
    first_words = [line.split()[0] for line in lines[1:]]
    assert not any(w in (">", "<div>", "<!--") for w in first_words), (what, lines)
    assert " ".join(" ".join(lines).split()) == " ".join(f"{ITEM} {BETA} {word} gamma delta".split())


@pytest.mark.parametrize("word", ["\\", "C:\\"])
def test_no_line_ends_in_a_backslash_the_text_did_not_end_with(word: str) -> None:
    """A backslash at a line's end is a hard break; in the middle of text it is a character."""
    lines = stored(f"{ITEM}\n  {BETA} {word} gamma delta")
    assert not any(line.endswith("\\") for line in lines), lines


def test_an_item_that_opens_with_indented_code_is_left_as_written() -> None:
    """Five spaces after the marker: the item's text is code (CommonMark), which no wrap may touch."""
    body = "-     code " + "alpha " * 16 + "alpha\n      more code"
    assert stored(body) == body.split("\n")


def test_an_item_that_opens_a_fence_is_not_joined_with_the_code_under_it() -> None:
    body = "1) ~~~ info\n   " + "delta " * 17 + "<?php x\n   more"
    lines = stored(body)
    assert lines[0] == "1) ~~~ info"


def test_the_reviewed_bodies_are_stored_and_pass_check(run: Run, root: Path) -> None:
    """Each case above through `add`, then `check`: stored, and nothing found."""
    bodies = [
        f"{ITEM}\n  <!-- note -->",
        f"{ITEM}\n  with `a  b` inside",
        f"{ITEM}\n  {BETA} xy  \n  after",
        f"{ITEM}\n  {BETA} `a > b` gamma delta",
        f"{ITEM}\n  {BETA} <div> gamma *delta*",
        f"{ITEM}\n  {BETA} C:\\ gamma delta",
    ]
    for number, body in enumerate(bodies):
        result = run("add", "-k", "L", "-t", f"Reviewed {number}", "-a", "format", input=body + "\n")
        assert result.exit_code == 0, (body, result.output)
    result = run("check")
    assert result.exit_code == 0, result.output


def words(count: int) -> str:
    return " ".join(["alpha"] * count)


def test_a_quote_whose_first_line_is_one_word_is_still_wrapped() -> None:
    lines = stored(">word\n>" + words(17) + " more")
    assert len(lines) == 2 and all(len(line) <= 100 for line in lines) and lines[0].startswith("> word alpha")


@pytest.mark.parametrize("space", ["\u00a0", "\u202f"])
def test_a_no_break_space_is_text_not_a_place_to_break(space: str) -> None:
    assert stored("- " + words(17) + f"\n  10{space}km")[-1].endswith(f"10{space}km")


@pytest.mark.parametrize("word", ["***", "___", "_"])
def test_a_wrap_never_leaves_a_thematic_break_alone_on_a_line(word: str) -> None:
    lines = stored("- " + words(17) + "\n  " + words(14) + f" abcdefgh {word}")
    assert lines[-1].strip() != word, lines


def test_an_angle_bracketed_link_destination_is_never_cut() -> None:
    lines = stored("- " + words(17) + "\n  " + words(13) + " abcd [l](<u v>) more")
    assert any("[l](<u v>)" in line for line in lines), lines


def test_the_break_moves_back_past_several_words_that_cannot_start_a_line() -> None:
    """`<details> <summary>`: neither may start a line, so the break goes before `in`, not nowhere."""
    lines = stored("- " + words(17) + "\n  " + words(12) + " wrap it in <details> <summary> tags")
    assert all(len(line) <= 100 for line in lines), lines
    assert not any(line.lstrip().startswith(("<details>", "<summary>")) for line in lines), lines


def test_a_wrap_that_would_open_a_fence_is_not_made() -> None:
    """A line opening with a ``` code span, cut before its closing backticks, would open a fence: it is
    left as written (and `add` then names the line and the rule)."""
    body = "``` " + words(16) + " ``` more"
    assert stored(body) == [body]


def test_source_counts_as_an_html_block_tag() -> None:
    """PyMarkdown and GitHub still read `<source` as an HTML block start (the older CommonMark list)."""
    lines = stored("- " + words(15) + " gamma <source src=x> delta")
    assert not any(line.lstrip().startswith("<source") for line in lines), lines


def test_a_body_with_no_safe_wrap_is_refused_with_its_line_and_rule_and_nothing_written(run: Run, root: Path) -> None:
    """Where no wrap is safe, `add` refuses rather than storing the body altered: exit 2, the body line and
    the md013 rule named, no file changed."""
    assert run("add", "-k", "L", "-t", "First", "-a", "format", "--body", "kept").exit_code == 0
    before = snapshot(root)
    result = run("add", "-k", "L", "-t", "Fence", "-a", "format", input="``` " + words(16) + " ``` more\n")
    assert result.exit_code == 2, result.output
    assert "body line 1" in result.output and "md013" in result.output, result.output
    assert "Traceback" not in result.output
    assert snapshot(root) == before
