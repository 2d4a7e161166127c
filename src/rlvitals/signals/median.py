"""The median of one series, as ``np.median`` gives it, without its overhead; and its rolling median, as
polars gives it, faster where the window is small.

A diagnosis takes thousands of medians of short float arrays; ``np.median`` spends most of each call on
handling axes, ``out`` and the mean of the middle values in general. :func:`median` does the same partition
and the same arithmetic for a float64 array (so the same bits, signed zeros and NaN included) in a fraction
of the time, and hands anything else to ``np.median``.

:func:`rolling_median` is the one way the signals take the median of a trailing window. Polars' costs about
50 ns a value whatever the window (5 ms over 100,000 steps, even for three values); the median of three or
five values is a few minimums and maximums of shifted copies of the series, five times faster, and it is the
middle value itself, so the same number.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl


def median(x: Any) -> np.float64:
    """``np.median(x)`` (over all the values): NaN when one is NaN or there is none (without NumPy's
    warning), ``0.0`` where the middle is ``-0.0`` (the mean NumPy takes starts from ``0.0``).

    >>> float(median(np.array([3.0, -1.0, 2.0, 10.0]))), float(median(np.array([-0.0]))), median([1, 2])
    (2.5, 0.0, np.float64(1.5))
    """
    a = np.asarray(x)
    if a.dtype != np.float64:
        return np.float64(np.median(a))
    n = a.size
    if n == 0:
        return np.float64(np.nan)
    half = n // 2
    # the middle value(s) and the last place, where a NaN sorts (NumPy's own partition, so the same bits)
    part = np.partition(a.ravel(), (half, -1) if n % 2 else (half - 1, half, -1))
    if np.isnan(part[-1]):
        return np.float64(np.nan)
    if n % 2:
        return np.float64(part[half] + 0.0)
    # as Python floats (the same IEEE arithmetic): -inf and +inf in the middle make NaN without NumPy's warning
    return np.float64((float(part[half - 1]) + float(part[half]) + 0.0) / 2)


#: the windows :func:`rolling_median` takes through a network of minimums and maximums (odd: the median is one
#: of the values, so no arithmetic can differ from polars')
NETWORK_WINDOWS = (3, 5)


def rolling_median(x: np.ndarray, window: int, min_samples: int | None = None) -> np.ndarray:
    """The median of the ``window`` values up to each index (``x[i - window + 1 : i + 1]``, fewer at the start),
    NaN where fewer than ``min_samples`` (the window by default, and never more): what polars' ``rolling_median``
    gives, with its arithmetic for an even count (``a + (b - a) / 2``). A zero may come out as ``-0.0`` where
    polars gives ``0.0`` (equal values, either may be the middle one).

    >>> rolling_median(np.array([4.0, 1.0, 3.0, 2.0, 8.0]), 3, 2).tolist()
    [nan, 2.5, 3.0, 2.0, 3.0]
    """
    x = np.asarray(x, dtype=float)
    n, w = len(x), max(1, window)
    least = w if min_samples is None else max(1, min(min_samples, w))
    if w not in NETWORK_WINDOWS or n < w or not np.isfinite(x).all():
        out: np.ndarray = (pl.Series(x).rolling_median(window_size=w, min_samples=least)
                           .fill_null(np.nan).to_numpy())
        return out
    out = np.empty(n)
    out[w - 1:] = _middle(x, w)
    for i in range(w - 1):  # the windows cut at the start, fewer values than the window
        out[i] = _middle_of(x[: i + 1]) if i + 1 >= least else np.nan
    return out


def _middle(x: np.ndarray, w: int) -> np.ndarray:
    """The middle of each full window of ``w`` (3 or 5) values: the median-of-three formula; for five, the
    seven compare-exchanges of the known optimal median network (0-1, 3-4, 0-3, 1-4, 1-2, 2-3, 1-2: its
    middle output is the median), each side of an exchange taken only where a later one reads it, into
    buffers used again (a new array of the series' length is a page fault a page: most of the cost)."""
    n = len(x) - w + 1
    p = [x[k : k + n] for k in range(w)]
    if w == 3:
        low: np.ndarray = np.minimum(p[0], p[1])
        high: np.ndarray = np.maximum(p[0], p[1])
        np.minimum(high, p[2], out=high)
        np.maximum(low, high, out=low)
        return low
    p0: np.ndarray = np.minimum(p[0], p[1])
    p1: np.ndarray = np.maximum(p[0], p[1])
    p3: np.ndarray = np.minimum(p[3], p[4])
    p4: np.ndarray = np.maximum(p[3], p[4])
    np.maximum(p0, p3, out=p3)  # 0-3: the larger is read on
    np.minimum(p1, p4, out=p1)  # 1-4: the smaller
    low, high = p0, p4  # 1-2: both, into the buffers of 0 and 4 (free now)
    np.minimum(p1, p[2], out=low)
    np.maximum(p1, p[2], out=high)
    np.minimum(high, p3, out=high)  # 2-3: the smaller
    np.maximum(low, high, out=high)  # 1-2: the larger is the median
    return high


def _middle_of(values: np.ndarray) -> float:
    """The median of a few values the way polars takes it (an even count: ``a + (b - a) / 2``)."""
    ordered = np.sort(values)
    half = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[half])
    low, high = ordered[half - 1], ordered[half]
    return float(low + (high - low) * 0.5)
