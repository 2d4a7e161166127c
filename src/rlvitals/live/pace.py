"""How often a live reader diagnoses a growing run: one throttle for ``watch``, ``serve`` and the ``Monitor``.

A diagnosis of a long run costs real time, and a log that grows every second would have it diagnosed without
end. Each reader asks :class:`Pace` whether a run (a key: a log, a log's tail pass, a monitored loop) is due,
and tells it what the last diagnosis cost: the next one comes no sooner than ``max(floor, gap × cost)`` after
it. ``gap`` bounds the share of a core the diagnosing takes (``1 / (1 + gap)``) however long the run gets;
``floor`` is a least wait between two diagnoses. The times are the caller's clock (injected in tests), the
cost its timer: a test's timer that stands still never throttles.

>>> pace = Pace(floor=1.0, gap=2.0)
>>> pace.due("run.log", 0.0)
True
>>> pace.spent("run.log", 10.0, cost=3.0)
>>> pace.due("run.log", 15.0), pace.due("run.log", 16.0), pace.wait("run.log", 12.0)
(False, True, 4.0)
"""

from __future__ import annotations

import math
from collections.abc import Hashable

__all__ = ["Pace"]


class Pace:
    """When each key may be diagnosed again: no sooner than ``max(floor, gap × cost)`` after the last time."""

    def __init__(self, floor: float = 0.0, gap: float = 0.0) -> None:
        if floor < 0 or gap < 0:
            raise ValueError(f"Pace(floor={floor}, gap={gap}): expected floor >= 0 seconds and gap >= 0")
        self.floor, self.gap = floor, gap
        self._next: dict[Hashable, float] = {}
        self._cost: dict[Hashable, float] = {}

    def due(self, key: Hashable, now: float) -> bool:
        """Whether ``key`` may be diagnosed at ``now`` (never diagnosed: yes)."""
        return now >= self._next.get(key, -math.inf)

    def wait(self, key: Hashable, now: float) -> float:
        """Seconds from ``now`` until ``key`` is due (0 when it is)."""
        return max(self._next.get(key, now) - now, 0.0)

    def spent(self, key: Hashable, at: float, cost: float) -> None:
        """``key`` was diagnosed, the wait counting from ``at``, and it cost ``cost`` seconds."""
        self._cost[key] = cost
        self._next[key] = at + max(self.floor, self.gap * cost)

    def cost(self, key: Hashable) -> float | None:
        """What the last diagnosis of ``key`` cost (None before one)."""
        return self._cost.get(key)
