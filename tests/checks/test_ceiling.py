"""The ceiling check (entropy_ceiling) and the run's forecast: which series is read, what each template says in
both languages, when it is dated, and the real public logs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from runs import finding, make_run

import rlvitals
from rlvitals.checks import RunView, forecast_params, load_checks, run_forecast
from rlvitals.checks.config import DiagnoseConfig
from rlvitals.diagnosis import diagnose
from rlvitals.run.run import Run

N = 400
GSM = "val-core/openai/gsm8k/acc/mean@1"
CHECK = next(c for c in load_checks() if c.id == "entropy_ceiling")


def _run(h_inf: float = 0.02, h_span: float = 0.6, tau: float = 60.0, val_every: int = 10,
         reward: bool = True, val: bool = True, law: tuple[float, float] = (0.25, 0.95)) -> Run:
    t = np.arange(1, N + 1, dtype=float)
    h = h_inf + h_span * np.exp(-(t - 1) / tau)
    a, b = law
    series: dict[str, np.ndarray] = {"actor/entropy": h}
    if reward:
        series["critic/score/mean"] = b + 0.1 - a * np.exp(h)
    if val:
        series[GSM] = np.where(t % val_every == 0, b - a * np.exp(h), np.nan)
    return make_run(series, config={"algorithm.adv_estimator": "grpo"})


def test_validation_is_read_before_the_training_reward() -> None:
    fc = run_forecast(RunView(_run()))
    assert fc.primary is not None and fc.primary.kind == "validation"
    assert fc.primary.metric == "openai/gsm8k/acc/mean@1"
    assert [f.kind for f in fc.forecasts] == ["validation", "training reward"]
    assert fc.primary.ceiling == pytest.approx(0.7, abs=1e-3)
    assert fc.forecasts[1].ceiling == pytest.approx(0.8, abs=1e-3)


def test_the_training_reward_is_read_when_validation_is_too_sparse() -> None:
    fc = run_forecast(RunView(_run(val_every=100)))  # 4 evaluations: fewer than min_points
    assert fc.primary is not None and fc.primary.kind == "training reward" and fc.primary.metric == "critic/score/mean"


def test_no_entropy_no_forecast() -> None:
    run = make_run({"critic/score/mean": np.linspace(0, 1, 50)})
    fc = run_forecast(RunView(run))
    assert fc.primary is None and str(fc.reason) == "the run did not log the policy's entropy (actor/entropy)"
    assert fc.to_json()["ceiling"] is None and fc.to_json()["reason"]["zh"] == "本次训练没有记录策略熵（actor/entropy）"


def test_the_forecast_is_computed_once_per_view() -> None:
    view = RunView(_run())
    params = forecast_params(CHECK.params)
    assert run_forecast(view, params) is run_forecast(view, params)


def test_near_the_ceiling_is_a_note_dated_from_when_the_entropy_crossed_the_line() -> None:
    run = _run()
    f = finding(diagnose(run), "entropy_ceiling")
    assert f.status == "note"
    # the entropy's level falls below log(1 + 0.1·(exp(H0) − 1)) there: the line of 10 % of the gain left
    h = run.series("actor/entropy")[1]
    line = math.log1p(0.1 * math.expm1(float(np.median(h[:20]))))
    first = int(np.argmax(h <= line)) + 1
    assert f.onset_step is not None and abs(f.onset_step - first) <= 3
    assert f.message["en"].startswith("openai/gsm8k/acc/mean@1 (validation) is near its ceiling: 0.")
    assert "（验证集）已接近天花板" in f.message["zh"] and "{" not in f.message["zh"] + f.message["en"]


def test_far_from_the_ceiling_is_ok() -> None:
    f = finding(diagnose(_run(h_inf=0.3, h_span=0.9, tau=600.0)), "entropy_ceiling")
    assert f.status == "ok" and "is heading for a ceiling of 0.7" in f.message["en"]
    assert "正朝着 0.7 的天花板走" in f.message["zh"]


@pytest.mark.parametrize(("target", "status", "template"), [(0.9, "warn", "will not reach the target 0.9"),
                                                             (0.5, "note", "is near its ceiling")])
def test_a_target_above_the_ceiling_warns(target: float, status: str, template: str) -> None:
    config = DiagnoseConfig().with_params("entropy_ceiling", target=target)
    d = diagnose(_run(), config)
    f = finding(d, "entropy_ceiling")
    assert f.status == status and template in f.message["en"]
    assert d.forecast is not None and d.forecast.target == target
    assert d.forecast.below_target is (target > 0.7)


def test_a_target_inside_the_interval_is_a_note() -> None:
    rng = np.random.default_rng(4)
    run = _run()
    noisy = run.frame[GSM].to_numpy() + rng.normal(0, 0.02, N)
    t = np.arange(1, N + 1)
    run = make_run({"actor/entropy": run.series("actor/entropy")[1], GSM: np.where(t % 10 == 0, noisy, np.nan)},
                   config={"algorithm.adv_estimator": "grpo"})
    fc = run_forecast(RunView(run)).primary
    assert fc is not None and fc.law is not None
    lo, hi = fc.law.ceiling_interval
    target = (fc.law.ceiling + hi) / 2  # above the estimate, inside the interval
    f = finding(diagnose(run, DiagnoseConfig().with_params("entropy_ceiling", target=target)), "entropy_ceiling")
    assert f.status == "note" and "is likely to stop short of the target" in f.message["en"]
    assert "很可能达不到目标" in f.message["zh"]


def test_a_run_the_law_does_not_describe_is_skipped_with_the_reason_in_both_languages() -> None:
    run = _run(law=(-0.25, 0.2))  # performance falls as the entropy falls
    f = finding(diagnose(run), "entropy_ceiling")
    assert f.status == "skipped"
    assert f.message["en"].startswith("No forecast: openai/gsm8k/acc/mean@1 did not rise as the entropy fell: "
                                      "a = -0.25")
    assert f.message["zh"].startswith("无法预测：熵下降时 openai/gsm8k/acc/mean@1 并没有随之上升：a = -0.25")


def test_skipped_without_entropy_and_for_preference_runs() -> None:
    d = diagnose(make_run({"critic/score/mean": np.linspace(0, 1, 50)}, config={"algorithm.adv_estimator": "grpo"}))
    assert finding(d, "entropy_ceiling").status == "skipped"
    assert d.forecast is not None and d.forecast.primary is None


def test_the_diagnosis_has_no_forecast_when_the_check_did_not_run() -> None:
    sudden = [c for c in load_checks() if c.sudden]
    assert diagnose(_run(), checks=sudden).forecast is None


def test_the_real_qwen_log_is_near_its_ceiling(real: Path) -> None:
    run = rlvitals.load(real / "verl__verl-data__Qwen2.5-0.5B-bsz256_2-prompt1024-resp512-0.567.log")[0]
    d = diagnose(run)
    f = finding(d, "entropy_ceiling")
    # entropy 0.54 → 0.053 nats; validation has sat at about 0.55 since step ~190 (read from the log)
    assert f.status == "note" and 200 <= (f.onset_step or 0) <= 260
    fc = d.forecast.primary if d.forecast else None
    assert fc is not None and fc.metric == "openai/gsm8k/reward/mean@1" and fc.ceiling is not None
    assert 0.55 < fc.ceiling < 0.65 and fc.gain_left is not None and fc.gain_left < 0.1
