"""What the routes read of one served run besides its page: a metric's series over a step range, downsampled, and
its rollout groups with their texts."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .listing import Served
from .security import AccessError


def series_of(served: Served, key: str, start: float | None, end: float | None,
              buckets: int) -> dict[str, Any]:
    """One metric of a run between steps ``start`` and ``end`` (both kept), at most ``4 × buckets``
    points (:mod:`rlvitals.report.downsample`: a spike survives), as the report's chart trace."""
    from ..report.charts import trace

    assert served.run is not None
    if key not in served.run.metrics:
        raise AccessError(404, f"series {key!r}: run {served.id} logged no such metric; its metrics are "
                               f"listed in GET /api/runs/{served.id}")
    for name, bound in (("start", start), ("end", end)):
        if bound is not None and not math.isfinite(bound):  # NaN keeps nothing, yet would answer 200
            raise AccessError(400, f"series: {name}={bound} is not a step; expected a finite number")
    if start is not None and end is not None and start > end:
        raise AccessError(400, f"series: start={start} is after end={end}; expected start <= end")
    x, y = served.run.series(key, train_only=False)
    keep = np.ones(len(x), dtype=bool)
    if start is not None:
        keep &= x >= start
    if end is not None:
        keep &= x <= end
    return {"run": served.id, "version": served.version, "start": start, "end": end, "buckets": buckets,
            **trace(key, served.id, key, x[keep], y[keep], buckets)}


def rollout_groups_of(served: Served, step: int | None) -> dict[str, Any]:
    """The steps of ``served`` that have rollouts and, for ``step``, its groups with their texts (as
    the report lists them: the groups whose rewards stray furthest first) and how many it has."""
    from ..report.rollouts import group_count, step_groups

    found = served.rollouts if served.rollouts is not None and served.rollouts.rollouts is not None else None
    if found is None:
        raise AccessError(404, f"rollouts: run {served.id} has no rollout texts; start the server with "
                               "--rollouts DIR for its PATH (a veRL rollout dump folder, TRL completions …)")
    available = found.rollout_steps()
    if step is None:
        return {"step": None, "available": available, "groups": [], "total": 0}
    if step not in available:
        span = f"{available[0]}..{available[-1]}" if available else "none"
        raise AccessError(404, f"rollouts: no rollouts at step {step}; steps with rollouts: {span} "
                               f"({len(available)} steps)")
    table = found.table_at([step])  # one step read (again, from its shard when read shard by shard)
    return {"step": step, "available": available, "groups": step_groups(table, step),
            "total": group_count(table, step)}


__all__ = ["rollout_groups_of", "series_of"]
