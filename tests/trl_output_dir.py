"""The real TRL output_dir of ``tests/fixtures/trl-output-dir-trackers`` (a GRPO run on the CPU reporting to
TensorBoard, W&B offline, MLflow and Trackio) as it stood at other moments of its training: before its first
checkpoint, at a checkpoint behind the trackers, with a tracker's store edited."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "trl-output-dir-trackers"


def before_checkpoint(out: Path) -> Path:
    """The output_dir as it was before its first checkpoint: ``checkpoint-*/`` (its only trainer_state.json) left
    out."""
    shutil.copytree(FIXTURE, out, ignore=shutil.ignore_patterns("checkpoint-*"))
    return out


def last_checkpoint(out: Path) -> None:
    """The trainer's last checkpoint written into ``out``: it holds every step."""
    shutil.copytree(FIXTURE / "checkpoint-8", out / "checkpoint-8")


def at_checkpoint(out: Path, step: int) -> None:
    """``checkpoint-<step>/trainer_state.json`` as the trainer writes it there: the real checkpoint-8's with its
    history cut to the steps up to ``step``."""
    state = json.loads((FIXTURE / "checkpoint-8" / "trainer_state.json").read_text(encoding="utf-8"))
    state["log_history"] = [entry for entry in state["log_history"] if entry.get("step", 0) <= step]
    state["global_step"] = step
    (out / f"checkpoint-{step}").mkdir()
    (out / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps(state), encoding="utf-8")


def sql(db: Path, statement: str) -> None:
    """Run ``statement`` on the SQLite store ``db`` (MLflow's, Trackio's) and commit it."""
    con = sqlite3.connect(db)
    try:
        with con:
            con.execute(statement)
    finally:
        con.close()
