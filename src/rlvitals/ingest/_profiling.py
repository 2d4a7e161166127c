"""TRL's profiling rows at step 0: a step the trainer never took.

TRL times its own calls (``profiling/Time taken: GRPOTrainer.compute_loss`` …) and logs each timing to W&B,
MLflow and Trackio as it happens, at the trainer's ``global_step`` of that moment: while the first step
runs that is 0, before any optimizer step. The Trainer's own logs (``trainer_state.json``, the console,
TensorBoard) start at step 1. A row at step 0 that holds nothing but such timings is no training step:
its reader leaves it out and says how many it left (:class:`StepZero`), so the tracker's copy holds the
trainer's steps.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..words import Words
from .record import SourceMeta

#: the prefix of TRL's profiling keys (``trl.extras.profiling``)
PROFILING = "profiling/"


def profiling_only(step: int, keys: Iterable[str]) -> bool:
    """Whether a row at ``step`` with ``keys`` is TRL's profiling before its first step.

    Example:
        >>> profiling_only(0, ["profiling/Time taken: GRPOTrainer.compute_loss"]), profiling_only(1, ["profiling/x"])
        (True, False)
        >>> profiling_only(0, ["profiling/x", "train/loss"]), profiling_only(0, [])
        (False, False)
    """
    keys = list(keys)
    return step == 0 and bool(keys) and all(k.startswith(PROFILING) for k in keys)


class StepZero:
    """Counts the values of the step-0 profiling rows a reader left out, and says so once in ``meta``'s notes."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.count = 0

    def drops(self, step: int, keys: Iterable[str]) -> bool:
        """Whether to leave out a row at ``step`` with ``keys`` (its values counted when so)."""
        keys = list(keys)
        if profiling_only(step, keys):
            self.count += len(keys)
            return True
        return False

    def note(self, meta: SourceMeta) -> None:
        """The note on the rows left out, when there were any.

        Example:
            >>> meta = SourceMeta(format="mlflow"); zero = StepZero("mlflow.db#abc")
            >>> zero.drops(0, ["profiling/Time taken: GRPOTrainer.compute_loss"])
            True
            >>> zero.note(meta); print(meta.notes[0].split(" (")[0])
            mlflow.db#abc: 1 value at step 0 was TRL's profiling timing alone
        """
        if not self.count:
            return
        n = self.count
        said = "1 value at step 0 was TRL's profiling timing alone" if n == 1 else \
            f"{n} values at step 0 were TRL's profiling timings alone"
        meta.notes.append(Words(
            f"{self.where}: {said} (logged while the first step ran, before the trainer's step 1) and "
            f"{'was' if n == 1 else 'were'} left out: the trainer took no step 0",
            f"{self.where}：第 0 步的 {n} 个值只是 TRL 的性能剖析计时（在第一步计算时记录，早于训练器的第 1 步），"
            "已略去：训练器并没有第 0 步"))
