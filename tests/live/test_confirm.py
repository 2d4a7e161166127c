"""New findings wait until they have held: a look's blip on the first steps of a run is never alerted; a finding
that holds is, one look later; a worse level waits while the alert stands as it is."""

from __future__ import annotations

from rlvitals.checks._base import Status
from rlvitals.diagnosis import Finding
from rlvitals.live.alerts import Alert, KeyState, Observation, alert_key, decide
from rlvitals.live.confirm import Confirm, Confirmations


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
    c = Confirmations(Confirm(2, 0.0, 0.0))
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


def test_a_nan_is_alerted_at_once_and_a_crash_once_the_log_stops_growing() -> None:
    """What later steps cannot undo does not wait; a crash waits for the output a dying trainer flushes after
    its traceback, which may show it had finished: it is said once the run stopped moving."""
    c, keys = Confirmations(Confirm(3, 0.5)), {}  # type: ignore[var-annotated]
    crash = _f("fail", "run_crashed")
    obs = c.confirmed(Observation("run.log", 14, [crash, _f("fail", "nan_inf"), _f("warn")]), keys, now=100.0)
    assert [f.check for f in obs.findings] == ["nan_inf"]
    assert c.quiet(101.0, after=2.0) == []  # still moving, as far as anyone knows
    again = c.confirmed(Observation("run.log", 14, [crash]), keys, now=102.0)
    assert again.findings == []  # a second look at the same steps is no evidence either
    (still,) = c.quiet(104.5, after=2.0)
    assert [(f.check, f.status) for f in still.findings] == [("run_crashed", "fail")]
    assert c.quiet(110.0, after=2.0) == []  # given once


def test_a_failure_is_alerted_as_a_warning_until_it_held_over_its_share_of_the_run() -> None:
    """A failure is what --exit-on fail stops a job on: it is alerted as the warning it also is at once, and as
    a failure once it held over half of the steps read (here from step 100 to 200)."""
    looks = [(s, [_f("fail")]) for s in (100, 110, 150, 197, 200, 210)]
    alerts = _looks(Confirm(2, 0.05, 0.5), *looks)
    assert [(a.kind, a.status, a.step) for a in alerts] == [("new", "warn", 110), ("escalated", "fail", 200)]
    # a failure that eases back to a warning is not alerted as one then, and its count starts again: from step
    # 100 it would have held long enough at step 300, from step 199 only at step 400
    eased = [(100, [_f("fail")]), (110, [_f("fail")]), (150, [_f("warn")]), (199, [_f("fail")]), (300, [_f("fail")]),
             (400, [_f("fail")])]
    assert [(a.status, a.step) for a in _looks(Confirm(2, 0.05, 0.5), *eased)] == [("warn", 110), ("fail", 400)]
    assert [(a.status, a.step) for a in _looks(Confirm(1), *eased)] == [("fail", 100)]


def test_a_confirm_rule_out_of_range_is_refused() -> None:
    for bad in ({"looks": 0}, {"share": -0.1}, {"fail_share": 1.5}):
        try:
            Confirm(**bad)  # type: ignore[arg-type]
        except ValueError as exc:
            assert "expected looks ≥ 1 and shares between 0 and 1" in str(exc)
        else:
            raise AssertionError(f"Confirm({bad}) was accepted")


def test_a_run_stopped_moving_only_after_three_of_its_usual_gaps_between_writes() -> None:
    """A trainer that writes a line a minute is not done after a few silent seconds: what waits is let through
    once its log has been silent for three of its gaps (a crash after the few seconds alone)."""
    c, keys = Confirmations(Confirm(3, 0.5)), {}  # type: ignore[var-annotated]
    for t, step in ((0.0, 10), (60.0, 11), (120.0, 12)):
        c.moved("run.log", t)
        obs = c.confirmed(Observation("run.log", step, [_f("warn")]), keys, now=t)
    assert obs.findings == []  # three looks, but one step apart of 12: not long enough
    assert c.quiet(125.0, after=2.0) == [] and c.quiet(299.0, after=2.0) == []
    (still,) = c.quiet(301.0, after=2.0)
    assert [(f.check, f.status) for f in still.findings] == [("kl_band", "warn")] and not still.partial
    c.confirmed(Observation("run.log", 13, [_f("warn"), _f("fail", "run_crashed")]), keys, now=400.0)
    (crash,) = c.quiet(403.0, after=2.0)
    assert [f.check for f in crash.findings] == ["run_crashed"] and crash.partial  # the warning waits on
    assert c.quiet(404.0, after=2.0) == []
    assert len(c.quiet(581.0, after=2.0)) == 1
