"""``watch --one-run``: the logs of a resumed run's launches, appended to as the run goes, watched as one
run in step order; a later launch's log that is not there yet is waited for; a finding is alerted once
for the run, under one name, however many launches it took."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rlvitals.cli import main
from rlvitals.live import Confirm
from rlvitals.synthetic.simulate import Scenario, jsonl_lines
from rlvitals.watch import WatchOptions
from rlvitals.watch.launches import Launches
from rlvitals.watch.sinks import parse_sink
from rlvitals.watch.state import WatchState
from rlvitals.watch.view import PlainView
from rlvitals.watch.watcher import Watcher

LINES = [line + b"\n" for line in jsonl_lines(Scenario(steps=90, collapse_at=60, grad_spike_at=None))]


def _append(path: Path, lines: list[bytes]) -> None:
    with path.open("ab") as fh:
        fh.write(b"".join(lines))


def test_launches_are_watched_as_one_run_while_they_are_appended(tmp_path: Path) -> None:
    first, second = tmp_path / "launch1.jsonl", tmp_path / "launch2.jsonl"
    alerts = tmp_path / "alerts.jsonl"
    out, err = io.StringIO(), io.StringIO()
    now = [0.0]
    w = Watcher([first, second], WatchState(tmp_path / "w.sqlite"), [parse_sink(f"jsonl:{alerts}")],
                WatchOptions(one_run=True, confirm=Confirm(looks=1)), view=PlainView(out, err),
                clock=lambda: now[0], timer=lambda: 0.0)
    name = f"{first} + {second}"
    try:
        _append(first, LINES[:20])
        w.cycle()
        assert list(w.diagnoses) == [name]  # one run, named by both PATHs before the second exists
        assert w.diagnoses[name].run.steps.tolist() == list(range(1, 21))
        assert f"{second}" in err.getvalue() and "waiting for it to appear" in err.getvalue()
        _append(first, LINES[20:40])  # the first launch logs on to step 40, then dies
        now[0] += 1
        w.cycle()
        assert w.diagnoses[name].run.steps.tolist() == list(range(1, 41))
        # resumed from the checkpoint of step 30: the second launch logs steps 31… again, then goes on
        for start in range(30, 90, 15):
            _append(second, LINES[start:start + 15])
            now[0] += 1
            w.cycle()
        run = w.diagnoses[name].run
        assert list(w.diagnoses) == [name] and run.steps.tolist() == list(range(1, 91))
        assert err.getvalue().count("--one-run: ") == 1  # said once, when the second launch was joined
        assert "10 steps (31–40)" in err.getvalue() and "later launch's values were kept" in err.getvalue()
    finally:
        w.close()
    sent = [json.loads(line) for line in alerts.read_text().splitlines()]
    assert sent and {a["run"] for a in sent} == {name}
    new = [(a["check"], tuple(a["metrics"])) for a in sent if a["kind"] == "new"]
    assert len(set(new)) == len(new) and {a["kind"] for a in sent} <= {"new", "escalated"}  # each finding once
    assert any(a["check"] == "entropy_collapse" and a["step"] > 60 for a in sent)


def test_a_restarted_watcher_keeps_the_one_run(tmp_path: Path) -> None:
    """The state file keeps each log's cursor: a second watcher reads the run whole again and alerts
    nothing it already alerted."""
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _append(first, LINES[:40])
    _append(second, LINES[30:90])
    alerts = tmp_path / "alerts.jsonl"
    for _ in range(2):
        w = Watcher([first, second], WatchState(tmp_path / "w.sqlite"), [parse_sink(f"jsonl:{alerts}")],
                    WatchOptions(one_run=True, confirm=Confirm(looks=1)), view=PlainView(io.StringIO(), io.StringIO()))
        try:
            w.cycle()
            assert w.diagnoses[f"{first} + {second}"].run.steps.tolist() == list(range(1, 91))
        finally:
            w.close()
    sent = [json.loads(line) for line in alerts.read_text().splitlines()]
    new = [(a["check"], tuple(a["metrics"])) for a in sent]
    assert sent and len(set(new)) == len(new)  # the second watcher alerted nothing again


def test_watch_one_run_on_the_command_line(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _append(first, LINES[:40])
    _append(second, LINES[30:90])
    out, err = io.StringIO(), io.StringIO()
    code = main(["watch", "--once", "--one-run", "--state", str(tmp_path / "w.sqlite"), str(second), str(first)],
                out=out, err=err)
    assert code == 0, err.getvalue()
    assert f"{second} + {first}" in out.getvalue()  # the run, under the PATHs as given
    assert f"rlvitals: --one-run: 10 steps (31–40) that {first} logged were logged again by {second}" in \
        err.getvalue()
    code = main(["watch", "--once", "--state", str(tmp_path / "w2.sqlite"), str(second), str(first)],
                out=(two := io.StringIO()), err=io.StringIO())
    assert code == 0 and f"{second} + {first}" not in two.getvalue()  # without it: two runs


def test_the_run_is_none_until_a_launch_holds_a_step(tmp_path: Path) -> None:
    assert Launches([tmp_path / "a.jsonl"]).run([]) is None
