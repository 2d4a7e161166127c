"""Efficiency of a veRL agent loop: stragglers and tool-call time (docs/reading-rules.md#agent-stragglers,
#agent-tool-time; the metric dictionary §9's finer timing).

veRL's agent loop (``verl/experimental/agent_loop/agent_loop.py``, ``_performance_metrics``) times each
sample of a batch: ``generate_sequences`` (its time in the inference server) and ``tool_calls`` (its time in
tools), logged as ``timing_s/agent_loop/{generate_sequences,tool_calls}/{min,max,mean}`` over the samples;
and, since "batch sequence generation is bounded by the slowest sample", the sample with the largest
generation + tool time as ``timing_s/agent_loop/slowest/{generate_sequences,tool_calls,response_length}``.
A sample's time is its generation plus its tool time; the batch waits for the slowest.

Efficiency findings are notes (a slow run can still learn): these say where an agent run's time goes
beyond the phases of ``time_breakdown``. Records in ``efficiency.toml``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import signals
from ..signals import median
from ._base import CheckFn, Outcome, RunView, Series

GEN = "timing_s/agent_loop/generate_sequences"
TOOL = "timing_s/agent_loop/tool_calls"
SLOWEST = "timing_s/agent_loop/slowest"


def _at(view: RunView, key: str, steps: np.ndarray) -> np.ndarray:
    """``key`` at ``steps``: 0 where not logged (no tool timer: no tool time), NaN without the key."""
    s = view.series(key, 1)
    if s is None:
        return np.full(len(steps), np.nan)
    out = np.zeros(len(steps))
    hit = np.isin(steps, s.steps)
    out[hit] = s.values[np.isin(s.steps, steps)]
    return out


def _slowest(view: RunView) -> tuple[Series, Series, str] | None:
    """Per step the slowest sample's time and the mean sample's (generation + tools), and the key read for
    the slowest (``slowest/generate_sequences``; without it ``generate_sequences/max``, older veRL)."""
    mean = view.series(f"{GEN}/mean")
    if mean is None:
        return None
    key = f"{SLOWEST}/generate_sequences" if view.series(f"{SLOWEST}/generate_sequences") else f"{GEN}/max"
    top = view.series(key)
    if top is None:
        return None
    steps, m, t = mean.aligned(top)
    m = m + np.nan_to_num(_at(view, f"{TOOL}/mean", steps))
    if key.startswith(SLOWEST):
        t = t + np.nan_to_num(_at(view, f"{SLOWEST}/tool_calls", steps))
    keep = m > 0
    return Series(f"{GEN}/mean", steps[keep], m[keep]), Series(key, steps[keep], t[keep]), key


def _held(level: np.ndarray, at: np.ndarray, p: Mapping[str, Any]) -> list[tuple[int, int]]:
    return signals.runs_of(np.nan_to_num(level) >= at, min(p["min_steps"], len(level)))


def agent_stragglers(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The slowest sample of the agent loop against the mean sample: a rolling level (``window`` steps) of
    their ratio at ``ratio`` or more for ``min_steps`` steps, while the wait for it (slowest − mean) is
    ``wait_share`` of the step time or more, is a note — the batch idles on one long rollout."""
    found = _slowest(view)
    if found is None or len(found[0]) < p["min_steps"]:
        return []
    mean, top, key = found
    steps, ratio = mean.steps, top.values / mean.values
    step_s = _at(view, "timing_s/step", steps)
    wait = (top.values - mean.values) / np.where(step_s > 0, step_s, np.nan)
    level, wait_level = signals.rolling_level(ratio, p["window"]), signals.rolling_level(wait, p["window"])
    held = _held(np.where(np.nan_to_num(wait_level) >= p["wait_share"], level, 0.0), p["ratio"], p)
    v: dict[str, Any] = {"ratio": float(median(ratio)), "peak": float(np.nanmax(level)), "limit": p["ratio"],
                         "key": key, "window": p["window"]}
    metrics = (f"{GEN}/mean", key)
    if not held:
        return [Outcome("ok", "ok", v, metrics=metrics, evidence=v)]
    a, b = max(held, key=lambda r: r[1] - r[0])
    i = a + int(np.argmax(level[a:b + 1]))
    length = _at(view, f"{SLOWEST}/response_length", steps)[i]
    tool = _at(view, f"{SLOWEST}/tool_calls", steps)[i]
    v |= {"step": int(steps[a]), "end": int(steps[b]), "steps": b - a + 1, "at": int(steps[i]),
          "level": float(level[i]), "slowest": float(top.values[i]), "mean": float(mean.values[i]),
          "wait": float(np.nanmedian(wait[a:b + 1])), "wait_share": p["wait_share"],
          "length": "—" if not np.isfinite(length) else f"{length:.0f}",
          "tool": "—" if not np.isfinite(tool) else f"{tool:.3g} s"}
    return [Outcome("note", "straggler", v, onset_step=int(steps[a]), span=(int(steps[a]), int(steps[b])),
                    metrics=(*metrics, "timing_s/step"),
                    evidence=v | {"threshold": p["ratio"], "value": float(level[i])})]


def _tool_share(view: RunView) -> tuple[Series, str] | None:
    """Per step the tool time on the step's critical path over the step time: the slowest sample's tool
    time (the batch waits for it); without it, the longest tool time of any sample (``tool_calls/max``)."""
    step = view.series("timing_s/step")
    key = f"{SLOWEST}/tool_calls" if view.series(f"{SLOWEST}/tool_calls") else f"{TOOL}/max"
    tool = view.series(key)
    if step is None or tool is None:
        return None
    steps, t, s = tool.aligned(step)
    keep = s > 0
    return Series(key, steps[keep], t[keep] / s[keep]), key


def agent_tool_time(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The share of the step spent in tool calls on its critical path: a rolling level (``window`` steps) at
    ``share`` or more for ``min_steps`` steps is a note (tools dominate the step); a share that grew
    ``growth`` times or more from the first fifth of the run to the last (medians), to ``min_share`` or more,
    is a note too (a tool-time blow-up)."""
    found = _tool_share(view)
    if found is None or len(found[0]) < p["min_steps"]:
        return []
    s, key = found
    x = s.values
    k = max(1, len(x) // 5)
    early, late = float(median(x[:k])), float(median(x[-k:]))
    level = signals.rolling_level(x, p["window"])
    mean = view.series(f"{TOOL}/mean")
    tm = _early_late_text(mean)
    v: dict[str, Any] = {"key": key, "early": early, "late": late, "peak": float(np.max(level)),
                         "limit": p["share"], "tool_mean": tm, "growth": p["growth"], "min_share": p["min_share"]}
    metrics = (key, "timing_s/step", f"{TOOL}/mean")
    held = _held(level, p["share"], p)
    grew = late >= p["min_share"] and late >= p["growth"] * max(early, 1e-12)
    if not held and not grew:
        return [Outcome("ok", "ok", v, metrics=metrics, evidence=v)]
    if held:
        a, b = max(held, key=lambda r: r[1] - r[0])
        v |= {"step": s.step(a), "end": s.step(b), "level": float(np.max(level[a:b + 1]))}
        return [Outcome("note", "heavy", v, onset_step=s.step(a), span=s.span(a, b), metrics=metrics,
                        evidence=v | {"threshold": p["share"], "value": v["level"]})]
    above = np.flatnonzero(level >= max(np.sqrt(max(early, 1e-12) * late), p["min_share"] / 2))
    onset = s.step(int(above[0])) if len(above) else s.step(0)
    v |= {"step": onset, "times": late / max(early, 1e-12)}
    return [Outcome("note", "grew", v, onset_step=onset, span=(onset, s.step(-1)), metrics=metrics,
                    evidence=v | {"baseline": early, "value": late, "threshold": p["growth"]})]


def _early_late_text(s: Series | None) -> str:
    if s is None:
        return "—"
    k = max(1, len(s) // 5)
    return f"{float(median(s.values[:k])):.3g} s → {float(median(s.values[-k:])):.3g} s"


FUNCTIONS: dict[str, CheckFn] = {
    "agent_stragglers": agent_stragglers,
    "agent_tool_time": agent_tool_time,
}
