"""The alerts `rlvitals watch --alert jsonl:FILE` wrote into a served folder, on the page of the run they name:
raised, escalated and cleared, newest first, updated live; the alert file itself is no run, a line that is no
alert is skipped and counted, an alert written twice is shown once."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from rlvitals.diagnosis import Finding
from rlvitals.live.alerts import Cooldown, Observation, decide
from rlvitals.server import create_app, run_id
from rlvitals.server.alert_files import AlertFiles
from rlvitals.synthetic.simulate import Scenario
from rlvitals.watch.sinks import JsonlSink
from server.test_app import LOCAL, _write, workspace


def _finding(status: str) -> Finding:
    return Finding("kl_band", "L1", status, {"en": "KL outside its band", "zh": "KL 超出正常范围"},
                   {"en": "actor/kl_loss above 0.1"}, {}, ("actor/kl_loss",), onset_step=12)


def _said(log: Path, sink: JsonlSink, looks: list[tuple[int, str | None]]) -> None:
    """What the alert policy says of ``log`` over ``looks`` (step, status of the finding or None), through the
    JSONL sink watch uses."""
    keys: dict = {}  # type: ignore[type-arg]
    for i, (step, status) in enumerate(looks):
        found = [_finding(status)] if status else [_finding("ok")]
        alerts, keys = decide(keys, [Observation(str(log), step, found)], float(i * 1000), Cooldown(seconds=0))
        for alert in alerts:
            assert sink.send(alert) is None


def test_a_run_page_lists_what_watch_said_of_it_cleared_included(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    log = folder / "grpo.jsonl"
    _write(log, Scenario(steps=60), 0, 60)
    sink = JsonlSink(folder / "alerts.jsonl")
    _said(log, sink, [(20, "warn"), (30, "fail"), (40, None), (50, None)])
    ws = workspace([folder], tmp_path / "s.sqlite")
    c = TestClient(create_app(ws), base_url=LOCAL)
    ws.poll_once()
    assert [Path(r["label"]).name for r in c.get("/api/runs").json()["runs"]] == ["grpo.jsonl"]  # not a run
    rid = run_id(str(log))
    html = c.get(f"/runs/{rid}").text
    section = html[html.index('id="rlv-alerts"'):html.index("</section>", html.index('id="rlv-alerts"'))]
    # under the story, inside <main> (swapped live): the verdict and root cause stay on the first screen
    assert html.index("<main>") < html.index('id="story"') < html.index('id="rlv-alerts"') < html.index("</main>")
    kinds = [part.split('"')[0] for part in section.split('data-kind="')[1:]]
    assert kinds == ["cleared", "escalated", "new"]  # newest first
    assert "KL outside its band" in section and "KL 超出正常范围" in section and "<code>kl_band</code>" in section
    assert section.index("cleared") < section.index("escalated")
    version = c.get("/api/runs").json()["runs"][0]["version"]
    # it comes back: the page's version moves on with the new alert, and the page shows it
    _said(log, sink, [(20, "warn"), (30, "fail"), (40, None), (50, None), (60, "warn")])
    with (folder / "alerts.jsonl").open("a") as f:
        f.write("not an alert\n")
    ws.poll_once()  # the clock moves a minute per look: the folder is scanned again
    assert c.get("/api/runs").json()["runs"][0]["version"] > version
    html = c.get(f"/runs/{rid}").text
    assert html.count('data-kind="again"') == 1 and html.count('data-kind="cleared"') == 1  # each once
    ws.close()


def test_alert_files_match_runs_by_real_path_and_skip_lines_that_are_no_alert(tmp_path: Path) -> None:
    log = tmp_path / "a" / "train.log"
    log.parent.mkdir()
    log.write_text("x\n")
    alerts = tmp_path / "a" / "alerts.jsonl"
    line = {"alert_id": "1", "kind": "new", "status": "warn", "check": "kl_band", "step": 5, "run": "train.log",
            "at": 1.0, "title": {"en": "KL"}}
    alerts.write_text(json.dumps(line) + "\n{broken\n" + json.dumps({**line, "alert_id": "2", "run": str(log),
                                                                      "step": 6}) + "\n")
    files = AlertFiles()
    assert files.update([alerts]) == {str(log.resolve())}
    assert [(s.step, s.kind) for s in files.of(str(log))] == [(5, "new"), (6, "new")]  # relative and absolute
    assert files.skipped[alerts] == 1
    assert files.update([alerts]) == set()  # unchanged: not read again
    assert files.update([]) == {str(log.resolve())} and files.of(str(log)) == []  # the file went away

