"""Group-scale rollout metrics (σ_G, zero-variance split, effective batch, pass@k, maj@k, G-Pass@k).

A *group* is the rollouts of one prompt at one step (rollout/schema.py). Inputs:

- ``score`` (reward) and/or ``correct``. Without ``correct``, a rollout is correct when
  ``score >= correct_threshold`` (default 1.0, i.e. a 0/1 verifier reward). A null ``correct`` is filled
  from the score the same way, or counts as not correct when there is no score. Without ``score``,
  the reward is ``correct`` as 0/1.
- ``answer`` (optional) for maj@k; a null answer is a distinct answer of its own (passk.py).

σ_G is reported both ways: ``std_pop`` (ddof=0, numpy's default, veRL's ``std@N`` validation metric) and
``std_sample`` (ddof=1, the torch.std that GRPO's advantage normalisation uses in veRL, TRL and GiGPO).
``group/reward_std/mean`` is the mean of ``std_sample`` over groups with at least 2 rollouts.
A group has zero variance when all its scores are exactly equal (a single rollout counts too: it gives
GRPO no signal). Zero-variance groups are split by correctness: all correct, all wrong, or otherwise
identical (the same reward but mixed correctness; without a ``correct`` column: a common score between
0 and the threshold, e.g. every rollout scored 0.5).

Per-k metrics are means over the groups with ``n >= k`` (other groups have no unbiased value).
``g_pass@{k}`` uses τ = 0.5. ``pass_gap@{k}`` = mean of per-group pass@k − pass@1 and
``reasoning/self_consistency_gap@{k}`` = mean of per-group maj@k − pass@1, over the same groups.

Streaming: ``update(state, chunk)``, ``merge(a, b)``, ``compute(state)``. A chunk must hold whole groups
(shard by group, not by row). Sums are plain float sums, so sharded and unsharded results agree to
~1e-12, not bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl

from rlvitals.rollout import schema as S
from rlvitals.rollout.passk import g_pass_at_k, maj_curve, pass_at_k

__all__ = ["GroupState", "StepAcc", "compute", "group_table", "merge", "step_metrics", "update"]

KEYS = (S.STEP, S.GROUP)
_COUNTS = ("groups", "rollouts", "std_groups", "zero", "all_correct", "all_wrong", "identical",
           "signal_groups", "signal_rollouts")


def _correct_expr(df: pl.DataFrame, threshold: float) -> pl.Expr:
    from_score = (pl.col(S.SCORE) >= threshold) if S.SCORE in df.columns else pl.lit(False)
    if S.CORRECT in df.columns:
        return pl.col(S.CORRECT).fill_null(from_score.fill_null(False))
    if S.SCORE in df.columns:
        return from_score.fill_null(False)
    raise ValueError(f"group metrics need a '{S.SCORE}' or '{S.CORRECT}' column; the table has {df.columns}")


def group_table(df: pl.DataFrame, correct_threshold: float = 1.0) -> pl.DataFrame:
    """One row per (step, group): n, c, mean, std_pop, std_sample, zero_std, all_correct, all_wrong, identical.

    >>> t = group_table(pl.DataFrame({"step": [1, 1], "group": ["a", "a"], "sample": [0, 1], "score": [0.0, 1.0]}))
    >>> t.select("n", "c", "std_pop", "zero_std").row(0)
    (2, 1, 0.5, False)
    """
    ok = _correct_expr(df, correct_threshold).cast(pl.Int64)
    score = pl.col(S.SCORE).cast(pl.Float64) if S.SCORE in df.columns else ok.cast(pl.Float64)
    out = df.group_by(KEYS).agg(
        n=pl.len().cast(pl.Int64), c=ok.sum().cast(pl.Int64), mean=score.mean(),
        std_pop=score.std(ddof=0), std_sample=score.std(ddof=1), lo=score.min(), hi=score.max(),
    ).sort(KEYS)
    zero = pl.col("lo") == pl.col("hi")
    if S.CORRECT in df.columns:
        good, bad = pl.col("c") == pl.col("n"), pl.col("c") == 0
    else:
        good, bad = pl.col("lo") >= correct_threshold, pl.col("hi") <= 0.0
    out = out.with_columns(zero_std=zero.fill_null(True), all_correct=(zero & good).fill_null(False),
                           all_wrong=(zero & bad).fill_null(False))
    return out.with_columns(
        identical=pl.col("zero_std") & ~pl.col("all_correct") & ~pl.col("all_wrong")
    ).drop("lo", "hi")


def _maj_table(df: pl.DataFrame, kmax: int) -> pl.DataFrame:
    """Per (step, group): exact maj@1..kmax, via one DP per distinct answer-count signature."""
    # a rollout without an answer is a singleton answer of its own
    has = pl.col(S.ANSWER).is_not_null()
    voted = df.filter(has).group_by([*KEYS, S.ANSWER]).agg(m=pl.len().cast(pl.Int64), mc=pl.col("_ok").sum())
    alone = df.filter(~has).select(*KEYS, m=pl.lit(1, pl.Int64), mc=pl.col("_ok"))
    per = pl.concat([voted.drop(S.ANSWER), alone])
    if per.height and int(per.get_column("m").max()) >= 4096:  # type: ignore[arg-type]
        raise ValueError("maj@k needs groups of fewer than 4096 rollouts; drop the answer column for larger groups")
    code = pl.col("m") * 4096 + pl.col("mc")  # (count, correct) packed in one int
    sig = per.group_by(KEYS).agg(sig=code.sort())
    uniq = sig.get_column("sig").unique().to_list()
    rows = [maj_curve(tuple((v // 4096, v % 4096) for v in s), kmax) for s in uniq]
    cols = {f"maj@{k}": [r[k - 1] for r in rows] for k in range(1, kmax + 1)}
    types: dict[str, pl.DataType] = {"sig": pl.List(pl.Int64), **{c: pl.Float64() for c in cols}}
    lut = pl.DataFrame({"sig": uniq, **cols}, schema_overrides=types)
    return sig.join(lut, on="sig", how="left").drop("sig")


def _per_group(df: pl.DataFrame, ks: tuple[int, ...], tau: float, threshold: float) -> pl.DataFrame:
    """group_table plus per-k pass/g_pass/maj and gap columns (NaN where n < k)."""
    t = group_table(df, threshold)
    n, c = t.get_column("n").to_numpy(), t.get_column("c").to_numpy()
    p1 = pass_at_k(n, c, 1)
    cols: dict[str, np.ndarray] = {}
    for k in ks:
        pk = pass_at_k(n, c, k)
        cols[f"pass@{k}"], cols[f"pass_gap@{k}"] = pk, pk - p1
        cols[f"g_pass@{k}"] = g_pass_at_k(n, c, k, tau)
    t = t.with_columns(pl.Series(name, v) for name, v in cols.items()).with_columns(pl.Series("_p1", p1))
    if S.ANSWER in df.columns and t.height:
        ok = df.with_columns(_ok=_correct_expr(df, threshold).cast(pl.Int64))
        maj = _maj_table(ok, max(ks)).select(*KEYS, *(pl.col(f"maj@{k}") for k in ks))
        t = t.join(maj, on=list(KEYS), how="left").with_columns(
            (pl.col(f"maj@{k}") - pl.col("_p1")).alias(f"reasoning/self_consistency_gap@{k}") for k in ks)
    return t


@dataclass
class StepAcc:
    """Sufficient statistics of one step: counts, size histogram, and (sum, count) per mean metric."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTS, 0))
    sizes: dict[int, int] = field(default_factory=dict)
    sums: dict[str, float] = field(default_factory=dict)
    nums: dict[str, int] = field(default_factory=dict)

    def __add__(self, other: StepAcc) -> StepAcc:
        def add(a: dict, b: dict) -> dict:  # type: ignore[type-arg]
            return {key: a.get(key, 0) + b.get(key, 0) for key in a.keys() | b.keys()}
        return StepAcc(add(self.counts, other.counts), add(self.sizes, other.sizes),
                       add(self.sums, other.sums), add(self.nums, other.nums))


@dataclass(frozen=True)
class GroupState:
    """Mergeable partial state: one StepAcc per step, plus the settings it was built with."""

    ks: tuple[int, ...] = (1, 2, 4, 8, 16)
    tau: float = 0.5
    correct_threshold: float = 1.0
    steps: dict[int, StepAcc] = field(default_factory=dict)


def _mean_cols(t: pl.DataFrame, ks: tuple[int, ...]) -> list[str]:
    names = ["std_sample", "std_pop", "n"]
    for k in ks:
        names += [f"pass@{k}", f"pass_gap@{k}", f"g_pass@{k}", f"maj@{k}", f"reasoning/self_consistency_gap@{k}"]
    return [c for c in names if c in t.columns]


def _acc_from_table(t: pl.DataFrame, ks: tuple[int, ...]) -> dict[int, StepAcc]:
    means = _mean_cols(t, ks)
    zero, sig = pl.col("zero_std"), ~pl.col("zero_std")
    sums = [pl.col(m).fill_nan(None).sum().alias(f"s|{m}") for m in means]
    nums = [pl.col(m).fill_nan(None).count().alias(f"c|{m}") for m in means]
    agg = t.group_by(S.STEP).agg(
        *sums, *nums, groups=pl.len(), rollouts=pl.col("n").sum(), std_groups=(pl.col("n") >= 2).sum(),
        zero=zero.sum(), all_correct=pl.col("all_correct").sum(), all_wrong=pl.col("all_wrong").sum(),
        identical=pl.col("identical").sum(), signal_groups=sig.sum(),
        signal_rollouts=pl.col("n").filter(sig).sum(),
        sizes=pl.col("n").value_counts(),
    )
    out: dict[int, StepAcc] = {}
    for row in agg.iter_rows(named=True):
        out[int(row[S.STEP])] = StepAcc(
            counts={key: int(row[key] or 0) for key in _COUNTS},
            sizes={int(d["n"]): int(d["count"]) for d in row["sizes"]},
            sums={m: float(row[f"s|{m}"] or 0.0) for m in means},
            nums={m: int(row[f"c|{m}"]) for m in means})
    return out


def update(state: GroupState, chunk: pl.DataFrame) -> GroupState:
    """Fold a chunk of whole groups into ``state`` (returns a new state)."""
    if chunk.height == 0:
        return state
    t = _per_group(chunk, state.ks, state.tau, state.correct_threshold)
    return merge(state, replace(state, steps=_acc_from_table(t, state.ks)))


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


def _row(step: int, acc: StepAcc, ks: tuple[int, ...]) -> dict[str, float | int]:
    c, g = acc.counts, acc.counts["groups"]
    row: dict[str, float | int] = {
        S.STEP: step, "groups": g, "rollouts": c["rollouts"],
        "group/reward_std/mean": _ratio(acc.sums.get("std_sample", 0.0), acc.nums.get("std_sample", 0)),
        "group/reward_std_pop/mean": _ratio(acc.sums.get("std_pop", 0.0), acc.nums.get("std_pop", 0)),
        "group/zero_std/share": _ratio(c["zero"], g),
        "group/zero_std/all_correct": _ratio(c["all_correct"], g),
        "group/zero_std/all_wrong": _ratio(c["all_wrong"], g),
        "group/zero_std/identical": _ratio(c["identical"], g),
        "group/effective_batch": _ratio(c["signal_rollouts"], c["rollouts"]),
        "group/effective_batch/groups": c["signal_groups"],
        "group/size/mean": _ratio(c["rollouts"], g),
    }
    for k in ks:
        for name in (f"pass@{k}", f"maj@{k}", f"pass_gap@{k}", f"g_pass@{k}",
                     f"reasoning/self_consistency_gap@{k}"):
            row[name] = _ratio(acc.sums.get(name, 0.0), acc.nums.get(name, 0))
    return row


def compute(state: GroupState) -> pl.DataFrame:
    """One row per step with the catalog keys (see the module docstring); empty state → empty frame."""
    rows = [_row(s, state.steps[s], state.ks) for s in sorted(state.steps)]
    names = list(_row(0, StepAcc(), state.ks))
    schema = {n: (pl.Int64 if n in (S.STEP, "groups", "rollouts", "group/effective_batch/groups") else pl.Float64)
              for n in names}
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def step_metrics(df: pl.DataFrame, ks: tuple[int, ...] = (1, 2, 4, 8, 16), tau: float = 0.5,
                 correct_threshold: float = 1.0) -> pl.DataFrame:
    """Group-scale metrics per step, columns named with the catalog keys.

    >>> df = pl.DataFrame({"step": [0] * 4, "group": ["a", "a", "b", "b"], "sample": [0, 1, 0, 1],
    ...                    "score": [1.0, 0.0, 1.0, 1.0]})
    >>> step_metrics(df, ks=(1, 2)).select("pass@1", "pass@2", "group/zero_std/all_correct").row(0)
    (0.75, 1.0, 0.5)
    """
    if any(k < 1 for k in ks) or not ks:
        raise ValueError(f"ks must be positive integers, got {ks}")
    return compute(update(GroupState(ks=tuple(ks), tau=tau, correct_threshold=correct_threshold), df))
