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


# --- code and HTML inside containers: kept as written -------------------------------------------------

CODE = "x = compute(alpha, beta)  # " + words(16)  # 110 columns, with two spaces that are the code's


def test_a_fence_inside_a_quote_is_code_and_kept_as_written() -> None:
    """`> ```` opens a fence inside the quote: its lines are code, never re-flowed, and the fence gets a
    quoted blank line (`>`) above and below, not a bare one that would end the quote."""
    lines = stored(f"> Before:\n> ```py\n> {CODE}\n> ```\n> after")
    assert lines == ["> Before:", ">", "> ```py", f"> {CODE}", "> ```", ">", "> after"]


def test_a_quote_fence_ends_with_its_quote() -> None:
    """A line with fewer quote markers ends the quote, and the fence in it: what follows is read afresh
    (a nested quote's fence closed by `> text`, a top-level paragraph wrapped again)."""
    lines = stored(f"> > ```\n> > {CODE}\n> end of the inner quote\n\n{words(20)}")
    assert lines[:3] == ["> > ```", f"> > {CODE}", "> end of the inner quote"]
    assert all(len(line) <= 100 for line in lines[3:]) and len(lines) == 6, lines


def test_a_pre_block_keeps_every_line_and_space() -> None:
    """Inside `<pre>` line breaks and spaces are the text's; a bullet, a URL and a `#` there are no
    Markdown either: nothing is wrapped, bracketed, escaped or stripped."""
    body = f"Text.\n\n<pre>\n{CODE}\n* https://example.com/x\n#42  \n</pre>\n\nAfter."
    assert stored(body) == body.split("\n")


def test_a_long_line_of_a_div_block_is_wrapped_plainly() -> None:
    """A `<div>` block's line breaks are spaces: a long line is broken between words (never inside a
    tag) and nothing is escaped, since nothing in the block is Markdown; the block ends at a blank line."""
    lines = stored("<div>\n" + words(16) + ' abc #12 - <a href="x y" title="a b">link</a> ' + words(3) + "\n</div>")
    assert lines[0] == "<div>" and lines[-1] == "</div>" and all(len(line) <= 100 for line in lines), lines
    joined = " ".join(lines)
    assert len(lines) == 4 and lines[2].startswith("#12 - <a"), lines  # no escape at a line start here
    assert '<a href="x y" title="a b">link</a>' in joined and "\\" not in joined, lines


def test_a_div_inside_a_list_item_wraps_under_the_item() -> None:
    lines = stored("- <div> " + words(20) + "\n  </div>")
    assert lines[0].startswith("- <div> ") and all(line.startswith("  ") for line in lines[1:]), lines
    assert all(len(line) <= 100 for line in lines), lines


def test_a_div_holding_a_pre_is_kept_as_written() -> None:
    body = f"<div>\n<pre>\n{CODE}\n</pre>\n</div>"
    assert stored(body) == body.split("\n")


def test_a_quoted_fence_passes_add_and_check_and_a_long_pre_line_is_refused(run: Run, root: Path) -> None:
    """Through the CLI: the quoted fence's long code line is stored as written and the file passes check;
    a `<pre>` line over the width, which no wrap may touch, is refused with its line and the rule
    (exit 2, nothing written)."""
    result = run("add", "-k", "L", "-t", "Quoted code", "-a", "format", input=f"> Run:\n> ```\n> {CODE}\n> ```\n")
    assert result.exit_code == 0, result.output
    assert f"> {CODE}\n" in (root / "memory" / "lessons.md").read_text()
    assert run("check").exit_code == 0
    before = snapshot(root)
    result = run("add", "-k", "L", "-t", "Pre", "-a", "format", input=f"Text.\n\n<pre>\n{CODE}\n</pre>\n")
    assert result.exit_code == 2, result.output
    assert "body line 4" in result.output and "md013" in result.output and "Traceback" not in result.output
    assert snapshot(root) == before


def test_an_escaped_backtick_before_a_code_span_leaves_the_span_whole() -> None:
    """`\\`` is a backtick as text: the code span after it keeps its two spaces through the wrap."""
    lines = stored("- " + words(10) + " \\`not code `a  b` " + " ".join(["beta"] * 8))
    assert any("`a  b`" in line for line in lines) and all(len(line) <= 100 for line in lines), lines


def test_a_quoted_fence_is_left_to_pymarkdown_to_judge() -> None:
    """needs_scan vouches for top-level ``` fences only: a fence in a quote is scanned."""
    from memfiles.mdlint.clean import needs_scan

    assert not needs_scan("Text.\n\n```\ncode\n```", 100)
    assert needs_scan("> ```\n> code\n> ```", 100)
