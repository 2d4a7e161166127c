"""A share of the batch that should stay near 0 — responses cut at the length limit, prompts cut, aborted
samples — read as a sustained level, and told apart from the untrained start a policy learns out of."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import signals
from ..signals import median
from ._base import VERDICT_STATUSES, Outcome, Series
from ._shared import held_from

__all__ = ["share_check"]


def share_check(s: Series, p: Mapping[str, Any], limit: Any = None, prefix: str = "",
                 learns: bool = False) -> list[Outcome]:
    """A share that should stay near 0 (truncation, aborted samples), read as a sustained
    level: warn at ``warn``, fail at ``fail`` for ``min_steps`` steps, from the first such stretch to the
    end of the last, dated at the first step that shows it for good (:func:`held_from`). Templates are
    ``{prefix}ok|warn|fail``; with ``learns`` (a share the policy's own outputs make), a stretch the run
    started in and left for good before half way is the untrained start the policy learnt out of (``early``),
    and one it started in and is leaving, falling to the end (``receding``): notes."""
    level = signals.rolling_level(s.values, p["window"])
    above = signals.sustained_above(s.values, p["warn"], window=p["window"], min_len=p["min_steps"])
    if learns and above and above[0][0] == 0:
        a, b = above[0][0], above[-1][1]
        b = int(np.flatnonzero(s.values[: b + 1] >= p["warn"])[-1])  # the last step at the level, not the level's
        if b < len(s) // 2:
            return [_early_share(s, held_from(s.values >= p["warn"], a, b), b, p, limit)]
        if _receding(s.values, p):
            return [_early_share(s, held_from(s.values >= p["warn"], a, b), b, p, limit, "receding")]
    for status in VERDICT_STATUSES:
        found = signals.sustained_above(s.values, p[status], window=p["window"], min_len=p["min_steps"])
        if found:
            # from the first stretch above the level to the end of the last: a share that comes back above it
            # is the same problem going on (the level quoted is the share's median over that whole span)
            a, b = found[0][0], found[-1][1]
            a = held_from(s.values >= p[status], a, found[0][1])  # the first stretch's first step that holds it
            peak = float(level[a : b + 1].max())
            values = {"metric": s.key, "onset": s.step(a), "end": s.step(b), "steps": s.step(b) - s.step(a) + 1,
                      "level": float(median(s.values[a : b + 1])), "peak": peak, "threshold": p[status],
                      "limit": limit if limit is not None else "?"}
            return [Outcome(status, prefix + status, values, s.step(a), (s.step(a), s.step(b)), (s.key,),
                            {"value": values["level"], "peak": peak, "threshold": p[status], "limit": limit})]
    values = {"metric": s.key, "median": float(median(s.values)), "max_level": float(level.max()),
              "warn": p["warn"]}
    return [Outcome("ok", prefix + "ok", values, metrics=(s.key,))]


def _receding(x: np.ndarray, p: Mapping[str, Any]) -> bool:
    """High from the run's start and falling for good: the last window's median at most half the first's and
    below the fail level, the second half not climbing (Kendall trend ≤ 0)."""
    w = min(p["window"], max(1, len(x) // 3))
    first, last = float(median(x[:w])), float(median(x[-w:]))
    return last <= first / 2 and last < p["fail"] and signals.trend(x[len(x) // 2:]) <= 0


def _early_share(s: Series, a: int, b: int, p: Mapping[str, Any], limit: Any, template: str = "early") -> Outcome:
    """The share high at the run's start, left for good (``early``) or falling to the end (``receding``): the
    untrained policy's answers ran long, and it learnt (or is learning) to stop."""
    w = min(p["window"], max(1, len(s) // 3))
    after = s.values[b + 1:] if template == "early" else s.values[-w:]
    values = {"metric": s.key, "onset": s.step(a), "end": s.step(b), "level": float(median(s.values[a: b + 1])),
              "start": float(median(s.values[:w])), "after": float(median(after)), "threshold": p["warn"],
              "window": w, "limit": limit if limit is not None else "?"}
    return Outcome("note", template, values, s.step(a), (s.step(a), s.step(b)), (s.key,),
                   {"value": values["level"], "after": values["after"], "threshold": p["warn"], "limit": limit})
