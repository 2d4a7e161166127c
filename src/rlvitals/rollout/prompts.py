"""Prompt-scale metrics: how reward and gradient are spread over the prompts of a step, and
the in- versus out-of-distribution score gap."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from rlvitals.rollout.schema import ADVANTAGE, CORRECT, GROUP, SCORE, SOURCE, SPLIT, STEP

BUCKETS = ("easy", "medium", "hard")


def _require(df: pl.DataFrame, *cols: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"this metric needs the rollout column(s) {missing}; the table has {df.columns}")


def gini(values: np.ndarray) -> float:
    """Gini coefficient: sum_i sum_j |x_i - x_j| / (2 n^2 mean(x)).

    Negative values are first shifted so the minimum is 0 (rewards in [-1, 1] are common);
    NaN for an empty input or a zero total. 0 = all equal; (n-1)/n = one value holds everything.

    >>> gini(np.array([0.0, 0.0, 0.0, 1.0]))
    0.75
    """
    x = np.asarray(values, float)
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
    if not 0 < top <= 1:
        raise ValueError(f"top must be in (0, 1], got {top}")
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


def prompts_table(df: pl.DataFrame, top: float = 0.1) -> pl.DataFrame:
    """Per-step table: ``prompt/reward_gini`` (Gini of per-prompt mean ``score``), ``prompt/top_share``
    (share of the step's positive reward, sum of max(score, 0) per prompt, earned by the top
    ``top`` of prompts) with ``score``; ``prompt/difficulty/{easy,medium,hard}/share`` (shares of
    prompts with a known outcome) with ``correct``; and ``prompt/difficulty/{bucket}/adv_share``
    (bucket's share of the step's sum of |advantage|) with ``correct`` and ``advantage``."""
    _require(df, STEP, GROUP)
    if SCORE not in df.columns and CORRECT not in df.columns:
        _require(df, SCORE, CORRECT)
    aggs = []
    if SCORE in df.columns:
        aggs += [pl.col(SCORE).mean().alias("mean"), pl.col(SCORE).clip(0).sum().alias("pos")]
    if CORRECT in df.columns:
        known = pl.col(CORRECT).drop_nulls()
        aggs.append(pl.when(known.len() == 0).then(None).when(known.all()).then(pl.lit("easy"))
                    .when(~known.any()).then(pl.lit("hard")).otherwise(pl.lit("medium")).alias("bucket"))
    if ADVANTAGE in df.columns:
        aggs.append(pl.col(ADVANTAGE).abs().sum().alias("absadv"))
    groups = df.group_by(STEP, GROUP).agg(aggs)
    rows = []
    for (step,), g in groups.group_by(STEP, maintain_order=True):
        row: dict[str, float] = {STEP: step}
        if SCORE in df.columns:
            row["prompt/reward_gini"] = gini(g["mean"].drop_nulls().to_numpy())
            row["prompt/top_share"] = top_share(g["pos"].to_numpy(), top)
        if CORRECT in df.columns:
            row.update(_bucket_shares(g))
        rows.append(row)
    out = pl.DataFrame(rows, schema_overrides={STEP: df.schema[STEP]})
    return out.with_columns(pl.exclude(STEP).cast(pl.Float64).fill_nan(None)).sort(STEP)


def _bucket_shares(g: pl.DataFrame) -> dict[str, float]:
    b = g.drop_nulls("bucket")
    row: dict[str, float] = {}
    total_adv = float(b["absadv"].sum() or 0.0) if "absadv" in b.columns else math.nan
    for name in BUCKETS:
        m = b["bucket"] == name
        row[f"prompt/difficulty/{name}/share"] = float(m.cast(pl.Float64).sum()) / b.height if b.height else math.nan
        if "absadv" in b.columns:
            row[f"prompt/difficulty/{name}/adv_share"] = (
                float(b.filter(m)["absadv"].sum()) / total_adv if total_adv > 0 else math.nan)
    return row


def group_means(df: pl.DataFrame, by: str = SOURCE) -> pl.DataFrame:
    """Mean ``score`` per step and value of ``by`` (``source`` or ``split``): columns step, by, mean, n."""
    _require(df, STEP, SCORE, by)
    return (df.group_by(STEP, by).agg(pl.col(SCORE).mean().alias("mean"), pl.len().alias("n"))
            .sort(STEP, by))


def id_ood_gap(df: pl.DataFrame, by: str = SPLIT, id_values: Sequence[str] | None = None,
               ood_values: Sequence[str] | None = None) -> pl.DataFrame:
    """Per-step ``val/id_ood_gap`` = mean ``score`` of ID rollouts - mean ``score`` of OOD rollouts.

    ID is ``id_values`` of column ``by``; by default ``["train"]`` when ``by`` is ``split``, else the
    first value of ``by`` in table order (e.g. the first data source). OOD is ``ood_values``,
    default every other non-null value. A step without ID or OOD rollouts gives null.
    """
    _require(df, STEP, SCORE, by)
    if id_values is None:
        firsts = df[by].drop_nulls()
        if by == SPLIT:
            id_values = ["train"]
        elif firsts.len():
            id_values = [firsts[0]]
        else:
            raise ValueError(f"column {by!r} has no value to take as in-distribution; pass id_values")
    is_id = pl.col(by).is_in(list(id_values))
    is_ood = pl.col(by).is_in(list(ood_values)) if ood_values is not None else ~is_id & pl.col(by).is_not_null()
    gap = pl.col(SCORE).filter(is_id).mean() - pl.col(SCORE).filter(is_ood).mean()
    return df.group_by(STEP).agg(gap.alias("val/id_ood_gap")).sort(STEP)
