"""One training run watched through two files: its findings are alerted once, not once per file.

``rlvitals watch run.log run.jsonl`` (veRL's console and file loggers of one run), or a TRL
output folder whose checkpoints each hold a ``trainer_state.json`` of the same run, give the
watcher the same run twice, under two paths. The alert policy keys findings by path, so each
finding would be sent twice. :class:`Twins` finds such pairs by their content — the first
:data:`STEPS` steps they share agree, metric by metric, within float32 and printing precision,
which two different runs (another seed, another config) never do — and names the one seen
first (the first PATH given, in a folder the first found) the run's *primary*: only its findings
reach the alert policy, so its alerts were never sent under the other path before the pair was
found. The twin is still diagnosed and shown. A pair is decided once both hold :data:`STEPS`
common steps, and said once.

>>> twins = Twins()  # doctest: +SKIP
>>> twins.primary(run_b, [run_a, run_b])  # doctest: +SKIP
'/runs/a/run.jsonl'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..run.run import Run
from ..words import Words

__all__ = ["STEPS", "Twins", "same_run"]

#: how many shared steps must agree before two logs are taken for one run
STEPS = 10
#: relative agreement of two values of the same step and metric (float32 and printed decimals)
_RTOL = 1e-4
#: at least this many metrics must be compared (a sparse log proves nothing)
_METRICS = 3


def same_run(a: Run, b: Run, steps: int = STEPS) -> bool | None:
    """Whether ``a`` and ``b`` are the same training run: on the first ``steps`` steps they share,
    every metric both logged agrees. None while they share fewer steps (not decided yet).

    Example:
        >>> from rlvitals import load  # doctest: +SKIP
        >>> same_run(load("run.log")[0], load("run.jsonl")[0])  # doctest: +SKIP
        True
    """
    common = [c for c in a.frame.columns if c != "step" and c in b.frame.columns]
    joined = a.frame.select(["step", *common]).join(b.frame.select(["step", *common]), on="step",
                                                     suffix="\x00b").sort("step").head(steps)
    if joined.height < steps:
        return None
    compared = 0
    for col in common:
        x = joined[col].cast(float).to_numpy()
        y = joined[col + "\x00b"].cast(float).to_numpy()
        both = np.isfinite(x) & np.isfinite(y)
        if not both.any():
            continue
        compared += 1
        if not np.allclose(x[both], y[both], rtol=_RTOL, atol=1e-12):
            return False
    return compared >= _METRICS


class Twins:
    """Remembers which watched runs are one run (``twin path -> primary path``) and which pairs
    are not; ``notes`` collects the one line said when a pair is found."""

    def __init__(self) -> None:
        self.of: dict[str, str] = {}
        self.notes: list[str] = []
        self._different: set[frozenset[str]] = set()

    def primary(self, run: Run, others: Sequence[Run]) -> str:
        """The path whose findings stand for ``run``'s: its own, or its twin's among ``others``
        (runs in the order they were first seen)."""
        if run.path in self.of:
            return self.of[run.path]
        for other in others:
            pair = frozenset((run.path, other.path))
            if other.path == run.path or other.path in self.of or pair in self._different:
                continue
            same = same_run(run, other)
            if same is None:
                continue
            if not same:
                self._different.add(pair)
                continue
            self.of[run.path] = other.path
            self.notes.append(Words(f"{run.path} holds the same run as {other.path} (their first {STEPS} common "
                                    f"steps agree); its findings are alerted once, as {other.path}'s",
                                    f"{run.path} 与 {other.path} 是同一个运行（前 {STEPS} 个共同步一致）；"
                                    f"其发现只告警一次，记在 {other.path} 名下"))
            return other.path
        return run.path
