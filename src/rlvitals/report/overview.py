"""The report's first screen and its time axis.

The first screen holds the curves everyone looks at first (the catalog's ``views.toml``: per
algorithm family, validation, reward, KL, entropy, response length …), one chart per slot with
every run's line overlaid, beside the layer verdicts. A run's *clock* maps its steps to the seconds
elapsed since it started: the tracker's own wall clock when the log has one (TensorBoard, W&B,
MLflow), else summed from a key timing one step (``timing_s/step``); a chart can then be read
against time instead of steps. A key logged every k steps times one step of k: each logged value
counts for the steps since the previous one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..catalog.views import VALIDATION, Views
from ..checks import RunView, core_tracks
from ..run.run import Run
from .charts import Page, trace

#: knots a clock is reduced to (time grows monotonically: straight lines between knots read it well)
CLOCK_KNOTS = 2000


def _slots(runs: Sequence[tuple[str, Run]], views: Views) -> list[tuple[str, ...]]:
    """The first screen's slots: those of each run's family, in order, each once."""
    out: list[tuple[str, ...]] = []
    for _, run in runs:
        out.extend(s for s in views.first_look(run.family) if s not in out)
    return out


def _validation(page: Page, runs: Sequence[tuple[str, Run]]) -> str | None:
    """One chart of every run's core validation curve per data source (what the checks judge)."""
    traces, keys, aliases = [], [], {}
    for rid, run in runs:
        for t in core_tracks(RunView(run)):
            name = f"{t.source}/{t.label}"  # the checks' name of the curve; the run's key behind it:
            key = next((k for k in run.metrics if k.endswith(name) or k in (t.label, f"eval/{t.label}")), name)
            keys.append(key)
            aliases[name] = key
            traces.append(trace(f"{page.labels[rid]}: {name}" if len(runs) > 1 else name, rid, key,
                                t.steps, t.values, page.buckets))
    if not traces:
        return None
    return page.add(keys, traces, title={"en": "Validation", "zh": "验证集"}, aliases=aliases)


def _logged(run: Run, key: str) -> bool:
    return key in run.frame.columns and run.frame[key].null_count() < run.frame.height


def first_look(page: Page, runs: Sequence[tuple[str, Run]], views: Views) -> dict[str, Any]:
    """The first screen: ``{"charts": [chart ids], "missing": [slots no run logged]}``; a slot takes, per
    run, the first of its keys that run logged."""
    charts, missing = [], []
    for slot in _slots(runs, views):
        cid = _validation(page, runs) if VALIDATION in slot else None
        if cid is None:
            traces, keys = [], []
            for rid, run in runs:
                key = next((k for k in slot if k != VALIDATION and _logged(run, k)), None)
                if key is None:
                    continue
                x, y = run.series(key, train_only=VALIDATION not in slot)
                if len(x):
                    keys.append(key)
                    traces.append(trace(f"{page.labels[rid]}: {key}" if len(runs) > 1 else key, rid, key, x, y,
                                        page.buckets))
            cid = page.add(keys, traces) if traces else None
        if cid is None:
            missing.append(slot[0])
        else:
            charts.append(cid)
    return {"charts": charts, "missing": missing}


def clock(run: Run, views: Views, knots: int = CLOCK_KNOTS) -> dict[str, Any] | None:
    """The run's clock: ``{"source", "key", "steps", "seconds", "start"}``, the seconds elapsed at each step
    (at most ``knots`` of them, the first and last always kept); None when the run has neither clock.

    The tracker's wall clock (:attr:`Run.wall`: TensorBoard, W&B, MLflow) is the true elapsed time,
    validation and checkpointing included, and is used when the run has one: ``"source": "wall"``,
    ``"key"`` names the tracker's field and ``"start"`` is the epoch second the seconds count from
    (``start + seconds`` is the absolute time; None for a clock that only counts from the run's start,
    W&B's ``_runtime``). Otherwise the seconds are summed from the first key of ``views.step_seconds``
    the run logged: ``"source"`` and ``"key"`` are that key, ``"start"`` is None.

    Example:
        >>> from rlvitals.catalog.views import load_views
        >>> from rlvitals.synthetic.scenarios import run_from_series
        >>> run = run_from_series({"timing_s/step": [2.0, 2.0, 4.0]})
        >>> clock(run, load_views())["seconds"]
        [2.0, 4.0, 8.0]
    """
    timed = _wall(run)
    if timed is not None:
        steps, seconds, start = timed
        label = run.wall.source if run.wall is not None else "wall"
        return {"source": "wall", "key": label, "start": start, **_knots(steps, seconds, knots)}
    key = next((k for k in views.step_seconds if _logged(run, k)), None)
    if key is None:
        return None
    steps, values = run.series(key, finite=True)
    good = values >= 0
    steps, values = steps[good].astype(np.float64), values[good]
    if len(steps) < 2:
        return None
    gaps = np.diff(steps, prepend=steps[0] - 1)  # a value logged every k steps stands for the k steps
    gaps[0] = 1.0
    return {"source": key, "key": key, "start": None, **_knots(steps, np.cumsum(values * gaps), knots)}


def _wall(run: Run) -> tuple[np.ndarray, np.ndarray, float | None] | None:
    """``(steps, seconds since the start, start)`` of the tracker's clock; None without two timed steps.
    The start is the run's own when the source says it (and it is not after the first step), else the
    first step's time; a clock counting from the run's start has no epoch start (None)."""
    timed = run.wall_times
    if run.wall is None or timed is None or len(timed[0]) < 2:
        return None
    steps, seconds = timed
    if not run.wall.epoch:
        return steps, seconds, None
    first = float(seconds.min())
    start = run.wall.started if run.wall.started is not None and run.wall.started <= first else first
    return steps, seconds - start, start


def _knots(steps: np.ndarray, seconds: np.ndarray, knots: int) -> dict[str, Any]:
    keep = np.unique(np.linspace(0, len(steps) - 1, min(knots, len(steps))).round().astype(int))
    as_int = np.all(np.mod(steps, 1) == 0)
    return {"steps": (steps[keep].astype(np.int64) if as_int else steps[keep]).tolist(),
            "seconds": np.round(seconds[keep], 3).tolist()}
