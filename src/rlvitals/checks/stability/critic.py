"""The critic (PPO): a value loss that does not fall while the reward rises, and an explained variance below 0."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import signals
from ...signals import median
from .._base import Outcome, RunView, Series
from .._shared import REWARD_KEYS, _knee, _short
from ._windows import _rise, _windows


def critic_lag(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """PPO: the value loss not falling while the reward rises (docs/reading-rules.md#critic-lag: the critic
    cannot keep up with how fast the actor changes), on ``min_windows`` overlapping windows of
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
    # the cheap conditions first: a window's trends are computed only where they can still decide
    lag = [_rise(rw[a:b], r_sd, in_se=True) >= p["k"] and signals.trend(rw[a:b]) >= p["rise"]
           and signals.trend(vf[a:b]) >= p["flat"] for a, b in wins]
    climb = [median(vf[b - q : b]) >= p["climb"] * median(vf[a : a + q]) and signals.trend(vf[a:b]) >= p["tau"]
             for a, b in wins]
    keys = (v.key, r.key)
    tenth = max(2, n // 10)
    values = {"metric": v.key, "reward": r.key, "v_first": float(median(vf[:tenth])),
              "v_last": float(median(vf[-tenth:])), "r_first": float(median(rw[:tenth])),
              "r_last": float(median(rw[-tenth:]))}
    for template, flags in (("warn", lag), ("warn_climb", climb)):
        runs = signals.runs_of(np.array(flags, dtype=bool), p["min_windows"])
        if runs:
            a, b = wins[runs[0][0]][0], wins[runs[0][1]][1]
            a += _knee(vf[a:b])  # where the value loss stops falling
            q = max(2, (b - a) // 4)
            values |= {"step": int(steps[a]), "end_step": int(steps[b - 1]),
                       "v_from": float(median(vf[a : a + q])), "v_to": float(median(vf[b - q : b])),
                       "r_from": float(median(rw[a : a + q])), "r_to": float(median(rw[b - q : b]))}
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
    constant would) for ``min_steps`` steps or more (docs/reading-rules.md#explained-variance). Negative for most of
    the run, or still negative at the end, fails."""
    s = view.series("critic/vf_explained_var")
    if s is None:
        return []
    x, n = s.values, len(s)
    found = signals.sustained_above(-x, -p["threshold"], window=5, min_len=p["min_steps"], max_gap=2)
    values = {"metric": s.key, "threshold": p["threshold"], "last": float(median(x[-max(2, n // 10):])),
              "median": float(median(x))}
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
