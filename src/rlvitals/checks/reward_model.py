"""L3 signal of a reward-model training: did the judge learn to tell chosen from rejected at all
(docs/reading-rules.md#rm-learning)?

A pairwise (Bradley–Terry) loss starts at ln 2 ≈ 0.693: the loss of a model that scores both answers alike. A
reward model whose loss stays there, whose accuracy stays at a coin flip's, or that scores the rejected answers
above the chosen ones has learnt nothing (or learnt the preference backwards), and every GPU-hour of the PPO run
it then judges trains on noise. The numbers are in ``reward_model.toml``; :mod:`.generalisation.preference`'s
``rm_health`` reads what comes after learning (the margin held, evaluation following training).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..signals import median
from ._base import Outcome, RunView, Series, Status
from ._shared import progress
from .generalisation.tracks import Track, core_tracks
from .generalisation.validation import REWARD_KEYS

__all__ = ["FUNCTIONS", "rm_downstream", "rm_learning"]

LN2 = math.log(2.0)


def _width(n: int, share: float) -> int:
    """How many records an end level is the median of: ``share`` of them, at least 3."""
    return max(3, int(n * share))


def _last(s: Series, share: float) -> float:
    """The level ``s`` ends at: the median of its last ``share`` of records (at least 3)."""
    return float(median(s.values[-_width(len(s), share):]))


def _gap(view: RunView, share: float, min_points: int) -> tuple[Series, float] | None:
    """The score of chosen minus that of rejected at the end: OpenRLHF logs both scores (``chosen_reward`` and
    ``reject_reward``), TRL's RewardTrainer their difference (``margin``)."""
    chosen = view.series("rm/reward_chosen/mean", min_points)
    rejected = view.series("rm/reward_rejected/mean", min_points)
    if chosen is not None and rejected is not None:
        steps, c, r = chosen.aligned(rejected)
        if len(steps) >= min_points:
            d = Series("rm/reward_chosen/mean − rm/reward_rejected/mean", steps, c - r)
            return d, _last(d, share)
    margin = view.series("rm/reward_margin", min_points)
    if margin is not None:
        return margin, _last(margin, share)
    return None


def rm_learning(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """A reward model that learnt nothing (docs/reading-rules.md#rm-learning): its loss held within ``ln2_band`` of
    ln 2 without falling beyond its noise, its accuracy ending at or below ``chance``, the rejected answers scored
    above the chosen ones at the end. The loss stuck at ln 2, or the accuracy at chance with the scores inverted,
    is a failure (unless a logged accuracy clearly above chance contradicts the loss: a warning); one sign alone
    is a warning. Skipped with fewer than ``min_points`` records, or while the learning rate still warms up (a run
    just started sits at ln 2 too)."""
    n_min, share = int(p["min_points"]), float(p["end_share"])
    loss, acc = view.series("rm/loss", n_min), view.series("rm/accuracy", n_min)
    gap = _gap(view, share, n_min)
    if loss is None and acc is None or _warming_up(view):
        return []
    v: dict[str, Any] = {"ln2": LN2, "chance": p["chance"], "loss": "—", "accuracy": "—", "gap": "—"}
    stuck = at_chance = inverted = False
    metrics: list[str] = []
    if loss is not None:
        lp = progress(loss.values, sign=-1.0, z=p["z"], k=_width(len(loss), share))
        v |= {"loss_from": -lp.start, "loss_to": -lp.end, "loss": f"{-lp.start:.3g} → {-lp.end:.3g}"}
        stuck = abs(-lp.end - LN2) <= p["ln2_band"] and not lp.rising
        metrics.append(loss.key)
    if acc is not None:
        a = _last(acc, share)
        v |= {"acc_to": a, "accuracy": f"{a:.0%}"}
        at_chance = a <= p["chance"]
        metrics.append(acc.key)
    if gap is not None:
        v |= {"gap_to": gap[1], "gap": f"{gap[1]:+.3g}", "gap_metric": gap[0].key}
        inverted = gap[1] < 0
        metrics.extend(gap[0].key.split(" − "))
    first = min(s.step(0) for s in (loss, acc) if s is not None)
    last = max(s.step(-1) for s in (loss, acc) if s is not None)
    contradicted = acc is not None and not at_chance
    template, status = _verdict(stuck, at_chance, inverted, contradicted)
    return [Outcome(status, template, v, onset_step=None if status == "ok" else first,
                    span=None if status == "ok" else (first, last), metrics=tuple(metrics),
                    evidence=v | {"threshold": p["ln2_band"]})]


def _warming_up(view: RunView) -> bool:
    """The learning rate still climbing to its peak at the last record: a loss at ln 2 is what a warm-up shows."""
    lr = view.series("actor/lr")
    return lr is not None and lr.values[-1] > lr.values[-2] and lr.values[-1] >= float(np.max(lr.values))


def _verdict(stuck: bool, at_chance: bool, inverted: bool, contradicted: bool) -> tuple[str, Status]:
    """The template and status of what the three signs show together."""
    if stuck and not contradicted:
        return ("nothing_inverted" if inverted else "nothing"), "fail"
    if at_chance and inverted:
        return "backwards", "fail"
    if stuck:
        return "stuck", "warn"
    if at_chance:
        return "chance", "warn"
    if inverted:
        return "inverted", "warn"
    return "ok", "ok"


def _judge_accuracy(view: RunView, min_evals: int) -> Track | None:
    """The reward model's accuracy: on its evaluation set when it logged one, else on its training batches."""
    found = next((t for t in core_tracks(view, min_evals) if t.label == "rm/accuracy"), None)
    if found is not None:
        return found
    acc = view.series("rm/accuracy")
    return Track("train", "rm/accuracy", acc.steps, acc.values) if acc is not None else None


def rm_downstream(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The reward model (this run) against the policy run it judged (``view.downstream``,
    docs/reading-rules.md#rm-downstream): the policy's reward rising while its validation falls from its best (by
    ``fall_rel`` of it, beyond its noise) is the policy over-optimising this reward model (a failure); the reward
    model's accuracy rising while the policy's validation does not is accuracy without downstream gains (a warning:
    it learnt its data's preference patterns, not a judgement that carries over). Skipped without a downstream run,
    or one without validation."""
    policy = view.downstream
    if policy is None:
        return []
    tracks = core_tracks(policy, p["min_evals"])
    if not tracks:
        return []
    val = tracks[0]
    vp = progress(val.values, sign=val.sign, z=p["z"])
    v: dict[str, Any] = {"rm_run": view.run.path, "policy_run": policy.run.path, "val_metric": val.label,
                         "val_source": val.source, "val_from": val.sign * vp.start, "val_to": val.sign * vp.end,
                         "val_peak": val.sign * vp.peak, "val_peak_step": int(val.steps[vp.peak_index]),
                         "accuracy": "—", "reward": "—"}
    reward = policy.first(*REWARD_KEYS)
    rp = progress(reward.values, z=p["z"], k=max(3, len(reward) // 5)) if reward is not None else None
    if reward is not None and rp is not None:
        v |= {"reward_metric": reward.key, "r_from": rp.start, "r_to": rp.end,
              "reward": f"{rp.start:.3g} → {rp.end:.3g}"}
    acc = _judge_accuracy(view, p["min_evals"])
    ap = progress(acc.values, z=p["z"]) if acc is not None else None
    if acc is not None and ap is not None:
        v |= {"acc_metric": f"{acc.source}/{acc.label}" if acc.source == "eval" else acc.label,
              "a_from": ap.start, "a_to": ap.end, "accuracy": f"{ap.start:.3g} → {ap.end:.3g}"}
    metrics = tuple(k for k in ("rm/accuracy",) if acc is not None)
    # a fall from the best beyond the noise and by fall_rel of the best level: a point of 0.9 given back is no
    # over-optimisation (a real GPG run: 0.895 → 0.88 while its reward rose 0.946 → 0.984)
    fell = vp.falling and vp.drop >= p["fall_rel"] * abs(vp.peak)
    if rp is not None and rp.rising and fell:
        return [Outcome("fail", "overoptimised", v, metrics=metrics, evidence=v | {"threshold": vp.tol})]
    if ap is not None and ap.rising and not vp.rising:
        return [Outcome("warn", "no_gain", v, metrics=metrics, evidence=v | {"threshold": vp.tol})]
    return [Outcome("ok", "ok", v, metrics=metrics, evidence=v)]


FUNCTIONS = {"rm_learning": rm_learning, "rm_downstream": rm_downstream}
