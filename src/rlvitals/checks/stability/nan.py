"""NaN and Inf: a metric that logged a non-finite value on a training step, told apart from the steps a
mixed-precision loss scaler skipped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .._base import Outcome, RunView
from .gradient import GRAD_KEYS
from .loss import LOSS_KEYS


def nan_inf(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Any canonical metric that logged NaN or ±Inf on a training step. A few non-finite gradient
    norms (at most ``max_skips``, and ``skip_share`` of the steps) with a finite loss at and around
    them are the mixed-precision loss scaler skipping an overflowed step (fp16 dynamic loss scaling
    does this by design): a note with the count, not a diverged run. NaN in a loss, or on many
    steps, fails."""
    run = view.run
    bad: dict[str, list[int]] = {}
    steps, train = run.steps, run.train_mask
    for key in run.metrics:  # where each float metric logged a non-finite value on a training step
        column = run.frame.get_column(key)
        if not column.dtype.is_float():  # an integer or a flag is always finite
            continue
        flags = ~np.isfinite(column.to_numpy()) & train
        if column.null_count() and flags.any():  # a null is "not logged" (NaN in NumPy), not non-finite
            flags &= column.is_not_null().to_numpy()
        if flags.any():
            bad[key] = steps[flags].tolist()
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
