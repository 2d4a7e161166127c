"""Exact sums of float64 columns: a mergeable state of a few integers per column, whatever the rows.

A mean over millions of prompt groups, computed shard by shard on several machines, must not depend on
how the groups were split or in which order the parts arrived. Float addition does (it rounds at every
step), so each value is kept exactly instead: a finite double is ``M · 2**(e - 53)`` with an integer
mantissa ``M`` (``numpy.frexp``), so ``M << (e + 1074)`` is an integer equal to the value times
``2**1127``, and integers add without rounding. The sum of a column is one Python integer; merging two
states adds integers; the mean is one correctly rounded division at the end. So the state is a few
numbers per column (not the rows), any sharding and any order give the same bits, and the mean is the
double nearest the exact mean (what ``math.fsum(values) / n`` gives too, up to that final rounding).

NaN is an undefined value and is left out (``counts`` are the values kept); infinities are counted apart.

>>> import numpy as np
>>> a = sums_of(np.array([[0.1], [0.2]])); b = sums_of(np.array([[0.3], [np.nan]]))
>>> means(add(a, b)), means(add(b, a))
([0.2], [0.2])
>>> 0.1 + 0.2 + 0.3 == 0.6000000000000001   # rounded at each addition, the plain mean is not 0.2
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["ExactSums", "add", "means", "sums_of", "zero"]

#: ``value * 2**SCALE`` is an integer for every finite double (the smallest subnormal is 2**-1074, and the
#: 53-bit mantissa adds 53 more bits below the exponent ``frexp`` gives)
SCALE = 1127
_HALF = 26  # mantissas are split in two halves of < 2**27, whose int64 sums cannot overflow below 2**36 rows


@dataclass(frozen=True)
class ExactSums:
    """Per column: the exact sum of its finite values times ``2**SCALE``, how many values are not NaN, and
    how many of them are +inf and -inf."""

    ints: tuple[int, ...]
    counts: tuple[int, ...]
    pinf: tuple[int, ...]
    ninf: tuple[int, ...]


def zero(columns: int) -> ExactSums:
    none = (0,) * columns
    return ExactSums(none, none, none, none)


#: bincount adds its weights in float64, exact while every partial sum stays below 2**53: a mantissa half is
#: below 2**27 in magnitude, so at most 2**25 rows (values of one column) go into one count
_CHUNK = 1 << 25


def _columns(values: np.ndarray, finite: np.ndarray) -> tuple[int, ...]:
    """Per column, the exact sum of its finite values times ``2**SCALE``: the mantissa halves counted per
    (column, exponent) by ``np.bincount`` — no sort, one pass over the matrix, integers add in any order —
    then each bin shifted into a Python integer."""
    rows, columns = (int(v) for v in values.shape)
    if not finite.any():
        return (0,) * columns
    m, e = np.frexp(np.where(finite, values, 0.0))  # a value left out adds 0
    low_e = int(e.min())
    span = int(e.max()) - low_e + 1
    bins = columns * span
    key = (e + (np.arange(columns, dtype=np.int64) * span - low_e)).ravel()
    whole = (m * float(1 << 53)).ravel()  # the mantissa, an integer below 2**53 held exactly in a double
    top = np.floor(whole * (1.0 / (1 << _HALF)))  # exact: a power-of-two scale, then floor
    low = whole - top * float(1 << _HALF)  # in [0, 2**26), exact
    hi, lo = np.zeros(bins, np.int64), np.zeros(bins, np.int64)
    for a in range(0, rows * columns, _CHUNK * columns):
        part = slice(a, a + _CHUNK * columns)
        hi += np.bincount(key[part], weights=top[part], minlength=bins).astype(np.int64)
        lo += np.bincount(key[part], weights=low[part], minlength=bins).astype(np.int64)
    used = np.flatnonzero(hi | lo)
    totals = [0] * columns
    for k, h, small in zip(used.tolist(), hi[used].tolist(), lo[used].tolist(), strict=True):
        c, ex = divmod(k, span)
        totals[c] += ((h << _HALF) + small) << (ex + low_e + 1074)
    return tuple(totals)


def sums_of(values: np.ndarray) -> ExactSums:
    """The state of a matrix of float64 values, one column per measure (rows: groups)."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"sums_of: expected a 2-d array of values, got shape {values.shape}")
    finite = np.isfinite(values)
    ints = _columns(values, finite)
    if finite.all():  # the usual case: no NaN to leave out, no infinity to count
        none = (0,) * int(values.shape[1])
        return ExactSums(ints, (int(values.shape[0]),) * int(values.shape[1]), none, none)
    counts = tuple(int(c) for c in (~np.isnan(values)).sum(axis=0))
    pinf = tuple(int(c) for c in (values == np.inf).sum(axis=0))
    ninf = tuple(int(c) for c in (values == -np.inf).sum(axis=0))
    return ExactSums(ints, counts, pinf, ninf)


def add(a: ExactSums, b: ExactSums) -> ExactSums:
    """The state of the rows of ``a`` and ``b`` together (commutative and associative, exactly)."""
    if len(a.ints) != len(b.ints):
        raise ValueError(f"cannot add sums of {len(a.ints)} and {len(b.ints)} columns")
    return ExactSums(*(tuple(x + y for x, y in zip(p, q, strict=True))
                       for p, q in ((a.ints, b.ints), (a.counts, b.counts), (a.pinf, b.pinf), (a.ninf, b.ninf))))


def means(s: ExactSums) -> list[float]:
    """Each column's mean, correctly rounded (NaN where the column has no value)."""
    out = []
    for total, n, up, down in zip(s.ints, s.counts, s.pinf, s.ninf, strict=True):
        if not n:
            out.append(math.nan)
        elif up or down:
            out.append(math.nan if up and down else math.inf if up else -math.inf)
        else:
            out.append(total / (n << SCALE))
    return out
