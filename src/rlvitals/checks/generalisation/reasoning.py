"""L6 reasoning quality: the self-consistency gap, a majority vote's accuracy against a single sample's."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ... import signals
from ...signals import median
from .._base import Outcome, RunView
from .tracks import _CORE_VARS, _MEAN, _column

_MAJ = re.compile(r"^(?P<var>[^/]+)/maj@(?P<n>\d+)/mean$")

Gap = tuple[str, str, int, np.ndarray, np.ndarray, np.ndarray]


def _tail(x: np.ndarray, k: int) -> float:
    return float(median(x[-max(1, k):]))


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
    """Self-consistency gap = majority-vote accuracy − single-sample accuracy (docs/reading-rules.md#self-consistency):
    if the chains of thought really reason, N paths converge on the right answer and the vote
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
        end, start = float(median(gap[-k:])), float(median(gap[:k]))
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
