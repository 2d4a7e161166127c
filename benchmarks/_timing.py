"""Timing shared by the benchmark scripts."""

from __future__ import annotations

import time
from collections.abc import Callable


def best(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` runs of ``fn``, in seconds (the least disturbed by other load)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)
