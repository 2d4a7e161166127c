"""A note (could be better) never alerts, never stops or fails a run, and is shown in the watch view
quietly: the alert policy alone, the watcher on the real deepseek GRPO log (its MFU of 19 % is a note),
a Monitor fed a run whose only finding is a note, and the flags that take a status refusing "note"."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import REAL

from rlvitals import Monitor
from rlvitals.checks._base import Status
from rlvitals.cli import main
from rlvitals.diagnosis import Finding
from rlvitals.live.alerts import Observation, alert_key, decide, finding_key
from rlvitals.synthetic.simulate import Scenario, simulate
from rlvitals.watch.monitor import MonitorError
from rlvitals.watch.sinks import JsonlSink
from rlvitals.watch.state import WatchState
from rlvitals.watch.view import LiveView
from rlvitals.watch.watcher import Watcher

GRPO = "verl__verl_training_log__grpo_run_deepseek7b_llm.log"


def _f(status: Status, check: str = "mfu_low") -> Finding:
    return Finding(check, "efficiency", status, {"en": "Low MFU"}, {"en": f"MFU is {status}"}, {"en": "a"},
                   ("perf/mfu/actor",), onset_step=1)


def test_a_note_never_alerts_and_a_warning_that_becomes_one_clears() -> None:
    alerts, state = decide({}, [Observation("run.log", 10, [_f("note")])], 0.0)
    assert alerts == [] and state == {}
    alerts, state = decide(state, [Observation("run.log", 11, [_f("warn")])], 1.0)
    assert [(a.kind, a.status) for a in alerts] == [("new", "warn")]
    alerts, state = decide(state, [Observation("run.log", 12, [_f("note")])], 2.0)
    key = alert_key("run.log", _f("note").check)
    assert alerts == [] and not state[key].active and state[key].cleared_step == 12


def _slow_mfu_log(path: Path) -> Path:
    """Constructed (no real log is healthy but for its MFU): the simulated healthy veRL run, written by
    the file logger's layout, whose MFU falls from 38 % to 17 % at step 150."""
    s = simulate(Scenario(collapse_at=None, grad_spike_at=None))
    s["perf/mfu/actor"] = s["perf/mfu/actor"] * np.where(np.arange(1, 301) >= 150, 0.45, 1.0)
    rows = [{"step": i + 1, "data": {k: None if math.isnan(float(a[i])) else float(a[i]) for k, a in s.items()
                                     if not (k.startswith("val-") and math.isnan(float(a[i])))}} for i in range(300)]
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    return path


def test_the_watcher_sends_no_alert_for_a_note_and_shows_it_dimmed(tmp_path: Path) -> None:
    sent = tmp_path / "alerts.jsonl"
    out = io.StringIO()
    view = LiveView(out, io.StringIO())
    w = Watcher([REAL / GRPO], WatchState(tmp_path / "s.sqlite"), [JsonlSink(sent)], view=view, clock=lambda: 1000.0)
    alerts = w.cycle()
    w.close()
    view.close()
    (d,) = w.diagnoses.values()
    notes = {finding_key(str(REAL / GRPO), f) for f in d.findings if f.status == "note"}
    assert any(f.check == "mfu_low" and f.status == "note" for f in d.findings) and len(notes) >= 3
    # a healthy run (its corpus label): its MFU, isolated grad spikes and early entropy fall are notes — no alert
    assert alerts == [] and d.verdict == "ok"
    assert not sent.exists() or sent.read_bytes() == b""
    row = next(line for line in out.getvalue().splitlines() if "Efficiency" in line)
    assert "ok · 1 note" in row and "mfu_low" not in row  # the layer stays ok; the note is only counted


def test_exit_on_warn_is_not_reached_by_a_note(tmp_path: Path) -> None:
    log = _slow_mfu_log(tmp_path / "slow.jsonl")
    code = main(["diagnose", "--fail-on", "warn", str(log)], out=io.StringIO(), err=io.StringIO())
    assert code == 0
    out = io.StringIO()
    assert main(["diagnose", str(log)], out=out, err=io.StringIO()) == 0
    assert "verdict: OK" in out.getvalue() and "i NOTE    efficiency Low MFU  since step 15" in out.getvalue()
    err = io.StringIO()
    code = main(["watch", str(log), "--exit-on", "warn", "--once", "--state", str(tmp_path / "w.sqlite")],
                out=io.StringIO(), err=err)
    assert code == 0, err.getvalue()


@pytest.mark.parametrize("argv", [["diagnose", "--fail-on", "note"], ["watch", "--exit-on", "note"]])
def test_fail_on_and_exit_on_refuse_note(tmp_path: Path, argv: list[str]) -> None:
    err = io.StringIO()  # argparse's usage errors go to the stream main() is given
    assert main([*argv, str(tmp_path / "run.log")], out=io.StringIO(), err=err) == 2
    assert "invalid choice: 'note' (choose from 'warn', 'fail')" in err.getvalue()


def test_a_monitor_neither_alerts_nor_stops_on_a_note() -> None:
    s = simulate(Scenario(collapse_at=None, grad_spike_at=None))
    s["perf/mfu/actor"] = s["perf/mfu/actor"] * np.where(np.arange(1, 301) >= 150, 0.45, 1.0)
    mon = Monitor(framework="verl", every=300, min_interval=0, stop_on="warn", err=None)
    for i in range(300):
        mon.log(i + 1, {k: float(a[i]) for k, a in s.items() if not math.isnan(float(a[i]))})
    mon.close()
    d = mon.diagnosis()
    assert d is not None and d.verdict == "ok"
    assert [f.status for f in d.findings if f.check == "mfu_low"] == ["note"]
    assert mon.alerts() == [] and not mon.should_stop() and mon.errors() == []


def test_stop_on_note_is_refused_with_the_reason() -> None:
    with pytest.raises(MonitorError, match=r"^Monitor\(stop_on='note'\): a note is advice \(could be better\), "
                                           r"never part of a verdict, so it cannot stop a run; expected 'warn', "
                                           r"'fail' or None$"):
        Monitor(stop_on="note", err=None)


def test_once_on_a_log_that_is_not_there_exits_2_and_says_it_does_not_wait(tmp_path: Path) -> None:
    err = io.StringIO()
    missing = tmp_path / "train.log"
    code = main(["watch", str(missing), "--once", "--state", str(tmp_path / "w.sqlite")], out=io.StringIO(), err=err)
    assert (code, err.getvalue()) == (2, f"rlvitals: {missing}: no such file or folder (--once reads only what "
                                         "is there now)\n")


def test_a_long_watch_starts_by_saying_what_it_follows_where_it_keeps_state_and_where_alerts_go(
        tmp_path: Path) -> None:
    from rlvitals.synthetic.simulate import write_example

    log = write_example(tmp_path)["console"]  # fails from step 180: --exit-on fail ends the watch at once
    err, state = io.StringIO(), tmp_path / "w.sqlite"
    code = main(["watch", str(log), "--exit-on", "fail", "--state", str(state), "--alert", f"jsonl:{tmp_path / 'a'}"],
                out=io.StringIO(), err=err)
    assert code == 1
    assert err.getvalue().startswith(
        f"rlvitals: watching {log}\n  state: {state}\n  alerts: jsonl:{tmp_path / 'a'}\n  polls every 0.5 s and "
        "diagnoses what grew (at most 33 % of a core); exits 1 at a fail; Ctrl-C stops\n")
    err = io.StringIO()
    main(["watch", str(log), "--once", "--state", str(state)], out=io.StringIO(), err=err)
    assert "watching" not in err.getvalue()  # --once is for scripts: no banner
    err, state = io.StringIO(), tmp_path / "zh.sqlite"
    main(["watch", str(log), "--lang", "zh", "--exit-on", "fail", "--state", str(state)], out=io.StringIO(), err=err)
    assert err.getvalue().startswith(
        f"rlvitals：正在监控 {log}\n  状态文件：{state}\n  告警发往：只显示在本终端（用 --alert SINK 转发）\n"
        "  每 0.5 秒查看一次，只诊断有新内容的日志（最多占用一个核的 33%）；结论达到“失败”时以退出码 1 退出；"
        "按 Ctrl-C 停止\n")
