"""Group-scale table metrics against a plain-Python reference, odd cases, and sharded == unsharded."""

from __future__ import annotations

import math
import random
import statistics

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from rlvitals.rollout.groups import GroupState, compute, group_table, merge, step_metrics, update
from rlvitals.rollout.passk import maj_at_k_answers

KS = (1, 2, 4)


def _frame(rows: list[tuple[int, str, float, str | None]]) -> pl.DataFrame:
    samples: dict[tuple[int, str], int] = {}
    out = []
    for step, group, score, answer in rows:
        i = samples.get((step, group), 0)
        samples[(step, group)] = i + 1
        out.append({"step": step, "group": group, "sample": i, "score": score, "answer": answer})
    return pl.DataFrame(out, schema={"step": pl.Int64, "group": pl.Utf8, "sample": pl.Int64,
                                     "score": pl.Float64, "answer": pl.Utf8})


def _reference(rows: list[tuple[int, str, float, str | None]], ks: tuple[int, ...]) -> dict[int, dict[str, float]]:
    """Loops and math.comb; maj@k from the brute-force-checked single-group function."""
    groups: dict[int, dict[str, list[tuple[float, str | None]]]] = {}
    for step, g, s, a in rows:
        groups.setdefault(step, {}).setdefault(g, []).append((s, a))
    out: dict[int, dict[str, float]] = {}
    for step, gs in groups.items():
        per: dict[str, list[float]] = {}
        zero = all_c = all_w = sig_n = total = 0
        for items in gs.values():
            scores = [s for s, _ in items]
            n, c = len(items), sum(s >= 1.0 for s in scores)
            total += n
            if n >= 2:
                per.setdefault("std", []).append(statistics.stdev(scores))
            # population sigma_G over every group; a group of one has sigma 0
            per.setdefault("group/reward_std_pop/mean", []).append(statistics.pstdev(scores))
            if max(scores) == min(scores):
                zero += 1
                all_c += min(scores) >= 1.0
                all_w += max(scores) <= 0.0
            else:
                sig_n += n
            for k in ks:
                if n >= k:
                    pk = 1 - math.comb(n - c, k) / math.comb(n, k)
                    per.setdefault(f"pass@{k}", []).append(pk)
                    if any(a is not None for _, a in items):  # a group with no answer has no vote
                        maj = maj_at_k_answers([a for _, a in items], [s >= 1.0 for s in scores], k)
                        per.setdefault(f"maj@{k}", []).append(maj)
                        per.setdefault(f"reasoning/self_consistency_gap@{k}", []).append(maj - c / n)
                    per.setdefault(f"pass_gap@{k}", []).append(pk - c / n)
                    need = max(math.ceil(k * 0.5), 1)  # G-Pass@k at tau = 0.5: at least half of k correct
                    gp = sum(math.comb(c, x) * math.comb(n - c, k - x) for x in range(need, k + 1)) / math.comb(n, k)
                    per.setdefault(f"g_pass@{k}", []).append(gp)
        res = {key: sum(v) / len(v) for key, v in per.items()}
        res.update({"group/zero_std/share": zero / len(gs), "group/zero_std/all_correct": all_c / len(gs),
                    "group/zero_std/all_wrong": all_w / len(gs), "group/effective_batch": sig_n / total,
                    "group/size/mean": total / len(gs)})
        if all(len(items) == 1 for items in gs.values()):  # no group to compare within: no shares at all
            res.update(dict.fromkeys(("group/zero_std/share", "group/zero_std/all_correct",
                                      "group/zero_std/all_wrong", "group/effective_batch"), math.nan))
        out[step] = res
    return out


rows_strategy = st.lists(
    st.tuples(st.integers(0, 2), st.sampled_from("abcd"), st.sampled_from([0.0, 1.0, 0.5]),
              st.sampled_from(["x", "y", "z", None])),
    min_size=1, max_size=40)


@settings(max_examples=60)
@given(rows_strategy)
def test_step_metrics_match_reference(rows: list[tuple[int, str, float, str | None]]) -> None:
    got = step_metrics(_frame(rows), ks=KS)
    ref = _reference(rows, KS)
    assert got.get_column("step").to_list() == sorted(ref)
    for row in got.iter_rows(named=True):
        want = ref[row["step"]]
        assert row["group/reward_std/mean"] == pytest.approx(want.get("std", math.nan), abs=1e-12, nan_ok=True)
        for key, value in want.items():
            if key != "std":
                assert row[key] == pytest.approx(value, abs=1e-12, nan_ok=True), key
        for k in KS:
            if f"pass@{k}" not in want:
                assert math.isnan(row[f"pass@{k}"]) and math.isnan(row[f"maj@{k}"]) and math.isnan(row[f"g_pass@{k}"])
            elif f"maj@{k}" not in want:
                assert math.isnan(row[f"maj@{k}"]) and math.isnan(row[f"reasoning/self_consistency_gap@{k}"])


def test_group_table_flags_and_non_binary_scores() -> None:
    df = _frame([(0, "a", 0.3, None), (0, "a", 0.7, None), (0, "b", 0.5, None), (0, "b", 0.5, None),
                 (0, "c", 1.0, None), (0, "c", 1.0, None), (0, "d", 0.0, None), (0, "e", 1.0, None)])
    t = group_table(df)
    rows = {r["group"]: r for r in t.iter_rows(named=True)}
    assert rows["a"]["std_pop"] == pytest.approx(0.2) and rows["a"]["std_sample"] == pytest.approx(0.2 * math.sqrt(2))
    assert (rows["a"]["zero_std"], rows["b"]["identical"], rows["c"]["all_correct"]) == (False, True, True)
    assert rows["d"]["all_wrong"] and rows["e"]["all_correct"]  # n = 1: zero variance, no GRPO signal
    assert rows["e"]["std_sample"] is None or math.isnan(rows["e"]["std_sample"])
    m = step_metrics(df, ks=(1, 2)).row(0, named=True)
    assert m["group/zero_std/share"] == pytest.approx(4 / 5)
    assert m["group/zero_std/identical"] == pytest.approx(1 / 5)
    assert m["group/zero_std/all_correct"] == pytest.approx(2 / 5)
    assert m["group/effective_batch"] == pytest.approx(2 / 8)
    assert m["pass@2"] == pytest.approx(1 / 3)  # only a, b, c have n >= 2: a, b → 0; c → 1


def test_correct_column_wins_over_score_and_threshold() -> None:
    df = pl.DataFrame({"step": [1, 1, 1], "group": ["g"] * 3, "sample": [0, 1, 2], "score": [0.5, 0.5, 0.5],
                       "correct": [True, False, None]})
    t = group_table(df, correct_threshold=0.4).row(0, named=True)
    # a null correct is unknown, not filled from score >= 0.4 and not wrong: out of c and known, not of n
    assert (t["n"], t["known"], t["c"], t["identical"]) == (3, 2, 1, True)
    only_correct = df.drop("score")
    assert group_table(only_correct).row(0, named=True)["mean"] == pytest.approx(1 / 2)
    m = step_metrics(df, ks=(1, 2, 3), correct_threshold=0.4).row(0, named=True)
    assert m["pass@1"] == pytest.approx(1 / 2) and m["pass@2"] == 1.0 and math.isnan(m["pass@3"])
    with pytest.raises(ValueError, match="'score' or 'correct'"):
        group_table(df.drop("score", "correct"))


def test_unknown_correctness_is_not_wrong() -> None:
    # every reward null or NaN: nothing to say about the group (it used to read as all wrong)
    df = pl.DataFrame({"step": [1] * 4, "group": ["g"] * 4, "sample": [0, 1, 2, 3],
                       "score": [None, float("nan"), None, None]}, schema_overrides={"score": pl.Float64})
    assert step_metrics(df, ks=(1,)).height == 0
    # scores known, correctness unknown everywhere: σ_G and the zero-variance share stand, pass@k and
    # the correct/wrong split are undefined (NaN), not 0
    df = pl.DataFrame({"step": [1] * 4, "group": ["a", "a", "b", "b"], "sample": [0, 1, 0, 1],
                       "score": [1.5, 0.5, 1.0, 1.0], "correct": [None, None, None, None]},
                      schema_overrides={"correct": pl.Boolean})
    m = step_metrics(df, ks=(1, 2)).row(0, named=True)
    assert m["group/zero_std/share"] == 0.5 and m["group/reward_std/mean"] == pytest.approx(math.sqrt(0.5) / 2)
    for key in ("pass@1", "pass@2", "g_pass@2", "pass_gap@2", "group/zero_std/all_correct",
                "group/zero_std/all_wrong", "group/zero_std/identical"):
        assert math.isnan(m[key]), key
    # a few null scores among known ones are left out of the group, not counted wrong
    df = pl.DataFrame({"step": [1] * 3, "group": ["g"] * 3, "sample": [0, 1, 2], "score": [1.0, None, 0.0],
                       "answer": ["5", "5", "6"]})
    m = step_metrics(df, ks=(1, 2, 3)).row(0, named=True)
    assert (m["pass@1"], m["pass@2"], m["group/size/max"]) == (0.5, 1.0, 2) and math.isnan(m["pass@3"])
    assert m["maj@2"] == 0.5


def test_mixed_sizes_average_only_groups_with_enough_rollouts() -> None:
    df = _frame([(0, "a", 1.0, "x")] * 1 + [(0, "b", 0.0, "y"), (0, "b", 1.0, "x"), (0, "b", 1.0, "x")])
    m = step_metrics(df, ks=(1, 2, 3, 4)).row(0, named=True)
    assert m["pass@1"] == pytest.approx((1 + 2 / 3) / 2)
    assert m["pass@3"] == 1.0 and m["maj@3"] == 1.0  # only group b
    assert math.isnan(m["pass@4"]) and math.isnan(m["g_pass@4"])
    assert m["group/size/mean"] == 2.0


def test_empty_table_and_bad_ks() -> None:
    empty = _frame([])
    out = step_metrics(empty)
    assert out.height == 0 and "pass@16" in out.columns and "group/zero_std/share" in out.columns
    with pytest.raises(ValueError, match="ks must be positive"):
        step_metrics(empty, ks=(0,))


def _random_table(seed: int, steps: int = 3, groups: int = 40) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(steps):
        for g in range(groups):
            n = int(rng.integers(1, 9))
            p = rng.random()
            for _ in range(n):
                ok = rng.random() < p
                ans = None if rng.random() < 0.1 else ("gold" if ok else str(rng.integers(0, 3)))
                rows.append((s, f"g{g}", float(ok), ans))
    return _frame(rows)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sharded_equals_unsharded(seed: int) -> None:
    df = _random_table(seed)
    whole = step_metrics(df)
    keys = df.select("step", "group").unique().rows()
    random.Random(seed).shuffle(keys)
    shards = [keys[i::4] for i in range(4)]
    states = []
    for shard in shards:
        part = df.join(pl.DataFrame(shard, schema=["step", "group"], orient="row"), on=["step", "group"])
        states.append(update(GroupState(), part))
    merged = compute(merge(merge(states[0], states[1]), merge(states[2], states[3])))
    assert_frame_equal(merged, whole, check_exact=True)  # bit for bit, not approximately
    reverse = compute(merge(merge(states[3], states[2]), merge(states[1], merge(update(None, df.head(0)), states[0]))))
    assert_frame_equal(reverse, whole, check_exact=True)


def test_merge_rejects_different_settings() -> None:
    with pytest.raises(ValueError, match="different ks"):
        merge(GroupState(ks=(1,)), GroupState(ks=(1, 2)))


def _sized(sizes: dict[int, list[int]]) -> pl.DataFrame:
    rows = [(step, f"g{i}", 1.0 if j == 0 else 0.0, None)
            for step, ns in sizes.items() for i, n in enumerate(ns) for j in range(n)]
    return _frame(rows)


def test_group_size_distribution() -> None:
    # step 0: three full groups of 4, one aborted to 2 and one to 1; step 1: a tie 4 vs 2, the larger is the mode
    out = step_metrics(_sized({0: [4, 4, 2, 4, 1], 1: [2, 4]}), ks=(1,))
    assert out.select("group/size/min", "group/size/max", "group/size/below_mode").rows() == [(1, 4, 2), (2, 4, 1)]
    assert out["group/size/mean"].to_list() == [3.0, 3.0]
    assert out["group_sizes"].to_list()[0] == [{"size": 4, "count": 3}, {"size": 2, "count": 1},
                                                {"size": 1, "count": 1}]
    same = step_metrics(_sized({5: [3, 3]}), ks=(1,))
    assert same.select("group/size/min", "group/size/max", "group/size/below_mode").row(0) == (3, 3, 0)


def test_update_options_must_match_the_state() -> None:
    df = _sized({0: [2]})
    with pytest.raises(ValueError, match=r"options \{'tau': 0.9\} differ from the state's settings"):
        update(update(None, df), df, tau=0.9)


def test_a_nan_score_is_not_correct() -> None:
    # polars orders NaN above every number: a bare `score >= 1.0` called a NaN score correct
    df = pl.DataFrame({"step": [1, 1, 1], "group": ["a"] * 3, "sample": [0, 1, 2], "score": [float("nan"), 0.0, 1.0]})
    assert group_table(df)["c"].to_list() == [1]
    with_flags = df.with_columns(pl.Series("correct", [None, False, True], dtype=pl.Boolean))
    assert group_table(with_flags)["c"].to_list() == [1]


def test_a_group_where_no_rollout_states_an_answer_has_no_vote() -> None:
    # group a votes (x, x, y: the majority x is right); group b states no answer at all: voting among its
    # singletons would score its pass@1 and pull the step's self-consistency gap towards 0
    df = _frame([(0, "a", 1.0, "x"), (0, "a", 1.0, "x"), (0, "a", 0.0, "y"),
                 (0, "b", 1.0, None), (0, "b", 0.0, None), (0, "b", 0.0, None)])
    m = step_metrics(df, ks=(3,)).row(0, named=True)
    assert m["maj@3"] == pytest.approx(1.0) and m["reasoning/self_consistency_gap@3"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_group_values_are_the_bits_of_a_plain_group_by_on_step_and_group(order: str) -> None:
    # the groups are found by one integer per (step, group), not the two columns: every per-group value must
    # be what a group-by on the two columns gives, bit for bit, whether the rows come sorted or not (polars
    # sums a group differently when it knows its key column is sorted)
    rng = np.random.default_rng(4)
    steps, groups = np.repeat(np.arange(20), 300), np.tile(np.repeat(np.arange(30), 10), 20)
    df = pl.DataFrame({"step": steps, "group": [f"g{g:02d}" for g in groups], "sample": np.tile(np.arange(10), 600),
                       "score": rng.normal(size=6000) * rng.choice([1e-3, 1.0, 1e3], size=6000)})
    df = df.sort("step", "group") if order == "sorted" else df.sample(fraction=1.0, shuffle=True, seed=1)
    want = df.group_by("step", "group").agg(
        mean=pl.col("score").mean(), std_pop=pl.col("score").std(ddof=0), std_sample=pl.col("score").std(ddof=1),
    ).sort("step", "group")
    got = group_table(df, correct_threshold=0.0)
    assert_frame_equal(got.select(want.columns), want, check_exact=True)
