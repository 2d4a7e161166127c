"""downsample: a spike, a NaN and an inf survive any reduction; the output is short, ordered and exact."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rlvitals.errors import RlvitalsError
from rlvitals.report.downsample import downsample, downsample_index, nonfinite


def test_single_step_spike_in_200k_steps_survives() -> None:
    x = np.arange(1, 200_001, dtype=np.float64)
    y = 2.0 + 0.01 * np.sin(x / 50.0)
    y[137_421] = 66.0  # one step, as a grad-norm spike is logged
    xs, ys = downsample(x, y, 500)
    assert len(xs) <= 2000
    assert ys.max() == 66.0 and xs[ys.argmax()] == x[137_421]
    assert xs[0] == 1 and xs[-1] == 200_000  # the line still spans the whole run


def test_dip_nan_and_infs_survive() -> None:
    x = np.arange(100_000, dtype=np.float64)
    y = np.ones_like(x)
    y[10_001], y[50_000], y[70_000], y[90_000] = -5.0, np.nan, np.inf, -np.inf
    xs, ys = downsample(x, y, 100)
    assert -5.0 in ys and np.isinf(ys).sum() == 2
    assert np.isnan(ys).sum() == 1 and xs[np.isnan(ys)][0] == 50_000


def test_identity_when_short() -> None:
    x, y = np.arange(8.0), np.array([1, np.nan, 3, 4, 5, 6, 7, 8.0])
    xs, ys = downsample(x, y, 2)
    np.testing.assert_array_equal(xs, x)
    np.testing.assert_array_equal(ys, y)
    # 8 > 4 x 1: reduced; the NaN takes the first slot, index 0 stays as the minimum, 7 is max and last
    assert downsample_index(x, y, 1).tolist() == [0, 1, 7]


def test_nonfinite_counts_and_first_step() -> None:
    got = nonfinite(np.array([10, 20, 30, 40]), np.array([1.0, np.inf, np.nan, -np.inf]))
    assert got == {"nan": 1, "posinf": 1, "neginf": 1, "first": 20.0}
    assert nonfinite(np.array([1]), np.array([0.0]))["first"] is None


@pytest.mark.parametrize(("x", "y", "buckets", "match"), [
    (np.array([0.0, 2.0, 1.0]), np.zeros(3), 5, r"not strictly increasing at index 2 \(2.0 then 1.0\)"),
    (np.array([0.0, 1.0, 1.0]), np.zeros(3), 5, "not strictly increasing at index 2"),
    (np.arange(3.0), np.zeros(4), 5, r"x has shape \(3,\) and y \(4,\)"),
    (np.arange(3.0), np.zeros(3), 0, "buckets=0; expected at least 1"),
    (np.array([0.0, np.nan]), np.zeros(2), 5, "x holds NaN or inf"),
])
def test_bad_input_is_named(x: np.ndarray, y: np.ndarray, buckets: int, match: str) -> None:
    with pytest.raises(RlvitalsError, match=match):
        downsample(x, y, buckets)


def _reference_kept(x: np.ndarray, y: np.ndarray, buckets: int) -> list[set[float]]:
    """Per bin (equal width in x, the last one closed), the y values that must be visible: the bin's
    min and max over non-NaN values, by a plain loop."""
    bins: list[list[float]] = [[] for _ in range(buckets)]
    span = float(x[-1] - x[0])
    for xi, yi in zip(x.tolist(), y.tolist(), strict=True):
        if not np.isnan(yi):
            bins[min(int((xi - x[0]) / span * buckets), buckets - 1)].append(yi)
    return [{min(b), max(b)} if b else set() for b in bins]


series = st.integers(5, 200).flatmap(lambda n: st.tuples(
    hnp.arrays(np.float64, n, elements=st.floats(-1e6, 1e6), unique=True).map(np.sort),
    hnp.arrays(np.float64, n, elements=st.one_of(st.floats(-1e9, 1e9), st.just(np.nan), st.just(np.inf),
                                                  st.just(-np.inf))),
    st.integers(1, 30)))


@given(series)
def test_every_bucket_keeps_its_extremes(case: tuple[np.ndarray, np.ndarray, int]) -> None:
    x, y, buckets = case
    xs, ys = downsample(x, y, buckets)
    assert len(xs) == len(x) if len(x) <= 4 * buckets else len(xs) <= 4 * buckets
    assert np.all(np.diff(xs) > 0)
    assert set(xs.tolist()) <= set(x.tolist())
    # every kept point is a real point of the input
    lookup = dict(zip(x.tolist(), y.tolist(), strict=True))
    for a, b in zip(xs.tolist(), ys.tolist(), strict=True):
        assert (np.isnan(b) and np.isnan(lookup[a])) or lookup[a] == b
    if len(x) > 4 * buckets:
        kept = set(ys[~np.isnan(ys)].tolist())
        for want in _reference_kept(x, y, buckets):
            assert want <= kept
        assert np.isnan(ys).any() == np.isnan(y).any()  # a NaN is never dropped silently
