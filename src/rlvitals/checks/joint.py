"""Reading rules that no single-metric check covers.

- the symptom table's first row: the reward crashes → did entropy drop first? → did the clip fraction
  spike?  (``reward_collapse``, docs/reading-rules.md#reward-collapse)
- the pass@k − pass@1 table: large gap = the policy knows but is unstable; small gap with high pass@1 =
  solved; small gap with low pass@1 = stably cannot  (``passk_gap``, docs/reading-rules.md#passk-gap)
- the prompt scale: a long-tailed reward distribution across prompts (``prompt_concentration``,
  docs/reading-rules.md#prompt-concentration) and the difficulty mix that carries the gradient
  (``difficulty_mix``, docs/reading-rules.md#difficulty-mix)
- reasoning: faithfulness probes and intermediate-step verification (``faithfulness``,
  docs/reading-rules.md#faithfulness)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import signals
from ..signals import median
from ._base import CheckFn, Outcome, RunView, Series, Status
from ._shared import progress

REWARD_KEYS = ("critic/score/mean", "critic/rewards/mean")
_PASS = re.compile(r"^pass@(\d+)$")


def _tail(s: Series, share: float = 0.2) -> float:
    return float(median(s.values[-max(1, int(len(s) * share)):]))


def _moved(s: Series | None, onset_step: int, window: int, direction: str) -> tuple[bool, float, float]:
    """Whether ``s`` moved in ``direction`` over ``window`` steps around ``onset_step``:
    (moved, level before, level after)."""
    if s is None:
        return False, float("nan"), float("nan")
    before = s.values[(s.steps < onset_step) & (s.steps >= onset_step - window)]
    after = s.values[(s.steps >= onset_step - window // 4) & (s.steps < onset_step + window)]
    if len(before) < 3 or len(after) < 3:
        return False, float("nan"), float("nan")
    b = float(median(before))
    a = float(np.min(after)) if direction == "down" else float(np.max(after))
    spread = max(signals.noise_scale(s.values) * 3, 1e-12)
    moved = (b - a > max(0.3 * abs(b), spread)) if direction == "down" else (a - b > max(0.5 * abs(b), spread))
    return moved, b, a


def _reward_floor(view: RunView, s: Series) -> tuple[float, float, bool]:
    """``(floor, top, natural)``: the reward's natural range when the batch min and max are logged (the
    median batch min; the highest level the batch max held for five steps — a collapsed run's max sits at
    its floor on most steps), else the 2nd–98th percentile of the mean itself."""
    prefix = s.key.rsplit("/", 1)[0]
    lo, hi = view.series(prefix + "/min"), view.series(prefix + "/max")
    if lo is not None and hi is not None:
        floor, top = float(median(lo.values)), float(np.max(signals.rolling_level(hi.values, 5)))
        if top > floor:
            return floor, top, True
    a, b = (float(v) for v in np.percentile(s.values, [2, 98]))
    return a, max(b, a + 1e-12), False


def _reward_fall(x: np.ndarray, floor: float, p: Mapping[str, Any]) -> tuple[int, int, float, float, float] | None:
    """The first sustained fall of a reward from its highest level so far: ``(onset, at, high, after,
    share)`` where ``share`` is the part of the reward above the floor it lost, ``at`` the first index
    of the low level and ``after`` the median from there on; None when it never fell that far and stayed."""
    window = max(3, min(int(p["window"]), len(x) // 10))
    level = signals.rolling_level(x, window)
    high = np.maximum.accumulate(level)
    room = np.maximum(high - floor, 1e-12)
    noise = max(signals.noise_scale(x), signals.quantum(x), 1e-12)
    lost = (high - level) / room
    for at in np.flatnonzero((lost >= p["min_loss"]) & (high - level >= p["k"] * noise)).tolist():
        after = float(median(x[at:]))
        share = float((high[at] - after) / room[at])
        if share < 0.6 * p["min_loss"]:
            continue  # it came back: a dip, not a collapse
        # where it visibly left its high: a quarter of the way down, and out of its own step noise
        mark = high[at] - max(0.25 * (high[at] - level[at]), 2 * noise)
        above = np.flatnonzero(level[: at + 1] >= mark)
        onset = int(above[-1]) + 1 if len(above) else 0
        return min(onset, at), at, float(high[at]), after, share
    return None


def reward_collapse(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The training reward falling from its level and staying down (docs/reading-rules.md#reward-collapse), read with
    entropy and clip fraction as the symptom table says: an entropy drop first means policy collapse; a
    clip-fraction spike means updates fighting the policy.

    The fall is measured as the share of the reward above its floor that was lost — the natural floor
    (the batch minimum) when the run logs it, so a 0/1 or ±1 verifier falling from 25 % to 4 % correct
    counts as what it is — from the highest level reached before it, the run's first values included
    (damage in the first steps). Losing ``min_loss`` of it and staying down warns; losing ``fail_loss``,
    or sitting at the floor, fails."""
    s = view.first(*REWARD_KEYS)
    if s is None:
        return []
    floor, top, natural = _reward_floor(view, s)
    found = _reward_fall(s.values, floor, p)
    if found is None:
        return [Outcome("ok", "ok", {"metric": s.key, "last": _tail(s)}, metrics=(s.key,))]
    i0, at, high, after, share = found
    onset = s.step(i0)
    window = int(p["window"])
    ent, ent_before, ent_after = _moved(view.series("actor/entropy"), onset, window, "down")
    clip, clip_before, clip_after = _moved(view.series("actor/pg_clipfrac"), onset, window, "up")
    cause = "entropy_and_clip" if ent and clip else "entropy" if ent else "clip" if clip else "unexplained"
    at_floor = natural and after <= floor + 0.05 * (top - floor)
    status: Status = "fail" if share >= p["fail_loss"] or at_floor else "warn"
    values = {"metric": s.key, "onset": onset, "before": high, "after": after, "share": share, "floor": floor,
              "ent_before": ent_before, "ent_after": ent_after, "clip_before": clip_before, "clip_after": clip_after}
    metrics = tuple(k for k, used in ((s.key, True), ("actor/entropy", ent), ("actor/pg_clipfrac", clip)) if used)
    return [Outcome(status, f"fail_{cause}", values, onset_step=onset, span=(onset, s.step(len(s) - 1)),
                    metrics=metrics, evidence={"baseline": high, "value": after, "floor": floor, "share_lost": share,
                                               "at_floor": bool(at_floor), "entropy_dropped": ent,
                                               "clip_spiked": clip, "threshold": p["min_loss"]})]


def _pass_keys(view: RunView) -> dict[int, Series]:
    found = {}
    for key in view.metrics():
        m = _PASS.match(key)
        if m:
            s = view.series(key, min_points=1)
            if s is not None:
                found[int(m.group(1))] = s
    return found


def passk_gap(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """pass@k − pass@1 at the end of the run, read with the three-way table of
    docs/reading-rules.md#passk-gap."""
    passes = _pass_keys(view)
    k = max(passes, default=1)
    if 1 not in passes or k == 1:
        return []
    steps, p1, pk = passes[1].aligned(passes[k])
    if len(steps) == 0:
        return []
    tail = max(1, len(steps) // 5)
    one, many = float(median(p1[-tail:])), float(median(pk[-tail:]))
    gap = many - one
    values = {"k": k, "pass1": one, "passk": many, "gap": gap}
    metrics = ("pass@1", f"pass@{k}")
    if gap >= p["large_gap"]:
        return [Outcome("ok", "large", values, metrics=metrics, evidence=values)]
    if one >= p["high_pass1"]:
        return [Outcome("ok", "solved", values, metrics=metrics, evidence=values)]
    if one <= p["low_pass1"]:
        return [Outcome("warn", "stuck", values, onset_step=int(steps[-tail]), span=(int(steps[-tail]), int(steps[-1])),
                        metrics=metrics, evidence={**values, "threshold": p["low_pass1"]})]
    return [Outcome("ok", "ok", values, metrics=metrics, evidence=values)]


def prompt_concentration(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """A long tail across prompts: a few prompts earn most of the positive reward, so the
    effective batch is far smaller than the batch."""
    s = view.first("prompt/top_share", min_points=1)
    if s is None:
        return []
    runs = signals.runs_of(s.values >= p["top_share"], min_len=min(int(p["min_steps"]), len(s)))
    if not runs:
        return [Outcome("ok", "ok", {"share": _tail(s)}, metrics=(s.key,))]
    start, end = runs[0]
    values = {"share": float(median(s.values[start : end + 1])), "start": s.step(start), "end": s.step(end)}
    return [Outcome("warn", "warn", values, onset_step=s.step(start), span=s.span(start, end), metrics=(s.key,),
                    evidence={**values, "threshold": p["top_share"]})]


def difficulty_mix(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Which difficulty bucket dominates: too many easy prompts = the curriculum is out of date;
    too many hard ones = the policy has been left behind; medium prompts should carry the gradient."""
    found = {b: view.series(f"prompt/difficulty/{b}/share", min_points=1) for b in ("easy", "medium", "hard")}
    if any(s is None for s in found.values()):
        return []
    shares = {b: _tail(s) for b, s in found.items() if s is not None}
    adv = view.series("prompt/difficulty/medium/adv_share", min_points=1)
    medium_adv = _tail(adv) if adv else float("nan")
    # the advantage share is not computed without per-rollout advantages: then the words leave it out
    known = np.isfinite(medium_adv)
    values = {**{f"{b}_share": v for b, v in shares.items()}, "medium_adv": medium_adv,
              "adv_en": f"; medium prompts carry {medium_adv:.0%} of |advantage|" if known else "",
              "adv_zh": f"；中等难度 prompt 贡献 {medium_adv:.0%} 的 |advantage|" if known else ""}
    for bucket in ("easy", "hard"):
        s = found[bucket]
        assert s is not None
        runs = signals.runs_of(s.values >= p["dominant"], min_len=min(int(p["min_steps"]), len(s)))
        if runs:
            start, end = runs[0]
            return [Outcome("warn", f"too_{bucket}", values, onset_step=s.step(start), span=s.span(start, end),
                            metrics=(s.key,), evidence={**values, "threshold": p["dominant"]})]
    return [Outcome("ok", "ok", values, metrics=tuple(s.key for s in found.values() if s is not None))]


def faithfulness(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Faithfulness probes (answers that do not react to an intervention on the chain of thought
    mean the chain is decoration) and intermediate-step verification, when a probe measured them; and, over
    the probed checkpoints, the faithfulness score falling while the reward rises (the reward is being
    earned by something other than the reasoning)."""
    probes = {k.rsplit("/", 1)[1]: view.series(k, min_points=1) for k in view.metrics()
              if k.startswith("reasoning/faithfulness/")}
    steps = view.series("reasoning/step_verification", min_points=1)
    probes = {k: v for k, v in probes.items() if v is not None}
    score = view.series("reasoning/faithfulness", min_points=1)
    if not probes and steps is None and score is None:
        return []
    out = []
    for probe, s in sorted(probes.items()):
        assert s is not None
        level = _tail(s)
        values = {"probe": probe, "share": level}
        status: Status = "warn" if level < p["faithful"] else "ok"
        out.append(Outcome(status, status, values, onset_step=_below_since(s, p["faithful"]) if status == "warn"
                           else None, metrics=(s.key,), evidence={**values, "threshold": p["faithful"]}))
    if steps is not None:
        level = _tail(steps)
        verdict: Status = "warn" if level < p["verified"] else "ok"
        out.append(Outcome(verdict, f"steps_{verdict}", {"share": level}, metrics=(steps.key,),
                           evidence={"value": level, "threshold": p["verified"]}))
    if score is not None:
        out.append(_faithfulness_trend(view, score, p))
    return out


def _faithfulness_trend(view: RunView, score: Series, p: Mapping[str, Any]) -> Outcome:
    """The faithfulness score over the probed checkpoints against the reward over the same steps: a fall of
    ``fall`` or more (first third → last third, medians) while the reward rose beyond its noise is a warning,
    dated at the first checkpoint below the halfway mark of the fall."""
    values: dict[str, Any] = {"checkpoints": len(score)}
    if len(score) < p["checkpoints"]:
        return Outcome("skipped", "trend_short", values | {"needed": p["checkpoints"]}, metrics=(score.key,))
    k = max(1, len(score) // 3)
    start, end = float(median(score.values[:k])), float(median(score.values[-k:]))
    values |= {"start": start, "end": end, "first": score.step(0), "last": score.step(len(score) - 1)}
    reward = view.first(*REWARD_KEYS, "pass@1", min_points=3)
    inside = None if reward is None else (reward.steps >= score.step(0)) & (reward.steps <= score.step(len(score) - 1))
    if reward is None or inside is None or int(inside.sum()) < 3:
        verdict: Status = "warn" if start - end >= p["fall"] else "ok"
        return Outcome(verdict, f"trend_{verdict}_alone", values, metrics=(score.key,),
                       onset_step=_halfway(score, start, end) if verdict == "warn" else None,
                       evidence=values | {"fall_threshold": p["fall"]})
    pr = progress(reward.values[inside])
    values |= {"reward": reward.key, "reward_start": pr.start, "reward_end": pr.end}
    rising = pr.end - pr.start > pr.tol
    if start - end >= p["fall"] and rising:
        return Outcome("warn", "trend_warn", values, onset_step=_halfway(score, start, end),
                       metrics=(score.key, reward.key), evidence=values | {"fall_threshold": p["fall"],
                                                                           "reward_noise": pr.tol})
    return Outcome("ok", "trend_ok", values, metrics=(score.key, reward.key),
                   evidence=values | {"fall_threshold": p["fall"], "reward_noise": pr.tol})


def _below_since(s: Series, threshold: float) -> int:
    """The checkpoint from which ``s`` stayed below ``threshold`` (its first, when it never was above)."""
    above = np.nonzero(s.values >= threshold)[0]
    after = int(above[-1]) + 1 if len(above) else 0
    return s.step(min(after, len(s) - 1))


def _halfway(s: Series, start: float, end: float) -> int:
    """The first checkpoint whose value is below the middle of a fall from ``start`` to ``end``."""
    below = np.nonzero(s.values < (start + end) / 2)[0]
    return s.step(int(below[0])) if len(below) else s.step(len(s) - 1)


def reward_flat(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """A training reward that does not rise beyond its own noise (docs/reading-rules.md#reward-flat: not moving
    for long — look back at the training and the data). The test: the level at the end (a median of a fifth
    of the run) against the level at the start, with ``z`` standard errors of their difference as what noise
    can do; its power grows with the steps seen and shrinks with the step-to-step noise, so the rise it could
    have seen is ``tol`` (said in the words). Over ``min_steps`` or more, flat and below the top ``solved`` of
    its range: compute spent for no learning, a failure. From ``min_points`` on, where the batch min and max
    give the reward's natural range: flat while a rise of ``resolve`` of that range would have shown is a
    warning from ``warn_steps`` on and a note before (a reward often sits still for the first tens of steps);
    noisier than that, not judged yet (the words say how many steps it needs). A reward that fell beyond its
    noise is reward_collapse's."""
    s = view.first(*REWARD_KEYS)
    if s is None:
        return []
    x, n = s.values, len(s)
    values: dict[str, Any] = {"metric": s.key, "n": n, "min_steps": p["min_steps"], "min_points": p["min_points"]}
    if n < p["min_points"]:
        return [Outcome("skipped", "short", values, metrics=(s.key,))]
    pr = progress(x, z=p["z"], k=max(3, n // 5))
    floor, top, natural = _reward_floor(view, s)
    values |= {"first": pr.start, "last": pr.end, "best": pr.peak, "noise": pr.tol}
    if pr.rising or pr.peak - pr.start > pr.tol:
        return [Outcome("ok", "ok", values, metrics=(s.key,))]
    if natural and (pr.end - floor) / (top - floor) >= p["solved"]:
        return [Outcome("ok", "solved", values | {"position": (pr.end - floor) / (top - floor)}, metrics=(s.key,))]
    evidence = {"start": pr.start, "end": pr.end, "best": pr.peak, "threshold": pr.tol}
    if n >= p["min_steps"]:
        return [Outcome("fail", "fail", values, onset_step=s.step(0), span=s.span(0, n - 1), metrics=(s.key,),
                        evidence=evidence)]
    # a fall, at the scale of a fifth of the run or of its first twentieth (a reward that fell in its first
    # steps and sits at its floor since), is reward_collapse's to read
    fell = [q for q in (pr, progress(x, z=p["z"], k=max(3, n // 20))) if q.start - q.end > q.tol]
    if fell:
        return [Outcome("skipped", "falling", values | {"first": fell[0].start, "last": fell[0].end,
                                                         "noise": fell[0].tol}, metrics=(s.key,))]
    if not natural:
        return [Outcome("skipped", "no_range", values, metrics=(s.key,))]
    span = top - floor
    values |= {"floor": floor, "top": top, "share": pr.tol / span, "resolve": p["resolve"],
               "warn_steps": p["warn_steps"]}
    if pr.tol > p["resolve"] * span:
        # the tolerance falls as 1/sqrt(k), k a fifth of the steps: the steps that bring it to resolve·span
        values["needed"] = int(np.ceil(n * (pr.tol / (p["resolve"] * span)) ** 2))
        return [Outcome("skipped", "noisy", values, metrics=(s.key,))]
    status: Status = "warn" if n >= p["warn_steps"] else "note"
    return [Outcome(status, "flat_early", values, onset_step=s.step(0), span=s.span(0, n - 1), metrics=(s.key,),
                    evidence=evidence | {"share_of_range": pr.tol / span, "threshold_share": p["resolve"]})]


FUNCTIONS: dict[str, CheckFn] = {
    "reward_collapse": reward_collapse,
    "reward_flat": reward_flat,
    "passk_gap": passk_gap,
    "prompt_concentration": prompt_concentration,
    "difficulty_mix": difficulty_mix,
    "faithfulness": faithfulness,
}
