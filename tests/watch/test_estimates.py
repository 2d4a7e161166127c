"""A TRL console written with stdout buffered, followed live: every step shown is a step of the final reading,
what is found is held until the estimated numbering is stable, and the alerts say their steps are estimated."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rlvitals.diagnosis import diagnose
from rlvitals.live.estimates import STABLE_LOOKS, Estimates
from rlvitals.run.load import load
from rlvitals.watch.state import WatchState
from rlvitals.watch.view import PlainView
from rlvitals.watch.watcher import Watcher, WatchOptions

RUNS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs"
#: a real GRPO log (public, see its source.toml) whose progress bar runs ahead of its metric dicts: the first
#: 7 dicts (steps 5-35) follow bar 40/200, the next 7 bar 75/200, and so on
BUFFERED = RUNS / "trlconsole__nips-grpo-dynamics__qwen25-7b-grpo-entropy-blowup" / "rho1.00_seed43.log"


def test_a_renumbered_estimate_is_held_again_and_exact_steps_are_never_held() -> None:
    est = Estimates()
    looks = [[7, 14], [7, 14, 21], [7, 14, 21, 28], [5, 10, 15, 20, 25], [5, 10, 15, 20, 25, 30]]
    assert [est.held("r", s, True) for s in looks] == [True, True, False, True, True]
    assert est.holding("r") and not est.held("r", [5, 10], False) and not est.holding("r")
    assert STABLE_LOOKS == 2
    said = [m for m in est.messages]
    assert "python -u" in said[0] and "PYTHONUNBUFFERED=1" in said[0]
    assert "alerted from now on" in said[1] and "exact now" in said[-1]


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[list[int]], list, str, list[int],
                                                              list[tuple[int, str]]]:
    """The real log appended in 20 pieces, a cycle after each: the steps each look showed, the alerts, what
    was said, and the steps of the whole log read at once."""
    tmp = tmp_path_factory.mktemp("buffered")
    log = tmp / BUFFERED.name
    lines = BUFFERED.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"")
    now = [1000.0]
    out = io.StringIO()
    w = Watcher([log], WatchState(tmp / "s.sqlite"), [], WatchOptions(diagnose_gap=0.0, min_gap=0.0, exit_on="fail"),
                view=PlainView(out, out), clock=lambda: now[0], timer=lambda: 0.0)
    shown, alerts, exits = [], [], []
    for i in range(1, 21):
        with log.open("ab") as f:
            f.write(b"".join(lines[len(lines) * (i - 1) // 20: len(lines) * i // 20]))
        now[0] += 30.0
        alerts.extend(w.cycle())
        d = w.full.get(str(log))
        shown.append([int(s) for s in d.run.steps] if d is not None else [])
        exits.append((w.exit_code(), d.verdict if d is not None else "ok"))
        if d is not None:
            assert "steps estimated" in w.status(now[0]) or not d.run.estimated_steps
    w.close()
    final = load(BUFFERED)[0]
    return shown, alerts, out.getvalue(), [int(s) for s in final.steps], exits


def test_every_step_shown_live_is_a_step_of_the_final_reading(replay: tuple) -> None:
    shown, _, _, final, _ = replay
    assert sum(bool(s) for s in shown) >= 15
    for steps in shown:
        assert steps == final[: len(steps)], steps[:5]
    assert max(max(s, default=0) for s in shown) <= 200  # the bar's total


def test_findings_on_estimated_steps_wait_until_the_numbering_is_stable_and_say_so(replay: tuple) -> None:
    shown, alerts, said, _, exits = replay
    assert "its steps are an estimate" in said and "python -u" in said
    first_look = next(i for i, s in enumerate(shown) if s)
    assert alerts and all(a.step > shown[first_look][-1] for a in alerts)  # nothing on the first looks
    # --exit-on fail: not on a failing verdict read on steps still held, only once a failure is alerted
    held_fail = [i for i, (code, verdict) in enumerate(exits) if verdict == "fail" and code == 0]
    assert held_fail and held_fail[0] <= first_look + 1 and exits[-1][0] == 1
    assert all("steps estimated" in a.message["en"] and a.evidence["steps_estimated"] for a in alerts)
    final = {f.check for f in diagnose(load(BUFFERED)[0]).findings if f.status in ("warn", "fail")}
    assert "entropy_collapse" not in {a.check for a in alerts}  # what the stretched steps made it say once
    # rollout_mismatch holds on the first 70 steps (the engine-trainer gap rose 4.6x) and not on the whole run:
    # a reading of a prefix, not of estimated steps; its alert is withdrawn by a "cleared" alert after the cooldown
    assert {a.check for a in alerts} - {"rollout_mismatch"} <= final


def test_a_crash_on_estimated_steps_is_alerted_once_the_log_stops_growing(tmp_path: Path) -> None:
    """A run that died brings no later look: its numbering never settles, so its crash (and what else was found)
    is said once the log stopped growing, while its steps are still held."""
    source = RUNS / "trlconsole__nips-grpo-dynamics__qwen35-9b-g3-nosignal-oom" / "w6_G3_rho0.70_seed44.log"
    lines = source.read_bytes().splitlines(keepends=True)
    dicts = [i for i, line in enumerate(lines) if line.startswith(b"{'loss'")]
    log = tmp_path / source.name
    log.write_bytes(b"".join(lines[: dicts[0] + 1]))  # one dict: its step is the bar's count, unchecked
    now = [1000.0]
    w = Watcher([log], WatchState(tmp_path / "s.sqlite"), [], WatchOptions(diagnose_gap=0.0, min_gap=0.0),
                view=PlainView(io.StringIO(), io.StringIO()), clock=lambda: now[0], timer=lambda: 0.0)
    assert w.cycle() == [] and w.alerting.estimates.holding(str(log))
    with log.open("ab") as f:  # the traceback, then what stdout still held, as the process exited
        f.write(b"".join(lines[dicts[-1] + 1:] + lines[dicts[0] + 1: dicts[-1] + 1]))
    now[0] += 1.0
    assert w.cycle() == []  # the traceback and the flushed dicts came together: the log may grow on
    now[0] += 1.5
    assert w.cycle() == []
    now[0] += 1.0  # 2.5 s without a byte: the trainer is gone
    alerts = w.cycle()
    w.close()
    # said with everything found on the held steps, under their root cause (the story's): the cut responses
    said = {a.check for a in alerts} | {c["check"] for a in alerts for c in a.consequences}
    assert "run_crashed" in said and w.alerting.estimates.holding(str(log))
    assert all(a.evidence["steps_estimated"] for a in alerts)
