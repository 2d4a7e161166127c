"""val/id_ood_gap from the rollouts' split column: reference, shards, and the analysis join."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import rlvitals
from rlvitals.rollout import splits


def _table(seed: int, n: int = 120) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({
        "step": rng.integers(1, 5, n), "group": [f"g{i // 4}" for i in range(n)], "sample": [i % 4 for i in range(n)],
        "score": rng.normal(size=n).round(3),
        "split": rng.choice(["train", "val", "ood", None], n).tolist(),
    })


def _plain(df: pl.DataFrame) -> dict[int, float | None]:
    out: dict[int, float | None] = {}
    for step in sorted(set(df["step"].to_list())):
        rows = [r for r in df.iter_rows(named=True) if r["step"] == step]
        ids = [r["score"] for r in rows if r["split"] == "train"]
        oods = [r["score"] for r in rows if r["split"] not in ("train", None)]
        out[step] = sum(ids) / len(ids) - sum(oods) / len(oods) if ids and oods else None
    return out


@given(st.integers(0, 10_000))
@settings(max_examples=40, deadline=None)
def test_matches_a_plain_computation_and_the_frame_function(seed: int) -> None:
    df = _table(seed)
    got = splits.compute(splits.update(None, df))
    want = _plain(df)
    for step, value in got.iter_rows():
        if want[step] is None:
            assert value is None
        else:
            assert value == pytest.approx(want[step], abs=1e-12)


def test_by_split_or_source_and_what_is_left_out() -> None:
    df = pl.DataFrame({"step": [0, 0, 0, 1, 1], "score": [1.0, 0.0, 0.5, 1.0, float("nan")],
                       "split": ["train", "ood", "ood", "train", "ood"], "source": ["a", "b", "b", "a", "b"]})
    # step 1: the only OOD score is NaN, so that side is empty (the frame function removed with
    # prompts.id_ood_gap gave NaN here, a second definition of the same key)
    assert splits.compute(splits.update(None, df))["val/id_ood_gap"].to_list() == [pytest.approx(0.75), None]
    by_source = splits.compute(splits.update(None, df, id_values=["a"], by="source"))
    assert by_source["val/id_ood_gap"].to_list() == [pytest.approx(0.75), None]
    with pytest.raises(ValueError, match=r"needs the rollout column\(s\) \['split'\]"):
        splits.update(None, df.drop("split"))


@given(st.integers(0, 10_000), st.integers(2, 5))
@settings(max_examples=40, deadline=None)
def test_sharded_equals_unsharded_exactly(seed: int, shards: int) -> None:
    df = _table(seed)
    rng = np.random.default_rng(seed + 1)
    part = rng.integers(0, shards, df.height)
    states = [splits.update(None, df.filter(pl.Series(part == i))) for i in range(shards)]
    merged = states[0]
    for s in states[1:]:
        merged = splits.merge(merged, s)
    assert_frame_equal(splits.compute(merged), splits.compute(splits.update(None, df)), check_exact=True)


def test_custom_sides_and_errors() -> None:
    df = pl.DataFrame({"step": [1, 1, 1, 1], "group": list("abcd"), "sample": [0] * 4,
                       "score": [1.0, 0.5, 0.0, float("nan")], "split": ["gsm8k", "gsm8k", "math", "math"]})
    got = splits.compute(splits.update(None, df, id_values=["gsm8k"], ood_values=["math"]))
    assert got["val/id_ood_gap"].to_list() == [0.75]  # the NaN score is left out
    assert splits.compute(splits.update(None, df))["val/id_ood_gap"].to_list() == [None]  # no "train" rollout
    with pytest.raises(ValueError, match=r"needs the rollout column\(s\) \['split'\]"):
        splits.update(None, df.drop("split"))
    with pytest.raises(ValueError, match="differ from the state's"):
        splits.update(splits.update(None, df), df, id_values=["gsm8k"])
    with pytest.raises(ValueError, match="different id/ood values"):
        splits.merge(splits.update(None, df), splits.update(None, df, id_values=["math"]))


def test_analyze_rollouts_reports_the_gap_and_skips_it_without_splits() -> None:
    rows = [{"step": 1, "prompt": f"p{g}", "response": "x", "score": s, "split": sp}
            for g, (s, sp) in enumerate([(1.0, "train"), (1.0, "train"), (0.0, "ood"), (1.0, "ood")])]
    a = rlvitals.analyze_rollouts(rows)
    assert a.steps["val/id_ood_gap"].to_list() == [0.5]
    assert a.overall["val/id_ood_gap"] == 0.5
    b = rlvitals.analyze_rollouts([{k: v for k, v in r.items() if k != "split"} for r in rows])
    assert "val/id_ood_gap" not in b.steps.columns
    assert any(s.startswith("id_ood: this metric needs the rollout column(s) ['split']") for s in b.skipped)
