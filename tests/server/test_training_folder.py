"""``rlvitals serve`` on a trainer's ``output_dir`` before its first checkpoint (issue 38): no
``trainer_state.json`` yet, only the console ``train.log``, ``completions/`` and the trackers' copies (``runs/``,
``wandb/``, ``mlflow.db``, ``trackio/``). It is one run, the one ``rlvitals diagnose FOLDER`` gives (the same log
kept, the same note on the copies, the completions joined), listed under the folder's path; when the trainer writes
its first checkpoint it stays that one run, under the same id. The folder is the real TRL run of
``tests/fixtures/trl-output-dir-trackers`` with its ``checkpoint-8/`` taken out, then put back."""

from __future__ import annotations

import io
import json
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from trl_output_dir import FIXTURE, at_checkpoint, before_checkpoint, last_checkpoint, sql

from rlvitals.cli import main
from rlvitals.run import copies_note, load
from rlvitals.server.discover import Discovery
from rlvitals.server.listing import run_id
from rlvitals.server.store import ServeState
from rlvitals.server.workspace import Workspace

MLFLOW = "mlflow.db#63e1dc19e2bc4cfcb4951286df402b1c"


def _diagnose(path: Path) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    assert main(["diagnose", str(path), "--json"], out=out, err=err) in (0, 1), err.getvalue()
    doc: dict[str, Any] = json.loads(out.getvalue())
    return doc


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    """A workspace serving ``tmp_path / "runs"`` on a clock that moves a minute a call (each poll rescans)."""
    now = [1000.0]

    def clock() -> float:
        now[0] += 60.0
        return now[0]

    (tmp_path / "runs").mkdir()
    ws = Workspace([tmp_path / "runs"], ServeState(tmp_path / "serve.sqlite"), clock=clock)
    try:
        yield ws
    finally:
        ws.close()


def _listed(ws: Workspace) -> list[tuple[str, str, str, int]]:
    ws.poll_once()
    ws.poll_once()
    return [(r["id"], r["label"], r["status"], r["last_step"]) for r in ws.summaries(sort="name")]


def _notes(ws: Workspace, rid: str) -> list[str]:
    run = ws.get(rid).run
    assert run is not None
    return [str(n) for n in run.notes]


def test_discovery_takes_the_folder_whole_and_its_completions_as_its_rollouts(tmp_path: Path) -> None:
    out = before_checkpoint(tmp_path / "runs" / "out")
    for served in (out, out.parent):  # the folder served, or a folder holding it
        d = Discovery(None)
        for _ in range(2):  # the second scan answers from what the first judged
            found = d.scan(served)
            assert found.logs == [out] and d.trainings == {out}
            assert list(found.rollouts) == [out / "completions"] and len(found.rollouts[out / "completions"]) == 8
            assert found.pairing().pairs == {out: out / "completions"}
            assert (found.own, found.other) == (0, 0)  # what lies in it is the run's, as in a Trainer output_dir


def test_serve_lists_the_run_diagnose_gives_and_keeps_its_id_at_the_first_checkpoint(
        tmp_path: Path, workspace: Workspace) -> None:
    out = before_checkpoint(tmp_path / "runs" / "out")
    [run] = load(out)  # what diagnose reads: a tracker's copy kept, the others and the console its twins
    note = copies_note(run)  # the run stands under the folder's path, as it will once a checkpoint is written
    assert run.path == str(out) and run.format == "mlflow"
    assert note is not None and note.startswith(f"{out}/{MLFLOW}: also logged to ")
    assert "the console (train.log)" in note
    [(rid, label, status, last)] = _listed(workspace)
    assert (rid, label, status, last) == (run_id(str(out)), "out", "ready", 8)
    served = workspace.get(rid)
    assert served.run is not None and served.run.format == run.format == "mlflow"
    assert note in _notes(workspace, rid) and served.rollouts is not None
    [shown] = workspace.page(served)["runs"]
    assert note in shown["notes"] and any("、W&B（wandb/offline-run-" in n for n in shown["notes_zh"])
    assert f"rollouts in {out / 'completions'}" in " ".join(_notes(workspace, rid))
    [doc] = _diagnose(out)["runs"]
    assert doc["rollouts"]["path"] == str(out / "completions") and doc["steps"] == served.run.frame.height
    version = served.version
    for _ in range(3):  # unchanged, it is not read again (reading Trackio's store writes only its -shm file)
        workspace.poll_once()
    assert workspace.get(rid).version == version

    last_checkpoint(out)  # the trainer writes its first checkpoint: a Trainer output_dir now
    [run] = load(out)
    assert run.path == str(out) and run.format == "trl-state"
    assert _listed(workspace) == [(rid, "out", "ready", 8)]  # one run still, the same id
    served = workspace.get(rid)
    assert served.run is not None and served.run.format == "trl-state" and served.version > version
    assert copies_note(run) in _notes(workspace, rid) and served.rollouts is not None
    assert not [n for n in workspace.notes() if "holds" in n], workspace.notes()


def _events_upto(path: Path, step: int) -> None:
    """Cut a TensorBoard event file to its records up to ``step``: the file as the writer had flushed it then (it
    writes each record once, in the order logged; a record is its length, a CRC, the Event, a CRC)."""
    data, pos = path.read_bytes(), 0
    while pos < len(data):
        (size,) = struct.unpack("<Q", data[pos:pos + 8])
        event = data[pos + 12:pos + 12 + size]
        # Event: wall_time (field 1, a double: tag 0x09 and 8 bytes), then step (field 2, a varint: tag 0x10)
        if event[:1] == b"\x09" and event[9:10] == b"\x10" and event[10] > step:  # steps < 128: one byte
            break
        pos += 12 + size + 4
    path.write_bytes(data[:pos])


def _console_upto(path: Path, step: int) -> None:
    """Cut the console to its lines up to the one that prints ``step``'s metrics."""
    lines = (FIXTURE / "train.log").read_bytes().splitlines(keepends=True)
    printed = [i for i, line in enumerate(lines) if b"{'loss': " in line]
    path.write_bytes(b"".join(lines[:printed[step - 1] + 1]))


def test_copies_written_at_other_moments_stay_one_run_as_the_folder_grows(tmp_path: Path, workspace: Workspace) -> None:
    """Live, each copy stops at its own step: the console printed step 6, TensorBoard flushed step 5, MLflow and
    Trackio hold step 7, W&B step 8 (the real files cut back to those steps). They agree on the steps they share:
    serve, as diagnose reading that moment, reads them as one training, from the copy that reaches furthest. Then
    every copy catches up, a first checkpoint (step 5) lags behind the trackers, and the last checkpoint holds every
    step: one run all along, under one id, its last step never going back."""
    out = before_checkpoint(tmp_path / "runs" / "out")
    [events] = (out / "runs").rglob("events.out.tfevents.*")
    _console_upto(out / "train.log", 6)
    _events_upto(events, 5)
    sql(out / "mlflow.db", "DELETE FROM metrics WHERE step > 7")
    sql(out / "trackio" / "rlvitals-trackers.db", "DELETE FROM metrics WHERE id > (SELECT id FROM metrics WHERE "
         "json_extract(CAST(metrics AS TEXT), '$.\"train/global_step\"') = 7)")  # its rows, in the order written
    [moment] = load(out)  # what diagnose reads at that moment: the same one run
    assert (moment.path, moment.format, int(moment.train_steps.max())) == (str(out), "wandb-offline", 8)
    rid = run_id(str(out))
    assert _listed(workspace) == [(rid, "out", "ready", 8)]
    notes = _notes(workspace, rid)
    assert workspace.get(rid).run.format == "wandb-offline"  # type: ignore[union-attr]
    assert (f"{out}: {MLFLOW} (to step 7), runs/{events.parent.name} (to step 5), train.log (to step 6) agree "
            "with wandb/offline-run-20261207_130829-vdas9cxw on every step they share, the copies being written at "
            "different moments (a tracker flushes later, a checkpoint holds the steps up to it), so they are the same "
            "run, read from wandb/offline-run-20261207_130829-vdas9cxw, which reaches furthest (step 8)") in notes
    assert workspace.get(rid).rollouts is not None
    [shown] = workspace.page(workspace.get(rid))["runs"]
    assert any(n.startswith(f"{out}：{MLFLOW}（到第 7 步）、runs/") and "写入的时机不同" in n
               for n in shown["notes_zh"])

    for name in ("train.log", "mlflow.db"):  # caught up: the copies as the training left them
        shutil.copyfile(FIXTURE / name, out / name)
    shutil.copyfile(FIXTURE / "runs" / events.parent.name / events.name, events)
    shutil.rmtree(out / "trackio")
    shutil.copytree(FIXTURE / "trackio", out / "trackio")
    [run] = load(out)
    assert _listed(workspace) == [(rid, "out", "ready", 8)]
    assert workspace.get(rid).run.format == "mlflow" and copies_note(run) in _notes(workspace, rid)  # type: ignore[union-attr]

    at_checkpoint(out, 5)  # the trainer's first checkpoint: its state stops at step 5, the trackers went on
    assert [(r.format, int(r.train_steps.max())) for r in load(out)] == [("mlflow", 8)]
    assert _listed(workspace) == [(rid, "out", "ready", 8)]
    assert workspace.get(rid).run.format == "mlflow"  # type: ignore[union-attr]
    assert any(n.startswith(f"{out}: trl-state (to step 5) agrees with {MLFLOW}") for n in _notes(workspace, rid))

    last_checkpoint(out)  # the last checkpoint holds every step
    assert _listed(workspace) == [(rid, "out", "ready", 8)]
    assert workspace.get(rid).run.format == "trl-state"  # type: ignore[union-attr]
    assert not [n for n in _notes(workspace, rid) if "written at different moments" in n]


def test_a_tracker_found_before_the_others_is_read_with_the_folder(tmp_path: Path, workspace: Workspace) -> None:
    """A scan between two trackers' starts finds MLflow's store alone (no metric yet): a log of its own then; once
    the folder holds the training's other logs it is read with them, and the folder is the one source."""
    out = tmp_path / "runs" / "out"
    out.mkdir()
    shutil.copyfile(FIXTURE / "mlflow.db", out / "mlflow.db")
    sql(out / "mlflow.db", "DELETE FROM metrics")  # the store as MLflow's start_run leaves it
    assert _listed(workspace) == [] and workspace.progress()["total"] == 1
    shutil.copytree(FIXTURE, out, ignore=shutil.ignore_patterns("checkpoint-*"), dirs_exist_ok=True)
    assert _listed(workspace) == [(run_id(str(out)), "out", "ready", 8)]
    assert workspace.progress() == {"read": 1, "total": 1}


def test_a_restarted_server_lists_it_under_the_same_id(tmp_path: Path) -> None:
    out = before_checkpoint(tmp_path / "out")
    rid = run_id(str(out))
    seen = []
    for _ in range(2):
        ws = Workspace([out], ServeState(tmp_path / "serve.sqlite"), clock=iter(range(1000, 10**6, 60)).__next__)
        try:
            seen.append([(r["id"], r["status"]) for r in ws.summaries()])  # from the state file, before a read
            seen.append([(r[0], r[2], r[3]) for r in _listed(ws)])
        finally:
            ws.close()
    assert seen == [[], [(rid, "ready", 8)], [(rid, "loading")], [(rid, "ready", 8)]]


def test_a_copy_that_differs_is_a_run_of_its_own_as_in_diagnose(tmp_path: Path, workspace: Workspace) -> None:
    """The MLflow copy's values changed: it is no twin, so diagnose gives two runs (the console, with the copies
    that agree, and the MLflow run); serve lists the same two, and joins the completions to neither, as diagnose."""
    out = before_checkpoint(tmp_path / "runs" / "out")
    sql(out / "mlflow.db", "UPDATE metrics SET value = value * 1.5 + 0.25")
    runs = load(out)
    assert [(r.path, r.format, copies_note(r) is not None) for r in runs] == [
        (f"{out}/{MLFLOW}", "mlflow", False), (str(out), "trl-console", True)]
    listed = _listed(workspace)
    assert sorted((rid, label) for rid, label, _, _ in listed) == sorted(
        [(run_id(str(out)), "out"), (run_id(f"{out}/{MLFLOW}"), MLFLOW)])
    assert copies_note(runs[1]) in _notes(workspace, run_id(str(out)))
    assert workspace.get(run_id(f"{out}/{MLFLOW}")).run.format == "mlflow"  # type: ignore[union-attr]
    assert all(workspace.get(rid).rollouts is None for rid, *_ in listed)
    assert all("rollouts" not in doc for doc in _diagnose(out)["runs"])


def test_two_output_dirs_before_their_checkpoints_are_two_runs(tmp_path: Path, workspace: Workspace) -> None:
    """A folder holding training folders is a folder of runs, not one training."""
    for exp in ("exp1", "exp2"):
        before_checkpoint(tmp_path / "runs" / exp / "out")
    listed = _listed(workspace)
    assert [(label, status, last) for _, label, status, last in listed] == [
        ("exp1/out", "ready", 8), ("exp2/out", "ready", 8)]
    assert all(workspace.get(rid).rollouts is not None for rid, *_ in listed)


def test_logs_of_one_format_or_in_sub_folders_are_no_training_folder(tmp_path: Path) -> None:
    """Two consoles are two runs; two trackers' folders alone are two runs (diagnose folds copies only into a log
    whose folder holds them); a tracker's copy beside a folder holding a log is a folder of runs."""
    runs = tmp_path / "runs"
    for tracker in ("runs", "wandb"):
        shutil.copytree(FIXTURE / tracker, tmp_path / "trackers" / tracker)
    d = Discovery(None)
    assert d.scan(tmp_path / "trackers").logs == [tmp_path / "trackers" / t for t in ("runs", "wandb")]
    assert len(load(tmp_path / "trackers")) == 2 and not d.trainings
    runs.mkdir()
    for name in ("a.log", "b.log"):
        shutil.copyfile(FIXTURE / "train.log", runs / name)
    d = Discovery(None)
    assert d.scan(runs).logs == [runs / "a.log", runs / "b.log"] and not d.trainings
    shutil.copytree(FIXTURE / "runs", runs / "tb")
    (runs / "a").mkdir()
    (runs / "a.log").rename(runs / "a" / "train.log")
    (runs / "b.log").unlink()
    found = d.scan(runs)
    assert sorted(found.logs) == [runs / "a" / "train.log", runs / "tb"] and not d.trainings


def test_a_console_alone_then_its_first_checkpoint_is_one_run_and_its_old_id_leads_to_it(tmp_path: Path) -> None:
    """A trainer that reports to no tracker: before its first checkpoint its output_dir holds the console alone,
    listed as that log's run. The checkpoint makes the folder a Trainer output_dir, read whole with the console:
    the console's entry leaves the list (it was listed twice) and the state file, a note says so, and its id — a
    bookmark, an open page — leads to the folder's run: the API's 404 names it, the page redirects to it, and the
    events a page polls map one to the other. A restart lists the folder's run alone."""
    from fastapi.testclient import TestClient

    from rlvitals.server import create_app

    out = tmp_path / "runs" / "out"
    out.mkdir(parents=True)
    shutil.copyfile(FIXTURE / "train.log", out / "train.log")
    console, folder = run_id(str(out / "train.log")), run_id(str(out))
    now = iter(range(1000, 10**6, 60))
    ws = Workspace([tmp_path / "runs"], ServeState(tmp_path / "serve.sqlite"), clock=lambda: float(next(now)))
    try:
        assert _listed(ws) == [(console, "train.log", "ready", 8)]
        seq = ws.events(0)["seq"]
        last_checkpoint(out)
        assert _listed(ws) == [(folder, "out", "ready", 8)]
        assert f"{out / 'train.log'}: read with the training in {out} from now on" in ws.notes()
        assert ws.moved_to(console) == folder and ws.moved_to(folder) is None
        assert ws.events(seq)["moved"] == {console: folder}
        client = TestClient(create_app(ws), base_url="http://127.0.0.1")
        answer = client.get(f"/api/runs/{console}")
        assert answer.status_code == 404
        assert f"run '{console}' is read with its training folder now: it is run '{folder}'" in answer.text
        page = client.get(f"/runs/{console}", follow_redirects=False)
        assert page.status_code == 308 and page.headers["location"] == f"/runs/{folder}"
        assert client.get(f"/runs/{folder}").status_code == 200
    finally:
        ws.close()
    ws = Workspace([tmp_path / "runs"], ServeState(tmp_path / "serve.sqlite"), clock=lambda: float(next(now)))
    try:
        assert [r["id"] for r in ws.summaries()] == [folder]  # from the state file: the console's entry is gone
        assert _listed(ws) == [(folder, "out", "ready", 8)]
    finally:
        ws.close()
