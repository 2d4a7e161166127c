"""L2 policy behaviour: entropy, response and prompt length, aborted samples, turns and tool calls.

Every level is read against the run's own scale (its start, its recent median, its reward
range), so the same defaults serve a 0.05-nat run and a 2-nat one; only shares that are
fractions by definition (truncation, aborted, clip fraction) use fixed bands.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import signals
from ..probe.stats import wilson
from ._base import CheckFn, Outcome, RunView, Series, Status
from ._reward import TRUNCATION_KEYS, natural_bounds, reward_bounds, reward_of, severity
from ._share import share_check
from ._shared import held_from
from .course import course_since

#: a validation curve whose Mann–Kendall z is at least this leans up: not evidence that the model stopped learning
LEANS_UP = 1.0


def _between(s: Series, first: int, last: int) -> np.ndarray:
    """Values logged at steps ``first..last`` (inclusive)."""
    return s.values[(s.steps >= first) & (s.steps <= last)]


def _med(x: np.ndarray) -> float:
    return float(np.median(x)) if len(x) else float("nan")


def _head_tail(x: np.ndarray, share: float = 0.1) -> tuple[float, float]:
    n = max(1, min(len(x) // 2, max(5, int(len(x) * share))))
    return float(np.median(x[:n])), float(np.median(x[-n:]))


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
    (seed-000 §2.3 "熵突然骤降"; seed-004 §六: a collapse in the first 50 steps versus a
    smooth decay). The scale is the run's own, so a 0.05-nat run is read like a 2-nat one.

    A fall is a collapse (fail) unless the reward explains it: climbing by ``learning_rise`` of
    its range over the same steps (fast learning — a note: it often ends in saturation, nothing to
    change yet), or already within ``ceiling`` of its maximum (a solved task becoming certain — a
    note). A
    clip-fraction surge at the same time is never explained away (seed-000 §12), nor is a sudden
    fall (``sudden_drop`` of the level within ``sudden_steps`` steps, or to ``near_zero`` of it):
    the reading may soften a finding's severity, never rename it."""
    s = view.series("actor/entropy")
    if s is None:
        return []
    event = signals.collapse(s.values, drop=p["drop"], within=p["within"])
    start = float(np.median(s.values[:3]))
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
    # did (seed-000 §2.3: 几步之内"锁死", often reward hacking); a rising reward only softens a slower fall
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
    (seed-000 §2.3 "熵一直不降：模型可能根本没学到东西"). Flat means the last tenth differs from
    the first by less than ``flat_change`` of its level and the trend is weaker than
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
    start = float(np.median(x[:head]))
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
    late = float(np.median(x[-max(head, len(x) // 5):]))
    top = float(np.max(level[head:]))
    if top < (1 + p["rise"]) * start or late < (1 + p["rise"] / 2) * start or top - start < p["of_start"] * start:
        return None
    # dated where a short level (the long one starts rising half a window before the values do) is a
    # quarter of the way up in log terms: the start of a ramp, the step of a blow-up
    near = signals.rolling_level(x, 3)
    mark = start * (top / start) ** 0.25
    onset = max(head, int(np.argmax(near >= mark)))
    return onset, top, top / start, late / start


def _tail_level(x: np.ndarray) -> float:
    return float(np.median(x[-max(5, len(x) // 10):]))


def entropy_clip_joint(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Entropy and clip fraction read together (seed-004 §二): entropy down to ``entropy_low``
    of its own start while the clip fraction is high (≥ ``clip_high``, the seed's "持续高于
    0.3") or has risen ``clip_rise``× from its start to at least ``clip_floor``, over the same
    ``min_steps`` — the policy sits in a narrow mode while updates keep trying to pull it out."""
    e, c = view.series("actor/entropy"), view.series("actor/pg_clipfrac")
    if e is None or c is None:
        return []
    steps, ev, cv = e.aligned(c)
    if len(steps) < 2 * p["window"]:
        return []
    # the start is the first few steps, not the first tenth: entropy can halve within 20 steps
    e0, c0 = float(np.median(ev[: p["window"]])), float(np.median(cv[: p["window"]]))
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
                  seg_entropy=float(np.median(ev[seg])), seg_rel=float(np.median(rel[seg])),
                  seg_clip=float(np.median(cv[seg])))
    status = severity(b - a + 1 >= p["fail_steps"])
    evidence = {"entropy": values["seg_entropy"], "entropy_baseline": e0, "clipfrac": values["seg_clip"],
                "clipfrac_baseline": c0, "threshold": {"entropy_rel": p["entropy_low"], "clipfrac": p["clip_high"]}}
    return [Outcome(status, status, values, int(steps[a]), (int(steps[a]), int(steps[b])), (e.key, c.key), evidence)]


def _config_value(view: RunView, *suffixes: str) -> Any:
    for key, value in view.config.items():
        if key.endswith(suffixes):
            return value
    return None


def response_clip_high(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Responses hitting max_response_length (seed-000 §4 "clip_ratio 高 → 增大
    max_response_length"): truncated answers are scored on a cut text (DAPO's overlong problem)."""
    limit = _config_value(view, "max_response_length", "max_completion_length", "generate_max_len")
    s = view.first(*TRUNCATION_KEYS)
    if s is None:
        return _capped_steps(view, p, limit)
    return share_check(s, p, limit, learns=True)


def _capped_steps(view: RunView, p: Mapping[str, Any], limit: Any) -> list[Outcome]:
    """Without a logged clip ratio (TRL before completions/clipped_ratio, Unsloth tables): a step whose
    mean response length sits exactly at the cap had every response cut. The cap is the configured
    limit, else the largest mean when it recurs exactly on ``min_capped`` steps and is at least
    ``min_cap`` tokens (a float mean hitting the same maximum again and again is a limit; a collapsed
    policy repeating one nine-word answer is not). The share of such steps is a lower bound of the
    truncation; it is judged against the same bands."""
    s = view.series("response_length/mean")
    if s is None:
        return []
    x = s.values
    top = float(np.max(x))
    cap = float(limit) if isinstance(limit, (int, float)) and not isinstance(limit, bool) and limit > 0 else top
    at = np.abs(x - cap) <= 1e-6 * max(cap, 1.0)
    # a recurring maximum below min_cap tokens is a policy giving one short answer everywhere, not a limit
    guessed = cap == top and not (isinstance(limit, (int, float)) and not isinstance(limit, bool) and limit > 0)
    if int(at.sum()) < p["min_capped"] or top > cap * (1 + 1e-6) or (guessed and cap < p["min_cap"]):
        return [Outcome("skipped", "no_ratio", {"metric": s.key}, metrics=(s.key,))]
    share = float(np.mean(at))
    first = int(np.flatnonzero(at)[0])
    # most of the answers cut, beyond what chance does on the steps read (a few dozen steps into a run)
    low = wilson(int(at.sum()), len(x))[0]
    status: Status = "fail" if low >= p["fail"] else "warn" if share >= p["warn"] else "ok"
    values = {"metric": s.key, "cap": cap, "share": share, "count": int(at.sum()), "n": len(x),
              "onset": s.step(first), "threshold": p[status] if status != "ok" else p["warn"]}
    if status == "ok":
        return [Outcome("ok", "capped_ok", values, metrics=(s.key,))]
    return [Outcome(status, "capped", values, s.step(first), (s.step(first), s.step(len(x) - 1)), (s.key,),
                    {"value": share, "value_low": low, "threshold": p[status], "limit": cap,
                     "steps_at_cap": int(at.sum())})]


def prompt_clip_high(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Prompts cut at max_prompt_length (seed-000 §4 "对于 prompt，检查输入数据是不是太长了"):
    the model is asked questions it cannot fully see."""
    s = view.series("prompt_length/clip_ratio")
    if s is None:
        return []
    return share_check(s, p, _config_value(view, "max_prompt_length", "prompt_max_len"))


def aborted_high(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Aborted or invalid responses (seed-000 §4 "response/aborted_ratio 高：很多样本生成失败")."""
    s = view.series("response/aborted_ratio")
    if s is None:
        return []
    return share_check(s, p)


def _onset_of_move(x: np.ndarray, start: float, end: float, window: int) -> int:
    """Index after which the level of ``x`` stays past a quarter of the way from ``start``
    to ``end`` — where a sustained move visibly begins."""
    level = signals.rolling_level(x, window)
    mark = start + (end - start) / 4
    before = np.flatnonzero(level < mark if end > start else level > mark)
    return min(len(x) - 1, int(before[-1]) + 1) if len(before) else 0


def length_reward_hacking(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Length against reward over the run (first vs last ``share``): answers shortening by
    ``length_drop`` while the reward climbs ``reward_gain`` of its range is seed-000 §4's
    "模型可能在 reward hacking"; answers growing by ``length_rise`` while the reward stays flat is
    Dr. GRPO's length bias (seed-004 §三 "虚假 length 增长"), read through the per-rollout
    length–correctness correlation when the rollouts gave one. Never worse than warn: both are
    "可能", to be confirmed by reading rollouts."""
    length, reward = view.series("response_length/mean"), reward_of(view)
    if length is None or reward is None:
        return []
    steps, lv, rv = length.aligned(reward)
    values: dict[str, Any] = {"n": len(steps), "min_steps": p["min_steps"]}
    # a short run is read only when both curves move one way at almost every step (strong trends): a made
    # 30-step run whose reward pays for brevity goes 31 → 9 tokens as its reward climbs 0.03 → 0.71
    strong = len(steps) >= p["min_short"] and min(abs(signals.trend(lv)), abs(signals.trend(rv))) >= p["strong"]
    if len(steps) < p["min_steps"] and not strong:
        return [Outcome("skipped", "short", values, metrics=(length.key, reward.key))]
    lo, hi = reward_bounds(view, reward)
    (l0, l1), (r0, r1) = _head_tail(lv, p["share"]), _head_tail(rv, p["share"])
    values.update(length_first=l0, length_last=l1, change=(l1 - l0) / max(abs(l0), 1e-12),
                  reward_first=r0, reward_last=r1, gain=(r1 - r0) / (hi - lo))
    ltau, rtau = signals.trend(lv), signals.trend(rv)
    rising = values["gain"] >= p["reward_gain"] and rtau >= p["trend"]
    metrics: tuple[str, ...] = (length.key, reward.key)
    evidence = {"length_change": values["change"], "reward_gain": values["gain"], "length_trend": ltau,
                "reward_trend": rtau}
    template = "ok"
    if values["change"] <= -p["length_drop"] and ltau <= -p["trend"] and rising:
        template = "hacking"
    elif values["change"] >= p["length_rise"] and ltau >= p["trend"]:
        corr = view.series("rollout/length_correct_corr")
        if corr is not None:
            values["corr"] = c = _tail_level(corr.values)
            metrics += (corr.key,)
            template = "ok_growth" if c >= p["corr"] else "overthinking" if c <= -p["corr"] else "spurious_corr"
        else:
            template = "ok_growth" if rising else "spurious" if values["gain"] < p["reward_gain"] / 2 else "ok"
    if template.startswith("ok"):
        return [Outcome("ok", template, values, metrics=metrics, evidence=evidence)]
    i = _onset_of_move(lv, l0, l1, p["window"])
    onset = int(steps[i])
    values["onset"] = onset
    return [Outcome("warn", template, values, onset, (onset, int(steps[-1])), metrics, evidence)]


def turns_collapse(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """An agent that stops using its tools: the mean number of turns falls from its start to the floor of
    the run (its logged minimum, else the lowest mean) and stays there (seed-004 §三: tool calls are the
    agent's direct proxy; a count collapsing to the bare question-and-answer exchange is the policy
    giving up on the tools). Lost ``drop`` of the way down and ending within ``near`` of the floor warns."""
    s = view.series("num_turns/mean")
    if s is None:
        return []
    x, n = s.values, len(s)
    head = max(3, n // 20)
    start, late = float(np.median(x[:head])), float(np.median(x[-head:]))
    lows = view.series("num_turns/min")
    floor = min(float(np.median(lows.values)) if lows is not None else float(np.min(x)), late)
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
    """num_turns/max jumping to ``ratio``× its recent median (seed-000 §7 "num_turns/max 突然变得
    非常高，可能说明某些样本陷入了死循环"). One surge warns; ``fail_count`` surges or a sustained
    jump fail."""
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
        return [Outcome("ok", "ok", {"median": float(np.median(x)), "peak": float(x.max()), "ratio": p["ratio"]},
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
    values.update(onset=int(steps[a]), end=int(steps[b]), seg_cv=float(np.median(cv[a : b + 1])))
    return [Outcome("warn", "spread", values, int(steps[a]), (int(steps[a]), int(steps[b])), (std.key, mean.key),
                    {"value": values["seg_cv"], "threshold": p["cv_high"]})]


def tool_calls_at_cap(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Tool calls per rollout against the limit (seed-004 §三, from GiGPO's search-QA): ≈1.0
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
            values.update(onset=int(steps[a]), end=int(steps[b]), seg_mean=float(np.median(mv[a : b + 1])),
                          seg_max=float(np.median(xv[a : b + 1])))
            evidence = {"value": values["seg_mean"], "max": values["seg_max"], "threshold": p["near_max"]}
            out.append(Outcome("warn", "near_max", values, int(steps[a]), (int(steps[a]), int(steps[b])),
                               (mean.key, "tool_call_counts/max"), evidence))
        else:
            out.append(Outcome("ok", "ok_mean", values, metrics=(mean.key,)))
    if mean is not None:
        out += _tool_spread(view, mean, p)
    return out


def response_length_collapse(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The mean response length collapsing, with or without a reward change (seed-000 §4: answers
    getting shorter and shorter; a policy that answers with a token or two has stopped doing the task).

    The level (a three-value rolling median, so one odd batch does not count) is read against the
    highest level reached before it. Falling to ``few`` tokens or less from ``ratio``× that, and
    staying there, fails; losing ``drop`` of it and staying down warns. The onset is the first step
    below half the earlier high — damage in the first steps is measured from the run's first values,
    not from a window that already holds the fall. Judged from ``min_points`` logged values: a length
    of two tokens is evidence on its own."""
    s = view.series("response_length/mean", min_points=3)
    if s is None:
        return []
    x = s.values
    level = signals.rolling_level(x, 3)
    high = np.maximum.accumulate(level)
    tail = max(2, min(len(x) // 10, 20))
    values: dict[str, Any] = {"metric": s.key, "first": float(level[0]), "last": float(np.median(x[-tail:])),
                              "few": p["few"], "drop": p["drop"]}
    few = (level <= p["few"]) & (high >= p["ratio"] * np.maximum(level, 1e-12))
    # a fall that is not to a few tokens is read on a wider level: batches of a noisy run vary 10x
    wide = signals.rolling_level(x, max(3, min(10, len(x) // 10)))
    wide_high = np.maximum.accumulate(wide)
    fell = wide <= (1 - p["drop"]) * wide_high
    checks: tuple[tuple[Status, np.ndarray, np.ndarray], ...] = (("fail", few, high), ("warn", fell, wide_high))
    for template, mask, tops in checks:
        hits = np.flatnonzero(mask)
        if not len(hits):
            continue
        at = int(hits[0])
        rest = float(np.median(x[at:]))
        limit = p["few"] * 1.5 if template == "fail" else 1.5 * (1 - p["drop"]) * tops[at]
        if rest > limit:  # it came back up: a dip, not a collapse
            continue
        peak = float(tops[at])
        above = np.flatnonzero(level[: at + 1] >= 0.5 * peak)
        onset = int(above[-1]) + 1 if len(above) else 0
        onset = min(onset, at)
        values |= {"onset": s.step(onset), "step": s.step(at), "from": peak, "to": rest,
                   "share": 1 - rest / peak if peak > 0 else 0.0}
        return [Outcome(template, template, values, onset_step=s.step(onset), span=(s.step(onset), s.step(len(x) - 1)),
                        metrics=(s.key,), evidence={"baseline": peak, "value": rest,
                                                    "threshold": p["few"] if template == "fail" else p["drop"]})]
    return [Outcome("ok", "ok", values, metrics=(s.key,))]


FUNCTIONS: dict[str, CheckFn] = {
    "entropy_collapse": entropy_collapse,
    "entropy_flat": entropy_flat,
    "entropy_surge": entropy_surge,
    "entropy_clip_joint": entropy_clip_joint,
    "response_clip_high": response_clip_high,
    "prompt_clip_high": prompt_clip_high,
    "aborted_high": aborted_high,
    "length_reward_hacking": length_reward_hacking,
    "response_length_collapse": response_length_collapse,
    "turns_surge": turns_surge,
    "turns_collapse": turns_collapse,
    "tool_calls_at_cap": tool_calls_at_cap,
}
