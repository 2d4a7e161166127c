"""Group-scale rollout metrics (σ_G, zero-variance split, effective batch, pass@k, maj@k, G-Pass@k).

A *group* is the rollouts of one prompt at one step (rollout/schema.py). Inputs:

- ``score`` (reward) and/or ``correct``. Without ``correct``, a rollout is correct when
  ``score >= correct_threshold`` (default 1.0, i.e. a 0/1 verifier reward). A null ``correct`` (or,
  without the column, a null or NaN score) is *unknown*, never wrong: the rollout is left out of the
  correctness counts (pass@k, maj@k, G-Pass@k, the all-correct / all-wrong split) — the readers fill
  ``correct`` from the score where that is sound. Without ``score``, the reward is ``correct`` as 0/1.
  A rollout with neither a score nor a known correctness is left out of the family altogether.
- ``answer`` (optional) for maj@k; a null answer is a distinct answer of its own (passk.py), and a group
  in which no rollout has an answer has no maj@k (nothing to vote on).

σ_G is reported both ways: ``std_pop`` (ddof=0, numpy's default, veRL's ``std@N`` validation metric) and
``std_sample`` (ddof=1, the torch.std that GRPO's advantage normalisation uses in veRL, TRL and GiGPO).
``group/reward_std/mean`` is the mean of ``std_sample`` over groups with at least 2 rollouts.
Its distribution over those groups — quantiles, a histogram of fixed bands, its shape — is
:mod:`.spread`'s (``group/reward_std/p50``, ``group/reward_std/band/zero`` …, ``group/reward_std/hist``,
``group/reward_std/shape``).
A group has zero variance when all its scores are exactly equal (a single rollout counts too: it gives
GRPO no signal), but a step whose every group is a single rollout has no groups to speak of (the one sample a
step OpenRLHF logs, or a table without a group column and one prompt a row): its zero-variance shares and
effective batch are NaN, not 100 % and 0. Zero-variance groups are split by correctness: all correct, all wrong,
or otherwise identical (the same reward but mixed correctness; in a table without a ``correct`` column: a common score
between 0 and the threshold, e.g. every rollout scored 0.5 — the readers add ``correct`` for scores in
[-1, 1], so through them such a group is all wrong).

Per-k metrics are means over the groups with ``n >= k`` (other groups have no unbiased value).
``g_pass@{k}`` uses τ = 0.5. ``pass_gap@{k}`` = mean of per-group pass@k − pass@1 and
``reasoning/self_consistency_gap@{k}`` = mean of per-group maj@k − pass@1, over the same groups.

Group sizes: ``group/size/mean``, ``/min``, ``/max`` and ``group/size/below_mode`` (groups with fewer
rollouts than the step's modal size; on a tie the larger size is the mode). Mixed sizes usually mean
dropped or aborted samples (a veRL failure mode); ``compute`` also returns the histogram as ``group_sizes``.

Streaming: ``update(state | None, chunk, **options)``, ``merge(a, b)``, ``compute(state)``. A chunk must
hold whole groups (shard by group, not by row). The state keeps integer counts and the exact sum of each
column (:mod:`.exact`: integers, which add in any order), so sharded and unsharded results are equal bit for bit.

Cost: the rollouts are grouped once, by one integer per (step, group); the maj@k votes are counted for the whole
table in NumPy (:mod:`._votes`), and each DP runs once per distinct answer-count pattern.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from ..words import Words
from . import _votes, exact, spread
from . import schema as S
from .passk import pass_curves

__all__ = ["GroupState", "StepAcc", "compute", "correct_expr", "group_table", "merge", "step_metrics", "update",
           "with_outcome"]

KEYS = (S.STEP, S.GROUP)
_COUNTS = ("groups", "rollouts", "std_groups", "zero", "all_correct", "all_wrong", "identical",
           "signal_groups", "signal_rollouts", "known_groups")


def correct_expr(df: pl.DataFrame, threshold: float = 1.0) -> pl.Expr:
    """Per rollout, as every group metric reads it: correct, not correct, or null (unknown) — the
    ``correct`` column as it is; without it, ``score >= threshold`` with a NaN score unknown (polars
    orders NaN above every number, so a bare comparison would call it correct). ValueError when the
    table has neither."""
    if S.CORRECT in df.columns:
        return pl.col(S.CORRECT)
    if S.SCORE in df.columns:
        return pl.when(pl.col(S.SCORE).is_nan()).then(None).otherwise(pl.col(S.SCORE) >= threshold)
    raise ValueError(Words(f"group metrics need a '{S.SCORE}' or '{S.CORRECT}' column; the table has {df.columns}",
                           f"组指标需要 '{S.SCORE}' 或 '{S.CORRECT}' 列；表中只有这些列：{df.columns}"))


def with_outcome(df: pl.DataFrame) -> pl.DataFrame:
    """The rollouts that have a score (not null, not NaN) or a known correctness; the others say
    nothing about their group and are left out.

    >>> with_outcome(pl.DataFrame({"score": [1.0, None, float("nan")], "correct": [None, None, True]})).height
    2
    """
    has = pl.lit(False)
    if S.SCORE in df.columns:
        has = has | (pl.col(S.SCORE).is_not_null() & pl.col(S.SCORE).is_not_nan())
    if S.CORRECT in df.columns:
        has = has | pl.col(S.CORRECT).is_not_null()
    return df.filter(has)


def _rows(df: pl.DataFrame, threshold: float) -> pl.DataFrame:
    """The rollouts with an outcome, each with its group's number ``_gid`` (dense, from 0), ``_ok`` (1, 0 or
    null: unknown) and ``_score`` (the reward; null where unknown or NaN). Later group-bys key on the one
    integer, not on (step, group): the same groups, the same values, a cheaper hash."""
    df = with_outcome(df)
    ok = correct_expr(df, threshold).cast(pl.Int64)
    score = pl.col(S.SCORE).cast(pl.Float64) if S.SCORE in df.columns else ok.cast(pl.Float64)
    return df.with_columns(_gid=pl.struct(KEYS).rank("dense").cast(pl.Int64) - 1, _ok=ok,
                           _score=pl.when(score.is_nan()).then(None).otherwise(score))


def _group_rows(rows: pl.DataFrame, correct: bool, threshold: float) -> pl.DataFrame:
    """One row per group of ``_rows``, sorted by (step, group): group_table's columns with lo, hi and _gid."""
    ok, score = pl.col("_ok"), pl.col("_score")
    # n: rollouts with an outcome; known: those whose correctness is known (pass@k's n)
    out = rows.group_by("_gid").agg(
        pl.col(S.STEP).first(), pl.col(S.GROUP).first(), n=pl.len().cast(pl.Int64), known=ok.count().cast(pl.Int64),
        c=ok.sum().cast(pl.Int64), mean=score.mean(), std_pop=score.std(ddof=0), std_sample=score.std(ddof=1),
        lo=score.min(), hi=score.max(),
    ).sort(KEYS)
    zero = pl.col("lo") == pl.col("hi")
    if correct:
        good, bad = pl.col("c") == pl.col("known"), pl.col("c") == 0
    else:
        good, bad = pl.col("lo") >= threshold, pl.col("hi") <= 0.0
    some = pl.col("known") > 0
    out = out.with_columns(zero_std=zero.fill_null(True), all_correct=(zero & good & some).fill_null(False),
                           all_wrong=(zero & bad & some).fill_null(False))
    return out.with_columns(identical=pl.col("zero_std") & some & ~pl.col("all_correct") & ~pl.col("all_wrong"))


_TABLE = (*KEYS, "n", "known", "c", "mean", "std_pop", "std_sample")
_FLAGS = ("zero_std", "all_correct", "all_wrong", "identical")


def group_table(df: pl.DataFrame, correct_threshold: float = 1.0, keep_range: bool = False) -> pl.DataFrame:
    """One row per (step, group): n, c, mean, std_pop, std_sample, zero_std, all_correct, all_wrong, identical
    (and the group's lowest and highest reward, ``lo`` and ``hi``, with ``keep_range``).

    >>> t = group_table(pl.DataFrame({"step": [1, 1], "group": ["a", "a"], "sample": [0, 1], "score": [0.0, 1.0]}))
    >>> t.select("n", "c", "std_pop", "zero_std").row(0)
    (2, 1, 0.5, False)
    """
    rows = _rows(df, correct_threshold)
    out = _group_rows(rows, S.CORRECT in df.columns, correct_threshold)
    return out.select(*_TABLE, *(("lo", "hi") if keep_range else ()), *_FLAGS)


def _per_group(df: pl.DataFrame, ks: tuple[int, ...], tau: float, threshold: float) -> pl.DataFrame:
    """group_table (with lo, hi) plus per-k pass/g_pass/maj and gap columns (NaN where n < k)."""
    rows = _rows(df, threshold)
    t = _group_rows(rows, S.CORRECT in df.columns, threshold)
    n, c = t.get_column("known").to_numpy(), t.get_column("c").to_numpy()
    passes, g_passes = pass_curves(n, c, sorted({1, *ks}), tau)
    p1 = passes[1]
    cols: dict[str, np.ndarray] = {}
    for k in ks:
        pk = passes[k]
        cols[f"pass@{k}"], cols[f"pass_gap@{k}"] = pk, pk - p1
        cols[f"g_pass@{k}"] = g_passes[k]
    if S.ANSWER in df.columns and t.height:
        known = rows.filter(pl.col("_ok").is_not_null())
        maj = _votes.maj_matrix(known.get_column("_gid").to_numpy(), known.get_column("_ok").to_numpy(),
                                known.get_column(S.ANSWER), t.height, max(ks))[t.get_column("_gid").to_numpy()]
        for k in ks:
            cols[f"maj@{k}"] = maj[:, k - 1]
            cols[f"reasoning/self_consistency_gap@{k}"] = maj[:, k - 1] - p1
    return t.with_columns(pl.Series(name, v, dtype=pl.Float64) for name, v in cols.items())


def _names(ks: tuple[int, ...]) -> tuple[str, ...]:
    """The per-group values a step's means are taken over, in a fixed order (maj columns are NaN
    without answers, so every state built with the same ks has the same columns)."""
    names = ["std_sample", "std_pop"]
    for k in ks:
        names += [f"pass@{k}", f"maj@{k}", f"pass_gap@{k}", f"g_pass@{k}", f"reasoning/self_consistency_gap@{k}"]
    return tuple(names)


@dataclass(frozen=True)
class StepAcc:
    """One step's partial state: integer counts, the group-size histogram, and the exact sums of the
    per-group values (columns: ``GroupState.names``; a value undefined for a group, e.g. n < k, is left out):
    a few integers per column whatever the number of groups (:mod:`.exact`); and σ_G's distinct values with
    their counts, for its quantiles and histogram (:mod:`.spread`)."""

    counts: dict[str, int]
    sizes: dict[int, int]
    sums: exact.ExactSums
    spread: spread.Spread = field(default_factory=spread.empty)

    def __add__(self, other: StepAcc) -> StepAcc:
        def add(a: dict[Any, int], b: dict[Any, int]) -> dict[Any, int]:
            return {key: a.get(key, 0) + b.get(key, 0) for key in a.keys() | b.keys()}
        return StepAcc(add(self.counts, other.counts), add(self.sizes, other.sizes), exact.add(self.sums, other.sums),
                       self.spread + other.spread)


@dataclass(frozen=True)
class GroupState:
    """Mergeable partial state: one StepAcc per step, plus the settings it was built with."""

    ks: tuple[int, ...] = (1, 2, 4, 8, 16)
    tau: float = 0.5
    correct_threshold: float = 1.0
    steps: dict[int, StepAcc] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        return _names(self.ks)


def _acc_from_table(t: pl.DataFrame, names: tuple[str, ...]) -> dict[int, StepAcc]:
    sig = ~pl.col("zero_std")
    agg = t.group_by(S.STEP).agg(
        groups=pl.len(), rollouts=pl.col("n").sum(), std_groups=(pl.col("n") >= 2).sum(),
        zero=pl.col("zero_std").sum(), all_correct=pl.col("all_correct").sum(),
        all_wrong=pl.col("all_wrong").sum(), identical=pl.col("identical").sum(), signal_groups=sig.sum(),
        signal_rollouts=pl.col("n").filter(sig).sum(), sizes=pl.col("n").value_counts(),
        known_groups=(pl.col("known") > 0).sum(),
    )
    present = [pl.col(m).cast(pl.Float64) if m in t.columns else pl.lit(np.nan, pl.Float64).alias(m) for m in names]
    values = t.select(present).to_numpy().astype(np.float64, copy=False)  # t is sorted by (step, group)
    steps = t.get_column(S.STEP).to_numpy()
    cuts = np.flatnonzero(np.diff(steps)) + 1
    blocks = dict(zip(steps[np.r_[0, cuts]].tolist(), np.split(values, cuts), strict=True))
    spreads = spread.by_step(t)
    out: dict[int, StepAcc] = {}
    for row in agg.iter_rows(named=True):
        step = int(row[S.STEP])
        out[step] = StepAcc(counts={key: int(row[key] or 0) for key in _COUNTS},
                            sizes={int(d["n"]): int(d["count"]) for d in row["sizes"]},
                            sums=exact.sums_of(blocks[step]), spread=spreads[step])
    return out


def _settings(state: GroupState | None, ks: Sequence[int] | None, tau: float | None,
              correct_threshold: float | None) -> GroupState:
    if state is None:
        base = GroupState()
        ks_ = tuple(ks) if ks is not None else base.ks
        if not ks_ or any(k < 1 for k in ks_):
            raise ValueError(Words(f"ks must be positive integers, got {ks_}", f"ks 必须是正整数，给的是 {ks_}"))
        return GroupState(ks=ks_, tau=base.tau if tau is None else tau,
                          correct_threshold=base.correct_threshold if correct_threshold is None else correct_threshold)
    given = {"ks": None if ks is None else tuple(ks), "tau": tau, "correct_threshold": correct_threshold}
    clash = {k: v for k, v in given.items() if v is not None and v != getattr(state, k)}
    if clash:
        raise ValueError(f"update: options {clash} differ from the state's settings; build a new state instead")
    return state


def update(state: GroupState | None, chunk: pl.DataFrame, *, ks: Sequence[int] | None = None,
           tau: float | None = None, correct_threshold: float | None = None) -> GroupState:
    """Fold a chunk of whole groups into ``state`` (None: a new state with the given options).

    >>> df = pl.DataFrame({"step": [0, 0], "group": ["a", "a"], "sample": [0, 1], "score": [1.0, 0.0]})
    >>> compute(update(None, df, ks=(1, 2)))["pass@2"].to_list()
    [1.0]
    """
    state = _settings(state, ks, tau, correct_threshold)
    correct_expr(chunk, state.correct_threshold)  # raises when the chunk has neither score nor correct
    chunk = with_outcome(chunk)
    if chunk.height == 0:
        return state
    t = _per_group(chunk, state.ks, state.tau, state.correct_threshold)
    return merge(state, replace(state, steps=_acc_from_table(t, state.names)))


def merge(a: GroupState, b: GroupState) -> GroupState:
    """Combine two states built from disjoint sets of groups."""
    if (a.ks, a.tau, a.correct_threshold) != (b.ks, b.tau, b.correct_threshold):
        raise ValueError("cannot merge states built with different ks, tau or correct_threshold")
    steps = dict(a.steps)
    for step, acc in b.steps.items():
        steps[step] = steps[step] + acc if step in steps else acc
    return replace(a, steps=steps)


def _ratio(num: float, den: int) -> float:
    return num / den if den else float("nan")


def _size_row(sizes: dict[int, int]) -> dict[str, int]:
    # the modal size is the usual G; on a tie the larger size, since dropped samples only shrink groups
    mode = max(sizes, key=lambda s: (sizes[s], s))
    return {"group/size/min": min(sizes), "group/size/max": max(sizes),
            "group/size/below_mode": sum(c for s, c in sizes.items() if s < mode)}


def _row(step: int, acc: StepAcc, names: tuple[str, ...]) -> dict[str, Any]:
    c, g = acc.counts, acc.counts["groups"]
    split = g if c["known_groups"] else 0  # no known correctness at the step: the split is undefined (NaN)
    mean = dict(zip(names, exact.means(acc.sums), strict=True))
    row: dict[str, Any] = {
        S.STEP: step, "groups": g, "rollouts": c["rollouts"],
        "group/reward_std/mean": mean["std_sample"], "group/reward_std_pop/mean": mean["std_pop"],
        "group/zero_std/share": _ratio(c["zero"], g), "group/zero_std/all_correct": _ratio(c["all_correct"], split),
        "group/zero_std/all_wrong": _ratio(c["all_wrong"], split),
        "group/zero_std/identical": _ratio(c["identical"], split),
        "group/effective_batch": _ratio(c["signal_rollouts"], c["rollouts"]),
        "group/effective_batch/groups": c["signal_groups"], "group/size/mean": _ratio(c["rollouts"], g),
        **_size_row(acc.sizes),
        "group_sizes": [{"size": s, "count": acc.sizes[s]} for s in sorted(acc.sizes, reverse=True)],
    }
    row.update((name, value) for name, value in mean.items() if name not in ("std_sample", "std_pop"))
    row.update(spread.row(acc.spread))
    if max(acc.sizes) < 2:  # no group at all: a sample of the batch (OpenRLHF's logged samples), nothing within
        row.update(dict.fromkeys(UNGROUPED, float("nan")))
    return row


#: what a step of single rollouts leaves undefined: shares among groups, where there is no group to compare within
UNGROUPED = ("group/zero_std/share", "group/zero_std/all_correct", "group/zero_std/all_wrong",
             "group/zero_std/identical", "group/effective_batch")


_INTS = (S.STEP, "groups", "rollouts", "group/effective_batch/groups", "group/size/min", "group/size/max",
         "group/size/below_mode")
SIZES_TYPE = pl.List(pl.Struct({"size": pl.Int64, "count": pl.Int64}))


def compute(state: GroupState) -> pl.DataFrame:
    """One row per step with the catalog keys (see the module docstring), plus ``group_sizes`` (the
    size histogram, largest size first); an empty state gives an empty frame."""
    names = state.names
    rows = [_row(s, state.steps[s], names) for s in sorted(state.steps)]
    empty = StepAcc(dict.fromkeys(_COUNTS, 0), {0: 0}, exact.zero(len(names)))
    schema = {n: (pl.Int64() if n in _INTS else SIZES_TYPE if n == "group_sizes" else spread.HIST_TYPE
                  if n == spread.HIST else pl.String() if n == spread.SHAPE else pl.Float64())
              for n in _row(0, empty, names)}
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def step_metrics(df: pl.DataFrame, ks: tuple[int, ...] = (1, 2, 4, 8, 16), tau: float = 0.5,
                 correct_threshold: float = 1.0) -> pl.DataFrame:
    """Group-scale metrics per step, columns named with the catalog keys: ``compute(update(None, df))``.

    >>> df = pl.DataFrame({"step": [0] * 4, "group": ["a", "a", "b", "b"], "sample": [0, 1, 0, 1],
    ...                    "score": [1.0, 0.0, 1.0, 1.0]})
    >>> step_metrics(df, ks=(1, 2)).select("pass@1", "pass@2", "group/zero_std/all_correct").row(0)
    (0.75, 1.0, 0.5)
    """
    return compute(update(None, df, ks=ks, tau=tau, correct_threshold=correct_threshold))
