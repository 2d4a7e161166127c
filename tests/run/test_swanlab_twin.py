"""A TRL ``output_dir`` whose training SwanLab also logged (``tests/fixtures/trl-output-dir-swanlab``, made by
``scripts/captures/trl_cpu_runs.py --only grpo-swanlab``: a real GRPO run on the CPU, reporting through SwanLab's
own transformers callback, offline, into ``swanlog/``) is one training: ``diagnose`` gives one run, read from
trainer_state.json, with a note naming SwanLab's copy as its twin. The copy is the trainer's: its values are
trainer_state.json's, as rlvitals reads them and as SwanLab's own reader does; a copy cut short is no twin."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import orjson
import pytest

from rlvitals.cli import main
from rlvitals.run import load
from rlvitals.run.twins import copies_note, twins
from rlvitals.words import in_lang

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "trl-output-dir-swanlab"
SWANLAB = "swanlog/run-20261207_160722-39t69vxz"
SWANLAB_FILE = f"{SWANLAB}/run-39t69vxz.swanlab"
STEPS = list(range(1, 9))
#: trainer_state.json keys compared with SwanLab's (its callback logs them as ``train/<key>``)
KEYS = ("loss", "grad_norm", "reward", "reward_std", "kl", "entropy", "learning_rate", "completions/mean_length")
NOTE = (f"{FIXTURE}: also logged to SwanLab ({SWANLAB}), the console (train.log): the same steps and values, so one "
        "run, read from its trl-state log")
NOTE_ZH = (f"{FIXTURE}：同一训练也记录在 SwanLab（{SWANLAB}）、控制台（train.log）：步数和数值都相同，是同一个运行，"
           "只读取它的 trl-state 日志")


def _history() -> dict[str, dict[int, float]]:
    """trainer_state.json's log history, read as plain JSON: ``{key: {step: value}}``."""
    state = json.loads((FIXTURE / "checkpoint-8" / "trainer_state.json").read_text(encoding="utf-8"))
    out: dict[str, dict[int, float]] = {}
    for entry in state["log_history"]:
        for key, value in entry.items():
            out.setdefault(key, {})[entry["step"]] = value
    return out


def test_the_fixture_is_an_output_dir_with_swanlabs_copy() -> None:
    names = {p.relative_to(FIXTURE).as_posix() for p in FIXTURE.rglob("*") if p.is_file()}
    assert {"checkpoint-8/trainer_state.json", "train.log", "completions/completions_00008.parquet", "SOURCE.md",
            SWANLAB_FILE, f"{SWANLAB}/files/config.yaml"} <= names
    assert not any(n.endswith((".safetensors", ".bin", ".pt")) for n in names)  # the weights were deleted
    assert not any(n.endswith(".gitignore") for n in names)  # SwanLab's `*` would keep the folder out of git
    assert "swanlab: Tracking run with swanlab version 0.10.3" in (FIXTURE / "train.log").read_text(encoding="utf-8")


def test_diagnose_gives_one_run_and_names_the_swanlab_copy() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["diagnose", str(FIXTURE), "--json"], out=out, err=err) == 0
    [run] = orjson.loads(out.getvalue())["runs"]
    assert run["path"] == str(FIXTURE) and run["steps"] == len(STEPS)
    assert err.getvalue() == f"rlvitals: {NOTE}\n"


def test_the_output_dir_is_one_run_that_names_its_swanlab_twin() -> None:
    [run] = load(FIXTURE)
    assert run.format == "trl-state" and run.train_steps.tolist() == STEPS
    note = copies_note(run)
    assert note == NOTE and in_lang(note, "zh") == NOTE_ZH


def test_the_swanlab_copy_read_alone_is_a_finished_twin() -> None:
    [copy] = load(FIXTURE / "swanlog")
    [trainer] = load(FIXTURE / "checkpoint-8" / "trainer_state.json")
    assert copy.format == "swanlab" and copy.path == str(FIXTURE / SWANLAB)
    assert copy.train_steps.tolist() == STEPS
    assert not any("no finish record" in n for n in copy.notes)  # swanlab.finish() wrote it
    assert twins(trainer, copy) and twins(copy, trainer)


@pytest.mark.parametrize("key", KEYS)
def test_swanlabs_values_are_the_trainers(key: str) -> None:
    """Value for value at every step: trainer_state.json as plain JSON, SwanLab's copy as rlvitals reads it
    (its raw ``train/<key>``); both hold the trainer's Python floats as doubles, so they are equal, not close."""
    trainer = _history()[key]
    [copy] = load(FIXTURE / "swanlog")
    frame = copy.raw.select("step", f"train/{key}").drop_nulls()
    assert dict(zip(frame["step"].to_list(), frame[f"train/{key}"].to_list(), strict=True)) == trainer
    assert sorted(trainer) == STEPS and len(set(trainer.values())) > 1  # eight values, not one repeated


@pytest.mark.tracker
def test_swanlabs_own_reader_sees_the_trainers_values() -> None:
    """The same comparison through SwanLab's own reader and protobuf classes, without rlvitals' reader."""
    pytest.importorskip("swanlab")
    from swanlab.proto.swanlab.record.v1.record_pb2 import Record
    from swanlab.sdk.internal.core_python.store import DataStoreReader

    reader = DataStoreReader()
    reader.open(FIXTURE / SWANLAB_FILE)
    scalars: dict[tuple[str, int], float] = {}
    while (data := reader.scan()) is not None:
        record = Record()
        record.ParseFromString(data)
        if record.WhichOneof("record_type") == "scalar":
            scalars[(record.scalar.key, record.scalar.step)] = record.scalar.value.number
    reader.close()
    for key, values in _history().items():
        if key in KEYS:
            assert {s: scalars[(f"train/{key}", s)] for s in values} == values, key
    assert {scalars[("train/global_step", s)] for s in STEPS} == set(map(float, STEPS))


def test_a_swanlab_copy_cut_short_is_read_with_the_training(tmp_path: Path) -> None:
    """The copy's file cut to half (a SwanLab killed mid-run keeps its complete records only): it holds the first
    steps, with the training's values, so it is no twin (other steps) but the same training stopped early: one run,
    the kept run's twin note names the console only, and another note says where the SwanLab copy stops."""
    out = tmp_path / "output_dir"
    shutil.copytree(FIXTURE, out)
    file = out / SWANLAB_FILE
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])
    [alone] = load(out / SWANLAB)
    stops = int(alone.train_steps.max())
    assert 0 < len(alone.train_steps) < len(STEPS)
    [run] = load(out)
    assert (run.format, run.path, int(run.train_steps.max())) == ("trl-state", str(out), len(STEPS))
    assert copies_note(run) == (f"{out}: also logged to the console (train.log): the same steps and values, so "
                                "one run, read from its trl-state log")
    assert any(str(n).startswith(f"{out}: {SWANLAB} (to step {stops}) agrees with trl-state on every step they share")
               for n in run.notes)
