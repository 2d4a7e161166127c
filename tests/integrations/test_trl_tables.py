"""A real ``GRPOTrainer`` logging its completions to W&B (offline) and Trackio (:mod:`trl_tables_run`, in a
process of its own): the rollouts read from each tracker's table are, row for row and value for value, those
read from the completion files TRL wrote in the same run, scored with the same reward weights."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from optional import require
from polars.testing import assert_frame_equal

import rlvitals
from integrations.test_trl import INSTALL, NEEDED
from rlvitals.rollout import read_rollouts

pytestmark = pytest.mark.trl
RUN = Path(__file__).with_name("trl_tables_run.py")
WEIGHTS = [1.0, 0.5]


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require((*NEEDED, "wandb", "trackio", "clearml", "aim"), "the TRL tracker-table test", INSTALL)
    folder = tmp_path_factory.mktemp("trl-tables")
    (folder / "home").mkdir()
    done = subprocess.run([sys.executable, str(RUN), str(folder)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


@pytest.mark.process
def test_the_trackers_tables_read_as_trls_completion_files(out: Path) -> None:
    files = read_rollouts(out / "grpo", reward_weights=WEIGHTS)
    assert files.format == "trl-completions"
    steps = sorted(set(files.table.get_column("step").to_list()))
    assert steps == [1, 2, 3] and files.table.height == 3 * 8
    [wandb_run] = sorted((out / "wandb").glob("offline-run-*"))
    for root, fmt in ((wandb_run, "wandb-table"), (out / "trackio" / "rlvitals.db", "trackio-table"),
                      (Path(f"{out / 'trackio' / 'rlvitals.db'}#grpo"), "trackio-table")):
        rs = read_rollouts(root, reward_weights=WEIGHTS)
        assert rs.format == fmt
        assert rs.table.columns == files.table.columns
        assert_frame_equal(rs.table, files.table)
        # TRL logs the last step's table again when training ends: read once, and said
        assert rs.notes == ["1 table(s) logged again at a step already logged: the last one of each step was "
                            "read", *files.notes]


@pytest.mark.process
def test_the_four_trackers_hold_the_same_metrics_under_the_same_names(out: Path) -> None:
    """transformers' W&B, Trackio and ClearML callbacks and Aim's own name TRL's metrics each their own way
    (``train/reward``; ``train/reward``; title ``train``, series ``reward``; ``reward`` with no context): all read to
    the same catalog metrics and values; the Trainer's end-of-training totals, which Aim's callback tracks as
    ``runtime``, ``loss``… under the subset ``train``, are the Aim run's summary under HF's names."""
    [wandb_run] = sorted((out / "wandb").glob("offline-run-*"))
    [session] = [p for p in (out / "clearml" / "offline").iterdir() if p.is_dir()]
    runs = {name: rlvitals.load(root)[0] for name, root in
            (("wandb", wandb_run), ("trackio", out / "trackio" / "rlvitals.db"), ("clearml", session),
             ("aim", out / "aim"))}
    assert {r.format for r in runs.values()} == {"wandb-offline", "trackio", "clearml", "aim"}
    assert {n: (r.framework, r.unmapped) for n, r in runs.items()} == {n: ("trl", []) for n in runs}
    wanted = ("critic/score/mean", "actor/entropy", "actor/grad_norm", "group/zero_std/share")
    for metric in wanted:
        steps, values = runs["wandb"].series(metric)
        assert steps.tolist() == [1, 2, 3], metric
        for name in ("trackio", "clearml", "aim"):
            got = runs[name].series(metric)
            assert got[0].tolist() == steps.tolist(), (name, metric)
            assert got[1] == pytest.approx(values, rel=1e-6), (name, metric)
    assert {"train_runtime", "train_loss", "total_flos"} <= set(runs["aim"].summary)
    assert runs["aim"].config["learning_rate"] == 1e-5 and runs["aim"].config["aim.experiment"] == "grpo"
