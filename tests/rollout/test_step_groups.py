"""GiGPO step-level groups against a plain-Python reference, hand cases and the missing-column error."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvitals.rollout.step_groups import compute, merge, step_groups_table, update

SCHEMA = {"step": pl.Int64, "group": pl.Utf8, "states": pl.List(pl.Utf8), "actions": pl.List(pl.Utf8)}


def reference(rows: list[dict[str, Any]]) -> dict[int, dict[str, float]]:
    """Loops: a visit is (rollout, t); its action is actions[t] when there is one."""
    visits: dict[tuple[int, str, str], list[str | None]] = {}
    steps: set[int] = set()
    for r in rows:
        steps.add(r["step"])
        acts = r["actions"] or []
        for t, s in enumerate(r["states"] or []):
            if s is not None:
                visits.setdefault((r["step"], r["group"], s), []).append(acts[t] if t < len(acts) else None)
    out: dict[int, dict[str, float]] = {}
    for step in steps:
        mine = [v for (s, _, _), v in visits.items() if s == step]
        n = len(mine)
        out[step] = {"group/step_groups/count": n,
                     "group/step_groups/size/mean": sum(map(len, mine)) / n if n else None,
                     "group/step_groups/singleton_share": sum(len(v) == 1 for v in mine) / n if n else None,
                     "group/step_groups/multi_action_share":
                         sum(len({a for a in v if a is not None}) >= 2 for v in mine) / n if n else None}
    return out


state = st.sampled_from(["s0", "s1", "s2", None])
action = st.sampled_from(["left", "right", None])
row = st.fixed_dictionaries({
    "step": st.integers(0, 2), "group": st.sampled_from(["a", "b"]),
    "states": st.none() | st.lists(state, max_size=5), "actions": st.none() | st.lists(action, max_size=5)})


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(row, min_size=1, max_size=12))
def test_matches_the_plain_reference(rows: list[dict[str, Any]]) -> None:
    got = {r["step"]: r for r in step_groups_table(pl.DataFrame(rows, schema=SCHEMA)).iter_rows(named=True)}
    want = reference(rows)
    assert set(got) == set(want)
    for step, values in want.items():
        for key, value in values.items():
            assert got[step][key] == (pytest.approx(value) if value is not None else None), (step, key)


def test_gigpo_example_by_hand() -> None:
    # two trajectories of one task from the same start: both pass the kitchen; one revisits the hall
    df = pl.DataFrame({"step": [3, 3, 3], "group": ["t", "t", "u"],
                       "states": [["hall", "kitchen", "hall"], ["hall", "kitchen"], ["hall"]],
                       "actions": [["north", "open", "south"], ["east", "open"], ["north"]]}, schema=SCHEMA)
    row = step_groups_table(df).row(0, named=True)
    # groups: t/hall (3 visits; north, east, south), t/kitchen (2; open, open), u/hall (1)
    assert row["group/step_groups/count"] == 3
    assert row["group/step_groups/size/mean"] == 2.0
    assert row["group/step_groups/singleton_share"] == pytest.approx(1 / 3)
    assert row["group/step_groups/multi_action_share"] == pytest.approx(1 / 3)


def test_without_actions_and_merged_shards() -> None:
    df = pl.DataFrame({"step": [0, 0, 1], "group": ["a", "b", "a"], "states": [["x", "x"], ["y"], []]},
                      schema={k: v for k, v in SCHEMA.items() if k != "actions"})
    whole = step_groups_table(df)
    assert "group/step_groups/multi_action_share" not in whole.columns
    assert whole.rows() == [(0, 2, 1.5, 0.5), (1, 0, None, None)]
    parts = merge(update(None, df.filter(pl.col("group") == "b")), update(None, df.filter(pl.col("group") == "a")))
    assert compute(parts).rows() == whole.rows()


def test_needs_states() -> None:
    with pytest.raises(ValueError, match=r"step-level groups need the rollout column\(s\) \['states'\]"):
        step_groups_table(pl.DataFrame({"step": [0], "group": ["a"]}))
