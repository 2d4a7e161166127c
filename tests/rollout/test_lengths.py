from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvitals.rollout import lengths as L


def ref_spearman(x, y, g):
    def ranks(v):
        return [sum(1 for w in v if w < a) + (sum(1 for w in v if w == a) + 1) / 2 for a in v]
    sxy = sxx = syy = 0.0
    for grp in set(g):
        xs = [a for a, k in zip(x, g, strict=True) if k == grp]
        ys = [b for b, k in zip(y, g, strict=True) if k == grp]
        rx, ry = ranks(xs), ranks(ys)
        mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
        for a, b in zip(rx, ry, strict=True):
            sxy += (a - mx) * (b - my)
            sxx += (a - mx) ** 2
            syy += (b - my) ** 2
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else math.nan


@given(st.lists(st.tuples(st.integers(0, 5), st.booleans(), st.sampled_from("ab")), min_size=1, max_size=15))
def test_spearman_matches_reference(rows):
    x, y, g = (np.array(c) for c in zip(*rows, strict=True))
    got, want = L.within_group_spearman(x, y.astype(float), g), ref_spearman(list(x), list(y.astype(float)), list(g))
    assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want)


def test_hand_values():
    assert L.within_group_spearman(np.array([1, 2, 1, 2]), np.array([0, 1, 1, 0]), np.array(["a", "a", "b", "b"])) == 0
    assert L.within_group_spearman(np.array([1, 2, 3]), np.array([0, 0, 1]), np.array(["a"] * 3)) > 0
    assert L.correct_by_length(np.array([1, 2, 3, 4]), np.array([1, 1, 0, 0]), 2) == [1.0, 0.0]
    assert L.length_reading(0.5) == "longer_more_correct"
    assert L.length_reading(-0.5) == "longer_less_correct"
    assert L.length_reading(0.05) == "no_change" and L.length_reading(math.nan) is None


def test_table_and_missing():
    df = pl.DataFrame({"step": [0, 0, 0, 0], "group": ["a", "a", "b", "b"], "length": [1, 5, 2, 6],
                       "correct": [False, True, False, True], "truncated": [False, False, False, True]})
    row = L.lengths_table(df, bins=2).row(0, named=True)
    assert row["rollout/length_correct_corr"] == pytest.approx(1.0)
    assert row["rollout/correct_by_length/q1"] == 0.0 and row["rollout/correct_by_length/q2"] == 1.0
    assert row["rollout/truncation_share"] == 0.25
    with pytest.raises(ValueError, match="length"):
        L.lengths_table(df.drop("length"))


def ref_reading(corr: float) -> str | None:
    """The seed's three-way reading, written out: > 0.1 healthy, < -0.1 overthinking, else spurious."""
    if math.isnan(corr):
        return None
    return "longer_more_correct" if corr > 0.1 else "longer_less_correct" if corr < -0.1 else "no_change"


rows_st = st.lists(st.tuples(st.integers(0, 2), st.sampled_from("abc"), st.integers(0, 6), st.booleans()),
                   min_size=1, max_size=40)


@given(rows_st)
def test_reading_per_step_matches_a_plain_loop(rows):
    df = pl.DataFrame(rows, schema=["step", "group", "length", "correct"], orient="row")
    got = {r["step"]: r for r in L.lengths_table(df).iter_rows(named=True)}
    for step in {r[0] for r in rows}:
        mine = [r for r in rows if r[0] == step]
        x, y, g = [r[2] for r in mine], [float(r[3]) for r in mine], [r[1] for r in mine]
        corr = ref_spearman(x, y, g)
        varying = sum(1 for grp in set(g)
                      if len({a for a, k in zip(x, g, strict=True) if k == grp}) > 1
                      and len({b for b, k in zip(y, g, strict=True) if k == grp}) > 1)
        row = got[step]
        assert row["rollout/length_reading"] == ref_reading(corr)
        assert row["rollout/length_reading/groups"] == varying
        if math.isnan(corr):
            assert row["rollout/length_correct_corr"] is None
        else:
            assert row["rollout/length_correct_corr"] == pytest.approx(corr)


def test_reading_hand_cases():
    # group a: longer is right; group b: longer is wrong; group c has one length and says nothing
    df = pl.DataFrame({"step": [0] * 6 + [1] * 4, "group": ["a", "a", "b", "b", "c", "c", "a", "a", "b", "b"],
                       "length": [1, 9, 1, 9, 5, 5, 1, 9, 1, 9],
                       "correct": [False, True, True, False, True, False, False, True, False, True]})
    out = L.lengths_table(df, bins=2)
    assert out["rollout/length_reading"].to_list() == ["no_change", "longer_more_correct"]
    assert out["rollout/length_reading/groups"].to_list() == [2, 2]
    assert out["rollout/length_correct_corr"].to_list() == [pytest.approx(0.0), pytest.approx(1.0)]
    flat = df.with_columns(pl.lit(3).alias("length"))
    assert L.lengths_table(flat).select("rollout/length_reading", "rollout/length_reading/groups").rows() == [
        (None, 0), (None, 0)]


def ref_quantile(xs, q):
    xs = sorted(xs)
    h = (len(xs) - 1) * q
    lo = int(h)
    return xs[lo] + (h - lo) * (xs[min(lo + 1, len(xs) - 1)] - xs[lo])


@given(st.lists(st.tuples(st.integers(0, 1), st.sampled_from("ab"), st.one_of(st.none(), st.integers(1, 9)),
                          st.one_of(st.none(), st.booleans())), min_size=1, max_size=40),
       st.integers(1, 5))
def test_correct_by_length_matches_a_plain_loop(rows, bins):
    df = pl.DataFrame(rows, schema={"step": pl.Int64, "group": pl.Utf8, "length": pl.Int64, "correct": pl.Boolean},
                      orient="row")
    got = {r["step"]: r for r in L.lengths_table(df, bins=bins).iter_rows(named=True)}
    for step in {r[0] for r in rows}:
        known = [(n, c) for s, _, n, c in rows if s == step and n is not None and c is not None]
        if not known:
            continue  # no rollout with both: the step has no quantile bins
        edges = [ref_quantile([n for n, _ in known], b / bins) for b in range(1, bins)]
        for b in range(bins):
            # the first bin whose upper edge is >= the length; the last bin takes the rest
            mine = [c for n, c in known if next((i for i, e in enumerate(edges) if e >= n), bins - 1) == b]
            want = sum(mine) / len(mine) if mine else None
            value = got[step][f"rollout/correct_by_length/q{b + 1}"]
            assert value == (None if want is None else pytest.approx(want, abs=1e-12)), (step, b)
