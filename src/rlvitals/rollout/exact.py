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


#: the exponents ``frexp`` gives lie in [-1073, 1024]: offset into [975, 3072], below the column stride
_E_OFFSET, _STRIDE = 2048, 4096


def _columns(values: np.ndarray, finite: np.ndarray) -> tuple[int, ...]:
    """Per column, the exact sum of its finite values times ``2**SCALE``: the mantissas summed in int64 per
    (column, exponent) — one sort of the whole matrix, not one per column — then shifted into Python integers."""
    columns = int(values.shape[1])
    x = values[finite]
    if not x.size:
        return (0,) * columns
    col = np.broadcast_to(np.arange(columns, dtype=np.int64), values.shape)[finite]
    m, e = np.frexp(x)
    mant = (m * float(1 << 53)).astype(np.int64)  # exact: m carries 53 bits
    key = col * _STRIDE + (e.astype(np.int64) + _E_OFFSET)
    order = np.argsort(key)  # any order: integers add exactly
    key, mant = key[order], mant[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    hi = np.add.reduceat(mant >> _HALF, starts)
    lo = np.add.reduceat(mant & ((1 << _HALF) - 1), starts)
    totals = [0] * columns
    for k, h, low in zip(key[starts].tolist(), hi.tolist(), lo.tolist(), strict=True):
        c, ex = divmod(k, _STRIDE)
        totals[c] += ((h << _HALF) + low) << (ex - _E_OFFSET + 1074)
    return tuple(totals)


def sums_of(values: np.ndarray) -> ExactSums:
    """The state of a matrix of float64 values, one column per measure (rows: groups)."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"sums_of: expected a 2-d array of values, got shape {values.shape}")
    finite = np.isfinite(values)
    ints = _columns(values, finite)
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
