"""Group-scale rollout metrics on 1,000,000 rollouts (62,500 groups × 16), against two baselines.

Run:  python benchmarks/bench_rollouts.py [--groups 62500] [--pandas-groups 6250] [--verl-groups 100]
      [--part all|group|diversity] [--diversity-groups 6250] [--reference-groups 625]

Group metrics are pinned to CPU 0 (one core). Data: numpy, seed 0; 100 steps × 625 groups × 16 rollouts; per group a
success probability p ~ Beta(0.6, 0.6); a correct rollout answers "gold", a wrong one one of 4 wrong
answers (a rollout has no answer with probability 5%). Timed:

- rlvitals: ``step_metrics(ks=1..16)``: σ_G (both ddofs; its quantiles and bands) + zero-variance split +
  effective batch + group-size distribution + exact pass@k, G-Pass@k and maj@k for every k ≤ 16 (the maj@k cache is
  cleared first; step_metrics shares vote counts only within one call), through the mergeable state
  (``compute(update(None, df))``: exact integer sums per column, so shards give the same bits).
- pandas:   ``groupby(["step", "group"]).apply`` of a straightforward per-group function (std, zero
  split, pass@k via math.comb, exact maj@k via the same single-group DP) then a per-step mean — run on
  ``--pandas-groups`` groups and scaled linearly to the full size; its per-step values are compared
  with ours on those groups (the largest difference is printed).
- veRL-style bootstrap: best@n and maj@n for n in (2, 4, 8, 16) (veRL's gen_ns(16)) as in
  ``bootstrap_metric`` / ``calc_maj_val``: 1000 resamples with replacement per group and per n —
  re-implemented from its description (research/algorithms.md §1.3), run on ``--verl-groups`` groups
  and scaled linearly; its mean distance per group from the exact pass@n / maj@n is printed (the
  resampling noise and the with-replacement bias that the exact estimators do not have).

Diversity (run first, on every core): ``diversity_table`` (distinct-1..4, duplicate rate, word edit
distance, answer entropy) on 100,000 rollouts of ~1 kB (``--diversity-groups`` 6,250 groups × 16,
10 steps): per group a base text of 150 words drawn from a Zipf vocabulary of 5,000 words (one in
~30 is a newline), each rollout replacing a share U(0, 0.6) of its words. Best of 3, wall clock and
CPU time. Baseline in the same run: a plain per-group Python loop over the single-group functions
(``distinct_n``, ``duplicate_rate``, rapidfuzz ``cdist`` on ``str.split()`` word lists,
``answer_entropy``, then ``math.fsum`` means) on ``--reference-groups`` groups, scaled linearly; its
frame must equal ours on those groups bit for bit.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import Counter

import numpy as np
import polars as pl
from _record import Figure, record
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cdist

from rlvitals.rollout import diversity
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

    scores, ok = g["score"].to_numpy(), g["correct"].to_numpy()  # type: ignore[index]
    answers = [a if isinstance(a, str) else None for a in g["answer"].tolist()]  # type: ignore[index]  # pandas: NaN
    n, c = len(scores), int(ok.sum())
    row = {"std": scores.std(ddof=1), "zero": scores.max() == scores.min(),
           "all_correct": scores.max() == scores.min() and c == n, "all_wrong": scores.max() == scores.min() and c == 0}
    for k in KS:
        row[f"pass@{k}"] = 1 - math.comb(n - c, k) / math.comb(n, k) if n >= k else math.nan
        row[f"maj@{k}"] = maj_at_k_answers(answers, list(ok), k) if n >= k else math.nan
    return pd.Series(row)


def run_pandas(df: pl.DataFrame) -> tuple[float, object]:
    pdf = df.to_pandas()
    maj_curve.cache_clear()
    t0 = time.perf_counter()
    per = pdf.groupby(["step", "group"]).apply(_pandas_group, include_groups=False)
    means = per.astype(float).groupby(level="step").mean()
    return time.perf_counter() - t0, means


def agreement(ours: pl.DataFrame, means: object) -> float:
    """The largest absolute difference between our per-step values and the pandas baseline's
    (sigma_G, zero-variance split, pass@k and maj@k for every k) on the same groups."""
    pairs = {"group/reward_std/mean": "std", "group/zero_std/share": "zero",
             "group/zero_std/all_correct": "all_correct", "group/zero_std/all_wrong": "all_wrong"}
    pairs.update({f"{m}@{k}": f"{m}@{k}" for k in KS for m in ("pass", "maj")})
    ours = ours.sort("step")
    return max(float(np.max(np.abs(ours[a].to_numpy() - means[b].to_numpy()))) for a, b in pairs.items())  # type: ignore[index]


def bootstrap_error(df: pl.DataFrame) -> tuple[float, float]:
    """How far veRL-style bootstrap best@n / maj@n land from the exact pass@n / maj@n on the same
    groups (mean absolute difference per group, over n in 2, 4, 8, 16)."""
    from rlvitals.rollout.passk import pass_at_k

    best_err, maj_err = [], []
    for (_, _), g in df.group_by("step", "group"):
        pairs = zip(g["answer"].to_list(), g["sample"].to_list(), strict=True)
        preds = [a if a is not None else f"none{s}" for a, s in pairs]
        vals, ok = g["score"].to_list(), g["correct"].to_list()
        for size in (2, 4, 8, 16):
            best, maj = _verl_bootstrap(preds, vals, size)
            best_err.append(abs(best - float(pass_at_k(np.array([len(ok)]), np.array([sum(ok)]), size)[0])))
            maj_err.append(abs(maj - maj_at_k_answers(g["answer"].to_list(), ok, size)))
    return float(np.mean(best_err)), float(np.mean(maj_err))


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


def make_text_table(groups: int, seed: int = 0, words: int = 150) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = np.array(["".join(rng.choice(letters, size=int(k))) for k in rng.integers(2, 10, size=5000)], dtype=object)
    vocab[7] = "\n"
    zipf = 1.0 / np.arange(1, len(vocab) + 1)
    zipf /= zipf.sum()
    ids = np.repeat(rng.choice(len(vocab), size=(groups, words), p=zipf), G, axis=0)
    changed = rng.random(ids.shape) < rng.uniform(0.0, 0.6, size=(groups * G, 1))
    ids[changed] = rng.choice(len(vocab), size=int(changed.sum()), p=zipf)
    gid = np.repeat(np.arange(groups), G)
    answer = rng.integers(0, 5, size=groups * G).astype(str)
    return pl.DataFrame({"step": gid // 625, "group": gid.astype(str), "sample": np.tile(np.arange(G), groups),
                         "response": [" ".join(row) for row in vocab[ids].tolist()], "answer": answer})


def reference_diversity(df: pl.DataFrame) -> pl.DataFrame:
    """The plain per-group loop over the single-group functions (same definitions, no vectorising)."""
    ns, per_step = diversity.DEFAULT_NS, {}
    for (step, _), g in df.sort("step", "group", "sample").group_by("step", "group", maintain_order=True):
        texts = g["response"].to_list()
        words = [t.split() for t in texts]
        dist = cdist(words, words, scorer=Levenshtein.normalized_distance)
        row = {f"diversity/distinct_{n}": diversity.distinct_n(texts, n) for n in ns}
        row["diversity/duplicate_rate"] = diversity.duplicate_rate(texts)
        row["diversity/edit_distance"] = float(dist[np.triu_indices(len(words), k=1)].mean())
        row["diversity/answer_entropy"] = diversity.answer_entropy(g["answer"].to_list())
        for key, value in row.items():
            per_step.setdefault(key, {}).setdefault(step, []).append(value)
    steps = sorted(next(iter(per_step.values())))
    cols = {k: [math.fsum(v[s]) / len(v[s]) for s in steps] for k, v in per_step.items()}
    return pl.DataFrame({"step": steps, **cols})


def run_diversity(groups: int, reference_groups: int) -> list[Figure]:
    df = make_text_table(groups)
    kb = df["response"].str.len_bytes().mean() / 1000  # type: ignore[operator]
    print(f"diversity table: {df.height:,} rollouts of {kb:.2f} kB mean, {groups:,} groups x {G}, "
          f"{os.cpu_count()} cores (shared with other users: wall times vary)")
    walls, cpus = [], []
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        diversity.diversity_table(df)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    ours = min(walls)
    print(f"rlvitals diversity_table: best {ours:.2f} s wall of {', '.join(f'{t:.2f}' for t in walls)}; "
          f"CPU time best {min(cpus):.2f} s")
    sub = df.filter(pl.col("group").cast(pl.Int64) < reference_groups)
    t0 = time.perf_counter()
    want = reference_diversity(sub)
    tr = (time.perf_counter() - t0) * groups / reference_groups
    got = diversity.diversity_table(sub).select(want.columns)
    same = got.equals(want)
    print(f"plain per-group Python reference: {tr:.1f} s (measured on {reference_groups:,} groups, scaled)  "
          f"ratio {tr / ours:.1f}x; frames identical on those groups: {same}")
    return [Figure("diversity_table", ours, "s", "time", "lower"),
            Figure("diversity vs per-group Python", tr / ours, "x", "ratio", "higher")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--groups", type=int, default=62_500)
    ap.add_argument("--pandas-groups", type=int, default=6_250)
    ap.add_argument("--verl-groups", type=int, default=100)
    ap.add_argument("--part", choices=("all", "group", "diversity"), default="all")
    ap.add_argument("--diversity-groups", type=int, default=6_250)
    ap.add_argument("--reference-groups", type=int, default=625)
    ap.add_argument("--no-record", action="store_true", help="do not append the figures to benchmarks/results/")
    args = ap.parse_args()
    figures: list[Figure] = []
    if args.part in ("all", "diversity"):
        figures += run_diversity(args.diversity_groups, args.reference_groups)
    if args.part != "diversity":
        figures += run_group(args)
    if not args.no_record:
        record("bench_rollouts", [a for a in sys.argv[1:] if a != "--no-record"], figures)


def run_group(args: argparse.Namespace) -> list[Figure]:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})
    df = make_table(args.groups)
    print(f"table: {df.height:,} rollouts, {args.groups:,} groups x {G}, pinned to CPU 0")
    times = [run_rlvitals(df)[0] for _ in range(3)]
    ours = min(times)
    print(f"rlvitals step_metrics(ks=1..16): best {ours:.3f} s of {', '.join(f'{t:.3f}' for t in times)}")
    sub = df.filter(pl.col("group").cast(pl.Int64) < args.pandas_groups)
    tp, means = run_pandas(sub)
    tp *= args.groups / args.pandas_groups
    diff = agreement(step_metrics(sub, ks=KS), means)
    print(f"pandas groupby/apply: {tp:.1f} s (measured on {args.pandas_groups:,} groups, scaled)"
          f"  ratio {tp / ours:.0f}x; largest difference from ours on those groups: {diff:.1e}")
    sub = df.filter(pl.col("group").cast(pl.Int64) < args.verl_groups)
    tv = run_verl(sub) * args.groups / args.verl_groups
    best_err, maj_err = bootstrap_error(sub)
    print(f"veRL-style bootstrap best@n+maj@n, n in (2,4,8,16): {tv:.0f} s "
          f"(measured on {args.verl_groups:,} groups, scaled)  ratio {tv / ours:.0f}x; its mean error per group "
          f"against the exact values: best@n vs pass@n {best_err:.3f}, maj@n {maj_err:.3f}")
    return [Figure("step_metrics", ours, "s", "time", "lower"),
            Figure("step_metrics vs veRL-style bootstrap", tv / ours, "x", "ratio", "higher"),
            Figure("step_metrics vs pandas", tp / ours, "x", "ratio", "higher")]


if __name__ == "__main__":
    main()
