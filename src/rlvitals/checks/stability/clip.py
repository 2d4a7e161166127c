"""The clip fraction: above the healthy band, near 0 with several updates per batch, and the dual-clip
fraction on negative advantages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import signals
from ...signals import median
from .._base import Outcome, RunView
from .._schedule import updates_per_batch
from .._shared import REWARD_KEYS, _ends, _fmt_steps, _improving, _level_window, _rise_onset


def clipfrac_high(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """actor/pg_clipfrac above its band (docs/reading-rules.md#clipfrac-high: normal is about 0.1–0.3; held
    above 0.3, lower the learning rate or the batch size). A level above ``high`` for ``sustain`` steps warns and,
    at ``fail_level`` or for ``fail_steps`` steps, fails; a burst of ``burst_len`` steps warns."""
    s = view.series("actor/pg_clipfrac")
    if s is None:
        return []
    x = s.values
    values = {"metric": s.key, "high": p["high"], "max": float(np.max(x)), "max_step": s.step(int(np.argmax(x))),
              "median": float(median(x))}
    long = signals.sustained_above(x, p["high"], window=5, min_len=p["sustain"], max_gap=2)
    if long:
        start, end = max(long, key=lambda se: se[1] - se[0])
        level = float(median(x[start : end + 1]))
        steps = s.step(end) - s.step(start) + 1
        fail = level >= p["fail_level"] or steps >= p["fail_steps"]
        values |= {"step": s.step(start), "end_step": s.step(end), "steps": steps, "level": level}
        return [Outcome("fail" if fail else "warn", "fail" if fail else "warn", values, onset_step=s.step(start),
                        span=s.span(start, end), metrics=(s.key,),
                        evidence={"value": level, "peak": values["max"], "threshold": p["high"], "steps": steps})]
    bursts = signals.runs_of(x > p["high"], p["burst_len"], max_gap=1)
    if bursts:
        start, end = bursts[0]
        values |= {"step": s.step(start), "end_step": s.step(end), "count": len(bursts),
                   "peak": float(np.max(x[start : end + 1])), "steps": _fmt_steps(s, [b[0] for b in bursts])}
        peaks = tuple(s.step(a + int(np.argmax(x[a : b + 1]))) for a, b in bursts)  # each burst at its peak
        return [Outcome("warn", "burst", values, onset_step=s.step(start), span=s.span(start, bursts[-1][1]),
                        metrics=(s.key,), evidence={"peak": values["peak"], "threshold": p["high"],
                                                    "bursts": [s.span(a, b) for a, b in bursts]}, points=peaks)]
    return [Outcome("ok", "ok", values, metrics=(s.key,))]


def clipfrac_low(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """A clip fraction near 0 for most of the run (docs/reading-rules.md#clipfrac-low: near 0 for long, the
    policy may have converged or the learning rate is too small). With one update per batch (GRPO num_iterations 1, veRL
    ppo_epochs 1 on a single mini-batch) the ratio is 1 and the clip fraction ~0 by construction: never a finding. With
    several updates per batch (from the config) and a reward that does not improve, a note: the
    updates could be larger. A run whose config does not say is not judged."""
    s = view.series("actor/pg_clipfrac")
    if s is None:
        return []
    x, n = s.values, len(s)
    level = signals.rolling_level(x, _level_window(n))
    share = float(np.mean(level < p["low"]))
    updates, said = updates_per_batch(view.config)
    values = {"metric": s.key, "low": p["low"], "share": share, "median": float(median(x)),
              "updates": updates or 0, "config": said}
    if share < p["share"]:
        return [Outcome("ok", "ok", values, metrics=(s.key,))]
    if updates is None:
        return [Outcome("skipped", "no_config", values, metrics=(s.key,))]
    if updates == 1:
        return [Outcome("ok", "ok_one_update", values, metrics=(s.key,))]
    r = view.first(*REWARD_KEYS)
    if r is None:
        return [Outcome("skipped", "ok_no_reward", values, metrics=(s.key,))]
    rose, r0, r1 = _improving(r.values)
    values |= {"reward": r.key, "r_first": r0, "r_last": r1}
    if rose:
        return [Outcome("ok", "ok_learning", values, metrics=(s.key, r.key))]
    return [Outcome("note", "note", values, onset_step=s.step(0), span=s.span(0, n - 1), metrics=(s.key, r.key),
                    evidence={"value": values["median"], "threshold": p["low"], "share_below": share,
                              "updates_per_batch": updates, "reward_first": r0, "reward_last": r1})]


def clipfrac_lower(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """actor/pg_clipfrac_lower (veRL: dual-clip activations, ratio > clip_ratio_c on negative advantages —
    dual-clip PPO, Ye et al. 2020, arXiv 1912.09729; docs/reading-rules.md#clipfrac-lower) sustained above
    ``high``, or rising ``rise_factor``× over the run with a clear trend: the policy keeps pushing up tokens it
    was told to do less of."""
    s = view.series("actor/pg_clipfrac_lower")
    if s is None:
        return []
    x, n = s.values, len(s)
    first, last, floor = _ends(x, p["min_quanta"])
    values = {"metric": s.key, "high": p["high"], "first": first, "last": last, "max": float(np.max(x))}
    long = signals.sustained_above(x, p["high"], window=5, min_len=p["sustain"], max_gap=2)
    if long:
        start, end = long[0]
        values |= {"step": s.step(start), "end_step": s.step(end), "level": float(median(x[start : end + 1]))}
        return [Outcome("warn", "warn_high", values, onset_step=s.step(start), span=s.span(start, end),
                        metrics=(s.key,), evidence={"value": values["level"], "threshold": p["high"]})]
    factor = last / max(first, floor)
    if signals.trend(x) >= p["tau"] and factor >= p["rise_factor"] and last - first > floor:
        onset = _rise_onset(x, first, last, floor)
        values |= {"step": s.step(onset), "factor": factor}
        return [Outcome("warn", "warn_rising", values, onset_step=s.step(onset), span=s.span(onset, n - 1),
                        metrics=(s.key,), evidence={"baseline": first, "value": last, "ratio": factor,
                                                    "threshold": p["rise_factor"]})]
    return [Outcome("ok", "ok", values, metrics=(s.key,))]
