"""The entropy–performance law's fit: exact on a run that follows it, honest intervals on a noisy one, and
the moving-block resampling it rests on, against plain NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvitals.forecast import fit_law
from rlvitals.forecast.law import block_indices, line_fits


@pytest.mark.parametrize(("h0", "h1"), [(2.0, 0.3), (0.08, 0.01), (0.5, 0.05)])
def test_a_run_on_the_law_is_recovered_exactly_on_both_entropy_scales(h0: float, h1: float) -> None:
    h = np.linspace(h0, h1, 50)
    fit = fit_law(h, 0.9 - 0.25 * np.exp(h))
    assert fit.a == pytest.approx(0.25, abs=1e-9) and fit.b == pytest.approx(0.9, abs=1e-9)
    assert fit.ceiling == pytest.approx(0.65, abs=1e-9) and fit.explained == pytest.approx(1.0, abs=1e-9)
    lo, hi = fit.ceiling_interval
    assert lo == pytest.approx(0.65, abs=1e-9) and hi == pytest.approx(0.65, abs=1e-9)


def test_the_line_is_numpy_polyfit() -> None:
    rng = np.random.default_rng(3)
    x, y = rng.uniform(1, 3, 40), rng.normal(size=40)
    slope, intercept = np.polyfit(x, y, 1)
    a, b = line_fits(x, y)
    assert float(a) == pytest.approx(-slope, rel=1e-10) and float(b) == pytest.approx(intercept, rel=1e-10)


def test_a_flat_entropy_has_no_slope() -> None:
    a, b = line_fits(np.ones(5), np.arange(5.0))
    assert float(a) == 0.0 and float(b) == 2.0


def test_the_interval_covers_the_truth_of_a_noisy_run_most_of_the_time() -> None:
    truth, hits = 0.7, 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        h = np.linspace(1.2, 0.1, 200) + rng.normal(0, 0.01, 200)
        r = 0.95 - 0.25 * np.exp(h) + rng.normal(0, 0.03, 200)
        lo, hi = fit_law(h, r, replicates=200).ceiling_interval
        hits += lo <= truth <= hi
    assert hits >= 34  # 95 % nominal; a fixed seed per run, so the count is the same everywhere


def test_the_same_pairs_give_the_same_intervals() -> None:
    rng = np.random.default_rng(1)
    h = np.linspace(1, 0.2, 30)
    r = 0.8 - 0.2 * np.exp(h) + rng.normal(0, 0.02, 30)
    assert fit_law(h, r).ceiling_interval == fit_law(h, r).ceiling_interval


def test_explained_is_low_when_the_performance_follows_something_else() -> None:
    h = np.linspace(1.0, 0.1, 120)
    r = np.sin(np.linspace(0, 3 * np.pi, 120)) * 0.2 + 0.5  # up and down while the entropy falls steadily
    assert fit_law(h, r).explained < 0.3


@pytest.mark.parametrize("bad", [([1.0, 2.0], [1.0, 2.0]), ([1.0, 2.0, np.nan], [1.0, 2.0, 3.0]),
                                 ([1.0, 2.0, 3.0], [1.0, 2.0])])
def test_too_few_or_non_finite_pairs_are_refused(bad: tuple[list[float], list[float]]) -> None:
    with pytest.raises(ValueError, match="at least 3 finite pairs"):
        fit_law(np.array(bad[0]), np.array(bad[1]))


def test_values_whose_squares_overflow_are_refused() -> None:
    h, r = np.linspace(1.5, 0.2, 40), np.linspace(0.1, 0.9, 40)
    with pytest.raises(ValueError, match=r"below 5\.3e\+152 in size .* got entropy up to 400 and \|performance\| up"):
        fit_law(h + 398.5, r)
    with pytest.raises(ValueError, match=r"\|performance\| up to 9e\+200"):
        fit_law(h, r * 1e201)
    assert fit_law(h, r * 1e100).a != 0  # large, but its squares are finite: fitted


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 80), block=st.integers(1, 90), reps=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_block_resamples_are_runs_of_consecutive_indices(n: int, block: int, reps: int, seed: int) -> None:
    rows = block_indices(n, reps, np.random.default_rng(seed), block=block)
    b = max(1, min(n, block))
    assert rows.shape == (reps, n) and rows.min() >= 0 and rows.max() < n
    # inside each block of b positions the indices climb by one
    inside = np.arange(1, n) % b != 0
    assert (np.diff(rows, axis=1)[:, inside] == 1).all()
