"""σ_G as a distribution across groups: quantiles against numpy, the fixed bands, the shape, shards, JSON.
Constructed tables (a 0/1 reward with known group outcomes), checked against plain NumPy."""

from __future__ import annotations

import math
import random

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvitals.rollout import analysis, groups, spread


def table(outcomes: list[list[float]], step: int = 0) -> pl.DataFrame:
    rows = [{"step": step, "group": f"g{g}", "sample": i, "score": float(r)}
            for g, rewards in enumerate(outcomes) for i, r in enumerate(rewards)]
    return pl.DataFrame(rows)


def reference(outcomes: list[list[float]]) -> tuple[list[float], dict[str, int]]:
    """Plain NumPy: σ_G (ddof=1) quantiles, and each group's band by its population std over half the range."""
    two = [np.asarray(r, dtype=float) for r in outcomes if len(r) >= 2]
    sigma = [0.0 if r.min() == r.max() else float(r.std(ddof=1)) for r in two]
    qs = np.quantile(sigma, [0.1, 0.25, 0.5, 0.75, 0.9]).tolist()
    every = np.concatenate([np.asarray(r, dtype=float) for r in outcomes])
    half = (every.max() - every.min()) / 2
    bands = dict.fromkeys(spread.BANDS, 0)
    for r in two:
        u = 0.0 if r.min() == r.max() else min(float(r.std()) / half, 1.0)
        band = ("zero" if u == 0 else "0-25" if u <= 0.25 else "25-50" if u <= 0.5 else "50-75" if u <= 0.75
                else "75-100")
        bands[band] += 1
    return qs, bands


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.0, 1.0, 0.5, 2.0, -1.0]), min_size=1, max_size=9), min_size=1, max_size=30))
def test_quantiles_and_bands_match_plain_numpy(outcomes: list[list[float]]) -> None:
    row = groups.step_metrics(table(outcomes)).row(0, named=True)
    if not any(len(r) >= 2 for r in outcomes):
        assert math.isnan(row["group/reward_std/p50"]) and row[spread.HIST] is None and row[spread.SHAPE] is None
        return
    qs, bands = reference(outcomes)
    got = [row[f"group/reward_std/{q}"] for q, _ in spread.QUANTILES]
    assert got == pytest.approx(qs, abs=1e-12)
    assert {h["band"]: h["count"] for h in row[spread.HIST]} == bands
    total = sum(bands.values())
    assert row[spread.band_key("zero")] == bands["zero"] / total


def test_a_binary_reward_lands_in_the_bands_its_share_correct_says() -> None:
    """G = 8, 0/1 reward: u = 2·sqrt(p(1 − p)); 1 of 8 right is 0.66 (50-75), 2 of 8 is 0.87 (75-100)."""
    g = [[1.0] * 8, [0.0] * 8, [1.0] + [0.0] * 7, [1.0] * 2 + [0.0] * 6, [1.0] * 4 + [0.0] * 4]
    row = groups.step_metrics(table(g)).row(0, named=True)
    assert {h["band"]: h["count"] for h in row[spread.HIST]} == {"zero": 2, "0-25": 0, "25-50": 0, "50-75": 1,
                                                                  "75-100": 2}
    assert row["group/reward_std/p10"] == 0.0 and row["group/reward_std/p90"] == pytest.approx(
        np.quantile([0, 0, np.std([1] + [0] * 7, ddof=1), np.std([1, 1] + [0] * 6, ddof=1), np.std([1] * 4 + [0] * 4,
                                                                                                    ddof=1)], 0.9))


@pytest.mark.parametrize(("outcomes", "shape"), [
    ([[1.0] * 4] * 6 + [[1.0, 0.0, 1.0, 0.0]] * 4, "at_zero"),  # 60 % dead
    ([[1.0] * 4] * 2 + [[0.0] * 4] * 2 + [[1.0, 0.0, 1.0, 0.0]] * 6, "bimodal"),  # 40 % dead, 60 % at the top
    ([[1.0, 1.0, 1.0, 0.0]] * 5 + [[1.0, 0.0, 1.0, 0.0]] * 4 + [[1.0] * 4], "spread"),
])
def test_the_shape_reads_the_three_ways(outcomes: list[list[float]], shape: str) -> None:
    row = groups.step_metrics(table(outcomes)).row(0, named=True)
    assert row[spread.SHAPE] == shape
    assert str(spread.READINGS[shape]) and spread.READINGS[shape].zh


def test_the_bands_do_not_depend_on_the_rewards_units() -> None:
    g = [[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0] * 4]
    a = groups.step_metrics(table(g)).row(0, named=True)
    b = groups.step_metrics(table([[10 * r - 5 for r in rs] for rs in g])).row(0, named=True)
    assert a[spread.HIST] == b[spread.HIST] and a[spread.SHAPE] == b[spread.SHAPE]
    assert b["group/reward_std/p50"] == pytest.approx(10 * a["group/reward_std/p50"])


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 6))
def test_sharded_states_give_the_same_distribution_bit_for_bit(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    rows = [{"step": s, "group": f"g{g}", "sample": i, "score": float(rng.choice([0.0, 1.0, rng.random()]))}
            for s in range(3) for g in range(int(rng.integers(1, 12))) for i in range(int(rng.integers(1, 6)))]
    df = pl.DataFrame(rows)
    keys = df.select("step", "group").unique().rows()
    random.Random(seed).shuffle(keys)
    parts = [df.join(pl.DataFrame(keys[i::n], schema=["step", "group"], orient="row"), on=["step", "group"])
             for i in range(n) if keys[i::n]]
    state = None
    for part in parts:
        state = groups.update(state, part)
    assert state is not None
    cols = [c for c in groups.compute(state).columns if c.startswith("group/reward_std")]
    assert groups.compute(state).select(cols).equals(groups.step_metrics(df).select(cols), null_equal=True)


def test_rollouts_json_has_the_distribution_and_its_reading_in_both_languages() -> None:
    g = [[1.0] * 4] * 2 + [[0.0] * 4] * 2 + [[1.0, 0.0, 1.0, 0.0]] * 6
    a = analysis.analyze_rollouts(table(g), ks=(1, 2))
    out = analysis.step_json(a.steps.row(0, named=True), a.ks)["sigma_g"]
    assert out["shape"] == "bimodal" and out["counts"] == {"zero": 4, "0-25": 0, "25-50": 0, "50-75": 0, "75-100": 6}
    assert out["shares"]["zero"] == 0.4 and out["shares"]["75-100"] == 0.6
    assert set(out["quantiles"]) == {"p10", "p25", "p50", "p75", "p90"} and out["edges"] == [0.25, 0.5, 0.75]
    assert out["reading"]["en"].startswith("bimodal") and out["reading"]["zh"].startswith("双峰")
    series = a.series().columns
    assert "group/reward_std/p90" in series and spread.band_key("75-100") in series
    assert spread.HIST not in series and spread.SHAPE not in series
    assert a.overall[spread.SHAPE] == "bimodal"
