"""``Monitor``: a real simulated run fed step by step, real sinks, several logging threads, a
blocked worker (the caller must not wait), broken values and sinks (the caller must not see
them), alert memory across a restart, and the rollout metrics it writes back."""

from __future__ import annotations

import io
import json
import math
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import rlvitals
from rlvitals.live import Confirm
from rlvitals.live.alerts import Alert
from rlvitals.synthetic.simulate import Scenario, simulate
from rlvitals.watch.monitor import PREFIX, Monitor, MonitorError, MonitorOptions
from rlvitals.watch.sinks import JsonlSink

SC = Scenario(steps=120, collapse_at=60, grad_spike_at=None)
SERIES = simulate(SC)


def metrics(i: int) -> dict[str, float]:
    """Step ``i + 1`` as veRL logs it (a validation key only on validation steps)."""
    return {k: float(v[i]) for k, v in SERIES.items() if not math.isnan(float(v[i]))}


def rollouts(step: int, right: int) -> list[dict[str, object]]:
    """Two prompts × 4 samples; ``right`` of each group's samples are correct."""
    return [{"prompt": f"q{g}", "response": f"the answer is {s if s >= right else 7}", "score": float(s < right)}
            for g in range(2) for s in range(4)]


def test_a_real_collapse_alerts_once_through_a_sink(tmp_path: Path) -> None:
    err = io.StringIO()
    sink = JsonlSink(tmp_path / "alerts.jsonl", name="jsonl")
    with Monitor([sink], run="sim", every=5, min_interval=0, err=err, confirm=Confirm(looks=1)) as mon:
        for i in range(SC.steps):
            mon.log(i + 1, metrics(i))
            if i % 5 == 4:
                assert mon.flush(30)  # diagnoses as a slow trainer would let it
        seen_early = {f.check for f in mon.findings() if f.status in ("warn", "fail")}
    found = {f.check: f for f in mon.findings()}
    assert found["entropy_collapse"].status == "fail"
    assert 55 <= (found["entropy_collapse"].onset_step or 0) <= 70
    lines = [json.loads(line) for line in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    checks = [a["check"] for a in lines]
    assert "entropy_collapse" in checks and len(lines) == len({(a["key"], a["kind"]) for a in lines})
    assert [Alert.from_json(a).key for a in lines] == [a.key for a in mon.alerts()]
    assert "entropy_collapse" in seen_early
    assert "rlvitals: FAIL entropy_collapse" in err.getvalue()
    assert mon.errors() == [] and mon.dropped == 0


def test_nothing_is_diagnosed_before_every_steps(tmp_path: Path) -> None:
    mon = Monitor(every=1000, min_interval=0, err=None)
    for i in range(20):
        mon.log(i + 1, metrics(i))
    time.sleep(0.3)  # the worker has taken the items by now, and must not have diagnosed
    assert mon.diagnosis() is None
    assert mon.flush(30)
    d = mon.diagnosis()
    assert d is not None and list(d.run.steps) == list(range(1, 21))
    mon.close()


def test_log_never_waits_for_a_stuck_worker_and_drops_the_oldest() -> None:
    release = threading.Event()

    class Stuck:
        name = "stuck"

        def send(self, alert: Alert) -> str | None:
            release.wait(30)
            return None

    mon = Monitor([Stuck()], every=1, min_interval=0, queue_size=10, err=None)
    for i in range(SC.steps):  # the collapse alerts and the sink blocks the worker
        mon.log(i + 1, metrics(i))
        if i == 100:
            mon.flush(timeout=0.5)
    started = time.perf_counter()
    for step in range(1000, 1200):
        mon.log(step, {"actor/entropy": 0.5})
    took = time.perf_counter() - started
    assert took < 0.5, f"200 log() calls took {took:.3f} s while the worker was blocked"
    assert mon.dropped >= 190
    release.set()
    mon.close()
    run = mon.run()
    assert run is not None and int(run.steps[-1]) == 1199  # the newest items were kept


def test_errors_are_reported_and_never_raised() -> None:
    err = io.StringIO()

    class Broken:
        name = "broken"

        def send(self, alert: Alert) -> str | None:
            raise RuntimeError("receiver exploded")

    mon = Monitor([Broken(), "jsonl:/proc/no/such/alerts.jsonl"], every=10, min_interval=0, err=err)
    for i in range(SC.steps):
        mon.log(i + 1, {**metrics(i), "odd": object()})
    mon.log_rollouts(3, 42)  # not rollouts at all
    mon.close()
    mon.log(500, {"actor/entropy": 0.1})
    errors = mon.errors()
    assert any("odd=object not a number or text" in e for e in errors)
    assert any("rollouts of step 3 failed" in e for e in errors), errors
    assert any("RuntimeError: receiver exploded" in e for e in errors)
    assert any("jsonl:/proc/no/such/alerts.jsonl: could not append" in e for e in errors)
    assert any("arrived after close()" in e for e in errors)
    assert mon.error_count() > len(errors) == len([ln for ln in err.getvalue().splitlines() if "monitor:" in ln])
    assert {f.check for f in mon.findings() if f.status == "fail"} >= {"entropy_collapse"}


def test_several_threads_logging_lose_nothing() -> None:
    mon = Monitor(every=50, min_interval=0, err=None)
    keys = ["actor/entropy", "actor/pg_clipfrac", "actor/grad_norm", "critic/score/mean"]

    def worker(key: str) -> None:
        for i in range(SC.steps):
            mon.log(i + 1, {key: float(SERIES[key][i])})
            if i % 30 == 0:
                mon.findings()
                mon.derived(i)

    threads = [threading.Thread(target=worker, args=(k,)) for k in keys]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    mon.close()
    run = mon.run()
    assert run is not None and mon.errors() == [] and mon.dropped == 0
    for key in keys:
        steps, values = run.series(key)
        assert list(steps) == list(range(1, SC.steps + 1))
        np.testing.assert_array_equal(values, SERIES[key])


def test_derived_rollout_metrics_equal_analyze_rollouts() -> None:
    mon = Monitor(every=1, min_interval=0, err=None)
    for step, right in ((1, 1), (2, 2), (3, 4)):
        mon.log(step, metrics(step - 1))
        mon.log_rollouts(step, rollouts(step, right))
    got = {step: mon.derived(step, timeout=30) for step in (1, 2, 3)}
    mon.close()
    for step, right in ((1, 1), (2, 2), (3, 4)):
        ref = rlvitals.analyze_rollouts([{**r, "step": step} for r in rollouts(step, right)]).series()
        row = {k: v for k, v in ref.row(0, named=True).items() if k != "step" and v is not None and v == v}
        assert got[step] == pytest.approx({PREFIX + k: v for k, v in row.items()})
    assert got[3][PREFIX + "group/zero_std/all_correct"] == 1.0
    run = mon.run()
    assert run is not None
    assert list(run.series("group/zero_std/share")[1]) == [0.0, 0.0, 1.0]


def test_a_restarted_monitor_does_not_repeat_alerts(tmp_path: Path) -> None:
    state, out = tmp_path / "watch.sqlite", tmp_path / "alerts.jsonl"
    with Monitor([f"jsonl:{out}"], run="job", every=10, min_interval=0, state_path=state, err=None) as first:
        for i in range(SC.steps):
            first.log(i + 1, metrics(i))
    sent = out.read_text().splitlines()
    assert any('"entropy_collapse"' in line for line in sent)
    with Monitor([f"jsonl:{out}"], run="job", every=10, min_interval=0, state_path=state, err=None) as second:
        for i in range(SC.steps):
            second.log(i + 1, metrics(i))
    assert second.alerts() == [] and out.read_text().splitlines() == sent


def test_bad_arguments_are_refused_at_construction() -> None:
    with pytest.raises(MonitorError, match=r"every=0.*expected every >= 1 step"):
        Monitor(every=0)
    with pytest.raises(MonitorError, match=r"queue_size=0"):
        Monitor(queue_size=0)
    with pytest.raises(rlvitals.RlvitalsError, match=r"unknown sink 'smtp'"):
        Monitor(["smtp:me@example.org"])
    with pytest.raises(MonitorError, match=r"^Monitor\(evry=\.\.\.\): not an option; expected one of every, "
                                           r"min_interval, run, .*, config, algorithm$"):
        Monitor(evry=10)
    with pytest.raises(MonitorError, match=r"every=0"):  # the record checks itself, made alone too
        MonitorOptions(every=0)


def test_options_come_as_one_record_or_as_keywords_over_it(tmp_path: Path) -> None:
    base = MonitorOptions(every=7, run="job", stop_on="fail", state_path=tmp_path / "a.sqlite")
    mon = Monitor(options=base, every=3, err=None)
    try:
        assert (mon.options.every, mon.options.run, mon.stop_on) == (3, "job", "fail")
        assert mon.options.state_path == tmp_path / "a.sqlite" and base.every == 7  # the caller's record is untouched
    finally:
        mon.close()


def test_the_worker_survives_a_failing_clock_and_diagnoses_later() -> None:
    calls = {"n": 0}

    def clock() -> float:
        calls["n"] += 1
        if calls["n"] <= 2:
            raise OSError("clock unavailable")
        return 1000.0 + calls["n"]

    mon = Monitor(every=1, min_interval=0, err=None, clock=clock)
    mon.log(1, metrics(0))
    assert mon.flush(30)  # the diagnosis failed here; the worker must still be alive
    for i in range(1, 40):
        mon.log(i + 1, metrics(i))
    mon.close()
    assert any("OSError: clock unavailable" in e for e in mon.errors())
    d = mon.diagnosis()
    assert d is not None and int(d.run.steps[-1]) == 40


def test_derive_never_waits_for_a_worker_busy_diagnosing() -> None:
    """What the TRL callback writes back at each log: computed in the caller's thread while the worker
    is stuck (here in a sink, as it could be in a long diagnosis), equal to analyze_rollouts, and then
    part of the Run once the worker goes on."""
    release, stuck = threading.Event(), threading.Event()

    class Stuck:
        name = "stuck"

        def send(self, alert: Alert) -> str | None:
            stuck.set()
            release.wait(60)
            return None

    mon = Monitor([Stuck()], every=1, min_interval=0, err=None, confirm=Confirm(looks=1))
    for i in range(SC.steps):  # the collapse alerts, and the sink holds the worker
        mon.log(i + 1, metrics(i))
    assert stuck.wait(60)
    got = {step: mon.derive(step, rollouts(step, right)) for step, right in ((1, 1), (2, 2), (3, 4))}
    assert stuck.is_set() and not release.is_set()  # the worker has not moved meanwhile
    for step, right in ((1, 1), (2, 2), (3, 4)):
        ref = rlvitals.analyze_rollouts([{**r, "step": step} for r in rollouts(step, right)]).series()
        row = {k: v for k, v in ref.row(0, named=True).items() if k != "step" and v is not None and v == v}
        assert got[step] == pytest.approx({PREFIX + k: v for k, v in row.items()})
    assert mon.derive(4, 42) == {}  # not rollouts: reported, never raised
    assert any("rollouts of step 4 could not be analysed" in e for e in mon.errors())
    release.set()
    mon.close()
    assert {s: mon.derived(s) for s in got} == got
    run = mon.run()
    assert run is not None and list(run.series("group/zero_std/share")[1][:3]) == [0.0, 0.0, 1.0]


def test_with_confirm_a_failure_waits_as_a_warning_and_stop_on_acts_on_what_was_alerted() -> None:
    """The Monitor holds new findings back as ``rlvitals watch`` does: the collapse at step 60 of a 240-step run
    is alerted as a warning first, as a failure once it held over half the steps read, and ``stop_on="fail"``
    waits for that failure; on the first 120 steps alone, the failure still waiting is alerted at close."""
    from rlvitals.live.confirm import Confirm

    series = simulate(Scenario(steps=240, collapse_at=60, grad_spike_at=None))

    def watched(steps: int, confirm: Confirm | None) -> tuple[list[tuple[str, str, int]], int | None]:
        mon = Monitor(run="sim", every=10, min_interval=0, err=None, stop_on="fail", confirm=confirm)
        stopped_at = None
        for i in range(steps):
            mon.log(i + 1, {k: float(v[i]) for k, v in series.items() if not math.isnan(float(v[i]))})
            if i % 10 == 9:
                assert mon.flush(30)
                if stopped_at is None and mon.should_stop():
                    stopped_at = i + 1
        mon.close()
        return [(a.kind, a.status, a.step) for a in mon.alerts() if a.check == "entropy_collapse"], stopped_at

    said, stopped_at = watched(240, None)  # the default: as watch
    assert [s[:2] for s in said] == [("new", "warn"), ("escalated", "fail")]
    (_, _, warned), (_, _, failed) = said
    assert warned < failed == stopped_at and failed >= 2 * 60
    # at once: the failure is alerted and stops the loop at the first diagnosis that finds it
    said, stopped_at = watched(240, Confirm(looks=1))
    assert [s[:2] for s in said] == [("new", "fail")] and said[0][2] == stopped_at < failed
    # the loop ends while the failure waits: it is alerted at close, at its own level
    said, _ = watched(120, Confirm(2, 0.05, 0.5))
    assert [s[:2] for s in said] == [("new", "warn"), ("escalated", "fail")] and said[-1][2] == 120


def test_the_algorithm_can_be_given_and_an_unknown_one_is_refused_when_made() -> None:
    mon = Monitor(algorithm="rloo", every=1, min_interval=0, err=None)
    try:
        for step in range(1, 6):
            mon.log(step, {"objective/rlhf_reward": 0.1 * step, "loss/policy_avg": 0.01, "objective/kl": 0.5})
        assert mon.flush(60)
        run = mon.run()
        assert run is not None and (run.algorithm, run.algorithm_given) == ("rloo", True)
    finally:
        mon.close()
    with pytest.raises(rlvitals.RlvitalsError, match=r"^Monitor: algorithm='dpo': not an algorithm rlvitals knows"):
        Monitor(algorithm="dpo", err=None)
