"""A team's folder: quiet logs read whole and held as their facts, the list usable while the rest are read, and a
restart that reads only the logs that changed (:mod:`rlvitals.server.quiet`). The logs are real corpus logs; the
reads are counted by a reader wrapped around the real one (no wall-clock timing anywhere)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from corpus import corpus_input
from fastapi.testclient import TestClient

from rlvitals.checks.config import DiagnoseConfig
from rlvitals.diagnosis import diagnose
from rlvitals.run.load import load
from rlvitals.server import ServeState, Workspace, WorkspaceOptions, create_app
from rlvitals.server.listing import facts_of
from rlvitals.server.quiet import Found, Reading, read_whole

LOCAL = "http://127.0.0.1"
RUNS = ("verl__agent-opd__qwen2.5-3b-tokenkl0.1-entropy-surge",
        "verl__agent-opd__qwen2.5-3b-klreward0.05-length-collapse",
        "verl__agent-opd__qwen2.5-3b-tokenkl0.1-entropy-surge")
HOUR_AGO = time.time() - 3600


class Counting:
    """The real whole-log reader, counting what it read; ``during(k)`` runs before the k-th read."""

    def __init__(self, during: Any = None) -> None:
        self.paths: list[Path] = []
        self.during = during

    def __call__(self, path: Path, fmt: str | None, algorithm: str | None, config: DiagnoseConfig | None) -> Reading:
        if self.during is not None:
            self.during(len(self.paths))
        self.paths.append(path)
        return read_whole(path, fmt, algorithm, config)


def sweep(folder: Path) -> list[Path]:
    """A folder of finished runs (written an hour ago), one sub-folder each."""
    logs = []
    for i, run in enumerate(RUNS):
        log = folder / f"run{i}" / "train.log"
        log.parent.mkdir(parents=True)
        log.write_bytes(corpus_input(run).read_bytes())
        os.utime(log, (HOUR_AGO, HOUR_AGO))
        logs.append(log)
    return logs


@pytest.fixture
def logs(tmp_path: Path) -> list[Path]:
    return sweep(tmp_path / "sweep")


def workspace(folder: Path, state: Path, reader: Counting, **options: Any) -> Workspace:
    return Workspace([folder], ServeState(state), WorkspaceOptions(**options), reader=reader)


@pytest.fixture
def ws(logs: list[Path], tmp_path: Path) -> Iterator[Workspace]:
    w = workspace(logs[0].parent.parent, tmp_path / "serve.sqlite", Counting())
    yield w
    w.close()


def test_a_quiet_log_is_read_whole_once_and_held_by_its_facts_only(ws: Workspace, logs: list[Path]) -> None:
    ws.poll_once()
    runs = ws.summaries(sort="name")
    assert [(r["path"], r["status"]) for r in runs] == [(str(log), "ready") for log in logs]
    reader = ws._readers.read
    assert isinstance(reader, Counting) and sorted(reader.paths) == logs
    for log, r in zip(logs, runs, strict=True):
        held = ws._served[r["id"]]
        # what is kept of a run nobody looks at: no Run, no Diagnosis, no page model, no follower's columns
        assert held.run is None and held.diagnosis is None and held.facts is not None
        assert ("page", r["id"]) not in ws._memo and ws._sources[log].follow.inner is None
        (run,) = load(log)
        d = diagnose(run)
        assert (r["verdict"], r["last_step"]) == (d.verdict, int(run.train_steps[-1]))
        assert {k: r[k] for k in facts_of(d)} == facts_of(d)  # the list says what a diagnosis says
    ws.poll_once()
    assert len(reader.paths) == len(logs)  # not read again while it stays as it is


def test_a_run_page_asked_for_reads_its_log_and_keeps_its_version(ws: Workspace, logs: list[Path]) -> None:
    ws.poll_once()
    listed = {r["path"]: r for r in ws.summaries()}[str(logs[1])]
    served = ws.get(listed["id"])
    assert served.run is not None and served.diagnosis is not None  # read for its page, followed from now on
    assert served.version == listed["version"] and served.summary()["findings"] == listed["findings"]
    others = [ws._served[r["id"]] for r in ws.summaries() if r["id"] != listed["id"]]
    assert all(o.run is None for o in others)  # the runs not looked at stay facts only
    events = ws.events(0)["seq"]
    ws.poll_once()
    assert ws.events(events)["runs"] == []  # reading it for its page is no news: nothing changed


def test_a_quiet_log_written_to_again_is_followed(ws: Workspace, logs: list[Path]) -> None:
    ws.poll_once()
    before = {r["path"]: r for r in ws.summaries()}[str(logs[0])]
    logs[0].write_bytes(corpus_input(RUNS[1]).read_bytes())  # rewritten with a shorter run: followed from now on
    ws.poll_once()
    ws.poll_once()
    after = {r["path"]: r for r in ws.summaries()}[str(logs[0])]
    assert after["version"] == before["version"] + 1 and after["last_step"] < before["last_step"]
    assert ws._sources[logs[0]].follow.inner is not None and ws._served[after["id"]].diagnosis is not None


def test_the_list_is_usable_while_the_rest_are_read(logs: list[Path], tmp_path: Path) -> None:
    seen: list[tuple[int, dict[str, Any], str, int]] = []
    box: dict[str, Any] = {}

    def during(k: int) -> None:  # before the k-th read: the list as a browser gets it now
        client = box["client"]
        listed = client.get("/api/runs").json()
        html = client.get("/?lang=zh").text
        opened = client.get(f"/runs/{listed['runs'][0]['id']}").status_code if listed["runs"] else 0
        seen.append((k, listed, html, opened))

    ws = workspace(logs[0].parent.parent, tmp_path / "serve.sqlite", Counting(during))
    box["client"] = TestClient(create_app(ws), base_url=LOCAL)
    try:
        ws.poll_once()
        for k, listed, html, opened in seen:
            assert listed["progress"] == {"read": k, "total": 3}
            assert len(listed["runs"]) == k and all(r["status"] == "ready" for r in listed["runs"])
            assert f"Reading the logs: {k} of 3 read" in html and f"正在读取日志：已读 {k} / 3 个" in html
            assert opened == (200 if k else 0)  # a run listed opens while the others are still read
        done = box["client"].get("/api/runs").json()
        assert done["progress"] == {"read": 3, "total": 3} and len(done["runs"]) == 3
        assert 'id="rlv-progress"' not in box["client"].get("/").text
    finally:
        ws.close()


def test_a_restart_reads_only_the_log_that_changed(logs: list[Path], tmp_path: Path) -> None:
    folder, state = logs[0].parent.parent, tmp_path / "serve.sqlite"
    first = workspace(folder, state, Counting())
    first.poll_once()
    before = {r["path"]: r for r in first.summaries()}
    first.close()
    with logs[2].open("ab") as fh:  # one run written to while the server was down, quiet again since
        fh.write(b"\n")
    os.utime(logs[2], (HOUR_AGO + 60, HOUR_AGO + 60))
    reader = Counting()
    again = workspace(folder, state, reader)
    try:
        again.poll_once()
        assert reader.paths == [logs[2]]  # the unchanged logs are listed from the state file
        after = {r["path"]: r for r in again.summaries()}
        assert all(r["status"] == "ready" for r in after.values()) and after.keys() == before.keys()
        for log in logs[:2]:
            assert after[str(log)]["version"] == before[str(log)]["version"]
            assert {k: after[str(log)][k] for k in ("verdict", "last_step", "layers", "findings", "headline")} == \
                {k: before[str(log)][k] for k in ("verdict", "last_step", "layers", "findings", "headline")}
        assert after[str(logs[2])]["version"] == before[str(logs[2])]["version"] + 1
        assert again.get(after[str(logs[0])]["id"]).diagnosis is not None  # and it opens: read for its page
    finally:
        again.close()


def test_a_log_being_written_is_followed_not_read_whole(tmp_path: Path) -> None:
    log = tmp_path / "run" / "train.log"
    log.parent.mkdir()
    log.write_bytes(corpus_input(RUNS[0]).read_bytes())  # written just now: a trainer at work
    reader = Counting()
    ws = workspace(log.parent, tmp_path / "serve.sqlite", reader)
    try:
        ws.poll_once()
        (r,) = ws.summaries()
        assert reader.paths == [] and r["status"] == "ready" and ws._served[r["id"]].diagnosis is not None
    finally:
        ws.close()


def test_worker_processes_give_what_the_poll_thread_gives(logs: list[Path], tmp_path: Path) -> None:
    folder = logs[0].parent.parent
    inline = workspace(folder, tmp_path / "a.sqlite", Counting())
    pooled = Workspace([folder], ServeState(tmp_path / "b.sqlite"), WorkspaceOptions(workers=1))
    try:
        inline.poll_once()
        for _ in range(600):  # the workers' reads come back at later polls
            pooled.poll_once()
            if pooled.progress()["read"] == len(logs):
                break
            time.sleep(0.1)

        def facts(w: Workspace) -> list[tuple[Any, ...]]:
            return sorted((r["path"], r["verdict"], r["last_step"], r["findings"]["warn"], r["status"])
                          for r in w.summaries())

        assert facts(pooled) == facts(inline)
        assert all(s.run is None for s in pooled._served.values())
    finally:
        inline.close()
        pooled.close()


def test_the_state_file_keeps_readings_and_leaves_out_one_it_cannot_read(tmp_path: Path) -> None:
    state = ServeState(tmp_path / "serve.sqlite")
    kept = Reading("/runs/a.log", (("a.log", 10, 5, 7),), (Found("/runs/a.log", 3, "warn", {"steps": 3}),))
    state.save_reading(kept)
    state.db.execute("INSERT INTO readings (path, signature, runs) VALUES ('/runs/b.log', 'not json', '[]')")
    assert state.readings() == {"/runs/a.log": kept}  # b.log is read again rather than listed from nonsense
    state.forget_reading("/runs/a.log")
    assert state.readings() == {}
    state.close()
