"""The rollouts at the extremes of one step: what a gradient spike at that step most likely came from.

A gradient-norm spike usually matches one rollout with an extreme reward, most often with sparse rewards (the
multi-scale view §6; docs/reading-rules.md#grad-norm-spike): the lone correct answer of a group that was otherwise
wrong carries the largest advantage of the batch, a very long response the most tokens. :func:`extreme_rollouts`
names, for one step, the rollout with the largest |advantage| (the logged sequence advantage, else the score
standardised within its group — GRPO's advantage, ``group_z``), the highest and the lowest reward, and the
longest response: each by its group and sample, with its reward, advantage, group z, length and group (size and
mean reward), and why it was picked.

>>> t = pl.DataFrame({"step": [5] * 5, "group": ["a", "a", "a", "b", "b"], "sample": [0, 1, 2, 0, 1],
...                   "score": [0.0, 0.0, 1.0, 0.0, 0.0], "length": [10, 14, 900, 12, 11]})
>>> [(r["group"], r["sample"], r["why"]) for r in extreme_rollouts(t, 5)]
[('a', 2, ['max |group z|', 'max reward', 'longest']), ('a', 0, ['min reward'])]
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from ..words import Words, in_lang
from .schema import ADVANTAGE, GROUP, LENGTH, SAMPLE, SCORE, STEP

__all__ = ["EXTREME_WHY", "described_extreme", "extreme_rollouts"]

#: at most this many rollouts are named per step
PER_STEP = 4


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _with_group(part: pl.DataFrame) -> pl.DataFrame:
    """``part`` with each rollout's group size, group mean reward and score standardised in its group
    (population std, as GRPO; null where the group's rewards do not differ)."""
    if SCORE not in part.columns:
        return part.with_columns(pl.len().over(GROUP).alias("_n"), pl.lit(None, pl.Float64).alias("_mean"),
                                 pl.lit(None, pl.Float64).alias("_z"))
    score = pl.col(SCORE).cast(pl.Float64).fill_nan(None)
    std = score.std(ddof=0).over(GROUP)
    return part.with_columns(pl.len().over(GROUP).alias("_n"), score.mean().over(GROUP).alias("_mean"),
                             pl.when(std > 0).then((score - score.mean().over(GROUP)) / std).alias("_z"))


#: why a rollout was picked, in words (the ``why`` of :func:`extreme_rollouts`)
EXTREME_WHY = {"max |advantage|": Words("largest |advantage|", "|优势| 最大"),
       "max |group z|": Words("largest |reward z in its group|", "组内 reward z 值绝对值最大"),
       "max reward": Words("highest reward", "reward 最高"), "min reward": Words("lowest reward", "reward 最低"),
       "longest": Words("longest", "最长")}
_FIELDS = {"reward": Words("reward", "reward"), "advantage": Words("advantage", "优势"),
           "group_z": Words("z in its group", "组内 z 值"), "length": Words("length", "长度")}
_WHERE = {"en": "step {step}, group {group}, sample {sample}: ", "zh": "第 {step} 步，组 {group}，样本 {sample}："}
_GROUP = {"en": " (group of {n}{mean})", "zh": "（所在组 {n} 个{mean}）"}
_MEAN = {"en": ", mean reward {v:.3g}", "zh": "，平均 reward {v:.3g}"}


def described_extreme(rollout: dict[str, Any], lang: str = "en") -> str:
    """One picked rollout (an entry of :func:`extreme_rollouts`) in a line of ``lang``.

    >>> r = {"step": 16, "group": 2, "sample": 0, "reward": 5.0, "advantage": None, "group_z": None,
    ...      "length": 300, "group_size": 8, "group_mean": 1.25, "why": ["max reward"]}
    >>> described_extreme(r)
    'step 16, group 2, sample 0: highest reward · reward 5 · length 300 (group of 8, mean reward 1.25)'
    >>> described_extreme(r, "zh")
    '第 16 步，组 2，样本 0：reward 最高 · reward 5 · 长度 300（所在组 8 个，平均 reward 1.25）'
    """
    why = ", ".join(in_lang(EXTREME_WHY.get(w, w), lang) for w in rollout.get("why", ()))
    values = [f"{in_lang(word, lang)} {rollout[key]:.3g}" for key, word in _FIELDS.items()
              if rollout.get(key) is not None]
    mean = rollout.get("group_mean")
    return (_WHERE[lang].format(step=rollout["step"], group=rollout["group"], sample=rollout["sample"])
            + " · ".join([why, *values])
            + _GROUP[lang].format(n=rollout.get("group_size"), mean="" if mean is None else _MEAN[lang].format(v=mean)))


def _picks(part: pl.DataFrame) -> list[tuple[int, str]]:
    """``(row index, why)`` for each extreme the columns allow, in the order they are named."""
    picks: list[tuple[int, str]] = []

    def arg(expr: pl.Expr, label: str, largest: bool = True) -> None:
        values = part.select(expr.cast(pl.Float64).fill_nan(None).alias("v"))["v"]
        if values.null_count() < len(values):
            at = values.arg_max() if largest else values.arg_min()
            if at is not None:
                picks.append((int(at), label))

    if ADVANTAGE in part.columns:
        arg(pl.col(ADVANTAGE).abs(), "max |advantage|")
    arg(pl.col("_z").abs(), "max |group z|")
    if SCORE in part.columns:
        arg(pl.col(SCORE), "max reward")
        arg(pl.col(SCORE), "min reward", largest=False)
    if LENGTH in part.columns:
        arg(pl.col(LENGTH), "longest")
    return picks


def extreme_rollouts(table: pl.DataFrame, step: int, limit: int = PER_STEP) -> list[dict[str, Any]]:
    """The rollouts of ``step`` at the extremes of advantage, reward and length (at most ``limit``, one
    entry per rollout with every extreme it holds in ``why``); empty when the step has none."""
    part = table.filter(pl.col(STEP) == step).sort([GROUP, SAMPLE])
    if part.height == 0:
        return []
    part = _with_group(part)
    chosen: dict[int, list[str]] = {}
    for row, why in _picks(part):
        if row in chosen or len(chosen) < limit:
            chosen.setdefault(row, []).append(why)
    out = []
    for row, reasons in chosen.items():
        r = part.row(row, named=True)
        out.append({"step": step, "group": r[GROUP], "sample": r[SAMPLE], "reward": _number(r.get(SCORE)),
                    "advantage": _number(r.get(ADVANTAGE)), "group_z": _number(r["_z"]),
                    "length": r.get(LENGTH), "group_size": r["_n"], "group_mean": _number(r["_mean"]), "why": reasons})
    return out
