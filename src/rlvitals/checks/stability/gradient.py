"""Gradient norms: single-step spikes, a level that explodes or vanishes, and norms of exactly 0."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import signals
from ...signals import median
from .._base import Outcome, RunView, Status
from .._shared import POLICY_MOVES, _level_window, _short, moved_with, settled_after
from .loss import LOSS_KEYS

GRAD_KEYS = ("actor/grad_norm", "critic/grad_norm", "rm/grad_norm")


def grad_norm_spike(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Steps where a gradient norm jumps to ``ratio``× its trailing median
    (docs/reading-rules.md#grad-norm-spike: a sudden jump to more than 10× its normal value). Spikes on ``repeat_share``
    of the logged steps or more warn, ``fail_count`` within ``fail_window`` steps fail — unless the gradient then
    settled for ``fail_window`` steps to the end (a warning: unstable then, not now); fewer, scattered spikes that the
    run recovers from are a note (inspect the rollouts of those steps; nothing to change yet). A gradient that has
    already vanished (a trailing median below ``vanished`` of its first values) has no normal
    level to spike from: its blips are read by grad_norm_vanishing."""
    out = []
    for key in GRAD_KEYS:
        s = view.series(key)
        if s is None:
            continue
        start = float(median(s.values[:3]))
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
    return float(median(x[skip : skip + max(2 * _level_window(n), n // 5)])), skip, None


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
    established level and stays there (docs/reading-rules.md#grad-norm-explosion: a slope too
    steep to stay on);
    ``fail_factor``× fails. Distinct from grad_norm_spike, which reads single steps."""
    return _grad_drift(view, p, up=True)


def grad_norm_vanishing(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """A gradient norm whose level collapses to ``factor`` of its established level for a
    sustained stretch (docs/reading-rules.md#grad-norm-vanishing: a slope too flat to move on), measured from the run's
    first values when the collapse came in the first steps; still down at the end at ``fail_factor`` of
    that level or less fails (no gradient is left), still down but above it warns (saturating)."""
    return _grad_drift(view, p, up=False)


#: DPO-family loss at the start, when the policy equals its reference: −log σ(0) = ln 2
LN2 = float(np.log(2.0))
_ZERO_VARIANCE_KEYS = ("group/zero_std/share",)
_DPO_MARGIN_KEY = "rewards/margins"


def grad_norm_zero(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """A gradient norm of exactly 0 on ``share`` of the logged steps or more: nothing reaches the
    model (docs/reading-rules.md#grad-norm-zero, the flattest slope). Read from ``min_points`` logged steps (a run that
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
        return "fail_reference", {"loss": float(median(loss)), "loss_key": loss_key}, (loss_key, _DPO_MARGIN_KEY)
    for zkey in _ZERO_VARIANCE_KEYS:
        zv = _on(view, zkey, steps)
        if zv is not None and float(np.mean(zv)) >= 0.5:
            return "fail_no_variance", {"zero_groups": float(np.mean(zv)), "zv_key": zkey}, (zkey,)
    if loss is not None and loss_key and np.mean(loss == 0.0) >= 0.5:
        return "fail_loss_zero", {"loss_zero": float(np.mean(loss == 0.0)), "loss_key": loss_key}, (loss_key,)
    return "fail", {}, ()
