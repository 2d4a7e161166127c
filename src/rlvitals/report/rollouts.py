"""The report's rollout section: the groups of chosen steps with their texts, per run.

The per-step rollout metrics (σ_G, the zero-variance split, pass@k, length × correctness,
diversity …) are joined onto their run and drawn in the section of their catalog layer, where
the findings about them are; this section links to those charts. Groups are picked for
browsing: every step a finding of the run starts at (nearest step with rollouts), then steps
spread over the run; within a step the ``GROUPS_PER_STEP`` groups whose rewards stray furthest
from the step's mean come first, since those are the rollouts behind a spike, and the page says
how many of the step's groups that is. Texts are cut at ``TEXT_CAP`` characters (saying how
much was cut) so one long dump cannot swell the file; they are shown by the page as text, never
as markup.

Each rollout carries what the page filters and searches on: its ground truth (``target``: veRL's
``gts``, a mapped ``--target`` column; null without one), whether it hit the length limit
(``truncated``: the flag, or ``length >= --max-response-length`` as the analysis judged it; null when
unknown), and each group whether all its rollouts got the same reward (``zero_variance``, as
``group/zero_std/share`` counts it). The served browser (``GET /api/runs/ID/rollouts``) sends the same
groups, built here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ..rollout import (
    ANSWER,
    CORRECT,
    GROUP,
    LENGTH,
    PROMPT,
    RESPONSE,
    SAMPLE,
    SCORE,
    STEP,
    TARGET,
    TRUNCATED,
    group_table,
)
from ..words import in_lang

if TYPE_CHECKING:
    from ..rollout import Progress
    from ..rollout.analysis import RolloutAnalysis

TEXT_CAP = 4000
BROWSE_STEPS = 12   # steps spread over the run, besides the onset steps
GROUPS_PER_STEP = 16


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


def _browse_steps(available: list[int], onsets: Sequence[int]) -> list[int]:
    wanted = {s for s in (nearest(available, o) for o in onsets) if s is not None}
    if available:
        picks = np.linspace(0, len(available) - 1, min(BROWSE_STEPS, len(available))).round().astype(int)
        wanted |= {available[i] for i in picks}
    return sorted(wanted)


def zero_variance(part: pl.DataFrame) -> bool | None:
    """Whether every rollout of one group that has an outcome got the same reward (its correctness
    without scores), as ``group/zero_std/share`` counts it; None when none has an outcome.

    Example:
        >>> g = pl.DataFrame({"step": [1, 1], "group": ["a", "a"], "sample": [0, 1], "score": [1.0, 1.0]})
        >>> zero_variance(g), zero_variance(g.with_columns(score=pl.Series([0.0, None])))
        (True, True)
        >>> zero_variance(g.with_columns(score=pl.Series([0.0, 1.0]))), zero_variance(g.drop("score"))
        (False, None)
    """
    try:
        table = group_table(part)
    except ValueError:  # neither a score nor a correctness column
        return None
    return bool(table["zero_std"][0]) if table.height else None


def _group_json(step: int, gid: str, part: pl.DataFrame) -> dict[str, Any]:
    scores = part[SCORE].cast(pl.Float64).to_numpy() if SCORE in part.columns else np.array([])
    finite = scores[np.isfinite(scores)]

    def cell(row: dict[str, Any], col: str) -> Any:
        value = row.get(col)
        return _cut(value) if isinstance(value, str) else value

    rollouts = [{"sample": row[SAMPLE], "response": cell(row, RESPONSE), "score": row.get(SCORE),
                 "correct": row.get(CORRECT), "length": row.get(LENGTH), "truncated": row.get(TRUNCATED),
                 "answer": cell(row, ANSWER), "target": cell(row, TARGET)}
                for row in part.sort(SAMPLE).iter_rows(named=True)]
    prompt = part[PROMPT][0] if PROMPT in part.columns else None
    return {"step": step, "group": gid, "prompt": _cut(prompt), "n": part.height,
            "mean": float(finite.mean()) if len(finite) else None,
            "std": float(finite.std(ddof=1)) if len(finite) > 1 else None,
            "zero_variance": zero_variance(part), "rollouts": rollouts}


def step_groups(table: pl.DataFrame, step: int, limit: int = GROUPS_PER_STEP,
                first: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The first ``limit`` groups of ``step`` (those whose rewards stray furthest from the step's mean
    first) with their rollouts; see :func:`group_count` for how many the step has. The groups of ``first``
    (those a finding links to) are always kept: one the limit would leave out takes the place of the last.

    Example:
        >>> t = pl.DataFrame({"step": [1, 1, 1, 1], "group": ["a", "a", "b", "b"], "sample": [0, 1, 0, 1],
        ...                   "score": [0.0, 1.0, 0.0, 9.0]})
        >>> [g["group"] for g in step_groups(t, 1)], [g["group"] for g in step_groups(t, 1, limit=1)]
        (['b', 'a'], ['b'])
        >>> [g["group"] for g in step_groups(t, 1, limit=1, first=["a"])]
        ['a']
    """
    part = table.filter(pl.col(STEP) == step)
    if SCORE in part.columns:
        mean = part[SCORE].cast(pl.Float64).mean()
        stray = (pl.col(SCORE).cast(pl.Float64) - (mean if isinstance(mean, float) else 0.0)).abs().max()
        order = part.group_by(GROUP).agg(stray.alias("_stray")).sort(["_stray", GROUP], descending=[True, False],
                                                                     nulls_last=True)
    else:
        order = part.select(GROUP).unique().sort(GROUP)
    ids = order[GROUP].to_list()
    missing = [g for g in dict.fromkeys(first) if g in set(ids) and g not in ids[:limit]]
    groups = ids[:max(limit - len(missing), 0)] + missing
    return [_group_json(step, gid, part.filter(pl.col(GROUP) == gid)) for gid in groups]


def group_count(table: pl.DataFrame, step: int) -> int:
    """How many groups ``step`` has (the N of "n of N groups shown")."""
    return int(table.filter(pl.col(STEP) == step)[GROUP].n_unique())


def available_steps(analysis: RolloutAnalysis) -> list[int]:
    """The steps that have rollout texts, ascending."""
    return analysis.rollout_steps()


def rollout_section(analyses: Sequence[tuple[str, RolloutAnalysis]], onsets: Mapping[str, Sequence[int]],
                    charts: Sequence[str], *, progress: Progress | None = None,
                    linked: Mapping[str, Mapping[int, Sequence[str]]] | None = None) -> dict[str, Any]:
    """The groups to browse of every run's rollouts (``(run id, analysis)``), the steps of each run's
    findings (``onsets``) first, and the ids of the charts drawn from the rollouts. ``linked`` holds, per run
    and step, the groups a finding links to (a spike's extreme rollouts): kept first at their step.
    ``progress`` is told ``("rollouts", steps picked, of how many)``, every run's steps counted together."""
    runs, groups = [], []
    picked = []  # (run id, analysis, table, steps with rollouts, steps to browse)
    for rid, analysis in analyses:
        available = analysis.rollout_steps()
        steps = _browse_steps(available, onsets.get(rid, ()))
        # only the steps browsed are read (again, from their shards when the rollouts were read shard by shard)
        picked.append((rid, analysis, analysis.table_at(steps), available, steps))
    done, total = 0, sum(len(steps) for *_, steps in picked)
    for rid, analysis, table, available, steps in picked:
        for step in steps:
            if progress is not None:
                progress("rollouts", done, total)
            pinned = (linked or {}).get(rid, {}).get(step, ())
            groups += [{**g, "run": rid} for g in step_groups(table, step, first=pinned)]
            done += 1
        runs.append({"run": rid, "available": available, "steps": steps,
                     "totals": {step: group_count(table, step) for step in steps},
                     "skipped": [str(n) for n in analysis.skipped],
                     "skipped_zh": [in_lang(n, "zh") for n in analysis.skipped],
                     "notes": [str(n) for n in analysis.notes], "notes_zh": [in_lang(n, "zh") for n in analysis.notes]})
    if progress is not None:
        progress("rollouts", total, total)
    return {"charts": list(charts), "runs": runs, "groups": groups, "text_cap": TEXT_CAP,
            "groups_per_step": GROUPS_PER_STEP}
