"""An exponential approach to a level, ``y(t) = c + d · exp(−k · (t − t₀) / T)``, fitted to a series
over steps: how an entropy curve decays toward the level it settles at, and where it will be later.

``k`` is found on a log grid (a decay over a fiftieth of the run to one slower than the run itself) with
``c`` and ``d`` solved exactly for each ``k`` (variable projection), under the constraints the caller
asks for: entropy never goes below zero (``floor=0``) and a decay only falls (``falling=True``). Many
fits at once: each row of ``y`` is fitted on its own, which is how the bootstrap refits its resamples.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

__all__ = ["Decay", "fit_decay", "fit_decays", "fit_rows"]

#: rates in units of the fitted span T: from slower than the run (0.05: 5 % of the way in one run) to a
#: fall within a fiftieth of it
RATES = np.geomspace(0.05, 60.0, 64)


@dataclass(frozen=True)
class Decay:
    """``c + d · exp(−k · (t − start) / span)``: ``c`` is where the series settles, ``d`` how far above it
    the series started, ``k`` the rate per span."""

    c: float
    d: float
    k: float
    start: float
    span: float

    def at(self, steps: np.ndarray | float) -> np.ndarray:
        """The curve at ``steps`` (any steps, later ones included).

        >>> Decay(c=0.1, d=1.0, k=2.0, start=0.0, span=100.0).at(np.array([0.0, 50.0])).round(4).tolist()
        [1.1, 0.4679]
        """
        tau = (np.asarray(steps, dtype=float) - self.start) / self.span
        out: np.ndarray = self.c + self.d * np.exp(-self.k * tau)
        return out


def _solve(e: np.ndarray, y: np.ndarray, floor: float | None, falling: bool) -> tuple[np.ndarray, np.ndarray,
                                                                                         np.ndarray]:
    """For one rate's ``e = exp(−k τ)`` (n) and rows ``y`` (m × n): the constrained least-squares ``c``
    and ``d`` of each row, and its sum of squared errors."""
    n = e.shape[-1]
    c, d = _amounts(n, e.sum(), (e * e).sum(), y.sum(axis=-1), (y * e).sum(axis=-1), floor, falling)
    fit = c[..., None] + d[..., None] * e
    return c, d, ((y - fit) ** 2).sum(axis=-1)


def _amounts(n: int, se: Any, see: Any, sy: np.ndarray, sey: np.ndarray, floor: float | None,
             falling: bool) -> tuple[np.ndarray, np.ndarray]:
    """``c`` and ``d`` from the sums over ``e`` (``se``, ``see``: one rate's, or one per element) and over each
    row (``sy``, ``sey``), element by element: the same numbers for a rate however many rows come with it."""
    det = n * see - se * se
    flat = det <= 1e-12 * np.maximum(1.0, n * see)  # no decay visible at this rate: a constant
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(flat, sy / n, (see * sy - se * sey) / det)
        d = np.where(flat, 0.0, (n * sey - se * sy) / det)
    if falling:  # a rising fit is replaced by the best constant
        rising = d < 0
        c, d = np.where(rising, sy / n, c), np.where(rising, 0.0, d)
    if floor is not None:  # below the floor: pinned at it, the amplitude refitted above it
        low = c < floor
        d_pinned = (sey - floor * se) / see
        if falling:
            d_pinned = np.maximum(d_pinned, 0.0)
        c, d = np.where(low, floor, c), np.where(low, d_pinned, d)
    return c, d


def _solve_one(e: np.ndarray, y: np.ndarray, sy: float, floor: float | None,
               falling: bool) -> tuple[float, float, float]:
    """:func:`_solve` of one row ``y`` (``sy``: its sum), the same numbers to the last bit: the same sums, and the
    same arithmetic on them in plain floats (the golden section solves one row some forty times a fit, where
    :func:`_amounts`' arrays of one cost more than the sums)."""
    n = e.shape[-1]
    se, see, sey = float(e.sum()), float((e * e).sum()), float((y * e).sum())
    if not see > 0.0:  # nothing to divide by (or not a number): the array form, with its NaN and inf
        c1, d1, sse1 = _solve(e, y[None, :], floor, falling)
        return float(c1[0]), float(d1[0]), float(sse1[0])
    c, d = _amounts_one(n, se, see, sy, sey, floor, falling)
    return c, d, float(((y - (c + d * e)) ** 2).sum())


def _sse_at(buf: np.ndarray, rate: float, tau: np.ndarray, y: np.ndarray, sy: float, floor: float | None,
            falling: bool) -> float:
    """:func:`_solve_one`'s squared error at the rate ``rate`` (``e = exp(−rate·τ)``), to the bit, in the buffers
    ``buf`` (4 × n, reused from one call to the next: the golden section asks some forty times a fit)."""
    e, ee, ye, fit = buf
    np.multiply(-rate, tau, out=e)
    np.exp(e, out=e)
    np.multiply(e, e, out=ee)
    np.multiply(y, e, out=ye)
    se, see, sey = buf[:3].sum(axis=1).tolist()  # each row summed as the row alone is
    if not see > 0.0:
        return _solve_one(e.copy(), y, sy, floor, falling)[2]
    c, d = _amounts_one(len(y), se, see, sy, sey, floor, falling)
    np.multiply(e, d, out=fit)
    np.add(fit, c, out=fit)
    np.subtract(y, fit, out=fit)
    np.multiply(fit, fit, out=fit)
    return float(fit.sum())


def _amounts_one(n: int, se: float, see: float, sy: float, sey: float, floor: float | None,
                 falling: bool) -> tuple[float, float]:
    """:func:`_amounts` of one row in plain floats (``see`` > 0), choice for choice as ``np.where`` and
    ``np.maximum`` make them there."""
    det = n * see - se * se
    big = n * see
    if det <= 1e-12 * (big if big > 1.0 or big != big else 1.0):
        c, d = sy / n, 0.0
    else:
        c, d = (see * sy - se * sey) / det, (n * sey - se * sy) / det
    if falling and d < 0:
        c, d = sy / n, 0.0
    if floor is not None and c < floor:
        d_pinned = (sey - floor * se) / see
        if falling and not (d_pinned > 0.0 or d_pinned != d_pinned):  # np.maximum(d, 0.0): NaN stays, −0 is 0
            d_pinned = 0.0
        c, d = float(floor), d_pinned
    return c, d


#: the relative size of the rounding in a squared error taken from sums (:func:`_shortlist`), well above it
_SUMS_ROUNDING = 1e-12
#: rows of ``y`` a matrix product takes at once (16 × 64 rates × 200 points is below OpenBLAS's threading size)
_ROWS_A_PRODUCT = 16


def fit_decays(t: np.ndarray, y: np.ndarray, *, floor: float | None = None, falling: bool = False,
               rates: np.ndarray = RATES) -> list[Decay]:
    """The best curve on the grid ``rates`` for each row of ``y`` (m × n) over the steps ``t`` (n): the first
    rate of the grid whose squared error is the least (each computed as :func:`_solve` computes it)."""
    t = np.asarray(t, dtype=float)
    start, span = float(t[0]), max(float(t[-1] - t[0]), 1.0)
    picked = fit_rows(t, y, floor=floor, falling=falling, rates=rates)
    return [Decay(float(c), float(d), float(k), start, span) for c, d, k in zip(*picked, strict=True)]


def fit_rows(t: np.ndarray, y: np.ndarray, *, floor: float | None = None, falling: bool = False,
             rates: np.ndarray = RATES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`fit_decays` as arrays: each row's ``c``, ``d`` and ``k`` (start and span are the steps' first and
    their extent, at least 1), for a caller that reads many rows' curves at once."""
    t = np.asarray(t, dtype=float)
    y = np.atleast_2d(np.asarray(y, dtype=float))
    rates = np.asarray(rates, dtype=float)
    es, sums = _exponentials(t.tobytes(), rates.tobytes())
    picked = _shortlist(es, y, rates, floor, falling, sums) if np.isfinite(y).all() else None
    return picked if picked is not None else _each_rate(es, y, rates, floor, falling)


@lru_cache(maxsize=16)
def _exponentials(t_bytes: bytes, rates_bytes: bytes) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Each rate's ``exp(−k τ)`` over the steps (a row per rate) and their sums and sums of squares (as
    :func:`_solve` sums them), by the steps and the rates, kept read-only: the steps a run's entropy is fitted
    over are the same for its fit and its bootstrap, and across the runs of a sweep."""
    t, rates = np.frombuffer(t_bytes), np.frombuffer(rates_bytes)
    start, span = float(t[0]), max(float(t[-1] - t[0]), 1.0)
    tau = (t - start) / span
    es = np.array([np.exp(-k * tau) for k in rates])
    se, see = np.array([e.sum() for e in es]), np.array([(e * e).sum() for e in es])
    for a in (es, se, see):
        a.setflags(write=False)
    return es, (se, see)


def _each_rate(es: np.ndarray, y: np.ndarray, rates: np.ndarray, floor: float | None,
               falling: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every rate's fit (``es``: a row per rate) of every row in turn: ``c``, ``d`` and ``k`` of the first least
    error per row (a row no rate fits, its error never a number, is 0, 0, 0)."""
    best_sse = np.full(y.shape[0], np.inf)
    best = np.zeros((3, y.shape[0]))
    for k, e in zip(rates, es, strict=True):
        c, d, sse = _solve(e, y, floor, falling)
        better = sse < best_sse
        best_sse = np.where(better, sse, best_sse)
        best[:, better] = np.array([c, d, np.full_like(c, k)])[:, better]
    return best[0], best[1], best[2]


def _shortlist(es: np.ndarray, y: np.ndarray, rates: np.ndarray, floor: float | None, falling: bool,
               sums: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`_each_rate`'s choice at a fraction of its cost: every rate's squared error from sums (one matrix
    product; cancellation makes it inexact), then only the rates within its rounding of each row's least
    refitted as :func:`_solve` does, the first least kept. None when a sum is not finite. ``sums``: each rate's
    ``Σe`` and ``Σe²`` when known (:func:`_exponentials`)."""
    n = es.shape[1]
    se, see = sums if sums is not None else (np.array([e.sum() for e in es]), np.array([(e * e).sum() for e in es]))
    sy, syy = y.sum(axis=-1), (y * y).sum(axis=-1)
    # a few rows a product: one small enough that BLAS does it in this thread (OpenBLAS splits a larger one over
    # threads that then spin, idle, on the other core)
    sey = np.concatenate([part @ es.T for part in np.array_split(y, -(-len(y) // _ROWS_A_PRODUCT))])
    c, d = _amounts(n, se, see, sy[:, None], sey, floor, falling)
    terms = (syy[:, None], -2 * c * sy[:, None], -2 * d * sey, n * c * c, 2 * c * d * se, d * d * see)
    sse = sum(terms[1:], terms[0])
    # the rounding of each term, and of the sums over the values (bounded by |y|·|e| and |y|·1)
    reach = 2 * np.abs(d) * np.sqrt(syy[:, None] * see) + 2 * np.abs(c) * np.sqrt(n * syy[:, None])
    slack = _SUMS_ROUNDING * (sum(np.abs(v) for v in terms) + reach)
    if not (np.isfinite(sse).all() and np.isfinite(slack).all()):
        return None
    rows, cols = np.nonzero(sse - slack <= (sse + slack).min(axis=1, keepdims=True))
    # the shortlisted rates as the loop over rates computes them: per rate, rows of its own
    e, yr = es[cols], y[rows]
    c, d = _amounts(n, se[cols], see[cols], sy[rows], (yr * e).sum(axis=-1), floor, falling)
    exact = ((yr - (c[:, None] + d[:, None] * e)) ** 2).sum(axis=-1)
    if not np.isfinite(exact).all():
        return None
    order = np.lexsort((cols, exact, rows))  # by row, then error, then rate: the first least of each row
    first = order[np.r_[True, rows[order][1:] != rows[order][:-1]]]
    return c[first], d[first], np.asarray(rates, dtype=float)[cols[first]]


def fit_decay(steps: np.ndarray, values: np.ndarray, *, floor: float | None = None,
              falling: bool = False) -> Decay:
    """The exponential approach that fits ``values`` over ``steps`` best: the grid's best rate, refined
    by a golden-section search between its neighbours.

    >>> steps = np.arange(0.0, 200.0)
    >>> fit = fit_decay(steps, 0.05 + 1.5 * np.exp(-steps / 40.0), floor=0.0, falling=True)
    >>> round(fit.c, 4), round(fit.d, 4), round(float(fit.at(400.0)), 4)
    (0.05, 1.5, 0.0501)
    """
    t, y = np.asarray(steps, dtype=float), np.asarray(values, dtype=float)
    if len(t) < 3 or len(t) != len(y):
        raise ValueError(f"fit_decay needs at least 3 points of equal length, got {len(t)} and {len(y)}")
    return _fit_decay(t.tobytes(), y.tobytes(), floor, falling)


@lru_cache(maxsize=32)
def _fit_decay(t_bytes: bytes, y_bytes: bytes, floor: float | None, falling: bool) -> Decay:
    """:func:`fit_decay` by its inputs' bytes, kept: a run's forecasts fit the same entropy (its whole run, its
    first half) once for each series read against it."""
    t, y = np.frombuffer(t_bytes), np.frombuffer(y_bytes)
    first = fit_decays(t, y, floor=floor, falling=falling)[0]
    i = int(np.argmin(np.abs(RATES - first.k)))
    lo, hi = np.log(RATES[max(0, i - 1)]), np.log(RATES[min(len(RATES) - 1, i + 1)])
    tau = (t - first.start) / first.span
    sy = float(y.sum())
    buf = np.empty((4, len(y)))

    def sse(log_k: float) -> float:
        return _sse_at(buf, float(np.exp(log_k)), tau, y, sy, floor, falling)

    # golden section: each step keeps one probe (it is the other probe of the narrower bracket), so one new
    # solve a step instead of two
    ratio = (np.sqrt(5.0) - 1) / 2
    m1, m2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    f1, f2 = sse(m1), sse(m2)
    for _ in range(40):
        if f1 <= f2:
            hi, m2, f2 = m2, m1, f1
            m1 = hi - ratio * (hi - lo)
            f1 = sse(m1)
        else:
            lo, m1, f1 = m1, m2, f2
            m2 = lo + ratio * (hi - lo)
            f2 = sse(m2)
    k = float(np.exp((lo + hi) / 2))
    if sse(np.log(k)) > sse(np.log(first.k)):
        return first
    c, d, _ = _solve_one(np.exp(-k * tau), y, sy, floor, falling)
    return Decay(c, d, k, first.start, first.span)
