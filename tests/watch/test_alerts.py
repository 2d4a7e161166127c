"""The alert policy alone: first warn/fail, escalation, silence while it stays, cooldown after it clears."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rlvitals.checks._base import Status
from rlvitals.diagnosis import Finding
from rlvitals.watch.alerts import Alert, Cooldown, KeyState, Observation, decide, finding_key


def _f(status: Status, check: str = "entropy_collapse", metrics: tuple[str, ...] = ("actor/entropy",)) -> Finding:
    return Finding(check, "L4", status, {"en": "t", "zh": "t"}, {"en": f"{check} is {status}", "zh": "z"},
                   {"en": "a", "zh": "a"}, metrics, onset_step=10)


def _step(state: dict[str, KeyState], step: int, now: float, *findings: Finding,
          cooldown: Cooldown | None = None, run: str = "run.log") -> tuple[list[Alert], dict[str, KeyState]]:
    return decide(state, [Observation(run, step, list(findings))], now, cooldown)


def test_first_warn_alerts_once_and_never_again_while_it_stays() -> None:
    alerts, state = _step({}, 10, 0.0, _f("warn"))
    assert [(a.kind, a.status, a.step) for a in alerts] == [("new", "warn", 10)]
    for step in range(11, 200):
        more, state = _step(state, step, float(step), _f("warn"))
        assert more == []


def test_escalation_alerts_and_deescalation_does_not() -> None:
    _, state = _step({}, 10, 0.0, _f("warn"))
    alerts, state = _step(state, 11, 1.0, _f("fail"))
    assert [(a.kind, a.status, a.previous) for a in alerts] == [("escalated", "fail", "warn")]
    assert alerts[0].text() == ("FAIL (was warn) entropy_collapse since step 10, seen at step 11 (run.log): "
                                "entropy_collapse is fail")
    alerts, state = _step(state, 12, 2.0, _f("warn"))
    assert alerts == []
    alerts, state = _step(state, 13, 3.0, _f("fail"))
    assert alerts == []  # fail was already alerted in this episode


def test_cleared_then_back_within_cooldown_is_silent_and_after_cooldown_alerts_again() -> None:
    cd = Cooldown(seconds=60.0, steps=5)
    _, state = _step({}, 10, 0.0, _f("warn"), cooldown=cd)
    _, state = _step(state, 11, 1.0, _f("ok"), cooldown=cd)
    key = finding_key("run.log", _f("warn"))
    assert not state[key].active and state[key].cleared_step == 11
    alerts, state = _step(state, 13, 30.0, _f("warn"), cooldown=cd)  # flapping back: quiet
    assert alerts == [] and state[key].active
    _, state = _step(state, 14, 31.0, _f("ok"), cooldown=cd)
    alerts, state = _step(state, 16, 100.0, _f("warn"), cooldown=cd)  # 69 s but only 2 steps
    assert alerts == []
    _, state = _step(state, 17, 101.0, _f("ok"), cooldown=cd)
    alerts, state = _step(state, 40, 200.0, _f("warn"), cooldown=cd)
    assert [a.kind for a in alerts] == ["again"]


def test_a_quiet_rearm_still_alerts_an_escalation() -> None:
    _, state = _step({}, 10, 0.0, _f("warn"))
    _, state = _step(state, 11, 1.0, _f("ok"))
    alerts, state = _step(state, 12, 2.0, _f("fail"))
    assert [(a.kind, a.previous) for a in alerts] == [("escalated", "warn")]


def test_skipped_changes_nothing_and_other_runs_are_separate() -> None:
    _, state = _step({}, 10, 0.0, _f("warn"))
    _, state2 = _step(state, 11, 1.0, _f("skipped"))
    assert state2 == state
    alerts, state3 = _step(state, 11, 1.0, _f("warn"), run="other.log")
    assert [a.run for a in alerts] == ["other.log"]
    assert state3[finding_key("run.log", _f("warn"))].active


def test_keys_differ_by_metrics_and_a_vanished_key_clears() -> None:
    a, b = _f("warn", metrics=("actor/entropy",)), _f("warn", metrics=("actor/pg_clipfrac",))
    alerts, state = _step({}, 10, 0.0, a, b)
    assert len(alerts) == 2
    alerts, state = _step(state, 11, 1.0, a)  # b is no longer reported while its check still runs
    assert alerts == [] and not state[finding_key("run.log", b)].active


def test_state_round_trips_through_json() -> None:
    _, state = _step({}, 10, 0.0, _f("fail"))
    for key, value in state.items():
        assert KeyState.from_json(value.to_json()) == value
        assert key == finding_key(value.run, _f("fail"))
    alerts, _ = _step({}, 10, 0.0, _f("fail"))
    assert Alert.from_json(alerts[0].to_json()) == alerts[0]


_STATUS = st.sampled_from(["ok", "warn", "fail", "skipped"])


@given(st.lists(_STATUS, min_size=1, max_size=60))
def test_any_sequence_alerts_at_most_once_per_level_per_episode(statuses: list[Status]) -> None:
    """With an infinite cooldown, a key alerts on its first warn/fail and on its first fail: never more."""
    cd = Cooldown(seconds=float("inf"))
    state: dict[str, KeyState] = {}
    sent: list[Alert] = []
    for i, status in enumerate(statuses):
        alerts, state = _step(state, i, float(i), _f(status), cooldown=cd)
        sent.extend(alerts)
    levels = [a.status for a in sent]
    assert len(levels) <= 2 and len(set(levels)) == len(levels)
    hot = [s for s in statuses if s in ("warn", "fail")]
    assert bool(sent) == bool(hot)
    if "fail" in hot:
        assert levels[-1] == "fail"


def test_a_partial_observation_raises_but_never_clears() -> None:
    """The watcher's tail pass sees only part of a run: what it does not report is not gone."""
    _, state = _step({}, 10, 0.0, _f("fail"), _f("warn", "kl_jump", ("actor/ppo_kl",)))
    ok = _f("ok")
    alerts, after = decide(state, [Observation("run.log", 11, [ok, _f("fail", "grad_norm_spike", ())], partial=True)],
                           1.0)
    assert [(a.check, a.kind) for a in alerts] == [("grad_norm_spike", "new")]
    key = finding_key("run.log", ok)
    assert all(s.active for s in after.values()) and after[key] == state[key]
    _, cleared = decide(after, [Observation("run.log", 12, [ok])], 2.0)
    assert not cleared[key].active  # a whole diagnosis does clear


def test_an_alert_names_the_onset_and_the_step_it_was_seen_at() -> None:
    (alert,), _ = _step({}, 30, 0.0, _f("warn"))
    assert alert.headline() == "WARN entropy_collapse since step 10, seen at step 30"
    from dataclasses import replace
    assert replace(alert, onset_step=None).headline() == "WARN entropy_collapse at step 30"
    assert replace(alert, onset_step=30, kind="again").headline() == "WARN (again) entropy_collapse at step 30"
