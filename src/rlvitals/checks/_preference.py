"""When a preference objective (DPO and its family) has saturated: the pairs separated for good, the loss at
its floor; and when the chosen answer loses likelihood with the rejected one (displacement). Functions over
series, and the findings they make, for ``pref_accuracy_saturated`` and ``pref_margins`` (generalisation/preference.py,
whose words are in generalisation.toml) and ``loss_jump`` (stability/loss.py).

A DPO loss is −log σ(β·margin): ln 2 = 0.693 before training, and it reaches 0 only when every pair of the
batch is separated by a wide margin. Its floor is 0 for the sigmoid, hinge and IPO losses alike, so "near 0"
is measured against the loss's own start (IPO's (1/2β)² is far above ln 2): a share ``near_zero / ln 2`` of
it, that is ``near_zero`` for a loss that starts at ln 2. A loss whose first logged values are already below
ln 2 (logging that began after the first steps) is measured against ln 2. A loss with a term that does not
vanish (ORPO's and RPO's NLL, label smoothing) never comes near 0, and is not read as saturated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import signals
from ..signals import median
from ._base import Outcome, RunView, Series, Status
from ._shared import Progress, progress

__all__ = ["LN2", "LossFloor", "displacement", "ends", "lasting_start", "loss_floor", "loss_mark", "margins_since",
           "saturated"]

LN2 = math.log(2.0)


def lasting_start(ok: np.ndarray, *, keep: float, gap: int, min_len: int = 1) -> int | None:
    """The first index from which ``ok`` holds for good: true there, true on at least ``keep`` of the points
    from there to the end, never false for more than ``gap`` points in a row, and at least ``min_len`` points
    long. None when it does not hold at the end. A dip of a few batches does not end it; a relapse does.

    >>> lasting_start(np.array([0, 1, 0, 0, 0, 1, 1, 0, 1, 1], bool), keep=0.7, gap=1)
    5
    >>> lasting_start(np.array([1, 1, 1, 0], bool), keep=0.9, gap=2) is None
    True
    """
    n, best, run, held = len(ok), None, 0, 0
    for i in range(n - 1, -1, -1):
        run = 0 if ok[i] else run + 1
        if run > gap:
            break
        held += bool(ok[i])
        if ok[i] and held >= keep * (n - i) and n - i >= min_len:
            best = i
    return best


@dataclass(frozen=True)
class LossFloor:
    """A preference loss that has stayed near 0: its series, where that began (an index into it), its level
    since (median), its start and the mark it is held under."""

    loss: Series
    start_index: int
    level: float
    start: float
    mark: float

    @property
    def onset(self) -> int:
        return self.loss.step(self.start_index)


def loss_mark(x: np.ndarray, near_zero: float) -> tuple[float, float]:
    """``(start, mark)``: the loss's start (median of its first three values, ln 2 at least) and the level
    under which it is near 0 (``near_zero`` for a loss that starts at ln 2, in proportion otherwise)."""
    start = max(float(median(x[:3])), LN2)
    return start, near_zero * start / LN2


def loss_floor(view: RunView, p: Mapping[str, Any]) -> LossFloor | None:
    """The preference loss ``loss/dpo`` held near 0 (its level under :func:`loss_mark`) for good, from where
    that began (:func:`lasting_start` with ``loss_keep`` and a gap of ``window`` points); None when it is not,
    or in a run that is not a preference run. The level is the rolling median over ``window`` batches: a
    saturated loss still meets a batch with a pair it does not yet separate (0.3 among values of 0.003), and
    a few of them close together lift even the median for a moment (hence ``loss_keep`` below ``keep``)."""
    loss = view.series("loss/dpo")
    if loss is None or view.family != "preference":
        return None
    start, mark = loss_mark(loss.values, p["near_zero"])
    w, keep = p["window"], p["loss_keep"]
    i = lasting_start(signals.rolling_level(loss.values, w) <= mark, keep=keep, gap=w, min_len=min(w, len(loss)))
    if i is None:
        return None
    return LossFloor(loss, i, float(median(loss.values[i:])), start, mark)


def margins_since(view: RunView, step: int, k: int = 3) -> str:
    """``"0.82 → 16.2"``: the margins (training, else evaluation) at ``step`` and at the end, medians of ``k``
    points; ``"—"`` when the run logged none after ``step``."""
    m = view.first("rewards/margins", "eval/rewards/margins", min_points=1)
    if m is None:
        return "—"
    after = m.after(step).values
    if len(after) == 0:
        return "—"
    return f"{float(median(after[:k])):.3g} → {float(median(after[-k:])):.3g}"


#: how evaluation moved after the onset: ``(metric, value at the onset, level at the end, stalled)``
EvalAfter = tuple[str, float, float, bool]


def saturated(view: RunView, p: Mapping[str, Any], dated: Series, onset: int, floor: LossFloor | None,
              after: EvalAfter | None) -> Outcome:
    """Preferences saturated since ``onset`` (read on ``dated``, the accuracy or else the loss): with the loss's
    floor when it is near 0 (templates ``saturated*``), and how evaluation moved after it (``after``; a stall
    fails: the model memorises the pairs)."""
    level = float(median(dated.after(onset).values))
    v: dict[str, Any] = {"onset": onset, "saturated": p["saturated"], "level": level}
    if floor is not None:
        v |= {"loss_onset": floor.onset, "loss_level": floor.level, "loss_start": floor.start, "near_zero": floor.mark,
              "accuracy": "—" if dated is floor.loss else f"{level:.1%}", "margins": margins_since(view, onset)}
    metrics = tuple(dict.fromkeys((dated.key, *((floor.loss.key,) if floor is not None else ()))))
    base, span = "saturated" if floor is not None else "warn", (onset, dated.step(-1))
    if after is None:
        return Outcome("warn", base, v, onset_step=onset, span=span, metrics=metrics, evidence=v)
    metric, v["eval_from"], v["eval_to"], stalled = after
    v["eval_metric"] = metric
    template = {"warn": ("warn_eval_ok", "fail"), "saturated": ("saturated_eval_ok", "saturated_fail")}[base][stalled]
    return Outcome("fail" if stalled else "warn", template, v, onset_step=onset, span=span,
                   metrics=(*metrics, metric), evidence=v)


def ends(s: Series) -> tuple[float, float]:
    """The medians of the first and last fifth of ``s``."""
    k = max(1, len(s) // 5)
    return float(median(s.values[:k])), float(median(s.values[-k:]))


def displacement(view: RunView, p: Mapping[str, Any], margins: Progress, v: dict[str, Any]) -> list[Outcome]:
    """Chosen falling below 0 together with rejected, both beyond their trend (likelihood displacement), dated
    where chosen's level turns negative: a note while the margin still grows, unless the chosen answer lost
    ``displaced`` of its own log-probability (a per-token change: the sum's relative fall does not depend on the
    answer's length); a warning otherwise."""
    chosen, rejected = view.series("rewards/chosen"), view.series("rewards/rejected")
    if chosen is None or rejected is None:
        return []
    (c0, c1), (r0, r1) = ends(chosen), ends(rejected)
    ctol = progress(chosen.values, z=p["z"], k=max(3, len(chosen) // 5)).tol
    if not (c1 < 0 and c1 < c0 - ctol and r1 < r0 and signals.trend(chosen.values) <= -p["trend"]
            and signals.trend(rejected.values) <= -p["trend"]):
        return []
    below = np.flatnonzero(signals.rolling_level(chosen.values, max(3, len(chosen) // 10)) < 0)
    onset = chosen.step(int(below[0])) if len(below) else chosen.step(0)
    logps = view.series("logps/chosen")
    lp = ends(logps) if logps is not None else None
    dv = v | {"c_from": c0, "c_to": c1, "r_from": r0, "r_to": r1,
              "logps": f"{lp[0]:.3g} → {lp[1]:.3g}" if lp else "—"}
    lost = lp is not None and lp[0] < 0 and (lp[0] - lp[1]) >= p["displaced"] * abs(lp[0])
    status: Status = "note" if margins.rising and not margins.falling and not lost else "warn"
    return [Outcome(status, "displacement", dv, onset_step=onset, span=(onset, chosen.step(-1)),
                    metrics=(chosen.key, rejected.key, "logps/chosen"), evidence=dv)]
