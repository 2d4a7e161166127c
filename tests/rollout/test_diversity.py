from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cdist

from rlvitals.rollout import diversity as d


def lev(a, b):
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def ref_edit(seqs):
    pairs = list(itertools.combinations(seqs, 2))
    return float(np.mean([lev(a, b) / max(len(a), len(b), 1) for a, b in pairs])) if pairs else math.nan


texts = st.lists(st.text(alphabet="ab \n", max_size=12), min_size=0, max_size=6)


def test_hand_values():
    assert d.distinct_n(["a b a b", "a b"], 2) == 0.5
    assert math.isnan(d.distinct_n(["a", "b c"], 3))
    assert d.duplicate_rate(["x", "y", "x", "x"]) == 0.5
    assert d.mean_edit_distance(["kitten", "sitting"]) == pytest.approx(3 / 7)
    assert math.isnan(d.mean_edit_distance(["only one"]))
    assert d.answer_entropy(["1", "1", "2", "2", None]) == pytest.approx(math.log(2))
    assert d.state_coverage([["s1", "s2"], ["s1"]]) == pytest.approx(2 / 3)
    assert d.state_coverage([["s1", "s2"], ["s1"]], n_states=4) == 0.5
    assert d.mean_edit_distance([["go", "take"], ["go", "put", "take"]]) == pytest.approx(1 / 3)


@given(texts)
def test_edit_distance_matches_reference(group):
    got = d.mean_edit_distance(group, max_samples=None)
    want = ref_edit(group)
    assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want)


def test_subsample_is_seeded_and_bounded():
    group = [f"text {i} " * (i + 1) for i in range(40)]
    a = d.mean_edit_distance(group, max_samples=8, seed=3)
    assert a == d.mean_edit_distance(group, max_samples=8, seed=3)
    assert a != d.mean_edit_distance(group, max_samples=None)


def test_embedding_cosine():
    vecs = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0]}
    enc = lambda ts: np.array([vecs[t] for t in ts])  # noqa: E731
    assert d.embedding_cosine(["a", "b", "c"], enc) == pytest.approx((0 + 2 * 2 ** -0.5) / 3)
    with pytest.raises(ValueError, match="shape"):
        d.embedding_cosine(["a", "b"], lambda ts: np.zeros(3))


def old_edit(seqs, max_samples=16, seed=0):
    """The historical per-group edit distance: rapidfuzz's normalized_distance over the subsample,
    float32 as cdist returns it, mean over i < j."""
    items = list(seqs)
    if max_samples is not None and len(items) > max_samples:
        keep = np.sort(np.random.default_rng(seed).choice(len(items), size=max_samples, replace=False))
        items = [items[i] for i in keep]
    if len(items) < 2:
        return math.nan
    dist = cdist(items, items, scorer=Levenshtein.normalized_distance)
    return float(dist[np.triu_indices(len(items), k=1)].mean())


def ref_groups(df, ns=(1, 2, 3, 4), max_samples=16, n_states=None):
    """Plain per-group reference: one Python loop over groups calling the single-group functions."""
    out = []
    for (step, group), rows in sorted(df.group_by("step", "group"), key=lambda kv: kv[0]):
        rows = rows.sort("sample")
        resp = [r or "" for r in rows["response"]]
        row = {"step": step, "group": group}
        row.update({f"diversity/distinct_{n}": d.distinct_n(resp, n) for n in ns})
        row["diversity/duplicate_rate"] = d.duplicate_rate(resp)
        row["diversity/edit_distance"] = old_edit([r.split() for r in resp], max_samples)
        if "answer" in df.columns:
            row["diversity/answer_entropy"] = d.answer_entropy(list(rows["answer"]))
        if "actions" in df.columns:
            row["diversity/action_edit_distance"] = old_edit([list(a) for a in rows["actions"] if a is not None],
                                                             max_samples)
        if "states" in df.columns:
            visits = [[] if s is None else list(s) for s in rows["states"]]
            row["diversity/state_coverage"] = d.state_coverage(visits, n_states)
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()})
    return out


def ref_steps(per_group):
    keys = [k for k in per_group[0] if k not in ("step", "group")]
    steps = sorted({r["step"] for r in per_group})
    rows = []
    for step in steps:
        row = {"step": step}
        for k in keys:
            vals = [r[k] for r in per_group if r["step"] == step and r[k] is not None]
            row[k] = math.fsum(vals) / len(vals) if vals else None
        rows.append(row)
    return rows


def assert_rows_equal(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.keys() == w.keys()
        for k in w:
            assert g[k] == w[k] or (g[k] is None and w[k] is None), (k, g[k], w[k])


# words of the alphabet below exercise every kind of whitespace str.split() knows
spaced_text = st.text(alphabet="ab \n\t\u3000\x1c\xa0\u2009é", max_size=12) | st.none()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.sampled_from("xyz"), spaced_text,
                          st.sampled_from(["1", "2", None]), st.lists(st.sampled_from("LRU"), max_size=3) | st.none()),
                min_size=1, max_size=40),
       st.sampled_from([None, 2, 16]), st.sampled_from([1, 2]))
def test_table_matches_plain_per_group_reference(rows, max_samples, workers):
    df = pl.DataFrame({"step": [r[0] for r in rows], "group": [r[1] for r in rows], "sample": list(range(len(rows))),
                       "response": [r[2] for r in rows], "answer": [r[3] for r in rows],
                       "actions": [r[4] for r in rows], "states": [r[4] for r in rows]},
                      schema={"step": pl.Int64, "group": pl.Utf8, "sample": pl.Int64, "response": pl.Utf8,
                              "answer": pl.Utf8, "actions": pl.List(pl.Utf8), "states": pl.List(pl.Utf8)})
    want = ref_groups(df, max_samples=max_samples)
    got = d.group_diversity(df, max_samples=max_samples, workers=workers)
    assert_rows_equal(got.rows(named=True), want)
    assert_rows_equal(d.diversity_table(df, max_samples=max_samples, workers=workers).rows(named=True),
                      ref_steps(want))


def test_table_matches_reference_on_many_groups():
    # > 64 groups of realistic size, so the threaded path runs; words repeat (Zipf-like) across groups
    rng = np.random.default_rng(5)
    vocab = [f"w{i}" for i in range(400)] + ["\n", "  ", "é"]
    resp = [" ".join(rng.choice(vocab, size=int(rng.integers(0, 60)), p=None)) for _ in range(100 * 8)]
    df = pl.DataFrame({"step": np.repeat(np.arange(4), 200), "group": np.repeat(np.arange(100), 8).astype(str),
                       "sample": np.tile(np.arange(8), 100), "response": resp})
    want = ref_groups(df, max_samples=6)
    for workers in (1, 2, -1):
        assert_rows_equal(d.group_diversity(df, max_samples=6, workers=workers).rows(named=True), want)
    assert_rows_equal(d.diversity_table(df, max_samples=6).rows(named=True), ref_steps(want))


def test_whitespace_is_python_whitespace():
    assert set(d.WHITESPACE) | {" "} == {chr(c) for c in range(0x110000) if chr(c).isspace()}


def test_bad_options():
    df = pl.DataFrame({"step": [0], "group": ["a"], "sample": [0], "response": ["x"]})
    with pytest.raises(ValueError, match=r"distinct-n must be >= 1, got \(0, 2\)"):
        d.diversity_table(df, ns=(0, 2))
    with pytest.raises(ValueError, match="unit must be 'word' or 'char', got 'token'"):
        d.diversity_table(df, unit="token")


def test_actions_states_and_missing_column():
    df = pl.DataFrame({"step": [0, 0], "group": ["a", "a"], "sample": [0, 1], "response": ["x", "x"],
                       "actions": [["go", "take"], ["go", "put", "take"]], "states": [["s1", "s2"], ["s1"]]})
    row = d.diversity_table(df).row(0, named=True)
    assert row["diversity/action_edit_distance"] == pytest.approx(1 / 3)
    assert row["diversity/state_coverage"] == pytest.approx(2 / 3)
    assert row["diversity/duplicate_rate"] == 0.5
    with pytest.raises(ValueError, match="response"):
        d.diversity_table(df.drop("response"))


# ---------------------------------------------------------------- mergeable state

rollout_rows = st.lists(st.tuples(st.integers(0, 2), st.sampled_from("uvwxyz"),
                                  st.text(alphabet="ab c\n", max_size=14), st.sampled_from(["1", "2", None]),
                                  st.lists(st.sampled_from(["go", "take", "put"]), max_size=4)),
                        min_size=1, max_size=30)


def rollout_frame(rows):
    return pl.DataFrame({"step": [r[0] for r in rows], "group": [r[1] for r in rows],
                         "sample": list(range(len(rows))), "response": [r[2] for r in rows],
                         "answer": [r[3] for r in rows], "actions": [r[4] for r in rows],
                         "states": [r[4][:2] for r in rows]},
                        schema_overrides={"answer": pl.Utf8, "actions": pl.List(pl.Utf8), "states": pl.List(pl.Utf8)})


@given(rollout_rows, st.integers(1, 5), st.randoms(use_true_random=False))
@pytest.mark.slow
def test_sharded_equals_unsharded_exactly(rows, n_shards, rnd):
    df = rollout_frame(rows)
    keys = sorted(set(zip(df["step"], df["group"], strict=True)))
    shard_of = {k: rnd.randrange(n_shards) for k in keys}
    sid = pl.Series([shard_of[k] for k in zip(df["step"], df["group"], strict=True)])
    states = [d.update(None, df.filter(sid == i), max_samples=3) for i in range(n_shards)]
    rnd.shuffle(states)
    while len(states) > 1:  # merge in a random tree shape
        i = rnd.randrange(len(states) - 1)
        states[i:i + 2] = [d.merge(states[i], states[i + 1])]
    want = d.diversity_table(df, max_samples=3)
    assert_frame_equal(d.compute(states[0]), want, check_exact=True)
    # update() folding chunk after chunk gives the same frame
    folded = None
    for i in range(n_shards):
        folded = d.update(folded, df.filter(sid == i), max_samples=3)
    assert_frame_equal(d.compute(folded), want, check_exact=True)


def test_merge_refuses_shared_groups_and_other_options():
    df = pl.DataFrame({"step": [0, 0, 0], "group": ["a", "a", "b"], "sample": [0, 1, 2], "response": ["x", "y", "z"]})
    with pytest.raises(ValueError, match="group 'a' of step 0 is in both.*by whole groups"):
        d.merge(d.update(None, df[:1]), d.update(None, df[1:]))
    with pytest.raises(ValueError, match="different options.*same ns"):
        d.merge(d.update(None, df[:2]), d.update(None, df[2:], ns=(1, 2)))
    with pytest.raises(ValueError, match="different options"):
        d.update(d.update(None, df[:2]), df[2:], unit="char")
    # workers never changes a value, so it may differ between shards
    both = d.merge(d.update(None, df[:2], workers=2), d.update(None, df[2:]))
    assert_frame_equal(d.compute(both), d.diversity_table(df), check_exact=True)


def test_step_mean_is_fsum_of_group_values():
    df = rollout_frame([(0, g, t, None, []) for g, t in zip("uvwxyz", ["a b", "a a", "b", "a b c", "c c c", ""],
                                                            strict=True)])
    per_group = d.group_diversity(df)["diversity/distinct_1"].to_list()
    defined = [v for v in per_group if v is not None and not math.isnan(v)]
    assert d.diversity_table(df)["diversity/distinct_1"].to_list() == [math.fsum(defined) / len(defined)]
    assert d.diversity_table(df)["diversity/answer_entropy"].to_list() == [None]
