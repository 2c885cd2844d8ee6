"""The benchmarks notebook runs end to end on the committed sample outputs, so it cannot rot unnoticed."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
FIGURES = ("recall_at_k", "latency_by_size", "backfill_throughput", "dedupe_pr")


def _execute(data: Path, images: Path, monkeypatch: pytest.MonkeyPatch) -> nbformat.NotebookNode:
    monkeypatch.setenv("BENCH_DATA", str(data))
    monkeypatch.setenv("BENCH_IMG", str(images))
    # The kernel is this interpreter (matplotlib and ipykernel are dev dependencies), whatever PATH says.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    notebook = nbformat.read(NOTEBOOKS / "benchmarks.ipynb", as_version=4)
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()
    return notebook


@pytest.mark.slow
def test_notebook_draws_every_figure_from_the_committed_outputs(tmp_path: Path, monkeypatch) -> None:
    """Executed on notebooks/data, the notebook writes the four PNGs and shows each one, with no error."""
    notebook = _execute(NOTEBOOKS / "data", tmp_path, monkeypatch)
    for name in FIGURES:
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    shown = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(shown) == len(FIGURES)
    printed = "".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code" for o in c.outputs)
    assert "| collection | system | nDCG@10 |" in printed


@pytest.mark.slow
def test_notebook_fails_loudly_when_an_output_is_missing(tmp_path: Path, monkeypatch) -> None:
    """Without one of the JSON files the notebook stops with an error instead of drawing empty figures."""
    data = tmp_path / "data"
    shutil.copytree(NOTEBOOKS / "data", data)
    (data / "dedupe.json").unlink()
    from nbclient.exceptions import CellExecutionError

    with pytest.raises(CellExecutionError, match=r"dedupe\.json"):
        _execute(data, tmp_path / "img", monkeypatch)


def test_committed_sample_outputs_name_their_command() -> None:
    """Every committed sample output says which command wrote it, so a figure can be regenerated."""
    for path in sorted((NOTEBOOKS / "data").glob("*.json")):
        document = json.loads(path.read_text())
        assert document["command"].startswith("scripts/"), path
