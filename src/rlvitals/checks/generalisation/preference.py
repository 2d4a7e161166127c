"""Preference and reward-model training: preference accuracy saturated, the margins, KTO's KL estimate, and the
reward model's accuracy and margin; all but the KL estimate are read against the evaluation logged beside them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import signals
from ...signals import median
from .._base import Outcome, RunView, Status
from .._preference import displacement, ends, lasting_start, loss_floor, saturated
from .._shared import progress, window_mean
from .tracks import Track, _column


def _eval_track(view: RunView, *labels: str) -> Track | None:
    frame = view.validation().get("eval")
    if frame is None:
        return None
    for label in labels:
        if label in frame.columns:
            steps, values = _column(frame, label)
            if len(values) >= 2:
                return Track("eval", label, steps, values, -1.0 if label == "loss" else 1.0)
    return None


def _eval_since(t: Track, step: int, z: float) -> tuple[float, float, bool, bool] | None:
    """Eval value at ``step`` (the last evaluation at or before it), its level at the end
    (median of the last three), and whether it stalled (did not improve by more than noise)
    or got worse since. None when no evaluation followed ``step``."""
    i = max(0, int(np.searchsorted(t.steps, step, side="right")) - 1)
    tail = t.sign * t.values[i:]
    if len(tail) < 2:
        return None
    tol = progress(t.values, t.sign, z, k=1).tol if len(t.values) >= 3 else 0.0
    end = float(median(tail[1:][-3:]))
    return float(t.values[i]), t.sign * end, bool(end - tail[0] <= tol), bool(end < tail[0] - tol)


def pref_accuracy_saturated(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """DPO-family preferences saturated on the training pairs: accuracy at ≥ 99% for good
    (docs/reading-rules.md#pref-accuracy-saturated: at 99 %+ while evaluation does not rise, the pairs are
    overfitted), dated where that lasting stretch starts, with the loss at its floor near 0
    and the margins it still grows (:mod:`._preference`); without a logged accuracy (a notebook's Trainer table
    shows the loss alone) the loss held near 0 is the sign. Warns; fails when evaluation also stalls or degrades."""
    acc, floor = view.series("rewards/accuracy"), loss_floor(view, p)
    if acc is not None:
        # batches at 99 %+ from there to the end, a few below allowed (a relapse is not)
        w = p["window"]
        i = lasting_start(acc.values >= p["saturated"], keep=p["keep"], gap=w, min_len=min(w, len(acc)))
        if i is None:
            level = window_mean(acc.values, w)  # the share over the window, not the median batch's
            j = int(np.argmax(level))
            v = {"peak": float(level[j]), "step": acc.step(j), "saturated": p["saturated"]}
            return [Outcome("ok", "ok_passed" if v["peak"] >= p["saturated"] else "ok", v, metrics=(acc.key,))]
        dated, onset = acc, acc.step(i)
    elif floor is not None:
        dated, onset = floor.loss, floor.onset
    else:
        return []
    ev = _eval_track(view, "loss", "rewards/accuracy", "rewards/margins")
    since = _eval_since(ev, onset, p["z"]) if ev is not None else None
    after = None if ev is None or since is None else (f"eval/{ev.label}", since[0], since[1], since[2])
    return [saturated(view, p, dated, onset, floor, after)]


def pref_margins(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """rewards/margins should grow steadily, chosen stay up while rejected falls
    (docs/reading-rules.md#pref-margins).
    Flags flat margins (grown less than half their noise threshold) or shrinking ones, chosen falling below 0
    together with rejected (likelihood displacement, :func:`._preference.displacement`), and margins rising
    while evaluation does not (overfitting the pairs)."""
    # a table of evaluation columns only (a notebook's Trainer table) still shows whether the margins grow
    m = view.first("rewards/margins", "eval/rewards/margins")
    if m is None:
        return []
    mp = progress(m.values, z=p["z"], k=max(3, len(m) // 5))
    acc = view.series("rewards/accuracy")
    v: dict[str, Any] = {"m_from": mp.start, "m_to": mp.end, "m_peak": mp.peak, "peak_step": m.step(mp.peak_index),
                         "accuracy": f"{ends(acc)[1]:.0%}" if acc is not None else "—"}
    out = []
    if mp.falling:
        onset = m.step(mp.decline_index)
        out.append(Outcome("warn", "shrinking", v, onset_step=onset, span=(onset, m.step(-1)),
                           metrics=(m.key,), evidence=v | {"threshold": mp.tol}))
    elif not mp.rising and mp.end - mp.start < mp.tol / 2:
        out.append(Outcome("warn", "flat", v, onset_step=m.step(0), span=(m.step(0), m.step(-1)), metrics=(m.key,),
                           evidence=v | {"threshold": mp.tol}))
    elif not mp.rising:
        # grown by more than half the noise threshold yet less than all of it: no sign of a flat margin,
        # too little to call it grown beyond doubt (small noisy batches)
        out.append(Outcome("ok", "ok_noisy", v | {"threshold": mp.tol}, metrics=(m.key,),
                           evidence=v | {"threshold": mp.tol}))
    out.extend(displacement(view, p, mp, v))
    if mp.rising and not m.key.startswith("eval/"):
        ev = _eval_track(view, "rewards/margins", "rewards/accuracy", "loss")
        # a stall needs evaluations enough to see one: three points cannot tell noise from a plateau
        enough = ev is not None and len(ev.values) >= p["min_evals"]
        since = _eval_since(ev, int(ev.steps[0]), p["z"]) if ev is not None and enough else None
        if ev is not None and since is not None and since[2]:
            worse = since[3]
            ov = v | {"eval_metric": f"eval/{ev.label}", "eval_from": since[0], "eval_to": since[1]}
            out.append(Outcome("fail" if worse else "warn", "overfit_fail" if worse else "overfit", ov,
                               onset_step=int(ev.steps[0]), span=(int(ev.steps[0]), m.step(-1)),
                               metrics=(m.key, f"eval/{ev.label}"), evidence=ov))
    return out or [Outcome("ok", "ok", v, metrics=(m.key,), evidence=v)]


def kto_kl(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """KTO's KL estimate (its reference point z0, docs/reading-rules.md#kto-kl): slow growth is expected; a
    sustained multiple-fold rise or repeated spikes mean the policy drifts or is unstable."""
    s = view.series("kl_estimate")
    if s is None:
        return []
    x = s.values
    # a spike comes back down; a climb that the trailing median lags behind is the rise below
    events = [e for e in signals.spikes(x, window=min(50, len(x)), k=p["k"], direction="up")
              if float(median(x[e.end + 1: e.end + 6] if e.end + 1 < len(x) else x[-1:]))
              < e.baseline + 0.5 * (e.value - e.baseline) or e.end == len(x) - 1]
    pr = progress(x, z=p["z"], k=max(3, len(x) // 5))
    base = max(abs(pr.start), 1e-12)
    v: dict[str, Any] = {"kl_from": pr.start, "kl_to": pr.end, "ratio": pr.end / base, "rise_ratio": p["rise_ratio"]}
    out = []
    if pr.rising and pr.end >= p["rise_ratio"] * base and signals.trend(x) >= p["trend"]:
        level = signals.rolling_level(x, pr.k)
        half = np.flatnonzero(level >= pr.start + (pr.end - pr.start) / 2)
        onset = s.step(int(half[0])) if len(half) else s.step(0)
        out.append(Outcome("warn", "rise", v | {"onset": onset}, onset_step=onset, span=(onset, s.step(-1)),
                           metrics=(s.key,),
                           evidence=v | {"baseline": pr.start, "value": pr.end, "threshold": p["rise_ratio"] * base}))
    if events:
        worst = max(events, key=lambda e: e.score)
        sv = v | {"count": len(events), "steps": ", ".join(str(s.step(e.peak)) for e in events[:8]),
                  "peak": worst.value, "baseline": worst.baseline, "step": s.step(worst.peak)}
        status: Status = "fail" if len(events) >= p["fail_count"] else "warn"
        out.append(Outcome(status, "spikes", sv, onset_step=s.step(events[0].start),
                           span=(s.step(events[0].start), s.step(events[-1].end)), metrics=(s.key,),
                           evidence=sv | {"spike_steps": [s.step(e.peak) for e in events]}))
    return out or [Outcome("ok", "ok", v, metrics=(s.key,), evidence=v)]


def rm_health(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Reward-model training (docs/reading-rules.md#rm-health): accurate *and* decisive. Flags a margin
    shrinking towards 0 (a model that no longer takes sides) and train accuracy rising while eval accuracy
    does not follow."""
    acc, margin = view.series("rm/accuracy"), view.series("rm/reward_margin")
    v: dict[str, Any] = {"accuracy": f"{ends(acc)[1]:.0%}" if acc is not None else "—", "margin": "—",
                         "eval": "—"}
    out = []
    if margin is not None:
        mp = progress(margin.values, z=p["z"], k=max(3, len(margin) // 5))
        v |= {"m_from": mp.start, "m_to": mp.end, "m_peak": mp.peak, "peak_step": margin.step(mp.peak_index),
              "margin": f"{mp.start:.3g} → {mp.end:.3g}"}
        if mp.peak > 0 and mp.end <= p["margin_floor"] * mp.peak and mp.falling:
            level = signals.rolling_level(margin.values, mp.k)
            down = np.flatnonzero(level[mp.peak_index:] <= mp.peak * (1 + p["margin_floor"]) / 2)
            onset = margin.step(mp.peak_index + int(down[0])) if len(down) else margin.step(mp.peak_index)
            out.append(Outcome("warn", "margin", v, onset_step=onset, span=(onset, margin.step(-1)),
                               metrics=(margin.key,), evidence=v | {"threshold": p["margin_floor"] * mp.peak}))
    ev = _eval_track(view, "rm/accuracy")
    since = _eval_since(ev, int(ev.steps[0]), p["z"]) if ev is not None else None
    if acc is not None and ev is not None and since is not None:
        ap = progress(acc.values, z=p["z"], k=max(3, len(acc) // 5))
        v |= {"eval_from": since[0], "eval_to": since[1], "train_from": ap.start, "train_to": ap.end,
              "eval": f"{since[0]:.3g} → {since[1]:.3g}"}
        if ap.rising and since[2]:
            status: Status = "fail" if since[3] else "warn"
            out.append(Outcome(status, "eval_fail" if since[3] else "eval", v, onset_step=int(ev.steps[0]),
                               span=(int(ev.steps[0]), acc.step(-1)), metrics=(acc.key, "eval/rm/accuracy"),
                               evidence=v))
    if acc is None and margin is None:
        return []
    if not out:
        out.append(Outcome("ok", "ok", v, metrics=tuple(s.key for s in (acc, margin) if s is not None), evidence=v))
    return out
