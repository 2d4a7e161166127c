"""Overlapping windows over a run and the rise across one, in units of the noise: shared by the
policy-gradient loss climb (:mod:`.loss`) and the critic lag (:mod:`.critic`)."""

from __future__ import annotations

import numpy as np

from ...signals import median


def _windows(n: int, width: int) -> list[tuple[int, int]]:
    """Half-open windows of ``width`` values, a quarter window apart, the last one flush with the end."""
    if n < width:
        return []
    starts = list(range(0, n - width + 1, max(1, width // 4)))
    if starts[-1] != n - width:
        starts.append(n - width)
    return [(a, a + width) for a in starts]


def _rise(x: np.ndarray, sd: float, in_se: bool = False) -> float:
    """Median of the last quarter minus median of the first quarter, in units of ``sd`` (or, with
    ``in_se``, in standard errors of that difference for noise ``sd``)."""
    q = max(2, len(x) // 4)
    unit = sd * (1.2533 * np.sqrt(2.0 / q) if in_se else 1.0)
    return float(median(x[-q:]) - median(x[:q])) / max(unit, 1e-300)
