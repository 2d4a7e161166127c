"""Stopping a run that went bad: ``Monitor(stop_on=...)`` and the TRL callback asking a REAL
``transformers.Trainer`` to save and stop, and the stop flag agreed by two real processes (gloo)."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import pytest
from optional import require

from rlvitals.watch.monitor import Monitor, MonitorError

NEEDED = ("torch", "transformers", "accelerate")


def _needs_torch() -> None:
    require(NEEDED, "the Trainer stop test", "pip install 'rlvitals[trl]'")


def _feed(mon: Monitor, nan_from: int | None, steps: int = 8) -> None:
    for step in range(1, steps + 1):
        bad = nan_from is not None and step >= nan_from
        mon.log(step, {"loss": math.nan if bad else 0.5 - step / 100, "grad_norm": 1.0, "learning_rate": 1e-3})
    assert mon.flush()


def test_a_failing_verdict_asks_to_stop_and_says_why() -> None:
    err = io.StringIO()
    mon = Monitor(framework="trl", every=1, min_interval=0, stop_on="fail", err=err)
    _feed(mon, nan_from=4)
    assert mon.should_stop()
    assert mon.stop_reason() == "verdict fail at step 8 (stop_on=fail): NaN or Inf in the logs (since step 4)"
    mon.close()
    lines = err.getvalue().splitlines()
    assert lines[0].startswith("rlvitals: FAIL nan_inf since step 4, seen at step ")  # the alert, then the stop
    assert lines[1].startswith("rlvitals: stop requested: verdict fail at step ")
    assert len([line for line in lines if "stop requested" in line]) == 1  # said once, however long it stays


@pytest.mark.parametrize(("stop_on", "nan_from"), [(None, 4), ("fail", None), ("warn", None)])
def test_no_stop_without_stop_on_or_on_a_healthy_run(stop_on: str | None, nan_from: int | None) -> None:
    mon = Monitor(framework="trl", every=1, min_interval=0, stop_on=stop_on, err=None)
    _feed(mon, nan_from)
    assert not mon.should_stop() and mon.stop_reason() is None
    mon.close()


def test_stop_on_must_name_a_status() -> None:
    with pytest.raises(MonitorError) as exc:
        Monitor(stop_on="error", err=None)
    assert str(exc.value) == "Monitor(stop_on='error'): expected 'warn', 'fail' or None"


@pytest.mark.trl
def test_a_real_trainer_saves_and_stops_when_the_loss_turns_nan(tmp_path: Path) -> None:
    """transformers' own training loop: the loss turns NaN at step 4; the callback (attached first)
    feeds the Monitor at each log and, once its verdict fails, sets ``should_training_stop`` and
    ``should_save``: the Trainer writes a checkpoint and ends long before ``max_steps``."""
    _needs_torch()
    import torch
    from transformers import Trainer, TrainingArguments

    from rlvitals.integrations.trl import attach

    torch.manual_seed(0)
    torch.set_num_threads(1)

    class Regression(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(4, 1)
            self.calls = 0

        def forward(self, x: Any, labels: Any) -> dict[str, Any]:
            self.calls += 1
            loss = torch.nn.functional.mse_loss(self.linear(x).squeeze(-1), labels)
            return {"loss": loss * math.nan if self.calls >= 4 else loss}

    class Data(torch.utils.data.Dataset):  # type: ignore[type-arg]
        def __len__(self) -> int:
            return 4096

        def __getitem__(self, i: int) -> dict[str, Any]:
            x = torch.full((4,), float(i % 7) / 7)
            return {"x": x, "labels": x.sum()}

    max_steps = 1000
    args = TrainingArguments(output_dir=str(tmp_path), max_steps=max_steps, per_device_train_batch_size=4,
                             logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, disable_tqdm=True,
                             logging_nan_inf_filter=False, dataloader_num_workers=0, seed=0)
    trainer = Trainer(model=Regression(), args=args, train_dataset=Data())
    err = io.StringIO()
    cb = attach(trainer, every=1, min_interval=0, stop_on="fail", err=err)
    trainer.train()
    print(f"\nstopped at step {cb.stopped_at} of {max_steps} (the loss turned NaN at step 4)")
    assert cb.stopped_at is not None and 4 <= cb.stopped_at < max_steps
    assert trainer.state.global_step == cb.stopped_at  # it stopped at the step it asked to
    assert (tmp_path / f"checkpoint-{cb.stopped_at}").is_dir()
    said = err.getvalue()
    assert f"rlvitals: stopping the training at step {cb.stopped_at}, after saving a checkpoint (verdict fail " \
           in said and "NaN or Inf in the logs (since step 4)" in said


def _rank(rank: int, folder: str, result: str) -> None:
    import torch.distributed as dist

    from rlvitals.integrations.trl import _any_rank

    dist.init_process_group("gloo", init_method=f"file://{folder}/rendezvous", rank=rank, world_size=2)
    try:
        seen = [_any_rank(rank == 0, None), _any_rank(False, None)]  # only rank 0's Monitor saw the logs
        Path(result, f"{rank}.txt").write_text(repr(seen))
    finally:
        dist.destroy_process_group()


@pytest.mark.trl
def test_every_rank_stops_when_rank_zero_asks(tmp_path: Path) -> None:
    """Two real processes in a gloo group: rank 1's Monitor sees no logs, yet both agree to stop."""
    _needs_torch()
    import torch.multiprocessing as mp

    mp.spawn(_rank, args=(str(tmp_path), str(tmp_path)), nprocs=2, join=True)
    assert [(tmp_path / f"{r}.txt").read_text() for r in (0, 1)] == ["[True, False]"] * 2
