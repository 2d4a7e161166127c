"""W&B's own clock on a history row, for the readers of W&B runs and of rows exported from W&B.

W&B writes two clocks on every history row: ``_timestamp`` (seconds since the Unix epoch, when
``wandb.log`` was called) and ``_runtime`` (seconds since ``wandb.init``). ``_timestamp`` is taken
when a run's first timed row has it, so the launches of one run line up on one clock, and the run
started at ``_timestamp - _runtime``; a row export that kept only ``_runtime`` gives elapsed seconds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from .record import SourceMeta

#: rows looked at for a clock before a log is taken to have none
LOOK = 1000


def _seconds(value: object) -> float | None:
    if type(value) is float or (isinstance(value, int) and not isinstance(value, bool)):
        number = float(value)
        return number if math.isfinite(number) else None
    return None


class WandbClock:
    """The wall time of each W&B row (:meth:`wall`), saying in ``meta`` which clock it is.

    Example:
        >>> meta = SourceMeta("jsonl")
        >>> WandbClock(meta).wall({"_timestamp": 1700000100.0, "_runtime": 100.0, "loss": 1.0})
        1700000100.0
        >>> meta.clock, meta.started
        ('W&B _timestamp', 1700000000.0)
    """

    __slots__ = ("key", "looked", "meta")

    def __init__(self, meta: SourceMeta) -> None:
        self.meta = meta
        #: the clock's key once a row had one; "" once :data:`LOOK` rows had none (not a W&B log)
        self.key: str | None = None
        self.looked = 0

    @classmethod
    def settled(cls, meta: SourceMeta, key: str) -> WandbClock:
        """A clock whose key a read of the whole file settled on already (``""``: none): a piece of the
        file reads its rows' times by it and says nothing in ``meta``."""
        clock = cls(meta)
        clock.key = key
        return clock

    def wall(self, row: Mapping[str, object]) -> float | None:
        """The row's time on the run's clock; None when the row carries none."""
        key = self.key
        if key:
            return _seconds(row.get(key))
        if key is None:
            return self._first(row)
        return None

    def _first(self, row: Mapping[str, object]) -> float | None:
        stamp, runtime = _seconds(row.get("_timestamp")), _seconds(row.get("_runtime"))
        meta = self.meta
        if stamp is not None:
            self.key = "_timestamp"
            started = stamp - runtime if runtime is not None else None
            if meta.clock == "W&B _timestamp" and meta.started is not None:  # an earlier file of the run
                started = meta.started if started is None else min(started, meta.started)
            meta.clock, meta.clock_epoch, meta.started = "W&B _timestamp", True, started
            return stamp
        if runtime is not None:
            self.key = "_runtime"
            meta.clock, meta.clock_epoch, meta.started = "W&B _runtime", False, None
            return runtime
        self.looked += 1
        if self.looked >= LOOK:
            self.key = ""
        return None
