"""Prompt-scale metrics: how reward and gradient are spread over the prompts of a step (the
in- versus out-of-distribution gap is :mod:`rlvitals.rollout.splits`, per-source values
:mod:`rlvitals.rollout.by_source`).

Streaming: ``update(state | None, chunk, top=)``, ``merge(a, b)``, ``compute(state)`` over chunks of
whole groups. The state keeps each prompt group's values; ``compute`` sorts them (Gini, top share) or
sums them with ``math.fsum``, so a sharded result equals the unsharded one bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from ..words import Words
from .schema import ADVANTAGE, CORRECT, GROUP, SCORE, STEP

BUCKETS = ("easy", "medium", "hard")


def _require(df: pl.DataFrame, *cols: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(Words(f"this metric needs the rollout column(s) {missing}; the table has {df.columns}",
                               f"这个指标需要 rollout 列 {missing}；表中只有这些列：{df.columns}"))


def gini(values: np.ndarray) -> float:
    """Gini coefficient: sum_i sum_j |x_i - x_j| / (2 n^2 mean(x)).

    Negative values are first shifted so the minimum is 0 (rewards in [-1, 1] are common);
    NaN for an empty input or a zero total. 0 = all equal; (n-1)/n = one value holds everything.

    >>> gini(np.array([0.0, 0.0, 0.0, 1.0]))
    0.75
    """
    x = np.asarray(values, float)
    x = x[np.isfinite(x)]  # an infinite reward has no share of a total
    if x.size == 0:
        return math.nan
    if x.min() < 0:
        x = x - x.min()
    if x.sum() == 0:
        return math.nan
    xs = np.sort(x)
    n = xs.size
    # sum_{i,j} |x_i - x_j| = 2 * sum_k (2k - n - 1) x_(k) for the sorted values, k = 1..n
    return float(2 * np.sum((2 * np.arange(1, n + 1) - n - 1) * xs) / (2 * n * n * xs.mean()))


def top_share(values: np.ndarray, top: float = 0.1) -> float:
    """Share of the total of ``values`` (each prompt's positive reward) held by the
    ceil(top * n) largest; NaN when the total is 0."""
    x = np.clip(np.asarray(values, float), 0, None)
    x = x[np.isfinite(x)]  # an infinite reward has no share of a total
    if not 0 < top <= 1:
        raise ValueError(Words(f"top must be in (0, 1], got {top}", f"top 必须在 (0, 1] 之内，给的是 {top}"))
    if x.sum() == 0:
        return math.nan
    k = math.ceil(top * x.size)
    return float(np.sort(x)[::-1][:k].sum() / x.sum())


def difficulty(correct: Sequence[bool | None]) -> str | None:
    """Bucket of a prompt group: "easy" when every known outcome is correct, "hard" when none is,
    "medium" otherwise; None when no outcome is known."""
    known = [c for c in correct if c is not None]
    if not known:
        return None
    return "easy" if all(known) else "hard" if not any(known) else "medium"


@dataclass(frozen=True)
class StepPrompts:
    """One step's partial state: per prompt group its mean score, positive reward, difficulty
    bucket (index into ``BUCKETS``, -1 unknown) and sum of |advantage| (NaN where absent)."""

    mean: np.ndarray
    pos: np.ndarray
    bucket: np.ndarray
    absadv: np.ndarray

    def __add__(self, o: StepPrompts) -> StepPrompts:
        return StepPrompts(*(np.concatenate([a, b]) for a, b in zip(self.parts(), o.parts(), strict=True)))

    def parts(self) -> tuple[np.ndarray, ...]:
        return self.mean, self.pos, self.bucket, self.absadv


@dataclass(frozen=True)
class PromptState:
    """Mergeable partial state of :func:`prompts_table`: ``top``, which of score / correct /
    advantage the chunks carried, and one :class:`StepPrompts` per step."""

    top: float = 0.1
    columns: frozenset[str] = frozenset()
    steps: dict[int, StepPrompts] = field(default_factory=dict)


def _per_group(df: pl.DataFrame) -> pl.DataFrame:
    nan = pl.lit(math.nan, pl.Float64)
    aggs = [pl.col(SCORE).mean().fill_null(math.nan).alias("mean") if SCORE in df.columns else nan.alias("mean"),
            pl.col(SCORE).clip(0).sum().alias("pos") if SCORE in df.columns else nan.alias("pos"),
            pl.col(ADVANTAGE).abs().sum().alias("absadv") if ADVANTAGE in df.columns else nan.alias("absadv")]
    if CORRECT in df.columns:
        known = pl.col(CORRECT).drop_nulls()
        aggs.append(pl.when(known.len() == 0).then(-1).when(known.all()).then(0)
                    .when(~known.any()).then(2).otherwise(1).alias("bucket"))
    else:
        aggs.append(pl.lit(-1).alias("bucket"))
    return df.group_by(STEP, GROUP).agg(aggs).with_columns(pl.col("mean", "pos", "absadv").cast(pl.Float64))


def update(state: PromptState | None, chunk: pl.DataFrame, *, top: float | None = None) -> PromptState:
    """Fold a chunk of whole groups into ``state`` (None: a new state with the given ``top``)."""
    if state is None:
        state = PromptState(top=0.1 if top is None else top)
    elif top is not None and top != state.top:
        raise ValueError(f"update: top={top} differs from the state's top={state.top}; build a new state instead")
    if not 0 < state.top <= 1:
        raise ValueError(Words(f"top must be in (0, 1], got {state.top}",
                               f"top 必须在 (0, 1] 之内，给的是 {state.top}"))
    _require(chunk, STEP, GROUP)
    if SCORE not in chunk.columns and CORRECT not in chunk.columns:
        raise ValueError(Words(f"prompt metrics need a '{SCORE}' or a '{CORRECT}' column (either is enough); "
                               f"the table has {chunk.columns}",
                               f"prompt 指标需要 '{SCORE}' 或 '{CORRECT}' 列（有一个就够）；"
                               f"表中只有这些列：{chunk.columns}"))
    steps: dict[int, StepPrompts] = {}
    for (step,), g in _per_group(chunk).group_by(STEP):
        steps[int(step)] = StepPrompts(g["mean"].to_numpy(), g["pos"].to_numpy(),
                                       g["bucket"].cast(pl.Int64).to_numpy(), g["absadv"].to_numpy())
    cols = frozenset(c for c in (SCORE, CORRECT, ADVANTAGE) if c in chunk.columns)
    return merge(state, PromptState(state.top, cols, steps))


def merge(a: PromptState, b: PromptState) -> PromptState:
    """Combine two states built from disjoint sets of groups."""
    if a.top != b.top:
        raise ValueError("cannot merge prompt states built with different top")
    steps = dict(a.steps)
    for step, acc in b.steps.items():
        steps[step] = steps[step] + acc if step in steps else acc
    return PromptState(a.top, a.columns | b.columns, steps)


def _step_row(step: int, acc: StepPrompts, state: PromptState) -> dict[str, float]:
    row: dict[str, float] = {STEP: step}
    if SCORE in state.columns:
        means = acc.mean[~np.isnan(acc.mean)]
        row["prompt/reward_gini"] = gini(np.sort(means))
        row["prompt/top_share"] = top_share(np.sort(acc.pos[~np.isnan(acc.pos)]), state.top)
    if CORRECT in state.columns:
        row.update(_bucket_shares(acc, ADVANTAGE in state.columns))
    return row


def compute(state: PromptState) -> pl.DataFrame:
    """Per-step frame of :func:`prompts_table` from a state."""
    rows = [_step_row(s, state.steps[s], state) for s in sorted(state.steps)]
    if not rows:
        return pl.DataFrame(schema={STEP: pl.Int64})
    return pl.DataFrame(rows).with_columns(pl.col(STEP).cast(pl.Int64),
                                           pl.exclude(STEP).cast(pl.Float64).fill_nan(None))


def prompts_table(df: pl.DataFrame, top: float = 0.1) -> pl.DataFrame:
    """Per-step table: ``prompt/reward_gini`` (Gini of per-prompt mean ``score``), ``prompt/top_share``
    (share of the step's positive reward, sum of max(score, 0) per prompt, earned by the top
    ``top`` of prompts) with ``score``; ``prompt/difficulty/{easy,medium,hard}/share`` (shares of
    prompts with a known outcome) with ``correct``; and ``prompt/difficulty/{bucket}/adv_share``
    (bucket's share of the step's sum of |advantage|) with ``correct`` and ``advantage``.
    ``compute(update(None, df, top=top))``.

    >>> df = pl.DataFrame({"step": [0] * 4, "group": ["a", "a", "b", "b"], "score": [1.0, 1.0, 0.0, 1.0]})
    >>> prompts_table(df).select("prompt/reward_gini", "prompt/top_share").row(0)
    (0.16666666666666666, 0.6666666666666666)
    """
    return compute(update(None, df, top=top))


def _bucket_shares(acc: StepPrompts, with_adv: bool) -> dict[str, float]:
    known = acc.bucket >= 0
    n = int(known.sum())
    # math.fsum is exact, so the |advantage| totals do not depend on the order of the groups
    total_adv = math.fsum(acc.absadv[known & ~np.isnan(acc.absadv)].tolist()) if with_adv else math.nan
    row: dict[str, float] = {}
    for code, name in enumerate(BUCKETS):
        m = acc.bucket == code
        row[f"prompt/difficulty/{name}/share"] = int(m.sum()) / n if n else math.nan
        if with_adv:
            adv = math.fsum(acc.absadv[m & ~np.isnan(acc.absadv)].tolist())
            row[f"prompt/difficulty/{name}/adv_share"] = adv / total_adv if total_adv > 0 else math.nan
    return row
