"""Response length against correctness, per step.

The three-way reading of the length trend (from the rollout-scale diagnosis): longer responses
more often correct (healthy), accuracy unchanged (spurious length growth), or less often correct
(overthinking / hallucination risk).

Streaming: ``update(state | None, chunk, bins=, outcome=)``, ``merge(a, b)``, ``compute(state)`` over
chunks of whole groups. The rank sums are exact integers and the length quantiles are taken over
every rollout of the step in a canonical order, so a sharded result equals the unsharded one bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import polars as pl

from ..words import Words
from .schema import CORRECT, GROUP, LENGTH, SCORE, STEP, TRUNCATED

Reading = Literal["longer_more_correct", "no_change", "longer_less_correct"]
Outcome = Literal["correct", "score"]

#: |correlation| below this reads as "no_change" (the ``length_reward_hacking`` check's ``corr`` default)
READING_TOL = 0.1
KEY_CORR, KEY_READING, KEY_READING_GROUPS = (
    "rollout/length_correct_corr", "rollout/length_reading", "rollout/length_reading/groups")


def _require(df: pl.DataFrame, *cols: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(Words(f"this metric needs the rollout column(s) {missing}; the table has {df.columns}",
                               f"这个指标需要 rollout 列 {missing}；表中只有这些列：{df.columns}"))


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
        raise ValueError(Words(f"bins must be >= 1, got {bins}", f"bins 必须 >= 1，给的是 {bins}"))
    if len(length) == 0:
        return [math.nan] * bins
    edges = np.quantile(length, np.arange(1, bins) / bins)
    idx = np.searchsorted(edges, length, side="left")
    return [float(correct[idx == b].mean()) if (idx == b).any() else math.nan for b in range(bins)]


def length_reading(corr: float, tol: float = READING_TOL) -> Reading | None:
    """Label of a length–correctness correlation: > tol → "longer_more_correct",
    < -tol → "longer_less_correct", otherwise "no_change"; None for NaN.

    >>> length_reading(0.3), length_reading(-0.05), length_reading(-0.3)
    ('longer_more_correct', 'no_change', 'longer_less_correct')
    """
    if math.isnan(corr):
        return None
    if corr > tol:
        return "longer_more_correct"
    return "longer_less_correct" if corr < -tol else "no_change"


@dataclass(frozen=True)
class StepLengths:
    """One step's partial state. ``sxy``/``sxx``/``syy`` are 4 × the pooled within-group sums of
    centred average ranks: ranks are half-integers and a group's mean rank is (n + 1) / 2, so these
    are exact integers. ``length``/``outcome`` keep every rollout for the length quantiles; ``rows``
    counts rollouts with both a length and an outcome, ``varying`` the groups that vary in both (the
    groups the correlation rests on), ``trunc``/``trunc_known`` the truncation flags."""

    rows: int = 0
    sxy: int = 0
    sxx: int = 0
    syy: int = 0
    varying: int = 0
    length: np.ndarray = field(default_factory=lambda: np.empty(0))
    outcome: np.ndarray = field(default_factory=lambda: np.empty(0))
    trunc: int = 0
    trunc_known: int = 0

    def __add__(self, o: StepLengths) -> StepLengths:
        return StepLengths(self.rows + o.rows, self.sxy + o.sxy, self.sxx + o.sxx, self.syy + o.syy,
                           self.varying + o.varying, np.concatenate([self.length, o.length]),
                           np.concatenate([self.outcome, o.outcome]),
                           self.trunc + o.trunc, self.trunc_known + o.trunc_known)


@dataclass(frozen=True)
class LengthState:
    """Mergeable partial state of :func:`lengths_table`: settings, whether chunks had ``truncated``,
    and one :class:`StepLengths` per step."""

    bins: int = 4
    outcome: Outcome = "correct"
    truncated: bool = False
    steps: dict[int, StepLengths] = field(default_factory=dict)


def _rank_sums(df: pl.DataFrame, target: str) -> pl.DataFrame:
    """Per step: 4·Σ rx·ry, 4·Σ rx², 4·Σ ry² of group-centred average ranks, as integers, and the
    number of groups where both vary."""
    def twice_centred(col: str) -> pl.Expr:
        r = pl.col(col).cast(pl.Float64).rank("average").over(STEP, GROUP)
        return (2 * r - (pl.len().over(STEP, GROUP) + 1)).cast(pl.Int64)
    c = df.select(STEP, GROUP, x=twice_centred(LENGTH), y=twice_centred(target))
    per = c.group_by(STEP, GROUP).agg(sxy=(pl.col("x") * pl.col("y")).sum(), sxx=(pl.col("x") ** 2).sum(),
                                      syy=(pl.col("y") ** 2).sum())
    return per.group_by(STEP).agg(pl.col("sxy", "sxx", "syy").sum(),
                                  varying=((pl.col("sxx") > 0) & (pl.col("syy") > 0)).sum())


def _chunk_steps(df: pl.DataFrame, target: str, keep: bool) -> dict[int, StepLengths]:
    known = df.drop_nulls([LENGTH, target])
    out: dict[int, StepLengths] = {}
    sums = {int(r[STEP]): r for r in _rank_sums(known, target).iter_rows(named=True)}
    for (step,), part in known.group_by(STEP):
        r = sums[int(step)]
        x = part[LENGTH].cast(pl.Float64).to_numpy() if keep else np.empty(0)
        y = part[target].cast(pl.Float64).to_numpy() if keep else np.empty(0)
        out[int(step)] = StepLengths(part.height, int(r["sxy"]), int(r["sxx"]), int(r["syy"]), int(r["varying"]),
                                     x, y)
    if TRUNCATED in df.columns:
        trunc = df.group_by(STEP).agg(t=pl.col(TRUNCATED).sum(), k=pl.col(TRUNCATED).count())
        for step, t, k in trunc.iter_rows():
            out[int(step)] = out.get(int(step), StepLengths()) + StepLengths(
                trunc=int(t), trunc_known=int(k))
    return out


def update(state: LengthState | None, chunk: pl.DataFrame, *, bins: int | None = None,
           outcome: Outcome | None = None) -> LengthState:
    """Fold a chunk of whole groups into ``state`` (None: a new state with the given options)."""
    if state is None:
        state = LengthState(bins=4 if bins is None else bins, outcome=outcome or "correct")
    elif (bins is not None and bins != state.bins) or (outcome is not None and outcome != state.outcome):
        raise ValueError(f"update: bins={bins}, outcome={outcome} differ from the state's settings "
                         f"(bins={state.bins}, outcome={state.outcome}); build a new state instead")
    if state.bins < 1:
        raise ValueError(Words(f"bins must be >= 1, got {state.bins}", f"bins 必须 >= 1，给的是 {state.bins}"))
    target = CORRECT if state.outcome == "correct" else SCORE
    _require(chunk, STEP, GROUP, LENGTH, target)
    new = LengthState(state.bins, state.outcome, TRUNCATED in chunk.columns,
                      _chunk_steps(chunk, target, state.outcome == "correct"))
    return merge(state, new)


def merge(a: LengthState, b: LengthState) -> LengthState:
    """Combine two states built from disjoint sets of groups."""
    if (a.bins, a.outcome) != (b.bins, b.outcome):
        raise ValueError("cannot merge length states built with different bins or outcome")
    steps = dict(a.steps)
    for step, acc in b.steps.items():
        steps[step] = steps[step] + acc if step in steps else acc
    return LengthState(a.bins, a.outcome, a.truncated or b.truncated, steps)


def _step_row(step: int, acc: StepLengths, state: LengthState) -> dict[str, float | int | str | None]:
    row: dict[str, float | int | str | None] = {STEP: step}
    if acc.rows:
        corr = acc.sxy / math.sqrt(acc.sxx * acc.syy) if acc.sxx > 0 and acc.syy > 0 else math.nan
        row.update({KEY_CORR: corr, KEY_READING: length_reading(corr), KEY_READING_GROUPS: acc.varying})
    if state.outcome == "correct" and acc.rows:
        order = np.lexsort((acc.outcome, acc.length))  # canonical order: bin means do not depend on sharding
        accs = correct_by_length(acc.length[order], acc.outcome[order], state.bins)
        row.update({f"rollout/correct_by_length/q{b}": v for b, v in enumerate(accs, start=1)})
    if state.truncated:
        row["rollout/truncation_share"] = acc.trunc / acc.trunc_known if acc.trunc_known else None
    return row


def compute(state: LengthState) -> pl.DataFrame:
    """Per-step frame of :func:`lengths_table` from a state."""
    cols = [KEY_CORR]
    if state.outcome == "correct":
        cols += [f"rollout/correct_by_length/q{b}" for b in range(1, state.bins + 1)]
    if state.truncated:
        cols.append("rollout/truncation_share")
    schema: dict[str, pl.DataType] = {STEP: pl.Int64(), **{c: pl.Float64() for c in cols},
                                      KEY_READING: pl.Utf8(), KEY_READING_GROUPS: pl.Int64()}
    rows = [_step_row(s, state.steps[s], state) for s in sorted(state.steps)]
    out = pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)
    return out.with_columns(pl.col(cols).fill_nan(None))


def lengths_table(df: pl.DataFrame, bins: int = 4, outcome: Outcome = "correct") -> pl.DataFrame:
    """Per-step table: ``rollout/length_correct_corr`` (within-group Spearman of ``length`` and
    ``outcome``; rollouts with a null in either are skipped), ``rollout/correct_by_length/q1..q{bins}``
    (needs ``correct``), when ``truncated`` exists ``rollout/truncation_share``, then the three-way
    reading of the correlation (docs/reading-rules.md#length-reward-hacking), ``rollout/length_reading``
    (:func:`length_reading`), with ``rollout/length_reading/groups``, the number of groups that vary in both
    (what it rests on).
    ``compute(update(None, df, ...))``.

    >>> df = pl.DataFrame({"step": [0] * 4, "group": ["a"] * 4, "length": [10, 20, 30, 40],
    ...                    "correct": [False, False, True, True]})
    >>> lengths_table(df, bins=2).row(0)
    (0, 0.8944271909999159, 0.0, 1.0, 'longer_more_correct', 1)
    """
    return compute(update(None, df, bins=bins, outcome=outcome))
