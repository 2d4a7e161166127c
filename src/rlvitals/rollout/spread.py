"""σ_G as a distribution across the groups of a step: quantiles, a histogram of fixed bands, its shape.

The mean σ_G (``group/reward_std/mean``) and the share of groups at σ_G = 0 hide the shape the
multi-scale view §4 reads (docs/reading-rules.md#sigma-g-distribution): whether a step's groups sit at 0
(too easy or too hard: no gradient), spread over the range (mixed answers: the most learning signal), or
split into a heap at 0 and a heap at the largest spread (bimodal: half the batch teaches nothing, the
other half everything). Per step, over the groups of at least 2 rollouts:

- **quantiles** of σ_G (ddof=1, what GRPO normalises by, as ``group/reward_std/mean``): ``p10``, ``p25``,
  ``p50``, ``p75``, ``p90`` (numpy's linear rule, exact), ``group/reward_std/{quantile}``;
- a **histogram** of fixed bands of the *relative spread* u = σ_pop / ((max − min) / 2), the group's
  population std over the largest one the step's reward range allows (Popoviciu: a reward in [min, max]
  has a std of at most half the range, reached by a group split half at each end), so the bands mean the
  same whatever the reward's units: ``zero`` (every reward of the group equal, σ_G = 0 exactly), then
  ``0-25``, ``25-50``, ``50-75``, ``75-100`` (u in (0, 0.25], (0.25, 0.5], (0.5, 0.75], (0.75, 1]).
  For a 0/1 reward u = 2·sqrt(p(1 − p)) with p the group's share correct: no group lands on an edge
  (they are irrational there), one wrong answer in 8 is u = 0.66, two are 0.87. Per step the counts
  (``group/reward_std/hist``) and the shares (``group/reward_std/band/{band}``);
- its **shape** (``group/reward_std/shape``): ``at_zero`` when at least ``AT_ZERO`` of the groups have
  σ_G = 0; ``bimodal`` when the ``zero`` band and the ``75-100`` band each hold at least ``MODE`` of them
  and the bands between hold fewer than either; ``spread`` otherwise.

Mergeable: a step's state is each distinct σ_G value with its count (both conventions) and the step's
reward range — a handful of values for a 0/1 reward (at most G/2 + 1 distinct σ_G), at most one per group
for a graded one. Merging adds counts and takes the min and max, so shards give the same bits.

>>> t = pl.DataFrame({"step": [1] * 4, "n": [4] * 4, "zero_std": [True, False, False, True],
...                   "std_sample": [0.0, 0.5, 0.577, 0.0], "std_pop": [0.0, 0.433, 0.5, 0.0],
...                   "lo": [0.0] * 4, "hi": [1.0, 1.0, 1.0, 0.0]})
>>> r = row(by_step(t)[1]); r["group/reward_std/p50"], r["group/reward_std/band/75-100"], r["group/reward_std/shape"]
(0.25, 0.5, 'at_zero')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ..words import Words
from . import schema as S

__all__ = ["AT_ZERO", "BANDS", "EDGES", "HIST", "HIST_TYPE", "MODE", "QUANTILES", "READINGS", "SHAPE", "Spread",
           "band_key", "by_step", "empty", "row", "shape"]

#: the quantiles of σ_G reported per step
QUANTILES = (("p10", 0.1), ("p25", 0.25), ("p50", 0.5), ("p75", 0.75), ("p90", 0.9))
#: the histogram's bands: σ_G = 0, then four of the relative spread u, right-closed at ``EDGES``
BANDS = ("zero", "0-25", "25-50", "50-75", "75-100")
EDGES = (0.25, 0.5, 0.75)
#: the shape's thresholds, shares of the groups (the project's own numbers)
AT_ZERO = 0.5
MODE = 0.25
HIST = "group/reward_std/hist"
SHAPE = "group/reward_std/shape"
HIST_TYPE = pl.List(pl.Struct({"band": pl.String, "count": pl.Int64}))

#: what each shape means (the multi-scale view §4's table read over a whole step)
READINGS: dict[str, Words] = {
    "at_zero": Words(
        "concentrated at 0: half the groups or more got the same reward for every rollout (all correct: too easy; "
        "all wrong: too hard), so those prompts give no gradient; see the all-correct / all-wrong split and change "
        "the data",
        "集中在 0：一半或更多的组所有 rollout 的 reward 都一样（全对：太简单；全错：太难），这些 prompt 没有梯度；"
        "看全对 / 全错的拆分，调整数据"),
    "spread": Words(
        "spread: the groups' σ_G covers the range, with right and wrong answers mixed within most groups — the range "
        "with the most learning signal; the data suits the policy",
        "分散：各组的 σ_G 铺满整个区间，多数组内有对有错——最有学习信号的区间；数据与当前 policy 匹配"),
    "bimodal": Words(
        "bimodal: a heap of groups at σ_G = 0 and a heap at the largest spread — the batch splits into prompts the "
        "policy always (or never) solves and prompts it solves half the time; only the second heap teaches, so the "
        "effective batch is that heap (dynamic sampling or a curriculum would refill it)",
        "双峰：一堆组的 σ_G = 0，另一堆在最大离散处——batch 分成了 policy 总是（或从不）解出的 prompt 和一半能解出的 "
        "prompt；只有后一堆在教，有效 batch 就是这一堆（dynamic sampling 或课程学习能把它补满）"),
}


def band_key(band: str) -> str:
    """The per-step share of groups in ``band``: ``group/reward_std/band/{band}``."""
    return f"group/reward_std/band/{band}"


@dataclass(frozen=True)
class Spread:
    """One step's σ_G values: the distinct values of each convention (ascending) with their counts, and
    the step's reward range (NaN when no reward is known)."""

    sample: np.ndarray
    sample_n: np.ndarray
    pop: np.ndarray
    pop_n: np.ndarray
    lo: float
    hi: float

    def __add__(self, other: Spread) -> Spread:
        return Spread(*_merged(self.sample, self.sample_n, other.sample, other.sample_n),
                      *_merged(self.pop, self.pop_n, other.pop, other.pop_n),
                      float(np.fmin(self.lo, other.lo)), float(np.fmax(self.hi, other.hi)))


def empty() -> Spread:
    none, counts = np.zeros(0, np.float64), np.zeros(0, np.int64)
    return Spread(none, counts, none, counts, float("nan"), float("nan"))


def _merged(a: np.ndarray, an: np.ndarray, b: np.ndarray, bn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if not b.size:
        return a, an
    if not a.size:
        return b, bn
    values, inverse = np.unique(np.concatenate([a, b]), return_inverse=True)
    return values, np.bincount(inverse, weights=np.concatenate([an, bn]), minlength=values.size).astype(np.int64)


def _counts(frame: pl.DataFrame, col: str) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per step, the distinct values of ``col`` (ascending) and their counts."""
    vc = frame.group_by(S.STEP, col).agg(c=pl.len()).sort(S.STEP, col)
    steps = vc.get_column(S.STEP).to_numpy()
    values = vc.get_column(col).to_numpy().astype(np.float64, copy=False)
    counts = vc.get_column("c").to_numpy().astype(np.int64, copy=False)
    if not steps.size:
        return {}
    cuts = np.flatnonzero(np.diff(steps)) + 1
    heads = steps[np.r_[0, cuts]].tolist()
    return dict(zip(heads, zip(np.split(values, cuts), np.split(counts, cuts), strict=True), strict=True))


def by_step(t: pl.DataFrame) -> dict[int, Spread]:
    """The states of the steps of a group table (columns step, n, zero_std, std_sample, std_pop, lo, hi):
    groups of at least 2 rollouts with a known σ_G count, a group whose rewards are all equal at exactly 0."""
    dead = pl.col("zero_std")
    two = t.filter(pl.col("n") >= 2).select(
        S.STEP, sample=pl.when(dead).then(0.0).otherwise(pl.col("std_sample")),
        pop=pl.when(dead).then(0.0).otherwise(pl.col("std_pop")))
    two = two.filter(pl.col("sample").is_not_null() & pl.col("sample").is_not_nan()
                     & pl.col("pop").is_not_null() & pl.col("pop").is_not_nan())
    sample, pop = _counts(two, "sample"), _counts(two, "pop")
    ranges = t.group_by(S.STEP).agg(lo=pl.col("lo").min(), hi=pl.col("hi").max())
    none = empty()
    out = {}
    for step, lo, hi in ranges.iter_rows():
        s, p = sample.get(step, (none.sample, none.sample_n)), pop.get(step, (none.pop, none.pop_n))
        out[int(step)] = Spread(s[0], s[1], p[0], p[1], float("nan") if lo is None else float(lo),
                                float("nan") if hi is None else float(hi))
    return out


def _bands(sp: Spread) -> np.ndarray:
    """How many groups fall in each of ``BANDS``."""
    out = np.zeros(len(BANDS), np.int64)
    live = sp.pop > 0
    out[0] = int(sp.pop_n[~live].sum())
    if live.any():
        u = np.minimum(sp.pop[live] / ((sp.hi - sp.lo) / 2.0), 1.0)
        np.add.at(out, 1 + np.searchsorted(np.asarray(EDGES), u, side="left"), sp.pop_n[live])
    return out


def shape(shares: dict[str, float]) -> str | None:
    """The shape of a step's band shares (the module docstring); None without groups.

    >>> shape({"zero": 0.6, "75-100": 0.3}), shape({"zero": 0.3, "75-100": 0.6}), shape({"zero": 0.3, "75-100": 0.3})
    ('at_zero', 'bimodal', 'spread')
    """
    zero, top = shares.get("zero", float("nan")), shares.get("75-100", float("nan"))
    if zero != zero:  # NaN: no group
        return None
    middle = 1.0 - zero - top
    if zero >= AT_ZERO:
        return "at_zero"
    if zero >= MODE and top >= MODE and middle < min(zero, top):
        return "bimodal"
    return "spread"


def row(sp: Spread) -> dict[str, Any]:
    """A step's quantiles, band shares, histogram and shape under their catalog keys (NaN, null without a
    group of 2 or more)."""
    n = int(sp.sample_n.sum())
    qs = (np.quantile(np.repeat(sp.sample, sp.sample_n), [q for _, q in QUANTILES]).tolist() if n
          else [float("nan")] * len(QUANTILES))
    out: dict[str, Any] = {f"group/reward_std/{name}": float(v) for (name, _), v in zip(QUANTILES, qs, strict=True)}
    counts = _bands(sp)
    total = int(counts.sum())
    shares = {band: (int(c) / total if total else float("nan")) for band, c in zip(BANDS, counts, strict=True)}
    out.update((band_key(b), v) for b, v in shares.items())
    out[HIST] = [{"band": b, "count": int(c)} for b, c in zip(BANDS, counts, strict=True)] if total else None
    out[SHAPE] = shape(shares)
    return out
