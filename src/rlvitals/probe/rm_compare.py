"""Two reward models on the same rollouts (docs/reading-rules.md#rm-compare): how much they disagree, step by step.

The metric dictionary §6: score the current policy's rollouts with the old and the new reward model; a large
difference means the new one was contaminated by the policy's own outputs (it grades itself). Per step this
gives the rank correlation of the two scores (Spearman's ρ, ties at their mean rank), the share of pairs of the
step's rollouts the two order differently (pairs either model ties are left out) and the mean gap (B − A, in
the models' own units: meaningful when they share a scale). The verdict reads the latest steps — the policy as
it is now — by their median ρ.

>>> import polars as pl
>>> t = pl.DataFrame({"step": [1] * 6, "old": [0.1, 0.5, 0.2, 0.9, 0.4, 0.7], "new": [0.2, 0.6, 0.1, 1.0, 0.3, 0.8]})
>>> c = compare_table(t, "old", "new")
>>> c.verdict, round(c.steps[0].rho, 3), round(c.steps[0].discordant, 3)
('ok', 0.943, 0.067)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import polars as pl

from ..errors import InputError
from ..words import Words

__all__ = ["AGREE", "CONTAMINATED", "LATEST", "MAX_PAIRS_ROLLOUTS", "MIN_ROLLOUTS", "Comparison", "Scorer",
           "StepAgreement", "compare_columns", "compare_scored", "compare_table", "discordant_share", "spearman"]

#: a median rank correlation over the latest steps at or above this: the two reward models agree
AGREE = 0.7
#: below this: a large disagreement — the new reward model was contaminated by the policy's outputs (§6)
CONTAMINATED = 0.4
#: the share of the judged steps (the latest, at least one) the verdict reads: the policy as it is now
LATEST = 1 / 3
#: a step with fewer rollouts scored by both (or either score constant) is not judged
MIN_ROLLOUTS = 5
#: pairs are counted over at most this many rollouts of a step (evenly spaced): n² pairs stay bounded
MAX_PAIRS_ROLLOUTS = 2000


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties at their mean rank."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=float)
    ranks[order] = np.arange(1, len(x) + 1, dtype=float)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return np.asarray(sums[inverse] / counts[inverse], dtype=float)


def spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    """Spearman's rank correlation of ``a`` and ``b``; None when either is constant.

    >>> round(spearman(np.array([1.0, 2, 3, 4]), np.array([10.0, 20, 40, 30])), 6)
    0.8
    """
    ra, rb = _ranks(np.asarray(a, float)), _ranks(np.asarray(b, float))
    sa, sb = float(np.std(ra)), float(np.std(rb))
    if sa == 0 or sb == 0:
        return None
    return float(np.mean((ra - ra.mean()) * (rb - rb.mean())) / (sa * sb))


def discordant_share(a: np.ndarray, b: np.ndarray) -> float | None:
    """The share of pairs the two scores order differently, among the pairs neither ties; None without one.

    >>> discordant_share(np.array([1.0, 2, 3]), np.array([1.0, 3, 2]))
    0.3333333333333333
    """
    if len(a) > MAX_PAIRS_ROLLOUTS:
        keep = np.linspace(0, len(a) - 1, MAX_PAIRS_ROLLOUTS).astype(int)
        a, b = a[keep], b[keep]
    da = np.sign(a[:, None] - a[None, :])
    db = np.sign(b[:, None] - b[None, :])
    upper = np.triu(np.ones(da.shape, dtype=bool), k=1)
    counted = upper & (da != 0) & (db != 0)
    n = int(counted.sum())
    return float((counted & (da != db)).sum() / n) if n else None


@dataclass(frozen=True)
class StepAgreement:
    """One step: rollouts scored by both, their rank correlation, the share of pairs ordered differently and
    the mean gap B − A (None where a step could not say)."""

    step: int
    n: int
    rho: float | None
    discordant: float | None
    gap: float


@dataclass(frozen=True)
class Comparison:
    """The disagreement of two reward models (``a``, the old or reference one, and ``b``) on one dump:
    per step, and the verdict (``ok``, ``warn``, ``fail``; ``skipped`` when no step could be judged) read on the
    ``latest`` judged steps by their median rank correlation."""

    source: str
    a: str
    b: str
    steps: tuple[StepAgreement, ...]
    verdict: str
    rho: float | None
    discordant: float | None
    gap: float | None
    latest: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "a": self.a, "b": self.b, "verdict": self.verdict, "rho": self.rho,
                "discordant": self.discordant, "gap": self.gap, "latest_steps": list(self.latest),
                "thresholds": {"agree": AGREE, "contaminated": CONTAMINATED, "latest": LATEST,
                               "min_rollouts": MIN_ROLLOUTS},
                "steps": [asdict(s) for s in self.steps]}


def _median(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return float(np.median(kept)) if kept else None


def compare_table(table: pl.DataFrame, a: str, b: str, source: str = "") -> Comparison:
    """Compare score columns ``a`` and ``b`` of a rollout table (a ``step`` column; without one, all at step 0)."""
    if "step" not in table.columns:
        table = table.with_columns(pl.lit(0).alias("step"))
    scored = table.select(pl.col("step").cast(pl.Int64), pl.col(a).cast(pl.Float64).alias("a"),
                          pl.col(b).cast(pl.Float64).alias("b")).filter(
        pl.col("a").is_finite() & pl.col("b").is_finite()).sort("step", maintain_order=True)
    steps = []
    for (step,), part in scored.group_by("step", maintain_order=True):
        x, y = part["a"].to_numpy(), part["b"].to_numpy()
        judged = len(x) >= MIN_ROLLOUTS
        steps.append(StepAgreement(int(step), len(x), spearman(x, y) if judged else None,
                                   discordant_share(x, y) if judged else None, float(np.mean(y - x))))
    judged_steps = [s for s in steps if s.rho is not None]
    latest = judged_steps[-max(1, round(len(judged_steps) * LATEST)):] if judged_steps else []
    rho = _median([s.rho for s in latest])
    verdict = ("skipped" if rho is None else "ok" if rho >= AGREE else "warn" if rho >= CONTAMINATED else "fail")
    return Comparison(source, a, b, tuple(steps), verdict, rho, _median([s.discordant for s in latest]),
                      _median([s.gap for s in latest]), tuple(s.step for s in latest))


def _numeric(table: pl.DataFrame, column: str, path: str, flag: str) -> None:
    if column not in table.columns:
        shown = ", ".join(table.columns[:20])
        raise InputError(Words(f"{path}: no column {column!r} for {flag}; the rollouts have: {shown}",
                               f"{path}：没有 {flag} 所指的列 {column!r}；这些 rollout 的列有：{shown}"))
    if not table[column].dtype.is_numeric() and table[column].dtype != pl.Boolean:
        raise InputError(Words(f"{path}: column {column!r} ({flag}) holds {table[column].dtype}, not scores; name a "
                               "column of numbers",
                               f"{path}：列 {column!r}（{flag}）的类型是 {table[column].dtype}，不是分数；"
                               "请指定数值列"))


def compare_columns(path: str | Path, a: str, b: str, *, flag: str = "--scores") -> Comparison:
    """Read the rollout dump at ``path`` (any form ``rlvitals rollouts`` reads) and compare its columns ``a`` and
    ``b``; a missing or non-numeric column is an :class:`~rlvitals.errors.InputError` naming it."""
    from ..rollout import read_rollouts

    table = read_rollouts(path).table
    for column in (a, b):
        _numeric(table, column, str(path), flag)
    return compare_table(table, a, b, str(path))


class Scorer(Protocol):
    """What scores texts: a reward model served or loaded (:class:`~rlvitals.probe.rm_scorer.PoolingScorer`)."""

    def score(self, texts: Sequence[str]) -> list[float]: ...


def compare_scored(path: str | Path, a: str, b: str, scorers: Mapping[str, Scorer]) -> Comparison:
    """Compare ``a`` (the old or reference reward model) and ``b`` on the rollouts of the dump at ``path``: a name
    in ``scorers`` is that reward model scoring every rollout (the text scored is the prompt followed by the
    response), any other name is a column of the dump. Both may be scorers; the names must differ."""
    from ..rollout import read_rollouts

    if a == b:
        raise InputError(Words(f"{path}: both reward models are named {a!r}; give two different ones",
                               f"{path}：两个奖励模型都叫 {a!r}；请给出两个不同的奖励模型"))
    table = read_rollouts(path).table
    for name in (a, b):
        if name not in scorers:
            _numeric(table, name, str(path), "--scores")
    if "response" not in table.columns:
        raise InputError(Words(f"{path}: the rollouts have no response text to score; name its column with "
                               "--response COLUMN",
                               f"{path}：这些 rollout 没有可打分的回答文本；请用 --response COLUMN 指定列"))
    prompts = table["prompt"].fill_null("") if "prompt" in table.columns else pl.Series([""] * table.height)
    texts = [f"{p}{r}" for p, r in zip(prompts.cast(pl.String).to_list(),
                                        table["response"].fill_null("").cast(pl.String).to_list(), strict=True)]
    scored = table.with_columns(pl.Series(name, scorers[name].score(texts), dtype=pl.Float64)
                                for name in (a, b) if name in scorers)
    return compare_table(scored, a, b, str(path))
