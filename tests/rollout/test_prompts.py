from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
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


prompt_rows = st.lists(st.tuples(st.integers(0, 1), st.sampled_from([f"g{i}" for i in range(24)]),
                                 st.sampled_from([0.0, 1.0, 0.5, -1.0, 2.0]), st.one_of(st.none(), st.booleans()),
                                 st.sampled_from([0.0, 0.5, -1.5, 2.0])), min_size=1, max_size=80)


def ref_prompts(rows, top=0.1):
    """Per step: top share, difficulty shares and |advantage| shares, by plain loops over the groups."""
    out = {}
    for step in {r[0] for r in rows}:
        groups: dict[str, list] = {}
        for r in rows:
            if r[0] == step:
                groups.setdefault(r[1], []).append(r)
        pos = sorted((sum(max(r[2], 0.0) for r in g) for g in groups.values()), reverse=True)
        k = math.ceil(top * len(pos))
        res = {"prompt/top_share": sum(pos[:k]) / sum(pos) if sum(pos) > 0 else None}
        buckets: dict[str, list[float]] = {"easy": [], "medium": [], "hard": []}
        for g in groups.values():
            known = [r[3] for r in g if r[3] is not None]
            if not known:
                continue
            name = "easy" if all(known) else "hard" if not any(known) else "medium"
            buckets[name].append(sum(abs(r[4]) for r in g))
        n = sum(len(v) for v in buckets.values())
        total = sum(sum(v) for v in buckets.values())
        for name, advs in buckets.items():
            res[f"prompt/difficulty/{name}/share"] = len(advs) / n if n else None
            res[f"prompt/difficulty/{name}/adv_share"] = sum(advs) / total if total > 0 else None
        out[step] = res
    return out


@settings(max_examples=80)
@given(prompt_rows)
def test_top_share_difficulty_and_adv_share_match_plain_loops(rows):
    df = pl.DataFrame(rows, schema={"step": pl.Int64, "group": pl.Utf8, "score": pl.Float64, "correct": pl.Boolean,
                                    "advantage": pl.Float64}, orient="row")
    want = ref_prompts(rows)
    for row in P.prompts_table(df).iter_rows(named=True):
        for key, value in want[row["step"]].items():
            assert row[key] == (None if value is None else pytest.approx(value, abs=1e-12)), key


def test_top_share_takes_the_ceiling_of_a_tenth() -> None:
    # 11 prompts: the top tenth is ceil(1.1) = 2 prompts, as the plain loop says
    rows = [(0, f"g{i}", float(r), True, 0.0) for i, r in enumerate([5, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1])]
    df = pl.DataFrame(rows, schema=["step", "group", "score", "correct", "advantage"], orient="row")
    want = ref_prompts(rows)[0]["prompt/top_share"]
    assert want == pytest.approx(9 / 18)
    assert P.prompts_table(df)["prompt/top_share"][0] == pytest.approx(want)
