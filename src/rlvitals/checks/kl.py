"""L1 KL checks (docs/reading-rules.md#kl): sudden jumps (transient ones and damage in the first steps
included; docs/reading-rules.md#kl-jump), the level of the KL to the reference (the 0.01–0.1 band, an
absolute ceiling, and the move from where a KL to a different model started; docs/reading-rules.md#kl-band),
and the shape of its trajectory (docs/reading-rules.md#kl-shape).

Which quantity is which comes from the catalog: ``actor/kl_loss`` and ``actor/reward_kl_penalty``
are per-token KLs to the reference (the quantity the band is about), ``actor/seq_kl`` is
the same KL summed over the response (TRL PPO's ``objective/kl``: per token once divided by the mean
response length, else read on its own scale), and ``actor/ppo_kl`` is the KL between the rollout
policy and the updated one, read for jumps against its own level and held to its own band (how far one step
may move the policy; docs/reading-rules.md#ppo-kl-band).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import signals
from ..signals import median
from ._base import CheckFn, Outcome, RunView, Series, Status
from ._shared import (
    REWARD_KEYS,
    _ends,
    _improving,
    _jump_outcome,
    _level_window,
    _near_zero,
    _rise_onset,
    _short,
    _tenths,
    jumped_at,
)
from .course import course_since

#: per-token KL to the reference policy: as a loss term (veRL use_kl_loss, TRL GRPO) or in the reward
KL_REF_KEYS = ("actor/kl_loss", "actor/reward_kl_penalty")
#: the same KL summed over the response (catalog: TRL PPO objective/kl), and the length that makes it per token
SEQ_KL_KEY, LENGTH_KEY = "actor/seq_kl", "response_length/mean"
#: the per-token KL between the rollout policy and the updated one (one step's move; docs/reading-rules.md#ppo-kl-band)
PPO_KL_KEY = "actor/ppo_kl"
#: values at the start of a run that say where its KL started
HEAD = 3


@dataclass(frozen=True)
class RefKL:
    """The KL to the reference as the checks read it: ``series`` per token (``per_token``) or the
    sequence sum; ``metrics`` the logged keys it comes from; ``offset`` the level it started at
    when that is already above the band at the run's first step (a reference that is not the
    starting policy: a teacher in on-policy distillation), else None."""

    series: Series
    metrics: tuple[str, ...]
    per_token: bool
    offset: float | None


def _ref_kl(view: RunView, high: float) -> RefKL | None:
    """The per-token KL to the reference, or TRL's sequence sum divided by the mean response length,
    or that sum on its own; None when the run logs no KL to the reference."""
    s = view.first(*KL_REF_KEYS)
    metrics: tuple[str, ...] = (s.key,) if s is not None else ()
    per_token = True
    if s is None:
        seq = view.series(SEQ_KL_KEY)
        if seq is None:
            return None
        length = view.series(LENGTH_KEY)
        steps, kl, tokens = seq.aligned(length) if length is not None else (seq.steps, seq.values, None)
        if tokens is not None and len(steps) >= len(seq) // 2 and np.all(tokens > 0):
            s = Series(f"{SEQ_KL_KEY} ÷ {LENGTH_KEY}", steps, kl / tokens)
            metrics = (SEQ_KL_KEY, LENGTH_KEY)
        else:
            s, metrics, per_token = seq, (SEQ_KL_KEY,), False
    return RefKL(s, metrics, per_token, _offset(view, s, high) if per_token else None)


def _offset(view: RunView, s: Series, high: float) -> float | None:
    """The KL's first level when the run's first logged step holds it above the band already. A
    policy that starts as its reference has a KL of ~0 there, so such a KL is measured against
    another model, and only how far it moves from that start can be judged. A log that begins
    later (a resume, the tail of a long run) cannot tell."""
    if view.cut or len(s) < HEAD or s.step(0) > 1:
        return None
    if abs(float(s.values[0])) < high / 10:
        # the very first step reads ~0: this KL is measured against the starting policy, and what it reads
        # one update later is how far that update moved it (a learning rate 100x too high: 0 → 2.8 at step 2)
        return None
    first = float(median(s.values[:HEAD]))
    return first if first >= high else None


def _sustain(n: int, p: Mapping[str, Any]) -> int:
    return max(int(p["min_steps"]), int(p["min_share"] * n))


def _above(x: np.ndarray, threshold: float, sustain: int) -> tuple[int, int] | None:
    """The first stretch of at least ``sustain`` values whose level (a rolling median over 5 % of the
    run) is at or above ``threshold``, as ``(onset, end)``: the onset is where a three-value level
    first crosses it near the stretch's start (a wide centred window crosses a few steps early)."""
    n = len(x)
    window = _level_window(n)
    found = signals.runs_of(signals.rolling_level(x, window) >= threshold, sustain, max_gap=2)
    if not found:
        return None
    start, end = found[0]
    lo, hi = max(0, start - window), min(n, start + window + 1)
    crossed = np.flatnonzero(signals.rolling_level(x, 3)[lo:hi] >= threshold)
    onset = lo + int(crossed[0]) if len(crossed) else start
    # a step that shows it: a three-value level at the run's first step holds the steps after it (0 then 2.8)
    shown = np.flatnonzero(x[onset : end + 1] >= threshold)
    return (onset + int(shown[0]) if len(shown) else onset), end


def kl_jump(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Sudden KL jumps (docs/reading-rules.md#kl-jump: from 0.02 to 0.15, say), transient ones included — a one-step
    spike to many times the recent level is a sharp policy turn even if KL comes back — and a move
    to ``ratio``× the first values within the first steps (before any trailing window has a level).
    Read for the per-update KL (actor/ppo_kl) and the KL to the reference, each against its own level.
    A per-token KL to the reference that started at 0 is also held to the band: a spike that stays
    below ``spike_floor`` nats/token, or a shift that stays inside the band, is a note."""
    out = []
    ref = _ref_kl(view, p["high"])
    ppo_kl = view.series("actor/ppo_kl")
    # (series, held to the band, read for damage in the first steps): the per-update KL of the first
    # steps depends on how many updates a batch gets, not on damage
    targets: list[tuple[Series, bool, bool]] = [(ppo_kl, False, False)] if ppo_kl is not None else []
    if ref is not None:  # the first steps only where this view holds them (not the tail of a long run)
        targets.append((ref.series, ref.per_token and ref.offset is None, not view.cut))
    for s, banded, first_steps in targets:
        key, x = s.key, s.values
        if not np.any(x):
            out.append(Outcome("skipped", "zero", {"metric": key}, metrics=(key,)))  # nothing to read: not judged
            continue
        q = _near_zero(x, p["min_quanta"])
        if q:
            out.append(Outcome("skipped", "quantised", {"metric": key, "quantum": q, "max": float(np.max(np.abs(x)))},
                               metrics=(key,)))
            continue
        early = _early_jump(x, p, banded) if first_steps else []
        settled = early[0].end + 1 if early else 0
        found = early + [j for j in signals.jumps(x, window=p["window"], k=p["k"], ratio=p["ratio"],
                                           min_quanta=p["min_quanta"], settle=p["settle"]) if j.start >= settled]
        if not found:
            out.append(Outcome("ok", "ok", {"metric": key, "ratio": p["ratio"], "level": float(median(x)),
                                            "max": float(np.max(x)), "max_step": s.step(int(np.argmax(x)))},
                               metrics=(key,)))
            continue
        out.append(_isolated(view, s, _jumps_outcome(s, found, p, banded, early=bool(early)), found, p))
    return out


def _isolated(view: RunView, s: Series, out: Outcome, found: list[signals.Jump], p: Mapping[str, Any]) -> Outcome:
    """A warning about transient spikes only — few (under ``repeat_share`` of the steps), each back down at
    once, and nothing else moving at their steps (the gradient norm, the clip fraction, the entropy)
    — is a note: a sharp turn the run shrugged off (a jump is usually bad, docs/reading-rules.md#kl-jump; one that moved
    nothing else and came back is isolated, docs/reading-rules.md#isolated-spikes)."""
    if out.status != "warn" or any(j.stayed for j in found) or len(found) / len(s) >= p["repeat_share"]:
        return out
    steps = [s.step(j.peak) for j in found]
    # not the loss: a KL-regularised loss holds β·KL, so it jumps with the KL by construction (TRL GRPO)
    for key in ("actor/grad_norm", "actor/pg_clipfrac", "actor/entropy"):
        other = view.series(key)
        if other is not None and any(jumped_at(other, step, p["moved_ratio"]) is not None for step in steps):
            return out
    return Outcome("note", "spike_isolated", out.values, out.onset_step, out.span, out.metrics, out.evidence,
                   out.points)


def _early_jump(x: np.ndarray, p: Mapping[str, Any], banded: bool) -> list[signals.Jump]:
    """A move to ``ratio``× the first values within the first steps, as a jump that stayed; for a KL
    held to the band, only one that reached above the band (a KL leaving 0 is no damage)."""
    # a KL held to the band starts at ~0 and climbs in its first steps as a matter of course (a healthy run's
    # 0.013 → 0.15 in eight steps): only a move within a few updates is a jump, a climb over ten is kl_band's
    e = signals.early_move(x, factor=p["ratio"], head=HEAD, within=2 * HEAD if banded else 15)
    if e is None or (banded and float(signals.rolling_level(x, 3)[e.end]) < p["high"]):
        return []
    spread = max(signals.robust_scale(x[:HEAD], floor=0.0), signals.quantum(x), 1e-12)
    if e.value - e.baseline < p["k"] * max(spread, signals.noise_scale(x[: e.end + 1])):
        return []  # no farther than the first steps' own noise
    return [signals.Jump(e.start, e.end, e.peak, float(x[e.peak]), e.baseline, e.value, e.score,
                         (e.value - e.baseline) / spread, True)]


def _jumps_outcome(s: Series, found: list[signals.Jump], p: Mapping[str, Any], banded: bool,
                   early: bool) -> Outcome:
    """Severity: a jump that stayed at ``fail_ratio``× its level (above the band, for a KL held to
    it) fails; a transient spike never does. For a KL held to the band, spikes below
    ``spike_floor`` and shifts that stay inside the band are notes."""
    def counts(j: signals.Jump) -> bool:
        return not banded or (j.after >= p["high"] if j.stayed and np.isfinite(j.after) else
                              j.value >= p["spike_floor"])

    big = [j for j in found if j.stayed and j.ratio >= p["fail_ratio"] and counts(j)]
    status: Status = "fail" if big else "warn" if any(counts(j) for j in found) else "note"
    extra = {"k": p["k"], "ratio_threshold": p["ratio"], "high": p["high"], "spike_floor": p["spike_floor"]}
    out = _jump_outcome(s, found, status, extra)
    template = "note" if status == "note" else "early" if early and len(found) == 1 else out.template
    spikes = tuple(s.step(j.peak) for j in found if not j.stayed)
    return Outcome(out.status, template, out.values, out.onset_step, out.span, out.metrics, out.evidence,
                   points=spikes if len(spikes) == len(found) else ())


# -- KL level and shape ------------------------------------------------------------------------

def kl_band(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The level of the KL to the reference. Per token: above ``ceiling`` nats/token for a sustained
    stretch fails in any run ("several nats per token"); a KL that started at 0 is held to the
    band PPO training usually keeps the KL in, 0.01–0.1 (docs/reading-rules.md#kl-band) — above
    it and still rising, or far above it, warns (far above but levelled off with the outcome holding is a
    note), above it but level is noted as ok, below it warns
    only when the reward is not improving either; a KL that started above the band (a different
    reference) warns once it moves to ``move``× where it started. A sequence sum with no length to
    divide by is read on its own scale: ``seq_growth``× its early level. (The per-update KL, actor/ppo_kl,
    has a band of its own: :func:`ppo_kl_band`.)"""
    ref = _ref_kl(view, p["high"])
    return [] if ref is None else [_ref_band(view, ref, p)]


def ppo_kl_band(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """actor/ppo_kl against a band of its own (docs/reading-rules.md#ppo-kl-band): the per-token KL between the
    policy that sampled the batch and the one the step's updates made (veRL: the mean of old_log_prob − log_prob
    over the response tokens; TRL PPO's approxkl): how far one step moved the policy, not how far the run
    drifted from its reference. It has no lower bound (exactly 0
    with one update per batch; small is what PPO's clipping is for). A sustained level above ``ppo_high``
    (the dictionary's band top: one step moving the policy as far as a whole run usually drifts from its
    reference) warns; above ``ppo_ceiling`` (ratios of e on average, far outside any clip range) fails."""
    s = view.series(PPO_KL_KEY)
    if s is None:
        return []
    x, n = s.values, len(s)
    values: dict[str, Any] = {"metric": s.key, "ppo_high": p["ppo_high"], "ppo_ceiling": p["ppo_ceiling"],
                              "level": float(median(x[-max(3, n // 10):])), "max": float(np.max(x))}
    if not np.any(x):
        return [Outcome("skipped", "zero", values, metrics=(s.key,))]
    level = signals.rolling_level(x, _level_window(n))
    bands: tuple[tuple[Status, float], ...] = (("fail", p["ppo_ceiling"]), ("warn", p["ppo_high"]))
    for status, threshold in bands:
        over = _above(x, threshold, _sustain(n, p))
        if over is None:
            continue
        start, end = over
        values |= {"step": s.step(start), "end_step": s.step(end), "steps": end - start + 1,
                   "peak": float(np.max(level[start : end + 1]))}
        return [Outcome(status, status, values, onset_step=s.step(start), span=s.span(start, end),
                        metrics=(s.key,), evidence={"level": values["level"], "peak": values["peak"],
                                                    "threshold": threshold})]
    return [Outcome("ok", "ok", values, metrics=(s.key,))]


def _ref_band(view: RunView, ref: RefKL, p: Mapping[str, Any]) -> Outcome:
    """The KL to the reference against the band, the ceiling, or where it started (see :func:`kl_band`)."""
    s, n = ref.series, len(ref.series)
    if not ref.per_token:
        return _seq_scale(s, ref.metrics, p)
    level = signals.rolling_level(s.values, _level_window(n))
    _, mid, last, b = _tenths(s.values)
    values: dict[str, Any] = {"metric": s.key, "low": p["low"], "high": p["high"], "level": last, "mid": mid,
                              "growth": last / mid if mid > 0 else float("inf"), "ceiling": p["ceiling"]}
    over = _above(s.values, p["ceiling"], _sustain(n, p))
    if over:
        start, end = over
        values |= {"step": s.step(start), "peak": float(np.max(level[start:])), "first": ref.offset or 0.0}
        return Outcome("fail", "fail_ceiling", values, onset_step=s.step(start), span=s.span(start, end),
                       metrics=ref.metrics, evidence={"level": last, "peak": values["peak"], "threshold": p["ceiling"]})
    if ref.offset is not None:
        return _moved(s, ref, level, values, p)
    return _banded(view, s, ref.metrics, level, values, p)


def _moved(s: Series, ref: RefKL, level: np.ndarray, values: dict[str, Any], p: Mapping[str, Any]) -> Outcome:
    """A KL that started above the band, judged by how far it moved from where it started."""
    first = float(ref.offset or 0.0)
    values |= {"first": first, "move": p["move"], "peak": float(np.max(level)), "ratio": float(np.max(level)) / first}
    up = _above(s.values, p["move"] * first, _sustain(len(s), p))
    if up is None:
        return Outcome("ok", "ok_offset", values, metrics=ref.metrics)
    start, end = up
    values |= {"step": s.step(start)}
    return Outcome("warn", "warn_moved", values, onset_step=s.step(start), span=s.span(start, end),
                   metrics=ref.metrics, evidence={"baseline": first, "peak": values["peak"],
                                                  "threshold": p["move"] * first, "ratio": values["ratio"]})


def _banded(view: RunView, s: Series, metrics: tuple[str, ...], level: np.ndarray, values: dict[str, Any],
            p: Mapping[str, Any]) -> Outcome:
    """A per-token KL that started at 0, against the band (docs/reading-rules.md#kl-band)."""
    n = len(s)
    b = max(3, n // 10)
    sustain = _sustain(n, p)
    stretches = signals.runs_of(level >= p["high"], sustain, max_gap=2)
    if stretches:
        # anywhere in the run, not only in its first stretch above the band; dated where it got that far
        far = _above(s.values, p["far"] * p["high"], int(p["min_steps"]))
        last_start, last_end = stretches[-1]
        rising = last_end >= n - b and values["growth"] >= p["rising"]
        start, end = (far[0], n - 1) if far else (last_start, last_end) if rising else stretches[0]
        values |= {"step": s.step(start), "steps": s.step(end) - s.step(start) + 1,
                   "peak": float(np.max(level[start:]))}
        status: Status = "warn" if far or rising else "ok"
        template = "warn_far" if far else "warn_rising" if rising else "ok_high"
        # climbed there after the first tenth of the run (a KL far out from the first updates is a policy broken
        # at once, whose outcome collapsed too fast for a course to show) and levelled off
        level_off = far and far[0] >= b and values["growth"] < p["rising"]
        course = course_since(view, values["step"]) if level_off else None
        if course is not None and not course.falling:
            # ... with the outcome holding since: the KL barely constrains the policy, yet nothing it protects
            # is seen lost — could be better, not at risk
            status, template = "note", "far_level"
            values |= course.words()
        return Outcome(status, template, values, onset_step=s.step(start) if status != "ok" else None,
                       span=s.span(start, end), metrics=metrics,
                       evidence={"level": values["level"], "peak": values["peak"], "threshold": p["high"],
                                 "growth_last_half": values["growth"]})
    below_share = float(np.mean(level[b:] < p["low"])) if n > b else 0.0
    if below_share < p["low_share"]:
        return Outcome("ok", "ok", values, metrics=metrics)
    values |= {"share": below_share, "needed": p["low_min_steps"]}
    if n < p["low_min_steps"]:  # a KL starts at 0: a short run has not had the time to move
        return Outcome("skipped", "low_short", values | {"n": n}, metrics=metrics)
    r = view.first(*REWARD_KEYS)
    if r is None:
        return Outcome("skipped", "low_no_reward", values, metrics=metrics)
    rose, r0, r1 = _improving(r.values)
    values |= {"reward": r.key, "r_first": r0, "r_last": r1}
    # a KL that never left ~0 has not moved from the first step: that is where the problem starts (the first
    # tenth is only skipped in measuring the share, since every KL starts at 0)
    # a last median above the first that is not a clear rise is not "did not improve": said as within the noise
    template = "ok_low" if rose else "warn_low_noisy" if r1 > r0 else "warn_low"
    return Outcome("ok" if rose else "warn", template, values,
                   onset_step=None if rose else s.step(0), span=None if rose else s.span(0, n - 1),
                   metrics=(*metrics, r.key),
                   evidence={"level": values["level"], "threshold": p["low"], "share_below": below_share,
                             "reward_first": r0, "reward_last": r1})


def _seq_scale(s: Series, metrics: tuple[str, ...], p: Mapping[str, Any]) -> Outcome:
    """A KL summed over the response, with no length to make it per token: its level against its
    early level (the first tenth), when that early stretch holds a level rather than a ramp from 0."""
    x, n = s.values, len(s)
    b = max(5, n // 10)
    early = float(median(x[:b]))
    values = {"metric": s.key, "early": early, "factor": p["seq_growth"], "b": b, "level": float(median(x[-b:]))}
    if early <= 0 or signals.trend(x[:b]) >= p["ramp_tau"]:
        return Outcome("skipped", "seq_ramp", values, metrics=metrics)
    level = signals.rolling_level(x, _level_window(n))
    up = _above(x, p["seq_growth"] * early, _sustain(n, p))
    values |= {"peak": float(np.max(level)), "ratio": float(np.max(level)) / early}
    if up is None:
        return Outcome("ok", "ok_seq", values, metrics=metrics)
    start, end = up
    values |= {"step": s.step(start)}
    return Outcome("warn", "warn_seq", values, onset_step=s.step(start), span=s.span(start, end), metrics=metrics,
                   evidence={"baseline": early, "peak": values["peak"], "ratio": values["ratio"],
                             "threshold": p["seq_growth"] * early})


def _runaway_onset(x: np.ndarray, level: np.ndarray, mid: float, window: int) -> int:
    """The first step of a KL's runaway: after the level was last at its mid-run value (the median of the run's
    middle tenth) — from there it only went up —, the first value above it and its noise within half a level
    window (the level, a centred median, moves when most of its window has). A hinge fitted to the whole run
    puts the bend of a rise that levels off at the top ten steps early (step 21 for the corpus's KL-in-reward
    run whose penalty holds 0.51-0.57 until step 31 and reads 0.67 at 32), and a KL that starts at 0 rises fast
    at first, which is no runaway."""
    below = np.flatnonzero(level <= mid)
    at = min(len(level) - 1, int(below[-1]) + 1) if len(below) else 0
    # a value counts as up once it clears the plateau's own noise (0.565 after 0.47-0.54 is still the plateau)
    top = mid + 2 * signals.noise_scale(x[:at]) if at >= 3 else mid
    lo, hi = max(1, at - window // 2), min(len(x), at + window // 2 + 1)
    ups = [i for i in range(lo, hi) if x[i] > top >= x[i - 1]]
    return ups[0] if ups else at


def kl_shape(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The KL-to-reference trajectory (docs/reading-rules.md#kl-shape: the KL should grow slowly and
    steadily, and the shape of its trajectory tells a lot): runaway growth — the second half adds ``accel``× what the
    first half did and at least multiplies the level by ``growth`` — or a KL that rose and fell back near zero. A
    per-token KL that started at 0 and ends inside the band has not run away: a slow rise there is
    normal, whatever its shape."""
    ref = _ref_kl(view, p["high"])
    if ref is None:
        return []
    s = ref.series
    x, n = s.values, len(s)
    if n < p["min_steps"]:
        return [_short(s, p["min_steps"])]
    first, mid, last, b = _tenths(x)
    floor = max(signals.noise_scale(x) / np.sqrt(b), signals.quantum(x), 1e-12)
    early, late = mid - first, last - mid
    values: dict[str, Any] = {"metric": s.key, "first": first, "mid": mid, "last": last, "high": p["high"],
                              "accel": late / max(early, floor), "growth": last / max(mid, floor)}
    if late > floor and values["accel"] >= p["accel"] and values["growth"] >= p["growth"]:
        if ref.per_token and ref.offset is None and last <= p["high"]:
            return [Outcome("ok", "ok_in_band", values, metrics=ref.metrics)]
        level = signals.rolling_level(x, _level_window(n))
        knee = _runaway_onset(x, level, mid, _level_window(n))
        status: Status = "fail" if values["growth"] >= p["fail_growth"] else "warn"
        values |= {"step": s.step(knee), "knee_level": float(level[knee])}
        # a first half that did not rise (mid-run within 10 % of the start) has no rise to be a multiple of: its
        # words say it held its level
        template = "runaway_flat" if early <= max(floor, 0.1 * abs(first)) else "runaway"
        return [Outcome(status, template, values, onset_step=s.step(knee), span=s.span(knee, n - 1),
                        metrics=ref.metrics, evidence={"first": first, "mid": mid, "last": last,
                                                       "accel": values["accel"], "growth": values["growth"],
                                                       "threshold_accel": p["accel"],
                                                       "threshold_growth": p["growth"]})]
    fall = signals.fall_from_peak(x, window=_level_window(n))
    # a per-token KL that never reached the band's bottom has not moved: its wiggles around 0 (a k1 estimate
    # is often negative) are no rise and fall
    moved = not ref.per_token or ref.offset is not None or (fall is not None and fall.baseline >= p["low"])
    if fall is not None and moved and fall.score >= p["fallback"] and fall.baseline > p["fallback"] * floor:
        values |= {"peak": fall.baseline, "peak_step": s.step(fall.peak), "recent": fall.value,
                   "step": s.step(fall.start), "drop": fall.score}
        return [Outcome("warn", "fallback", values, onset_step=s.step(fall.start), span=s.span(fall.start, n - 1),
                        metrics=ref.metrics, evidence={"peak": fall.baseline, "value": fall.value,
                                                       "drop": fall.score, "threshold": p["fallback"]})]
    return [Outcome("ok", "ok", values, metrics=ref.metrics)]


#: the rollout engine vs the trainer on the same tokens, most direct first (catalog: L1, "rollout–trainer mismatch");
#: last, the same gap computed from a rollout dump's per-token log-probs
MISMATCH_KEYS = ("rollout_corr/kl", "training/rollout_probs_diff_mean", "rollout_corr/logp_abs_diff_mean",
                 "token/mismatch_logp_abs_diff")
#: the policy trained vs the policy that sampled, from the dump's per-token log-probs: staleness, not mismatch
STALENESS_KEY = "token/staleness_logp_abs_diff"


def rollout_mismatch(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The rollout engine (vLLM/SGLang) and the trainer drifting apart on the same tokens: the
    mismatch metric rising ``rise_factor``× with a clear trend, or jumping to ``rise_factor``× its
    level and staying there (precision, kernels, stale weights — training silently off-policy).
    ``fail_factor``× is a failure. Scale-free: the run's own early level is the reference.
    Where the rollouts carry the current, old and rollout log-probs, off-policy staleness (current vs
    old) is judged apart, by the same rise, and named as such (``*_stale`` templates): at most a warning."""
    out = [_drift(s, p, "") for s in (view.first(*MISMATCH_KEYS),) if s is not None]
    return out + [_drift(s, p, "_stale") for s in (view.series(STALENESS_KEY),) if s is not None]


def _drift(s: Series, p: Mapping[str, Any], kind: str) -> Outcome:
    """One log-prob gap judged by its rise from its early level; ``kind`` picks the templates."""
    x, n = s.values, len(s)
    first, last, floor = _ends(x, p["min_quanta"])
    factor = last / max(first, floor)
    values = {"metric": s.key, "first": first, "last": last, "max": float(np.max(x)), "factor": factor}
    grown = factor >= p["rise_factor"] and last - first > floor
    shift = signals.level_shift(x, direction="up") if grown else None
    if not grown or (signals.trend(x) < p["tau"] and shift is None):
        return Outcome("ok", f"ok{kind}", values, metrics=(s.key,))
    onset = shift.start if shift is not None else _rise_onset(x, first, last, floor)
    status: Status = "fail" if factor >= p["fail_factor"] and not kind else "warn"
    values["step"] = s.step(onset)
    return Outcome(status, f"{status}{kind}", values, onset_step=s.step(onset), span=s.span(onset, n - 1),
                   metrics=(s.key,),
                   evidence={"baseline": first, "value": last, "ratio": factor, "threshold": p["rise_factor"]})


FUNCTIONS: dict[str, CheckFn] = {
    "rollout_mismatch": rollout_mismatch,
    "kl_jump": kl_jump,
    "kl_band": kl_band,
    "ppo_kl_band": ppo_kl_band,
    "kl_shape": kl_shape,
}
