"""Training losses: a loss that jumps, a loss that climbs steadily (read per algorithm), a policy-gradient loss
that climbs, and a preference loss that never falls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import signals
from ...signals import median
from .._base import Outcome, RunView, Series, Status
from .._preference import loss_mark
from .._shared import _fmt_steps, _jump_outcome, _knee, _level_window, _short, _tenths
from ._windows import _rise, _windows

LOSS_KEYS = ("actor/loss", "loss/dpo", "rm/loss", "sft/loss")


def loss_jump(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The training loss jumping up, for a moment or for good, far beyond its own recent spread
    (docs/reading-rules.md#loss-jump: a sudden jump usually means too large a learning rate, a sudden shift
    in the data, or a policy swinging hard).
    A jump that stays up, or ``fail_count`` jumps, fail. A rise smaller than ``min_rise`` of the
    loss's size at the start is no jump (a saturated DPO loss of 0 that blips by a thousandth).
    An RL loss (GRPO/PPO) is a policy-gradient term with zero-mean advantages plus β·KL: noisy,
    sign-changing, and spiking with the KL (read by kl_jump), so there only a lasting shift counts.
    A preference loss fallen near 0 (under ``near_zero`` for a loss that starts at ln 2) has saturated: a
    batch holding a pair not yet separated spikes from there and comes back, which is no jump either (a
    falling loss is not a jump; pref_accuracy_saturated reads the saturation); a lasting rise still is."""
    s = view.first(*LOSS_KEYS)
    if s is None:
        return []
    x = s.values
    positive = float(np.quantile(x, 0.05)) >= 0
    # a ratio and the start-up guard only mean something for a loss that cannot go negative
    found = signals.jumps(x, window=p["window"], k=p["k"], ratio=p["ratio"] if positive else None,
                          min_quanta=p["min_quanta"], settle=p["settle"] if positive else 0.0)
    size = float(median(np.abs(x[:3])))
    found = [j for j in found if j.value - j.before >= p["min_rise"] * size]
    rl = view.family == "rl"
    floor = loss_mark(x, p["near_zero"])[1] if view.family == "preference" else -np.inf
    # from near 0 only a rise that held with values after it counts (a last batch cannot show it lasted)
    lasted = [j.stayed and (j.before > floor or np.isfinite(j.after)) for j in found]
    batches = [j.peak for j, kept in zip(found, lasted, strict=True) if not kept and j.before <= floor]
    found = [j for j, kept in zip(found, lasted, strict=True) if kept or (not rl and j.before > floor)]
    if not found:
        first, _, last, _ = _tenths(x)
        template = "ok_rl" if rl else "ok_saturated" if batches else "ok"
        return [Outcome("ok", template, {"metric": s.key, "k": p["k"], "first": first, "last": last,
                                         "count": len(batches), "steps": _fmt_steps(s, batches)}, metrics=(s.key,))]
    big = [j for j in found if j.score >= p["fail_k"]]
    status: Status = "fail" if any(j.stayed for j in found) or len(big) >= p["fail_count"] else "warn"
    out = _jump_outcome(s, found, status, {"k": p["k"], "fail_k": p["fail_k"]})
    spikes = tuple(s.step(j.peak) for j in found)
    return [Outcome(out.status, out.template, out.values, out.onset_step, out.span, out.metrics, out.evidence,
                    points=spikes if not any(j.stayed for j in found) else ())]


def pg_loss_climb(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """actor/pg_loss climbing for a sustained stretch (docs/reading-rules.md#pg-loss-climb: noisy is
    normal, a sustained climb is certainly a problem): a window of a fifth of the run with trend ≥ ``tau`` whose level
    rose ≥ ``k``× the step noise. Still climbing at the end with a rise ≥ ``fail_k`` fails."""
    s = view.series("actor/pg_loss")
    if s is None:
        return []
    x, n = s.values, len(s)
    if n < 2 * p["min_window"]:
        return [_short(s, 2 * p["min_window"])]
    sd = max(signals.noise_scale(x), signals.quantum(x), 1e-12)
    width = max(p["min_window"], n // 5)
    wins = _windows(n, width)
    # the rise first: it is cheap, and most windows of a loss do not rise (the trend is then not needed)
    hits = signals.runs_of(np.array([_rise(x[a:b], sd) >= p["k"] and signals.trend(x[a:b]) >= p["tau"]
                                     for a, b in wins], dtype=bool))
    values = {"metric": s.key, "k": p["k"], "window": width, "noise": sd}
    if not hits:
        first, _, last, _ = _tenths(x)
        return [Outcome("ok", "ok", values | {"first": first, "last": last}, metrics=(s.key,))]
    a0, stretch_end = wins[hits[0][0]][0], wins[hits[0][1]][1]
    level = signals.rolling_level(x, _level_window(n))
    lo = max(0, a0 - width // 2)
    onset = lo + _knee(x[lo:stretch_end])  # where the climb begins
    end = stretch_end - 1
    rise = float(level[end] - level[onset]) / sd
    after = x[end + 1 : end + 1 + max(3, width // 4)]
    if len(after) and float(median(after)) < float(level[onset] + 0.5 * (level[end] - level[onset])):
        # back down within a few steps: a burst (a moment of the run, read by the jump and grad checks),
        # not the sustained climb the rule means (docs/reading-rules.md#pg-loss-climb)
        first, _, last, _ = _tenths(x)
        values |= {"step": s.step(onset), "end_step": s.step(end), "after": float(median(after)),
                   "from": float(level[onset]), "to": float(level[end]), "first": first, "last": last}
        return [Outcome("ok", "ok_burst", values, metrics=(s.key,))]
    fail = end >= n - 1 and rise >= p["fail_k"]
    values |= {"step": s.step(onset), "end_step": s.step(end), "from": float(level[onset]), "to": float(level[end]),
               "rise": rise, "steps": s.step(end) - s.step(onset) + 1}
    return [Outcome("fail" if fail else "warn", "fail" if fail else "warn", values, onset_step=s.step(onset),
                    span=s.span(onset, end), metrics=(s.key,),
                    evidence={"baseline": float(level[onset]), "value": float(level[end]), "rise_sd": rise,
                              "threshold_sd": p["k"], "noise_sd": sd})]


#: the KL to the reference as an RL loss holds it (× β): a climbing total loss that this explains is its regulariser
_KL_TERM_KEYS = ("actor/kl_loss", "actor/reward_kl_penalty")


def _climb(x: np.ndarray, p: Mapping[str, Any]) -> tuple[int, float, float, float] | None:
    """A steady climb of a loss from its lowest level to its end, as ``(index of the low, low, end, tol)``: the
    end (a median of a fifth of the run) above the lowest level before it (a rolling median of a fifth) by
    more than ``z`` standard errors of their difference and by ``min_rise`` of the low's size, rising in
    both halves of the stretch from the low (Kendall trend ≥ ``tau`` in each: a steady climb, not one step up,
    which is loss_jump's). None when the loss does not climb so."""
    n = len(x)
    k = max(3, n // 5)
    level = signals.rolling_level(x, k)
    low_i = int(np.argmin(level[: n - k]))
    low, end = float(level[low_i]), float(median(x[-k:]))
    noise = max(signals.noise_scale(x), signals.quantum(x), 1e-12)
    tol = p["z"] * 1.25 * noise * float(np.sqrt(2.0 / k))
    stretch = x[low_i:]
    half = len(stretch) // 2
    if end - low <= tol or end - low < p["min_rise"] * abs(low) or half < 4:
        return None
    if min(signals.trend(stretch[:half]), signals.trend(stretch[half:])) < p["tau"]:
        return None
    return low_i, low, end, tol


def loss_trend(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The optimised loss should fall overall (docs/reading-rules.md#loss-trend); per algorithm, what a steady
    climb means. A loss on fixed data — preference (DPO, KTO, ORPO…), reward-model, SFT — that climbs steadily
    from its lowest level (:func:`_climb`) is optimisation going backwards: a warning; climbed back above where
    it started, a failure. An RL loss is a policy term whose advantages are normalised to mean ~0 in each batch
    (GRPO, DAPO, RLOO; PPO's whitened GAE) plus β·KL and an entropy bonus: its level is no measure of progress,
    so a climb is read through its parts — the policy term's own climb is pg_loss_climb's (not said twice),
    one the KL to the reference explains is the regulariser doing its work (ok), and one no logged part
    explains cannot be judged. Fewer than ``min_points`` values: not judged."""
    s = view.first(*LOSS_KEYS)
    if s is None:
        return []
    x, n = s.values, len(s)
    if n < p["min_points"]:
        return [_short(s, int(p["min_points"]))]
    first, _, last, _ = _tenths(x)
    values: dict[str, Any] = {"metric": s.key, "first": first, "last": last, "n": n}
    found = _climb(x, p)
    if found is None:
        return [Outcome("ok", "ok", values, metrics=(s.key,))]
    low_i, low, end, tol = found
    values |= {"low": low, "low_step": s.step(low_i), "end": end, "rise": end - low, "noise": tol,
               "start": float(median(x[: max(3, n // 5)]))}
    if view.family == "rl":
        return [_rl_climb(view, s, values)]
    status: Status = "fail" if end > values["start"] + tol else "warn"
    return [Outcome(status, status, values, onset_step=s.step(low_i), span=s.span(low_i, n - 1), metrics=(s.key,),
                    evidence={"baseline": low, "value": end, "start": values["start"], "threshold": tol,
                              "tau": p["tau"]})]


def _rl_climb(view: RunView, s: Series, values: dict[str, Any]) -> Outcome:
    """Which part of an RL loss climbed: the policy term (pg_loss, when logged and it rose by half the total's
    rise or more over the same steps), the KL to the reference (rose over those steps), or none logged."""
    since = values["low_step"]
    parts = [(key, _rise_since(view.series(key), since)) for key in ("actor/pg_loss", *_KL_TERM_KEYS)]
    pg = parts[0][1]
    if pg is not None and pg >= 0.5 * values["rise"]:
        return Outcome("skipped", "rl_policy", values | {"part": "actor/pg_loss", "part_rise": pg},
                       metrics=(s.key, "actor/pg_loss"))
    kl = next(((key, rise) for key, rise in parts[1:] if rise is not None and rise > 0), None)
    if kl is not None:
        return Outcome("ok", "rl_kl", values | {"part": kl[0], "part_rise": kl[1]}, metrics=(s.key, kl[0]))
    return Outcome("skipped", "rl_unread", values, metrics=(s.key,))


def _rise_since(s: Series | None, step: int) -> float | None:
    """How much ``s`` rose from ``step`` to the end: its last fifth's median minus its median over the first
    fifth from ``step``; None when it is not logged or has too few values there."""
    if s is None:
        return None
    x = s.values[s.steps >= step]
    if len(x) < 10:
        return None
    k = max(3, len(x) // 5)
    return float(median(x[-k:]) - median(x[:k]))


#: the loss of a preference objective when the policy still equals its reference (every log-ratio 0):
#: DPO's sigmoid loss −log σ(0) = ln 2; KTO's 1 − σ(0) = 0.5
_REFERENCE_LOSS = {"dpo-family": float(np.log(2.0)), "kto": 0.5}


def loss_flat(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """A preference loss that never falls from its starting level: its rolling level never drops more
    than ``band`` below where it began (``min_points`` records at least). Sitting at the value the
    objective has when the policy equals its reference (ln 2 for DPO, 0.5 for KTO) fails — nothing is
    being learned: the policy may be the reference (one adapter for both), frozen, or trained at a
    learning rate of 0. A flat loss elsewhere warns."""
    s = view.series("loss/dpo")
    if s is None:
        return []
    x, n = s.values, len(s)
    if n < p["min_points"]:
        return [_short(s, int(p["min_points"]))]
    start = float(median(x[: max(3, n // 10)]))
    # how far its level ever fell below the start (a loss that learns falls; a rise is loss_jump's), on a
    # level of a fifth of the run so the batch-to-batch noise of a small batch does not count as moving
    level = signals.rolling_level(x, max(5, n // 5))
    moved = max(float(start - np.min(level)), 0.0) / max(abs(start), 1e-12)
    values: dict[str, Any] = {"metric": s.key, "start": start, "last": float(median(x[-max(3, n // 10):])),
                              "moved": moved, "band": p["band"], "n": n}
    if moved > p["band"]:
        return [Outcome("ok", "ok", values, metrics=(s.key,))]
    ref = _REFERENCE_LOSS.get(view.algorithm)
    at_ref = ref is not None and abs(start - ref) <= p["band"] * ref
    values["reference"] = ref if ref is not None else float("nan")
    return [Outcome("fail" if at_ref else "warn", "reference" if at_ref else "flat", values, s.step(0),
                    s.span(0, n - 1), (s.key,), {"value": start, "reference": ref, "moved": moved,
                                                 "threshold": p["band"]})]
