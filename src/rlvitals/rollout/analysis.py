"""``analyze_rollouts``: a rollout table in, every per-step rollout metric out.

Each metric family (group, diversity, segments, length × correctness, prompts, tokens) needs
some columns; a family whose columns the rollouts lack is listed in ``skipped`` with the
reason, never silently absent. The per-step frame uses catalog keys, so it can be joined
onto a Run (``Run.with_series``) for the diagnosis checks to read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from . import diversity, groups, lengths, prompts, segments, tokens
from .readers import ColumnMap, RolloutSet, read_rollouts, rollouts_from_frame, rollouts_from_records
from .schema import GROUP, LENGTH, RESPONSE, STEP

DEFAULT_KS = (1, 2, 4, 8, 16)


@dataclass(frozen=True)
class RolloutAnalysis:
    """Per-step rollout metrics (``steps``: one row per step, ``groups``/``rollouts`` counts and
    catalog keys), the same over the whole table (``overall``), and what could not be computed."""

    steps: pl.DataFrame
    overall: dict[str, float]
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rollouts: RolloutSet | None = None

    def series(self) -> pl.DataFrame:
        """Only the catalog-keyed per-step columns, for ``Run.with_series``."""
        return self.steps.drop([c for c in ("groups", "rollouts") if c in self.steps.columns])


def _families(ks: Sequence[int]) -> list[tuple[str, Callable[[pl.DataFrame], pl.DataFrame]]]:
    return [
        ("group", lambda df: groups.step_metrics(df, ks=tuple(ks))),
        ("diversity", diversity.diversity_table),
        ("segments", segments.segments_table),
        ("length", lengths.lengths_table),
        ("prompts", prompts.prompts_table),
        ("tokens", tokens.tokens_table),
    ]


def _tables(df: pl.DataFrame, ks: Sequence[int], skipped: list[str] | None) -> pl.DataFrame:
    counts = df.group_by(STEP).agg(pl.col(GROUP).n_unique().alias("groups"), pl.len().alias("rollouts"))
    out = counts.sort(STEP)
    for name, fn in _families(ks):
        try:
            table = fn(df)
        except ValueError as exc:
            if skipped is not None:
                skipped.append(f"{name}: {exc}")
            continue
        if table.height == 0:
            continue
        table = table.with_columns(pl.col(STEP).cast(pl.Int64))
        dupes = [c for c in table.columns if c != STEP and c in out.columns]
        out = out.join(table.drop(dupes), on=STEP, how="left")
    return out.sort(STEP)


def _load(source: Any, columns: ColumnMap | None, group_size: int | None) -> RolloutSet:
    if isinstance(source, RolloutSet):
        return source
    if isinstance(source, (str, Path)):
        return read_rollouts(source, columns=columns, group_size=group_size)
    if isinstance(source, list):
        return rollouts_from_records(source, columns=columns)
    return rollouts_from_frame(source, columns=columns)


def analyze_rollouts(source: Any, *, columns: ColumnMap | None = None, ks: Sequence[int] = DEFAULT_KS,
                     group_size: int | None = None) -> RolloutAnalysis:
    """Every rollout metric per step and over the whole table.

    ``source`` is a path (veRL dump folder, TRL completions, a generic table with ``columns``),
    a :class:`RolloutSet`, a list of dicts, or a polars/pandas frame.

    Example:
        >>> import rlvitals
        >>> a = rlvitals.analyze_rollouts([{"step": 1, "prompt": "2+2", "response": "4", "score": 1.0},
        ...                                {"step": 1, "prompt": "2+2", "response": "5", "score": 0.0}])
        >>> a.steps["pass@2"].to_list()
        [1.0]
    """
    rollouts = _load(source, columns, group_size)
    df = rollouts.table
    notes = list(rollouts.notes)
    if LENGTH not in df.columns and RESPONSE in df.columns:
        df = df.with_columns(pl.col(RESPONSE).str.len_chars().cast(pl.Int64).alias(LENGTH))
        notes.append("the rollouts carry no token counts: lengths are counted in characters")
    skipped: list[str] = []
    steps = _tables(df, ks, skipped)
    whole = _tables(df.with_columns(pl.lit(0, dtype=pl.Int64).alias(STEP),
                                    (pl.col(STEP).cast(pl.Utf8) + "/" + pl.col(GROUP)).alias(GROUP)), ks, None)
    overall = {k: float(v) for k, v in whole.row(0, named=True).items()
               if k != STEP and isinstance(v, (int, float)) and v is not None}
    return RolloutAnalysis(steps, overall, skipped, notes, rollouts)


def step_json(row: Mapping[str, Any], ks: Sequence[int]) -> dict[str, Any]:
    """One step as the ``rollouts --json`` schema: counts, pass@k / maj@k / g-pass@k maps,
    the zero-variance split, and every other metric under ``metrics``."""
    def pick(prefix: str) -> dict[str, float]:
        return {str(k): row[f"{prefix}@{k}"] for k in ks if row.get(f"{prefix}@{k}") is not None}

    grouped = {f"{p}@{k}" for p in ("pass", "maj", "g_pass", "pass_gap") for k in ks}
    zero = {"share": "group/zero_std/share", "all_correct": "group/zero_std/all_correct",
            "all_wrong": "group/zero_std/all_wrong", "identical": "group/zero_std/identical"}
    used = grouped | set(zero.values()) | {STEP, "groups", "rollouts"}
    return {
        "step": row.get(STEP), "groups": row.get("groups"), "rollouts": row.get("rollouts"),
        "pass@k": pick("pass"), "maj@k": pick("maj"), "g_pass@k": pick("g_pass"), "pass_gap@k": pick("pass_gap"),
        "zero_variance": {name: row.get(key) for name, key in zero.items()},
        "metrics": {k: v for k, v in row.items() if k not in used and v is not None},
    }
