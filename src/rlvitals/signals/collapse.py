"""Collapses: a series that falls to a fraction of its level and stays there."""

from __future__ import annotations

import numpy as np

from .events import Event
from .levels import rolling_level
from .median import median, rolling_median


def collapse_candidate(x: np.ndarray, *, drop: float = 0.5, within: int = 20,
                       baseline_window: int = 10, after: int = -1) -> tuple[int, float] | None:
    """``(index, level)`` of the first index (past ``after``) whose forward medians (five values) fall
    to ``1 - drop`` of its trailing level (the median of up to ``baseline_window`` values, from the
    third value on) within ``within`` steps, and after which the run's median stays below
    ``1 - 0.6 drop`` of it; None when there is none."""
    n = len(x)
    head = min(3, baseline_window)
    if n < head + 3:
        return None
    # from the third value on: a fall in the first steps has no full window before it
    before = rolling_median(x, baseline_window, head)
    later = _forward_median(x, baseline_window)
    # the least finite forward median among the next `within` points after each index, all at once
    ahead = np.concatenate([np.where(np.isfinite(later), later, np.inf), np.full(within, np.inf)])
    least = np.lib.stride_tricks.sliding_window_view(ahead[1:], within).min(axis=1)
    idx = np.arange(n)
    fell = (idx >= head - 1) & (idx > after) & (idx < n - 1) & np.isfinite(before) & (before > 0)
    fell &= least <= before * (1 - drop)
    for i in np.flatnonzero(fell).tolist():
        # stays down: the rest of the run's median is not above the threshold
        if not median(x[i + 1 :]) > before[i] * (1 - drop * 0.6):
            return int(i), float(before[i])
    return None


def _forward_median(x: np.ndarray, baseline_window: int) -> np.ndarray:
    # the trailing median of the reversed series, reversed: the median of the values from each index on
    out: np.ndarray = rolling_median(np.asarray(x, dtype=float)[::-1], min(baseline_window, 5))[::-1]
    return out


def collapse(x: np.ndarray, *, drop: float = 0.5, within: int = 20, baseline_window: int = 10,
             accel: float = 3.0, max_candidates: int = 50) -> Event | None:
    """A fast relative fall: the series loses at least ``drop`` of its level within ``within``
    steps and stays down (:func:`collapse_candidate`), described as the fall itself — and faster than
    the series was already falling: a smooth decay (an exponential loses the same share in every
    window) is learning, not a collapse (docs/reading-rules.md#entropy-collapse: a steep fall against a smooth decay).

    ``baseline`` is the level it fell from: the highest three-value level in the ``within`` values
    before its first clearly-low point (below ``1 - drop/2`` of the trailing level), so a fall in the
    first steps is measured from the run's start and not from a window that already holds the fall.
    ``start`` (the onset) is the first index after the last one still within a quarter of the drop of
    that level — a slow drift before a sudden fall is not part of it, nor is a lone noisy dip earlier;
    the baseline reported is then the median of the (up to three) values just before the onset.
    ``value`` is the lowest forward median within ``within`` values of the first clearly-low point,
    ``end``/``peak`` where the fall first comes within a tenth of its depth of it, and ``score`` the
    share lost. A fall whose rate per step (in log terms) is under ``accel``× the rate over the
    ``within`` steps before its onset is a smooth decay and the search goes on past it.

    >>> x = np.array([1.61, 1.60, 1.60, 1.59, 1.58, 1.58, 1.57, 1.56, 1.56, 1.55, 1.55, 0.005, 1e-4] + [0.0] * 20)
    >>> e = collapse(x)
    >>> int(e.start), int(e.end), round(e.baseline, 2), round(e.score, 2)
    (11, 11, 1.55, 1.0)
    """
    after = -1
    for _ in range(max_candidates):
        found = collapse_candidate(x, drop=drop, within=within, baseline_window=baseline_window, after=after)
        if found is None:
            return None
        event, first_deep = _measure_fall(x, found, drop, within, baseline_window)
        if not _smooth(x, event, within, accel):
            return event
        after = first_deep  # the next candidate past this stretch of the decay
    return None


def _measure_fall(x: np.ndarray, found: tuple[int, float], drop: float, within: int,
                  baseline_window: int) -> tuple[Event, int]:
    """The fall at a collapse candidate (see :func:`collapse`) and its first clearly-low index."""
    i, level = found
    n = len(x)
    deep = np.flatnonzero(x[i + 1 :] < level * (1 - drop / 2))
    first_deep = i + 1 + int(deep[0]) if len(deep) else i + 1
    lo = max(0, first_deep - within)
    level = max(level, float(np.max(rolling_level(x[lo:first_deep], 3)))) if first_deep > lo else level
    above = np.flatnonzero(x[lo:first_deep] >= level * (1 - drop / 4))
    onset = min(lo + int(above[-1]) + 1 if len(above) else first_deep, first_deep)
    # the forward median is undefined over the last few points of a run (a live one that collapsed
    # just now); there the raw values stand in for it
    later = _forward_median(x, baseline_window)
    smooth = np.where(np.isfinite(later), later, x)
    value = float(np.min(smooth[first_deep : min(n - 1, first_deep + within) + 1]))
    onset = _cliff(x, onset, first_deep + 2 * within, value) if value > 0 else onset
    if onset > 0:  # the level it fell from: the values just before the fall
        level = float(median(x[max(0, onset - 3) : onset]))
    tail = smooth[onset : min(n - 1, max(onset, first_deep) + within) + 1]
    value = min(value, float(np.min(tail)))
    # the fall ends where it has come within a tenth of its depth of the lowest level
    low = onset + int(np.argmax(tail <= value + 0.1 * (level - value)))
    return Event(onset, low, low, value, level, float(1 - value / level)), first_deep


def _cliff(x: np.ndarray, onset: int, stop: int, value: float) -> int:
    """Where a fall really happens: the step with the largest one-step fall between ``onset`` and
    ``stop``, from the upper half of the fall (above the geometric mean of the value before ``onset``
    and ``value``), when that step alone is at least half of
    the whole fall (in log terms, from the value before ``onset`` to ``value``) — a cliff after a
    drift — else ``onset`` (a ramp)."""
    seg = x[max(onset - 1, 0) : min(stop, len(x) - 1) + 1]
    if onset < 1 or len(seg) < 2 or seg[0] <= 0:
        return onset
    # in log terms a fall is measured down to a hundredth of where it started: below that, values of 1e-10
    # and 1e-15 are both zero, and the noise between them is no cliff
    bottom = 1e-2 * seg[0]
    seg, value = np.maximum(seg, bottom), max(value, bottom)
    falls = -np.diff(np.log(seg))
    # a cliff falls from the upper half of the fall (in log terms), not inside the noise of the low level
    falls[seg[:-1] < np.sqrt(seg[0] * value)] = 0.0
    k = int(np.argmax(falls))
    total = np.log(seg[0] / value)
    return onset + k if total > 0 and falls[k] >= 0.5 * total else onset


def _smooth(x: np.ndarray, e: Event, within: int, accel: float) -> bool:
    """Whether the fall ``e`` is no faster, per step, than the series fell over the ``within`` steps
    before it (log rates; a fall to 0 or from the run's first steps is never smooth)."""
    if e.start < within or e.value <= 0 or e.baseline <= 0:
        return False
    prev = float(median(x[max(0, e.start - within - 1) : e.start - within + 2]))
    if not np.isfinite(prev) or prev <= e.baseline:
        return False
    rate_before = np.log(prev / e.baseline) / within
    rate_fall = np.log(e.baseline / e.value) / max(1, e.end - e.start + 1)
    return bool(rate_fall < accel * rate_before)
