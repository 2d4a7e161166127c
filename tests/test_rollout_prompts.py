from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvitals.rollout import prompts as P


@given(st.lists(st.floats(0, 10), min_size=1, max_size=12))
def test_gini_matches_pairwise_reference(xs):
    n, mean = len(xs), sum(xs) / len(xs)
    want = sum(abs(a - b) for a in xs for b in xs) / (2 * n * n * mean) if mean > 0 else math.nan
    got = P.gini(np.array(xs))
    assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-9)


def test_hand_values():
    assert P.gini(np.array([0.0, 0.0, 0.0, 1.0])) == pytest.approx(0.75)
    assert P.gini(np.ones(5)) == 0
    assert P.top_share(np.array([10.0] + [1.0] * 9)) == pytest.approx(10 / 19)
    assert P.difficulty([True, None]) == "easy" and P.difficulty([True, False]) == "medium"
    assert P.difficulty([False]) == "hard" and P.difficulty([None]) is None


def test_table():
    df = pl.DataFrame({"step": [0] * 6, "group": ["e", "e", "m", "m", "h", "h"],
                       "score": [1.0, 1, 1, 0, 0, 0], "correct": [True, True, True, False, False, False],
                       "advantage": [0.0, 0, 1, -1, 0, 0]})
    row = P.prompts_table(df).row(0, named=True)
    assert row["prompt/reward_gini"] == pytest.approx(P.gini(np.array([1, 0.5, 0])))
    assert row["prompt/top_share"] == pytest.approx(2 / 3)
    for b in ("easy", "medium", "hard"):
        assert row[f"prompt/difficulty/{b}/share"] == pytest.approx(1 / 3)
    assert row["prompt/difficulty/medium/adv_share"] == 1.0 and row["prompt/difficulty/easy/adv_share"] == 0.0
    with pytest.raises(ValueError, match="score"):
        P.prompts_table(df.drop("score", "correct"))


def test_id_ood_gap():
    df = pl.DataFrame({"step": [0, 0, 0, 1], "score": [1.0, 0.0, 0.5, 1.0],
                       "split": ["train", "ood", "ood", "train"], "source": ["a", "b", "b", "a"]})
    out = P.id_ood_gap(df)
    assert out["val/id_ood_gap"].to_list() == [pytest.approx(0.75), None]
    assert P.id_ood_gap(df, by="source")["val/id_ood_gap"][0] == pytest.approx(0.75)
    with pytest.raises(ValueError, match="split"):
        P.id_ood_gap(df.drop("split"))
