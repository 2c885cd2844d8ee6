"""The rendered body is the given body: what the write path stores shows a reader what was given.

Every body is written through the real write path (markdown/body.py and the linter's fixes, in one
batch, as `import` writes it). For each, this module holds that:

- the stored body renders as the given body with the documented repairs applied (stage 1: headings
  demoted, fences closed, logs and pasted code fenced, conflict markers indented, entry-like headings
  escaped): the linter's fixes and the wrap change nothing a reader sees;
- a body the repairs leave alone renders as given;
- every word given is in the stored body, as often as it was given.

The HTML is compared here with a normalization of this module's own (markdown-it-py rendering, white
space outside code collapsed, autolinks as the bare URL GitHub links, `<!-- -->` separators dropped),
not the product's `renders_alike`, so that a fault there cannot hide itself. The corpus: the SeaMonkey
reports of ../shared/data (when they are beside the repository), this repository's own memory/, the
agent-style bodies of tests/data/bodies/, and random bodies built from the fragments the old hand-written
clean-up was tested with.
"""

from __future__ import annotations

import collections
import html
import json
import random
import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from memfiles.config import load_settings
from memfiles.format.wrap import printable_body
from memfiles.markdown.body import repair
from memfiles.services.lint import _prepared, lint_config
from memfiles.store.project import Project
from tests.conftest import DATA, REPO

_MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])
SEAMONKEY = REPO.parent / "shared" / "data" / "seamonkey" / "corpus.jsonl"


def _html(text: str) -> str:
    out = _MD.render(text).replace("<!-- -->", "")
    out = re.sub(
        r'<a href="([^"<>]*)">([^<>]*)</a>',
        lambda m: (
            m.group(2)
            if unquote(html.unescape(m.group(1))).endswith(unquote(html.unescape(m.group(2))))
            else m.group(0)
        ),
        out,
    )
    parts = re.split(r"(<pre><code.*?</code></pre>)", out, flags=re.S)  # a fence's text: every space counts
    loose = (re.sub(r"\s+", " ", part).replace("> <", "><") for part in parts if not part.startswith("<pre><code"))
    kept = iter(loose)
    joined = "".join(part if part.startswith("<pre><code") else next(kept) for part in parts)
    joined = re.sub(r"(<a [^<>]*>) ", r"\1", joined).replace(" </a>", "</a>")
    return html.unescape(unquote(joined)).strip()


def _words(text: str) -> collections.Counter[str]:
    return collections.Counter(re.findall(r"[^\W_]+", text))  # letters and digits: `__bold__` is `bold`


def _store(tmp_path: Path, bodies: list[str]) -> list[tuple[str, str, list[str]]]:
    """(given, stored, notes) for each body, prepared in one batch by the write path's own code."""
    (tmp_path / "memory").mkdir(exist_ok=True)
    (tmp_path / "memory" / "memfiles.toml").write_text("body_limit = 1000000\n", encoding="utf-8")
    project = Project(load_settings(tmp_path))
    given = [printable_body(body).replace("\r\n", "\n").replace("\r", "\n") for body in bodies]
    done = _prepared(project, [("T", body) for body in given], lint_config(project))
    return [(body, item.text, item.notes) for body, item in zip(given, done, strict=True)]


def _faults(results: list[tuple[str, str, list[str]]]) -> list[str]:
    from memfiles.format.ids import Schema

    schema = Schema(body_limit=1_000_000)
    faults = []
    for number, (body, stored, _notes) in enumerate(results):
        repaired = repair(body, schema)
        if _html(repaired.text) != _html(stored):
            faults.append(f"{number}: the stored body renders otherwise than the repaired one\n{body[:300]!r}")
        if not repaired.notes and _html(body) != _html(stored):
            faults.append(f"{number}: no repair said, yet the rendering changed\n{body[:300]!r}")
        missing = _words(body) - _words(stored)
        if missing:
            faults.append(f"{number}: words lost {dict(missing)}\n{body[:300]!r}")
    return faults


def test_agent_style_bodies(tmp_path: Path) -> None:
    """`##` headings, an open fence, tables, tracebacks, Jira markup, HTML, nested lists, a diff, a
    conflict, an entry pasted whole: each renders as given but for its repairs, and loses no word."""
    bodies = [path.read_text(encoding="utf-8") for path in sorted((DATA / "bodies").glob("*.md"))]
    assert len(bodies) >= 15
    results = _store(tmp_path, bodies)
    assert _faults(results) == []
    notes = {path.stem: done[2] for path, done in zip(sorted((DATA / "bodies").glob("*.md")), results, strict=True)}
    assert any("demoted" in note for note in notes["agent-root-cause"])
    assert any("never closed" in note for note in notes["agent-open-fence"])
    assert any("traceback" in note for note in notes["agent-traceback"])
    assert any("traceback" in note for note in notes["agent-java-stack"])
    assert any("Jira" in note for note in notes["agent-jira"])
    assert any("unified diff" in note for note in notes["agent-diff"])
    assert any("conflict" in note for note in notes["agent-conflict"])
    assert any("entry heading" in note for note in notes["agent-entry-like"])
    assert notes["agent-emphasis-mix"] == [] and notes["agent-long-urls"] == []


def test_the_traceback_line_is_kept_byte_for_byte(tmp_path: Path) -> None:
    """The issue's example: `File ".../very_long_module_name.py", line 123, in handle_request_with_retries`
    was re-wrapped into `line` / `123, in ...`; fenced as code, it is kept as one line."""
    body = (DATA / "bodies" / "agent-traceback.md").read_text(encoding="utf-8")
    [(_given, stored, _notes)] = _store(tmp_path, [body])
    line = next(line for line in body.split("\n") if "line 123, in handle_request_with_retries" in line)
    assert line in stored.split("\n")


def test_this_projects_own_memory(tmp_path: Path) -> None:
    """Every body and intro of memory/ as it stands, written again, renders as it does now."""
    project = Project(load_settings(REPO))
    bodies = [located.entry.body for located in project.entries() if located.entry.body.strip()]
    assert len(bodies) > 100
    assert _faults(_store(tmp_path, bodies)) == []


@pytest.mark.slow
@pytest.mark.skipif(not SEAMONKEY.is_file(), reason="the evaluation data is not beside this repository")
def test_the_seamonkey_reports(tmp_path: Path) -> None:
    """The 1,076 SeaMonkey bug reports as their reporters wrote them (control characters dropped)."""
    reports = [json.loads(line) for line in SEAMONKEY.read_text(encoding="utf-8").splitlines() if line.strip()]
    bodies = [report["text"] for report in reports if report["text"].strip()]
    assert len(bodies) > 1000
    assert _faults(_store(tmp_path, bodies)) == []


# --- random bodies from the constructs the old clean-up was tested with (tests/test_clean_render.py) ----

_WORDS = ["alpha", "beta", "#12", "-", "1.", "<div>", "`x`", "a  b", "https://e.com/x", "*", ">", "```"]
_WORDS += ["<pre>", "word", "x=1;", "\\", "_", "2.", "www.e.org", "__init__", "<!--", "|", "~~~"]


def _text(r: random.Random, low: int, high: int) -> str:
    return " ".join(r.choice(_WORDS) for _ in range(r.randint(low, high)))


_FRAGMENTS = [
    lambda r: _text(r, 3, 30),
    lambda r: "> " + _text(r, 3, 30),
    lambda r: "> ```\n> " + _text(r, 10, 30) + "\n> ```",
    lambda r: "> > ```\n> > " + _text(r, 10, 30) + "\n> text",
    lambda r: "<pre>\n" + _text(r, 10, 30) + "\n</pre>",
    lambda r: "<div>\n" + _text(r, 10, 40) + "\n</div>",
    lambda r: r.choice(["- ", "* ", "+ ", "1. ", "  - "]) + _text(r, 3, 30),
    lambda r: "- <div> " + _text(r, 3, 30),
    lambda r: "  <details>\n  " + _text(r, 10, 30),
    lambda r: "<!-- " + _text(r, 10, 30) + " -->",
    lambda r: "```\n" + _text(r, 10, 30) + "\n```",
    lambda r: _text(r, 2, 12) + "  \n" + r.choice(["    ", "> ", "  ", "- ", ""]) + _text(r, 2, 20),  # a hard break
    lambda r: r.choice(["# ", "## ", "### ", "#### "]) + _text(r, 1, 6),
    lambda r: _text(r, 1, 5) + "\n" + r.choice(["===", "---"]),
    lambda r: "| a | b |\n| - | - |\n| " + _text(r, 1, 3) + " | x |",
    lambda r: "    " + _text(r, 3, 12),
]


def _body(seed: int) -> str:
    r = random.Random(seed)
    return r.choice(["\n", "\n\n"]).join(r.choice(_FRAGMENTS)(r) for _ in range(r.randint(1, 5)))


@pytest.mark.slow
def test_random_bodies(tmp_path: Path) -> None:
    """1,000 random bodies (seeds 0-999) of fences in quotes, `<pre>` and `<div>` blocks, comments, code
    spans, hard breaks, lazy lines, bare URLs, `*` and `+` lists next to `-` lists, setext underlines,
    headings of every level and words that open a block at a line's start. The old clean-up altered 99
    renderings in 10,000 (F-042), 65 of them lists joined once their bullets were `-`; none now."""
    assert _faults(_store(tmp_path, [_body(seed) for seed in range(1000)])) == []


_LINE = st.text(alphabet="ab #*_-+>|`<!.1\\[]()", min_size=1, max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.one_of(_LINE, st.sampled_from(["", "```", "- x", "> y", "## z", "    code", "===", "<div>"])),
        min_size=1,
        max_size=10,
    )
)
def test_hypothesis_bodies(tmp_path: Path, lines: list[str]) -> None:
    """Lines of Markdown's punctuation, in any order: the same three promises."""
    body = "\n".join(lines).strip()
    if not body:
        return
    assert _faults(_store(tmp_path, [body])) == []


@pytest.mark.parametrize(
    "body",
    [
        "- one\n\n* two",  # two lists (their bullets differ): both made `-`, a separator keeps them two (F-042)
        "- one\nlazy\n* two",
        "* a\n* b\n+ c",
        "> a  \n> b",  # a hard break inside a quote
        "line one  \n    indented",
        "> quoted text\nlazy line\n> - item",
        "- a\nlazy\n- b",
        "text\n    * not a bullet",
        "a ``` code  \n  #12 more ``` end",
        "* Fixed the parser\n* <!-- TODO: link the PR -->\n* Shipped",
        "* Use `git\n  rebase -i` to squash\n* Then push",
        "Steps:\n  - one\n  - two",
        "> - a\n> b\n> - c",
        "We shipped in\n2023. Then it broke.",
        "> ### " + "word " * 30,
        "<div>\n" + "word " * 40 + "\n</div>",
        "- " + "alpha " * 17 + "\n  <!-- note -->",
        "- " + "alpha " * 14 + "`x  y` " + "omega " * 5,
        "- " + "alpha " * 17 + "\n  " + "beta " * 18 + "xy  \n  after",
        "word " * 19 + "#12 and 2. and - and > and <div> and ``` " * 3,
    ],
)
def test_cases_the_old_clean_up_was_fixed_for(tmp_path: Path, body: str) -> None:
    assert _faults(_store(tmp_path, [body])) == []


@pytest.mark.parametrize(
    "body",
    [
        "    make test\n    make lint\n\nThat is how.",  # indented code first
        "\tcode with\ttab",
        "  indented prose here",
        "- one\n- two\n\nAfter.",  # a list first: it went on with the metadata list
        "- one\n\n  more of one",
        "   1. one\n   2. two",
        "-\nmore",  # an empty item, then its lazy line
        "-\n- b",
        " - one",
        "  > a quote\n  > goes on",
    ],
)
def test_a_body_renders_in_its_file_as_it_does_alone(tmp_path: Path, body: str) -> None:
    """Under the metadata list a line two columns in is more of `- status: ...`, and a `-` list goes on
    with the metadata list: the separator canonical form puts above such a body ends the metadata list
    (F-044), so the entry's body renders in the file as the stored body does on its own."""
    from click.testing import CliRunner

    from memfiles.cli.main import cli
    from memfiles.format.parse import parse

    (tmp_path / "memory").mkdir()
    result = CliRunner().invoke(cli, ["--root", str(tmp_path), "add", "-k", "L", "-t", "T", "-a", "a", "--body", body])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "memory" / "lessons.md").read_text(encoding="utf-8")
    stored = parse(text).entries[0].body
    entry = text[text.index("### L-001") : text.index("## Manual")]
    head = entry[: entry.index("- status: active\n") + len("- status: active\n")]
    tags = lambda text: re.sub(r">\s+<", "><", _html(text))  # noqa: E731
    assert tags(entry) == tags(head) + tags(stored)
    assert tags(stored) == tags(body)
