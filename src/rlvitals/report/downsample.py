"""Downsampling that never hides a spike: per pixel bucket keep the first, lowest, highest and last point.

A chart a thousand pixels wide cannot show 200k steps; averaging them would erase exactly the
single-step grad-norm spike a reader is looking for. So the x range is cut into ``buckets`` equal
bins (one per pixel column, roughly) and each bin keeps at most four of its points, in x order:
its first and last (the line enters and leaves the bin where it really does), its minimum and its
maximum. ``+inf``/``-inf`` take part in the extremes, so they survive as extremes; a ``NaN`` cannot
be compared, so a bin that holds one keeps its first NaN in place of its first point, and the chart
draws it as a marker. :func:`nonfinite` counts what was not a number over the whole series, so the
report can say it in words as well.

Pure numpy; nothing here knows about runs or charts.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
import numpy.typing as npt

from ..errors import RlvitalsError
from ..words import Words

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class NonFinite(TypedDict):
    """How many values of a series were not finite, and the x of the first one (None when none)."""

    nan: int
    posinf: int
    neginf: int
    first: float | None


def _check(x: np.ndarray, y: np.ndarray, buckets: int) -> None:
    if x.ndim != 1 or y.shape != x.shape:
        raise RlvitalsError(Words(f"downsample: x has shape {x.shape} and y {y.shape}; expected two 1-D arrays "
                                  "of the same length (one y per x)",
                                  f"downsample：x 的形状是 {x.shape}，y 是 {y.shape}；"
                                  "应为两个等长的一维数组（每个 x 一个 y）"))
    if buckets < 1:
        raise RlvitalsError(Words(f"downsample: buckets={buckets}; expected at least 1 (about one per pixel column)",
                                  f"downsample：buckets={buckets}；至少应为 1（大约每列像素一个）"))
    if len(x) and not np.all(np.isfinite(x)):
        raise RlvitalsError(Words("downsample: x holds NaN or inf; every x must be a finite number (a step)",
                                  "downsample：x 含有 NaN 或 inf；每个 x 都必须是有限的数（一个步）"))
    if len(x) > 1 and not np.all(np.diff(x) > 0):
        bad = int(np.flatnonzero(np.diff(x) <= 0)[0])
        raise RlvitalsError(Words(f"downsample: x is not strictly increasing at index {bad + 1} "
                                  f"({float(x[bad])} then {float(x[bad + 1])}); sort by x and drop repeated x first",
                                  f"downsample：x 在下标 {bad + 1} 处不是严格递增（{float(x[bad])} 之后是 "
                                  f"{float(x[bad + 1])}）；请先按 x 排序并去掉重复的 x"))


def _bucket_ids(x: np.ndarray, buckets: int) -> IntArray:
    """The bin of each x; equal-width bins over [x[0], x[-1]], the last one closed."""
    span = float(x[-1] - x[0])
    ids: IntArray = np.minimum(np.floor((x - x[0]) / span * buckets).astype(np.int64), buckets - 1)
    return ids


def _first_per_bucket(ids: IntArray, where: npt.NDArray[np.bool_], n_buckets: int) -> IntArray:
    """Index of the first True of ``where`` in each bucket, -1 where a bucket has none."""
    out = np.full(n_buckets, -1, dtype=np.int64)
    hits = np.flatnonzero(where)
    if len(hits):
        # reversed assignment: for a repeated bucket id the last write wins, i.e. the first hit
        out[ids[hits][::-1]] = hits[::-1]
    return out


def _extreme_per_bucket(ids: IntArray, y: FloatArray, starts: IntArray, n_buckets: int,
                        use: npt.NDArray[np.bool_], lowest: bool) -> IntArray:
    """Index of the (first) minimum or maximum non-NaN y in each bucket, -1 where a bucket has none."""
    fill = np.inf if lowest else -np.inf
    vals = np.where(use, y, fill)
    reduce = np.minimum.reduceat if lowest else np.maximum.reduceat
    per = np.full(n_buckets, fill)
    per[ids[starts]] = reduce(vals, starts)
    hit = use & (vals == per[ids])
    return _first_per_bucket(ids, hit, n_buckets)


def downsample_index(x: np.ndarray, y: np.ndarray, buckets: int) -> IntArray:
    """Indices (ascending) of the points :func:`downsample` keeps; every index when the series is short.

    Use it to take the same steps from several series (a stacked chart needs one x for all).

    Example:
        >>> import numpy as np
        >>> x = np.arange(10.0); y = np.zeros(10); y[6] = 9.0
        >>> downsample_index(x, y, 1).tolist()
        [0, 6, 9]
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    _check(x, y, buckets)
    n = len(x)
    if n <= 4 * buckets:
        return np.arange(n, dtype=np.int64)
    ids = _bucket_ids(x, buckets)
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    ends = np.r_[starts[1:], n] - 1
    present = ids[starts]
    first = np.full(buckets, -1, dtype=np.int64)
    last = np.full(buckets, -1, dtype=np.int64)
    first[present], last[present] = starts, ends
    isnan = np.isnan(y)
    numeric = ~isnan
    lo = _extreme_per_bucket(ids, y, starts, buckets, numeric, lowest=True)
    hi = _extreme_per_bucket(ids, y, starts, buckets, numeric, lowest=False)
    first_nan = _first_per_bucket(ids, isnan, buckets)
    # a bin with a NaN that none of its kept points shows gives the NaN the "first" slot
    shown = isnan[np.maximum(first, 0)] | isnan[np.maximum(last, 0)]
    first = np.where((first_nan >= 0) & ~shown, first_nan, first)
    keep = np.concatenate([first, lo, hi, last])
    keep = np.unique(keep[keep >= 0])
    return keep.astype(np.int64)


def downsample(x: np.ndarray, y: np.ndarray, buckets: int) -> tuple[FloatArray, FloatArray]:
    """At most ``4 * buckets`` points of ``(x, y)`` that keep each x-bin's first, lowest, highest and last
    point (NaN kept as a point, ``±inf`` as extremes); ``(x, y)`` unchanged when already that short.

    ``x`` must be strictly increasing (steps). The result's x is strictly increasing.

    Example:
        >>> import numpy as np
        >>> x = np.arange(200_000.0); y = np.ones_like(x); y[123_457] = 50.0
        >>> xs, ys = downsample(x, y, 500)
        >>> len(xs) <= 2000, float(ys.max()), int(xs[ys.argmax()])
        (True, 50.0, 123457)
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    keep = downsample_index(x, y, buckets)
    return x[keep], y[keep]


def nonfinite(x: np.ndarray, y: np.ndarray) -> NonFinite:
    """Counts of NaN, +inf and -inf in ``y`` and the x of the first of them, so a chart can say
    "3 NaN since step 1201" instead of showing a silent gap.

    Example:
        >>> import numpy as np
        >>> nonfinite(np.array([1, 2, 3]), np.array([0.5, np.nan, np.inf]))
        {'nan': 1, 'posinf': 1, 'neginf': 0, 'first': 2.0}
    """
    y = np.asarray(y, dtype=np.float64)
    bad = ~np.isfinite(y)
    first = float(np.asarray(x)[np.argmax(bad)]) if bad.any() else None
    return {"nan": int(np.isnan(y).sum()), "posinf": int(np.isposinf(y).sum()),
            "neginf": int(np.isneginf(y).sum()), "first": first}
