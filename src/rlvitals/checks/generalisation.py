"""L5 generalisation (validation, ID vs OOD, preference and reward-model overfitting) and
L6 reasoning quality (self-consistency gap).

Validation is sparse (every ``test_freq`` steps) and noisy, so every comparison here is
between *levels* — medians of a few evaluations — and a change counts only when it exceeds
``z`` standard errors of the series' own step-to-step noise (seed-000 §1: the core
validation metric "should rise steadily; if it falls or stays flat for long, go back").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import signals
from ._base import CheckFn, Outcome, RunView, Series, Status
from ._preference import displacement, ends, lasting_start, loss_floor, saturated
from ._shared import Progress, progress, window_mean

REWARD_KEYS = ("critic/score/mean", "critic/rewards/mean")
_MEAN = re.compile(r"^(?P<var>[^/]+)/mean@(?P<n>\d+)$")
_MAJ = re.compile(r"^(?P<var>[^/]+)/maj@(?P<n>\d+)/mean$")
#: preferred core variables of a veRL data source, best first (veRL: acc if logged, else reward)
_CORE_VARS = ("acc", "accuracy", "correct", "score", "reward")
#: core column of the generic "eval" source (TRL/OpenRLHF eval_* keys) and its direction
_EVAL_CORE = (("critic/score/mean", 1.0), ("critic/rewards/mean", 1.0), ("rewards/accuracy", 1.0),
              ("rm/accuracy", 1.0), ("rewards/margins", 1.0), ("loss", -1.0))


@dataclass(frozen=True)
class Track:
    """One validation curve: ``sign`` is +1 when higher is better, -1 for a loss."""

    source: str
    label: str
    steps: np.ndarray
    values: np.ndarray
    sign: float = 1.0


def _column(frame: Any, label: str) -> tuple[np.ndarray, np.ndarray]:
    sub = frame.select(["step", label]).drop_nulls()
    steps, values = sub["step"].to_numpy(), sub[label].to_numpy().astype(float)
    keep = np.isfinite(values)
    return steps[keep], values[keep]


def _core_label(source: str, columns: list[str]) -> tuple[str, float] | None:
    if source == "eval":
        return next(((c, s) for c, s in _EVAL_CORE if c in columns), None)
    # only score variables: OpenRLHF's "all" source holds response lengths and truncation rates
    means = [(m["var"], int(m["n"]), c) for c in columns if (m := _MEAN.match(c)) and m["var"] in _CORE_VARS]
    if not means:
        return None
    var, _, col = min(means, key=lambda t: (_CORE_VARS.index(t[0]), -t[1]))
    return col, 1.0


def core_tracks(view: RunView, min_evals: int = 1) -> list[Track]:
    """The core validation curve of every data source (val-core acc/reward mean@N; the generic
    ``eval`` source: reward, preference accuracy, margins or loss)."""
    out = []
    for source, frame in view.validation().items():
        found = _core_label(source, [c for c in frame.columns if c != "step"])
        if found is None:
            continue
        steps, values = _column(frame, found[0])
        if len(values) >= min_evals:
            out.append(Track(source, found[0], steps, values, found[1]))
    return out


def _curve(t: Track, p: Progress) -> dict[str, Any]:
    best_i = int(np.argmax(t.sign * t.values[max(0, p.peak_index - p.k // 2): p.peak_index + p.k // 2 + 1]))
    best_i += max(0, p.peak_index - p.k // 2)
    return {"source": t.source, "metric": t.label, "first": float(t.values[0]), "last": float(t.values[-1]),
            "best": float(t.values[best_i]), "best_step": int(t.steps[best_i]), "evals": len(t.values),
            "start_level": t.sign * p.start, "end_level": t.sign * p.end, "threshold": p.tol}


def reward_rising(view: RunView, lo: int, hi: int, z: float) -> tuple[Series, Progress] | None:
    """The training reward between steps ``lo`` and ``hi`` if it rose by more than noise."""
    s = view.first(*REWARD_KEYS)
    if s is None:
        return None
    keep = (s.steps >= lo) & (s.steps <= hi)
    if keep.sum() < 5:
        return None
    part = Series(s.key, s.steps[keep], s.values[keep])
    p = progress(part.values, z=z, k=max(3, len(part) // 5))
    return (part, p) if p.rising and signals.trend(part.values) >= 0.2 else None


def _decline(view: RunView, t: Track, pr: Progress, z: float) -> tuple[int, tuple[Series, Progress] | None, float]:
    """For a falling curve: the step of its best level, the training reward if it rose since,
    and the share of the earlier gain given back."""
    onset = int(t.steps[pr.decline_index])
    # the gain counts from the lower of the first evaluation and the start level: a base model
    # evaluated at step 0 before a quick early jump is part of what was gained
    base = min(pr.start, t.sign * float(t.values[0]))
    return onset, reward_rising(view, onset, int(t.steps[-1]), z), pr.drop / max(pr.peak - base, pr.tol)


def val_progress(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Per data source: is the core validation metric rising, flat, or falling from its best?
    Falling clearly while the training reward keeps rising fails (seed-000 §1, §12); so does losing
    ``fail_lost`` of the gain — when the fall is also ``fail_rel`` of the level. A fall smaller than
    ``note_rel`` of the level is a note: easing from the best by a few test-set standard errors."""
    out = []
    for t in core_tracks(view):
        key = f"{t.source}/{t.label}"
        if len(t.values) < p["min_evals"]:
            out.append(Outcome("skipped", "few", {"source": t.source, "metric": t.label, "evals": len(t.values),
                                                  "min_evals": p["min_evals"]}, metrics=(key,)))
            continue
        pr = progress(t.values, t.sign, p["z"])
        v = _curve(t, pr)
        ev = {**v, "peak_level": t.sign * pr.peak}
        if pr.falling:
            onset, reward, giveback = _decline(view, t, pr, p["z"])
            # how far it fell against its own level: a share of a tiny gain (a resumed run, a run that
            # starts at its ceiling, a best at step 0) says nothing on its own
            rel = pr.drop / max(abs(pr.peak), pr.tol)
            lost = giveback >= p["fail_lost"] and rel >= p["fail_rel"]
            big = reward is not None and giveback >= p["fail_giveback"] and rel >= p["fail_rel"]
            status: Status = "fail" if lost or big else "note" if rel < p["note_rel"] else "warn"
            ev["relative_drop"] = v["relative_drop"] = rel
            v["peak_level"] = t.sign * pr.peak
            if reward is not None:
                v |= {"reward_key": reward[0].key, "reward_from": reward[1].start, "reward_to": reward[1].end}
            v["given_back"] = giveback
            ev |= {"given_back": giveback, "reward_rising": reward is not None}
            template = ("fail" if status == "fail" and reward is not None else "fail_lost" if status == "fail"
                        else "falling_reward" if reward is not None else "falling")
            if status == "fail" and giveback > 1:  # worse than it started: a share of the gain misleads
                template = "worse"
            out.append(Outcome(status, template, v, onset_step=onset, span=(onset, int(t.steps[-1])),
                               metrics=(key,), evidence=ev))
        elif not pr.rising and len(t.values) >= p["flat_evals"]:
            out.append(Outcome("warn", "flat", v, onset_step=int(t.steps[0]),
                               span=(int(t.steps[0]), int(t.steps[-1])), metrics=(key,), evidence=ev))
        else:
            out.append(Outcome("ok", "ok" if pr.rising else "early", v, metrics=(key,), evidence=ev))
    return out


def _movement(view: RunView, key: str, lo: int, hi: int) -> tuple[float, float] | None:
    s = view.series(key)
    if s is None:
        return None
    keep = (s.steps >= lo) & (s.steps <= hi)
    x = s.values[keep] if keep.sum() >= 5 else s.values
    k = max(1, len(x) // 5)
    return float(np.median(x[:k])), float(np.median(x[-k:]))


def val_reward_divergence(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Training reward rising while validation stays flat or falls ("评测不涨但 reward 涨",
    seed-000 §12): read response_length/mean, then response/aborted_ratio."""
    tracks = [t for t in core_tracks(view, p["min_evals"]) if t.source != "eval" or t.sign > 0]
    if not tracks:
        return []
    out = []
    for t in tracks:
        key = f"{t.source}/{t.label}"
        pr = progress(t.values, t.sign, p["z"])
        if pr.falling:
            lo, reward, giveback = _decline(view, t, pr, p["z"])
        else:
            lo, giveback = int(t.steps[0]), 0.0
            reward = reward_rising(view, lo, int(t.steps[-1]), p["z"])
        v = _curve(t, pr)
        if reward is None or pr.rising and not pr.falling:
            s = view.first(*REWARD_KEYS)
            if s is None:
                return []
            v |= {"reward_key": s.key, "reward_from": float(np.median(s.values[: max(1, len(s) // 5)])),
                  "reward_to": float(np.median(s.values[-max(1, len(s) // 5):]))}
            out.append(Outcome("ok", "ok", v, metrics=(key, s.key), evidence=v))
            continue
        rs, rp = reward
        v |= {"reward_key": rs.key, "reward_from": rp.start, "reward_to": rp.end, "step": lo}
        ev: dict[str, Any] = dict(v)
        for name in ("response_length/mean", "response/aborted_ratio", "response_length/clip_ratio"):
            moved = _movement(view, name, lo, int(t.steps[-1]))
            if moved is not None:
                ev[name] = {"from": moved[0], "to": moved[1]}
        length, aborted = ev.get("response_length/mean"), ev.get("response/aborted_ratio")
        v["length"] = f"{length['from']:.0f} → {length['to']:.0f}" if length else "—"
        v["aborted"] = f"{aborted['to']:.1%}" if aborted else "—"
        rel = pr.drop / max(abs(pr.peak), pr.tol) if pr.falling else 0.0
        status: Status = ("fail" if pr.falling and giveback >= p["fail_giveback"] and rel >= p["fail_rel"]
                          else "note" if pr.falling and rel < p["note_rel"] else "warn")
        ev["given_back"], ev["relative_drop"] = giveback, rel
        out.append(Outcome(status, "falling" if pr.falling else "flat", v, onset_step=lo, span=(lo, int(t.steps[-1])),
                           metrics=(key, rs.key, "response_length/mean", "response/aborted_ratio"), evidence=ev))
    return out


def _gap_onset(a: Track, b: Track) -> int:
    """Where the gap between two curves starts to widen (the hinge of the gap series)."""
    common, ia, ib = np.intersect1d(a.steps, b.steps, return_indices=True)
    if len(common) < 2:
        return int(a.steps[0])
    return int(common[signals.plateau_end(a.sign * a.values[ia] - b.sign * b.values[ib])])


def ood_gap(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Several validation sources: the one that improves most versus each other one that
    stalls or falls — a widening in- vs out-of-distribution gap (seed-004 §五, §八 L5)."""
    tracks = [t for t in core_tracks(view, p["min_evals"]) if t.source != "eval"]
    if len(tracks) < 2:
        return _rollout_gap(view, p)
    prog = {t.source: progress(t.values, t.sign, p["z"]) for t in tracks}
    ref = max(tracks, key=lambda t: prog[t.source].gain / prog[t.source].tol)
    rp = prog[ref.source]
    summary = ", ".join(f"{t.source} {t.values[0]:.3g} → {t.values[-1]:.3g}" for t in tracks)
    if not rp.rising:
        return [Outcome("ok", "none_rising", {"sources": summary, "count": len(tracks)},
                        metrics=tuple(f"{t.source}/{t.label}" for t in tracks))]
    out = []
    for t in tracks:
        op = prog[t.source]
        if t is ref or op.rising:
            continue
        worse = op.end < op.start - op.tol
        gap0, gap1 = rp.start - op.start, rp.end - op.end
        if not worse and gap1 - gap0 <= max(rp.tol, op.tol):
            continue  # the gap did not widen beyond the two curves' noise: nothing to say
        onset = int(t.steps[op.decline_index]) if op.falling else _gap_onset(ref, t)
        v = {"source": ref.source, "other": t.source, "ref_from": float(ref.values[0]), "ref_to": float(ref.values[-1]),
             "other_from": float(t.values[0]), "other_to": float(t.values[-1]), "gap_from": gap0, "gap_to": gap1,
             "sources": summary}
        status: Status = "fail" if worse else "warn"
        out.append(Outcome(status, status, v, onset_step=onset, span=(onset, int(t.steps[-1])),
                           metrics=(f"{ref.source}/{ref.label}", f"{t.source}/{t.label}"),
                           evidence=v | {"threshold": max(rp.tol, op.tol)}))
    if not out:
        out.append(Outcome("ok", "ok", {"sources": summary, "count": len(tracks)},
                           metrics=tuple(f"{t.source}/{t.label}" for t in tracks)))
    return out


def _rollout_gap(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """``val/id_ood_gap`` computed from the rollouts' split column (rollout/splits.py): widening when
    its late level (median of the last fifth) exceeds the early one by more than ``z`` noise sd and
    the trend agrees."""
    s = view.series("val/id_ood_gap", min_points=max(p["min_evals"], 5))
    if s is None:
        return []
    n = len(s)
    head, tail = s.values[: max(2, n // 5)], s.values[n - max(2, n // 5):]
    early, late = float(np.median(head)), float(np.median(tail))
    tol = p["z"] * max(signals.noise_scale(s.values), 1e-12)
    values = {"gap_from": early, "gap_to": late, "metric": s.key}
    if late - early <= tol or signals.trend(s.values) < 0.3:
        return [Outcome("ok", "gap_ok", values, metrics=(s.key,))]
    onset = s.step(int(np.flatnonzero(signals.rolling_level(s.values, 5) > early + tol / 2)[0]))
    return [Outcome("warn", "gap_widening", values | {"onset": onset}, onset, (onset, s.step(n - 1)), (s.key,),
                    {"value": late, "baseline": early, "threshold": early + tol})]


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
    end = float(np.median(tail[1:][-3:]))
    return float(t.values[i]), t.sign * end, bool(end - tail[0] <= tol), bool(end < tail[0] - tol)


def pref_accuracy_saturated(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """DPO-family preferences saturated on the training pairs: accuracy at ≥ 99% for good (seed-000 §12,
    "到 99%+ 但评测不涨 → 过拟合了"), dated where that lasting stretch starts, with the loss at its floor near 0
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
    """rewards/margins should grow steadily, chosen stay up while rejected falls (seed-000 §5).
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
    """KTO's KL estimate (its reference point z0, seed-000 §5): slow growth is expected; a
    sustained multiple-fold rise or repeated spikes mean the policy drifts or is unstable."""
    s = view.series("kl_estimate")
    if s is None:
        return []
    x = s.values
    # a spike comes back down; a climb that the trailing median lags behind is the rise below
    events = [e for e in signals.spikes(x, window=min(50, len(x)), k=p["k"], direction="up")
              if float(np.median(x[e.end + 1: e.end + 6] if e.end + 1 < len(x) else x[-1:]))
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
    """Reward-model training (seed-000 §6): accurate *and* decisive. Flags a margin shrinking
    towards 0 ("和稀泥") and train accuracy rising while eval accuracy does not follow."""
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


Gap = tuple[str, str, int, np.ndarray, np.ndarray, np.ndarray]


def _tail(x: np.ndarray, k: int) -> float:
    return float(np.median(x[-max(1, k):]))


def _validation_gaps(view: RunView) -> list[Gap]:
    """``(where, label, N, steps, gap, single-sample accuracy)`` from veRL's validation
    ``<var>/maj@N/mean`` − ``<var>/mean@N`` (the core variable, the largest N > 1)."""
    found = []
    rank = {v: i for i, v in enumerate(_CORE_VARS)}
    for source, frame in view.validation().items():
        # with ties split, a vote of two is one sample: maj@2 = mean@2 by construction, so N = 2 says nothing
        majs = [(m["var"], int(m["n"]), c) for c in frame.columns if (m := _MAJ.match(c)) and int(m["n"]) > 2]
        if not majs:
            continue
        var, n, col = min(majs, key=lambda t: (rank.get(t[0], len(rank)), -t[1]))
        means = sorted((int(m["n"]), c) for c in frame.columns if (m := _MEAN.match(c)) and m["var"] == var)
        if not means:
            continue
        mean_col = next((c for k, c in means if k == n), means[-1][1])
        steps, maj = _column(frame, col)
        msteps, single = _column(frame, mean_col)
        common, ia, ib = np.intersect1d(steps, msteps, return_indices=True)
        found.append((source, f"{col} − {mean_col}", n, common, maj[ia] - single[ib], single[ib]))
    return found


def _rollout_gaps(view: RunView) -> list[Gap]:
    """The same gap from rollout-derived keys: ``reasoning/self_consistency_gap@k`` as logged,
    else ``maj@k`` − ``pass@1``."""
    found = []
    single = view.series("pass@1", 2)
    keys = view.run.metrics
    has_gap = any(k.startswith("reasoning/self_consistency_gap@") for k in keys)
    for key in keys:
        m = re.fullmatch(r"reasoning/self_consistency_gap@(\d+)|maj@(\d+)", key)
        s = view.series(key, 2) if m else None
        if m is None or s is None or int(m[1] or m[2]) < 3:  # a vote of two is one sample (ties split)
            continue
        if m[1]:
            acc = np.full(len(s), np.nan)
            if single is not None:
                acc[np.isin(s.steps, single.steps)] = single.values[np.isin(single.steps, s.steps)]
            found.append(("rollouts", key, int(m[1]), s.steps, s.values, acc))
        elif single is not None and not has_gap:
            steps, maj, one = s.aligned(single)
            found.append(("rollouts", f"{key} − pass@1", int(m[2]), steps, maj - one, one))
    return found


def _level_noise(x: np.ndarray, k: int) -> float:
    """The standard error of a ``k``-point median of ``x``: its step-to-step noise × 1.25 / √k."""
    return 1.25 * signals.noise_scale(x) / float(np.sqrt(k)) if len(x) >= 3 else float("inf")


def self_consistency(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Self-consistency gap = majority-vote accuracy − single-sample accuracy (seed-004 §七): if
    the chains of thought really reason, N paths converge on the right answer and the vote
    beats a single sample. ~0 or negative with N > 2 means the paths do not converge — unless every
    rollout of a prompt already gives the same answer (answer entropy ~0: converged), or the single
    sample is nearly always right or nearly always wrong, where a vote cannot tell (skipped, with the
    reason). N = 2 is never read: with ties split, a vote of two is one sample."""
    out = []
    agree = view.series("diversity/answer_entropy", 2)
    for where, label, n, steps, gap, single in _validation_gaps(view) + _rollout_gaps(view):
        # a gap per training step is read on a few prompts: it needs more steps than evaluations do
        if len(gap) < (p["min_evals"] if where != "rollouts" else p["min_steps"]):
            continue
        k = max(1, min(3, len(gap) // 3))
        end, start = float(np.median(gap[-k:])), float(np.median(gap[:k]))
        acc = float(np.nanmedian(single[-k:])) if np.isfinite(single[-k:]).any() else float("nan")
        v = {"where": where, "metric": label, "n": n, "gap": end, "gap_from": start, "min_gap": p["min_gap"],
             "accuracy": f"{acc:.0%}" if np.isfinite(acc) else "—", "saturated": p["saturated"],
             "low": p["low_accuracy"]}
        unanimous = where == "rollouts" and agree is not None and _tail(agree.values, k) <= p["unanimous"]
        if end > p["min_gap"]:
            out.append(Outcome("ok", "ok", v, metrics=(label,), evidence=v))
        elif unanimous:  # every rollout of a prompt gives the same answer: converged, nothing for a vote to add
            v["entropy"] = _tail(agree.values, k) if agree is not None else 0.0
            out.append(Outcome("ok", "unanimous", v, metrics=(label, "diversity/answer_entropy"), evidence=v))
        elif np.isfinite(acc) and acc >= p["saturated"]:
            out.append(Outcome("skipped", "saturated", v, metrics=(label,), evidence=v))
        elif np.isfinite(acc) and acc <= p["low_accuracy"]:  # reliably wrong: a vote cannot show convergence
            out.append(Outcome("skipped", "low", v, metrics=(label,), evidence=v))
        elif end + p["z"] * _level_noise(gap, k) > p["min_gap"]:
            # a gap below the line by less than its own noise says nothing yet (four steps of a few prompts)
            v["noise"] = _level_noise(gap, k)
            out.append(Outcome("skipped", "noisy", v, metrics=(label,), evidence=v))
        else:
            low = signals.runs_of(signals.rolling_level(gap, k) <= p["min_gap"])
            onset = int(steps[low[-1][0]]) if low and low[-1][1] == len(gap) - 1 else int(steps[0])
            out.append(Outcome("warn", "warn", v, onset_step=onset, span=(onset, int(steps[-1])), metrics=(label,),
                               evidence=v | {"threshold": p["min_gap"]}))
    return out


FUNCTIONS: dict[str, CheckFn] = {
    "val_progress": val_progress,
    "val_reward_divergence": val_reward_divergence,
    "ood_gap": ood_gap,
    "pref_accuracy_saturated": pref_accuracy_saturated,
    "pref_margins": pref_margins,
    "kto_kl": kto_kl,
    "rm_health": rm_health,
    "self_consistency": self_consistency,
}
