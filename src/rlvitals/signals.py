"""Series primitives: pure functions over one metric's values (ordered by step).

Everything here is scale-free: a spike, a shift or a collapse is measured against the
series' own robust level and spread (median and MAD over a trailing window), so the same
defaults work for an entropy of 0.05 nats and one of 2 nats, and for a KL of 1e-4 and 0.5.
Functions take plain NumPy arrays (NaN-free: callers drop non-finite values first) and
return indices into them; checks turn indices into steps.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import polars as pl

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
    med = float(np.median(x))
    mad = float(np.median(np.abs(x - med))) * MAD_TO_SD
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
    med = pl.Series(x).rolling_median(window_size=window, min_samples=min_periods).shift(1)
    out: np.ndarray = med.fill_null(np.nan).to_numpy()
    return out


def trailing_scale(x: np.ndarray, window: int, min_periods: int | None = None,
                   floor: float = 1e-3) -> tuple[np.ndarray, np.ndarray]:
    """``(median, robust sd)`` of the ``window`` values before each index. The spread needs
    ``min_periods`` values (half a window by default): a MAD from a dozen points is too noisy
    to call anything six of them away a spike."""
    min_periods = min_periods or max(5, window // 2)
    s = pl.Series(x)
    centre = s.rolling_median(window_size=window, min_samples=1)
    dev = (s - centre).abs().rolling_median(window_size=window, min_samples=min_periods) * MAD_TO_SD
    # the median before an index, none while fewer than min_periods values precede it
    med_np: np.ndarray = np.where(np.arange(len(x)) < min_periods, np.nan, centre.shift(1).fill_null(np.nan).to_numpy())
    dev_np: np.ndarray = dev.shift(1).fill_null(np.nan).to_numpy()
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
    """Points at least ``ratio`` times the trailing median (the seed's "10× normal" grad norm)."""
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
    s, level = pl.Series(x), pl.Series(x).rolling_median(window_size=window)
    before_med = level.shift(1).fill_null(np.nan).to_numpy()
    after_med = s.reverse().rolling_median(window_size=window).reverse().fill_null(np.nan).to_numpy()
    before_sd = (s - level).abs().rolling_median(window_size=window) * MAD_TO_SD
    sd = np.maximum(np.nan_to_num(before_sd.shift(1).fill_null(np.nan).to_numpy(), nan=np.inf),
                    np.maximum(1e-3 * np.abs(before_med), 0.5 * noise_scale(x)))
    z = np.nan_to_num((after_med - before_med) / sd, nan=0.0)
    mask = _beyond(z, k, direction)
    found = runs_of(mask)
    if not found:
        return None
    best = max(found, key=lambda se: float(np.max(np.abs(z[se[0] : se[1] + 1]))))
    start, end = best
    change = change_point(x, max(window, start - window), min(n - window, end + 1), window)
    return Event(change, end, change, float(after_med[change]), float(before_med[change]), float(z[change]))


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
    s = pl.Series(x)
    # from the third value on: a fall in the first steps has no full window before it
    before = s.rolling_median(window_size=baseline_window, min_samples=head).fill_null(np.nan).to_numpy()
    later = _forward_median(x, baseline_window)
    # the least finite forward median among the next `within` points after each index, all at once
    ahead = np.concatenate([np.where(np.isfinite(later), later, np.inf), np.full(within, np.inf)])
    least = np.lib.stride_tricks.sliding_window_view(ahead[1:], within).min(axis=1)
    idx = np.arange(n)
    fell = (idx >= head - 1) & (idx > after) & (idx < n - 1) & np.isfinite(before) & (before > 0)
    fell &= least <= before * (1 - drop)
    for i in np.flatnonzero(fell).tolist():
        # stays down: the rest of the run's median is not above the threshold
        if not np.median(x[i + 1 :]) > before[i] * (1 - drop * 0.6):
            return int(i), float(before[i])
    return None


def _forward_median(x: np.ndarray, baseline_window: int) -> np.ndarray:
    out: np.ndarray = pl.Series(x).reverse().rolling_median(
        window_size=min(baseline_window, 5)).reverse().fill_null(np.nan).to_numpy()
    return out


def collapse(x: np.ndarray, *, drop: float = 0.5, within: int = 20, baseline_window: int = 10,
             accel: float = 3.0, max_candidates: int = 50) -> Event | None:
    """A fast relative fall: the series loses at least ``drop`` of its level within ``within``
    steps and stays down (:func:`collapse_candidate`), described as the fall itself — and faster than
    the series was already falling: a smooth decay (an exponential loses the same share in every
    window) is learning, not a collapse (seed-004 §六 急剧下降 vs 平滑下降).

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
        level = float(np.median(x[max(0, onset - 3) : onset]))
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
    prev = float(np.median(x[max(0, e.start - within - 1) : e.start - within + 2]))
    if not np.isfinite(prev) or prev <= e.baseline:
        return False
    rate_before = np.log(prev / e.baseline) / within
    rate_fall = np.log(e.baseline / e.value) / max(1, e.end - e.start + 1)
    return bool(rate_fall < accel * rate_before)


def bucket_medians(x: np.ndarray, buckets: int) -> np.ndarray:
    """The median of each of ``buckets`` consecutive, near-equal slices of ``x`` (the slices
    ``np.linspace(0, n, buckets + 1)`` cuts), as ``np.median`` gives it slice by slice — NaN for a
    slice holding a NaN — from one sort of a slice-per-row grid (NaN-padded) instead of a Python loop.

    >>> bucket_medians(np.array([3.0, 1.0, 2.0, 10.0, 30.0, 20.0, 5.0]), 2).tolist()
    [2.0, 15.0]
    """
    x = np.asarray(x, dtype=float)
    edges = np.linspace(0, len(x), buckets + 1).astype(int)
    sizes, ids, rows = np.diff(edges), np.repeat(np.arange(buckets), np.diff(edges)), np.arange(buckets)
    grid = np.full((buckets, int(sizes.max(initial=1))), np.nan)
    grid[ids, np.arange(len(x)) - edges[ids]] = x
    grid.sort(axis=1)  # NaN last: a slice's own NaN sorts to its last place, before the padding
    out: np.ndarray = (grid[rows, (sizes - 1) // 2] + grid[rows, sizes // 2]) / 2
    out[np.isnan(grid[rows, sizes - 1])] = np.nan
    return out


def theil_sen(x: np.ndarray, t: np.ndarray | None = None, max_points: int = 400) -> float:
    """Robust slope (median of pairwise slopes); long series are reduced to ``max_points``
    bucket medians first so the cost stays O(max_points²)."""
    n = len(x)
    if n < 3:
        return 0.0
    t = np.arange(n, dtype=float) if t is None else t.astype(float)
    if n > max_points:
        x, t = bucket_medians(x, max_points), bucket_medians(t, max_points)
    i, j = np.triu_indices(len(x), 1)
    dt = t[j] - t[i]
    keep = dt != 0
    return float(np.median((x[j] - x[i])[keep] / dt[keep]))


def trend(x: np.ndarray, max_points: int = 400) -> float:
    """Mann–Kendall-style trend strength in [-1, 1] (Kendall's tau against time) on at most
    ``max_points`` bucket medians: +1 rises throughout, -1 falls throughout, ~0 no trend."""
    n = len(x)
    if n < 4:
        return 0.0
    if n > max_points:
        x = bucket_medians(x, max_points)
    i, j = np.triu_indices(len(x), 1)
    sign = np.sign(x[j] - x[i])
    return float(sign.sum() / len(sign))


#: the levels computed, by (the values' bytes, window): several checks read the level of one series, and it
#: is a pure function of them; least recently used first, at most LEVEL_BYTES of keys and levels together,
#: none of a series longer than LEVEL_KEPT (there a level's memory counts for more than its time)
_LEVELS: OrderedDict[tuple[bytes, int], np.ndarray] = OrderedDict()
_LEVELS_LOCK = threading.Lock()
LEVEL_BYTES, LEVEL_KEPT = 32 << 20, 1 << 18


def rolling_level(x: np.ndarray, window: int) -> np.ndarray:
    """Centred rolling median over ``window`` values, cut at the ends (``x[i - w//2 : i + (w-1)//2 + 1]``,
    polars' ``center=True``): a level robust to one-step outliers. Polars' trailing median moved back (several
    times faster on long series), the end's cut windows from the reversed tail; zero is +0.0. Read-only: the
    level of the same values and window is computed once and shared."""
    x = np.asarray(x, dtype=float)
    key = (x.tobytes(), window) if len(x) <= LEVEL_KEPT else None
    if key is not None:
        with _LEVELS_LOCK:
            if (out := _LEVELS.get(key)) is not None:
                _LEVELS.move_to_end(key)
                return out
    n, w, out = len(x), max(1, min(window, len(x))), np.empty(len(x))
    right = (w - 1) // 2
    out[: n - right] = pl.Series(x).rolling_median(window_size=w, min_samples=1).to_numpy()[right:]
    if right:  # the reversed last w values: index k holds the median of the last k + 1
        tail = pl.Series(x[::-1][:w]).rolling_median(window_size=w, min_samples=1).to_numpy()
        out[n - right:] = tail[w - 1 - right : w - 1][::-1]
    out += 0.0  # -0.0 and 0.0 are one level; which is the middle value is the sort's choice
    out.setflags(write=False)
    if key is None:
        return out
    with _LEVELS_LOCK:
        _LEVELS[key] = out
        held = sum(len(k) + v.nbytes for (k, _), v in _LEVELS.items())
        while held > LEVEL_BYTES and len(_LEVELS) > 1:
            (k, _), v = _LEVELS.popitem(last=False)
            held -= len(k) + v.nbytes
    return out


def sustained_above(x: np.ndarray, threshold: float, *, window: int = 10, min_len: int = 10,
                    max_gap: int = 2) -> list[tuple[int, int]]:
    """Inclusive ``(start, end)`` stretches where the level of ``x`` (its :func:`rolling_level`)
    stays at or above ``threshold`` for at least ``min_len`` indices; dips of up to ``max_gap``
    indices do not break a stretch. A level, not a point: one noisy step never counts."""
    if len(x) == 0:
        return []
    return runs_of(rolling_level(x, window) >= threshold, min_len, max_gap)


def fall_from_peak(x: np.ndarray, *, window: int = 10, tail: float = 0.2) -> Event | None:
    """How far the recent level of a positive series sits below its earlier peak level.

    The peak is the highest :func:`rolling_level` before the last ``tail`` share of the run;
    the recent level is the median of that tail. ``score`` is the fraction lost
    (``1 - recent/peak``), ``baseline`` the peak level, ``value`` the recent level, ``peak``
    the index of the peak level and ``start`` the onset: the first index after the peak whose
    level is below ``peak - (peak - recent)/4`` and stays below it for at least 80% of the rest
    of the run (a late bump does not move the onset to the end). None when the series is too
    short (fewer than ``3 × window`` values), its peak level is not positive, or it did not fall.
    """
    n = len(x)
    if n < 3 * window:
        return None
    level = rolling_level(x, window)
    n_tail = max(window, int(round(n * tail)))
    recent = float(np.median(x[n - n_tail:]))
    top = int(np.argmax(level[: n - n_tail]))
    peak = float(level[top])
    if not np.isfinite(peak) or peak <= 0 or recent >= peak:
        return None
    below = level[top:] < peak - (peak - recent) / 4
    rest_below = np.cumsum(below[::-1])[::-1] / np.arange(len(below), 0, -1)
    held = np.flatnonzero(below & (rest_below >= 0.8))
    first = np.flatnonzero(below)
    start = top + int(held[0] if len(held) else first[0] if len(first) else 0)
    return Event(start, n - 1, top, recent, peak, 1.0 - recent / peak)


def quantum(x: np.ndarray, max_decimals: int = 8) -> float:
    """The rounding step of a logged series: the largest ``10**-d`` (0 ≤ d ≤ ``max_decimals``)
    of which every non-zero value is a whole multiple, or 0.0 when the values carry more digits
    (full precision), or there is no non-zero value.

    A console log that prints three decimals (``0.000``, ``-0.000``, ``0.001``) has quantum
    0.001: a move from 0.000 to 0.002 is two rounding steps, not an infinite relative jump.

    >>> quantum(np.array([0.0, 0.001, -0.002, 0.013]))
    0.001
    """
    x = np.asarray(x, dtype=float)
    nz = x[np.isfinite(x) & (x != 0)]
    if len(nz) == 0:
        return 0.0
    for d in range(max_decimals + 1):
        step = 10.0 ** -d
        r = nz / step
        if np.all(np.abs(np.round(r)) >= 1) and np.all(np.abs(r - np.round(r)) <= 1e-6 + 1e-9 * np.abs(r)):
            return step
    return 0.0


@dataclass(frozen=True)
class Jump:
    """A rise of a series far above its trailing level (see :func:`jumps`).

    ``start``/``end`` are inclusive indices of the flagged stretch, ``peak`` its highest index
    within ``hold`` values of ``start``, ``value`` the value there, ``before`` the trailing
    median at ``start``, ``after`` the median of the values just after the stretch (NaN when
    the series ends inside it), ``ratio`` the peak over ``before`` (inf when ``before`` ≤ 0),
    ``score`` the peak's distance from ``before`` in robust sd, and ``stayed`` whether the level
    held at least halfway up the jump over the ``hold`` values from ``start``, three at least (a level
    shift rather than a spike; a jump in the last two values has not shown that it stays).
    """

    start: int
    end: int
    peak: int
    value: float
    before: float
    after: float
    ratio: float
    score: float
    stayed: bool


def jumps(x: np.ndarray, *, window: int = 50, k: float = 6.0, ratio: float | None = None,
          min_quanta: float = 10.0, settle: float = 0.0, settle_share: float = 0.25,
          merge_gap: int = 3, hold: int = 10) -> list[Jump]:
    """Upward jumps, transient or lasting: values more than ``k`` robust sd above the trailing
    median of the ``window`` values before them (:func:`trailing_scale`), and — for a
    non-negative series when ``ratio`` is given — at least ``ratio`` times that median.

    Guards against reading rounding or start-up as a jump: the sd is never below the series'
    :func:`quantum` and a rise must span ``min_quanta`` rounding steps; with ``settle`` > 0,
    points in the first ``settle_share`` of the run whose trailing median is still below
    ``settle`` × the run's median are skipped (a KL leaving 0 at the start is not a jump).
    Flagged points closer than ``merge_gap`` form one jump. The level a jump is measured from is
    the higher of the trailing median and the median of the five values before.
    """
    x = np.asarray(x, dtype=float)
    n = len(x)
    if n < 10:
        return []
    q = quantum(x)
    med, sd = trailing_scale(x, window)
    sd = np.maximum(sd, q)
    # measured from the higher of the window's median and the last few values: a series that has
    # just climbed to a new level (the window's median still lagging behind) is not jumping now
    recent = pl.Series(x).rolling_median(window_size=5, min_samples=3).shift(1).fill_null(np.nan).to_numpy()
    trailing, med = med, np.where(np.isfinite(recent), np.fmax(med, recent), med)
    rise = x - med
    z = np.nan_to_num(rise / sd, nan=0.0)
    hit = np.isfinite(med) & (z > k) & (np.nan_to_num(rise, nan=0.0) >= min_quanta * q)
    if ratio is not None:
        hit &= x >= ratio * np.maximum(np.nan_to_num(med, nan=np.inf), q)
    level = float(np.median(x))
    if settle > 0 and level > 0:
        hit &= (np.nan_to_num(trailing, nan=0.0) >= settle * level) | (np.arange(n) >= settle_share * n)
    out = []
    for start, end in runs_of(hit, 1, merge_gap):
        # the jump's own peak: a climb that never lets the trailing median catch up is one long
        # stretch, and its end is not what jumped at ``start``
        peak = start + int(np.argmax(x[start : min(end, start + hold - 1) + 1]))
        before = float(med[start])
        held = float(np.median(x[start : start + hold]))
        tail = x[end + 1 : end + 1 + hold]
        after = float(np.median(tail)) if len(tail) else float("nan")
        jump_ratio = float(x[peak] / before) if before > 0 else float("inf")
        out.append(Jump(start, end, peak, float(x[peak]), before, after, jump_ratio, float(z[peak]),
                        n - start >= 3 and held >= before + 0.5 * (x[peak] - before)))
    return out


def plateau_end(x: np.ndarray, start: int = 0) -> int:
    """Where a level stretch beginning at ``start`` ends and a straight fall (or climb) begins.

    Two least-squares fits of ``x[start:]`` over every break point: a hinge (a constant, then a
    line continuing from it — a slow decline, which has no step to detect) and a constant then
    a free line (which also fits a step). The hinge wins unless the free line fits clearly
    better (by more than ``max(4, 2 ln n)`` residual variances). Returns ``start`` when fewer
    than five values follow it."""
    y = np.asarray(x[start:], dtype=float)
    n = len(y)
    if n < 5:
        return start
    flat_sse, hinge_sse, free_sse = _break_fits(y)
    hinge_c = int(np.argmin(flat_sse + hinge_sse))
    free_c = int(np.argmin(flat_sse + free_sse))
    hinge_best, free_best = float((flat_sse + hinge_sse)[hinge_c]), float((flat_sse + free_sse)[free_c])
    var = free_best / (n - 4)
    jump = hinge_best - free_best > max(4.0, 2.0 * np.log(n)) * var
    return start + (free_c if jump else hinge_c)


def _break_fits(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every break ``c`` in ``0..n-4``: the squared error of a constant over ``y[:c+1]``, of
    a line continuing from that constant over ``y[c+1:]`` (hinge), and of a free line over
    ``y[c+1:]`` — all from cumulative sums, so the whole scan is O(n)."""
    n = len(y)
    c = np.arange(n - 3)
    j = np.arange(n, dtype=float)
    cy, cyy, cjy = (np.concatenate(([0.0], np.cumsum(v))) for v in (y, y * y, j * y))
    k = c + 1.0  # flat length
    a = cy[c + 1] / k
    flat_sse = cyy[c + 1] - k * a * a
    m = n - k  # tail length; the tail's d runs 1..m
    sy = cy[n] - cy[c + 1]
    syy = cyy[n] - cyy[c + 1]
    sdy = (cjy[n] - cjy[c + 1]) - c * sy  # sum of (j - c) * y_j over the tail
    sd, sdd = m * (m + 1) / 2, m * (m + 1) * (2 * m + 1) / 6
    # hinge: r = y - a, slope = d.r / d.d, sse = r.r - (d.r)^2 / d.d
    dr = sdy - a * sd
    rr = syy - 2 * a * sy + m * a * a
    hinge_sse = rr - dr * dr / sdd
    # free line: centred sums
    stt = syy - sy * sy / m
    sdd_c = sdd - sd * sd / m
    sdt = sdy - sd * sy / m
    free_sse = stt - sdt * sdt / sdd_c
    return np.maximum(flat_sse, 0.0), np.maximum(hinge_sse, 0.0), np.maximum(free_sse, 0.0)


# -- damage from the first steps --------------------------------------------------------------

def early_move(x: np.ndarray, *, factor: float, direction: str = "up", head: int = 3, within: int = 15,
               hold: float = 0.5) -> Event | None:
    """A move of a positive series, from its first values, by ``factor`` or more within the first
    ``within`` values, that holds: damage done before any trailing window or warm-up skip has a level
    to measure it from (KL in the reward 0.8 → 17 in ten steps, a response length 1,700 → 1 token).

    The baseline is the median of the first ``head`` values. The move is found at the first index of
    the first ``within`` + 1 whose :func:`rolling_level` (three values) is ``factor``× the baseline
    (``direction="up"``) or at most 1/``factor`` of it (``"down"``); it holds when the median of every
    value after it stays at least ``hold`` of the way there in log scale (for ``factor`` 10 and
    ``hold`` 0.5: still ≥ 3.2× up, or ≤ 1/3.2 down). ``start`` is where the series left the baseline
    (the last index still within √``factor`` of it, plus one), ``end`` and ``peak`` the first index at
    the new level, ``value`` the median after it, ``score`` that median over the baseline. None when the
    series is too short, the baseline is not positive, or nothing moved that far and stayed.

    >>> kl = np.array([0.8, 0.9, 1.3, 2.5, 4.4, 7.8, 13.0, 15.7, 16.6, 17.0, 16.9, 17.2, 17.1, 16.8])
    >>> e = early_move(kl, factor=5.0)
    >>> int(e.start), int(e.end), round(e.baseline, 2), round(e.score, 1)
    (3, 5, 0.9, 18.7)
    """
    x = np.asarray(x, dtype=float)
    n = len(x)
    if n < head + 3 or factor <= 1:
        return None
    base = float(np.median(x[:head]))
    if not np.isfinite(base) or base <= 0:
        return None
    level = rolling_level(x, 3)
    ratio = level / base
    moved = ratio >= factor if direction == "up" else ratio <= 1.0 / factor
    moved[:head] = False
    hits = np.flatnonzero(moved[: min(n, within + 1)])
    if len(hits) == 0:
        return None
    end = int(hits[0])
    after = float(np.median(x[end:]))
    need = factor ** hold
    if (direction == "up" and after < need * base) or (direction == "down" and after > base / need):
        return None
    near = np.sqrt(factor)
    inside = (x[:end] < near * base) if direction == "up" else (x[:end] > base / near)
    still = np.flatnonzero(inside)
    start = int(still[-1]) + 1 if len(still) else 0
    return Event(start, end, end, after, base, after / base)
