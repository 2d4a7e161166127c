"""Primitives added for the L2–L4 checks: rolling level, sustained stretches, fall from peak."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvitals import signals as S
from rlvitals.signals import levels as T  # the cache of rolling levels lives there

SCALES = st.sampled_from([1e-4, 1e-2, 1.0, 37.0, 1e4])


def test_rolling_level_ignores_a_single_outlier() -> None:
    x = np.ones(21)
    x[10] = 50.0
    level = S.rolling_level(x, 5)
    assert level.shape == x.shape and np.all(level == 1.0)
    assert S.rolling_level(np.array([]), 5).size == 0
    # a window longer than the series is the whole-series median at the centre
    assert S.rolling_level(np.array([1.0, 2.0, 3.0]), 10)[1] == 2.0


def _window_medians(x: np.ndarray, window: int) -> np.ndarray:
    """The definition, index by index: the median of ``x[i - w//2 : i + (w-1)//2 + 1]`` cut to the series."""
    w = max(1, min(window, len(x)))
    return np.array([np.median(x[max(0, i - w // 2): i + (w - 1) // 2 + 1]) for i in range(len(x))])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=90), st.integers(1, 100))
def test_rolling_level_is_the_centred_window_median(values: list[float], window: int) -> None:
    x = np.array(values)
    # polars averages the two middle values its own way: a few ulp from np.median's mean, at the scale of the
    # values (two middle values that nearly cancel, 1.2e-38 and -1.2e-38, leave a mean of 8.9e-49 whose last
    # digits are the inputs' rounding)
    finite = np.abs(x[np.isfinite(x)])
    scale = 4 * np.finfo(float).eps * (float(finite.max()) if finite.size else 0.0)
    np.testing.assert_allclose(S.rolling_level(x, window), _window_medians(x, window), rtol=1e-12, atol=scale)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(-5, 5), st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0])),
                min_size=1, max_size=90), st.integers(1, 100))
def test_rolling_level_is_polars_centred_median_bit_for_bit(values: list[float], window: int) -> None:
    """The fast path (a trailing median moved back, the end's cut windows from the reversed tail) gives
    polars' centred rolling median exactly, NaN and infinities included; only a zero's sign is made +."""
    import polars as pl

    x = np.array(values)
    w = min(window, len(x))
    want = pl.Series(x).rolling_median(window_size=w, min_samples=1, center=True).to_numpy() + 0.0
    got = S.rolling_level(x, window)
    assert np.array_equal(got, want, equal_nan=True)
    assert not np.signbit(got[got == 0]).any()


def test_a_level_is_computed_once_per_values_and_window_and_shared_read_only() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=2000)
    level = S.rolling_level(x, 25)
    assert S.rolling_level(x.copy(), 25) is level  # the same values, not the same array
    assert S.rolling_level(x, 24) is not level and S.rolling_level(x + 1e-12, 25) is not level
    assert not level.flags.writeable
    with pytest.raises(ValueError):
        level[0] = 1.0
    signed = np.zeros(10)
    signed[3] = -0.0  # other bytes, the same numbers: computed apart, the same level
    assert np.array_equal(T.rolling_level(signed, 3), T.rolling_level(np.zeros(10), 3))


def test_the_shared_levels_stay_within_their_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(T, "LEVEL_BYTES", 100_000)
    monkeypatch.setattr(T, "_LEVELS", type(T._LEVELS)())
    rng = np.random.default_rng(6)
    series = [rng.normal(size=1000) for _ in range(30)]  # 16 kB of key and level each
    levels = [T.rolling_level(x, 9) for x in series]
    held = sum(len(k) + v.nbytes for (k, _), v in T._LEVELS.items())
    assert held <= 100_000 and len(T._LEVELS) == 6
    assert T._LEVELS.held == held  # the count kept as levels come and go is the bytes they hold
    assert T.rolling_level(series[-1], 9) is levels[-1]  # the latest are kept, the oldest gone
    assert T.rolling_level(series[0], 9) is not levels[0]
    assert np.array_equal(T.rolling_level(series[0], 9), levels[0])


def test_the_level_of_a_very_long_series_is_kept_by_a_digest_of_its_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(T, "LEVEL_KEPT", 500)
    monkeypatch.setattr(T, "_LEVELS", type(T._LEVELS)())
    x = np.random.default_rng(8).normal(size=501)
    level = T.rolling_level(x, 9)
    assert T.rolling_level(x.copy(), 9) is level  # the same values, not the same array
    [(key, window)] = list(T._LEVELS)
    assert key == hashlib.sha256(x).digest() and window == 9  # 32 bytes held, not the 4 kB of values
    assert T.rolling_level(x + 1e-12, 9) is not level and T.rolling_level(x, 8) is not level
    assert T.rolling_level(x[:500], 9) is T.rolling_level(x[:500], 9)


def test_a_level_too_large_to_share_is_computed_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(T, "LEVEL_BYTES", 16_000)
    monkeypatch.setattr(T, "_LEVELS", type(T._LEVELS)())
    x = np.random.default_rng(9).normal(size=501)  # a level of 4,008 bytes: over a quarter of them
    level = T.rolling_level(x, 9)
    assert T.rolling_level(x, 9) is not level and np.array_equal(T.rolling_level(x, 9), level)
    assert not level.flags.writeable  # read-only all the same: no caller may count on writing it
    assert len(T._LEVELS) == 0


def test_levels_computed_in_threads_at_once_are_the_levels_computed_alone() -> None:
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(7)
    series = [rng.normal(size=5000) for _ in range(8)]
    alone = [T._LEVELS.clear() or T.rolling_level(x, 31).copy() for x in series]
    T._LEVELS.clear()
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda i: T.rolling_level(series[i % 8], 31), range(64)))
    for i, level in enumerate(together):
        assert np.array_equal(level, alone[i % 8])


def test_sustained_above_needs_a_level_not_a_point() -> None:
    x = np.zeros(100)
    x[20] = 1.0  # one step: never sustained
    x[50:80] = 1.0
    assert S.sustained_above(x, 0.5, window=5, min_len=10) == [(50, 79)]
    assert S.sustained_above(x, 0.5, window=5, min_len=40) == []
    assert S.sustained_above(np.array([]), 0.5) == []


def test_sustained_above_bridges_short_dips() -> None:
    x = np.zeros(100)
    x[30:60] = 1.0
    x[44:47] = 0.0  # three-step dip: the level (window 1) dips, the gap joins it
    assert S.sustained_above(x, 0.5, window=1, min_len=10, max_gap=3) == [(30, 59)]
    assert S.sustained_above(x, 0.5, window=1, min_len=10, max_gap=0) == [(30, 43), (47, 59)]


@settings(max_examples=25, deadline=None)
@given(scale=SCALES, seed=st.integers(0, 1000), at=st.integers(60, 200))
def test_fall_from_peak_at_any_scale(scale: float, seed: int, at: int) -> None:
    rng = np.random.default_rng(seed)
    x = np.where(np.arange(300) < at, 1.0, 0.2) * (1 + rng.normal(0, 0.05, 300)) * scale
    event = S.fall_from_peak(x)
    assert event is not None
    assert event.score == pytest.approx(0.8, abs=0.05)
    assert event.baseline == pytest.approx(scale, rel=0.1) and event.value == pytest.approx(0.2 * scale, rel=0.1)
    assert abs(event.start - at) <= 6 and event.peak < at


def test_fall_from_peak_of_a_flat_or_rising_series_is_none() -> None:
    rng = np.random.default_rng(3)
    flat = 1 + rng.normal(0, 0.05, 200)
    event = S.fall_from_peak(flat)
    # noise alone: at most a few percent below the noisiest peak, never a collapse
    assert event is None or event.score < 0.1
    assert S.fall_from_peak(np.linspace(1, 2, 200)) is None
    assert S.fall_from_peak(np.ones(20)) is None  # too short for three windows
    assert S.fall_from_peak(-np.ones(100)) is None  # no positive peak


def test_fall_from_peak_after_an_early_rise_measures_from_the_peak() -> None:
    # sigma_G typically rises from 0 (all wrong) before it falls: the peak, not the start, is the baseline
    x = np.concatenate([np.linspace(0, 1, 50), np.ones(100), np.full(150, 0.1)])
    event = S.fall_from_peak(x)
    assert event is not None and event.baseline == pytest.approx(1.0)
    assert event.score == pytest.approx(0.9) and abs(event.start - 150) <= 5


def test_fall_from_peak_onset_is_not_moved_by_a_late_bump() -> None:
    x = np.concatenate([np.ones(100), np.full(95, 0.1), np.ones(5)])
    event = S.fall_from_peak(x, window=5)
    assert event is not None and abs(event.start - 100) <= 3


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=80), st.integers(2, 40), st.integers(1, 40))
def test_trailing_scale_median_is_the_median_of_the_values_before(values: list[float], window: int,
                                                                   min_periods: int) -> None:
    """The median of the ``window`` values before each index, NaN while fewer than ``min_periods`` precede it
    (taken from the one rolling median the spread needs as well)."""
    x, min_periods = np.array(values), min(min_periods, window)  # polars refuses more than a window
    med, _ = S.trailing_scale(x, window, min_periods)
    for i in range(len(x)):
        before = x[max(0, i - window): i]
        if len(before) < min_periods:
            assert np.isnan(med[i])
        else:
            assert med[i] == pytest.approx(float(np.median(before)), rel=1e-12, abs=1e-12)


def _median_or_nan(values: np.ndarray, full: int) -> float:
    return float(np.median(values)) if len(values) == full else float("nan")


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 160), window=st.integers(1, 40))
def test_the_windows_before_and_after_an_index_are_plain_medians(seed: int, n: int, window: int) -> None:
    from rlvitals.signals.events import MAD_TO_SD, _before_after

    x = np.random.default_rng(seed).normal(size=n).round(1)  # rounded: ties
    before, after, spread = _before_after(x, window)
    w = window
    level = np.array([_median_or_nan(x[k - w + 1 : k + 1], w) if k >= w - 1 else np.nan for k in range(n)])
    want_before = [_median_or_nan(x[i - w : i], w) if i >= w else np.nan for i in range(n)]
    want_after = [_median_or_nan(x[i : i + w], w) for i in range(n)]
    # the robust sd of the window before i around its trailing median, where every level in it exists
    want_spread = [MAD_TO_SD * float(np.median(np.abs(x[i - w : i] - level[i - w : i])))
                   if i - w >= w - 1 else np.nan for i in range(n)]
    for got, want in ((before, want_before), (after, want_after), (spread, want_spread)):
        assert np.allclose(got, want, rtol=1e-12, atol=0.0, equal_nan=True)  # an even window: (a+b)/2 vs a+(b-a)/2


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 160), window=st.integers(5, 40))
def test_the_trailing_scale_is_the_median_and_spread_of_the_window_before(seed: int, n: int, window: int) -> None:
    from rlvitals.signals.events import MAD_TO_SD, noise_scale

    x = np.random.default_rng(seed).normal(size=n).round(1)
    w, least = window, max(5, window // 2)
    med, sd = S.trailing_scale(x, w)
    centre = np.array([np.median(x[max(0, k - w + 1) : k + 1]) for k in range(n)])  # from one value on
    want_med = [float(centre[i - 1]) if i >= least else np.nan for i in range(n)]
    dev = np.abs(x - centre)
    raw = [MAD_TO_SD * float(np.median(dev[max(0, i - w) : i])) if min(i, w) >= least else np.inf for i in range(n)]
    want_sd = np.maximum(raw, np.maximum(1e-3 * np.abs(np.array(want_med)), 0.5 * noise_scale(x)))
    assert np.allclose(med, want_med, rtol=1e-12, atol=0.0, equal_nan=True)
    assert np.allclose(sd, want_sd, rtol=1e-12, atol=0.0, equal_nan=True)
