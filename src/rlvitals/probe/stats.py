"""The statistics of the probes: rates with Wilson intervals, the early-answering curve and its area,
and percentile-bootstrap intervals over rollouts (seeded, so a re-run prints the same interval).

>>> wilson(0, 10)[0], round(wilson(5, 10)[1], 3)
(0.0, 0.763)
>>> area_over_curve({0.0: 0.0, 0.5: 0.5, 1.0: 1.0})
0.5
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

__all__ = ["Z95", "area_over_curve", "bootstrap", "wilson"]

#: the normal quantile of a two-sided 95 % interval
Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a rate of ``k`` in ``n`` (``(0, 1)`` for ``n == 0``)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def area_over_curve(curve: Mapping[float, float]) -> float:
    """1 − the trapezoid area under "share of answers unchanged" over the fraction of the reasoning shown
    (the fractions given, 1.0 included: there every answer is its own reference)."""
    xs = sorted(curve)
    ys = [curve[x] for x in xs]
    area = sum((xs[i + 1] - xs[i]) * (ys[i] + ys[i + 1]) / 2 for i in range(len(xs) - 1))
    return 1.0 - area


def bootstrap(rows: Sequence[object], statistic: Callable[[Sequence[object]], float | None], *,
              resamples: int = 1000, seed: int = 0) -> tuple[float, float] | None:
    """The 2.5 % and 97.5 % percentiles of ``statistic`` over ``resamples`` resamples of ``rows`` with
    replacement; None when there are no rows or the statistic is undefined on every resample."""
    if not rows:
        return None
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        picked = [rows[i] for i in rng.integers(0, len(rows), len(rows))]
        v = statistic(picked)
        if v is not None:
            values.append(v)
    if not values:
        return None
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)
