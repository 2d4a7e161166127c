"""The forecast of one performance series: a run that follows the law exactly is recovered to 1e-3 and its
future read from its entropy decay; noisy, sparse and gappy runs are read; runs the law does not describe
are declined with the reason, in both languages."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvitals.forecast import forecast, horizons

STEPS = np.arange(1, 601)


def _entropy(h_inf: float, h_span: float, tau: float = 150.0) -> np.ndarray:
    return h_inf + h_span * np.exp(-(STEPS - 1) / tau)


@pytest.mark.parametrize(("h_inf", "h_span"), [(0.01, 0.05), (0.2, 1.8), (0.05, 0.6)])
def test_a_run_on_the_law_is_recovered_to_a_thousandth(h_inf: float, h_span: float) -> None:
    h = _entropy(h_inf, h_span)
    val = STEPS[::10]  # validation every 10 steps
    r = 0.9 - 0.3 * np.exp(h[val - 1])
    f = forecast(STEPS, h, val, r, metric="val/acc", kind="validation")
    assert f.reason is None and f.holds and f.law is not None
    assert f.law.a == pytest.approx(0.3, abs=1e-3) and f.law.b == pytest.approx(0.9, abs=1e-3)
    assert f.ceiling == pytest.approx(0.6, abs=1e-3)
    # the entropy is an exact exponential: the decay carries it on, and the law reads it
    for step, value in f.predicted.items():
        assert value == pytest.approx(0.9 - 0.3 * np.exp(h_inf + h_span * np.exp(-(step - 1) / 150.0)), abs=1e-3)
    assert f.entropy_settles == pytest.approx(h_inf, abs=1e-3)
    assert f.plateau == pytest.approx(0.9 - 0.3 * np.exp(h_inf), abs=1e-3)


def test_what_is_spent_and_what_is_left() -> None:
    h = _entropy(0.02, 1.0, tau=60.0)
    f = forecast(STEPS, h, STEPS, 0.8 - 0.2 * np.exp(h), metric="reward", kind="training reward")
    start, now = float(np.median(h[:30])), float(np.median(h[-30:]))
    assert f.entropy_start == start and f.entropy_now == now
    assert f.entropy_consumed == pytest.approx(1 - now / start)
    assert f.gain_left == pytest.approx(np.expm1(now) / np.expm1(start))
    assert f.gain_per_1000 == pytest.approx(f.predicted[600 + 1000] - f.now)
    assert f.gain_per_1000 is not None and abs(f.gain_per_1000) < 1e-3  # the entropy has settled: nothing to buy


def test_a_noisy_gappy_run_is_read_and_its_intervals_hold_the_truth() -> None:
    rng = np.random.default_rng(7)
    keep = np.sort(rng.choice(len(STEPS), 450, replace=False))  # a quarter of the steps missing
    h = _entropy(0.1, 1.0)
    noisy_h = h + rng.normal(0, 0.02, len(h))
    r = 0.85 - 0.2 * np.exp(h) + rng.normal(0, 0.05, len(h))
    f = forecast(STEPS[keep], noisy_h[keep], STEPS[keep], r[keep], metric="reward", kind="training reward")
    assert f.holds and f.law is not None
    lo, hi = f.law.ceiling_interval
    assert lo <= 0.65 <= hi and hi - lo < 0.1
    for step, (plo, phi) in f.predicted_interval.items():
        truth = 0.85 - 0.2 * np.exp(0.1 + np.exp(-(step - 1) / 150.0))
        assert plo <= truth <= phi


def test_declined_when_too_few_points_fall_within_the_entropy_steps() -> None:
    h = _entropy(0.1, 1.0)
    f = forecast(STEPS, h, np.array([0, 300, 600, 900, 2000]), np.array([0.1, 0.2, 0.3, 0.4, 0.5]),
                 metric="val/acc", kind="validation")
    assert not f.holds and f.ceiling is None and f.predicted == {}
    assert str(f.reason) == "only 3 points of val/acc fall within the steps the entropy was logged (6 needed)"
    assert f.reason is not None and f.reason.zh == "val/acc 只有 3 个点落在记录了熵的步数范围内（至少需要 6 个）"


def test_declined_when_the_entropy_did_not_fall() -> None:
    rising = 0.3 + STEPS / 1000
    f = forecast(STEPS, rising, STEPS, np.linspace(0, 1, len(STEPS)), metric="reward", kind="training reward")
    assert str(f.reason).startswith("the entropy did not fall enough to read reward against it: "
                                    "0.316 → 0.885 nats (-181%")


def test_declined_when_the_values_are_too_large_to_fit() -> None:
    # a broken log (a fuzzed SwanLab file found it): squares of 1e160 overflow, so no law is fitted, and no warning
    h = _entropy(0.1, 1.0)
    f = forecast(STEPS, h, STEPS, 1e160 * (0.9 - 0.2 * np.exp(h)), metric="reward", kind="training reward")
    assert not f.holds and f.law is None and str(f.reason).startswith(
        "the values are too large to fit a law to (entropy up to ")
    assert str(f.reason).endswith("reward up to 6.75e+159 in size): their squares do not fit in a float")
    assert f.reason is not None and f.reason.zh.endswith("它们的平方超出了浮点数的范围")


def test_declined_when_performance_falls_with_the_entropy() -> None:
    h = _entropy(0.1, 1.0)
    f = forecast(STEPS, h, STEPS, 0.2 + 0.3 * np.exp(h), metric="reward", kind="training reward")
    assert str(f.reason).startswith("reward did not rise as the entropy fell: a = -0.3")
    assert f.reason is not None and "没有完全落在零以上" in f.reason.zh


def test_declined_when_the_law_leaves_the_movement_unexplained() -> None:
    h = _entropy(0.1, 1.0, tau=600.0)  # falls steadily
    # rises with the entropy's fall, but waves around the law far beyond its noise
    r = 0.8 - 0.2 * np.exp(h) + 0.12 * np.sin(STEPS / 30.0)
    f = forecast(STEPS, h, STEPS, r, metric="reward", kind="training reward")
    assert not f.holds and "the law explains only" in str(f.reason) and "该定律只解释了" in f.reason.zh


def test_horizons_are_a_quarter_half_one_and_two_run_lengths_and_a_thousand_steps_on() -> None:
    assert horizons(1000, 1000) == [1250, 1500, 2000, 3000]
    assert horizons(10, 10) == [13, 15, 20, 30, 1010]


def test_the_json_has_every_key_and_is_json() -> None:
    h = _entropy(0.05, 0.8)
    held = forecast(STEPS, h, STEPS[::20], 0.7 - 0.1 * np.exp(h[::20]), metric="val/acc", kind="validation")
    declined = forecast(STEPS, 0.3 + STEPS / 1000, STEPS, np.zeros(600), metric="reward", kind="training reward")
    for f in (held, declined):
        out = json.loads(json.dumps(f.to_json()))
        assert set(out) >= {"ceiling", "ceiling_interval", "a", "b", "entropy_consumed", "metric", "predicted",
                            "reason"}
    assert declined.to_json()["ceiling"] is None and declined.to_json()["predicted"] == {}
    assert declined.to_json()["reason"]["zh"].startswith("熵下降得不够")
    assert list(held.to_json()["predicted"]) == [str(s) for s in horizons(600, 600)]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 700))
def test_the_entropy_level_is_the_median_of_a_window_that_shrinks_evenly_at_the_ends(seed: int, n: int) -> None:
    from rlvitals.forecast.model import _level

    x = np.random.default_rng(seed).normal(size=n).round(2)  # rounded: ties
    half = max(1, n // 100)
    radius = [min(half, i, n - 1 - i) for i in range(n)]
    want = x if n < 3 else np.array([np.median(x[i - r : i + r + 1]) for i, r in enumerate(radius)])
    level = _level(x)
    assert np.array_equal(level, want)
    assert _level(x.copy()) is level and not level.flags.writeable  # computed once per values, shared read-only


def test_series_read_against_one_entropy_share_its_fits_and_give_what_each_gives_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from rlvitals.forecast import model

    h = _entropy(0.05, 0.8) + np.random.default_rng(4).normal(0, 0.01, 600)
    val = STEPS[::10]
    series = [(val, 0.7 - 0.1 * np.exp(h[val - 1])), (val, 0.9 - 0.2 * np.exp(h[val - 1])),
              (STEPS, 0.8 - 0.15 * np.exp(h) + np.random.default_rng(5).normal(0, 0.02, 600))]
    alone = []
    for steps, r in series:
        model._ENTROPIES.clear()
        alone.append(forecast(STEPS, h, steps, r, metric="m", kind="validation").to_json())
    model._ENTROPIES.clear()
    bootstraps: list[int] = []
    fit_rows = model.fit_rows
    monkeypatch.setattr(model, "fit_rows", lambda *a, **k: bootstraps.append(1) or fit_rows(*a, **k))
    together = [forecast(STEPS, h, steps, r, metric="m", kind="validation").to_json() for steps, r in series]
    assert together == alone and all(f["ceiling"] is not None for f in together)
    assert len(bootstraps) == 1  # the entropy's decay bootstrapped once for the three series
    # one first half for the two validation curves (the same steps), one for the series logged every step
    assert len(model._ENTROPIES) == 1 and len(next(iter(model._ENTROPIES.values())).halves) == 2
