"""Entropy: a collapse, an entropy that never moves while the reward stalls, a surge or climb, and entropy read
together with the clip fraction."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import signals
from ...signals import median
from .._base import Outcome, RunView, Series, Status
from .._reward import natural_bounds, reward_bounds, reward_of, severity
from ..course import course_since
from ._levels import _head_tail, _tail_level

#: a validation curve whose Mann–Kendall z is at least this leans up: not evidence that the model stopped learning
LEANS_UP = 1.0


def _between(s: Series, first: int, last: int) -> np.ndarray:
    """Values logged at steps ``first..last`` (inclusive)."""
    return s.values[(s.steps >= first) & (s.steps <= last)]


def _med(x: np.ndarray) -> float:
    return float(median(x)) if len(x) else float("nan")


def _collapse_context(view: RunView, onset: int, low: int, p: Mapping[str, Any]) -> dict[str, Any]:
    """What the reward and the clip fraction did around an entropy fall: a fall while the reward
    climbs is learning, a fall after the reward reached its ceiling is convergence."""
    out: dict[str, Any] = {"explained": None}
    reward, clip = reward_of(view), view.series("actor/pg_clipfrac")
    w = int(p["within"])
    if clip is not None:
        before, after = _between(clip, onset - w, onset - 1), _between(clip, onset, low + w)
        b, a = _med(before), _med(after)
        out["clip_surge"] = bool(len(before) and len(after) and (a >= p["clip_high"] or (
            b > 0 and a >= p["clip_surge"] * b and a >= p["clip_floor"])))
        out.update(clip_before=b, clip_after=a)
    if reward is None:
        return out
    lo, hi = reward_bounds(view, reward)
    before = _between(reward, onset - w, onset - 1)
    r0 = _med(before if len(before) >= 3 else _between(reward, onset, onset + 2))
    r1 = _med(_between(reward, low, low + w))
    if not (np.isfinite(r0) and np.isfinite(r1)):
        return out
    out.update(reward_before=r0, reward_after=r1, position=(r0 - lo) / (hi - lo), gain=(r1 - r0) / (hi - lo))
    if not out.get("clip_surge"):
        # a rise must also stand out of the reward's step noise: against a run's own percentile range
        # (no batch min/max logged) two noisy points of reward can look like a big share of it
        if out["gain"] >= p["learning_rise"] and r1 - r0 >= p["rise_noise"] * signals.noise_scale(reward.values):
            out["explained"] = "learning"
        elif out["position"] >= p["ceiling"] and natural_bounds(view, reward) is not None:
            out["explained"] = "converged"
    return out


def entropy_collapse(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Entropy losing ``drop`` of its level within ``within`` steps and staying down
    (docs/reading-rules.md#entropy-collapse: a sudden drop — a collapse in the first 50 steps against a
    smooth decay). The scale is the run's own, so a 0.05-nat run is read like a 2-nat one.

    A fall is a collapse (fail) unless the reward explains it: climbing by ``learning_rise`` of
    its range over the same steps (fast learning — a note: it often ends in saturation, nothing to
    change yet), or already within ``ceiling`` of its maximum (a solved task becoming certain — a
    note). A clip-fraction surge at the same time is never explained away (docs/reading-rules.md#entropy-collapse),
    nor is a sudden fall (``sudden_drop`` of the level within ``sudden_steps`` steps, or to ``near_zero`` of
    it): the reading may soften a finding's severity, never rename it."""
    s = view.series("actor/entropy")
    if s is None:
        return []
    event = signals.collapse(s.values, drop=p["drop"], within=p["within"])
    start = float(median(s.values[:3]))
    if event is None or (event.start > 0 and event.value >= start):
        # a fall that ends above where the run started is entropy coming back down after a surge
        first, last = _head_tail(s.values)
        return [Outcome("ok", "ok", {"first": first, "last": last}, metrics=(s.key,))]
    onset, low = s.step(event.start), s.step(event.end)
    # "early" is counted from the run's first step, which a view of its last steps does not hold
    early = view.cut == 0 and onset - s.step(0) <= p["early_steps"]
    ctx = _collapse_context(view, onset, low, p)
    steps = low - onset + 1
    values = {"onset": onset, "low_step": low, "before": event.baseline, "after": event.value,
              "drop": event.score, "steps": steps, "steps_en": f"{steps} step" + ("s" if steps != 1 else ""),
              "early_steps": p["early_steps"], **ctx}
    evidence = {"baseline": event.baseline, "value": event.value, "drop": event.score, "threshold": p["drop"],
                **{k: v for k, v in ctx.items() if v is not None}}
    reward = reward_of(view)
    if reward is not None:
        evidence["reward_metric"] = reward.key
    metrics = (s.key,)
    # a fall of most of the level in a few steps, or to almost nothing, is a collapse whatever the reward
    # did (docs/reading-rules.md#entropy-collapse: locked within a few steps, often reward hacking); a rising
    # reward only softens a slower fall
    sudden = (values["steps"] <= p["sudden_steps"] and event.score >= p["sudden_drop"]) or (
        event.value <= p["near_zero"] * event.baseline)
    values["sudden"] = evidence["sudden"] = bool(sudden)
    course = course_since(view, onset)
    if course is not None and course.kind == "validation" and ctx["explained"] == "learning" and (
            course.falling or (not course.rising and course.trend_z < LEANS_UP)):
        ctx["explained"] = None  # a training reward that climbs while validation does not is no learning (a
        # validation curve that leans up without clearly rising yet, a few evaluations in, is no sign against it)
    if ctx["explained"] is not None and not sudden:
        # explained by the reward and not sudden: a note to watch for the saturation that often follows
        return [Outcome("note", ctx["explained"], values, onset, (onset, low), metrics, evidence)]
    if course is not None and course.rising and not ctx.get("clip_surge"):
        # the outcome still clearly rises: not broken, but a collapse this fast predicts the ceiling (a training
        # reward alone may also be rising through a shortcut: its words say so)
        values.update(course.words())
        evidence.update(course.words(), outcome_kind=course.kind)
        template = "warn_learning" if course.kind == "validation" else "warn_reward_rising"
        return [Outcome("warn", template, values, onset, (onset, low), (*metrics, course.metric), evidence)]
    template = "fail_despite_reward" if ctx["explained"] == "learning" else "fail_early" if early else "fail"
    return [Outcome("fail", template, values, onset_step=onset, span=(onset, low), metrics=metrics,
                    evidence=evidence)]


def entropy_flat(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Entropy that does not move over a long run while the reward does not improve either
    (docs/reading-rules.md#entropy-flat: entropy that never falls may mean the model learns nothing). Flat means the
    last tenth differs from the first by less than ``flat_change`` of its level and the trend is weaker than
    ``flat_trend``; a short run (< ``min_steps``) is not judged."""
    s = view.series("actor/entropy")
    if s is None:
        return []
    first, last = _head_tail(s.values)
    values: dict[str, Any] = {"n": len(s), "min_steps": p["min_steps"], "first": first, "last": last,
                              "change": (last - first) / max(abs(first), 1e-12), "tau": signals.trend(s.values)}
    if len(s) < p["min_steps"]:
        return [Outcome("skipped", "short", values, metrics=(s.key,))]
    if abs(values["change"]) >= p["flat_change"] or abs(values["tau"]) >= p["flat_trend"]:
        return [Outcome("ok", "ok", values, metrics=(s.key,))]
    span = (s.step(0), s.step(len(s) - 1))
    reward = reward_of(view)
    if reward is None:
        return [Outcome("warn", "warn_no_reward", values, span[0], span, (s.key,), {"change": values["change"]})]
    lo, hi = reward_bounds(view, reward)
    r0, r1 = _head_tail(reward.values)
    values.update(reward_first=r0, reward_last=r1, gain=(r1 - r0) / (hi - lo))
    evidence = {"change": values["change"], "tau": values["tau"], "reward_gain": values["gain"],
                "threshold": p["flat_change"]}
    if values["gain"] >= p["reward_gain"]:
        return [Outcome("ok", "ok_learning", values, metrics=(s.key, reward.key), evidence=evidence)]
    natural = natural_bounds(view, reward)
    if natural is not None and (r1 - natural[0]) / (natural[1] - natural[0]) >= p["solved"]:
        # flat at the top of the reward's range: a solved task (a resumed run at its ceiling), not a stuck one
        values["position"] = (r1 - natural[0]) / (natural[1] - natural[0])
        return [Outcome("ok", "ok_solved", values, metrics=(s.key, reward.key), evidence=evidence)]
    return [Outcome("warn", "warn", values, span[0], span, (s.key, reward.key), evidence)]


def entropy_surge(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Entropy jumping or climbing up: a sustained level shift or single-step spikes at least ``rise``
    above the level before (``fail_rise`` for a sustained jump fails), or a climb of the level to
    ``rise`` above the run's start and staying there (a ramp no window-to-window shift sees; ``fail_rise``
    fails; a climb while the outcome clearly rises is a note). A policy whose outputs become more random has
    been knocked off balance by an update, or pushed by an entropy bonus or clip-higher bound that is too large.
    A rise smaller than ``of_start`` of the run's starting entropy is not read: after a collapse to ~0 a wiggle is a
    large multiple of nothing."""
    s = view.series("actor/entropy")
    if s is None:
        return []
    x = s.values
    head = max(3, len(x) // 20)
    start = float(median(x[:head]))
    floor = p["of_start"] * max(start, 0.0)
    shift = signals.level_shift(x, window=p["window"], k=p["k"], direction="up")
    if (shift is not None and shift.value >= (1 + p["rise"]) * shift.baseline
            and shift.value - shift.baseline >= floor):
        onset = s.step(shift.start)
        ratio = shift.value / shift.baseline
        status = severity(ratio >= 1 + p["fail_rise"])
        shifted = {"onset": onset, "before": shift.baseline, "after": shift.value, "ratio": ratio}
        evidence = {"baseline": shift.baseline, "value": shift.value, "threshold": (1 + p["rise"]) * shift.baseline}
        return [Outcome(status, "shift", shifted, onset, (onset, s.step(shift.end)), (s.key,), evidence)]
    climb = _entropy_climb(x, start, head, p)
    if climb is not None:
        return [_climb_outcome(view, s, start, climb, p)]
    events = [e for e in signals.spikes(x, window=p["spike_window"], k=p["spike_k"], direction="up",
                                        warmup=p["warmup"])
              if e.value >= (1 + p["rise"]) * e.baseline and e.value - e.baseline >= floor]
    if not events:
        return [Outcome("ok", "ok", {"rise": p["rise"], "peak": float(x.max()),
                                     "first": _head_tail(x)[0]}, metrics=(s.key,))]
    worst = max(events, key=lambda e: e.value / e.baseline)
    values: dict[str, Any] = {"count": len(events), "step": s.step(worst.peak), "peak": worst.value,
                              "baseline": worst.baseline, "ratio": worst.value / worst.baseline,
                              "steps": ", ".join(str(s.step(e.peak)) for e in events[:8])}
    first, last = s.step(events[0].start), s.step(events[-1].end)
    return [Outcome("warn", "spike", values, first, (first, last), (s.key,),
                    {"peak": worst.value, "baseline": worst.baseline, "spike_steps": [s.step(e.peak) for e in events]},
                    points=tuple(s.step(e.peak) for e in events))]


def _climb_outcome(view: RunView, s: Series, start: float, climb: tuple[int, float, float, float],
                   p: Mapping[str, Any]) -> Outcome:
    """The finding of an entropy climb (:func:`_entropy_climb`): doubled and still doubled at the end fails, one
    that came most of the way back warns, one while the outcome clearly rises is a note."""
    x = s.values
    at, level, ratio, still = climb
    onset = s.step(at)
    climbed = {"onset": onset, "before": start, "after": level, "ratio": ratio, "end_ratio": still}
    status: Status = severity(ratio >= 1 + p["fail_rise"] and still >= 1 + p["fail_rise"])
    template, course = "climb", course_since(view, onset)
    if course is not None and course.rising:
        # a ramp while the outcome clearly rises is exploration widening with it (an entropy bonus, clip-higher at
        # work), not outputs gone random: a note to watch
        status, template = "note", "climb_learning"
        climbed |= course.words()
    # it lasts while the level stays above the rise that makes it a finding: one that came back below it ends
    # there, not at the run's end
    held = signals.rolling_level(x, max(5, len(x) // 10)) >= (1 + p["rise"]) * start
    up = np.flatnonzero(held[at:])
    top = at + int(up[0]) if len(up) else at
    back = np.flatnonzero(~held[top:])
    end = top + int(back[0]) - 1 if len(back) and not held[-1] else len(x) - 1
    return Outcome(status, template, climbed, onset, (onset, s.step(max(end, at))), (s.key,),
                   {"baseline": start, "value": level, "ratio_at_end": still, "threshold": (1 + p["rise"]) * start})


def _entropy_climb(x: np.ndarray, start: float, head: int,
                   p: Mapping[str, Any]) -> tuple[int, float, float, float] | None:
    """``(onset index, level reached, its ratio to the start, the last fifth's ratio)`` of a climb of the
    entropy's level to ``rise`` above its start that holds to the end (the last fifth's median at least
    half that rise), or None."""
    if start <= 0 or len(x) < max(2 * head, 10):
        return None
    level = signals.rolling_level(x, max(5, len(x) // 10))
    late = float(median(x[-max(head, len(x) // 5):]))
    top = float(np.max(level[head:]))
    if top < (1 + p["rise"]) * start or late < (1 + p["rise"] / 2) * start or top - start < p["of_start"] * start:
        return None
    # dated where a short level (the long one starts rising half a window before the values do) is a
    # quarter of the way up in log terms: the start of a ramp, the step of a blow-up
    near = signals.rolling_level(x, 3)
    mark = start * (top / start) ** 0.25
    onset = max(head, int(np.argmax(near >= mark)))
    return onset, top, top / start, late / start


def entropy_clip_joint(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Entropy and clip fraction read together (docs/reading-rules.md#entropy-clip-joint): entropy down to
    ``entropy_low`` of its own start while the clip fraction is high (≥ ``clip_high``, the top of the clip
    fraction's 0.1–0.3 band) or has risen ``clip_rise``× from its start to at least ``clip_floor``, over the same
    ``min_steps`` — the policy sits in a narrow mode while updates keep trying to pull it out."""
    e, c = view.series("actor/entropy"), view.series("actor/pg_clipfrac")
    if e is None or c is None:
        return []
    steps, ev, cv = e.aligned(c)
    if len(steps) < 2 * p["window"]:
        return []
    # the start is the first few steps, not the first tenth: entropy can halve within 20 steps
    e0, c0 = float(median(ev[: p["window"]])), float(median(cv[: p["window"]]))
    rel, clip = signals.rolling_level(ev, p["window"]) / max(e0, 1e-12), signals.rolling_level(cv, p["window"])
    high = (clip >= p["clip_high"]) | ((clip >= p["clip_rise"] * c0) & (clip >= p["clip_floor"]))
    joint = signals.runs_of((rel <= p["entropy_low"]) & high, p["min_steps"], max_gap=2)
    values: dict[str, Any] = {"start": e0, "entropy": _tail_level(ev), "rel": _tail_level(ev) / max(e0, 1e-12),
                              "clip": _tail_level(cv), "clip_start": c0}
    if not joint:
        clip_high = bool(high[-max(5, len(high) // 10):].mean() > 0.5)
        exploring = values["rel"] > p["entropy_low"]
        template = "ok_clip_high" if clip_high else "ok_exploring" if exploring else "ok_converging"
        return [Outcome("ok", template, values, metrics=(e.key, c.key))]
    a, b = max(joint, key=lambda r: r[1] - r[0])
    seg = slice(a, b + 1)
    values.update(onset=int(steps[a]), end=int(steps[b]), steps=int(steps[b] - steps[a] + 1),
                  seg_entropy=float(median(ev[seg])), seg_rel=float(median(rel[seg])),
                  seg_clip=float(median(cv[seg])))
    status = severity(b - a + 1 >= p["fail_steps"])
    evidence = {"entropy": values["seg_entropy"], "entropy_baseline": e0, "clipfrac": values["seg_clip"],
                "clipfrac_baseline": c0, "threshold": {"entropy_rel": p["entropy_low"], "clipfrac": p["clip_high"]}}
    return [Outcome(status, status, values, int(steps[a]), (int(steps[a]), int(steps[b])), (e.key, c.key), evidence)]
