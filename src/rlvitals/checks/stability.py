"""L1 training stability: loss, gradient norm, KL, clip fraction, learning rate, NaN/Inf, critic."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import signals
from ._base import CheckFn, Outcome, RunView

GRAD_KEYS = ("actor/grad_norm", "critic/grad_norm", "rm/grad_norm")


def grad_norm_spike(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Steps where a gradient norm jumps to ``ratio``× its trailing median (seed-000 §2.2:
    "突然飙升到正常值的 10 倍以上"). One spike warns; ``fail_count`` spikes fail."""
    out = []
    for key in GRAD_KEYS:
        s = view.series(key)
        if s is None:
            continue
        events = signals.ratio_spikes(s.values, ratio=p["ratio"], window=p["window"])
        if not events:
            out.append(Outcome("ok", "ok", {"metric": key, "ratio": p["ratio"]}, metrics=(key,)))
            continue
        worst = max(events, key=lambda e: e.score)
        status = "fail" if len(events) >= p["fail_count"] else "warn"
        values = {"metric": key, "count": len(events), "step": s.step(worst.peak), "peak": worst.value,
                  "baseline": worst.baseline, "score": worst.score, "ratio": p["ratio"],
                  "steps": ", ".join(str(s.step(e.peak)) for e in events[:8])}
        out.append(Outcome(
            status, status, values, onset_step=s.step(events[0].start),
            span=(s.step(events[0].start), s.step(events[-1].end)), metrics=(key,),
            evidence={"peak": worst.value, "baseline": worst.baseline, "threshold": p["ratio"] * worst.baseline,
                      "spike_steps": [s.step(e.peak) for e in events]},
        ))
    return out


def nan_inf(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Any canonical metric that logged NaN or ±Inf on a training step."""
    run = view.run
    bad: dict[str, list[int]] = {}
    steps = run.steps
    for key in run.metrics:
        col = run.frame[key]
        values = col.fill_null(0.0).to_numpy()
        mask = ~np.isfinite(values) & run.train_mask
        if mask.any():
            bad[key] = steps[mask].tolist()
    if not bad:
        return [Outcome("ok", "ok", {"count": len(run.metrics)})]
    first = min(s[0] for s in bad.values())
    last = max(s[-1] for s in bad.values())
    keys = sorted(bad, key=lambda k: bad[k][0])
    return [Outcome("fail", "fail", {"metrics": ", ".join(keys[:6]) + (" …" if len(keys) > 6 else ""),
                                     "step": first, "count": sum(len(v) for v in bad.values())},
                    onset_step=first, span=(first, last), metrics=tuple(keys),
                    evidence={"steps": {k: v[:20] for k, v in bad.items()}})]


FUNCTIONS: dict[str, CheckFn] = {
    "grad_norm_spike": grad_norm_spike,
    "nan_inf": nan_inf,
}
