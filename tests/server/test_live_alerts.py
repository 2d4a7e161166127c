"""The dashboard's own alerts (issue 35, one live core): where no watcher writes alerts into the served folders, a
run page lists what ``rlvitals watch`` would have said of the run while its log grew — the same alerts, decided on
the same live path (``rlvitals.live.Alerting``) — raised, cleared, and none for a log read once, whole."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from conftest import REAL
from fastapi.testclient import TestClient

from rlvitals.live import Confirm
from rlvitals.server import ServeState, Workspace, WorkspaceOptions, create_app, run_id
from rlvitals.server.live_alerts import LiveAlerts
from rlvitals.watch.sinks import JsonlSink
from rlvitals.watch.state import WatchState
from rlvitals.watch.view import PlainView
from rlvitals.watch.watcher import Watcher, WatchOptions
from server.test_app import LOCAL

#: a real Unsloth GRPO run (250 steps) whose KL leaves its band early on and comes back (the whole run is healthy)
CSV = REAL / "trl-unsloth__notebooks__Llama3.1_8B-GRPO.training_table.csv"


class Clock:
    """A clock the test sets; watch and serve read the same one."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _grow(log: Path, rows: list[str], chunk: int, looks: list[tuple[int, int]]) -> None:
    with log.open("w") as f:
        f.write(rows[0])
    for start in range(1, len(rows), chunk):
        looks.append((start, min(start + chunk, len(rows))))


@pytest.fixture
def csv_rows() -> list[str]:
    return CSV.read_text().splitlines(keepends=True)


def test_serve_alerts_a_growing_log_as_watch_does(tmp_path: Path, csv_rows: list[str]) -> None:
    """The same log, grown 10 rows a look, read by a watcher and a dashboard on one clock: the dashboard's alerts
    are watch's, kind for kind and step for step, a warning withdrawn by a ``cleared`` included."""
    log = tmp_path / "runs" / "train.csv"
    log.parent.mkdir()
    clock = Clock()
    still = lambda: 0.0  # noqa: E731 (the cost timer stands still: no throttle but the interval)
    watcher = Watcher([log], WatchState(tmp_path / "w.sqlite"), [JsonlSink(tmp_path / "alerts.jsonl")],
                      WatchOptions(confirm=Confirm(), tail_steps=0, fmt="csv"),
                      view=PlainView(io.StringIO(), io.StringIO(), "en"), clock=clock, timer=still)
    ws = Workspace([log.parent], ServeState(tmp_path / "s.sqlite"), WorkspaceOptions(fmt="csv"), clock=clock,
                   timer=still)
    looks: list[tuple[int, int]] = []
    _grow(log, csv_rows, 10, looks)
    watched = []
    # then quiet looks, four minutes apart: what waits is let through, what went away is said cleared
    for start, stop in [*looks, *[(0, 0)] * 4]:
        with log.open("a") as f:
            f.write("".join(csv_rows[start:stop]))
        clock.now += 5.0 if stop else 240.0
        watched += watcher.cycle()
        ws.poll_once()
    said = [(a.kind, a.check, a.status, a.step) for a in watched]
    shown = [(s.kind, s.check, s.status, s.step) for s in ws.live_alerts.of(str(log))]
    assert shown == said
    assert ("cleared", "kl_band") in {(kind, check) for kind, check, _, _ in said}, said
    assert all(status != "fail" for _, _, status, _ in said)  # a healthy run: no failure, live either
    watcher.close()
    ws.close()


def test_a_run_page_shows_the_dashboards_alerts_of_a_run_it_saw_grow(tmp_path: Path, csv_rows: list[str]) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    log, whole = folder / "growing.csv", folder / "whole.csv"
    whole.write_text("".join(csv_rows))
    clock = Clock()
    ws = Workspace([folder], ServeState(tmp_path / "s.sqlite"), WorkspaceOptions(fmt="csv"), clock=clock,
                   timer=lambda: 0.0)
    c = TestClient(create_app(ws), base_url=LOCAL)
    looks: list[tuple[int, int]] = []
    _grow(log, csv_rows, 10, looks)
    versions = []
    for start, stop in looks[:8]:  # to step 80: the KL warning has been raised, not yet cleared
        with log.open("a") as f:
            f.write("".join(csv_rows[start:stop]))
        clock.now += 5.0
        ws.poll_once()
        versions.append(c.get(f"/api/runs/{run_id(str(log))}").json()["version"])
    html = c.get(f"/runs/{run_id(str(log))}").text
    assert 'id="rlv-alerts"' in html, "the dashboard raised nothing while the log grew"
    section = html[html.index('id="rlv-alerts"'):html.index("</section>", html.index('id="rlv-alerts"'))]
    assert "decided by this dashboard while the log grew" in section and "<code>kl_band</code>" in section
    assert 'data-kind="new"' in section
    assert versions == sorted(versions)
    # the log read once, whole: its findings are on the page; no live history to list
    clock.now += 60.0
    ws.poll_once()
    assert 'id="rlv-alerts"' not in c.get(f"/runs/{run_id(str(whole))}").text
    ws.close()


def test_alerts_of_a_run_never_seen_growing_are_not_listed() -> None:
    assert LiveAlerts().of("never.log") == []
