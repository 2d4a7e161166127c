"""Response and prompt length: responses cut at the length limit, prompts cut, aborted samples, length against
reward, and a response length that collapses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import signals
from ...probe.stats import wilson
from ...signals import median
from .._base import Outcome, RunView, Status
from .._reward import TRUNCATION_KEYS, reward_bounds, reward_of
from .._share import share_check
from ._levels import _head_tail, _tail_level


def _config_value(view: RunView, *suffixes: str) -> Any:
    for key, value in view.config.items():
        if key.endswith(suffixes):
            return value
    return None


def response_clip_high(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Responses hitting max_response_length (docs/reading-rules.md#response-clip-high: a high clip ratio
    calls for a larger max_response_length): truncated answers are scored on a cut text (DAPO's overlong problem)."""
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
    """Prompts cut at max_prompt_length (docs/reading-rules.md#prompt-clip-high: check whether the input
    data is too long): the model is asked questions it cannot fully see."""
    s = view.series("prompt_length/clip_ratio")
    if s is None:
        return []
    return share_check(s, p, _config_value(view, "max_prompt_length", "prompt_max_len"))


def aborted_high(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Aborted or invalid responses (docs/reading-rules.md#aborted-high: a high aborted share means many
    samples failed to generate)."""
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
    ``length_drop`` while the reward climbs ``reward_gain`` of its range is possible reward hacking;
    answers growing by ``length_rise`` while the reward stays flat is Dr. GRPO's length bias (a spurious
    length growth), read through the per-rollout length–correctness correlation when the rollouts gave one
    (docs/reading-rules.md#length-reward-hacking). Never worse than warn: both are only possible, to be
    confirmed by reading rollouts."""
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


def response_length_collapse(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The mean response length collapsing, with or without a reward change
    (docs/reading-rules.md#response-length-collapse: answers getting shorter and shorter; a policy that answers with a
    token or two has stopped doing the task).

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
    values: dict[str, Any] = {"metric": s.key, "first": float(level[0]), "last": float(median(x[-tail:])),
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
        rest = float(median(x[at:]))
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
