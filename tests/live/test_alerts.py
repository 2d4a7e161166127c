"""The alert policy alone: first warn/fail, escalation, silence while it stays, cooldown after it clears."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from rlvitals.checks._base import Status
from rlvitals.diagnosis import Finding
from rlvitals.live.alerts import Alert, Cooldown, KeyState, Observation, alert_key, decide, settle, upgraded


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
    key = alert_key("run.log", "entropy_collapse")
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
    assert state3[alert_key("run.log", "entropy_collapse")].active


def test_one_check_is_one_alert_whatever_metrics_it_is_read_on() -> None:
    """A reward collapse read on a second, then a third metric is the same fault: one alert, kept up to date."""
    a, b, c = (_f("warn", metrics=(m,)) for m in ("actor/entropy", "actor/pg_clipfrac", "response_length/mean"))
    alerts, state = _step({}, 10, 0.0, a, b)
    assert len(alerts) == 1 and alerts[0].metrics == ("actor/entropy", "actor/pg_clipfrac")
    assert "2 findings" in alerts[0].message["en"]
    alerts, state = _step(state, 11, 1.0, a, b, c)  # the list of metrics grew: nothing new to say
    assert alerts == [] and state[alert_key("run.log", "entropy_collapse")].metrics == (
        "actor/entropy", "actor/pg_clipfrac", "response_length/mean")
    alerts, state = _step(state, 12, 2.0, a)  # fewer metrics: still the same finding, still held
    assert alerts == [] and state[alert_key("run.log", "entropy_collapse")].active
    alerts, state = _step(state, 13, 3.0, _f("ok"))
    assert alerts == [] and not state[alert_key("run.log", "entropy_collapse")].active


def test_a_cleared_finding_is_said_cleared_once_after_the_cooldown_then_alerts_again() -> None:
    cd = Cooldown(seconds=60.0, steps=5)
    key = alert_key("run.log", "entropy_collapse")
    (first,), state = _step({}, 10, 0.0, _f("fail"), cooldown=cd)
    alerts, state = _step(state, 11, 1.0, _f("ok"), cooldown=cd)
    assert alerts == []  # not yet: it may come straight back
    alerts, state = _step(state, 14, 70.0, _f("ok"), cooldown=cd)
    assert alerts == []  # 69 s but only 3 steps
    (cleared,), state = _step(state, 16, 80.0, _f("ok"), cooldown=cd)
    assert (cleared.kind, cleared.status, cleared.previous, cleared.step, cleared.key) == (
        "cleared", "ok", "fail", 16, first.key)
    assert cleared.headline() == "CLEARED entropy_collapse (was FAIL since step 10): no longer holds at step 16"
    assert cleared.message["en"] == "t: alerted FAIL at step 10; not seen since step 11"
    assert "已解除" in cleared.headline("zh") and "第 16 步" in cleared.headline("zh")
    assert Alert.from_json(cleared.to_json()) == cleared
    for step in range(17, 40):
        more, state = _step(state, step, 80.0 + step, _f("ok"), cooldown=cd)
        assert more == []  # said once
    (back,), state = _step(state, 41, 130.0, _f("warn"), cooldown=cd)  # soon, but it was said gone: again
    assert back.kind == "again" and state[key].active and not state[key].said_cleared


def test_a_finding_cleared_while_its_run_stopped_logging_is_settled_by_time() -> None:
    cd = Cooldown(seconds=60.0)
    _, state = _step({}, 10, 0.0, _f("warn"), cooldown=cd)
    _, state = _step(state, 11, 1.0, _f("ok"), cooldown=cd)
    assert settle(dict(state), 30.0, cd, {"run.log": 11}) == []
    assert settle(dict(state), 90.0, cd, {"other.log": 11}) == []  # another run's watcher says its own
    alerts, after = decide(state, [], 90.0, cd, quiet={"run.log": 11})
    assert [a.kind for a in alerts] == ["cleared"] and after[alert_key("run.log", "entropy_collapse")].said_cleared


def test_a_finding_that_rode_under_its_cause_is_not_said_cleared_on_its_own() -> None:
    from rlvitals.live.causes import Told
    cause, effect = _f("fail", "reward_collapse", ("reward",)), _f("warn", "entropy_collapse")
    told = Told(alert_key("run.log", "reward_collapse"), 12, "warn", {}, {"en": "after the collapse"})
    obs = Observation("run.log", 20, [cause, effect], story={alert_key("run.log", "entropy_collapse"): told})
    alerts, state = decide({}, [obs], 0.0)
    assert [a.check for a in alerts] == ["reward_collapse"] and alerts[0].consequences
    alerts, state = decide(state, [Observation("run.log", 21, [cause, _f("ok")])], 1.0)
    assert alerts == []
    assert decide(state, [Observation("run.log", 22, [cause, _f("ok")])], 700.0)[0] == []


def test_held_observations_neither_raise_nor_clear() -> None:
    _, state = _step({}, 10, 0.0, _f("warn"))
    alerts, after = decide(state, [Observation("run.log", 11, [_f("fail", "kl_jump")], held=True)], 1.0)
    assert alerts == [] and after == state


def test_state_of_an_older_watcher_is_keyed_anew_without_a_burst_of_messages() -> None:
    """Keys that named the metrics: one per check now; those cleared silently then are not said cleared now."""
    on = KeyState("run.log", "reward_collapse", ("reward",), "fail", "fail", True, 0.0, 40)
    off = KeyState("run.log", "kl_jump", ("kl",), "warn", "ok", False, 0.0, 10, 5.0, 12)
    also = KeyState("run.log", "reward_collapse", ("score",), "warn", "ok", False, 0.0, 30, 5.0, 35)
    keys = upgraded({'["run.log","reward_collapse",["reward"]]': on, '["run.log","kl_jump",["kl"]]': off,
                     '["run.log","reward_collapse",["score"]]': also})
    assert keys == {alert_key("run.log", "reward_collapse"): on,
                    alert_key("run.log", "kl_jump"): KeyState.from_json({**off.to_json(), "said_cleared": True})}
    assert settle(keys, 1e9, Cooldown(), {"run.log": 99}) == []


def test_state_round_trips_through_json() -> None:
    _, state = _step({}, 10, 0.0, _f("fail"))
    for key, value in state.items():
        assert KeyState.from_json(value.to_json()) == value
        assert key == alert_key(value.run, "entropy_collapse")
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
    key = alert_key("run.log", "entropy_collapse")
    assert all(s.active for s in after.values()) and after[key] == state[key]
    _, cleared = decide(after, [Observation("run.log", 12, [ok])], 2.0)
    assert not cleared[key].active  # a whole diagnosis does clear


def test_an_alert_names_the_onset_and_the_step_it_was_seen_at() -> None:
    (alert,), _ = _step({}, 30, 0.0, _f("warn"))
    assert alert.headline() == "WARN entropy_collapse since step 10, seen at step 30"
    from dataclasses import replace
    assert replace(alert, onset_step=None).headline() == "WARN entropy_collapse at step 30"
    assert replace(alert, onset_step=30, kind="again").headline() == "WARN (again) entropy_collapse at step 30"


def test_a_finding_left_without_its_cause_alerts_on_its_own() -> None:
    """The root cause's alert carried the finding; once the cause no longer holds, the finding that still
    does is said on its own rather than left unsaid."""
    from rlvitals.live.causes import Told
    cause, effect = _f("warn", "rollout_mismatch", ("rollout_corr/x",)), _f("fail", "reward_collapse", ("reward",))
    told = Told(alert_key("run.log", "rollout_mismatch"), 20, "fail", {}, {"en": "off-policy"})
    obs = Observation("run.log", 70, [cause, effect], story={alert_key("run.log", "reward_collapse"): told})
    alerts, state = decide({}, [obs], 0.0)
    assert [a.check for a in alerts] == ["rollout_mismatch"]
    alerts, state = decide(state, [Observation("run.log", 71, [cause, effect], story=obs.story)], 1.0)
    assert alerts == []  # still covered
    alerts, state = decide(state, [Observation("run.log", 90, [_f("ok", "rollout_mismatch"), effect])], 2.0)
    assert [(a.check, a.kind, a.status) for a in alerts] == [("reward_collapse", "new", "fail")]
    assert state[alert_key("run.log", "reward_collapse")].told
    alerts, state = decide(state, [Observation("run.log", 91, [_f("ok", "rollout_mismatch"), effect])], 3.0)
    assert alerts == []


def test_a_cleared_alert_reaches_every_kind_of_sink_in_its_own_words(tmp_path: Path) -> None:
    import json

    from rlvitals.watch.sinks import JsonlSink, alert_env
    from rlvitals.watch.webhook import discord_body, slack_body

    cd = Cooldown(seconds=0.0)
    _, state = _step({}, 10, 0.0, _f("fail"), cooldown=cd)
    (cleared,), _ = _step(state, 11, 1.0, _f("ok"), cooldown=cd)
    slack = slack_body(cleared)
    assert slack["text"].startswith("rlvitals: CLEARED entropy_collapse (was FAIL since step 10)")
    assert "CLEARED" in json.dumps(slack["blocks"][0])
    discord = discord_body(cleared, "zh")
    assert discord["embeds"][0]["color"] == 0x2CA02C and "已解除" in discord["embeds"][0]["title"]
    env = alert_env(cleared)
    assert (env["RLVITALS_KIND"], env["RLVITALS_STATUS"]) == ("cleared", "ok")
    sink = JsonlSink(tmp_path / "a.jsonl")
    assert sink.send(cleared) is None
    line = json.loads((tmp_path / "a.jsonl").read_text())
    assert (line["kind"], line["status"], line["previous"], line["key"]) == ("cleared", "ok", "fail", cleared.key)
