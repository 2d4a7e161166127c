"""``rlvitals export --trackio DIR``: the plan logged to a Trackio project by the real trackio library, read
back from its SQLite file; exported again it adds nothing, and a log that grew adds only its new steps."""

from __future__ import annotations

import math
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import rlvitals
from rlvitals.diagnosis import diagnose
from rlvitals.errors import RlvitalsError
from rlvitals.export import ExportPlan, plan_export, write_trackio

from export.test_tensorboard import FIXTURE  # isort: skip

#: these tests run a real tracker SDK (its writer, or its reader for comparison)
pytestmark = pytest.mark.tracker

pytest.importorskip("trackio")
STATUS = {"ok": 0.0, "note": 0.5, "warn": 1.0, "fail": 2.0}


def export(log: Path, folder: Path, *more: str) -> str:
    """The command as a user runs it (a process of its own: trackio settles its folder when imported)."""
    done = subprocess.run([sys.executable, "-m", "rlvitals", "export", str(log), "--trackio", str(folder),
                           "--metrics", "actor/entropy", *more], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def plan_of(log: Path) -> ExportPlan:
    return plan_export(diagnose(rlvitals.load(log)[0]), metrics=["actor/entropy"])


def points(run: rlvitals.Run, key: str) -> dict[int, float]:
    """What the run logged under ``key`` (an rlvitals/ tag is no catalog metric: read from the raw frame)."""
    return dict(run.raw.select("step", key).drop_nulls().rows())


def logged(db: Path) -> list[tuple[int, str]]:
    """Every (step, key) the project's metrics rows hold, in the order written."""
    import orjson

    out = []
    for step, blob in sqlite3.connect(db).execute("SELECT step, metrics FROM metrics ORDER BY id"):
        out += [(step, key) for key in orjson.loads(blob)]
    return out


@pytest.mark.process
def test_the_plan_is_in_the_project_value_for_value(tmp_path: Path) -> None:
    said = export(FIXTURE, tmp_path / "trackio")
    db = tmp_path / "trackio" / "rlvitals.db"
    root = f"{db}#{FIXTURE.name}"
    assert said.startswith(f"wrote {root} (Trackio: ") and "Trackio project initialized" not in said
    plan = plan_of(FIXTURE)
    [run] = rlvitals.load(db)
    assert run.path == root and run.format == "trackio"
    (series,) = plan.series
    assert points(run, series.tag) == dict(zip(series.steps.tolist(), series.values.tolist(), strict=True))
    for f in plan.findings:
        assert points(run, f.tag)[f.step] == STATUS[f.status], f.name
    assert run.config["rlvitals/verdict"] == plan.verdict and run.config["rlvitals/source"] == str(FIXTURE)
    assert any("media and tables (1: rlvitals/findings)" in str(n) for n in run.notes)  # the table of words
    assert len(logged(db)) == len(set(logged(db)))


@pytest.mark.process
def test_exported_again_it_adds_nothing_and_a_grown_log_only_its_new_steps(tmp_path: Path) -> None:
    lines = FIXTURE.read_bytes().splitlines(keepends=True)
    log = tmp_path / FIXTURE.name
    log.write_bytes(b"".join(lines[: len(lines) // 2]))
    folder = tmp_path / "trackio"
    export(log, folder)
    db = folder / "rlvitals.db"
    first = logged(db)
    half_last = max(step for step, _ in first)
    assert " 0 new rows" in export(log, folder) and logged(db) == first  # nothing twice
    log.write_bytes(FIXTURE.read_bytes())
    said = export(log, folder)
    assert " 0 new rows" not in said
    rows = logged(db)
    assert len(rows) > len(first) and rows[: len(first)] == first
    assert all(step > half_last for step, _ in rows[len(first):])
    assert len(rows) == len(set(rows))
    full = plan_of(log)
    [run] = rlvitals.load(db)
    (series,) = full.series
    got = points(run, series.tag)
    for step, value in zip(series.steps.tolist(), series.values.tolist(), strict=True):
        if step > half_last:
            assert got[step] == value or (math.isnan(got[step]) and math.isnan(value))


def test_a_process_that_imported_trackio_elsewhere_is_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import trackio  # noqa: F401 - imported with this process's TRACKIO_DIR (the default here)

    monkeypatch.delenv("TRACKIO_DIR", raising=False)
    with pytest.raises(RlvitalsError) as got:
        write_trackio(plan_of(FIXTURE), directory=tmp_path / "other")
    assert str(got.value) == (f"--trackio {tmp_path / 'other'}: trackio was imported in this process with "
                              "TRACKIO_DIR=its default, and keeps that folder; export in a new process")
    assert got.value.text("zh") == (f"--trackio {tmp_path / 'other'}：本进程已经以 TRACKIO_DIR=默认值 导入了 "
                                    "trackio，它会一直用那个文件夹；请在新的进程里导出")


@pytest.mark.process
def test_one_run_name_for_several_runs_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "rlvitals", "export", str(FIXTURE), str(FIXTURE), "--trackio",
                           str(tmp_path), "--trackio-run", "x"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert ("--trackio-run 'x' names one Trackio run, but 2 runs were given; export one run at a time under one "
            "name") in done.stderr
