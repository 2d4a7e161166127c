"""The rollouts at the extremes of one step (what a gradient spike at that step most likely came from)."""

from __future__ import annotations

import polars as pl
import pytest

from rlvitals.rollout.extremes import extreme_rollouts


def _step(**cols: list[object]) -> pl.DataFrame:
    n = len(next(iter(cols.values())))
    return pl.DataFrame({"step": [3] * n, "group": ["a", "a", "a", "b", "b", "b"][:n], "sample": [0, 1, 2, 0, 1, 2][:n],
                         **cols})


def test_a_lone_correct_answer_carries_the_largest_group_z() -> None:
    t = _step(score=[0.0, 0.0, 1.0, 1.0, 1.0, 0.0], length=[5, 6, 7, 8, 9, 10])
    named = {(r["group"], r["sample"]): r for r in extreme_rollouts(t, 3)}
    lone = named[("a", 2)]
    assert "max |group z|" in lone["why"] and lone["group_z"] == pytest.approx(2 ** 0.5)
    assert lone["group_size"] == 3 and lone["group_mean"] == pytest.approx(1 / 3) and lone["reward"] == 1.0
    assert named[("b", 2)]["why"] == ["longest"]


def test_a_logged_advantage_is_named_first() -> None:
    t = _step(score=[0.0, 1.0, 0.0, 1.0, 0.0, 0.0], advantage=[0.1, -3.0, 0.2, 0.5, 0.0, 0.0])
    first = extreme_rollouts(t, 3)[0]
    assert (first["group"], first["sample"], first["why"][0], first["advantage"]) == ("a", 1, "max |advantage|", -3.0)


def test_at_most_four_rollouts_a_step_and_none_for_a_step_without_rollouts() -> None:
    t = _step(score=[0.0, 0.5, 1.0, 2.0, 3.0, 9.0], advantage=[5.0, 0.0, 0.0, 0.0, 0.0, 0.0],
              length=[1, 2, 30, 4, 5, 6])
    assert len(extreme_rollouts(t, 3)) <= 4 and extreme_rollouts(t, 99) == []


def test_without_scores_only_the_length_names_a_rollout() -> None:
    t = _step(length=[5, 50, 7])
    (only,) = extreme_rollouts(t, 3)
    assert (only["sample"], only["why"], only["reward"], only["group_z"]) == (1, ["longest"], None, None)
