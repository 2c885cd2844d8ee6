"""The LOCO bootstrap of scripts/retrieval_sweep.py on hand-made per-query figures (no index, no model)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "retrieval_sweep.py"


@pytest.fixture(scope="module")
def sweep():
    spec = importlib.util.spec_from_file_location("retrieval_sweep", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("retrieval_sweep", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def setting(sweep, weight: float):
    return sweep.Setting(False, 1.2, 0.3, 3, weight, 50, "minmax")


NAMES = ["cacm", "cisi", "seamonkey"]


def test_each_fold_chooses_on_the_other_two_and_reports_the_one_held_out(sweep) -> None:
    """A setting best on cacm and cisi but worst on seamonkey is what the seamonkey fold must report."""
    a, b = setting(sweep, 0.4), setting(sweep, 0.6)
    queries = {
        a: {"cacm": np.full(8, 0.9), "cisi": np.full(6, 0.9), "seamonkey": np.full(5, 0.1)},
        b: {"cacm": np.full(8, 0.5), "cisi": np.full(6, 0.5), "seamonkey": np.full(5, 0.8)},
    }
    baseline = {"cacm": np.full(8, 0.5), "cisi": np.full(6, 0.6), "seamonkey": np.full(5, 0.4)}
    ratios = sweep.bootstrap_loco(queries, baseline, NAMES, resamples=50)
    # cacm's fold trains on cisi (a 0.9, b 0.5) and seamonkey (a 0.1, b 0.8): mean 0.5 vs 0.65, b wins
    np.testing.assert_allclose(ratios["cacm"], 0.5 / 0.5)
    # cisi's fold: a (0.9, 0.1) mean 0.5 vs b (0.5, 0.8) 0.65, b wins
    np.testing.assert_allclose(ratios["cisi"], 0.5 / 0.6)
    # seamonkey's fold: a (0.9, 0.9) beats b (0.5, 0.5)
    np.testing.assert_allclose(ratios["seamonkey"], 0.1 / 0.4)
    assert all(len(r) == 50 for r in ratios.values())


def test_resampling_spreads_the_ratio_and_respects_allowed(sweep) -> None:
    """Queries that disagree give a spread of ratios around the full-sample figure; a setting not
    allowed is never chosen, however good."""
    rng = np.random.default_rng(1)
    a, b = setting(sweep, 0.4), setting(sweep, 0.6)
    queries = {
        a: {n: rng.uniform(0.2, 1.0, 40) for n in NAMES},
        b: {n: np.ones(40) for n in NAMES},  # perfect, but not allowed below
    }
    baseline = {n: rng.uniform(0.2, 1.0, 40) for n in NAMES}
    ratios = sweep.bootstrap_loco(queries, baseline, NAMES, allowed=lambda s: s.weight < 0.5, resamples=400, seed=3)
    for name in NAMES:
        full = queries[a][name].mean() / baseline[name].mean()
        low, high = np.percentile(ratios[name], [2.5, 97.5])
        assert low < full < high
        assert high - low > 0.05  # 40 uniform queries cannot pin a ratio down
        assert (ratios[name] < 1.5).all()  # b (ratio ~1.7) never chosen
    again = sweep.bootstrap_loco(queries, baseline, NAMES, allowed=lambda s: s.weight < 0.5, resamples=400, seed=3)
    assert all((again[n] == ratios[n]).all() for n in NAMES)  # a seed gives the same samples


BOOTSTRAP = SCRIPT.parent / "bootstrap_passages.py"


@pytest.mark.parametrize("idea", ["passages", "sentences"])
def test_the_bootstrap_script_refuses_a_sweep_it_cannot_read(tmp_path: Path, idea: str) -> None:
    """A missing file, a file that is no sweep pickle and a sweep without the idea's settings: exit 2, the
    file named, no traceback, nothing written."""
    import pickle
    import subprocess

    empty = tmp_path / "empty.pkl"
    empty.write_bytes(pickle.dumps({"queries": {}, "rrf": {n: [] for n in ("cacm", "cisi", "seamonkey")}}))
    junk = tmp_path / "junk.pkl"
    junk.write_text("not a pickle", encoding="utf-8")
    for path, said in ((tmp_path / "missing.pkl", "not a sweep"), (junk, "not a sweep"), (empty, f"no {idea}")):
        before = sorted(p.name for p in tmp_path.iterdir())
        result = subprocess.run(
            [sys.executable, str(BOOTSTRAP), str(path), "--idea", idea], capture_output=True, text=True, check=False
        )
        assert result.returncode == 2, (path, result.stderr)
        assert str(path) in result.stderr and said in result.stderr and "Traceback" not in result.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.fixture(scope="module")
def plateau(sweep):
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        spec = importlib.util.spec_from_file_location("try_smooth_selection", SCRIPT.parent / "try_smooth_selection.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(SCRIPT.parent))
    return module


def test_a_setting_neighbours_are_one_step_in_one_ordered_parameter(sweep, plateau) -> None:
    """Weight 0.5 has 0.4 and 0.6 beside it; the grid's edge (0.2) has one; the fusion method and the
    regularisation on/off are never crossed; a count or share step only with regularisation on."""
    base = dict(framing=False, k1=1.2, b=0.3, title_weight=3, depth=50, method="minmax")
    grid = [sweep.Setting(**base, weight=w) for w in (0.2, 0.3, 0.4, 0.5, 0.6)]
    grid.append(sweep.Setting(**{**base, "method": "zscore"}, weight=0.5))
    grid += [sweep.Setting(**base, weight=0.5, neighbours=k, neighbour_weight=a) for k, a in ((5, 0.5), (10, 0.5))]
    grid.append(sweep.Setting(**{**base, "b": 0.5}, weight=0.5))
    known = {s: i for i, s in enumerate(grid)}
    near = lambda s: sorted(plateau.neighbours(s, known))  # noqa: E731
    assert near(grid[3]) == [2, 3, 4, 8]  # 0.4, itself, 0.6 and b one step up; not z-score, not regularised
    assert near(grid[0]) == [0, 1]
    assert near(grid[5]) == [5]
    assert near(grid[6]) == [6, 7]  # 5 and 10 neighbours, same share
    matrix = plateau.smoothing(grid)
    np.testing.assert_allclose(matrix.sum(axis=1), 1.0)


def test_the_plateau_beats_a_narrow_peak_and_ties_go_to_the_peak(sweep, plateau) -> None:
    base = dict(framing=False, k1=1.2, b=0.3, title_weight=3, depth=50, method="minmax")
    grid = [sweep.Setting(**base, weight=w) for w in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)]
    matrix = plateau.smoothing(grid)
    peak = np.array([[0.1], [0.9], [0.1], [0.6], [0.7], [0.6], [0.1]])  # 0.3 a spike, 0.6 a plateau
    assert plateau.choose(peak, None)[0] == 1
    assert plateau.choose(peak, matrix)[0] == 4
    flat = np.full((7, 1), 0.5)
    flat[3, 0] = 0.5 + 1e-15  # smoothed ties broken by the unsmoothed figure
    assert plateau.choose(flat, matrix)[0] == 3


def test_the_plateau_script_refuses_a_sweep_it_cannot_read(tmp_path: Path) -> None:
    import subprocess

    junk = tmp_path / "junk.pkl"
    junk.write_text("not a pickle", encoding="utf-8")
    for path in (tmp_path / "missing.pkl", junk):
        result = subprocess.run(
            [sys.executable, str(SCRIPT.parent / "try_smooth_selection.py"), str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 2, result.stderr
        assert str(path) in result.stderr and "Traceback" not in result.stderr
