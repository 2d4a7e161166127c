"""Response length against correctness, per step.

The three-way reading of the length trend (from the rollout-scale diagnosis): longer responses
more often correct (healthy), accuracy unchanged (spurious length growth), or less often correct
(overthinking / hallucination risk).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import polars as pl

from rlvitals.rollout.schema import CORRECT, GROUP, LENGTH, SCORE, STEP, TRUNCATED

Reading = Literal["longer_more_correct", "no_change", "longer_less_correct"]


def _require(df: pl.DataFrame, *cols: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"this metric needs the rollout column(s) {missing}; the table has {df.columns}")


def _avg_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks with ties given their average rank."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    ranks = np.empty(len(x))
    bounds = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1], True])
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        ranks[order[lo:hi]] = (lo + hi + 1) / 2
    return ranks


def within_group_spearman(length: np.ndarray, outcome: np.ndarray, groups: np.ndarray) -> float:
    """Pooled within-group Spearman correlation.

    Inside each group both variables are turned into average ranks and centred on the group's
    mean rank; the result is the Pearson correlation of the pooled centred ranks,
    sum(rx*ry) / sqrt(sum(rx^2) * sum(ry^2)). Centring per group removes prompt difficulty (a hard
    prompt's long answers are not compared with an easy prompt's short ones). Groups where either
    variable is constant contribute nothing; NaN when no group varies in both.
    """
    length, outcome = np.asarray(length, float), np.asarray(outcome, float)
    groups = np.asarray(groups)
    sxy = sxx = syy = 0.0
    for g in np.unique(groups):
        m = groups == g
        rx, ry = _avg_ranks(length[m]), _avg_ranks(outcome[m])
        rx, ry = rx - rx.mean(), ry - ry.mean()
        sxy, sxx, syy = sxy + rx @ ry, sxx + rx @ rx, syy + ry @ ry
    return float(sxy / math.sqrt(sxx * syy)) if sxx > 0 and syy > 0 else math.nan


def correct_by_length(length: np.ndarray, correct: np.ndarray, bins: int = 4) -> list[float]:
    """Accuracy in each length quantile bin, shortest first.

    Edges are the quantiles k/bins (k = 1..bins-1, numpy's linear rule) of ``length``; a rollout
    goes to the first bin whose upper edge is >= its length, so equal lengths share a bin. Empty
    bins give NaN.
    """
    length, correct = np.asarray(length, float), np.asarray(correct, float)
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    if len(length) == 0:
        return [math.nan] * bins
    edges = np.quantile(length, np.arange(1, bins) / bins)
    idx = np.searchsorted(edges, length, side="left")
    return [float(correct[idx == b].mean()) if (idx == b).any() else math.nan for b in range(bins)]


def length_reading(corr: float, tol: float = 0.1) -> Reading | None:
    """Label of a length–correctness correlation: > tol → "longer_more_correct",
    < -tol → "longer_less_correct", otherwise "no_change"; None for NaN."""
    if math.isnan(corr):
        return None
    if corr > tol:
        return "longer_more_correct"
    return "longer_less_correct" if corr < -tol else "no_change"


def lengths_table(df: pl.DataFrame, bins: int = 4, outcome: Literal["correct", "score"] = "correct") -> pl.DataFrame:
    """Per-step table: ``rollout/length_correct_corr`` (within-group Spearman of ``length`` and
    ``outcome``; rollouts with a null in either are skipped), ``rollout/correct_by_length/q1..q{bins}``
    (needs ``correct``) and, when ``truncated`` exists, ``rollout/truncation_share``."""
    target = CORRECT if outcome == "correct" else SCORE
    _require(df, STEP, GROUP, LENGTH, target)
    rows = []
    for (step,), part in df.drop_nulls([LENGTH, target]).group_by(STEP, maintain_order=True):
        x, y = part[LENGTH].to_numpy(), part[target].cast(pl.Float64).to_numpy()
        row: dict[str, float] = {STEP: step,
                                 "rollout/length_correct_corr": within_group_spearman(x, y, part[GROUP].to_numpy())}
        if outcome == "correct":
            for b, acc in enumerate(correct_by_length(x, y, bins), start=1):
                row[f"rollout/correct_by_length/q{b}"] = acc
        rows.append(row)
    out = pl.DataFrame(rows, schema_overrides={STEP: df.schema[STEP]}) if rows else pl.DataFrame({STEP: []})
    out = out.with_columns(pl.exclude(STEP).cast(pl.Float64).fill_nan(None)) if rows else out
    if TRUNCATED in df.columns:
        trunc = df.group_by(STEP).agg(pl.col(TRUNCATED).mean().alias("rollout/truncation_share"))
        out = out.join(trunc, on=STEP, how="full", coalesce=True)
    return out.sort(STEP)
