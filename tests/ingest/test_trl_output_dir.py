"""A TRL ``output_dir`` written by a real training that reported to every tracker at once
(``tests/fixtures/trl-output-dir-trackers``, made by ``scripts/captures/trl_cpu_runs.py --only grpo-trackers``:
trainer_state.json, train.log, completions/, TensorBoard's runs/, a W&B offline run, an MLflow SQLite store and
a Trackio database) is one training: read as one run that names the trackers' copies; a copy that holds other
values or other steps stays a run of its own; the step 0 that W&B and MLflow hold (TRL's profiling timings,
logged before the first step) is no training step."""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from trl_output_dir import FIXTURE, sql

from rlvitals.run import load
from rlvitals.run.twins import copies_note, merge, twins
from rlvitals.words import in_lang

STEPS = list(range(1, 9))
WANDB = "wandb/offline-run-20261207_130829-vdas9cxw"
MLFLOW = "mlflow.db#63e1dc19e2bc4cfcb4951286df402b1c"
TENSORBOARD = "runs/Dec07_13-08-29_vm"
TRACKIO = "trackio/rlvitals-trackers.db#grpo-trackers"
#: each tracker's copy (and the console), as load() reads it alone
COPIES = {"train.log": "trl-console", "runs": "tensorboard", "wandb": "wandb-offline", "mlflow.db": "mlflow",
          "trackio": "trackio"}


@pytest.fixture(scope="module")
def trainer() -> object:
    [run] = load(FIXTURE / "checkpoint-8" / "trainer_state.json")
    return run


def test_the_fixture_is_a_whole_output_dir_with_every_tracker() -> None:
    names = {p.relative_to(FIXTURE).as_posix() for p in FIXTURE.rglob("*") if p.is_file()}
    assert {"checkpoint-8/trainer_state.json", "train.log", "mlflow.db", "trackio/rlvitals-trackers.db",
            "completions/completions_00008.parquet", "SOURCE.md"} <= names
    assert any(n.startswith(f"{TENSORBOARD}/events.out.tfevents.") for n in names)
    assert any(n.startswith(f"{WANDB}/run-") and n.endswith(".wandb") for n in names)
    assert not any(n.endswith((".safetensors", ".bin", ".pt")) for n in names)  # the weights were deleted


def test_the_output_dir_is_one_run_that_names_its_copies() -> None:
    [run] = load(FIXTURE)
    assert run.format == "trl-state" and run.path == str(FIXTURE)
    assert run.train_steps.tolist() == STEPS
    note = copies_note(run)
    # the trackers' copies (full precision) before the console (values rounded to a few digits)
    assert note == (f"{FIXTURE}: also logged to TensorBoard ({TENSORBOARD}), Trackio ({TRACKIO}), W&B ({WANDB}), "
                    f"MLflow ({MLFLOW}), the console (train.log): the same steps and values, so one run, read "
                    "from its trl-state log")
    assert in_lang(note, "zh") == (f"{FIXTURE}：同一训练也记录在 TensorBoard（{TENSORBOARD}）、"
                                   f"Trackio（{TRACKIO}）、W&B（{WANDB}）、MLflow（{MLFLOW}）、控制台（train.log）：步数和数值都相同，"
                                   "是同一个运行，只读取它的 trl-state 日志")


@pytest.mark.parametrize(("name", "fmt"), sorted(COPIES.items()))
def test_each_copy_is_the_trainers_twin(trainer: object, name: str, fmt: str) -> None:
    """Read alone, each copy holds the trainer's 8 steps and its values (a console's 4 digits, a tracker's
    float32 or float64): a twin of trainer_state.json's history."""
    [copy] = load(FIXTURE / name)
    assert copy.format == fmt and copy.train_steps.tolist() == STEPS
    assert twins(trainer, copy) and twins(copy, trainer)  # type: ignore[arg-type]
    loss = trainer.series("loss")[1]  # type: ignore[attr-defined]
    assert copy.series("loss")[1] == pytest.approx(loss, rel=1e-3)
    if fmt == "trl-console":  # its 4 significant digits: equal only within a tolerance
        assert not np.array_equal(copy.series("loss")[1], loss)


@pytest.mark.parametrize("name", ["wandb", "mlflow.db"])
def test_step_zero_of_trls_profiling_is_left_out_and_counted(name: str) -> None:
    """W&B and MLflow hold a step 0 the trainer never took: TRL's profiling timings, logged at global step 0
    while the first step ran. Left out, and said with their count."""
    [run] = load(FIXTURE / name)
    assert run.train_steps.tolist() == STEPS and 0 not in run.steps.tolist()
    [said] = [n for n in run.notes if "step 0" in n]
    assert said.endswith(": 7 values at step 0 were TRL's profiling timings alone (logged while the first step "
                         "ran, before the trainer's step 1) and were left out: the trainer took no step 0")
    assert in_lang(said, "zh").endswith("：第 0 步的 7 个值只是 TRL 的性能剖析计时（在第一步计算时记录，早于训练器的第 "
                                        "1 步），已略去：训练器并没有第 0 步")
    # the timings of the later steps stay
    assert any(k.startswith("profiling/") for k in run.raw.columns)


def test_the_mlflow_store_does_hold_those_step_zero_rows() -> None:
    """What the reader leaves out is in the store: 7 values at step 0, every one a profiling timing."""
    con = sqlite3.connect(f"file:{FIXTURE / 'mlflow.db'}?mode=ro", uri=True)
    try:
        keys = [k for (k,) in con.execute("SELECT key FROM metrics WHERE step = 0")]
    finally:
        con.close()
    assert len(keys) == 7 and all(k.startswith("profiling/Time taken: GRPOTrainer.") for k in keys)


def _copy(tmp_path: Path) -> Path:
    out = tmp_path / "output_dir"
    shutil.copytree(FIXTURE, out)
    return out


def test_a_copy_that_differs_stays_its_own_run(tmp_path: Path) -> None:
    """The MLflow store's values changed after the training: it is not the trainer's twin any more, so it is a
    run of its own, and the note names the other copies only."""
    out = _copy(tmp_path)
    sql(out / "mlflow.db", "UPDATE metrics SET value = value * 1.5 WHERE key = 'loss'")
    runs = load(out)
    assert [r.format for r in runs] == ["trl-state", "mlflow"]
    note = copies_note(runs[0])
    assert note is not None and "MLflow" not in note and f"W&B ({WANDB})" in note
    assert copies_note(runs[1]) is None and runs[1].path == str(out / MLFLOW)


def test_a_copy_that_stops_earlier_is_read_with_the_training(tmp_path: Path) -> None:
    """The MLflow store holds only steps 1-5 (a tracker that flushed less, or stopped): it agrees with the trainer's
    log on every step both hold, so it is the same training, named in a note with where it stops — not a second
    run (live, every copy stops at its own step: ``watch`` and ``serve`` read the folder as this does)."""
    out = _copy(tmp_path)
    sql(out / "mlflow.db", "DELETE FROM metrics WHERE step > 5")
    [run] = load(out)
    assert (run.format, run.path, int(run.train_steps.max())) == ("trl-state", str(out), 8)
    note = copies_note(run)
    assert note is not None and "MLflow" not in note and f"W&B ({WANDB})" in note
    assert any(str(n).startswith(f"{out}: {MLFLOW} (to step 5) agrees with trl-state on every step they share")
               for n in run.notes)


def test_a_copy_with_nothing_to_compare_is_no_twin(trainer: object) -> None:
    """Twins share values: a copy that shares no metric with the trainer's log is not one, whatever its steps
    (W&B's run cut down to TRL's profiling timings, which trainer_state.json does not hold)."""
    [wandb] = load(FIXTURE / "wandb")
    keep = ["step", *[c for c in wandb.frame.columns if c.startswith("timing_s/trl/")]]
    assert len(keep) > 1
    timings = replace(wandb, frame=wandb.frame.select(keep))
    assert timings.train_steps.tolist() == STEPS
    assert not twins(trainer, timings)  # type: ignore[arg-type]
    assert merge([trainer, timings]) == [trainer, timings]  # type: ignore[list-item]


def test_two_trainings_in_two_folders_are_never_compared(tmp_path: Path) -> None:
    """Copies are looked for in the kept run's own folder: the same training copied into two experiment
    folders is two runs, each with its own copies."""
    for name in ("exp1", "exp2"):
        shutil.copytree(FIXTURE, tmp_path / name)
    runs = load(tmp_path)
    assert [Path(r.path).name for r in runs] == ["exp1", "exp2"]
    assert all(copies_note(r) is not None for r in runs)
