"""TRL: a ``TrainerCallback`` that feeds a :class:`~rlvitals.watch.monitor.Monitor` from inside the Trainer.

What it does at each ``on_log`` (rank 0 only): the logged metrics go to the Monitor at
``state.global_step``; for a training log of a ``GRPOTrainer`` the step's completions go to
``Monitor.log_rollouts``; the rollout metrics of that step come back as ``rlvitals/<key>`` and
are added to ``logs``, so every ``report_to`` backend (TensorBoard, W&B, MLflow...) writes them
beside TRL's own metrics (TensorBoard and W&B show them as ``train/rlvitals/...``).

Two facts of transformers 5 / TRL 1.16 shape this:

* ``CallbackHandler`` calls callbacks in list order and passes every one the same ``logs``
  dict, and the reporters are added before any user callback. Keys added by a callback
  therefore reach the loggers only if it runs *before* them: :func:`attach` (or
  :meth:`RlvitalsCallback.attach`) puts it first. Passed as ``callbacks=[...]`` it still
  monitors, but cannot write back (it says so once).
* ``GRPOTrainer.log`` calls ``Trainer.log`` (and so ``on_log``) *before* it writes
  ``completions/completions_{step:05d}.parquet``. The step's completions are read from the
  trainer's own buffer of the last generation batch (prompts, completions, one reward list per
  reward function, advantages: what that file will hold), which needs the trainer, so
  :func:`attach`. Without it, with ``log_completions=True``, the file is queued at the next
  step's start (read by the Monitor's thread): findings still use it, write-back cannot.

The score of a completion is TRL's: the ``reward_weights``-weighted sum of the reward functions,
NaN rewards ignored (``nansum``).

>>> trainer = GRPOTrainer(model=..., args=GRPOConfig(report_to=["tensorboard"]), ...)  # doctest: +SKIP
>>> cb = attach(trainer, sinks=["jsonl:alerts.jsonl"])                                 # doctest: +SKIP
>>> trainer.train(); [f.check for f in cb.monitor.findings() if f.status == "fail"]    # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl
from transformers import TrainerCallback

from ..watch.monitor import Monitor

__all__ = ["RlvitalsCallback", "attach", "completion_records"]

#: keys of the summary ``Trainer.train`` logs once at the end; it is not a training step
_SUMMARY = ("train_runtime", "train_samples_per_second", "train_steps_per_second")


def completion_records(buffer: Mapping[str, Any], weights: Sequence[float] | None = None) -> list[dict[str, Any]]:
    """One record per completion from a GRPOTrainer's ``_logs`` buffer: ``prompt`` (text or chat),
    ``response``, ``score`` (weighted ``nansum`` of the reward functions) and ``advantage``.

    Example:
        >>> buf = {"prompt": ["1+1?", "1+1?"], "completion": ["2", "3"],
        ...        "rewards": {"acc": [1.0, 0.0]}, "advantages": [0.7, -0.7]}
        >>> [(r["response"], r["score"]) for r in completion_records(buf)]
        [('2', 1.0), ('3', 0.0)]
    """
    prompts, completions = list(buffer["prompt"]), list(buffer["completion"])
    rewards = [list(v) for v in buffer["rewards"].values()]
    advantages = list(buffer.get("advantages", []))
    w = list(weights) if weights is not None else [1.0] * len(rewards)
    out = []
    for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
        parts = [wi * float(r[i]) for wi, r in zip(w, rewards, strict=True) if not _missing(r[i])]
        rec: dict[str, Any] = {"prompt": prompt, "response": completion,
                               "score": math.fsum(parts) if parts else math.nan}
        if i < len(advantages):
            rec["advantage"] = float(advantages[i])
        out.append(rec)
    return out


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


class RlvitalsCallback(TrainerCallback):
    """Feeds the Trainer's logs and GRPO completions to a Monitor, writes ``rlvitals/...`` back.

    ``monitor``: your own :class:`Monitor` (flushed, not closed, at the end of training), else
    one is made with ``monitor_kwargs`` (and closed at the end). The step's rollout metrics are
    computed in ``on_log`` itself (:meth:`Monitor.derive`: milliseconds for one step's
    completions), so it never waits for the Monitor's thread, which may be in the middle of a
    diagnosis (tens to hundreds of milliseconds on a long run).

    Example:
        >>> cb = RlvitalsCallback(err=None)
        >>> cb.monitor.close(); cb.logged_steps
        []
    """

    def __init__(self, monitor: Monitor | None = None, *, save_on_stop: bool = True, **monitor_kwargs: Any) -> None:
        self.own_monitor = monitor is None
        self.monitor = monitor if monitor is not None else Monitor(framework="trl", **monitor_kwargs)
        self.save_on_stop = save_on_stop
        self.stopped_at: int | None = None  # the step at which it asked the Trainer to stop
        self.trainer: Any = None
        self.logged_steps: list[int] = []
        self.written: dict[int, list[str]] = {}
        self._pending_file: tuple[int, Path] | None = None
        self._told = False

    def attach(self, trainer: Any) -> RlvitalsCallback:
        """Put this callback first among ``trainer``'s callbacks (before the reporters) and let it
        read the trainer's completion buffer."""
        callbacks = trainer.callback_handler.callbacks
        if self in callbacks:
            callbacks.remove(self)
        callbacks.insert(0, self)
        self.trainer = trainer
        return self

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
               **kwargs: Any) -> None:
        if logs is None or not state.is_world_process_zero or any(k in logs for k in _SUMMARY):
            return
        try:
            step = int(state.global_step)
            self.monitor.log(step, logs)
            self.logged_steps.append(step)
            if not any(k.startswith("eval_") for k in logs):  # eval completions are no training rollouts
                self._rollouts(args, step, logs)
        except Exception as exc:  # noqa: BLE001 (the Trainer must go on whatever happens here)
            self.monitor.report_error(f"TRL callback at step {state.global_step}: {type(exc).__name__}: {exc}",
                                      kind=f"callback {type(exc).__name__}")

    def _rollouts(self, args: Any, step: int, logs: dict[str, Any]) -> None:
        buffer = getattr(self.trainer, "_logs", None)
        if isinstance(buffer, Mapping) and buffer.get("completion"):
            weights = getattr(self.trainer, "reward_weights", None)
            w = [float(x) for x in weights.tolist()] if weights is not None else None
            # a frame, so chat prompts and completions become List(Struct) columns and are read as chats,
            # exactly as the completion file TRL is about to write
            derived = self.monitor.derive(step, pl.DataFrame(completion_records(buffer, w)))
            logs.update(derived)
            self.written[step] = sorted(derived)
            return
        if getattr(args, "log_completions", False):
            self._pending_file = (step, Path(args.output_dir) / "completions" / f"completions_{step:05d}.parquet")
        if not self._told:
            self._told = True
            self.monitor.report_error("the callback was not attached with rlvitals.integrations.trl.attach("
                                      "trainer): rlvitals/... metrics are not written to the trainer's loggers"
                                      + ("" if getattr(args, "log_completions", False)
                                         else ", and without log_completions=True no completions are read"),
                                      kind="not attached")

    def _read_pending(self) -> None:
        if self._pending_file is not None:
            step, path = self._pending_file
            self._pending_file = None
            if path.is_file():
                self.monitor.log_rollouts(step, path)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._read_pending()  # the previous step's completions file is complete by now

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Ask the Trainer to stop (after saving a checkpoint, unless ``save_on_stop=False``) once the
        Monitor's verdict reached its ``stop_on``."""
        if self.stopped_at is not None or self.monitor.stop_on is None or not _any_rank(self.monitor.should_stop(),
                                                                                    args):
            return
        self.stopped_at = int(state.global_step)
        control.should_training_stop = True
        if self.save_on_stop:
            control.should_save = True
        if state.is_world_process_zero:
            self.monitor.say(f"rlvitals: stopping the training at step {self.stopped_at}"
                             + (", after saving a checkpoint" if self.save_on_stop else "")
                             + f" ({self.monitor.stop_reason()})")

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._read_pending()
        if self.own_monitor:
            self.monitor.close()
        else:
            self.monitor.flush()


def _any_rank(flag: bool, args: Any) -> bool:
    """``flag`` of any process of a distributed run: only rank 0's Monitor sees the logs, and every rank
    must stop at the same step (a rank left in a collective would wait for ever)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return flag
    import torch

    device = getattr(args, "device", None) if dist.get_backend() == "nccl" else "cpu"
    value = torch.tensor([1 if flag else 0], device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item())


def attach(trainer: Any, monitor: Monitor | None = None, **kwargs: Any) -> RlvitalsCallback:
    """A :class:`RlvitalsCallback` placed first among ``trainer``'s callbacks; ``kwargs`` go to the
    Monitor it makes (``sinks``, ``every``, ``state_path``...)."""
    return RlvitalsCallback(monitor, **kwargs).attach(trainer)
