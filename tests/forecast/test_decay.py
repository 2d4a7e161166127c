"""The exponential approach fitted to a series over steps: exact on a curve that is one, within its
constraints (never below the floor, never rising when asked to fall), and many rows at once."""

from __future__ import annotations

import numpy as np
import pytest

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
