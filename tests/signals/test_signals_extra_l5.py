"""Primitives added for the L5/L6 and efficiency checks: where a plateau ends."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvitals import signals as S

SCALES = st.sampled_from([1e-4, 1e-2, 1.0, 37.0, 1e4])


def _best_break(y: np.ndarray, free: bool) -> tuple[float, int]:
    """The reference: every break fitted with numpy's least squares on an explicit design —
    a constant then a line continuing from it (hinge) or a constant then a free line."""
    n, best = len(y), (np.inf, 0)
    i = np.arange(n, dtype=float)
    for c in range(n - 3):
        after = np.where(i > c, i - c, 0.0)
        cols = [i <= c, i > c, after] if free else [np.ones(n), after]
        design = np.column_stack(cols).astype(float)
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        best = min(best, (float(((design @ coef - y) ** 2).sum()), c))
    return best


def _reference(y: np.ndarray) -> int:
    hinge, free = _best_break(y, False), _best_break(y, True)
    jump = hinge[0] - free[0] > max(4.0, 2.0 * np.log(len(y))) * free[0] / (len(y) - 4)
    return free[1] if jump else hinge[1]


def test_plateau_end_matches_a_least_squares_reference() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        n, at = int(rng.integers(8, 40)), 0
        at = int(rng.integers(2, n - 3))
        drop = 0.5 if rng.random() < 0.5 else 0.0  # half of them with a step as well
        y = np.where(np.arange(n) <= at, 1.0, 1.0 - drop - 0.05 * (np.arange(n) - at)) + rng.normal(0, 0.01, n)
        assert S.plateau_end(y) == _reference(y)


def test_plateau_end_dates_a_slow_decline() -> None:
    # a slow fall: after 10 points it has moved only 2 noise sd, no step anywhere
    errors = []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        at, i = int(rng.integers(10, 60)), np.arange(80, dtype=float)
        y = 0.7 - 0.002 * np.clip(i - at, 0, None) + rng.normal(0, 0.01, 80)
        errors.append(abs(S.plateau_end(y) - at))
    assert np.median(errors) <= 2 and np.percentile(errors, 90) <= 4


@settings(max_examples=25, deadline=None)
@given(scale=SCALES, seed=st.integers(0, 1000), at=st.integers(10, 60))
def test_plateau_end_is_scale_free(scale: float, seed: int, at: int) -> None:
    rng = np.random.default_rng(seed)
    i = np.arange(80, dtype=float)
    y = 0.7 - 0.004 * np.clip(i - at, 0, None) + rng.normal(0, 0.01, 80)
    assert S.plateau_end(y * scale) == S.plateau_end(y)


def test_plateau_end_from_a_start_index_and_on_short_input() -> None:
    y = np.array([0.0, 1.0, 2.0, 3.0, 3.0, 3.0, 3.0, 2.0, 1.0, 0.0])
    assert S.plateau_end(y, start=3) == 6
    assert S.plateau_end(np.array([1.0, 2.0, 3.0, 4.0])) == 0
    assert S.plateau_end(y, start=6) == 6
    # a step down is dated too: the flat part ends right before it
    step = np.r_[np.ones(30), np.zeros(30)]
    assert S.plateau_end(step) in (29, 30)
