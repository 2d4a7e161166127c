"""``rlvitals watch`` on a trainer's ``output_dir`` from its start: before the first checkpoint the folder holds the
console ``train.log`` and the trackers' copies (``runs/``, ``wandb/``, ``mlflow.db``, ``trackio/``) and no
``trainer_state.json``; no reader takes it whole, yet it is one training, read as ``rlvitals diagnose`` reads it.
It is watched as one run under the folder's path from the first look, and stays that run (its alerts' keys
unchanged) through its checkpoints, a checkpoint's state behind the trackers included. The folder is the real TRL
run of ``tests/fixtures/trl-output-dir-trackers``, its ``checkpoint-8/`` taken out and put back."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

from trl_output_dir import FIXTURE, at_checkpoint, before_checkpoint

from rlvitals.cli import main
from rlvitals.run import Follow, copies_note, load
from rlvitals.watch.state import WatchState
from rlvitals.watch.view import PlainView
from rlvitals.watch.watcher import Watcher


def _watched(w: Watcher, now: list[float]) -> list[tuple[str, str, int]]:
    now[0] += 60.0
    w.cycle(force=True)
    return [(path, d.run.format, int(d.run.train_steps.max())) for path, d in w.full.items()]


def test_watch_follows_an_output_dir_before_its_first_checkpoint_as_one_run(tmp_path: Path) -> None:
    out = before_checkpoint(tmp_path / "out")
    now = [1_000_000.0]
    w = Watcher([out], WatchState(tmp_path / "w.sqlite"), [], view=PlainView(io.StringIO(), io.StringIO()),
                clock=lambda: now[0], timer=lambda: 0.0)
    try:
        # the MLflow copy is kept (full precision, the first of the trackers), the others named as its twins
        assert _watched(w, now) == [(str(out), "mlflow", 8)]
        [merged] = load(out)  # what diagnose reads: the same run, its note on the copies
        assert copies_note(merged) in w.full[str(out)].run.notes
        assert w.follows[0].training and not w.follows[0].waiting
        at_checkpoint(out, 5)  # the first checkpoint: its state stops at step 5, the trackers went on to 8
        assert _watched(w, now) == [(str(out), "mlflow", 8)]
        assert any(str(n).startswith(f"{out}: trl-state (to step 5) agrees with mlflow.db#")
                   for n in w.full[str(out)].run.notes)
        shutil.copytree(FIXTURE / "checkpoint-8", out / "checkpoint-8")  # the last checkpoint holds every step
        assert _watched(w, now) == [(str(out), "trl-state", 8)]
    finally:
        w.close()


def test_a_checkpointed_output_dir_whose_state_lags_is_one_run_from_the_first_look(tmp_path: Path) -> None:
    """Opened after a checkpoint (a reader takes the folder whole), the state behind the trackers is still read with
    them: the run is the folder's, from the copy that reaches furthest."""
    out = before_checkpoint(tmp_path / "out")
    at_checkpoint(out, 5)
    follow = Follow(out, None, 0.0)
    assert follow.poll(0.0)
    assert [(r.path, r.format, int(r.train_steps.max())) for r in follow.runs()] == [(str(out), "mlflow", 8)]
    assert [int(r.train_steps.max()) for r in follow.runs(last=3)] == [8]


def test_a_folder_of_one_log_is_waited_for_not_taken_as_a_training(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    shutil.copyfile(FIXTURE / "train.log", out / "train.log")  # the console alone: no copies to read with it
    (out / "README.md").write_text("notes\n", encoding="utf-8")
    follow = Follow(out, None, 0.0)
    assert not follow.poll(0.0) and not follow.training
    assert "not a training log rlvitals can read" in follow.waiting


def test_watch_once_reads_an_output_dir_before_its_first_checkpoint(tmp_path: Path) -> None:
    out = before_checkpoint(tmp_path / "out")
    sink = tmp_path / "alerts.jsonl"
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["watch", str(out), "--once", "--alert", f"jsonl:{sink}", "--state", str(tmp_path / "w.sqlite")],
                out=stdout, err=stderr)
    assert code == 0, stderr.getvalue()
    assert "not a training log" not in stderr.getvalue()
