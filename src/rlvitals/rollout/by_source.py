"""Per data source: how each source's rollouts score at a step, and how far each is from the
in-distribution sources (docs/reading-rules.md#ood-gap; L5).

A *data source* is the ``source`` column (veRL's ``data_source``, e.g. ``openai/gsm8k``). veRL logs the
same split per source for validation only (``val-core/<source>/<var>/mean@N``); these keys come from any
rollout dump, training or validation. Per step and source ``s`` (rollouts with a null or empty source
are left out):

- ``source/{s}/pass@1``: correct rollouts / rollouts of ``s`` whose correctness is known, pooled over
  its rollouts (with fixed group sizes, the mean over its groups of c / n). Correct as every group
  metric reads it (:func:`rlvitals.rollout.groups.correct_expr`: the ``correct`` column, else
  ``score >= 1.0``; a null is unknown and left out, never wrong).
- ``source/{s}/score/mean``: mean of the finite scores of ``s`` (needs ``score``).
- ``source/{s}/id_gap``: pass@1 of the step's in-distribution rollouts (every rollout whose source is
  one of ``id_sources``, pooled) − ``source/{s}/pass@1``; null when the step has no ID rollout. Only
  when ``id_sources`` are given: which sources are in-distribution is the user's knowledge.

Streaming: the state keeps integer counts per (step, source) and each source's finite scores (summed
with ``math.fsum``), so ``update`` / ``merge`` / ``compute`` over any split of the rollouts give the
unsharded result bit for bit.

>>> df = pl.DataFrame({"step": [1, 1, 1, 1], "source": ["gsm8k", "gsm8k", "math", "math"],
...                    "score": [1.0, 1.0, 1.0, 0.0]})
>>> compute(update(None, df, id_sources=["gsm8k"])).select("source/math/pass@1", "source/math/id_gap").row(0)
(0.5, 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from ..words import Words
from .groups import correct_expr
from .schema import CORRECT, SCORE, SOURCE, STEP

__all__ = ["SUFFIXES", "SourceState", "compute", "merge", "sources_seen", "split_key", "update"]

#: the per-source keys are ``source/{name}/{suffix}``
SUFFIXES = ("pass@1", "score/mean", "id_gap")


@dataclass(frozen=True)
class SourceCounts:
    """One (step, source): rollouts, correct rollouts, and the finite scores."""

    n: int = 0
    correct: int = 0
    scores: np.ndarray = field(default_factory=lambda: np.empty(0))

    def __add__(self, o: SourceCounts) -> SourceCounts:
        return SourceCounts(self.n + o.n, self.correct + o.correct, np.concatenate([self.scores, o.scores]))


@dataclass(frozen=True)
class SourceState:
    """Mergeable partial state: the in-distribution sources, whether the chunks had a ``score``, and
    per step the counts of each source."""

    id_sources: tuple[str, ...] = ()
    score: bool = False
    steps: dict[int, dict[str, SourceCounts]] = field(default_factory=dict)


def _chunk_counts(chunk: pl.DataFrame) -> dict[int, dict[str, SourceCounts]]:
    ok = correct_expr(chunk).cast(pl.Int64)
    finite = pl.col(SCORE).filter(pl.col(SCORE).is_finite()) if SCORE in chunk.columns else pl.lit(None, pl.Float64)
    agg = chunk.filter(pl.col(SOURCE).is_not_null() & (pl.col(SOURCE) != "")).group_by(STEP, SOURCE).agg(
        n=ok.count(), correct=ok.sum(), scores=finite.cast(pl.Float64).drop_nulls())  # n: known correctness
    out: dict[int, dict[str, SourceCounts]] = {}
    for step, source, n, correct, scores in agg.iter_rows():
        out.setdefault(int(step), {})[str(source)] = SourceCounts(int(n), int(correct), np.asarray(scores, float))
    return out


def update(state: SourceState | None, chunk: pl.DataFrame, *, id_sources: Sequence[str] | None = None) -> SourceState:
    """Fold a chunk of rollouts into ``state`` (None: a new state with ``id_sources``). Needs ``step``,
    ``source``, and ``score`` or ``correct``."""
    missing = [c for c in (STEP, SOURCE) if c not in chunk.columns]
    if missing:
        raise ValueError(Words(f"per-source metrics need the rollout column(s) {missing} (veRL's data_source; "
                               f"--source COLUMN for other files); the table has {chunk.columns}",
                               f"按数据源的指标需要 rollout 列 {missing}（veRL 的 data_source；其他文件用 "
                               f"--source COLUMN）；表中只有这些列：{chunk.columns}"))
    if SCORE not in chunk.columns and CORRECT not in chunk.columns:
        raise ValueError(Words(f"per-source metrics need a '{SCORE}' or a '{CORRECT}' column; the table has "
                               f"{chunk.columns}",
                               f"按数据源的指标需要 '{SCORE}' 或 '{CORRECT}' 列；表中只有这些列：{chunk.columns}"))
    base = state or SourceState(tuple(id_sources or ()))
    if id_sources is not None and tuple(id_sources) != base.id_sources:
        raise ValueError(f"update: id_sources {tuple(id_sources)} differ from the state's {base.id_sources}; "
                         "build a new state instead")
    return merge(base, SourceState(base.id_sources, SCORE in chunk.columns, _chunk_counts(chunk)))


def merge(a: SourceState, b: SourceState) -> SourceState:
    """Combine two states built from disjoint sets of rollouts."""
    if a.id_sources != b.id_sources:
        raise ValueError(f"cannot merge source states built with different id_sources: {a.id_sources} vs "
                         f"{b.id_sources}")
    steps = {s: dict(per) for s, per in a.steps.items()}
    for step, per in b.steps.items():
        mine = steps.setdefault(step, {})
        for source, counts in per.items():
            mine[source] = mine[source] + counts if source in mine else counts
    return SourceState(a.id_sources, a.score or b.score, steps)


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _row(step: int, per: dict[str, SourceCounts], names: list[str], state: SourceState) -> dict[str, float | None]:
    ids = [per[s] for s in state.id_sources if s in per]
    id_pass = _ratio(sum(c.correct for c in ids), sum(c.n for c in ids))
    row: dict[str, float | None] = {STEP: step}
    for name in names:
        c = per.get(name)
        p1 = _ratio(c.correct, c.n) if c is not None else None
        row[f"source/{name}/pass@1"] = p1
        if state.score:
            scores = c.scores if c is not None else np.empty(0)
            row[f"source/{name}/score/mean"] = math.fsum(scores.tolist()) / scores.size if scores.size else None
        if state.id_sources:
            row[f"source/{name}/id_gap"] = None if id_pass is None or p1 is None else id_pass - p1
    return row


def compute(state: SourceState) -> pl.DataFrame:
    """One row per step, the keys of the module docstring for every source seen at any step (sources
    in sorted order; null at a step without the source)."""
    names = sorted({s for per in state.steps.values() for s in per})
    suffixes = [x for x, on in zip(SUFFIXES, (True, state.score, bool(state.id_sources)), strict=True) if on]
    schema = {STEP: pl.Int64(), **{f"source/{n}/{x}": pl.Float64() for n in names for x in suffixes}}
    rows = [_row(s, state.steps[s], names, state) for s in sorted(state.steps)]
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def sources_seen(state: SourceState) -> list[str]:
    """Every source of the state's rollouts, sorted."""
    return sorted({s for per in state.steps.values() for s in per})


def split_key(key: str) -> tuple[str, str] | None:
    """``("openai/gsm8k", "pass@1")`` for ``source/openai/gsm8k/pass@1`` (a source name may hold "/",
    so the suffix is taken from the right); None for any other key.

    >>> split_key("source/openai/gsm8k/score/mean"), split_key("pass@1")
    (('openai/gsm8k', 'score/mean'), None)
    """
    if not key.startswith("source/"):
        return None
    for suffix in SUFFIXES:
        if key.endswith("/" + suffix) and len(key) > len("source/") + len(suffix) + 1:
            return key[len("source/"):-len(suffix) - 1], suffix
    return None
