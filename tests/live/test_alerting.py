"""The one live path (issue 35): :class:`rlvitals.live.Pace` (the throttle of watch, serve and the Monitor) and
:class:`rlvitals.live.Alerting` (look → confirm → decide → commit → say → deliver), driven by a clock the test
sets."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rlvitals.diagnosis import Finding, diagnose
from rlvitals.ingest import Record, SourceMeta
from rlvitals.live import Alert, Alerting, Confirm, Cooldown, Pace
from rlvitals.run.builder import RunBuilder
from rlvitals.run.run import Run


def _run(steps: int, *, estimated: bool = False) -> Run:
    builder = RunBuilder(SourceMeta(format="jsonl", estimated_steps=estimated))
    for step in range(1, steps + 1):
        builder.add(Record(step, {"actor/entropy": 0.5, "critic/score/mean": 0.1 * step}, f"r.jsonl:{step}"))
    return builder.finish("r.jsonl")


def _kl(status: str) -> Finding:
    return Finding("kl_band", "L1", status, {"en": "KL outside its band"}, {"en": "KL above 0.1"}, {},
                   ("actor/kl_loss",), onset_step=5)


def test_pace_waits_the_larger_of_its_floor_and_its_gap_times_the_cost() -> None:
    pace = Pace(floor=1.0, gap=2.0)
    assert pace.due("a", 0.0) and pace.cost("a") is None and pace.wait("a", 0.0) == 0.0
    pace.spent("a", 10.0, cost=0.1)  # cheap: the floor
    assert not pace.due("a", 10.9) and pace.due("a", 11.0)
    pace.spent("a", 20.0, cost=3.0)  # dear: twice its cost
    assert pace.wait("a", 20.0) == 6.0 and pace.cost("a") == 3.0
    assert pace.due("b", 20.0)  # each key its own


def test_pace_refuses_a_negative_wait() -> None:
    with pytest.raises(ValueError, match=r"Pace\(floor=-1, gap=0\): expected floor >= 0 seconds and gap >= 0"):
        Pace(floor=-1, gap=0)


def test_a_new_finding_waits_to_hold_then_is_raised_and_later_cleared() -> None:
    said: list[Alert] = []
    alerting = Alerting(Confirm(looks=2, share=0.0), Cooldown(seconds=60), say=said.append)
    run = _run(20)
    d = diagnose(run)
    first = [replace(o, findings=[_kl("warn")]) for o in alerting.look(run, d)]
    assert alerting.observe(first, 0.0) == []  # one look: it waits
    raised = alerting.observe([replace(o, step=21) for o in first], 10.0)
    assert [(a.kind, a.check, a.status) for a in raised] == [("new", "kl_band", "warn")]
    assert alerting.said == raised and said == raised  # kept in memory (no commit given), and said
    gone = [replace(o, step=30, findings=[_kl("ok")]) for o in first]
    assert alerting.observe(gone, 20.0) == []  # went away: said cleared only after the cooldown
    assert [a.kind for a in alerting.settle(100.0, {"r.jsonl": 30})] == ["cleared"]
    assert [a.kind for a in alerting.said] == ["new", "cleared"]


def test_a_run_whose_steps_are_an_estimate_is_held_whole_its_final_checks_apart() -> None:
    alerting = Alerting(Confirm(looks=1), Cooldown())
    run = _run(10, estimated=True)  # (a buffered console: the steps a later look may renumber)
    observed = alerting.look(run, diagnose(run))
    assert observed[0].held and observed[0].estimated
    assert len(observed) == 2 and observed[1].partial and observed[1].estimated  # a NaN: said at once
    assert not alerting.look(run, diagnose(run), at_once=True)[0].held  # --once: nothing later to wait for


def test_what_waits_in_a_run_that_stopped_moving_is_let_through() -> None:
    alerting = Alerting(Confirm(looks=3, share=0.0), Cooldown())
    run = _run(20)
    [obs] = alerting.look(run, diagnose(run))
    assert alerting.observe([replace(obs, findings=[_kl("warn")])], 0.0) == []
    assert alerting.quiet(1.0, 5.0) == []  # quiet for a second: it may still move
    assert [(a.kind, a.check) for a in alerting.quiet(6.0, 5.0)] == [("new", "kl_band")]


def test_a_reading_that_ended_lets_through_what_waits_however_long_its_gaps() -> None:
    """The caller knows the writer stopped (the demo's trainer finished, a Monitor's loop closed): what waits is
    alerted at its own level now, even where the log's usual gap between writes says it could still move."""
    alerting = Alerting(Confirm(looks=3, share=0.0), Cooldown())
    run = _run(20)
    [obs] = alerting.look(run, diagnose(run))
    alerting.observe([replace(obs, findings=[_kl("fail")])], 0.0)
    for t in (10.0, 20.0, 30.0):  # written every ten seconds: three gaps make thirty
        alerting.moved("r.jsonl", t)
    assert alerting.quiet(35.0, 0.0) == []  # silent for five seconds: it may still move
    assert [(a.kind, a.status) for a in alerting.release(35.0)] == [("new", "fail")]
    assert alerting.release(40.0) == []  # given once
