from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvitals.rollout import tokens as T

pairs = st.lists(st.tuples(st.floats(-5, 0), st.floats(-3, 3)), min_size=1, max_size=20)


@given(pairs)
def test_cov_matches_loop(rows):
    lp, adv = [r[0] for r in rows], [r[1] for r in rows]
    ml, ma = sum(lp) / len(lp), sum(adv) / len(adv)
    want = sum((a - ma) * (x - ml) for x, a in zip(lp, adv, strict=True)) / len(lp)
    assert T.logp_adv_cov(np.array(lp), np.array(adv)) == pytest.approx(want, abs=1e-9)


def test_hand_values():
    assert T.logp_adv_cov(np.array([-1.0, -2.0]), np.array([1.0, -1.0])) == pytest.approx(0.5)
    assert T.high_entropy_share(np.array([0.1, 0.5, 2.0, 3.0]), 1.0) == 0.5
    assert T.forking_threshold(np.arange(11.0)) == pytest.approx(8.0)


def test_table_first_step_threshold():
    df = pl.DataFrame({"step": [0, 0, 1], "token_entropy": [[0.0, 1, 2], [3.0, 4], [0.0, 0.0, 5.0]],
                       "token_logprob": [[-1.0, -2, -1], [-1.0, -1], [-1.0, -2, -3]],
                       "token_advantage": [[1.0, -1, 1], [0.0, 0], [0.0, 0, 0]]})
    out = T.tokens_table(df)
    # threshold = 0.8-quantile of step 0's entropies {0..4} = 3.2 → one of five above
    assert out["token/entropy_high_share"].to_list() == [pytest.approx(0.2), pytest.approx(1 / 3)]
    assert out["token/logp_adv_cov"][1] == 0.0
    assert T.tokens_table(df, threshold=0.5)["token/entropy_high_share"][0] == pytest.approx(0.8)
    bad = df.with_columns(pl.Series("token_advantage", [[1.0], [0.0, 0], [0.0, 0, 0]]))
    with pytest.raises(ValueError, match="token_advantage"):
        T.tokens_table(bad)
    with pytest.raises(ValueError, match="token_entropy"):
        T.tokens_table(df.select("step"))


def ref_quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    h = (len(xs) - 1) * q
    lo = int(h)
    return xs[lo] + (h - lo) * (xs[min(lo + 1, len(xs) - 1)] - xs[lo])


entropy_rows = st.lists(st.tuples(st.integers(0, 3), st.lists(st.one_of(st.none(), st.sampled_from(
    [0.0, 0.1, 0.5, 0.5, 1.0, 2.0, 3.5])), max_size=6)), min_size=1, max_size=12)


@given(entropy_rows)
def test_high_entropy_share_matches_a_plain_loop(rows):
    df = pl.DataFrame(rows, schema={"step": pl.Int64, "token_entropy": pl.List(pl.Float64)}, orient="row")
    per_step: dict[int, list[float]] = {}
    for step, ents in rows:
        per_step.setdefault(step, []).extend(e for e in ents if e is not None)
    # the threshold: the 0.8 quantile of the first step that has any token entropy, then fixed
    first = next((per_step[s] for s in sorted(per_step) if per_step[s]), None)
    threshold = ref_quantile(first, 0.8) if first else None
    got = dict(T.tokens_table(df).select("step", "token/entropy_high_share").rows())
    for step, ents in per_step.items():
        want = sum(e > threshold for e in ents) / len(ents) if ents and threshold is not None else None
        assert got[step] == (None if want is None else pytest.approx(want, abs=1e-12)), step


# -- engine–trainer mismatch and off-policy staleness from the per-token log-probs (constructed rows) --------------

def _lp_rows(rng: np.random.Generator, n: int) -> list[dict[str, object]]:
    rows = []
    for i in range(n):
        k = int(rng.integers(0, 7))
        old = list(-rng.gamma(1.0, 0.7, size=k))
        rows.append({"step": i % 3, "group": f"g{i}", "sample": 0, "token_old_logprob": old,
                     "token_rollout_logprob": [x + float(rng.normal(0, 0.01)) for x in old],
                     "token_logprob": [x + float(rng.normal(0, 0.2)) for x in old]})
    return rows


def test_mismatch_and_staleness_match_a_plain_loop() -> None:
    rows = _lp_rows(np.random.default_rng(3), 40)
    out = T.tokens_table(pl.DataFrame(rows))
    for step in range(3):
        mine = [r for r in rows if r["step"] == step]
        mis = [abs(a - b) for r in mine
               for a, b in zip(r["token_old_logprob"], r["token_rollout_logprob"], strict=True)]
        stale = [abs(a - b) for r in mine for a, b in zip(r["token_logprob"], r["token_old_logprob"], strict=True)]
        got = out.filter(pl.col("step") == step)
        assert got[T.MISMATCH].item() == pytest.approx(np.mean(mis))
        assert got[T.STALENESS].item() == pytest.approx(np.mean(stale))
    # the two gaps are apart: the engine noise is 0.01, the policy's move 0.2
    assert out[T.MISMATCH].max() < 0.02 < 0.1 < out[T.STALENESS].min()


def test_mismatch_is_the_same_sharded() -> None:
    df = pl.DataFrame(_lp_rows(np.random.default_rng(5), 30))
    whole = T.compute(T.update(None, df))
    parts = [T.update(None, df[i::3]) for i in range(3)]
    merged = T.compute(T.merge(T.merge(parts[2], parts[0]), parts[1]))
    assert whole.equals(merged)


def test_dump_names_of_the_log_probs_are_read() -> None:
    df = pl.DataFrame({"step": [1], "old_log_probs": [[-1.0, -2.0]], "rollout_log_probs": [[-1.5, -2.0]]})
    out = T.tokens_table(df)
    assert out.columns == ["step", T.MISMATCH] and out[T.MISMATCH].item() == pytest.approx(0.25)


def test_unequal_lists_and_masked_tokens_are_left_out() -> None:
    df = pl.DataFrame({"step": [1, 1], "token_old_logprob": [[-1.0, float("nan")], [-1.0]],
                       "token_rollout_logprob": [[-1.5, -3.0], [-1.0, -2.0]]})
    assert T.tokens_table(df)[T.MISMATCH].item() == pytest.approx(0.5)


def test_without_the_old_log_probs_neither_gap_is_computed() -> None:
    df = pl.DataFrame({"step": [1], "token_logprob": [[-1.0]], "token_rollout_logprob": [[-1.2]]})
    with pytest.raises(ValueError, match="with .token_logprob. \\(staleness\\)"):
        T.tokens_table(df)
