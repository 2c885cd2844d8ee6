"""The retrieval harness end to end on small subsets: import, backfill, memsearch --batch, baselines, LOCO."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("MEMFILES_EVAL_DATA", ROOT.parent / "shared" / "data"))

ROW = r"^\| (\w+) \| ([^|]+?) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| [\d.]+× \|$"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.skipif(not (DATA / "cisi" / "corpus.jsonl").exists(), reason="evaluation data not present"),
]


def test_small_loco_run_prints_one_table_with_baselines_and_folds(tmp_path) -> None:
    """`eval_retrieval.py loco --small` runs all three collections and prints every row and every fold."""
    env = {**os.environ, "MEMFILES_EVAL_CACHE": str(tmp_path / "cache"), "MEMFILES_EVAL_DATA": str(DATA)}
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "eval_retrieval.py"), "loco", "--small"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    rows = {
        (m.group(1), m.group(2)): [float(x) for x in m.group(3, 4, 5)] for m in re.finditer(ROW, result.stdout, re.M)
    }
    for name in ("cacm", "cisi", "seamonkey"):
        for ranking in (
            "memfiles hybrid (CLI)",
            "bm25s",
            "MiniLM",
            "RRF k=60",
            "memfiles hybrid, parameters from the other two (LOCO)",
        ):
            figures = rows[(name, ranking)]
            assert all(0.0 <= f <= 1.0 for f in figures), (name, ranking, figures)
        # the subset holds every judged document of its queries, so every ranking finds some
        assert rows[(name, "memfiles hybrid (CLI)")][0] > 0.0
    for name in ("cacm", "cisi"):  # the sweep replays the CLI's ranking exactly (neighbours included)
        assert rows[(name, "memfiles hybrid, shipped defaults (sweep)")] == rows[(name, "memfiles hybrid (CLI)")]
    folds = re.findall(r"^\| (cacm|cisi|seamonkey) \| w=", result.stdout, re.M)
    assert sorted(folds) == ["cacm", "cisi", "seamonkey"]
    # every held-out ratio comes with its spread under query resampling
    spread = re.findall(
        r"^\| (cacm|cisi|seamonkey) \| [\d.]+× \| [\d.]+× to [\d.]+× \| \d+% \| \d+% \|$", result.stdout, re.M
    )
    assert sorted(spread) == ["cacm", "cisi", "seamonkey"]
