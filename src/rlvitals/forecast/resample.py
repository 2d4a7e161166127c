"""The law's bootstrap: least-squares lines over moving-block resamples of a run's pairs, and quantiles over them.

A resample is ``n`` pairs gathered from runs of ``block`` consecutive steps; the plain way to fit every resample
gathers them all (replicates × n) and fits each row (:func:`line_fits`). :class:`Resamples` fits them from
their blocks instead: each block's means and sums of squared deviations are taken once and a resample's are
pooled from its blocks' (the two-pass form, so nothing cancels), a fraction of the work. Pooled and gathered
fits differ by rounding only (``SLACK`` of the line's own scale bounds it with a wide margin), and
:func:`exact_quantiles` uses that bound: it gathers and fits in the plain way only the few resamples that can
land on a quantile, so the quantiles are the plain fits' quantiles to the last bit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["Resamples", "block_indices", "block_starts", "exact_quantiles", "line_fits", "seeded_starts"]

#: the bound on how far a pooled fit's slope may be from the gathered fit's, in units of the slope's own scale
#: ``sqrt(Σ(y − ȳ)² / Σ(x − x̄)²)`` (and of the largest |y| for the intercept): both are within a few units of
#: rounding (~1e-15) of the exact line, so 1e-9 leaves a margin of 10⁵
SLACK = 1e-9
#: a resample whose x (or y) spreads less than this share of the largest |x| (|y|) is fitted the plain way: so
#: little spread leaves the slope (or its scale) at the mercy of how the means were rounded
SPREAD_MIN = 1e-6


def line_fits(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares ``y = b − a·x`` along the last axis of ``x`` and ``y`` (one line per row):
    ``(a, b)``. A row whose ``x`` does not vary has no slope: ``a`` is 0 and ``b`` the mean of ``y``."""
    xm, ym = x.mean(axis=-1, keepdims=True), y.mean(axis=-1, keepdims=True)
    sxx = ((x - xm) ** 2).sum(axis=-1)
    sxy = ((x - xm) * (y - ym)).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(sxx > 0, sxy / np.where(sxx > 0, sxx, 1.0), 0.0)
    a = -slope
    b = ym[..., 0] + a * xm[..., 0]
    return a, b


def block_indices(n: int, replicates: int, rng: np.random.Generator, block: int | None = None) -> np.ndarray:
    """Moving-block bootstrap resamples of ``range(n)``: ``replicates`` rows of ``n`` indices made of runs
    of ``block`` consecutive indices (``round(n ** (1/3))`` by default), so each replicate keeps the
    short-range correlation of neighbouring steps.

    >>> rows = block_indices(10, 3, np.random.default_rng(0), block=5)
    >>> rows.shape, bool(((np.diff(rows, axis=1) == 1) | (np.arange(1, 10) % 5 == 0)).all())
    ((3, 10), True)
    """
    starts, block = block_starts(n, replicates, rng, block)
    return _rows(starts, block, n)


def block_starts(n: int, replicates: int, rng: np.random.Generator,
                 block: int | None = None) -> tuple[np.ndarray, int]:
    """The draws behind :func:`block_indices`: each replicate's block starts (``replicates`` × ``ceil(n / block)``;
    the last block is cut to what is left of ``n``) and the block length."""
    block = max(1, min(n, block if block is not None else round(n ** (1 / 3))))
    starts: np.ndarray = rng.integers(0, n - block + 1, size=(replicates, -(-n // block)))
    return starts, block


@lru_cache(maxsize=16)
def seeded_starts(n: int, replicates: int, seed: int) -> tuple[np.ndarray, int]:
    """:func:`block_starts` from a generator seeded with ``seed``, kept (read-only): a run's series read against
    the same entropy often have the same length, and so do the runs of a sweep."""
    starts, block = block_starts(n, replicates, np.random.default_rng(seed))
    starts.setflags(write=False)
    return starts, block


def _rows(starts: np.ndarray, block: int, n: int) -> np.ndarray:
    out: np.ndarray = (starts[:, :, None] + np.arange(block)).reshape(len(starts), -1)[:, :n]
    return out


@dataclass(frozen=True)
class Resamples:
    """The moving-block resamples of the pairs ``(x, y)``: ``starts`` and ``block`` as :func:`block_starts`
    draws them (a row of block starts per replicate).

    >>> x, y = np.exp(np.linspace(1.0, 0.2, 30)), np.linspace(0.1, 0.6, 30) ** 2
    >>> res = Resamples(x, y, *block_starts(30, 5, np.random.default_rng(0)))
    >>> plain = np.column_stack(line_fits(x[res.rows()], y[res.rows()]))
    >>> bool(np.allclose(res.fits()[0], plain, rtol=1e-12, atol=0))
    True
    """

    x: np.ndarray
    y: np.ndarray
    starts: np.ndarray
    block: int

    def rows(self, which: np.ndarray | None = None) -> np.ndarray:
        """The indices of the resamples ``which`` (all by default): a row of ``n`` per resample."""
        return _rows(self.starts if which is None else self.starts[which], self.block, len(self.x))

    def exact(self, which: np.ndarray) -> np.ndarray:
        """The plain fits (:func:`line_fits` of the gathered pairs) of the resamples ``which``: a row of
        ``(a, b)`` each, to the bit what fitting every resample at once gives them."""
        rows = self.rows(which)
        return np.column_stack(line_fits(self.x[rows], self.y[rows]))

    def fits(self) -> tuple[np.ndarray, float, float]:
        """Every resample's ``(a, b)`` (a row each) pooled from its blocks — those whose x or y hardly spreads
        fitted the plain way — and the bounds on how far any pooled ``a`` and ``b`` may be from the plain fit's."""
        n, block = len(self.x), self.block
        last = n - (self.starts.shape[1] - 1) * block  # the length of each resample's cut-off last block
        # each statistic of each resample's blocks (statistic, resample, block), the cut-off last one apart
        mx, my, sxx, syy, sxy = _blocks(self.x, self.y, block)[:, self.starts[:, :-1]]
        mx_cut, my_cut, sxx_cut, syy_cut, sxy_cut = _blocks(self.x, self.y, last)[:, self.starts[:, -1]]
        xm = (mx.sum(axis=-1) * block + mx_cut * last) / n
        ym = (my.sum(axis=-1) * block + my_cut * last) / n
        dx, dx_cut = mx - xm[:, None], mx_cut - xm
        dy, dy_cut = my - ym[:, None], my_cut - ym
        sxx = sxx.sum(axis=-1) + sxx_cut + (dx * dx).sum(axis=-1) * block + dx_cut * dx_cut * last
        syy = syy.sum(axis=-1) + syy_cut + (dy * dy).sum(axis=-1) * block + dy_cut * dy_cut * last
        sxy = sxy.sum(axis=-1) + sxy_cut + (dx * dy).sum(axis=-1) * block + dx_cut * dy_cut * last
        top_x, top_y = float(np.abs(self.x).max()), float(np.abs(self.y).max())
        sure = (sxx > n * (SPREAD_MIN * top_x) ** 2) & (syy > n * (SPREAD_MIN * top_y) ** 2)
        with np.errstate(invalid="ignore", divide="ignore"):
            a = -np.where(sure, sxy / np.where(sure, sxx, 1.0), 0.0)
            scale = np.sqrt(np.where(sure, syy / np.where(sure, sxx, 1.0), 0.0))
        out = np.column_stack([a, ym + a * xm])
        unsure = np.flatnonzero(~sure)
        if len(unsure):
            out[unsure] = self.exact(unsure)
        slack_a = SLACK * float(scale.max())
        return out, slack_a, slack_a * top_x + SLACK * top_y


def _blocks(x: np.ndarray, y: np.ndarray, width: int) -> np.ndarray:
    """For every run of ``width`` consecutive pairs (a column per start): the means of ``x`` and ``y``, and the sums
    of ``(x − x̄)²``, ``(y − ȳ)²`` and ``(x − x̄)(y − ȳ)``."""
    wx = np.lib.stride_tricks.sliding_window_view(x, width)
    wy = np.lib.stride_tricks.sliding_window_view(y, width)
    mx, my = wx.mean(axis=-1), wy.mean(axis=-1)
    dx, dy = wx - mx[:, None], wy - my[:, None]
    return np.stack([mx, my, (dx * dx).sum(axis=-1), (dy * dy).sum(axis=-1), (dx * dy).sum(axis=-1)])


def exact_quantiles(fast: np.ndarray, qs: Sequence[float], exact: Callable[[np.ndarray], np.ndarray],
                    slack: np.ndarray | float) -> np.ndarray:
    """``np.quantile(values, qs, axis=0)`` of values (a row per resample, a column per quantity) that ``exact``
    computes for the rows it is given, from ``fast``: the same values to within ``slack`` (per column). Only the
    rows that can take the ranks a quantile reads are computed exactly, and outside them no exact value can
    cross the fast ones, so the result is the exact values' quantiles to the last bit.

    >>> exact = np.arange(10.0)[:, None] * np.array([[1.0, -2.0]])
    >>> got = exact_quantiles(exact + 1e-12, [0.1, 0.9], lambda rows: exact[rows], 1e-11)
    >>> bool((got == np.quantile(exact, [0.1, 0.9], axis=0)).all())
    True
    """
    r = fast.shape[0]
    at = np.asarray(qs, dtype=float) * (r - 1)
    # the ranks np.quantile interpolates between; one more on a side where a rounding of the position could cross
    # to the next rank
    below = np.floor(at)
    low = np.maximum(below - (at - below < 1e-6), 0).astype(int)
    high = np.minimum(below + 1 + (below + 1 - at < 1e-6), r - 1).astype(int)
    ranked = np.sort(fast, axis=0)
    # an exact value lies within slack of its fast one, and so does each rank's exact value of the fast one's:
    # only a row within twice the slack of the ranks read can take one of them
    reach = 2 * np.asarray(slack, dtype=float)
    lo, hi = ranked[low] - reach, ranked[high] + reach
    near = ((fast[None] >= lo[:, None]) & (fast[None] <= hi[:, None])).any(axis=(0, 2))
    which = np.flatnonzero(near | ~np.isfinite(fast).all(axis=1))
    values = fast.copy()
    if len(which):
        values[which] = exact(which)
    out: np.ndarray = np.quantile(values, qs, axis=0)
    return out
