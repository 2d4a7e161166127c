"""Exact sums: any split of the rows and any order of merging give the same bits, and the mean is the double
nearest the exact mean of the values."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvitals.rollout import exact

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, min_size=1, max_size=60), st.randoms())
def test_any_split_and_order_gives_the_exact_mean(values: list[float], rnd) -> None:  # type: ignore[no-untyped-def]
    col = np.array(values)[:, None]
    cuts = sorted(rnd.sample(range(len(values) + 1), k=min(3, len(values) + 1)))
    parts = [exact.sums_of(col[a:b]) for a, b in zip([0, *cuts], [*cuts, len(values)], strict=True)]
    rnd.shuffle(parts)
    merged = parts[0]
    for p in parts[1:]:
        merged = exact.add(p, merged) if rnd.random() < 0.5 else exact.add(merged, p)
    (mean,) = exact.means(merged)
    assert mean == float(sum(Fraction(v) for v in values) / len(values))
    assert exact.means(exact.sums_of(col)) == [mean]


def test_subnormals_huge_values_and_cancellation() -> None:
    values = np.array([[5e-324], [1e308], [-1e308], [2.2250738585072014e-308], [0.1]])
    (mean,) = exact.means(exact.sums_of(values))
    assert mean == float(sum(Fraction(float(v)) for v in values[:, 0]) / 5)
    assert mean == math.fsum(values[:, 0].tolist()) / 5


def test_nan_is_left_out_and_infinities_count_apart() -> None:
    values = np.array([[1.0, np.inf, np.nan], [3.0, 1.0, np.nan], [np.nan, -np.inf, np.nan]])
    s = exact.sums_of(values)
    assert s.counts == (2, 3, 0)
    means = exact.means(s)
    assert means[0] == 2.0 and math.isnan(means[1]) and math.isnan(means[2])
    assert exact.means(exact.sums_of(np.array([[np.inf], [1.0]]))) == [math.inf]


def test_many_rows_of_one_exponent_do_not_overflow() -> None:
    col = np.full((200_000, 1), 0.9999999999999999)  # mantissas near 2**53, one exponent
    (mean,) = exact.means(exact.sums_of(col))
    assert mean == 0.9999999999999999


def test_the_state_is_a_few_integers_per_column_whatever_the_rows() -> None:
    import pickle

    small, large = (exact.sums_of(np.random.default_rng(0).random((n, 27))) for n in (100, 100_000))
    assert len(pickle.dumps(large)) < 2 * len(pickle.dumps(small)) + 2000


def test_counting_in_chunks_gives_the_same_state(monkeypatch: pytest.MonkeyPatch) -> None:
    # the mantissa halves are counted in float64, exact for up to _CHUNK rows at a time; a table taller than
    # that is counted chunk by chunk: the same integers (here chunks of 3 rows, with every kind of value)
    rng = np.random.default_rng(5)
    values = rng.normal(size=(50, 4)) * rng.choice([1e-300, 1e-5, 1.0, 1e300], size=(50, 4))
    values[rng.random((50, 4)) < 0.1] = np.nan
    values[0, 1], values[1, 1], values[2, 2] = np.inf, 5e-324, -0.0
    whole = exact.sums_of(values)
    monkeypatch.setattr(exact, "_CHUNK", 3)
    assert exact.sums_of(values) == whole
    want = [sum((Fraction(v) for v in col if math.isfinite(v)), Fraction(0)) for col in values.T]
    assert [Fraction(s, 2**exact.SCALE) for s in whole.ints] == want  # the sum of its finite values, exactly
