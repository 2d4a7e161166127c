"""The law's bootstrap pooled from blocks: within its stated slack of the plain fit of every gathered resample,
and the intervals read from it the plain fits' intervals to the last bit, on awkward pairs too (flat stretches,
a constant performance, an entropy that hardly moves, large offsets)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvitals.forecast import fit_law
from rlvitals.forecast.law import SEED
from rlvitals.forecast.model import _spread
from rlvitals.forecast.resample import Resamples, block_indices, block_starts, exact_quantiles, line_fits


def _pairs(seed: int, n: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Entropy and performance pairs of one of a few shapes, some of them hard on a pooled fit."""
    rng = np.random.default_rng(seed)
    h = np.linspace(rng.uniform(0.3, 2.5), rng.uniform(0.0, 0.3), n) + rng.normal(0, 0.02, n)
    r = 0.9 - 0.2 * np.exp(h) + rng.normal(0, rng.uniform(1e-4, 0.2), n)
    if kind == "flat-stretches":  # the entropy's level held over stretches, the score logged in steps of 1/8
        h = np.repeat(h[:: 4], 4)[:n]
        r = np.round(r * 8) / 8
    elif kind == "constant-score":
        r = np.full(n, 0.625)
    elif kind == "entropy-hardly-moves":
        h = 0.7 + rng.normal(0, 1e-9, n)
    elif kind == "offset":
        r = r + 1e6
    elif kind == "on-the-law":
        r = 0.9 - 0.2 * np.exp(h)
    return h, r


def _plain(h: np.ndarray, r: np.ndarray, replicates: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """Every resample gathered and fitted, as the law did before it pooled blocks: the replicates and the
    quantiles of a, b and b − a."""
    x = np.exp(h)
    rows = block_indices(len(x), replicates, np.random.default_rng(SEED))
    reps = np.column_stack(line_fits(x[rows], r[rows]))
    quantiles = np.array([np.quantile(v, [0.025, 0.975]) for v in (reps[:, 0], reps[:, 1], reps[:, 1] - reps[:, 0])])
    return reps, quantiles


KINDS = ["noisy", "flat-stretches", "constant-score", "entropy-hardly-moves", "offset", "on-the-law"]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 700), kind=st.sampled_from(KINDS))
def test_the_intervals_are_the_plain_fits_intervals_to_the_bit(seed: int, n: int, kind: str) -> None:
    h, r = _pairs(seed, n, kind)
    fit = fit_law(h, r)
    reps, quantiles = _plain(h, r)
    got = np.array([fit.a_interval, fit.b_interval, fit.ceiling_interval])
    assert np.array_equal(got, quantiles, equal_nan=True)
    # and every pooled replicate within the slack the exact quantiles rely on
    slack_a, slack_b = fit.slack
    assert (np.abs(fit.replicates[:, 0] - reps[:, 0]) <= slack_a).all()
    assert (np.abs(fit.replicates[:, 1] - reps[:, 1]) <= slack_b).all()


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(6, 700), kind=st.sampled_from(KINDS))
def test_the_forecast_band_is_the_plain_fits_band_to_the_bit(seed: int, n: int, kind: str) -> None:
    h, r = _pairs(seed, n, kind)
    fit = fit_law(h, r)
    rng = np.random.default_rng(seed)
    paths = np.maximum(h[-1] + rng.normal(0, 0.05, size=(200, 1)) - np.linspace(0, 0.3, 40), 0.0)
    reps, _ = _plain(h, r)
    want = np.quantile(reps[:200, 1:2] - reps[:200, 0:1] * np.exp(paths), [0.025, 0.975], axis=0)
    assert np.array_equal(_spread(fit, np.exp(paths)), want, equal_nan=True)


def test_only_a_few_resamples_are_refitted_the_plain_way() -> None:
    h, r = _pairs(7, 600, "noisy")
    res = Resamples(np.exp(h), r, *block_starts(600, 400, np.random.default_rng(SEED)))
    asked: list[int] = []
    original = res.exact

    def counted(which: np.ndarray) -> np.ndarray:
        asked.append(len(which))
        return original(which)

    fast, slack_a, _ = res.fits()
    exact_quantiles(fast[:, :1], [0.025, 0.975], lambda w: counted(w)[:, :1], np.array([slack_a]))
    assert 4 <= sum(asked) <= 20  # the rows next to the two quantiles' ranks, not the 400


def test_a_row_whose_fast_value_is_not_a_number_is_computed_exactly() -> None:
    exact = np.array([[3.0], [1.0], [2.0], [4.0], [5.0]])
    fast = np.array([[3.0], [1.0], [2.0], [np.nan], [5.0]])  # no slack bounds it: recomputed, whatever its rank
    got = exact_quantiles(fast, [0.5, 0.9], lambda w: exact[w], np.array([0.0]))
    assert np.array_equal(got, np.quantile(exact, [0.5, 0.9], axis=0))


@pytest.mark.parametrize("n", [3, 4, 9, 40])
def test_a_resample_whose_entropy_does_not_vary_has_no_slope(n: int) -> None:
    h = np.full(n, 0.4)
    fit = fit_law(h, np.linspace(0.0, 1.0, n))
    assert (fit.replicates[:, 0] == 0).all() and fit.a == 0.0


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 10_000), r=st.integers(1, 60), cols=st.integers(1, 4),
       qs=st.lists(st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.025, 0.5, 0.975, 1.0])), min_size=1,
                   max_size=4))
def test_exact_quantiles_are_numpys_on_the_exact_values_whatever_the_ties(seed: int, r: int, cols: int,
                                                                          qs: list[float]) -> None:
    rng = np.random.default_rng(seed)
    exact = rng.normal(size=(r, cols)).round(1)  # rounded: ties and near-ties
    slack = rng.uniform(0, 0.2, cols)
    fast = exact + rng.uniform(-1, 1, (r, cols)) * slack  # every fast value within its slack, ranks shuffled
    got = exact_quantiles(fast, qs, lambda rows: exact[rows], slack)
    assert np.array_equal(got, np.quantile(exact, qs, axis=0))
