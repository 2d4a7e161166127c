"""rlvitals export --wandb: a real run's curves (logged and derived) and findings logged through the real
wandb client (offline, no network), read back with rlvitals' W&B offline reader and with wandb's
own: ``wandb leet inspect --json``, where wandb-core (the Go service that writes the run file)
parses the transaction log and prints each record, history rows included. wandb 0.31 no longer
ships the Python datastore reader, so this is the reader W&B itself uses.

W&B stores doubles, so values read back exactly (NaN stays NaN).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from wandb_env import offline_wandb

import rlvitals
from rlvitals.cli import main
from rlvitals.diagnosis import diagnose
from rlvitals.errors import RlvitalsError
from rlvitals.export import ExportPlan, Series, plan_export, write_wandb
from rlvitals.export.wandb import STEP_KEY, TABLE_COLUMNS, VERDICT_KEY, WandbExport, findings_table
from rlvitals.ingest._leveldb import frames
from rlvitals.ingest.formats.wandb_offline import MAGIC
from rlvitals.ingest.record import SkipLog, SourceMeta
from rlvitals.render import STATUS_WORDS
from rlvitals.words import Words

from export.test_tensorboard import FIXTURE, gappy, rollout_rows  # isort: skip

#: these tests run a real tracker SDK (its writer, or its reader for comparison)
pytestmark = pytest.mark.tracker

wandb = pytest.importorskip("wandb")
STATUS = {"ok": 0.0, "note": 0.5, "warn": 1.0, "fail": 2.0}  # a note sits below a warning


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("wandb")
    with pytest.MonkeyPatch.context() as mp:
        offline_wandb(mp, folder)
        yield folder


@pytest.fixture(scope="module")
def plan() -> ExportPlan:
    run = rlvitals.load(FIXTURE)[0]
    steps = run.train_steps.tolist()[::40]
    derived = rlvitals.analyze_rollouts(rollout_rows(steps)).series().join(gappy(steps), on="step")
    keys = [c for c in derived.columns if c != "step"]
    return plan_export(diagnose(run.with_series(derived)), derived=keys, metrics=["actor/entropy"])


@pytest.fixture(scope="module")
def exported(plan: ExportPlan, root: Path) -> WandbExport:
    done = write_wandb(plan, directory=root / "new", project="rlvitals-test")
    wandb.teardown()  # finish() returns before wandb's service has flushed the run file; teardown waits
    return done


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def _records(run_dir: Path) -> list[object]:
    """Every record of the run's .wandb file, parsed with wandb's own protobuf classes."""
    from wandb.proto import wandb_internal_pb2 as pb

    (path,) = run_dir.glob("*.wandb")
    out = []
    for _, payload in frames(path, SourceMeta(format="wandb-offline"), SkipLog(), MAGIC, Words("", "")):
        record = pb.Record()
        record.ParseFromString(payload)
        out.append(record)
    return out


def test_a_new_offline_run_reads_back_at_the_training_steps(plan: ExportPlan, exported: WandbExport) -> None:
    assert exported.run_dir.name.startswith("offline-run-") and exported.run_dir.name.endswith(exported.run_id)
    assert exported.rows == len(plan.steps)
    (back,) = rlvitals.load(exported.run_dir)
    raw = back.raw
    for series in plan.series:
        got = raw.select("step", series.tag).drop_nulls()
        assert got["step"].to_list() == series.steps.tolist(), series.tag
        assert same(got[series.tag].to_numpy(), series.values), series.tag
    maj = raw.select("step", "rlvitals/maj@64").drop_nulls()["rlvitals/maj@64"].to_numpy()
    assert np.isnan(maj[::3]).all() and np.isfinite(maj[1::3]).all()  # a NaN logged is a NaN read
    assert raw[STEP_KEY].to_list() == raw["step"].cast(float).to_list()
    for f in plan.findings:
        assert raw.filter(raw["step"] == f.step)[f.tag].item() == STATUS[f.status], f.tag
    assert back.summary[VERDICT_KEY] == plan.verdict
    assert back.skipped.count == 0


def test_nan_and_inf_are_logged_and_read_back(root: Path) -> None:
    values = np.array([0.5, np.nan, np.inf, -np.inf, 1e300, 0.1])
    steps = np.array([3, 5, 8, 13, 21, 34])
    plan = ExportPlan("x.log", "en", "ok", 34, (Series("rlvitals/x", "x", "logged", steps, values),), ())
    done = write_wandb(plan, directory=root / "nan")
    wandb.teardown()
    (back,) = rlvitals.load(done.run_dir)
    got = back.raw.select("step", "rlvitals/x").drop_nulls()
    assert got["step"].to_list() == steps.tolist()
    assert same(got["rlvitals/x"].to_numpy(), values)  # doubles: exact, 0.1 included


def _wandb_records(run_dir: Path) -> list[dict[str, Any]]:
    """Every record of the run's .wandb file as wandb's own reader prints it (one JSON per line)."""
    done = subprocess.run([sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(run_dir)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _double(value: Any) -> float:
    return float(value)  # wandb-core prints NaN and the infinities as the strings "NaN", "Infinity"


@pytest.mark.process
def test_wandb_itself_reads_the_export_back(plan: ExportPlan, exported: WandbExport) -> None:
    records = _wandb_records(exported.run_dir)
    history = [r["history"]["item"] for r in records if r["type"] == "history"]
    assert len(history) == len(plan.steps)
    assert [int(h["_step"]) for h in history] == list(plan.steps)
    by_step = {int(h["_step"]): h for h in history}
    for series in plan.series:
        got = [(step, _double(h[series.tag])) for step, h in sorted(by_step.items()) if series.tag in h]
        assert [step for step, _ in got] == series.steps.tolist(), series.tag
        assert same(np.array([v for _, v in got]), series.values), series.tag
    for f in plan.findings:
        assert _double(by_step[f.step][f.tag]) == STATUS[f.status], f.tag
    assert all(_double(h[STEP_KEY]) == step for step, h in by_step.items())
    summary: dict[str, Any] = {}
    for r in records:
        if r["type"] == "summary":
            summary.update(r["summary"].get("update", {}))
    assert summary[VERDICT_KEY] == plan.verdict
    metrics = [r["metric"] for r in records if r["type"] == "metric"]
    assert any(m.get("glob_name") == "rlvitals/*" and m.get("step_metric") == STEP_KEY for m in metrics)


def test_define_metric_puts_the_series_on_the_training_step(exported: WandbExport) -> None:
    metrics = [r.metric for r in _records(exported.run_dir) if r.WhichOneof("record_type") == "metric"]
    assert any(m.glob_name == "rlvitals/*" and m.step_metric == STEP_KEY for m in metrics)


def test_findings_table(plan: ExportPlan, exported: WandbExport) -> None:
    (path,) = (exported.run_dir / "files" / "media" / "table").rglob("findings*.table.json")
    table = json.loads(path.read_text())
    assert table["columns"] == TABLE_COLUMNS
    assert table["data"] == findings_table(plan)
    warn = next(row for row in table["data"] if row[3] == "warn")
    finding = next(f for f in plan.findings if f.name == warn[1])
    assert warn[9] == finding.message and finding.message and warn[6] == list(finding.points)
    assert len(table["data"]) == len(plan.findings) > 10


def test_resume_into_the_users_run(plan: ExportPlan, root: Path) -> None:
    user = wandb.init(mode="offline", dir=str(root / "resume"), project="rlvitals-test", id="userrun7")
    for step in range(1, 30):
        user.log({"actor/entropy": 1.0 / step}, step=step)
    user.finish()
    done = write_wandb(plan, directory=root / "resume", project="rlvitals-test", run_id="userrun7")
    wandb.teardown()
    assert done.run_id == "userrun7"
    folders = sorted(p.name for p in (root / "resume" / "wandb").glob("offline-run-*"))
    # a second folder for the same id (wandb adds "-1" when both start in the same second)
    assert len(folders) == 2 and all("-userrun7" in f for f in folders) and done.run_dir.name in folders
    (back,) = rlvitals.load(done.run_dir)
    raw = back.raw
    # offline, a resumed run's _step counts this export's log calls; rlvitals/step holds the training step
    assert raw["step"].to_list() == list(range(len(plan.steps)))
    assert raw[STEP_KEY].to_list() == [float(s) for s in plan.steps]
    for series in plan.series:
        got = raw.select(STEP_KEY, series.tag).drop_nulls()
        assert got[STEP_KEY].to_list() == series.steps.astype(float).tolist(), series.tag
        assert same(got[series.tag].to_numpy(), series.values), series.tag


def test_cli_export_wandb_in_chinese(root: Path, tmp_path: Path) -> None:
    rollouts = tmp_path / "rollouts.jsonl"
    run = rlvitals.load(FIXTURE)[0]
    rollouts.write_text("\n".join(json.dumps(r) for r in rollout_rows(run.train_steps.tolist()[::40])) + "\n")
    expected = diagnose(run.with_series(rlvitals.analyze_rollouts(str(rollouts)).series()))
    out, err = _Out(), _Out()
    code = main(["export", str(FIXTURE), "--wandb", "--wandb-dir", str(tmp_path / "w"), "--wandb-project", "t",
                 "--rollouts", str(rollouts), "--lang", "zh"], out, err)  # type: ignore[arg-type]
    wandb.teardown()  # what the end of the rlvitals process does
    assert code == 0, err.text
    assert "离线" in out.text and f"结论为{STATUS_WORDS['zh'][expected.verdict]}" in out.text
    (run_dir,) = (tmp_path / "w" / "wandb").glob("offline-run-*")
    (path,) = run_dir.rglob("findings*.table.json")
    data = json.loads(path.read_text())["data"]
    assert [row[9] for row in data] == [f.message["zh"] for f in expected.findings if f.status != "skipped"]
    (back,) = rlvitals.load(run_dir)
    assert "rlvitals/pass@4" in back.raw.columns and back.summary[VERDICT_KEY] == expected.verdict


# --- errors -----------------------------------------------------------------------------------

class _Out:
    def __init__(self) -> None:
        self.text = ""

    def write(self, s: str) -> int:
        self.text += s
        return len(s)

    def isatty(self) -> bool:
        return False


def test_without_wandb(plan: ExportPlan, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)  # what `import wandb` does when it is not installed
    with pytest.raises(RlvitalsError, match=r"--wandb needs the wandb client.*pip install 'rlvitals\[export\]'"):
        write_wandb(plan, directory=tmp_path)
    out, err = _Out(), _Out()
    assert main(["export", str(FIXTURE), "--wandb", "--wandb-dir", str(tmp_path)], out, err) == 2  # type: ignore[arg-type]
    assert "pip install 'rlvitals[export]'" in err.text


def test_wandb_dir_is_a_file(plan: ExportPlan, tmp_path: Path) -> None:
    target = tmp_path / "runs.txt"
    target.write_text("x")
    with pytest.raises(RlvitalsError, match=r"--wandb-dir .*runs\.txt: is a file, expected a folder"):
        write_wandb(plan, directory=target)


def test_cli_run_id_with_several_runs(tmp_path: Path) -> None:
    out, err = _Out(), _Out()
    code = main(["export", str(FIXTURE), str(FIXTURE), "--wandb", "--wandb-dir", str(tmp_path),
                 "--wandb-run-id", "abc"], out, err)  # type: ignore[arg-type]
    assert code == 2
    assert "--wandb-run-id 'abc' names one W&B run, but 2 runs were given" in err.text
    assert not (tmp_path / "wandb").exists()
