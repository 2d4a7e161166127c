"""L1 KL checks: sudden jumps (transient ones included), PPO's customary band, and the shape of
the KL-to-reference trajectory (seed-000 §2.4; seed-004 §二)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import signals
from ._base import CheckFn, Outcome, RunView, Status
from ._shared import (
    REWARD_KEYS,
    _ends,
    _improving,
    _jump_outcome,
    _knee,
    _level_window,
    _near_zero,
    _rise_onset,
    _short,
    _tenths,
)

#: KL to the reference policy: as a loss term (veRL use_kl_loss, TRL GRPO) or in the reward (PPO)
KL_REF_KEYS = ("actor/kl_loss", "actor/reward_kl_penalty")


def kl_jump(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Sudden KL jumps (seed-000 §2.4: "比如从 0.02 跳到 0.15"), transient ones included — a one-step
    spike to many times the recent level is a sharp policy turn even if KL comes back. Read for
    the per-update KL (actor/ppo_kl) and the KL to the reference, each against its own level."""
    out = []
    for key in ("actor/ppo_kl", *KL_REF_KEYS):
        s = view.series(key)
        if s is None:
            continue
        x = s.values
        if not np.any(x):
            out.append(Outcome("ok", "zero", {"metric": key}, metrics=(key,)))
            continue
        q = _near_zero(x, p["min_quanta"])
        if q:
            out.append(Outcome("ok", "quantised", {"metric": key, "quantum": q, "max": float(np.max(np.abs(x)))},
                               metrics=(key,)))
            continue
        found = signals.jumps(x, window=p["window"], k=p["k"], ratio=p["ratio"], min_quanta=p["min_quanta"],
                              settle=p["settle"])
        if not found:
            out.append(Outcome("ok", "ok", {"metric": key, "ratio": p["ratio"], "level": float(np.median(x)),
                                            "max": float(np.max(x)), "max_step": s.step(int(np.argmax(x)))},
                               metrics=(key,)))
            continue
        big = [j for j in found if j.ratio >= p["fail_ratio"]]
        status: Status = "fail" if len(big) >= p["fail_count"] or any(j.stayed for j in big) else "warn"
        out.append(_jump_outcome(s, found, status, {"k": p["k"], "ratio_threshold": p["ratio"]}))
    return out


# -- KL level and shape ------------------------------------------------------------------------

def kl_band(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """PPO's customary KL range (seed-000 §2.4: "一般 PPO 训练中会把 KL 控制在一个合理范围（比如
    0.01~0.1）"). Above it and still rising, or far above it, warns; above it but flat is noted.
    Below it warns only when the reward is not improving either (the policy is not learning)."""
    s = view.first(*KL_REF_KEYS)
    if s is None:
        return []
    if view.algorithm != "ppo" and view.series("critic/vf_loss") is None:  # a critic makes it PPO-like
        return [Outcome("skipped", "not_ppo", {"algorithm": view.algorithm, "metric": s.key}, metrics=(s.key,))]
    x, n = s.values, len(s)
    level = signals.rolling_level(x, _level_window(n))
    _, mid, last, b = _tenths(x)
    values: dict[str, Any] = {"metric": s.key, "low": p["low"], "high": p["high"], "level": last, "mid": mid,
                              "growth": last / mid if mid > 0 else float("inf")}
    sustain = max(p["min_steps"], int(p["min_share"] * n))
    above = signals.runs_of(level > p["high"], sustain, max_gap=2)
    if above:
        start, end = above[0]
        values |= {"step": s.step(start), "steps": s.step(end) - s.step(start) + 1,
                   "peak": float(np.max(level[start : end + 1]))}
        rising = end >= n - b and values["growth"] >= p["rising"]
        far = values["peak"] >= p["far"] * p["high"]
        status: Status = "warn" if rising or far else "ok"
        template = "warn_far" if far else "warn_rising" if rising else "ok_high"
        return [Outcome(status, template, values, onset_step=s.step(start) if status != "ok" else None,
                        span=s.span(start, end), metrics=(s.key,),
                        evidence={"level": last, "peak": values["peak"], "threshold": p["high"],
                                  "growth_last_half": values["growth"]})]
    below_share = float(np.mean(level[b:] < p["low"])) if n > b else 0.0
    if below_share >= p["low_share"]:
        r = view.first(*REWARD_KEYS)
        if r is None:
            return [Outcome("ok", "low_no_reward", values | {"share": below_share}, metrics=(s.key,))]
        rose, r0, r1 = _improving(r.values)
        values |= {"share": below_share, "reward": r.key, "r_first": r0, "r_last": r1}
        return [Outcome("ok" if rose else "warn", "ok_low" if rose else "warn_low", values,
                        onset_step=None if rose else s.step(b), metrics=(s.key, r.key),
                        evidence={"level": last, "threshold": p["low"], "share_below": below_share,
                                  "reward_first": r0, "reward_last": r1})]
    return [Outcome("ok", "ok", values, metrics=(s.key,))]


def kl_shape(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The KL-to-reference trajectory (seed-000 §2.4 "KL 应该缓慢、稳定地增长"; seed-004 §二 "轨迹
    形状非常能说明问题"): runaway growth — the second half adds ``accel``× what the first half did
    and at least multiplies the level by ``growth`` — or a KL that rose and fell back near zero."""
    s = view.first(*KL_REF_KEYS)
    if s is None:
        return []
    x, n = s.values, len(s)
    if n < p["min_steps"]:
        return [_short(s, p["min_steps"])]
    first, mid, last, b = _tenths(x)
    floor = max(signals.noise_scale(x) / np.sqrt(b), signals.quantum(x), 1e-12)
    early, late = mid - first, last - mid
    values: dict[str, Any] = {"metric": s.key, "first": first, "mid": mid, "last": last,
                              "accel": late / max(early, floor), "growth": last / max(mid, floor)}
    if late > floor and values["accel"] >= p["accel"] and values["growth"] >= p["growth"]:
        level = signals.rolling_level(x, _level_window(n))
        knee = _knee(np.log(np.maximum(level, max(floor, 1e-2 * abs(mid)))))
        status: Status = "fail" if values["growth"] >= p["fail_growth"] else "warn"
        values |= {"step": s.step(knee), "knee_level": float(level[knee])}
        return [Outcome(status, "runaway", values, onset_step=s.step(knee), span=s.span(knee, n - 1),
                        metrics=(s.key,), evidence={"first": first, "mid": mid, "last": last,
                                                    "accel": values["accel"], "growth": values["growth"],
                                                    "threshold_accel": p["accel"], "threshold_growth": p["growth"]})]
    fall = signals.fall_from_peak(x, window=_level_window(n))
    if fall is not None and fall.score >= p["fallback"] and fall.baseline > p["fallback"] * floor:
        values |= {"peak": fall.baseline, "peak_step": s.step(fall.peak), "recent": fall.value,
                   "step": s.step(fall.start), "drop": fall.score}
        return [Outcome("warn", "fallback", values, onset_step=s.step(fall.start), span=s.span(fall.start, n - 1),
                        metrics=(s.key,), evidence={"peak": fall.baseline, "value": fall.value, "drop": fall.score,
                                                    "threshold": p["fallback"]})]
    return [Outcome("ok", "ok", values, metrics=(s.key,))]


# -- gradient norm: sustained growth or collapse ---------------------------------------------


#: the rollout engine vs the trainer on the same tokens, most direct first (catalog: L1, "rollout–trainer mismatch")
MISMATCH_KEYS = ("rollout_corr/kl", "training/rollout_probs_diff_mean", "rollout_corr/logp_abs_diff_mean")


def rollout_mismatch(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The rollout engine (vLLM/SGLang) and the trainer drifting apart on the same tokens: the
    mismatch metric rising ``rise_factor``× with a clear trend, or jumping to ``rise_factor``× its
    level and staying there (precision, kernels, stale weights — training silently off-policy).
    ``fail_factor``× is a failure. Scale-free: the run's own early level is the reference."""
    s = view.first(*MISMATCH_KEYS)
    if s is None:
        return []
    x, n = s.values, len(s)
    first, last, floor = _ends(x, p["min_quanta"])
    factor = last / max(first, floor)
    values = {"metric": s.key, "first": first, "last": last, "max": float(np.max(x)), "factor": factor}
    grown = factor >= p["rise_factor"] and last - first > floor
    shift = signals.level_shift(x, direction="up") if grown else None
    if not grown or (signals.trend(x) < p["tau"] and shift is None):
        return [Outcome("ok", "ok", values, metrics=(s.key,))]
    onset = shift.start if shift is not None else _rise_onset(x, first, last, floor)
    status: Status = "fail" if factor >= p["fail_factor"] else "warn"
    values["step"] = s.step(onset)
    return [Outcome(status, status, values, onset_step=s.step(onset), span=s.span(onset, n - 1), metrics=(s.key,),
                    evidence={"baseline": first, "value": last, "ratio": factor, "threshold": p["rise_factor"]})]


FUNCTIONS: dict[str, CheckFn] = {
    "rollout_mismatch": rollout_mismatch,
    "kl_jump": kl_jump,
    "kl_band": kl_band,
    "kl_shape": kl_shape,
}
