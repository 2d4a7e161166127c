"""The validation curves of a run: the core curve of every data source it evaluated (:func:`core_tracks`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from .._base import RunView

_MEAN = re.compile(r"^(?P<var>[^/]+)/mean@(?P<n>\d+)$")

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
    """The steps and finite values of ``label`` where it was logged (a null or NaN is no point)."""
    column = frame.get_column(label)
    if column.dtype.is_float():  # a null is NaN in NumPy: one test drops both
        values = column.to_numpy().astype(float)
        keep = np.isfinite(values) & frame.get_column("step").is_not_null().to_numpy()
        return frame.get_column("step").to_numpy()[keep], values[keep]
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
    ``eval`` source: reward, preference accuracy, margins or loss), with at least ``min_evals`` points. Read once
    per view: several checks and the forecast ask for them."""
    every = cast("list[Track]", view.shared("core_tracks", lambda: _core_tracks(view)))
    return [t for t in every if len(t.values) >= min_evals]


def _core_tracks(view: RunView) -> list[Track]:
    out = []
    for source, frame in view.validation().items():
        found = _core_label(source, [c for c in frame.columns if c != "step"])
        if found is None:
            continue
        steps, values = _column(frame, found[0])
        out.append(Track(source, found[0], steps, values, found[1]))
    return out
