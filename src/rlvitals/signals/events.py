"""Scale, runs and spikes: a series measured against its own robust level and spread."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .median import median, rolling_median

#: MAD → standard deviation for a normal distribution
MAD_TO_SD = 1.4826


@dataclass(frozen=True)
class Event:
    """A stretch of a series that a primitive flagged.

    ``start``/``end`` are inclusive indices, ``peak`` the most extreme index inside,
    ``baseline`` the level before the event and ``score`` how far the peak is from it
    (in robust standard deviations, or as a ratio, depending on the primitive).
    """

    start: int
    end: int
    peak: int
    value: float
    baseline: float
    score: float


def robust_scale(x: np.ndarray, floor: float = 1e-3) -> float:
    """MAD-based standard deviation, never below ``floor`` × |median| (a constant series has
    no spread, but a deviation of a thousandth of its level is still no event)."""
    if len(x) == 0:
        return float("nan")
    med = float(median(x))
    mad = float(median(np.abs(x - med))) * MAD_TO_SD
    return max(mad, floor * abs(med), 1e-12)


def noise_scale(x: np.ndarray) -> float:
    """The step-to-step noise of a series: robust sd of its first differences over √2. Unlike
    the spread of the values, it is not inflated by trends or level shifts."""
    if len(x) < 3:
        return robust_scale(x)
    return robust_scale(np.diff(x), floor=0.0) / float(np.sqrt(2.0))


def trailing_median(x: np.ndarray, window: int, min_periods: int | None = None) -> np.ndarray:
    """Median of the ``window`` values before each index (the index itself excluded);
    NaN where fewer than ``min_periods`` precede it."""
    min_periods = min_periods or max(3, window // 4)
    return _shifted(rolling_median(x, window, min_periods))


def _shifted(level: np.ndarray) -> np.ndarray:
    """``level`` a value later: at each index, what it was at the one before (NaN at the first)."""
    out = np.full(len(level), np.nan)
    out[1:] = level[:-1]
    return out


def trailing_scale(x: np.ndarray, window: int, min_periods: int | None = None,
                   floor: float = 1e-3) -> tuple[np.ndarray, np.ndarray]:
    """``(median, robust sd)`` of the ``window`` values before each index. The spread needs
    ``min_periods`` values (half a window by default): a MAD from a dozen points is too noisy
    to call anything six of them away a spike."""
    min_periods = min_periods or max(5, window // 2)
    x = np.asarray(x, dtype=float)
    centre = rolling_median(x, window, 1)
    dev = rolling_median(np.abs(x - centre), window, min_periods) * MAD_TO_SD
    # the median and the spread before an index, the median none while fewer than min_periods values precede it
    med_np: np.ndarray = np.full(len(x), np.nan)
    med_np[min_periods:] = centre[min_periods - 1 : -1]
    dev_np: np.ndarray = np.full(len(x), np.nan)
    dev_np[1:] = dev[:-1]
    # a quiet stretch must not make every wiggle a spike: never below half the run's step noise
    sd = np.maximum(np.nan_to_num(dev_np, nan=np.inf), np.maximum(floor * np.abs(med_np), 0.5 * noise_scale(x)))
    return med_np, sd


def runs_of(mask: np.ndarray, min_len: int = 1, max_gap: int = 0) -> list[tuple[int, int]]:
    """Inclusive ``(start, end)`` of each run of True at least ``min_len`` long, joining runs
    separated by at most ``max_gap`` False values."""
    idx = np.flatnonzero(mask)
    if len(idx) == 0:
        return []
    breaks = np.flatnonzero(np.diff(idx) > max_gap + 1)
    starts = np.concatenate(([idx[0]], idx[breaks + 1]))
    ends = np.concatenate((idx[breaks], [idx[-1]]))
    return [(int(s), int(e)) for s, e in zip(starts, ends, strict=True) if e - s + 1 >= min_len]


def _events(mask: np.ndarray, score: np.ndarray, x: np.ndarray, base: np.ndarray,
            max_gap: int = 0) -> list[Event]:
    out = []
    for start, end in runs_of(mask, 1, max_gap):
        seg = np.abs(score[start : end + 1])
        peak = start + int(np.nanargmax(seg))
        out.append(Event(start, end, peak, float(x[peak]), float(base[peak]), float(score[peak])))
    return out


def _beyond(z: np.ndarray, k: float, direction: str) -> np.ndarray:
    """Where ``z`` is more than ``k`` away in ``direction`` ("up", "down" or "both")."""
    mask: np.ndarray = z > k if direction == "up" else z < -k if direction == "down" else np.abs(z) > k
    return mask


def spikes(x: np.ndarray, *, window: int = 50, k: float = 6.0, direction: str = "up",
           warmup: int = 5) -> list[Event]:
    """Points that leave the trailing robust band by more than ``k`` robust sd.

    Transient events count: one step far above the run's own recent level is a spike even if
    the series returns at once (the failure of level-based detectors).
    """
    if len(x) <= warmup:
        return []
    med, sd = trailing_scale(x, window)
    z = (x - med) / sd
    z[:warmup] = 0.0
    z = np.nan_to_num(z, nan=0.0)
    mask = _beyond(z, k, direction)
    return _events(mask, z, x, med)


def ratio_spikes(x: np.ndarray, *, ratio: float = 10.0, window: int = 50, warmup: int = 5) -> list[Event]:
    """Points at least ``ratio`` times the trailing median (a grad norm at "10× normal":
    docs/reading-rules.md#grad-norm-spike)."""
    if len(x) <= warmup:
        return []
    med = trailing_median(x, window)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(med > 0, x / med, np.nan)
    r[:warmup] = np.nan
    mask = np.nan_to_num(r, nan=0.0) >= ratio
    return _events(mask, np.nan_to_num(r, nan=0.0), x, med)


def level_shift(x: np.ndarray, *, window: int = 20, k: float = 4.0, direction: str = "both") -> Event | None:
    """The strongest sustained change of level: the median of the ``window`` values after an
    index differs from the median of the ``window`` before it by more than ``k`` robust sd
    (the spread of the values before). Returns the first crossing, peak at the strongest point."""
    n = len(x)
    if n < 2 * window:
        return None
    before_med, after_med, spread = _before_after(x, window)
    sd = np.maximum(np.nan_to_num(spread, nan=np.inf), np.maximum(1e-3 * np.abs(before_med), 0.5 * noise_scale(x)))
    z = np.nan_to_num((after_med - before_med) / sd, nan=0.0)
    mask = _beyond(z, k, direction)
    found = runs_of(mask)
    if not found:
        return None
    best = max(found, key=lambda se: float(np.max(np.abs(z[se[0] : se[1] + 1]))))
    start, end = best
    change = change_point(x, max(window, start - window), min(n - window, end + 1), window)
    return Event(change, end, change, float(after_med[change]), float(before_med[change]), float(z[change]))


def _before_after(x: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """At each index: the median of the ``window`` values before it, of the ``window`` from it on, and the robust
    sd (MAD) of the values before it around their trailing median; NaN where a window is not full."""
    n = len(x)
    x = np.asarray(x, dtype=float)
    level = rolling_median(x, window)
    # the window after an index is the one before the index a window on: the same values, the same median
    before, after = np.full(n, np.nan), np.full(n, np.nan)
    before[1:], after[: max(0, n - window + 1)] = level[:-1], level[window - 1:]
    # the deviations only where the level is (rolled with nulls before them, polars' median is several times
    # slower; the windows and so the medians are the same)
    full = window - 1
    dev = rolling_median(np.abs(x[full:] - level[full:]), window) * MAD_TO_SD
    spread = np.full(n, np.nan)
    spread[full + 1:] = dev[:-1]
    return before, after, spread


def change_point(x: np.ndarray, lo: int, hi: int, window: int) -> int:
    """Where in ``[lo, hi)`` the mean of the ``window`` values after differs most from the
    mean of the ``window`` before — sharp at the true change, unlike medians' flat top."""
    if hi <= lo:
        return lo
    c = np.concatenate(([0.0], np.cumsum(x)))
    i = np.arange(lo, hi)
    after = (c[i + window] - c[i]) / window
    before = (c[i] - c[i - window]) / window
    return int(i[np.argmax(np.abs(after - before))])
