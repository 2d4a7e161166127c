"""Timing shared by the benchmark scripts."""

from __future__ import annotations

import subprocess
import sys
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


def child(cmd: list[str]) -> tuple[float, float]:
    """Wall time and peak RSS (MiB) of the process ``cmd``, measured by a wrapper process of its own
    (``ru_maxrss`` of its only child), so one measurement's peak is never another's."""
    code = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
            "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
            "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)")
    out = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True, check=True).stdout
    took, peak = out.split()
    return float(took), float(peak)
