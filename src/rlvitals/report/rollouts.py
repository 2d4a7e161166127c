"""The report's rollout section: per-step rollout metrics as charts, and groups with their texts.

Charts come from :func:`rlvitals.analyze_rollouts`' per-step frame (σ_G, the zero-variance split,
pass@k, length × correctness, diversity …); a family of keys that differ only in k or quantile
shares one chart. Groups are picked for browsing: every step a finding starts at (nearest step
with rollouts), then steps spread over the run; within a step the groups whose rewards stray
furthest from the step's mean come first, since those are the rollouts behind a spike.
Texts are cut at ``TEXT_CAP`` characters (saying how much was cut) so one long dump cannot
swell the file; they are shown by the page as text, never as markup.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ..catalog import Catalog
from ..rollout.schema import ANSWER, CORRECT, GROUP, LENGTH, PROMPT, RESPONSE, SAMPLE, SCORE, STEP
from .charts import Page, trace

if TYPE_CHECKING:
    from ..rollout.analysis import RolloutAnalysis

TEXT_CAP = 4000
BROWSE_STEPS = 12   # steps spread over the run, besides the onset steps
GROUPS_PER_STEP = 16
_FAMILY = (
    (re.compile(r"^(pass|g_pass|maj|pass_gap)@\d+$"), r"\1@k"),
    (re.compile(r"^(rollout/correct_by_length)/q\d+$"), r"\1"),
    (re.compile(r"^(group/zero_std)/.+$"), r"\1"),
)


def _family(key: str) -> str:
    for pattern, repl in _FAMILY:
        if pattern.match(key):
            return pattern.sub(repl, key)
    return key


def _cut(text: str | None) -> str | None:
    if text is None or len(text) <= TEXT_CAP:
        return text
    return text[:TEXT_CAP] + f" … [+{len(text) - TEXT_CAP} chars]"


def nearest(steps: Sequence[int], step: int) -> int | None:
    """The step of ``steps`` closest to ``step`` (the earlier on a tie); None when there are none.

    Example:
        >>> nearest([10, 20, 30], 26), nearest([], 3)
        (30, None)
    """
    if not steps:
        return None
    return min(steps, key=lambda s: (abs(s - step), s))


def _charts(page: Page, steps: pl.DataFrame, catalog: Catalog) -> list[str]:
    families: dict[str, list[str]] = {}
    for col in steps.columns:
        if col != STEP and catalog.find(col) is not None and steps[col].null_count() < steps.height:
            families.setdefault(_family(col), []).append(col)
    cids = []
    x = steps[STEP].to_numpy()
    for members in families.values():
        traces = []
        for key in members:
            y = steps[key].cast(pl.Float64).fill_null(np.nan).to_numpy()
            keep = steps[key].is_not_null().to_numpy()  # null: not computed at that step, not a NaN logged
            traces.append(trace(key, "rollouts", key, x[keep], y[keep], page.buckets))
        cids.append(page.add(members, traces))
    return cids


def _browse_steps(available: list[int], onsets: Sequence[int]) -> list[int]:
    wanted = {s for s in (nearest(available, o) for o in onsets) if s is not None}
    if available:
        picks = np.linspace(0, len(available) - 1, min(BROWSE_STEPS, len(available))).round().astype(int)
        wanted |= {available[i] for i in picks}
    return sorted(wanted)


def _group_json(step: int, gid: str, part: pl.DataFrame) -> dict[str, Any]:
    scores = part[SCORE].cast(pl.Float64).to_numpy() if SCORE in part.columns else np.array([])
    finite = scores[np.isfinite(scores)]

    def cell(row: dict[str, Any], col: str) -> Any:
        value = row.get(col)
        return _cut(value) if isinstance(value, str) else value

    rollouts = [{"sample": row[SAMPLE], "response": cell(row, RESPONSE), "score": row.get(SCORE),
                 "correct": row.get(CORRECT), "length": row.get(LENGTH), "answer": cell(row, ANSWER)}
                for row in part.sort(SAMPLE).iter_rows(named=True)]
    prompt = part[PROMPT][0] if PROMPT in part.columns else None
    return {"step": step, "group": gid, "prompt": _cut(prompt), "n": part.height,
            "mean": float(finite.mean()) if len(finite) else None,
            "std": float(finite.std(ddof=1)) if len(finite) > 1 else None, "rollouts": rollouts}


def step_groups(table: pl.DataFrame, step: int) -> list[dict[str, Any]]:
    part = table.filter(pl.col(STEP) == step)
    if SCORE in part.columns:
        mean = part[SCORE].cast(pl.Float64).mean()
        stray = (pl.col(SCORE).cast(pl.Float64) - (mean if isinstance(mean, float) else 0.0)).abs().max()
        order = part.group_by(GROUP).agg(stray.alias("_stray")).sort(["_stray", GROUP], descending=[True, False],
                                                                     nulls_last=True)
    else:
        order = part.select(GROUP).unique().sort(GROUP)
    groups = order[GROUP].to_list()[:GROUPS_PER_STEP]
    return [_group_json(step, gid, part.filter(pl.col(GROUP) == gid)) for gid in groups]


def rollout_section(page: Page, analysis: RolloutAnalysis, onsets: Sequence[int], catalog: Catalog) -> dict[str, Any]:
    """Charts of the per-step rollout metrics and the groups to browse (see the module docstring)."""
    cids = _charts(page, analysis.steps, catalog)
    table = analysis.rollouts.table if analysis.rollouts is not None else pl.DataFrame({STEP: []})
    available = sorted(int(s) for s in table[STEP].unique().to_list()) if table.height else []
    groups = [g for step in _browse_steps(available, onsets) for g in step_groups(table, step)]
    return {"charts": cids, "steps": sorted({g["step"] for g in groups}), "available": available,
            "groups": groups, "skipped": list(analysis.skipped), "notes": list(analysis.notes),
            "text_cap": TEXT_CAP}
