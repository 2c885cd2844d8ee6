"""Hostile bodies cost the write path time linear in their length (issues 33 and 34): `add`, `import`,
`check` and `fmt`, each through the CLI in this process, with the Markdown repairs, the wrap and the lint
(rumdl) they run.

Each command gets a body holding one token of 10,000 and then 100,000 characters (a word, and runs of `(`,
`[`, backticks, `*`, `_`, `<`, `\\`, `#`), once opening the body (where `#` makes a heading and a backtick
run a fence) and once inside a sentence; the 100,000 case must cost at most 20x the 10,000 case, best of
three in one run (linear: about 10x; a step that rescans the rest of the body from each position: about
100x). A ratio, never a wall-clock bound. Every run starts from a fresh copy of the project, so that the
lint cache never answers for the work being timed. The body limit is raised to 1,000,000 characters
so that the body is written, not refused for its length.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from memfiles.cli.main import cli
from tests.reliability.hostile import ENTRY_POINT_KINDS, best_time, token

SMALL, LARGE = 10_000, 100_000
LIMIT = 20.0
FLOOR = 0.05  # seconds: below this at 100,000 characters nothing grew that matters (timer noise)

pytestmark = pytest.mark.slow


def body_of(kind: str, size: int) -> str:
    piece = token(kind, size // 2)
    return f"{piece}\n\nThe run printed {piece} and stopped there.\n"


def blank_project(base: Path) -> Path:
    root = Path(tempfile.mkdtemp(dir=base))
    (root / "memory").mkdir()
    (root / "memory" / "memfiles.toml").write_text("body_limit = 1000000\n", encoding="utf-8")
    return root


def invoke(root: Path, *args: str, input: str | None = None) -> str:
    result = CliRunner().invoke(cli, ["--root", str(root), *args], input=input, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output[-2000:]
    return result.output


def add(root: Path, body: str) -> None:
    options = ["--kind", "friction", "--title", "A hostile body", "--area", "tests", "--body-file", "-"]
    invoke(root, "add", *options, input=body)


def holds_linear(run: Callable[[Path], object], prepare: Callable[[Path, str], None], kind: str, base: Path) -> None:
    """`run` on a project `prepare`d with a LARGE body costs at most LIMIT x the SMALL one, in this run;
    each timing starts from a fresh copy of the prepared project."""
    templates = {}
    for size in (100, SMALL, LARGE):
        templates[size] = blank_project(base)
        prepare(templates[size], body_of(kind, size))

    def timed(size: int) -> float:
        def once() -> None:
            copy = Path(tempfile.mkdtemp(dir=base)) / "p"
            shutil.copytree(templates[size], copy)
            run(copy)

        return best_time(once)

    timed(100)  # warm: imports, rumdl's first start
    small, large = timed(SMALL), timed(LARGE)
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    print(f"FIGURES {json.dumps({'test': test, 'small_ms': small * 1000, 'large_ms': large * 1000})}")
    assert large < FLOOR or large <= LIMIT * small, (
        f"{kind!r}: {small * 1000:.1f} ms at {SMALL:,} characters, {large * 1000:.1f} ms at {LARGE:,}"
        f" ({large / small:.0f}x)"
    )


def _body_kept(root: Path) -> None:
    """The body's token is in the file (escaped or fenced as it may be): the finding was not lost."""
    text = "".join(path.read_text(encoding="utf-8") for path in (root / "memory").glob("*.md"))
    assert "stopped there" in text


@pytest.mark.parametrize("kind", ENTRY_POINT_KINDS)
def test_add(tmp_path: Path, kind: str) -> None:
    """`memfiles add` with the body on standard input."""

    def prepare(root: Path, body: str) -> None:
        (root / "body.md").write_text(body, encoding="utf-8")

    def run(root: Path) -> None:
        add(root, (root / "body.md").read_text(encoding="utf-8"))
        _body_kept(root)

    holds_linear(run, prepare, kind, tmp_path)


@pytest.mark.parametrize("kind", ENTRY_POINT_KINDS)
def test_import(tmp_path: Path, kind: str) -> None:
    """`memfiles import -` of one add op carrying the body."""

    def prepare(root: Path, body: str) -> None:
        op = {"op": "add", "kind": "lesson", "title": "A hostile body", "area": "tests", "body": body}
        (root / "ops.json").write_text(json.dumps({"ops": [op]}), encoding="utf-8")

    def run(root: Path) -> None:
        invoke(root, "import", "-", input=(root / "ops.json").read_text(encoding="utf-8"))
        _body_kept(root)

    holds_linear(run, prepare, kind, tmp_path)


@pytest.mark.parametrize("command", ["check", "fmt"])
@pytest.mark.parametrize("kind", ENTRY_POINT_KINDS)
def test_check_and_fmt(tmp_path: Path, kind: str, command: str) -> None:
    """`memfiles check` and `memfiles fmt` of a file holding the entry `add` wrote (no lint cache)."""

    def prepare(root: Path, body: str) -> None:
        add(root, body)
        shutil.rmtree(root / ".memfiles", ignore_errors=True)

    def run(root: Path) -> None:
        invoke(root, command)

    holds_linear(run, prepare, kind, tmp_path)
