"""New findings wait until they have held: a look's blip on the first steps of a run is never alerted; a finding
that holds is, one look later; a worse level waits while the alert stands as it is."""

from __future__ import annotations

from rlvitals.checks._base import Status
from rlvitals.diagnosis import Finding
from rlvitals.watch.alerts import Alert, KeyState, Observation, alert_key, decide
from rlvitals.watch.confirm import Confirm, Confirmations


def _f(status: Status, check: str = "kl_band") -> Finding:
    return Finding(check, "L1", status, {"en": check}, {"en": f"{check} {status}"}, {}, ("actor/kl",), onset_step=1)


def _looks(rule: Confirm, *looks: tuple[int, list[Finding]], partial: frozenset[int] = frozenset()) -> list[Alert]:
    c, keys, sent = Confirmations(rule), {}, []  # type: ignore[var-annotated]
    for step, findings in looks:
        obs = c.confirmed(Observation("run.log", step, findings, partial=step in partial), keys)
        alerts, keys = decide(keys, [obs], float(step))
        sent.extend(alerts)
    return sent


def test_a_finding_seen_at_one_look_only_is_never_alerted() -> None:
    assert _looks(Confirm(2, 0.0), (10, [_f("warn")]), (11, [_f("ok")]), (12, [_f("ok")])) == []
    assert _looks(Confirm(2, 0.0), (10, [_f("warn")]), (11, [_f("ok")]), (12, [_f("warn")])) == []


def test_a_finding_that_holds_is_alerted_once_its_span_is_long_enough() -> None:
    alerts = _looks(Confirm(2, 0.1), (100, [_f("warn")]), (105, [_f("warn")]), (110, [_f("warn")]),
                    (111, [_f("warn")]), (112, [_f("warn")]))
    assert [(a.kind, a.step) for a in alerts] == [("new", 111)]  # 11 steps (10 % of 111) since step 100
    assert [(a.kind, a.step) for a in _looks(Confirm(1, 0.0), (100, [_f("warn")]))] == [("new", 100)]


def test_a_worse_level_waits_while_the_alert_stands() -> None:
    c = Confirmations(Confirm(2, 0.0))
    keys: dict[str, KeyState] = {}
    for step, status in ((1, "warn"), (2, "warn")):
        _, keys = decide(keys, [c.confirmed(Observation("run.log", step, [_f(status)]), keys)], float(step))
    key = alert_key("run.log", "kl_band")
    assert keys[key].alerted == "warn"
    alerts, keys = decide(keys, [c.confirmed(Observation("run.log", 3, [_f("fail")]), keys)], 3.0)
    assert alerts == [] and keys[key].active and keys[key].alerted == "warn"  # not cleared while fail waits
    alerts, keys = decide(keys, [c.confirmed(Observation("run.log", 4, [_f("fail")]), keys)], 4.0)
    assert [(a.kind, a.status) for a in alerts] == [("escalated", "fail")]


def test_a_tail_pass_look_counts_but_never_starts_the_count_again() -> None:
    alerts = _looks(Confirm(3, 0.0), (10, [_f("warn")]), (11, []), (12, [_f("warn")]), (13, [_f("warn")]),
                    partial=frozenset({11}))
    assert [(a.kind, a.step) for a in alerts] == [("new", 13)]


def test_a_crash_or_a_nan_is_alerted_at_once() -> None:
    """What later steps cannot undo does not wait: a run that died brings no next look."""
    alerts = _looks(Confirm(3, 0.5), (14, [_f("fail", "run_crashed"), _f("fail", "nan_inf"), _f("warn")]))
    assert sorted(a.check for a in alerts) == ["nan_inf", "run_crashed"]
