"""A run's token count at each step: the x axis that lines runs up by the tokens they trained on.

Two runs whose responses differ in length do different amounts of work per step, so their curves compare
fairly against the tokens trained on, not the steps. The count is the log's own: a key counting the tokens so
far (TRL's ``num_tokens``) when the run logged one, else the sum of a key counting one step's tokens (veRL's
``perf/total_num_tokens``), each logged value standing for the steps since the previous one (as a step's
time does for the run's clock). Which keys count tokens is the catalog's (``views.toml``, ``[tokens]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..catalog.views import Views
from ..run.run import Run
from .overview import CLOCK_KNOTS

__all__ = ["token_axes", "token_axis"]


def _logged(run: Run, key: str) -> bool:
    return key in run.frame.columns and run.frame[key].null_count() < run.frame.height


def token_axis(run: Run, views: Views, knots: int = CLOCK_KNOTS) -> dict[str, Any] | None:
    """``{"key", "summed", "steps", "tokens"}``: the tokens trained on by each step (at most ``knots`` steps, the
    first and last kept), from the first key of ``views.tokens_seen`` the run logged (``summed`` False), else
    summed from the first of ``views.step_tokens`` (``summed`` True); None without two counted steps.

    Example:
        >>> from rlvitals.catalog.views import load_views
        >>> from rlvitals.synthetic.scenarios import run_from_series
        >>> run = run_from_series({"perf/total_num_tokens": [100.0, 300.0, 200.0]})
        >>> token_axis(run, load_views())["tokens"]
        [100, 400, 600]
    """
    seen = next((k for k in views.tokens_seen if _logged(run, k)), None)
    key = seen or next((k for k in views.step_tokens if _logged(run, k)), None)
    if key is None:
        return None
    steps, values = run.series(key, finite=True)
    good = values >= 0
    steps, values = steps[good].astype(np.float64), values[good].astype(np.float64)
    if len(steps) < 2:
        return None
    if seen is None:
        gaps = np.diff(steps, prepend=steps[0] - 1)  # a count logged every k steps stands for the k steps
        gaps[0] = 1.0
        values = np.cumsum(values * gaps)
    keep = np.unique(np.linspace(0, len(steps) - 1, min(knots, len(steps))).round().astype(int))
    whole = bool(np.all(np.mod(steps, 1) == 0))
    return {"key": key, "summed": seen is None,
            "steps": (steps[keep].astype(np.int64) if whole else steps[keep]).tolist(),
            "tokens": np.round(values[keep]).astype(np.int64).tolist()}


def token_axes(runs: Sequence[tuple[str, Run]], views: Views) -> dict[str, dict[str, Any]]:
    """:func:`token_axis` of every ``(id, run)`` that counts its tokens, by id."""
    return {rid: axis for rid, run in runs if (axis := token_axis(run, views)) is not None}
