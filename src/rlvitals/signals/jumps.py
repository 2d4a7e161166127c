"""Jumps: a series whose level moves at one step, and early moves from its start."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .events import Event, _shifted, runs_of, trailing_scale
from .levels import quantum, rolling_level
from .median import median, rolling_median


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
    recent = _shifted(rolling_median(x, 5, 3))
    trailing, med = med, np.where(np.isfinite(recent), np.fmax(med, recent), med)
    rise = x - med
    z = np.nan_to_num(rise / sd, nan=0.0)
    hit = np.isfinite(med) & (z > k) & (np.nan_to_num(rise, nan=0.0) >= min_quanta * q)
    if ratio is not None:
        hit &= x >= ratio * np.maximum(np.nan_to_num(med, nan=np.inf), q)
    level = float(median(x))
    if settle > 0 and level > 0:
        hit &= (np.nan_to_num(trailing, nan=0.0) >= settle * level) | (np.arange(n) >= settle_share * n)
    out = []
    for start, end in runs_of(hit, 1, merge_gap):
        # the jump's own peak: a climb that never lets the trailing median catch up is one long
        # stretch, and its end is not what jumped at ``start``
        peak = start + int(np.argmax(x[start : min(end, start + hold - 1) + 1]))
        before = float(med[start])
        held = float(median(x[start : start + hold]))
        tail = x[end + 1 : end + 1 + hold]
        after = float(median(tail)) if len(tail) else float("nan")
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
    base = float(median(x[:head]))
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
    after = float(median(x[end:]))
    need = factor ** hold
    if (direction == "up" and after < need * base) or (direction == "down" and after > base / need):
        return None
    near = np.sqrt(factor)
    inside = (x[:end] < near * base) if direction == "up" else (x[:end] > base / near)
    still = np.flatnonzero(inside)
    start = int(still[-1]) + 1 if len(still) else 0
    return Event(start, end, end, after, base, after / base)
