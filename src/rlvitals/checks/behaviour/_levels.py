"""Levels of a series at its ends (medians of its first and last values), shared by the entropy, length and
agent checks."""

from __future__ import annotations

import numpy as np

from ...signals import median


def _head_tail(x: np.ndarray, share: float = 0.1) -> tuple[float, float]:
    n = max(1, min(len(x) // 2, max(5, int(len(x) * share))))
    return float(median(x[:n])), float(median(x[-n:]))


def _tail_level(x: np.ndarray) -> float:
    return float(median(x[-max(5, len(x) // 10):]))
