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
