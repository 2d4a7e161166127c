"""The first checks and the diagnosis assembly: skips with reasons, verdicts, reading order, caps."""

from __future__ import annotations

import numpy as np
from runs import finding, make_run

from rlvitals.checks.config import CheckSettings, DiagnoseConfig
from rlvitals.diagnosis import READING_ORDER, diagnose
from rlvitals.synthetic.simulate import Scenario, simulate


def _sim(**kw: object) -> dict[str, np.ndarray]:
    return simulate(Scenario(**kw))  # type: ignore[arg-type]


def test_grad_spike_and_entropy_collapse_on_the_example() -> None:
    d = diagnose(make_run(_sim()))
    spike = finding(d, "grad_norm_spike")
    assert spike.status == "note" and spike.onset_step == 95  # one spike in 300 steps: isolated, a note
    assert "13× its recent median" in spike.message["en"] and "第 95 步" in spike.message["zh"]
    collapse = finding(d, "entropy_collapse")
    assert collapse.status == "fail" and abs(collapse.onset_step - 180) <= 3
    assert d.layers["L2"] == "fail" and d.verdict == "fail"


def test_healthy_control_passes() -> None:
    d = diagnose(make_run(_sim(collapse_at=None, grad_spike_at=None)))
    assert finding(d, "grad_norm_spike").status == "ok"
    assert finding(d, "entropy_collapse").status == "ok"
    assert all(f.status != "fail" for f in d.findings), [f.message["en"] for f in d.findings if f.status == "fail"]


def test_missing_metric_is_skipped_with_the_reason() -> None:
    d = diagnose(make_run({"actor/pg_loss": np.linspace(0, 1, 30)}))
    f = finding(d, "entropy_collapse")
    assert f.status == "skipped" and f.message["en"] == "needs actor/entropy, which this run did not log"
    assert f.message["zh"] == "需要 actor/entropy，本次训练没有记录"


def test_family_mismatch_is_skipped_with_the_reason() -> None:
    d = diagnose(make_run({"rewards/chosen": np.linspace(0, 1, 30), "actor/entropy": np.ones(30)}, framework="trl"))
    f = finding(d, "entropy_collapse")
    assert f.status == "skipped" and f.message["en"] == "applies to rl runs; this run is preference"


def test_nan_is_a_failure_with_its_first_step() -> None:
    loss = np.linspace(1, 0.5, 40)
    loss[17] = np.nan
    d = diagnose(make_run({"actor/pg_loss!nan": loss, "actor/entropy": np.ones(40)}))
    f = finding(d, "nan_inf")
    assert f.status == "fail" and f.onset_step == 18 and "actor/pg_loss" in f.message["en"]


def test_config_disables_and_caps() -> None:
    run = make_run(_sim())
    # one spike fails when a "cluster" is one spike and the gradient must stay settled for 1,000 steps after it
    strict = {"fail_count": 1, "fail_window": 1000}
    cfg = DiagnoseConfig({"entropy_collapse": CheckSettings(enabled=False),
                          "grad_norm_spike": CheckSettings(params=strict, max_status="warn")})
    d = diagnose(run, cfg)
    assert finding(d, "entropy_collapse").message["en"] == "disabled in the config"
    assert finding(d, "grad_norm_spike").status == "warn"
    d = diagnose(run, DiagnoseConfig({"grad_norm_spike": CheckSettings(params=strict)}))
    assert finding(d, "grad_norm_spike").status == "fail"


def test_findings_follow_the_reading_order() -> None:
    d = diagnose(make_run(_sim()))
    layers = [f.layer for f in d.findings]
    assert layers == sorted(layers, key=READING_ORDER.index)
    js = d.to_json()
    assert list(js["layers"]) == list(READING_ORDER) and js["verdict"] == "fail"
    for f in js["findings"]:
        assert set(f) == {"check", "layer", "status", "title", "message", "metrics", "onset_step", "span",
                          "points", "template", "evidence", "advice"}


def test_a_metric_logged_too_few_times_is_not_called_missing() -> None:
    d = diagnose(make_run({"actor/entropy": np.array([1.0, 0.9]), "actor/pg_loss": np.array([0.1, 0.2])}))
    f = finding(d, "entropy_collapse")
    assert f.status == "skipped" and "did not log" not in f.message["en"]
    assert f.message["en"] == "this run logged actor/entropy, but too few usable values (steps, finite points) to judge"
    assert "可用的值" in f.message["zh"]


def test_skip_reasons_are_written_in_both_languages() -> None:
    """Every way a check is skipped, in Chinese as well: the families by name, the needed keys joined."""
    from rlvitals.checks import load_checks

    by_id = {c.id: c for c in load_checks()}
    ids = ("pref_margins", "entropy_clip_joint", "gen_update_balance", "val_progress")
    d = diagnose(make_run({"actor/entropy": np.array([1.0, 0.9, 0.8, 0.7, 0.6, 0.5])}), checks=[by_id[i] for i in ids])
    said = {f.check: f.message for f in d.findings}
    assert said["pref_margins"] == {"en": "applies to preference runs; this run is rl",
                                    "zh": "只适用于偏好优化，本次是强化学习"}
    assert said["entropy_clip_joint"] == {"en": "needs actor/pg_clipfrac, which this run did not log",
                                          "zh": "需要 actor/pg_clipfrac，本次训练没有记录"}
    assert said["gen_update_balance"]["zh"] == ("需要 timing_s/gen 或 timing_s/make_experience，以及 "
                                                "timing_s/update_actor 或 timing_s/ppo_train，本次训练没有记录")
    assert said["gen_update_balance"]["en"] == ("needs timing_s/gen or timing_s/make_experience, timing_s/update_actor "
                                                "or timing_s/ppo_train, which this run did not log")
    assert said["val_progress"]["zh"] == "需要验证集指标（val-core/<source>/…、eval_…），本次训练没有记录"


def test_what_a_check_needs_in_words_is_given_in_both_languages() -> None:
    import pytest

    from rlvitals.checks import FUNCTIONS, parse_checks
    from rlvitals.errors import CatalogError

    only = {"nan_inf": FUNCTIONS["nan_inf"]}
    (check,) = parse_checks({"check": [_record(needs_text="a console log", needs_text_zh="控制台日志")]}, only)
    assert (check.needs_text, check.needs_text_zh) == ("a console log", "控制台日志")
    with pytest.raises(CatalogError, match=r"checks: check 'nan_inf' says what it needs in one language only; "
                                           r"give needs_text and needs_text_zh both \(or neither\)"):
        parse_checks({"check": [_record(needs_text="a console log")]}, only)


def _record(**extra: object) -> dict[str, object]:
    words = {"title": "t", "ok": "fine", "advice": "a"}
    return {"id": "nan_inf", "layer": "L1", "rule": "nan-inf", "en": words, "zh": words, **extra}


def test_sudden_is_a_validated_record_field_false_by_default() -> None:
    import pytest

    from rlvitals.checks import FUNCTIONS, parse_checks
    from rlvitals.errors import CatalogError

    only = {"nan_inf": FUNCTIONS["nan_inf"]}
    assert parse_checks({"check": [_record()]}, only)[0].sudden is False
    assert parse_checks({"check": [_record(sudden=True)]}, only)[0].sudden is True
    with pytest.raises(CatalogError, match=r"checks: check 'nan_inf' has sudden = 'yes'; expected true or false"):
        parse_checks({"check": [_record(sudden="yes")]}, only)


def test_the_sudden_checks_are_the_abrupt_events_read_on_recent_steps() -> None:
    """Spikes, jumps, NaN, clip bursts, entropy collapse and surges; never a check whose baseline is the
    whole run (trends, plateaus, "since the start", validation progress, a share of the run's range)."""
    from rlvitals.checks import sudden_checks

    assert {c.id for c in sudden_checks()} == {"grad_norm_spike", "nan_inf", "loss_jump", "kl_jump", "clipfrac_high",
                                               "entropy_collapse", "entropy_surge", "turns_surge"}


def test_diagnose_runs_only_the_checks_it_is_given() -> None:
    from rlvitals.checks import sudden_checks

    run = make_run(_sim())
    d = diagnose(run, checks=sudden_checks())
    assert {f.check for f in d.findings} == {c.id for c in sudden_checks()}
    assert finding(d, "grad_norm_spike").status == "note" and finding(d, "entropy_collapse").status == "fail"
    assert d.layers["L5"] == "skipped" and d.verdict == "fail"


def test_a_template_with_its_own_advice_never_shows_the_general_one() -> None:
    import pytest

    from rlvitals.checks import FUNCTIONS, parse_checks
    from rlvitals.errors import CatalogError

    only = {"nan_inf": FUNCTIONS["nan_inf"]}
    words = {"title": "t", "ok": "fine", "fail": "bad", "advice": "general", "advice_fail": "for a failure"}
    (check,) = parse_checks({"check": [_record(en=words, zh=words)]}, only)
    assert check.en.advice_for("fail") == "for a failure" and check.en.advice_for("ok") == "general"
    assert "advice_fail" not in check.en.messages
    run = make_run({"actor/entropy!nan": np.array([1.0, np.nan, 0.9, 0.8, 0.7, 0.6])})
    (finding_,) = diagnose(run, checks=[check]).findings
    assert finding_.status == "fail" and finding_.advice == {"en": "for a failure", "zh": "for a failure"}
    stray = {**words, "advice_warn": "no such template"}
    with pytest.raises(CatalogError, match=r"nan_inf en has advice for templates it does not have: \['warn'\]"):
        parse_checks({"check": [_record(en=stray, zh=words)]}, only)


def test_min_points_is_a_validated_record_field() -> None:
    import pytest

    from rlvitals.checks import FUNCTIONS, parse_checks
    from rlvitals.checks._base import MIN_POINTS
    from rlvitals.errors import CatalogError

    only = {"nan_inf": FUNCTIONS["nan_inf"]}
    assert parse_checks({"check": [_record()]}, only)[0].min_points == MIN_POINTS
    assert parse_checks({"check": [_record(min_points=3)]}, only)[0].min_points == 3
    with pytest.raises(CatalogError, match=r"check 'nan_inf' has min_points = 0; expected a whole number ≥ 1"):
        parse_checks({"check": [_record(min_points=0)]}, only)
