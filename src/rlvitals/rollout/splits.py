"""In- vs out-of-distribution rollouts of one step: ``val/id_ood_gap`` from the ``split`` column (or,
with ``by="source"``, from the data sources).

The gap is the mean score of the step's in-distribution rollouts minus the mean score of its
out-of-distribution ones (docs/reading-rules.md#ood-gap; L5). In-distribution means the ``by`` column
(default ``split``) equal to one of ``id_values`` (default ``train``); out-of-distribution is every
other non-null value (``val``, ``ood``, a benchmark name …), or ``ood_values`` when given. A step
with no rollout on either side, or no finite score there, has no value (null). Rollouts are weighted
equally.

Streaming: the state keeps each step's ID and OOD scores, so ``compute`` sums them with ``math.fsum``
(order-independent): sharded and unsharded results are equal bit for bit.

>>> import polars as pl
>>> df = pl.DataFrame({"step": [1, 1, 1], "group": ["a", "a", "b"], "sample": [0, 1, 0],
...                    "score": [1.0, 0.0, 0.25], "split": ["train", "train", "ood"]})
>>> compute(update(None, df))["val/id_ood_gap"].to_list()
[0.25]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from ..words import Words
from .schema import SCORE, SOURCE, SPLIT, STEP

__all__ = ["SplitState", "compute", "merge", "update"]

KEY = "val/id_ood_gap"


@dataclass(frozen=True)
class SplitState:
    """Per step, the finite scores of the ID and of the OOD rollouts, the column that tells them apart
    (``split`` or ``source``) and the values used."""

    id_values: tuple[str, ...] = ("train",)
    ood_values: tuple[str, ...] | None = None
    scores: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    by: str = SPLIT


def _sides(chunk: pl.DataFrame, state: SplitState) -> pl.DataFrame:
    split = pl.col(state.by)
    is_id = split.is_in(list(state.id_values))
    is_ood = split.is_in(list(state.ood_values)) if state.ood_values is not None else ~is_id & split.is_not_null()
    finite = pl.col(SCORE).is_not_null() & pl.col(SCORE).is_finite()
    return chunk.filter(finite).group_by(STEP).agg(
        pl.col(SCORE).filter(is_id).cast(pl.Float64).alias("id"),
        pl.col(SCORE).filter(is_ood).cast(pl.Float64).alias("ood"))


def update(state: SplitState | None, chunk: pl.DataFrame, *, id_values: Sequence[str] | None = None,
           ood_values: Sequence[str] | None = None, by: str | None = None) -> SplitState:
    """Fold a chunk into ``state`` (None: a new state with the given values); needs the ``score``
    column and the ``by`` column (``split``, or ``source``)."""
    if by not in (None, SPLIT, SOURCE):
        raise ValueError(Words(f"by must be {SPLIT!r} or {SOURCE!r}, got {by!r}",
                               f"by 必须是 {SPLIT!r} 或 {SOURCE!r}，给的是 {by!r}"))
    base = state or SplitState(tuple(id_values or ("train",)), None if ood_values is None else tuple(ood_values),
                               by=by or SPLIT)
    missing = [c for c in (SCORE, base.by) if c not in chunk.columns]
    if missing:
        raise ValueError(Words(f"this metric needs the rollout column(s) {missing}; the table has {chunk.columns}",
                               f"这个指标需要 rollout 列 {missing}；表中只有这些列：{chunk.columns}"))
    asked = (tuple(id_values) if id_values is not None else base.id_values,
             tuple(ood_values) if ood_values is not None else base.ood_values, by or base.by)
    if asked != (base.id_values, base.ood_values, base.by):
        raise ValueError(f"update: id/ood values {asked} differ from the state's "
                         f"{(base.id_values, base.ood_values, base.by)}; build a new state instead")
    scores = {int(step): (np.asarray(ids, dtype=float), np.asarray(oods, dtype=float))
              for step, ids, oods in _sides(chunk, base).iter_rows()}
    return merge(base, SplitState(base.id_values, base.ood_values, scores, base.by))


def merge(a: SplitState, b: SplitState) -> SplitState:
    """Combine two states (any split of the rollouts: each score is kept, none is averaged early)."""
    if (a.id_values, a.ood_values, a.by) != (b.id_values, b.ood_values, b.by):
        raise ValueError("cannot merge split states built with different id/ood values")
    scores = dict(a.scores)
    for step, (ids, oods) in b.scores.items():
        if step in scores:
            ids0, oods0 = scores[step]
            ids, oods = np.concatenate([ids0, ids]), np.concatenate([oods0, oods])
        scores[step] = (ids, oods)
    return SplitState(a.id_values, a.ood_values, scores, a.by)


def _mean(values: np.ndarray) -> float | None:
    return math.fsum(values.tolist()) / len(values) if len(values) else None


def compute(state: SplitState) -> pl.DataFrame:
    """One row per step: ``step`` and ``val/id_ood_gap`` (null where a side is empty)."""
    rows = []
    for step in sorted(state.scores):
        ids, oods = state.scores[step]
        a, b = _mean(ids), _mean(oods)
        rows.append((step, None if a is None or b is None else a - b))
    return pl.DataFrame(rows, schema={STEP: pl.Int64, KEY: pl.Float64}, orient="row")
