"""The watcher end to end: a real growing log, real sinks (a local HTTP server, a real command,
a JSONL file), a restart on the same state file, ``--exit-on``, and every user-facing error."""

from __future__ import annotations

import io
import itertools
import json
import os
import shlex
import shutil
import socket
import sqlite3
import sys
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

from rlvitals import load
from rlvitals.cli import main
from rlvitals.diagnosis import Finding
from rlvitals.errors import RlvitalsError
from rlvitals.live import Confirm
from rlvitals.live.alerts import Alert, Observation, decide
from rlvitals.synthetic.simulate import Scenario, jsonl_lines
from rlvitals.watch.sinks import CommandSink, JsonlSink, WebhookSink, parse_sink, webhook_body
from rlvitals.watch.state import WatchState, default_state_path
from rlvitals.watch.view import LiveView, PlainView
from rlvitals.watch.watcher import Watcher, WatchOptions

# entropy collapses at step 80 (fails from ~86), and grad-norm spikes at 150, 160 and 170 (a new finding: three
# within 50 steps; one isolated spike would be a note, which never alerts)
SC = Scenario(steps=200, collapse_at=80, grad_spike_at=150)


def _with_spikes(line: bytes) -> bytes:
    row = orjson.loads(line)
    if row["step"] in (160, 170):
        row["data"]["actor/grad_norm"] *= 14
    return orjson.dumps(row)


LINES = [_with_spikes(line) + b"\n" for line in jsonl_lines(SC)]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now




def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _watcher(tmp: Path, log: Path, sinks: list[Any], clock: Clock,
             **options: Any) -> tuple[Watcher, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    # at once unless a test says otherwise: these tests are about following, storing and delivering
    options = {"confirm": Confirm(looks=1), **options}
    w = Watcher([log], WatchState(tmp / "state.sqlite"), sinks, WatchOptions(**options),
                view=PlainView(out, err), clock=clock, sleep=lambda s: None)
    return w, out, err


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as fh:
        fh.write(data)


def _feed(w: Watcher, log: Path, clock: Clock, start: int, stop: int, chunk: int = 7) -> list[Alert]:
    """Write LINES[start:stop] in chunks that cut lines in half, one cycle after each."""
    data = b"".join(LINES[start:stop])
    sent = []
    for at in range(0, len(data), chunk * 1000):
        _append(log, data[at : at + chunk * 1000])
        clock.now += 1.0
        sent.extend(w.cycle())
    return sent


def test_growing_log_alerts_once_per_finding_and_survives_a_restart(tmp_path: Path, hook: Any) -> None:
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"")
    jsonl = tmp_path / "alerts.jsonl"
    sinks = [parse_sink(f"jsonl:{jsonl}"), parse_sink(f"webhook:{hook.url}")]
    clock = Clock()
    w, out, err = _watcher(tmp_path, log, sinks, clock)
    first = _feed(w, log, clock, 0, 120)
    collapse = [a for a in first if a.check == "entropy_collapse"]
    assert len(collapse) == 1 and collapse[0].status == "fail" and 80 <= collapse[0].step <= 100
    assert not any(a.check == "grad_norm_spike" for a in first)
    w.close()  # killed: a new watcher starts on the same state file

    w2, out2, err2 = _watcher(tmp_path, log, sinks, clock)
    clock.now += 1.0
    assert w2.cycle() == []  # everything already seen is re-read, nothing is re-sent
    second = _feed(w2, log, clock, 120, 200)
    # the spike, and the validation stall once its cause (the validation-reward divergence) no longer holds:
    # it rode under that alert, and is said on its own now
    assert sorted(a.check for a in second if a.kind == "new") == ["grad_norm_spike", "val_progress"]
    assert all(a.kind == "escalated" for a in second if a.check not in ("grad_norm_spike", "val_progress"))

    assert w2.flush(30)
    every = first + second
    pairs = [(a.key, a.status) for a in every]
    assert len(pairs) == len(set(pairs)), "an alert was repeated"
    written = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [(a["key"], a["status"]) for a in written] == pairs
    assert [body["rlvitals"]["key"] for _, body in hook.received] == [a.key for a in every]
    ctype, body = hook.received[0]
    assert ctype == "application/json" and body["text"] == body["content"] == "rlvitals: " + every[0].text()
    # one line per alert, and under a root cause a line per finding it explains
    heads = [line for line in out.getvalue().splitlines() if line.startswith("[")]
    assert len(heads) == len(first) and "FAIL entropy_collapse" in out.getvalue()
    assert out.getvalue().count("\n") == len(first) + sum(len(a.consequences) for a in first)
    assert err.getvalue() == err2.getvalue() == ""
    run = w2.follows[0].runs()[0]
    assert run.frame.equals(load(log)[0].frame)
    assert w2.state.pending() == []


def test_pending_alert_of_a_killed_watcher_is_delivered_once(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(LINES[:5]))
    finding = Finding("kl_spike", "L1", "warn", {"en": "t"}, {"en": "KL spiked"}, {"en": "a"}, ("actor/ppo_kl",))
    alerts, keys = decide({}, [Observation(str(log), 5, [finding])], 0.0)
    target = tmp_path / "a.jsonl"
    state = WatchState(tmp_path / "state.sqlite")
    state.commit({}, keys, alerts, [f"jsonl:{target}"])  # committed, then killed before the sink ran
    state.close()
    for _ in range(2):
        w, _, _ = _watcher(tmp_path, log, [parse_sink(f"jsonl:{target}")], Clock())
        w.close()
    assert [json.loads(x)["check"] for x in target.read_text().splitlines()] == ["kl_spike"]


def test_a_redelivered_alert_is_appended_to_a_jsonl_file_once(tmp_path: Path) -> None:
    """At-least-once delivery: the watcher killed after the append and before striking the alert off sends it
    again; the file keeps one line for it, and another alert is still appended."""
    from dataclasses import replace as changed

    sink = JsonlSink(tmp_path / "alerts.jsonl")
    alert = _one_alert()
    assert sink.send(alert) is None and sink.send(alert) is None
    assert sink.send(changed(alert, step=191)) is None
    ids = [json.loads(x)["alert_id"] for x in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert ids == [alert.alert_id, changed(alert, step=191).alert_id]


def _one_alert() -> Alert:
    f = Finding("entropy_collapse", "L4", "fail", {"en": "t"}, {"en": "Entropy collapsed"}, {"en": "a"},
                ("actor/entropy",), onset_step=180)
    return decide({}, [Observation("run.log", 190, [f])], 0.0)[0][0]


def test_command_hook_runs_with_env_and_stdin(tmp_path: Path) -> None:
    target = tmp_path / "hook.json"
    code = ("import json, os, sys; open(sys.argv[1], 'w').write(json.dumps({'env': {k: v for k, v in "
            "os.environ.items() if k.startswith('RLVITALS_')}, 'stdin': json.load(sys.stdin)}))")
    sink = parse_sink("command:" + shlex.join([sys.executable, "-c", code, str(target)]))
    assert isinstance(sink, CommandSink)
    assert sink.send(_one_alert()) is None
    got = json.loads(target.read_text())
    assert got["env"]["RLVITALS_CHECK"] == "entropy_collapse" and got["env"]["RLVITALS_STATUS"] == "fail"
    assert got["env"]["RLVITALS_STEP"] == "190" and got["stdin"]["onset_step"] == 180
    # at-least-once: a command run again for the same alert (killed mid-call, redelivered) can tell by the id
    assert got["env"]["RLVITALS_ALERT_ID"] == got["stdin"]["alert_id"] == _one_alert().alert_id
    assert len(got["env"]["RLVITALS_ALERT_ID"]) == 16


def test_the_alert_id_is_kept_by_redelivery_and_differs_for_another_alert(tmp_path: Path) -> None:
    alert = _one_alert()
    state = WatchState(tmp_path / "s.sqlite")
    [stored] = state.commit({}, {}, [alert], ["jsonl"])
    [(alert_id, again, pending)] = state.pending()  # what a restarted watcher sends
    assert (alert_id, pending) == (stored, ["jsonl"]) and again.alert_id == alert.alert_id
    from dataclasses import replace as changed

    assert len({alert.alert_id, changed(alert, step=191).alert_id, changed(alert, kind="again").alert_id,
                changed(alert, status="warn").alert_id, changed(alert, at=alert.at + 1).alert_id}) == 5
    sink = JsonlSink(tmp_path / "alerts.jsonl")
    sink.send(alert)
    line = json.loads((tmp_path / "alerts.jsonl").read_text())
    assert line["alert_id"] == alert.alert_id and Alert.from_json(line) == alert  # a JSONL line reads back
    state.close()


def test_command_hook_failures_are_reported(tmp_path: Path) -> None:
    failing = CommandSink([sys.executable, "-c", "import sys; sys.stderr.write('no job\\n'); sys.exit(3)"])
    assert (failing.send(_one_alert()) or "").endswith("exited with 3 no job")
    missing = CommandSink([str(tmp_path / "no-such-program")])
    assert "could not run it" in (missing.send(_one_alert()) or "")


def test_webhook_errors_are_reported_not_raised(hook: Any) -> None:
    down = WebhookSink(f"http://127.0.0.1:{_closed_port()}/hook", timeout=2.0)
    assert "could not deliver the alert" in (down.send(_one_alert()) or "")
    hook.code = 500
    refused = WebhookSink(hook.url)
    assert refused.send(_one_alert()) == f"webhook {hook.url}: the server answered 500 Internal Server Error; " \
                                         "the alert was not accepted"


def test_an_unreachable_webhook_does_not_stop_the_other_sinks(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(LINES[:120]))
    jsonl = tmp_path / "a.jsonl"
    url = f"http://127.0.0.1:{_closed_port()}/"
    w, _, err = _watcher(tmp_path, log, [parse_sink(f"webhook:{url}"), parse_sink(f"jsonl:{jsonl}")], Clock())
    alerts = w.cycle()
    assert w.flush(30)  # the webhook is called from its own thread
    assert alerts and len(jsonl.read_text().splitlines()) == len(alerts)
    assert err.getvalue().count(f"rlvitals: webhook {url}: could not deliver the alert") == len(alerts)
    assert w.state.pending() == []


def test_webhook_body_fits_slack_and_discord() -> None:
    alert = _one_alert()
    long = Alert.from_json({**alert.to_json(), "message": {"en": "x" * 5000}})
    body = webhook_body(long)
    assert len(str(body["content"])) == 2000 and len(str(body["text"])) > 2000


def test_run_loop_exits_on_fail_while_the_log_grows(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(LINES[:40]))
    written = [40]
    clock = Clock()

    def sleep(seconds: float) -> None:  # the trainer writes 5 steps per interval
        clock.now += seconds
        _append(log, b"".join(LINES[written[0] : written[0] + 5]))
        written[0] += 5

    options = WatchOptions(interval=1.0, exit_on="fail", confirm=Confirm(looks=1))
    w = Watcher([log], WatchState(tmp_path / "s.sqlite"), [], options,
                view=PlainView(io.StringIO(), io.StringIO()), clock=clock, sleep=sleep)
    assert w.run() == 1
    assert 85 <= written[0] <= 100  # stopped soon after the collapse, long before the end


def test_cli_watch_once_dedupes_across_invocations(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(LINES[:120]))
    jsonl = tmp_path / "a.jsonl"
    out, err = io.StringIO(), io.StringIO()
    assert main(["watch", str(log), "--once", "--alert", f"jsonl:{jsonl}"], out, err) == 0
    assert default_state_path(log).is_file() and err.getvalue() == ""
    n = len(jsonl.read_text().splitlines())
    heads = [line for line in out.getvalue().splitlines() if not line.startswith("  then step ")]
    assert n >= 1 and len(heads) == n  # one alert per root cause, its consequences under it
    out2 = io.StringIO()
    assert main(["watch", str(log), "--once", "--alert", f"jsonl:{jsonl}", "--exit-on", "fail"], out2, err) == 1
    assert out2.getvalue() == "" and len(jsonl.read_text().splitlines()) == n
    assert main(["watch", str(log), "--once", "--exit-on", "fail", "--state", str(tmp_path / "x.sqlite"),
                 "--config", str(tmp_path / "missing.toml")], out2, err) == 2


@pytest.mark.parametrize(("spec", "message"), [
    ("smtp:ops@example.com", "--alert 'smtp:ops@example.com': unknown sink 'smtp'; expected jsonl:FILE"),
    ("jsonl:", "--alert 'jsonl:': expected KIND:TARGET"),
    ("webhook", "--alert 'webhook': expected KIND:TARGET"),
    ("webhook:ftp://x", "the webhook URL must start with http:// or https://"),
    ("command:echo 'unbalanced", "the command does not parse (No closing quotation); check its quotes"),
])
def test_bad_alert_specs(tmp_path: Path, spec: str, message: str) -> None:
    with pytest.raises(RlvitalsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_sink(spec)
    err = io.StringIO()
    assert main(["watch", str(tmp_path / "x.log"), "--once", "--alert", spec], io.StringIO(), err) == 2
    assert message in err.getvalue()


def test_bad_interval_is_a_usage_error(tmp_path: Path) -> None:
    err = io.StringIO()
    assert main(["watch", str(tmp_path / "x.log"), "--interval", "0"], io.StringIO(), err) == 2
    assert "expected a positive interval" in err.getvalue()


def test_negative_tail_steps_is_a_usage_error(tmp_path: Path) -> None:
    err = io.StringIO()
    assert main(["watch", str(tmp_path / "x.log"), "--tail-steps", "-5"], io.StringIO(), err) == 2
    assert err.getvalue() == "rlvitals: --tail-steps -5: expected 0 (no tail pass) or more steps\n"


def test_unreadable_state_file(tmp_path: Path) -> None:
    bad = tmp_path / "state.sqlite"
    bad.write_bytes(b"this is not a database, it is a note" * 100)
    with pytest.raises(RlvitalsError, match="cannot use this file as the watch state .*pass --state NEW_FILE"):
        WatchState(bad)
    err = io.StringIO()
    assert main(["watch", str(tmp_path / "x.log"), "--once", "--state", str(bad)], io.StringIO(), err) == 2
    assert f"rlvitals: {bad}: cannot use this file as the watch state" in err.getvalue()


def test_state_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    WatchState(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE schema SET version = 99")
    db.close()
    with pytest.raises(RlvitalsError, match="its schema version is 99, this rlvitals writes 3"):
        WatchState(path)


def test_state_file_is_in_wal_mode(tmp_path: Path) -> None:
    state = WatchState(tmp_path / "s.sqlite")
    assert state.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    state.close()


def test_jsonl_sink_reports_an_unwritable_file(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    assert (JsonlSink(folder).send(_one_alert()) or "").startswith(f"jsonl:{folder}: could not append the alert")


def test_live_view_shows_every_layer(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(LINES[:120]))
    out = io.StringIO()
    view = LiveView(out, io.StringIO())
    w = Watcher([log], WatchState(tmp_path / "s.sqlite"), [], WatchOptions(confirm=Confirm(looks=1)), view=view,
                clock=Clock())
    alerts = w.cycle()
    view.close()
    text = out.getvalue()
    for name in ("Generalisation", "Training stability", "Policy behaviour", "Learning signal", "Exploration",
                 "Reasoning quality", "Efficiency"):
        assert name in text
    # a terminal's width wraps (or folds) a long path: read with the line breaks taken out
    assert str(log) in "".join(text.split()) and "entropy_collapse" in text and len(alerts) >= 1
    # the collapse's consequences are said under it, not as alerts of their own
    assert sum(len(a.consequences) for a in alerts) >= 2 and "then step" in text
    assert "run.jsonl: 120 records read, last step 120" in text  # the status line under the table


def test_the_status_says_what_was_read_and_when_the_next_diagnosis_comes(tmp_path: Path) -> None:
    log, missing = tmp_path / "run.jsonl", tmp_path / "later.jsonl"
    log.write_bytes(b"".join(LINES[:60]))
    clock = Clock()
    timer = itertools.count(0.0, 3.5).__next__  # every timed piece of work costs 3.5 s: the next waits 2 × 3.5
    w = Watcher([log, missing], WatchState(tmp_path / "s.sqlite"), [], view=PlainView(io.StringIO(), io.StringIO()),
                clock=clock, timer=timer)
    w.cycle()
    with log.open("ab") as fh:
        fh.write(b"".join(LINES[60:70]))
    w.cycle()
    assert w.status(clock.now) == (f"run.jsonl: 70 records read, last step 70; next diagnosis in 7 s\n"
                                   f"later.jsonl: {missing}: no such file or folder; waiting for it to appear")


def _reference_alerts(tmp: Path, chunks: list[bytes], name: str) -> list[set[tuple[str, str]]]:
    """(check, status) of the alerts each cycle raises of a watcher that reads ``chunks`` one cycle
    at a time, without interruption."""
    ref = tmp / "ref"
    ref.mkdir()
    log = ref / name
    log.write_bytes(b"")
    w = Watcher([log], WatchState(ref / "s.sqlite"), [], WatchOptions(confirm=Confirm(looks=1)),
                view=PlainView(io.StringIO(), io.StringIO()), clock=Clock())
    out = []
    for chunk in chunks:
        _append(log, chunk)
        out.append({(a.check, a.status) for a in w.cycle()})
    w.close()
    return out


@pytest.mark.parametrize("how", ["replaced", "truncated"])
@pytest.mark.parametrize("fmt", ["jsonl", "console"])
def test_restart_after_the_log_was_replaced_or_truncated_loses_nothing_and_alerts_nothing_new(
        tmp_path: Path, how: str, fmt: str) -> None:
    """The trainer restarts while the watcher is down and starts its log afresh: the old content is gone
    from the disk. The restarted watcher rebuilds what it had read from its state file, so the run keeps
    every step and no gap raises an alert a watcher that never stopped would not have raised."""
    from rlvitals.synthetic.simulate import console_lines

    lines = LINES if fmt == "jsonl" else [(line + "\n").encode() for line in console_lines(SC)]
    header = len(lines) - SC.steps
    name = "run.jsonl" if fmt == "jsonl" else "run.log"
    log = tmp_path / name
    log.write_bytes(b"".join(lines[: header + 100]))
    clock = Clock()
    w, out, _ = _watcher(tmp_path, log, [], clock)
    first = w.cycle()
    w.close()
    later = b"".join(lines[header + 100 : header + 140])
    if how == "replaced":  # a new file at the path, the old one deleted
        (tmp_path / "new.tmp").write_bytes(later)
        os.replace(tmp_path / "new.tmp", log)
    else:  # `> run.log`, then the trainer goes on in the same file
        log.write_bytes(later)
    w2, out2, err2 = _watcher(tmp_path, log, [], clock)
    clock.now += 1.0
    middle = w2.cycle()
    run = w2.follows[0].runs()[0]
    assert run.steps.tolist() == list(range(1, 141))
    whole = tmp_path / f"whole.{fmt}"
    whole.write_bytes(b"".join(lines[: header + 140]))
    assert run.frame.equals(load(whole)[0].frame)
    _append(log, b"".join(lines[header + 140 :]))
    clock.now += 1.0
    last = w2.cycle()
    chunks = [b"".join(lines[: header + 100]), later, b"".join(lines[header + 140 :])]
    # exactly what a watcher that never stopped raises, cycle by cycle: no alert from a gap
    assert [{(a.check, a.status) for a in c} for c in (first, middle, last)] == _reference_alerts(
        tmp_path, chunks, name)
    pairs = [(a.key, a.status) for a in first + middle + last]
    assert len(pairs) == len(set(pairs))
    assert f"the file was {how}" in err2.getvalue()


def test_restart_rebuilds_the_run_exactly_from_the_state_file(tmp_path: Path) -> None:
    """Skips, notes, text values, NaN and infinities, a step logged twice: the Run a restarted watcher
    rebuilds from its state file is the Run the first one had."""
    log = tmp_path / "run.jsonl"
    rows = [{"step": s, "data": {"actor/entropy": 0.5 - s / 100, "critic/score/mean": s / 10,
                                 "actor/grad_norm": [None, 1e308, -0.0, 1e-300][s % 4],
                                 "note/text": f"step {s}"}} for s in range(1, 30)]
    again = json.dumps({"step": 4, "data": {"actor/entropy": 0.9}})
    text = "".join(json.dumps(r) + "\n" for r in rows) + "not json\n" + again + "\n"
    log.write_text(text)
    w, _, _ = _watcher(tmp_path, log, [], Clock())
    w.cycle()
    before = w.follows[0].runs()[0]
    w.close()
    w2, _, _ = _watcher(tmp_path, log, [], Clock())
    w2.cycle()
    after = w2.follows[0].runs()[0]
    assert after.frame.equals(before.frame) and after.raw.equals(before.raw)
    assert after.skipped.reasons == before.skipped.reasons and after.skipped.count == 1
    assert after.notes == before.notes and after.framework == before.framework
    assert any("logged twice" in n for n in after.notes)
    assert after.raw.filter(pl.col("step") == 4)["actor/entropy"].item() == 0.9
    w2.close()


def test_two_watchers_sharing_one_state_file_keep_each_others_memory(tmp_path: Path) -> None:
    """`rlvitals watch a.jsonl` and `rlvitals watch b.jsonl` started in one folder share
    .rlvitals/watch.sqlite. Each writes only the keys it decided on, so when both restart neither
    sends again what it (or the other) already sent."""
    logs = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    for log in logs:
        log.write_bytes(b"")
    clock = Clock()
    sent: list[Alert] = []

    def pair() -> list[Watcher]:
        return [Watcher([log], WatchState(tmp_path / "shared.sqlite"), [], view=PlainView(io.StringIO(),
                io.StringIO()), clock=clock) for log in logs]

    watchers = pair()
    for start in range(0, 200, 25):  # both grow; their commits interleave
        for w, log in zip(watchers, logs, strict=True):
            _append(log, b"".join(LINES[start : start + 25]))
            clock.now += 1.0
            sent.extend(w.cycle())
    assert {a.run for a in sent} == {str(log) for log in logs}
    for w in watchers:
        w.close()
    again = pair()
    clock.now += 1.0
    assert [a for w in again for a in w.cycle()] == []
    assert {k.run for k in again[0].state.keys().values()} == {str(log) for log in logs}
    for w in again:
        w.close()


def test_one_run_watched_through_its_console_log_and_its_jsonl_alerts_once(tmp_path: Path) -> None:
    """veRL's console and file loggers write the same run twice; `watch run.jsonl run.log` says so
    once and alerts each finding once (as the first path's), while a different run beside them
    (another seed) still alerts on its own."""
    from rlvitals.synthetic.simulate import console_lines

    jsonl, console, other = tmp_path / "run.jsonl", tmp_path / "run.log", tmp_path / "seed2.jsonl"
    con = [(line + "\n").encode() for line in console_lines(SC)]
    header = len(con) - SC.steps
    seed2 = [line + b"\n" for line in jsonl_lines(Scenario(steps=200, collapse_at=80, grad_spike_at=150, seed=2))]
    jsonl.write_bytes(b"")
    console.write_bytes(b"".join(con[:header]))
    other.write_bytes(b"")
    out, err = io.StringIO(), io.StringIO()
    clock = Clock()
    w = Watcher([jsonl, console, other], WatchState(tmp_path / "s.sqlite"), [], WatchOptions(confirm=Confirm(looks=1)),
                view=PlainView(out, err), clock=clock)
    sent: list[Alert] = []
    for start in range(0, 200, 20):
        _append(jsonl, b"".join(LINES[start : start + 20]))
        _append(console, b"".join(con[header + start : header + start + 20]))
        _append(other, b"".join(seed2[start : start + 20]))
        clock.now += 1.0
        sent.extend(w.cycle())
    assert {a.run for a in sent} == {str(jsonl), str(other)}
    assert [a.check for a in sent if a.run == str(jsonl)].count("entropy_collapse") == 1
    assert err.getvalue().count("holds the same run as") == 1
    assert f"{console} holds the same run as {jsonl} (their first 10 common steps agree)" in err.getvalue()
    assert set(w.diagnoses) == {str(jsonl), str(console), str(other)}  # the twin is still diagnosed
    w.close()


@pytest.mark.parametrize("event", ["rotate", "rotate twice", "copytruncate", "truncate", "replace"])
@pytest.mark.parametrize("fmt", ["jsonl", "console"])
def test_watcher_through_truncation_rotation_and_replacement(tmp_path: Path, fmt: str, event: str) -> None:
    """The whole watcher, live, while the trainer's log is rotated (once, or twice between two polls),
    copy-truncated, truncated or replaced at step 100: every step is in the run once, and the alerts are
    those of a log that was never touched, none repeated."""
    from rlvitals.synthetic.simulate import console_lines

    lines = LINES if fmt == "jsonl" else [(line + "\n").encode() for line in console_lines(SC)]
    header = len(lines) - SC.steps
    name = "run.jsonl" if fmt == "jsonl" else "run.log"
    log = tmp_path / name
    log.write_bytes(b"".join(lines[:header]))
    clock = Clock()
    w, _, err = _watcher(tmp_path, log, [], clock)
    chunks = [b"".join(lines[header + s : header + s + 15]) for s in range(0, SC.steps, 15)]
    sent = []
    for i, chunk in enumerate(chunks):
        half = chunk.index(b"\n", len(chunk) // 2) + 1  # a trainer rotates between two lines
        third = chunk.index(b"\n", len(chunk) // 4) + 1
        at_event = i == 100 // 15
        if at_event and event in ("truncate", "replace"):  # nothing written after the last poll is lost
            if event == "truncate":
                log.write_bytes(b"")
            else:
                (tmp_path / "new.tmp").write_bytes(b"")
                os.replace(tmp_path / "new.tmp", log)
        if at_event and event == "rotate twice":  # RotatingFileHandler: .1 -> .2, log -> .1
            _append(log, chunk[:third])
            os.rename(log, tmp_path / f"{name}.1")
            log.write_bytes(chunk[third:half])
            os.rename(tmp_path / f"{name}.1", tmp_path / f"{name}.2")
            os.rename(log, tmp_path / f"{name}.1")
            log.write_bytes(b"")
        else:
            _append(log, chunk[:half])
        if at_event and event == "rotate":
            os.rename(log, tmp_path / f"{name}.1")
            log.write_bytes(b"")
        elif at_event and event == "copytruncate":
            shutil.copyfile(log, tmp_path / f"{name}.1")
            with log.open("r+b") as fh:
                fh.truncate(0)
        _append(log, chunk[half:])
        clock.now += 1.0
        sent.extend(w.cycle())
    run = w.follows[0].runs()[0]
    whole = tmp_path / f"whole.{fmt}"
    whole.write_bytes(b"".join(lines))
    assert run.frame.equals(load(whole)[0].frame)
    assert run.steps.tolist() == list(range(1, SC.steps + 1))
    pairs = [(a.key, a.status) for a in sent]
    assert len(pairs) == len(set(pairs)), "an alert was repeated"
    reference = _reference_alerts(tmp_path, [b"".join(lines[:header]) + chunks[0], *chunks[1:]], name)
    assert {(a.check, a.status) for a in sent} == set().union(*reference)
    said = err.getvalue()
    assert f"the file was {'truncated' if 'truncate' in event else 'replaced'} after line" in said
    if event == "rotate twice":
        assert f"read {name}.1 whole" in said
    # the old content was found (rotate, copytruncate) or there was none left to find
    assert ("not seen" in said) == (event in ("truncate", "replace"))
    w.close()


#: the trainer's clock for the files' times in the rotation races below: a second per write, set on the
#: files rather than waited for, in the past (so a file the test makes now is the newest)
_T0 = 1_700_000_000


def _write_at(path: Path, data: bytes, second: int) -> None:
    """Append ``data`` as the trainer does ``second`` seconds into its run (the file's time is set)."""
    _append(path, data)
    os.utime(path, ns=((_T0 + second) * 10**9,) * 2)


@pytest.mark.parametrize("race", ["listed", "looked", "read"])
def test_a_rotation_while_a_restarted_watcher_looks_loses_no_step(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, race: str) -> None:
    """The soak's lost steps, one interleaving at a time. The watcher is killed after storing its cursor
    in the log; the trainer writes on while it is down; the restarted watcher's first look meets the
    trainer rotating at the worst moment:

    - ``listed``: while it was down the log was renamed (steps 1-40) and shifted (41-60, never seen at
      the log's path); just after the watcher lists the folder, RotatingFileHandler's shift moves 41-60
      from ``.1`` to ``.2``, a name not listed, and the log (61-70) to ``.1``: 41-60 were lost, silently
      and for good (written before the file followed next, they were never looked for again);
    - ``looked``: between the watcher's stat of the log and its open, the log is shifted away and a new
      one takes the name: the followed file was taken for a new one and read again from its start;
    - ``read``: between the look at the log and the read of what it gained, a copytruncate and new lines,
      more than were read: the read went on in the middle of the new content.

    Every step is stored once, and none is said to be lost."""
    import rlvitals.ingest.cursor as cursor_mod
    import rlvitals.run.follow as follow_mod
    from watch.soak_writer import Rotator

    log = tmp_path / "run.jsonl"
    rotator = Rotator(log)
    log.write_bytes(b"")
    _write_at(log, b"".join(LINES[:30]), 0)
    clock = Clock()
    w, _, _ = _watcher(tmp_path, log, [], clock)
    w.cycle()
    w.close()  # killed, its cursor stored after step 30
    _write_at(log, b"".join(LINES[30:40]), 1)
    written = 40
    if race == "listed":
        rotator.rotate("rename")
        _write_at(log, b"".join(LINES[40:60]), 2)
        rotator.rotate("shift")
        _write_at(log, b"".join(LINES[60:70]), 3)
        written = 70
    fired: list[str] = []

    def strike() -> None:
        if fired:
            return
        fired.append(race)
        if race == "read":
            rotator.rotate("copytruncate")
            _write_at(log, b"".join(LINES[40:75]), 4)
        else:
            rotator.rotate("shift")

    if race == "listed":
        listdir = os.listdir

        def listing(path: Any) -> list[str]:
            names = listdir(path)
            if Path(path) == tmp_path:
                strike()
            return names

        monkeypatch.setattr(os, "listdir", listing)
    elif race == "looked":
        matches = cursor_mod.Generation.matches

        def looking(self: Any, path: Path, st: os.stat_result) -> bool:
            strike()
            return matches(self, path, st)

        monkeypatch.setattr(cursor_mod.Generation, "matches", looking)
    else:
        complete_end = follow_mod.complete_end

        def reading(path: Path, offset: int, size: int) -> int:
            strike()
            return complete_end(path, offset, size)

        monkeypatch.setattr(follow_mod, "complete_end", reading)
    w2, _, err = _watcher(tmp_path, log, [], clock)
    clock.now += 1.0
    w2.cycle()
    written = 75 if race == "read" else written
    for second, at in enumerate(range(written, len(LINES), 20), start=10):
        _write_at(log, b"".join(LINES[at:at + 20]), second)
        clock.now += 1.0
        w2.cycle()
    w2.cycle()
    assert fired == [race]
    steps = [r.step for r in w2.state.records(str(log)) if r.kind != "summary"]
    assert len(steps) == len(set(steps)), "a step stored twice"
    assert sorted(steps) == list(range(1, SC.steps + 1)), "steps lost"
    said = err.getvalue()
    assert "not seen" not in said and "were not read" not in said, said
    w2.close()


@pytest.mark.parametrize("gap", [0.0, 2.0])
def test_diagnosis_is_throttled_by_its_own_cost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gap: float) -> None:
    """A diagnosis that takes 0.4 s (a long run) while the log grows at every 0.5-s poll: with
    diagnose_gap=2 the next one waits 0.8 s after it ends, so at most a third of the time goes to
    diagnosing; the log is still read at every poll, and the last diagnosis has every step."""
    import rlvitals.watch.watcher as watcher_mod

    clock = Clock()
    starts: list[float] = []
    real = watcher_mod.diagnose

    def slow(run: Any, config: Any = None) -> Any:
        starts.append(clock.now)
        clock.now += 0.4  # what a long run's diagnosis costs, on the watcher's clock
        return real(run, config)

    monkeypatch.setattr(watcher_mod, "diagnose", slow)
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"")
    w, _, _ = _watcher(tmp_path, log, [], clock, diagnose_gap=gap)
    cycles = 0
    for start in range(0, 200, 5):
        _append(log, b"".join(LINES[start : start + 5]))
        clock.now += 0.5
        w.cycle()
        cycles += 1
    while w._dirty:  # the trainer has stopped: what was read is diagnosed at the next allowed cycle
        clock.now += 0.5
        w.cycle()
    assert w.follows[0].inner is not None and w.follows[0].inner.cursor.lines == 200  # read at every poll
    assert w.diagnoses[str(log)].run.steps.tolist() == list(range(1, 201))
    if gap == 0:
        assert len(starts) == cycles
    else:
        assert len(starts) < cycles
        assert all(b - a >= 0.4 * (1 + gap) for a, b in zip(starts, starts[1:], strict=False))
        assert 0.4 * len(starts) / (clock.now - 1000.0) <= 1 / (1 + gap)  # the share of time spent diagnosing
    w.close()


@pytest.mark.process
@pytest.mark.parametrize("signals", [["SIGTERM"], ["SIGINT"], ["SIGINT", "SIGINT"]],
                         ids=["SIGTERM", "Ctrl-C", "Ctrl-C twice"])
def test_a_signal_stops_a_real_watch_process_cleanly(tmp_path: Path, signals: list[str]) -> None:
    """Slurm ends a job with SIGTERM; a user with Ctrl-C (sometimes twice). `rlvitals watch` exits 0,
    prints no traceback, and closes its state file (SQLite removes the WAL file when the last
    connection closes cleanly)."""
    import signal as signal_mod
    import subprocess
    import time

    log, jsonl, state = tmp_path / "run.jsonl", tmp_path / "alerts.jsonl", tmp_path / "s.sqlite"
    log.write_bytes(b"".join(LINES[:120]))
    proc = subprocess.Popen([sys.executable, "-m", "rlvitals", "watch", str(log), "--alert", f"jsonl:{jsonl}",
                             "--state", str(state), "--interval", "0.2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120

    def delivered() -> bool:  # the first cycle's alerts (one root cause, what followed under it) are out
        return jsonl.is_file() and jsonl.read_text().count("\n") >= 1

    while not delivered() and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    assert delivered(), "no alert was delivered"
    time.sleep(0.5)  # in the loop, between cycles or inside one
    for name in signals:
        proc.send_signal(getattr(signal_mod, name))
        time.sleep(0.05)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert state.is_file() and not Path(f"{state}-wal").exists()
    again = WatchState(state)
    assert str(log) in again.sources() and again.pending() == []
    again.close()


@pytest.mark.parametrize("now", ["empty", "missing"])
def test_restart_rebuilds_the_run_before_the_trainer_writes_again(tmp_path: Path, now: str) -> None:
    """The trainer restarted and its new log is empty (or not there yet) when the watcher restarts: the
    run is rebuilt from the state file in the first cycle — diagnosed, shown, `--exit-on` decided —
    without re-sending anything, and the new file is followed once it is written."""
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(LINES[:120]))
    clock = Clock()
    w, _, _ = _watcher(tmp_path, log, [], clock)
    first = w.cycle()
    assert any(a.status == "fail" for a in first)
    w.close()
    log.unlink()
    if now == "empty":
        log.write_bytes(b"")
    w2, _, _ = _watcher(tmp_path, log, [], clock, exit_on="fail")
    clock.now += 1.0
    assert w2.cycle() == []
    assert w2.diagnoses[str(log)].run.steps.tolist() == list(range(1, 121))
    assert w2.exit_code() == 1
    _append(log, b"".join(LINES[120:]))
    clock.now += 1.0
    w2.cycle()
    assert w2.diagnoses[str(log)].run.steps.tolist() == list(range(1, 201))
    w2.close()


CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs"


def test_a_run_that_dies_before_its_first_step_is_alerted(tmp_path: Path) -> None:
    """Real (corpus verl__verl-maze__ppo-reward-fn-crash): veRL starts, prints its config, and dies in the
    reward function before step 1. Written as it was, half then the rest: the watcher says nothing while
    the run starts, then alerts the crash — a log with no metric line is still news once it ends in one."""
    lines = (CORPUS / "verl__verl-maze__ppo-reward-fn-crash" / "verl_demo.log").read_bytes().splitlines(True)
    log = tmp_path / "verl_demo.log"
    log.write_bytes(b"".join(lines[:200]))
    clock = Clock()
    w, _, _ = _watcher(tmp_path, log, [], clock)
    assert w.cycle() == []
    _append(log, b"".join(lines[200:]))
    clock.now += 1.0
    (crash,) = [a for a in w.cycle() if a.check == "run_crashed"]
    assert crash.status == "fail" and "NotImplementedError" in crash.message["en"]
    w.close()


def test_a_traceback_appended_after_the_last_step_is_alerted(tmp_path: Path) -> None:
    """Constructed from real parts: the first 60 steps of a real veRL log, then the traceback of a real veRL
    crash appended (no metric line after it): the appended lines carry no record, yet the run died."""
    from conftest import REAL

    name = "verl__verl_training_log__grpo_run_deepseek7b_llm.log"
    head = [line for line in (REAL / name).read_bytes().splitlines(True)]
    upto = next(i for i, line in enumerate(head) if b"step:60 " in line) + 1
    crash = (CORPUS / "verl__verl-maze__ppo-reward-fn-crash" / "verl_demo.log").read_bytes().splitlines(True)
    start = next(i for i, line in enumerate(crash) if line.startswith(b"Traceback"))
    log = tmp_path / "train.log"
    log.write_bytes(b"".join(head[:upto]))
    clock = Clock()
    w, _, _ = _watcher(tmp_path, log, [], clock)
    assert not any(a.check == "run_crashed" for a in w.cycle())
    _append(log, b"".join(crash[start:]))
    clock.now += 1.0
    (alert,) = [a for a in w.cycle() if a.check == "run_crashed"]
    assert alert.status == "fail" and "60" in alert.message["en"]
    w.close()


def test_a_trl_console_log_numbered_by_order_is_followed_as_load_reads_it(tmp_path: Path) -> None:
    """Real (corpus trlconsole__hotpotqa_qwen25_3b_grpo_klrunaway): the tqdm bar ran ahead of the printed dicts,
    so the reader numbers them by order x logging_steps (20, 40, ... 1860), which only the whole log tells.
    Followed as it grew, in four pieces, the watcher ends with the steps load() reads at once."""
    src = CORPUS / "trlconsole__hotpotqa_qwen25_3b_grpo_klrunaway" / "grpo.log"
    data = src.read_bytes()
    log = tmp_path / "grpo.log"
    log.write_bytes(b"")
    clock = Clock()
    w, _, _ = _watcher(tmp_path, log, [], clock)
    cuts = [len(data) * i // 4 for i in range(1, 5)]
    start = 0
    for cut in cuts:
        cut = data.rfind(b"\n", 0, cut) + 1 if cut < len(data) else cut
        _append(log, data[start:cut])
        start = cut
        clock.now += 1.0
        w.cycle()
    (d,) = w.diagnoses.values()
    assert d.run.train_steps.tolist() == load(src)[0].train_steps.tolist()
    assert d.run.train_steps[0] == 20 and d.run.train_steps[-1] == 1860
    w.close()


def test_a_line_whose_step_is_beyond_the_axis_is_skipped_once_and_a_restart_goes_on(tmp_path: Path) -> None:
    """The watcher's cursor moves past such a line: it used to crash the watcher at every restart."""
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(LINES[:20]))
    clock = Clock()
    w, _, _ = _watcher(tmp_path, log, [], clock)
    w.cycle(force=True)
    _append(log, b'{"step": 18446744073709551616, "data": {"actor/pg_loss": 0.1}}\n' + b"".join(LINES[20:30]))
    clock.now += 60
    w.cycle(force=True)
    run = w.follows[0].runs()[0]
    assert int(run.steps[-1]) == 30 and run.skipped.count == 1
    assert "step 18446744073709551616 is outside the 64-bit step axis" in run.skipped.reasons[0]
    w.close()
    again, _, _ = _watcher(tmp_path, log, [], clock)  # restarted from the state file alone
    clock.now += 60
    again.cycle(force=True)
    rerun = again.follows[0].runs()[0]
    assert int(rerun.steps[-1]) == 30 and len(rerun.steps) == 30
    again.close()


def test_a_quiet_log_whose_last_line_has_no_newline_is_read_whole_once(tmp_path: Path) -> None:
    """A log that ends without a newline and stays so (a run killed mid-print, a log copied short) shows every
    step `diagnose` reads once it has been quiet for `settle` seconds; a trainer that writes on after all is read
    as before, each step once."""
    from rlvitals.live import read_to as last_step
    from rlvitals.run.load import load

    log = tmp_path / "run.jsonl"
    data = b"".join(LINES[:40])
    log.write_bytes(data[:-1])  # the 40th line without its newline
    clock = Clock()
    w, _, _ = _watcher(tmp_path, log, [], clock, settle=10.0)
    w.cycle()
    assert last_step(w.full[str(log)].run) == 39
    for dt in (5.0, 4.0):  # quiet, but not for 10 s yet
        clock.now += dt
        w.cycle()
        assert last_step(w.full[str(log)].run) == 39
    clock.now += 2.0
    w.cycle()
    whole = w.full[str(log)].run
    assert [int(s) for s in whole.steps] == [int(s) for s in load(log)[0].steps] and last_step(whole) == 40
    clock.now += 20.0
    w.cycle()  # read once: nothing new to say
    _append(log, b"\n" + b"".join(LINES[40:45]))
    clock.now += 1.0
    w.cycle()
    steps = [int(s) for s in w.full[str(log)].run.steps]
    assert steps == list(range(1, 46)) and steps == [int(s) for s in load(log)[0].steps]
    w.close()
