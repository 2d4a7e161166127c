"""``rlvitals export --swanlab DIR``: the plan logged offline to a SwanLab run by the real swanlab library, read
back from its ``.swanlab`` files; exported again it adds nothing, and a log that grew adds only its new steps
(in a session folder of its own, with the run's id, as ``swanlab sync`` resumes it)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

import rlvitals
from rlvitals.diagnosis import diagnose
from rlvitals.export import ExportPlan, plan_export
from rlvitals.export.swanlab import run_id
from rlvitals.ingest import SkipLog, logged_tables

from export.test_tensorboard import FIXTURE  # isort: skip

#: these tests run a real tracker SDK (its writer, or its reader for comparison)
pytestmark = pytest.mark.tracker

pytest.importorskip("swanlab")
STATUS = {"ok": 0.0, "note": 0.5, "warn": 1.0, "fail": 2.0}


def export(log: Path, folder: Path, *more: str) -> str:
    """The command as a user runs it."""
    done = subprocess.run([sys.executable, "-m", "rlvitals", "export", str(log), "--swanlab", str(folder),
                           "--metrics", "actor/entropy", *more], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def plan_of(log: Path) -> ExportPlan:
    return plan_export(diagnose(rlvitals.load(log)[0]), metrics=["actor/entropy"])


def sessions(folder: Path) -> list[rlvitals.Run]:
    return [run for session in sorted(folder.glob("run-*")) for run in rlvitals.load(session)]


def points(runs: list[rlvitals.Run], key: str) -> dict[int, float]:
    out: dict[int, float] = {}
    for run in runs:
        if key in run.raw.columns:
            for step, value in run.raw.select("step", key).drop_nulls().rows():
                assert step not in out, (key, step)  # no step logged twice
                out[step] = value
    return out


@pytest.mark.process
def test_the_plan_is_in_the_run_value_for_value(tmp_path: Path) -> None:
    folder = tmp_path / "swanlog"
    said = export(FIXTURE, folder)
    rid = run_id("rlvitals", FIXTURE.name)
    [session] = sorted(folder.glob(f"run-*-{rid}"))
    assert said.startswith(f"wrote {session} (SwanLab run {rid}, offline: ") and "swanlab:" not in said
    plan = plan_of(FIXTURE)
    [run] = sessions(folder)
    assert run.format == "swanlab"
    (series,) = plan.series
    got = points([run], series.tag)
    want = dict(zip(series.steps.tolist(), series.values.tolist(), strict=True))
    assert got == {s: v for s, v in want.items() if not math.isnan(v)}
    for f in plan.findings:
        assert points([run], f.tag)[f.step] == STATUS[f.status], f.name
    assert run.config["rlvitals/verdict"] == plan.verdict and run.config["rlvitals/source"] == str(FIXTURE)
    # the findings' words are a table, read back by rlvitals' own table reader

    [table] = logged_tables(session, SkipLog())
    assert table.key == "rlvitals/findings" and len(table.rows) == len(plan.findings)


@pytest.mark.process
def test_exported_again_it_adds_nothing_and_a_grown_log_only_its_new_steps(tmp_path: Path) -> None:
    lines = FIXTURE.read_bytes().splitlines(keepends=True)
    log = tmp_path / FIXTURE.name
    log.write_bytes(b"".join(lines[: len(lines) // 2]))
    folder = tmp_path / "swanlog"
    export(log, folder)
    half = plan_of(log)
    half_last = max(int(s.steps.max()) for s in half.series)
    assert " 0 new rows" in export(log, folder) and len(list(folder.glob("run-*"))) == 1  # nothing twice
    log.write_bytes(FIXTURE.read_bytes())
    said = export(log, folder)
    assert " 0 new rows" not in said
    runs = sessions(folder)
    assert len(runs) == 2 and all(int(r.steps.min()) > half_last for r in runs[1:])
    full = plan_of(log)
    (series,) = full.series
    got = points(runs, series.tag)  # asserts no step twice across the sessions
    for step, value in zip(series.steps.tolist(), series.values.tolist(), strict=True):
        if not math.isnan(value):
            assert got[step] == value


@pytest.mark.process
def test_one_run_name_for_several_runs_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "rlvitals", "export", str(FIXTURE), str(FIXTURE), "--swanlab",
                           str(tmp_path), "--swanlab-run", "x"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert ("--swanlab-run 'x' names one SwanLab run, but 2 runs were given; export one run at a time under one "
            "name") in done.stderr


@pytest.mark.process
def test_the_line_it_writes_and_a_missing_library_in_both_languages(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from rlvitals.errors import RlvitalsError
    from rlvitals.export import write_swanlab

    said = export(FIXTURE, tmp_path / "swanlog", "--lang", "zh")
    [session] = sorted((tmp_path / "swanlog").glob("run-*"))
    assert said.startswith(f"已写出 {session}（SwanLab 运行 {run_id('rlvitals', FIXTURE.name)}，离线：新写 ")
    assert "行，已有 0 行）：1 条序列、" in said
    monkeypatch.setitem(sys.modules, "swanlab", None)  # as if it were not installed
    with pytest.raises(RlvitalsError) as got:
        write_swanlab(plan_of(FIXTURE), directory=tmp_path / "other")
    assert str(got.value) == ("--swanlab needs the swanlab library, which is not installed; install it with: "
                              "pip install 'rlvitals[swanlab]'")
    assert got.value.text("zh") == "--swanlab 需要 swanlab 库，但它没有安装；请用 pip install 'rlvitals[swanlab]' 安装"


@pytest.mark.process
def test_one_run_name_for_several_runs_is_said_in_chinese(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "rlvitals", "export", str(FIXTURE), str(FIXTURE), "--swanlab",
                           str(tmp_path), "--swanlab-run", "x", "--lang", "zh"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2
    assert "--swanlab-run 'x' 指的是一个 SwanLab 运行，但给了 2 次训练；用同一个名字时请一次导出一次训练" in done.stderr
