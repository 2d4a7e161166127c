"""Multi-turn agents: the number of turns collapsing or surging, and tool calls at the limit or spread wide."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import signals
from ...signals import median
from .._base import Outcome, RunView, Series
from .._reward import severity
from .._share import share_check
from .._shared import held_from
from ._levels import _head_tail, _tail_level


def turns_collapse(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """An agent that stops using its tools: the mean number of turns falls from its start to the floor of
    the run (its logged minimum, else the lowest mean) and stays there (docs/reading-rules.md#turns-collapse:
    tool calls are the agent's direct proxy; a count collapsing to the bare question-and-answer exchange is the policy
    giving up on the tools). Lost ``drop`` of the way down and ending within ``near`` of the floor warns.

    The start is the run's first twentieth read as its median, or as the highest three-step level in it when that
    is higher: an agent whose tools went within its first steps (a KL in the reward it escapes by answering at
    once) is measured from where it began, not from a window that already holds the fall."""
    s = view.series("num_turns/mean")
    if s is None:
        return []
    x, n = s.values, len(s)
    head = max(3, n // 20)
    early = float(np.max(signals.rolling_level(x[:head], 3)))
    start, late = max(float(median(x[:head])), early), float(median(x[-head:]))
    lows = view.series("num_turns/min")
    floor = min(float(median(lows.values)) if lows is not None else float(np.min(x)), late)
    values: dict[str, Any] = {"metric": s.key, "first": start, "last": late, "floor": floor}
    room = start - floor
    if room <= 0 or (start - late) < p["drop"] * room or (late - floor) > p["near"] * room or start < p["ratio"] * late:
        return [Outcome("ok", "ok", values, metrics=(s.key,))]
    # a third of the way down: the fall is under way — dated at the first step that shows it and goes on showing
    # it (a rolling level crosses a step or two early)
    onset = held_from(x <= start - (start - late) / 3, 0, n - 1)
    values["onset"] = s.step(onset)
    return [Outcome("warn", "warn", values, s.step(onset), (s.step(onset), s.step(n - 1)), (s.key,),
                    {"baseline": start, "value": late, "floor": floor, "threshold": p["drop"]})]


def turns_surge(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """num_turns/max jumping to ``ratio``× its recent median (docs/reading-rules.md#turns-surge: a sudden
    jump of the most turns suggests some episodes are stuck in a loop). One surge warns; ``fail_count`` surges or a
    sustained jump fail."""
    s = view.series("num_turns/max")
    if s is None:
        return []
    x = s.values
    shift = signals.level_shift(x, window=p["window"], k=p["k"], direction="up")
    if shift is not None and shift.value >= p["ratio"] * shift.baseline > 0:
        onset = s.step(shift.start)
        ratio = shift.value / shift.baseline
        shifted = {"onset": onset, "before": shift.baseline, "after": shift.value, "ratio": ratio}
        return [Outcome("fail", "shift", shifted, onset, (onset, s.step(shift.end)), (s.key,),
                        {"baseline": shift.baseline, "value": shift.value, "threshold": p["ratio"] * shift.baseline})]
    events = signals.ratio_spikes(x, ratio=p["ratio"], window=p["spike_window"])
    if not events:
        return [Outcome("ok", "ok", {"median": float(median(x)), "peak": float(x.max()), "ratio": p["ratio"]},
                        metrics=(s.key,))]
    worst = max(events, key=lambda e: e.score)
    status = severity(len(events) >= p["fail_count"])
    values: dict[str, Any] = {"count": len(events), "step": s.step(worst.peak), "peak": worst.value,
                              "baseline": worst.baseline, "score": worst.score,
                              "steps": ", ".join(str(s.step(e.peak)) for e in events[:8])}
    first, last = s.step(events[0].start), s.step(events[-1].end)
    return [Outcome(status, "spike", values, first, (first, last), (s.key,),
                    {"peak": worst.value, "baseline": worst.baseline, "threshold": p["ratio"] * worst.baseline,
                     "spike_steps": [s.step(e.peak) for e in events]}, points=tuple(s.step(e.peak) for e in events))]


def _tool_spread(view: RunView, mean: Series, p: Mapping[str, Any]) -> list[Outcome]:
    std = view.series("rollout/tool_calls/std")
    if std is None:
        return []
    steps, sv, mv = std.aligned(mean)
    cv = sv / np.maximum(mv, 1e-12)
    found = signals.sustained_above(cv, p["cv_high"], window=p["window"], min_len=p["min_steps"])
    values = {"cv": _tail_level(cv), "cv_high": p["cv_high"]}
    if not found:
        return [Outcome("ok", "ok_spread", values, metrics=(std.key, mean.key))]
    a, b = found[0]
    values.update(onset=int(steps[a]), end=int(steps[b]), seg_cv=float(median(cv[a : b + 1])))
    return [Outcome("warn", "spread", values, int(steps[a]), (int(steps[a]), int(steps[b])), (std.key, mean.key),
                    {"value": values["seg_cv"], "threshold": p["cv_high"]})]


def tool_calls_at_cap(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Tool calls per rollout against the limit (docs/reading-rules.md#tool-calls-at-cap, from GiGPO's search-QA): ≈1.0
    is efficient, near the limit is mechanical repetition, a large spread is an unstable
    policy. Reads rollout/tool_calls/at_cap when derived from rollouts, else the batch mean
    against the batch max (only when the max is at least 2 calls: always one call is fine)."""
    cap = view.series("rollout/tool_calls/at_cap")
    mean = view.first("tool_call_counts/mean", "rollout/tool_calls/mean")
    out: list[Outcome] = []
    if cap is not None:
        out += share_check(cap, {**p, "warn": p["cap_warn"], "fail": p["cap_fail"]}, prefix="cap_")
    elif mean is not None:
        top = view.series("tool_call_counts/max")
        steps, mv, xv = mean.aligned(top) if top is not None else (mean.steps, mean.values, mean.values * 0)
        near = np.where(xv >= 2, mv / np.maximum(xv, 1e-12), 0.0)
        found = signals.sustained_above(near, p["near_max"], window=p["window"], min_len=p["min_steps"])
        values: dict[str, Any] = {"mean": _tail_level(mv), "first": _head_tail(mv)[0], "near_max": p["near_max"]}
        if found:
            a, b = found[0]
            values.update(onset=int(steps[a]), end=int(steps[b]), seg_mean=float(median(mv[a : b + 1])),
                          seg_max=float(median(xv[a : b + 1])))
            evidence = {"value": values["seg_mean"], "max": values["seg_max"], "threshold": p["near_max"]}
            out.append(Outcome("warn", "near_max", values, int(steps[a]), (int(steps[a]), int(steps[b])),
                               (mean.key, "tool_call_counts/max"), evidence))
        else:
            out.append(Outcome("ok", "ok_mean", values, metrics=(mean.key,)))
    if mean is not None:
        out += _tool_spread(view, mean, p)
    return out
