"""The fast paths of the series primitives give the bits of the plain computation they replace."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvitals.signals import levels
from rlvitals.signals.median import NETWORK_WINDOWS, median, rolling_median


def _values(seed: int, n: int, kind: str) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n) * rng.choice([1e-6, 1.0, 1e6])
    if kind == "ties":
        x = np.round(x / np.abs(x).max(initial=1.0) * 3)
    elif kind == "zeros":  # signed zeros: which one is the middle is the sort's choice
        x = np.where(x > 0, 0.0, -0.0)
    elif kind == "nan" and n:
        x[rng.integers(0, n)] = np.nan
    elif kind == "inf" and n:
        x[rng.integers(0, n, 2)] = rng.choice([np.inf, -np.inf], 2)
    return x


def _same(a: object, b: object) -> bool:
    """The same bits, signed zeros told apart; a NaN is a NaN whatever its sign and payload."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    nan = np.isnan(a)
    return (a.shape == b.shape and bool(np.array_equal(nan, np.isnan(b)))
            and bool(np.array_equal(a[~nan].view(np.int64), b[~nan].view(np.int64))))


KINDS = st.sampled_from(["plain", "ties", "zeros", "nan", "inf"])


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 120), KINDS)
def test_median_is_numpys_bit_for_bit(seed: int, n: int, kind: str) -> None:
    x = _values(seed, n, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns on an empty slice
        expected = np.median(x)
    assert _same(median(x), expected)
    assert type(median(x)) is np.float64


def test_median_of_opposite_infinities_in_the_middle_is_nan_without_a_warning() -> None:
    # NumPy's own median warns here (inf + -inf); warnings are errors in this suite, so this is the whole check
    for x in (np.array([-np.inf, np.inf]), np.array([np.inf, -np.inf, np.inf, -np.inf])):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = np.median(x)
        assert np.isnan(expected) and _same(median(x), expected)


def test_median_hands_other_types_to_numpy() -> None:
    assert median([1, 2]) == 1.5 and median(np.array([1.0, 3.0], dtype=np.float32)) == 2.0
    assert np.isnan(median(np.array([]))) and median(np.array([[4.0, 1.0], [2.0, 3.0]])) == 2.5


def _pair_signs(x: np.ndarray) -> float:
    """Kendall's trend as the mean sign of every pair's difference, gathered pair by pair."""
    i, j = np.triu_indices(len(x), 1)
    with np.errstate(invalid="ignore"):
        return float(np.sign(x[j] - x[i]).sum() / len(i))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(4, 900), KINDS)
def test_trend_is_the_mean_sign_of_every_pair(seed: int, n: int, kind: str) -> None:
    x = _values(seed, n, kind)
    reduced = levels.bucket_medians(x, 400) if n > 400 else x
    assert _same(levels.trend(x), _pair_signs(reduced))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 400), st.integers(1, 40), st.sampled_from(["plain", "ties", "zeros"]))
def test_sorted_windows_give_polars_rolling_median(seed: int, n: int, window: int, kind: str) -> None:
    x = _values(seed, n, kind)
    w = min(window, n)
    expected = _polars_level(x, w) + 0.0
    assert _same(levels._sorted_windows(x, w) + 0.0, expected)


@pytest.mark.parametrize("kind", ["nan", "inf"])
def test_rolling_level_of_values_not_finite_is_polars(kind: str) -> None:
    x = _values(7, 300, kind)
    levels._LEVELS.clear()
    assert _same(levels.rolling_level(x, 10), _polars_level(x, 10) + 0.0)
    assert _same(levels._rolled_level(x, 10), _polars_level(x, 10))


def _polars_level(x: np.ndarray, w: int) -> np.ndarray:
    """The centred level by polars alone: its trailing median moved back, the end's cut windows from the
    reversed tail."""
    n, right, out = len(x), (w - 1) // 2, np.empty(len(x))
    out[: n - right] = pl.Series(x).rolling_median(window_size=w, min_samples=1).to_numpy()[right:]
    if right:
        tail = pl.Series(x[::-1][:w]).rolling_median(window_size=w, min_samples=1).to_numpy()
        out[n - right:] = tail[w - 1 - right : w - 1][::-1]
    return out


def _polars_rolling(x: np.ndarray, window: int, least: int) -> np.ndarray:
    out: np.ndarray = pl.Series(x).rolling_median(window_size=window, min_samples=least).fill_null(np.nan).to_numpy()
    return out


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 300), st.integers(1, 8), st.integers(1, 8), KINDS)
def test_rolling_median_is_polars(seed: int, n: int, window: int, least: int, kind: str) -> None:
    # the network's windows (3, 5) and polars' own: the same values; a signed zero may be either (+0.0 both)
    x = _values(seed, n, kind)
    expected = _polars_rolling(x, window, min(least, window))  # polars refuses more than the window: it is the window
    assert _same(rolling_median(x, window, least) + 0.0, expected + 0.0)


@pytest.mark.parametrize("window", [3, 5])
def test_rolling_median_takes_the_network_on_a_long_series(window: int) -> None:
    # every order of five values with ties, and a long series: the middle value itself, where polars has it
    from itertools import product

    grid = np.array(list(product(range(4), repeat=5)), dtype=float).ravel()
    for x in (grid, _values(7, 100_000, "plain"), _values(8, 20_000, "ties")):
        assert _same(rolling_median(x, window, 1) + 0.0, _polars_rolling(x, window, 1) + 0.0)
        assert _same(rolling_median(x, window) + 0.0, _polars_rolling(x, window, window) + 0.0)
    assert window in NETWORK_WINDOWS
