"""Group-scale rollout metrics on 1,000,000 rollouts (62,500 groups × 16), against two baselines.

Run:  python benchmarks/bench_rollouts.py [--groups 62500] [--pandas-groups 6250] [--verl-groups 100]

Pinned to CPU 0 (one core). Data: numpy, seed 0; 100 steps × 625 groups × 16 rollouts; per group a
success probability p ~ Beta(0.6, 0.6); a correct rollout answers "gold", a wrong one one of 4 wrong
answers (a rollout has no answer with probability 5%). Timed:

- rlvitals: ``step_metrics(ks=1..16)``: σ_G (both ddofs) + zero-variance split + effective batch +
  group-size distribution + exact pass@k, G-Pass@k and maj@k for every k ≤ 16 (the maj@k cache is
  cleared first), through the mergeable state (``compute(update(None, df))``: per-group values kept,
  sorted per column before summing, so shards give the same bits).
- pandas:   ``groupby(["step", "group"]).apply`` of a straightforward per-group function (std, zero
  split, pass@k via math.comb, exact maj@k via the same single-group DP) then a per-step mean — run on
  ``--pandas-groups`` groups and scaled linearly to the full size.
- veRL-style bootstrap: best@n and maj@n for n in (2, 4, 8, 16) (veRL's gen_ns(16)) as in
  ``bootstrap_metric`` / ``calc_maj_val``: 1000 resamples with replacement per group and per n —
  re-implemented from its description (research/algorithms.md §1.3), run on ``--verl-groups`` groups
  and scaled linearly.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections import Counter

import numpy as np
import polars as pl

from rlvitals.rollout.groups import step_metrics
from rlvitals.rollout.passk import maj_at_k_answers, maj_curve

G = 16
KS = tuple(range(1, G + 1))


def make_table(groups: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.beta(0.6, 0.6, size=groups)
    ok = rng.random((groups, G)) < p[:, None]
    wrong = rng.integers(0, 4, size=(groups, G)).astype(str)
    answer = np.where(ok, "gold", np.char.add("w", wrong)).astype(object)
    answer[rng.random((groups, G)) < 0.05] = None
    gid = np.repeat(np.arange(groups), G)
    return pl.DataFrame({
        "step": gid // 625, "group": gid.astype(str), "sample": np.tile(np.arange(G), groups),
        "score": ok.ravel().astype(np.float64), "correct": ok.ravel(), "answer": answer.ravel(),
    }, schema_overrides={"answer": pl.Utf8})


def run_rlvitals(df: pl.DataFrame) -> tuple[float, pl.DataFrame]:
    maj_curve.cache_clear()
    t0 = time.perf_counter()
    out = step_metrics(df, ks=KS)
    return time.perf_counter() - t0, out


def _pandas_group(g: object) -> object:
    import pandas as pd

    scores, ok, answers = g["score"].to_numpy(), g["correct"].to_numpy(), g["answer"].tolist()  # type: ignore[index]
    n, c = len(scores), int(ok.sum())
    row = {"std": scores.std(ddof=1), "zero": scores.max() == scores.min(),
           "all_correct": scores.max() == scores.min() and c == n, "all_wrong": scores.max() == scores.min() and c == 0}
    for k in KS:
        row[f"pass@{k}"] = 1 - math.comb(n - c, k) / math.comb(n, k) if n >= k else math.nan
        row[f"maj@{k}"] = maj_at_k_answers(answers, list(ok), k) if n >= k else math.nan
    return pd.Series(row)


def run_pandas(df: pl.DataFrame) -> float:
    pdf = df.to_pandas()
    maj_curve.cache_clear()
    t0 = time.perf_counter()
    per = pdf.groupby(["step", "group"]).apply(_pandas_group, include_groups=False)
    per.astype(float).groupby(level="step").mean()
    return time.perf_counter() - t0


def _verl_maj(preds: list[object], vals: list[float]) -> float:
    votes = Counter(preds)  # insertion order = first occurrence, so ties go to the first-seen pred
    top = max(votes, key=votes.__getitem__)
    return vals[preds.index(top)]


def _verl_bootstrap(preds: list[object], vals: list[float], size: int, rng_seed: int = 42) -> tuple[float, float]:
    np.random.seed(rng_seed)
    idx = np.random.choice(len(vals), size=(1000, size), replace=True)
    arr = np.asarray(vals)
    best = float(np.mean([np.max(arr[i]) for i in idx]))
    maj = float(np.mean([_verl_maj([preds[j] for j in i], [vals[j] for j in i]) for i in idx]))
    return best, maj


def run_verl(df: pl.DataFrame) -> float:
    t0 = time.perf_counter()
    for (_, _), g in df.group_by("step", "group"):
        pairs = zip(g["answer"].to_list(), g["sample"].to_list(), strict=True)
        preds = [a if a is not None else f"none{s}" for a, s in pairs]
        vals = g["score"].to_list()
        for size in (2, 4, 8, 16):
            _verl_bootstrap(preds, vals, size)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--groups", type=int, default=62_500)
    ap.add_argument("--pandas-groups", type=int, default=6_250)
    ap.add_argument("--verl-groups", type=int, default=100)
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})
    df = make_table(args.groups)
    print(f"table: {df.height:,} rollouts, {args.groups:,} groups x {G}, pinned to CPU 0")
    times = [run_rlvitals(df)[0] for _ in range(3)]
    ours = min(times)
    print(f"rlvitals step_metrics(ks=1..16): best {ours:.3f} s of {', '.join(f'{t:.3f}' for t in times)}")
    sub = df.filter(pl.col("group").cast(pl.Int64) < args.pandas_groups)
    tp = run_pandas(sub) * args.groups / args.pandas_groups
    print(f"pandas groupby/apply: {tp:.1f} s (measured on {args.pandas_groups:,} groups, scaled)"
          f"  ratio {tp / ours:.0f}x")
    sub = df.filter(pl.col("group").cast(pl.Int64) < args.verl_groups)
    tv = run_verl(sub) * args.groups / args.verl_groups
    print(f"veRL-style bootstrap best@n+maj@n, n in (2,4,8,16): {tv:.0f} s "
          f"(measured on {args.verl_groups:,} groups, scaled)  ratio {tv / ours:.0f}x")


if __name__ == "__main__":
    main()
