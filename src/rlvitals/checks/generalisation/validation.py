"""Validation: the core curve rising, flat or falling from its best, the training reward rising while it does
not, and a widening gap between in- and out-of-distribution sets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import signals
from ...signals import median
from .._base import Outcome, RunView, Series, Status
from .._shared import Progress, progress
from .tracks import Track, core_tracks

REWARD_KEYS = ("critic/score/mean", "critic/rewards/mean")


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
    Falling clearly while the training reward keeps rising fails (docs/reading-rules.md#val-progress); so does losing
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
    return float(median(x[:k])), float(median(x[-k:]))


def val_reward_divergence(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Training reward rising while validation stays flat or falls
    (docs/reading-rules.md#val-reward-divergence): read response_length/mean, then response/aborted_ratio."""
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
            v |= {"reward_key": s.key, "reward_from": float(median(s.values[: max(1, len(s) // 5)])),
                  "reward_to": float(median(s.values[-max(1, len(s) // 5):]))}
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
    stalls or falls — a widening in- vs out-of-distribution gap (docs/reading-rules.md#ood-gap; L5)."""
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
    early, late = float(median(head)), float(median(tail))
    tol = p["z"] * max(signals.noise_scale(s.values), 1e-12)
    values = {"gap_from": early, "gap_to": late, "metric": s.key}
    if late - early <= tol or signals.trend(s.values) < 0.3:
        return [Outcome("ok", "gap_ok", values, metrics=(s.key,))]
    onset = s.step(int(np.flatnonzero(signals.rolling_level(s.values, 5) > early + tol / 2)[0]))
    return [Outcome("warn", "gap_widening", values | {"onset": onset}, onset, (onset, s.step(n - 1)), (s.key,),
                    {"value": late, "baseline": early, "threshold": early + tol})]
