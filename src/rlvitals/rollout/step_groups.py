"""GiGPO step-level groups: the same environment state reached by the trajectories of one episode group.

GiGPO (Feng et al. 2025, arXiv 2505.10978) adds a step-level advantage to the episode
advantage: inside an episode group (here a rollout group: one task, one step), every visit of an
identical environment state ("anchor state") joins one step-level group, and each visit's return is
compared with the mean return of its step-level group. Definitions used here:

- A *visit* is one position ``t`` of a rollout's ``states`` list (null entries are ignored). Its action
  is ``actions[t]`` when the rollout has an ``actions`` list that long and the entry is not null, else
  it has none (a final state after the last action, for example).
- A *step-level group* is the set of visits with the same state text within one (``step``, ``group``),
  across the group's trajectories and within one trajectory alike (GiGPO hashes every step sample).
- Per training step: ``group/step_groups/count`` (number of step-level groups),
  ``group/step_groups/size/mean`` (visits per step-level group),
  ``group/step_groups/singleton_share`` (share of step-level groups with one visit: the mean is the
  value itself, so the step advantage is 0 and gives no signal) and, with ``actions``,
  ``group/step_groups/multi_action_share`` (share of step-level groups whose visits took at least two
  distinct actions: only there can the step advantage tell actions apart).

Every aggregate is an integer count, so ``update`` / ``merge`` / ``compute`` over chunks of whole groups
give exactly the unsharded result.

>>> df = pl.DataFrame({"step": [0, 0], "group": ["g", "g"], "sample": [0, 1],
...                    "states": [["s0", "s1"], ["s0", "s2"]], "actions": [["a", "b"], ["c", "d"]]})
>>> step_groups_table(df).select("group/step_groups/count", "group/step_groups/multi_action_share").row(0)
(3, 0.3333333333333333)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import polars as pl

from ..words import Words
from .schema import ACTIONS, GROUP, STATES, STEP

__all__ = ["StepGroupState", "compute", "merge", "step_groups_table", "update"]

_COUNTS = ("step_groups", "visits", "singletons", "multi_action")
KEYS = ("group/step_groups/count", "group/step_groups/size/mean", "group/step_groups/singleton_share",
        "group/step_groups/multi_action_share")


@dataclass(frozen=True)
class StepGroupState:
    """Mergeable partial state: per training step, integer counts of step-level groups, visits,
    singleton groups and multi-action groups; ``actions`` says whether the chunks carried actions."""

    actions: bool | None = None
    steps: dict[int, dict[str, int]] = field(default_factory=dict)


def _visits(chunk: pl.DataFrame) -> pl.DataFrame:
    """One row per visit: step, group, state, action (null when the visit has none)."""
    t = pl.int_ranges(0, pl.col(STATES).list.len()).alias("_t")
    cols = [STEP, GROUP, STATES] + ([ACTIONS] if ACTIONS in chunk.columns else [])
    rows = chunk.select(cols).drop_nulls(STATES).with_columns(t).explode(STATES, "_t")
    action = (pl.col(ACTIONS).list.get(pl.col("_t"), null_on_oob=True) if ACTIONS in chunk.columns
              else pl.lit(None, pl.Utf8))
    return rows.select(STEP, GROUP, STATES, action.alias("_action")).drop_nulls(STATES)


def _counts(chunk: pl.DataFrame) -> dict[int, dict[str, int]]:
    per = _visits(chunk).group_by(STEP, GROUP, STATES).agg(
        size=pl.len(), acts=pl.col("_action").drop_nulls().n_unique())
    agg = per.group_by(STEP).agg(
        step_groups=pl.len(), visits=pl.col("size").sum(), singletons=(pl.col("size") == 1).sum(),
        multi_action=(pl.col("acts") >= 2).sum())
    out = {int(s): dict.fromkeys(_COUNTS, 0) for s in chunk.get_column(STEP).unique().to_list()}
    out.update({int(r[STEP]): {k: int(r[k]) for k in _COUNTS} for r in agg.iter_rows(named=True)})
    return out


def update(state: StepGroupState | None, chunk: pl.DataFrame) -> StepGroupState:
    """Fold a chunk of whole rollout groups into ``state`` (None: a new state). Needs ``step``,
    ``group`` and ``states``; ``actions`` is optional."""
    missing = [c for c in (STEP, GROUP, STATES) if c not in chunk.columns]
    if missing:
        raise ValueError(Words(f"step-level groups need the rollout column(s) {missing}; the table has {chunk.columns}",
                               f"步级分组需要 rollout 列 {missing}；表中只有这些列：{chunk.columns}"))
    state = state if state is not None else StepGroupState()
    new = StepGroupState(actions=ACTIONS in chunk.columns, steps=_counts(chunk) if chunk.height else {})
    return merge(state, new)


def merge(a: StepGroupState, b: StepGroupState) -> StepGroupState:
    """Combine two states built from disjoint sets of rollout groups."""
    steps = {s: dict(c) for s, c in a.steps.items()}
    for step, counts in b.steps.items():
        mine = steps.setdefault(step, dict.fromkeys(_COUNTS, 0))
        for key, value in counts.items():
            mine[key] += value
    seen = [x for x in (a.actions, b.actions) if x is not None]
    return replace(a, actions=any(seen) if seen else None, steps=steps)


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def compute(state: StepGroupState) -> pl.DataFrame:
    """One row per training step with the keys of the module docstring (``multi_action_share`` only
    when the rollouts carry actions); steps without any visit give nulls."""
    rows = []
    for step in sorted(state.steps):
        c = state.steps[step]
        row: dict[str, float | int | None] = {
            STEP: step, KEYS[0]: c["step_groups"], KEYS[1]: _ratio(c["visits"], c["step_groups"]),
            KEYS[2]: _ratio(c["singletons"], c["step_groups"])}
        if state.actions:
            row[KEYS[3]] = _ratio(c["multi_action"], c["step_groups"])
        rows.append(row)
    schema = {STEP: pl.Int64(), KEYS[0]: pl.Int64(), **{k: pl.Float64() for k in KEYS[1:3 + bool(state.actions)]}}
    return pl.DataFrame(rows, schema=schema, orient="row")


def step_groups_table(df: pl.DataFrame) -> pl.DataFrame:
    """Per-step step-level group metrics: ``compute(update(None, df))`` (see the module docstring)."""
    return compute(update(None, df))
