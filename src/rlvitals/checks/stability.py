"""L1 training stability: loss, gradient norm, KL, clip fraction, learning rate, NaN/Inf, critic.

Every threshold is read against the run's own scale (trailing median and robust spread,
rounding step of the log) except where the seeds give a number with a meaning of its own:
the clip-fraction band (0.1–0.3), the PPO KL band (0.01–0.1), the 10× of a grad-norm spike
and an explained variance below 0 (worse than a constant).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import signals
from ._base import CheckFn, Outcome, RunView, Series, Status
from ._preference import loss_mark
from ._schedule import lr_schedule, updates_per_batch
from ._shared import (
    POLICY_MOVES,
    REWARD_KEYS,
    _ends,
    _fmt_steps,
    _improving,
    _jump_outcome,
    _knee,
    _level_window,
    _rise_onset,
    _short,
    _tenths,
    moved_with,
    settled_after,
)

GRAD_KEYS = ("actor/grad_norm", "critic/grad_norm", "rm/grad_norm")
LOSS_KEYS = ("actor/loss", "loss/dpo", "rm/loss", "sft/loss")


def grad_norm_spike(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Steps where a gradient norm jumps to ``ratio``× its trailing median (seed-000 §2.2:
    "突然飙升到正常值的 10 倍以上"). Spikes on ``repeat_share`` of the logged steps or more warn,
    ``fail_count`` within ``fail_window`` steps fail — unless the gradient then settled for ``fail_window``
    steps to the end (a warning: unstable then, not now); fewer, scattered spikes that the run recovers from
    are a note (inspect the rollouts of those steps; nothing to change yet). A gradient that has
    already vanished (a trailing median below ``vanished`` of its first values) has no normal
    level to spike from: its blips are read by grad_norm_vanishing."""
    out = []
    for key in GRAD_KEYS:
        s = view.series(key)
        if s is None:
            continue
        start = float(np.median(s.values[:3]))
        events = [e for e in signals.ratio_spikes(s.values, ratio=p["ratio"], window=p["window"])
                  if e.baseline > p["vanished"] * start]
        if not events:
            out.append(Outcome("ok", "ok", {"metric": key, "ratio": p["ratio"]}, metrics=(key,)))
            continue
        worst = max(events, key=lambda e: e.score)
        peaks = [s.step(e.peak) for e in events]
        k = int(p["fail_count"])
        clustered = any(peaks[i + k - 1] - peaks[i] <= p["fail_window"] for i in range(len(peaks) - k + 1))
        # spikes the run shrugs off, few and far between, are a note; repeated ones warn; so does one that moved
        # the policy (its KL or clip fraction jumped at the same step: it is not isolated)
        repeated = len(events) >= 2 and len(events) / len(s) >= p["repeat_share"]
        moved = moved_with(view, peaks, POLICY_MOVES, p)
        settled = settled_after(s, events, p) if clustered else None
        # a cluster the gradient has long settled from was an unstable stretch, not a broken run: a warning
        status: Status = "fail" if clustered and settled is None else "warn" if clustered or repeated or moved \
            else "note"
        values = {"metric": key, "count": len(events), "step": s.step(worst.peak), "peak": worst.value,
                  "baseline": worst.baseline, "score": worst.score, "ratio": p["ratio"],
                  "steps": ", ".join(str(step) for step in peaks[:8]) + (" …" if len(peaks) > 8 else "")}
        template: str = status
        if settled is not None:
            template = "warn_settled"
            values |= {"since": s.step(events[-1].end), "after": settled[0], "level_after": settled[1]}
        if moved and status == "warn" and not repeated and settled is None:
            template = "warn_moved"
            values |= {"moved": moved[1], "moved_step": moved[0], "moved_ratio": moved[2]}
        out.append(Outcome(
            status, template, values, onset_step=s.step(events[0].start),
            span=(s.step(events[0].start), s.step(events[-1].end)), metrics=(key,),
            evidence={"peak": worst.value, "baseline": worst.baseline, "threshold": p["ratio"] * worst.baseline,
                      "spike_steps": peaks}, points=tuple(peaks),
        ))
    return out


def nan_inf(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Any canonical metric that logged NaN or ±Inf on a training step. A few non-finite gradient
    norms (at most ``max_skips``, and ``skip_share`` of the steps) with a finite loss at and around
    them are the mixed-precision loss scaler skipping an overflowed step (fp16 dynamic loss scaling
    does this by design): a note with the count, not a diverged run. NaN in a loss, or on many
    steps, fails."""
    run = view.run
    bad: dict[str, list[int]] = {}
    steps = run.steps
    for key in run.metrics:
        col = run.frame[key]
        logged = col.fill_null(0.0).to_numpy()
        mask = ~np.isfinite(logged) & run.train_mask
        if mask.any():
            bad[key] = steps[mask].tolist()
    if not bad:
        return [Outcome("ok", "ok", {"count": len(run.metrics)})]
    first = min(s[0] for s in bad.values())
    last = max(s[-1] for s in bad.values())
    keys = sorted(bad, key=lambda k: bad[k][0])
    values = {"metrics": ", ".join(keys[:6]) + (" …" if len(keys) > 6 else ""), "step": first,
              "count": sum(len(v) for v in bad.values())}
    skipped = _scaler_skips(view, bad, p)
    if skipped:
        loss_key, at = skipped
        return [Outcome("note", "note_skip", values | {"loss": loss_key, "steps": ", ".join(map(str, at))},
                        onset_step=first, span=(first, last), metrics=(*keys, loss_key),
                        evidence={"steps": {k: v[:20] for k, v in bad.items()}}, points=tuple(at))]
    return [Outcome("fail", "fail", values, onset_step=first, span=(first, last), metrics=tuple(keys),
                    evidence={"steps": {k: v[:20] for k, v in bad.items()}})]


def _scaler_skips(view: RunView, bad: Mapping[str, list[int]], p: Mapping[str, Any]) -> tuple[str, list[int]] | None:
    """``(loss key, steps)`` when the only non-finite values are a few gradient norms and the loss is
    finite on those steps and the logged steps around them; else None."""
    if not set(bad) <= set(GRAD_KEYS):
        return None
    at = sorted({step for v in bad.values() for step in v})
    n = int(view.run.train_mask.sum())
    loss = view.first(*LOSS_KEYS, min_points=1)
    if loss is None or len(at) > p["max_skips"] or len(at) > p["skip_share"] * n:
        return None
    # a finite loss logged before and after every such step: training went on through it
    if at[0] < loss.steps[0] or at[-1] > loss.steps[-1]:
        return None
    return loss.key, at


# -- sudden jumps: loss and KL ---------------------------------------------------------------

def loss_jump(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The training loss jumping up, for a moment or for good, far beyond its own recent spread
    (seed-000 §2.1: "如果突然跳升，通常意味着学习率太大、数据分布突变、或者策略在剧烈震荡").
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
    size = float(np.median(np.abs(x[:3])))
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


def _grad_base(x: np.ndarray, p: Mapping[str, Any], up: bool) -> tuple[float, int, int | None]:
    """``(established level, first index judged, onset of a collapse in the first steps or None)``.
    The established level is the median after the first few steps (a warm-up that is often odd) over
    the next fifth of the run — unless the norm collapsed within the first steps, when it is the
    run's first values (a window after the collapse would hold the collapsed level)."""
    n, skip = len(x), max(3, len(x) // 20)
    early = None if up else signals.early_move(x, factor=1.0 / p["factor"], direction="down")
    # a collapse — sudden (one step falls by √(1/factor) or more) or leaving almost nothing (``fail_factor``
    # of the start) — not the steady decay of a start-up peak to a level that then holds (a fresh value
    # head's gradient: 950, 744, 235, 60, 17, 5, then 5 for the rest of the run)
    if early is not None:
        head = np.maximum(x[: early.end + 1], 1e-300)
        sudden = float(np.max(head[:-1] / head[1:])) >= (1.0 / p["factor"]) ** 0.5
        if sudden or early.score <= p["fail_factor"]:
            return early.baseline, early.start, early.start
    return float(np.median(x[skip : skip + max(2 * _level_window(n), n // 5)])), skip, None


def _grad_drift(view: RunView, p: Mapping[str, Any], up: bool) -> list[Outcome]:
    """The level of each gradient norm against its established level (:func:`_grad_base`)."""
    out = []
    for key in GRAD_KEYS:
        s = view.series(key)
        if s is None:
            continue
        if len(s) < 2 * p["min_steps"]:
            out.append(_short(s, 2 * p["min_steps"]))
            continue
        n = len(s)
        if not up and np.mean(s.values == 0.0) >= 0.5:
            out.append(Outcome("skipped", "zeros", {"metric": key, "share": float(np.mean(s.values == 0.0))},
                               metrics=(key,)))
            continue
        base, skip, early = _grad_base(s.values, p, up)
        level = signals.rolling_level(s.values, _level_window(n))
        if base <= 0:
            out.append(Outcome("skipped", "zero", {"metric": key}, metrics=(key,)))
            continue
        ratio = level / base
        mask = (ratio >= p["factor"]) if up else (ratio <= p["factor"])
        mask[:skip] = False
        found = signals.runs_of(mask, max(p["min_steps"], n // 20), max_gap=2)
        extreme = float(np.max(ratio[skip:])) if up else float(np.min(ratio[skip:]))
        values = {"metric": key, "base": base, "factor": p["factor"], "extreme": extreme,
                  "last": float(level[-1]), "last_times": float(ratio[-1])}
        if not found:
            out.append(Outcome("ok", "ok", values, metrics=(key,)))
            continue
        start, end = found[0]
        calm = np.flatnonzero((ratio[:start] <= 1.5) if up else (ratio[:start] >= 1 / 1.5))
        onset = early if early is not None else int(calm[-1]) + 1 if len(calm) else start
        worst = start + (int(np.argmax(ratio[start : end + 1])) if up else int(np.argmin(ratio[start : end + 1])))
        ongoing = found[-1][1] >= n - 2
        fail = (ratio[worst] >= p["fail_factor"]) if up else (ongoing and ratio[-1] <= p["fail_factor"])
        template = "fail" if fail else "warn_low" if ongoing and not up else "warn"
        values |= {"step": s.step(onset), "cross_step": s.step(start), "worst": float(level[worst]),
                   "worst_step": s.step(worst), "times": float(ratio[worst]), "steps": s.step(end) - s.step(start) + 1}
        out.append(Outcome("fail" if fail else "warn", template, values, onset_step=s.step(onset),
                           span=s.span(onset, found[-1][1] if ongoing else end), metrics=(key,),
                           evidence={"baseline": base, "value": float(level[worst]), "ratio": float(ratio[worst]),
                                     "threshold": p["factor"] * base, "last": float(level[-1])}))
    return out


def grad_norm_explosion(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """A gradient norm whose level (rolling median, not one step) grows to ``factor``× its
    established level and stays there (seed-000 §2.2 "坡度太大你会滚下去（梯度爆炸）");
    ``fail_factor``× fails. Distinct from grad_norm_spike, which reads single steps."""
    return _grad_drift(view, p, up=True)


def grad_norm_vanishing(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """A gradient norm whose level collapses to ``factor`` of its established level for a
    sustained stretch (seed-000 §2.2 "坡度太小你走不动（梯度消失）"), measured from the run's first
    values when the collapse came in the first steps; still down at the end at ``fail_factor`` of
    that level or less fails (no gradient is left), still down but above it warns (saturating)."""
    return _grad_drift(view, p, up=False)


#: DPO-family loss at the start, when the policy equals its reference: −log σ(0) = ln 2
LN2 = float(np.log(2.0))
_ZERO_VARIANCE_KEYS = ("group/zero_std/share",)
_DPO_MARGIN_KEY = "rewards/margins"


def grad_norm_zero(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """A gradient norm of exactly 0 on ``share`` of the logged steps or more: nothing reaches the
    model (seed-000 §2.2, the flattest slope). Read from ``min_points`` logged steps (a run that
    logged four zeros has said enough). The likely cause is named when the log shows it: a DPO
    loss at ln 2 with zero margins (the policy is its reference and never moves), groups with
    identical rewards (zero advantages), or a loss that is exactly 0 on those steps."""
    out = []
    for key in GRAD_KEYS:
        s = view.series(key, min_points=int(p["min_points"]))
        if s is None:
            continue
        zero = s.values == 0.0
        values: dict[str, Any] = {"metric": key, "zeros": int(zero.sum()), "n": len(s), "share": float(zero.mean()),
                                  "needed": p["share"]}
        if zero.mean() < p["share"]:
            out.append(Outcome("ok", "ok", values, metrics=(key,)))
            continue
        first = int(np.argmax(zero))
        cause, extra, keys = _zero_cause(view, s.steps[zero])
        values |= {"step": s.step(first), **extra}
        out.append(Outcome("fail", cause, values, onset_step=s.step(first), span=s.span(first, len(s) - 1),
                           metrics=(key, *keys), evidence={"value": 0.0, "zero_steps": int(zero.sum()),
                                                           "share": values["share"], "cause": cause}))
    return out


def _on(view: RunView, key: str, steps: np.ndarray) -> np.ndarray | None:
    """The values of ``key`` at ``steps`` (those it logged), or None when it logged none of them."""
    s = view.series(key, min_points=1)
    if s is None:
        return None
    got = s.values[np.isin(s.steps, steps)]
    return got if len(got) else None


def _zero_cause(view: RunView, steps: np.ndarray) -> tuple[str, dict[str, Any], tuple[str, ...]]:
    """The template naming what the log shows on the zero-gradient steps, its numbers and keys."""
    loss_key = next((k for k in LOSS_KEYS if view.series(k, min_points=1) is not None), None)
    loss = _on(view, loss_key, steps) if loss_key else None
    margins = _on(view, _DPO_MARGIN_KEY, steps)
    if loss_key is not None and loss is not None and margins is not None \
            and np.mean(np.abs(loss - LN2) < 1e-3) >= 0.5 and np.mean(margins == 0.0) >= 0.5:
        return "fail_reference", {"loss": float(np.median(loss)), "loss_key": loss_key}, (loss_key, _DPO_MARGIN_KEY)
    for zkey in _ZERO_VARIANCE_KEYS:
        zv = _on(view, zkey, steps)
        if zv is not None and float(np.mean(zv)) >= 0.5:
            return "fail_no_variance", {"zero_groups": float(np.mean(zv)), "zv_key": zkey}, (zkey,)
    if loss is not None and loss_key and np.mean(loss == 0.0) >= 0.5:
        return "fail_loss_zero", {"loss_zero": float(np.mean(loss == 0.0)), "loss_key": loss_key}, (loss_key,)
    return "fail", {}, ()


# -- sustained climbs: policy-gradient loss, critic lag ----------------------------------------

def _windows(n: int, width: int) -> list[tuple[int, int]]:
    """Half-open windows of ``width`` values, a quarter window apart, the last one flush with the end."""
    if n < width:
        return []
    starts = list(range(0, n - width + 1, max(1, width // 4)))
    if starts[-1] != n - width:
        starts.append(n - width)
    return [(a, a + width) for a in starts]


def _rise(x: np.ndarray, sd: float, in_se: bool = False) -> float:
    """Median of the last quarter minus median of the first quarter, in units of ``sd`` (or, with
    ``in_se``, in standard errors of that difference for noise ``sd``)."""
    q = max(2, len(x) // 4)
    unit = sd * (1.2533 * np.sqrt(2.0 / q) if in_se else 1.0)
    return float(np.median(x[-q:]) - np.median(x[:q])) / max(unit, 1e-300)


def pg_loss_climb(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """actor/pg_loss climbing for a sustained stretch (seed-000 §2.1: noisy is normal, "持续飙升
    肯定有问题"): a window of a fifth of the run with trend ≥ ``tau`` whose level rose ≥ ``k``×
    the step noise. Still climbing at the end with a rise ≥ ``fail_k`` fails."""
    s = view.series("actor/pg_loss")
    if s is None:
        return []
    x, n = s.values, len(s)
    if n < 2 * p["min_window"]:
        return [_short(s, 2 * p["min_window"])]
    sd = max(signals.noise_scale(x), signals.quantum(x), 1e-12)
    width = max(p["min_window"], n // 5)
    wins = _windows(n, width)
    hits = signals.runs_of(np.array([signals.trend(x[a:b]) >= p["tau"] and _rise(x[a:b], sd) >= p["k"]
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
    if len(after) and float(np.median(after)) < float(level[onset] + 0.5 * (level[end] - level[onset])):
        # back down within a few steps: a burst (a moment of the run, read by the jump and grad checks),
        # not the sustained climb the seed means
        first, _, last, _ = _tenths(x)
        values |= {"step": s.step(onset), "end_step": s.step(end), "after": float(np.median(after)),
                   "from": float(level[onset]), "to": float(level[end]), "first": first, "last": last}
        return [Outcome("ok", "ok_burst", values, metrics=(s.key,))]
    fail = end >= n - 1 and rise >= p["fail_k"]
    values |= {"step": s.step(onset), "end_step": s.step(end), "from": float(level[onset]), "to": float(level[end]),
               "rise": rise, "steps": s.step(end) - s.step(onset) + 1}
    return [Outcome("fail" if fail else "warn", "fail" if fail else "warn", values, onset_step=s.step(onset),
                    span=s.span(onset, end), metrics=(s.key,),
                    evidence={"baseline": float(level[onset]), "value": float(level[end]), "rise_sd": rise,
                              "threshold_sd": p["k"], "noise_sd": sd})]


def critic_lag(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """PPO: the value loss not falling while the reward rises (seed-000 §3: "如果 rewards 在涨但
    v_loss 不降，说明 Critic 跟不上 Actor 的变化速度"), on ``min_windows`` overlapping windows of
    a third of the run in a row, after the critic's first fit (the first tenth). A value loss
    that climbs ``climb``× on its own is reported too: the critic is losing track."""
    v, r = view.series("critic/vf_loss"), view.first(*REWARD_KEYS)
    if v is None or r is None:
        return []
    steps, vf, rw = v.aligned(r)
    n = len(steps)
    if n < 2 * p["min_window"]:
        return [_short(Series(v.key, steps, vf), 2 * p["min_window"])]
    skip = n // 10
    width = max(p["min_window"], (n - skip) // 3)
    r_sd = max(signals.noise_scale(rw), signals.quantum(rw), 1e-12)
    wins = [(a + skip, b + skip) for a, b in _windows(n - skip, width)]
    q = max(2, width // 4)
    lag = [signals.trend(rw[a:b]) >= p["rise"] and _rise(rw[a:b], r_sd, in_se=True) >= p["k"]
           and signals.trend(vf[a:b]) >= p["flat"] for a, b in wins]
    climb = [signals.trend(vf[a:b]) >= p["tau"] and np.median(vf[b - q : b]) >= p["climb"] * np.median(vf[a : a + q])
             for a, b in wins]
    keys = (v.key, r.key)
    tenth = max(2, n // 10)
    values = {"metric": v.key, "reward": r.key, "v_first": float(np.median(vf[:tenth])),
              "v_last": float(np.median(vf[-tenth:])), "r_first": float(np.median(rw[:tenth])),
              "r_last": float(np.median(rw[-tenth:]))}
    for template, flags in (("warn", lag), ("warn_climb", climb)):
        runs = signals.runs_of(np.array(flags, dtype=bool), p["min_windows"])
        if runs:
            a, b = wins[runs[0][0]][0], wins[runs[0][1]][1]
            a += _knee(vf[a:b])  # where the value loss stops falling
            q = max(2, (b - a) // 4)
            values |= {"step": int(steps[a]), "end_step": int(steps[b - 1]),
                       "v_from": float(np.median(vf[a : a + q])), "v_to": float(np.median(vf[b - q : b])),
                       "r_from": float(np.median(rw[a : a + q])), "r_to": float(np.median(rw[b - q : b]))}
            if b < n - tenth and values["v_last"] <= p["caught_up"] * values["v_to"]:
                # the value loss fell well below that stretch's level later on: the critic caught up
                return [Outcome("note", "caught_up", values, onset_step=int(steps[a]),
                                span=(int(steps[a]), int(steps[b - 1])), metrics=keys)]
            return [Outcome("warn", template, values, onset_step=int(steps[a]), span=(int(steps[a]), int(steps[b - 1])),
                            metrics=keys, evidence={"vf_loss_from": values["v_from"], "vf_loss_to": values["v_to"],
                                                    "reward_from": values["r_from"], "reward_to": values["r_to"]})]
    return [Outcome("ok", "ok", values, metrics=keys)]


def explained_variance(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """critic/vf_explained_var below ``threshold`` (0: the critic predicts returns worse than a
    constant would) for ``min_steps`` steps or more (algorithms.md §6.4). Negative for most of
    the run, or still negative at the end, fails."""
    s = view.series("critic/vf_explained_var")
    if s is None:
        return []
    x, n = s.values, len(s)
    found = signals.sustained_above(-x, -p["threshold"], window=5, min_len=p["min_steps"], max_gap=2)
    values = {"metric": s.key, "threshold": p["threshold"], "last": float(np.median(x[-max(2, n // 10):])),
              "median": float(np.median(x))}
    if not found:
        return [Outcome("ok", "ok", values, metrics=(s.key,))]
    below = sum(e - a + 1 for a, e in found)
    start, end = found[0]
    ongoing = found[-1][1] >= n - 3 and found[-1][1] - found[-1][0] + 1 >= 2 * p["min_steps"]
    fail = ongoing or below >= p["fail_share"] * n
    worst = int(np.argmin(x[start : end + 1])) + start
    values |= {"step": s.step(start), "end_step": s.step(end), "steps": below, "share": below / n,
               "worst": float(x[worst]), "count": len(found)}
    return [Outcome("fail" if fail else "warn", "fail" if fail else "warn", values, onset_step=s.step(start),
                    span=(s.step(start), s.step(found[-1][1])), metrics=(s.key,),
                    evidence={"value": float(x[worst]), "threshold": p["threshold"], "steps_below": below,
                              "stretches": [s.span(a, e) for a, e in found]})]


# -- clip fraction -----------------------------------------------------------------------------

def clipfrac_high(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """actor/pg_clipfrac above the seed's band (seed-000 §2.5: "正常范围大概在 0.1~0.3。如果持续高于
    0.3 …应该降低学习率或减小 batch size"). A level above ``high`` for ``sustain`` steps warns and,
    at ``fail_level`` or for ``fail_steps`` steps, fails; a burst of ``burst_len`` steps warns."""
    s = view.series("actor/pg_clipfrac")
    if s is None:
        return []
    x = s.values
    values = {"metric": s.key, "high": p["high"], "max": float(np.max(x)), "max_step": s.step(int(np.argmax(x))),
              "median": float(np.median(x))}
    long = signals.sustained_above(x, p["high"], window=5, min_len=p["sustain"], max_gap=2)
    if long:
        start, end = max(long, key=lambda se: se[1] - se[0])
        level = float(np.median(x[start : end + 1]))
        steps = s.step(end) - s.step(start) + 1
        fail = level >= p["fail_level"] or steps >= p["fail_steps"]
        values |= {"step": s.step(start), "end_step": s.step(end), "steps": steps, "level": level}
        return [Outcome("fail" if fail else "warn", "fail" if fail else "warn", values, onset_step=s.step(start),
                        span=s.span(start, end), metrics=(s.key,),
                        evidence={"value": level, "peak": values["max"], "threshold": p["high"], "steps": steps})]
    bursts = signals.runs_of(x > p["high"], p["burst_len"], max_gap=1)
    if bursts:
        start, end = bursts[0]
        values |= {"step": s.step(start), "end_step": s.step(end), "count": len(bursts),
                   "peak": float(np.max(x[start : end + 1])), "steps": _fmt_steps(s, [b[0] for b in bursts])}
        peaks = tuple(s.step(a + int(np.argmax(x[a : b + 1]))) for a, b in bursts)  # each burst at its peak
        return [Outcome("warn", "burst", values, onset_step=s.step(start), span=s.span(start, bursts[-1][1]),
                        metrics=(s.key,), evidence={"peak": values["peak"], "threshold": p["high"],
                                                    "bursts": [s.span(a, b) for a, b in bursts]}, points=peaks)]
    return [Outcome("ok", "ok", values, metrics=(s.key,))]


def clipfrac_low(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """A clip fraction near 0 for most of the run (seed-000 §2.5: "长期接近 0，可能说明策略已经收敛或
    学习率太小"). With one update per batch (GRPO num_iterations 1, veRL ppo_epochs 1 on a single
    mini-batch) the ratio is 1 and the clip fraction ~0 by construction: never a finding. With
    several updates per batch (from the config) and a reward that does not improve, a note: the
    updates could be larger. A run whose config does not say is not judged."""
    s = view.series("actor/pg_clipfrac")
    if s is None:
        return []
    x, n = s.values, len(s)
    level = signals.rolling_level(x, _level_window(n))
    share = float(np.mean(level < p["low"]))
    updates, said = updates_per_batch(view.config)
    values = {"metric": s.key, "low": p["low"], "share": share, "median": float(np.median(x)),
              "updates": updates or 0, "config": said}
    if share < p["share"]:
        return [Outcome("ok", "ok", values, metrics=(s.key,))]
    if updates is None:
        return [Outcome("skipped", "no_config", values, metrics=(s.key,))]
    if updates == 1:
        return [Outcome("ok", "ok_one_update", values, metrics=(s.key,))]
    r = view.first(*REWARD_KEYS)
    if r is None:
        return [Outcome("skipped", "ok_no_reward", values, metrics=(s.key,))]
    rose, r0, r1 = _improving(r.values)
    values |= {"reward": r.key, "r_first": r0, "r_last": r1}
    if rose:
        return [Outcome("ok", "ok_learning", values, metrics=(s.key, r.key))]
    return [Outcome("note", "note", values, onset_step=s.step(0), span=s.span(0, n - 1), metrics=(s.key, r.key),
                    evidence={"value": values["median"], "threshold": p["low"], "share_below": share,
                              "updates_per_batch": updates, "reward_first": r0, "reward_last": r1})]


def clipfrac_lower(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """actor/pg_clipfrac_lower (veRL: dual-clip activations, ratio > clip_ratio_c on negative
    advantages — algorithms.md §6.3) sustained above ``high``, or rising ``rise_factor``× over
    the run with a clear trend: the policy keeps pushing up tokens it was told to do less of."""
    s = view.series("actor/pg_clipfrac_lower")
    if s is None:
        return []
    x, n = s.values, len(s)
    first, last, floor = _ends(x, p["min_quanta"])
    values = {"metric": s.key, "high": p["high"], "first": first, "last": last, "max": float(np.max(x))}
    long = signals.sustained_above(x, p["high"], window=5, min_len=p["sustain"], max_gap=2)
    if long:
        start, end = long[0]
        values |= {"step": s.step(start), "end_step": s.step(end), "level": float(np.median(x[start : end + 1]))}
        return [Outcome("warn", "warn_high", values, onset_step=s.step(start), span=s.span(start, end),
                        metrics=(s.key,), evidence={"value": values["level"], "threshold": p["high"]})]
    factor = last / max(first, floor)
    if signals.trend(x) >= p["tau"] and factor >= p["rise_factor"] and last - first > floor:
        onset = _rise_onset(x, first, last, floor)
        values |= {"step": s.step(onset), "factor": factor}
        return [Outcome("warn", "warn_rising", values, onset_step=s.step(onset), span=s.span(onset, n - 1),
                        metrics=(s.key,), evidence={"baseline": first, "value": last, "ratio": factor,
                                                    "threshold": p["rise_factor"]})]
    return [Outcome("ok", "ok", values, metrics=(s.key,))]


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
    start = float(np.median(x[: max(3, n // 10)]))
    # how far its level ever fell below the start (a loss that learns falls; a rise is loss_jump's), on a
    # level of a fifth of the run so the batch-to-batch noise of a small batch does not count as moving
    level = signals.rolling_level(x, max(5, n // 5))
    moved = max(float(start - np.min(level)), 0.0) / max(abs(start), 1e-12)
    values: dict[str, Any] = {"metric": s.key, "start": start, "last": float(np.median(x[-max(3, n // 10):])),
                              "moved": moved, "band": p["band"], "n": n}
    if moved > p["band"]:
        return [Outcome("ok", "ok", values, metrics=(s.key,))]
    ref = _REFERENCE_LOSS.get(view.algorithm)
    at_ref = ref is not None and abs(start - ref) <= p["band"] * ref
    values["reference"] = ref if ref is not None else float("nan")
    return [Outcome("fail" if at_ref else "warn", "reference" if at_ref else "flat", values, s.step(0),
                    s.span(0, n - 1), (s.key,), {"value": start, "reference": ref, "moved": moved,
                                                 "threshold": p["band"]})]


FUNCTIONS: dict[str, CheckFn] = {
    "grad_norm_spike": grad_norm_spike,
    "grad_norm_zero": grad_norm_zero,
    "grad_norm_explosion": grad_norm_explosion,
    "grad_norm_vanishing": grad_norm_vanishing,
    "nan_inf": nan_inf,
    "loss_jump": loss_jump,
    "loss_flat": loss_flat,
    "pg_loss_climb": pg_loss_climb,
    "clipfrac_high": clipfrac_high,
    "clipfrac_low": clipfrac_low,
    "clipfrac_lower": clipfrac_lower,
    "lr_schedule": lr_schedule,
    "critic_lag": critic_lag,
    "explained_variance": explained_variance,
}
