"""Primitives added for the L1 checks: the rounding step of a log, and upward jumps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvitals import signals as S

SCALES = st.sampled_from([1e-4, 1e-2, 1.0, 37.0, 1e4])


def kl_like(n: int = 300, level: float = 0.02, seed: int = 0) -> np.ndarray:
    """A positive, multiplicatively noisy series around ``level`` (like a KL)."""
    return level * np.exp(np.random.default_rng(seed).normal(0.0, 0.15, n))


def test_quantum_reads_the_printed_resolution() -> None:
    assert S.quantum(np.array([0.0, 0.001, -0.002, 0.013])) == 0.001
    assert S.quantum(np.array([950.052, 8.138, 1.0])) == 0.001
    assert S.quantum(np.array([5e-6, 1.6e-5, 0.034313])) == 1e-6
    assert S.quantum(np.array([3.0, 7.0, 12.0])) == 1.0
    # full precision, or nothing but zeros: no rounding step
    assert S.quantum(np.random.default_rng(0).normal(size=50)) == 0.0
    assert S.quantum(np.array([0.000232056123, 0.5])) == 0.0
    assert S.quantum(np.zeros(5)) == 0.0
    assert S.quantum(np.array([np.nan, 0.25, np.inf])) == 0.01
    # values far below a step are not multiples of it
    assert S.quantum(np.array([1e-7, 2.5e-7])) == 1e-8
    assert S.quantum(np.array([3.14159e-7, 1e-6])) == 0.0


def test_a_transient_spike_is_a_jump_that_comes_back() -> None:
    x = kl_like()
    x[150:152] = 0.9
    (j,) = S.jumps(x, ratio=4.0)
    assert (j.start, j.peak) == (150, 150) and j.value == 0.9
    assert j.before == pytest.approx(0.02, rel=0.1) and j.after == pytest.approx(0.02, rel=0.2)
    assert j.ratio > 40 and not j.stayed


def test_a_level_shift_is_a_jump_that_stays() -> None:
    x = kl_like()
    x[150:] *= 7.5  # the seed's "from 0.02 to 0.15"
    found = S.jumps(x, ratio=4.0)
    assert found and found[0].start == 150 and found[0].stayed
    assert found[0].before == pytest.approx(0.02, rel=0.1)


def test_noise_and_a_rounded_near_zero_series_are_no_jumps() -> None:
    for seed in range(10):
        assert S.jumps(kl_like(seed=seed), ratio=4.0) == []
    # a three-decimal log of a value that lives at 0.000–0.002: a blip of a few rounding steps
    x = np.round(np.abs(np.random.default_rng(1).normal(0, 0.0006, 300)), 3)
    x[200] = 0.004
    assert S.jumps(x, ratio=4.0) == []
    # the same blip at full precision, ten times above a quiet level, is a jump
    y = np.abs(np.random.default_rng(1).normal(0, 0.0006, 300)) + 0.001
    y[200] = 0.02
    assert [j.start for j in S.jumps(y, ratio=4.0)] == [200]


def test_settle_skips_a_series_still_leaving_zero() -> None:
    t = np.arange(300)
    x = 0.1 * (1 - np.exp(-t / 60.0)) * np.exp(np.random.default_rng(2).normal(0, 0.1, 300))
    x[40] *= 8.0  # early, while its trailing level is still far below where the series settles
    assert S.jumps(x, ratio=4.0, settle=0.5) == []
    assert [j.start for j in S.jumps(x, ratio=4.0)] == [40]
    # after the first quarter of the run the guard is off: a late jump is a jump
    x[200] *= 8.0
    assert [j.start for j in S.jumps(x, ratio=4.0, settle=0.5)] == [200]


def test_ratio_is_required_only_when_asked() -> None:
    x = 10.0 + np.random.default_rng(3).normal(0, 0.01, 300)
    x[100] = 10.5  # 50 sd above, but only 1.05×
    assert [j.start for j in S.jumps(x)] == [100]
    assert S.jumps(x, ratio=2.0) == []


@settings(max_examples=25, deadline=None)
@given(scale=SCALES, seed=st.integers(0, 1000), at=st.integers(60, 280))
def test_jumps_are_scale_free(scale: float, seed: int, at: int) -> None:
    x = kl_like(seed=seed)
    x[at] *= 12.0
    found = S.jumps(x * scale, ratio=4.0)
    assert [j.start for j in found] == [at]
    assert found[0].ratio == pytest.approx(S.jumps(x, ratio=4.0)[0].ratio, rel=1e-6)
