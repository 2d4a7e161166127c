"""The exponential approach fitted to a series over steps: exact on a curve that is one, within its
constraints (never below the floor, never rising when asked to fall), and many rows at once."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvitals.forecast import Decay, fit_decay, fit_decays


@pytest.mark.parametrize(("c", "d", "tau"), [(0.05, 1.5, 40.0), (0.0, 0.3, 300.0), (0.01, 0.05, 15.0),
                                             (1.9, 0.4, 120.0)])
def test_an_exponential_decay_is_recovered(c: float, d: float, tau: float) -> None:
    steps = np.arange(1.0, 401.0)
    fit = fit_decay(steps, c + d * np.exp(-(steps - 1) / tau), floor=0.0, falling=True)
    assert fit.c == pytest.approx(c, abs=1e-4) and fit.d == pytest.approx(d, rel=1e-3)
    assert float(fit.at(2000.0)) == pytest.approx(c + d * np.exp(-1999 / tau), abs=1e-4)


def test_a_decay_never_settles_below_the_floor() -> None:
    steps = np.arange(100.0)
    fit = fit_decay(steps, 1.0 - steps / 100.0, floor=0.0, falling=True)  # a straight line to zero and beyond
    assert fit.c >= 0.0 and float(fit.at(10_000.0)) >= 0.0


def test_a_rising_series_asked_to_fall_is_its_mean() -> None:
    steps = np.arange(50.0)
    fit = fit_decay(steps, 0.1 + steps / 100, floor=0.0, falling=True)
    assert fit.d == 0.0 and fit.c == pytest.approx(float(np.mean(0.1 + steps / 100)))


def test_a_free_fit_follows_a_saturating_rise() -> None:
    steps = np.arange(0.0, 200.0)
    fit = fit_decay(steps, 0.8 - 0.5 * np.exp(-steps / 30.0))
    assert fit.c == pytest.approx(0.8, abs=1e-4) and fit.d == pytest.approx(-0.5, abs=1e-3)


def test_rows_are_fitted_one_by_one() -> None:
    steps = np.arange(100.0)
    rows = np.array([0.1 + 0.5 * np.exp(-steps / 10.0), 0.3 + 0.2 * np.exp(-steps / 50.0)])
    one, two = fit_decays(steps, rows, floor=0.0, falling=True)
    grid_one, grid_two = (fit_decays(steps, r[None, :], floor=0.0, falling=True)[0] for r in rows)
    assert (one, two) == (grid_one, grid_two)


def test_the_curve_reads_any_step() -> None:
    assert Decay(0.2, 1.0, 1.0, 10.0, 10.0).at(20.0) == pytest.approx(0.2 + np.exp(-1.0))


def test_too_few_points_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 3 points"):
        fit_decay(np.arange(2.0), np.ones(2))


def _rows_of(seed: int, n: int, m: int) -> np.ndarray:
    """Bootstrap-like rows: a decay plus resampled noise, and rows that tie (constants, rising, zeros)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=float)
    curve = 0.1 + rng.uniform(0.1, 2.0) * np.exp(-t / rng.uniform(2.0, 3.0 * n))
    noisy = curve + rng.normal(scale=rng.uniform(1e-4, 0.2), size=(m, n))
    ties = np.vstack([np.full(n, 0.5), np.linspace(0.0, 1.0, n), np.zeros(n), -curve, curve.round(1)])
    return np.vstack([noisy, ties])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 240), m=st.integers(1, 40),
       floor=st.sampled_from([None, 0.0]), falling=st.booleans())
def test_the_shortlist_picks_what_trying_every_rate_picks(seed: int, n: int, m: int, floor: float | None,
                                                          falling: bool) -> None:
    from rlvitals.forecast.decay import RATES, _each_rate, _shortlist

    t = np.arange(n, dtype=float) * 7.0
    y = _rows_of(seed, n, m)
    es = np.array([np.exp(-k * (t - t[0]) / (t[-1] - t[0])) for k in RATES])
    picked = _shortlist(es, y, RATES, floor, falling)
    assert picked is not None
    every = _each_rate(es, y, RATES, floor, falling)
    # the same rate, and the same numbers to the last bit (each computed as one rate at a time computes it)
    for got, want in zip(picked, every, strict=True):
        assert np.array_equal(got, want)


def test_a_series_that_is_not_finite_is_fitted_rate_by_rate() -> None:
    steps = np.arange(20.0)
    y = np.vstack([np.exp(-steps / 5.0), np.full(20, np.nan)])
    good, bad = fit_decays(steps, y, floor=0.0, falling=True)
    assert good == fit_decays(steps, y[:1], floor=0.0, falling=True)[0]
    assert (bad.c, bad.d, bad.k) == (0.0, 0.0, 0.0)  # no rate fits a NaN: all zero


@pytest.mark.parametrize("seed", range(6))
def test_the_golden_section_never_fits_worse_than_the_grid(seed: int) -> None:
    rng = np.random.default_rng(seed)
    steps = np.arange(0.0, 300.0)
    values = 0.2 + 1.1 * np.exp(-steps / rng.uniform(5.0, 400.0)) + rng.normal(scale=0.01, size=300)
    grid = fit_decays(steps, values, floor=0.0, falling=True)[0]
    fit = fit_decay(steps, values, floor=0.0, falling=True)
    assert float(((fit.at(steps) - values) ** 2).sum()) <= float(((grid.at(steps) - values) ** 2).sum())


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 60), k=st.floats(0.01, 80.0),
       floor=st.sampled_from([None, 0.0, 0.3]), falling=st.booleans(), shape=st.sampled_from(["fall", "rise", "flat"]))
def test_one_row_solved_in_floats_is_the_array_solve_to_the_bit(seed: int, n: int, k: float, floor: float | None,
                                                               falling: bool, shape: str) -> None:
    from rlvitals.forecast.decay import _solve, _solve_one, _sse_at

    rng = np.random.default_rng(seed)
    tau = np.linspace(0.0, 1.0, n)
    e = np.exp(-k * tau)
    base = {"fall": 0.1 + e, "rise": 0.5 - e, "flat": np.full(n, 0.2)}[shape]
    y = base + rng.normal(scale=rng.uniform(0.0, 0.5), size=n)
    c, d, sse = _solve(e, y[None, :], floor, falling)
    assert _solve_one(e, y, float(y.sum()), floor, falling) == (float(c[0]), float(d[0]), float(sse[0]))
    buf = np.full((4, n), np.nan)  # what a buffer held before must not matter
    assert _sse_at(buf, k, tau, y, float(y.sum()), floor, falling) == float(sse[0])
