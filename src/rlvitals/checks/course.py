"""Where the run's outcome went since a step: the number that says whether the model still gets better.

A sign that predicts trouble (entropy collapsing early, rollouts losing their diversity, entropy low while
the clip fraction is high) is a failure when the outcome is flat or falling, and a warning that says what
it predicts when the outcome still clearly rises (docs/reading-rules.md#severity). The outcome is the core
validation curve of every data source when the run was evaluated (docs/reading-rules.md#outcome-course: in the
end the one question that matters is whether the model got better), else the training reward; a change counts only
beyond the series' own noise (``progress``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .. import signals
from ._base import RunView
from ._shared import progress
from .generalisation.tracks import core_tracks

__all__ = ["Course", "course_since"]

#: a change must exceed this many standard errors of the series' own step-to-step noise
Z = 3.0
#: evaluations a validation curve needs from the step on to be read
MIN_EVALS = 3
#: this many identical last evaluations: a frozen policy, not one still learning
FROZEN = 3
#: training-reward values needed from the step on (without validation)
MIN_REWARDS = 10
#: the training outcome without validation: the task's score first (the reward after a KL penalty moves with
#: the penalty, not only with the task)
OUTCOME_KEYS = ("critic/score/mean", "critic/rewards/mean")


@dataclass(frozen=True)
class Course:
    """The outcome read from a step to the end: ``metric`` (a validation source's ``source/label``, or the
    training reward's key) went from ``start`` to ``end`` (levels, in its own units); ``rising`` and
    ``falling`` are beyond its noise."""

    kind: Literal["validation", "reward"]
    metric: str
    start: float
    end: float
    rising: bool
    falling: bool
    #: the Mann–Kendall z of the outcome's trend from the step on (0 with fewer than 4 values): how far it leans
    #: up even when it does not clearly rise (few evaluations)
    trend_z: float = 0.0

    def words(self) -> dict[str, Any]:
        """The values a message quotes: ``outcome`` (what was read), ``outcome_from`` and ``outcome_to``."""
        return {"outcome": self.metric, "outcome_from": self.start, "outcome_to": self.end}


def _validation(view: RunView, step: int) -> Course | None:
    """Every source's core curve from its first evaluation after ``step``: rising when one rises and none
    falls, falling when one falls. After, not at: a gain made in the very update that broke the policy (a
    run whose learning rate jumped) is no sign that it still learns."""
    read = []
    for t in core_tracks(view):
        part = t.values[t.steps > step]
        if len(part) < MIN_EVALS:
            continue
        pr = progress(part, t.sign, Z, k=max(1, min(3, len(part) // 3)))
        # the whole curve's noise: a few evaluations after a step say little about their own spread
        noise = signals.noise_scale(t.sign * t.values) if len(t.values) >= 3 else 0.0
        tol = max(pr.tol, Z * 1.25 * noise * float(np.sqrt(2.0 / pr.k)))
        # a score that no longer moves at all (its last evaluations identical) comes from a policy that no longer
        # changes: what it gained is behind it, it is not still learning (the demo's frozen policy at 0.67)
        frozen = len(part) >= FROZEN and float(np.ptp(part[-FROZEN:])) == 0.0
        read.append((t, pr.start * t.sign, pr.end * t.sign, pr.gain > tol and not frozen,
                     pr.drop > tol or -pr.gain > tol, trend_z(t.sign * part)))
    if not read:
        return None
    rising = any(r[3] for r in read) and not any(r[4] for r in read)
    main = next((r for r in read if r[3] or r[4]), read[0])
    t, start, end = main[0], main[1], main[2]
    return Course("validation", f"{t.source}/{t.label}", start, end, rising, any(r[4] for r in read),
                  min(r[5] for r in read))


def trend_z(x: np.ndarray) -> float:
    """Kendall's tau of ``x`` against time over its standard deviation under no trend (the Mann–Kendall z;
    0 with fewer than 4 values).

    Example:
        >>> round(trend_z(np.arange(10.0)), 2)
        4.02
    """
    n = len(x)
    if n < 4:
        return 0.0
    sd = float(np.sqrt(2.0 * (2 * n + 5) / (9.0 * n * (n - 1))))
    return signals.trend(x) / sd


def _reward(view: RunView, step: int) -> Course | None:
    r = view.first(*OUTCOME_KEYS)
    if r is None:
        return None
    part = r.values[r.steps > step]
    if len(part) < MIN_REWARDS:
        return None
    pr = progress(part, 1.0, Z, k=max(3, len(part) // 5))
    tau = signals.trend(part)
    # a batch reward repeating one value to the end is a frozen policy's (one answer pattern, one partial credit)
    frozen = float(np.ptp(part[-max(FROZEN, len(part) // 10):])) == 0.0
    return Course("reward", r.key, pr.start, pr.end, pr.rising and tau >= 0.2 and not frozen,
                  pr.falling and tau <= -0.2, trend_z(part))


def course_since(view: RunView, step: int) -> Course | None:
    """The outcome after ``step`` to the end of the run: validation when the run was evaluated at least
    :data:`MIN_EVALS` times after it, else the training reward; None when neither can be read.

    Example:
        >>> from rlvitals import load
        >>> view = RunView(load("train.log")[0])  # doctest: +SKIP
        >>> course_since(view, 20).rising  # doctest: +SKIP
        True
    """
    found = view.derived(("course", step), lambda: _validation(view, step) or _reward(view, step))
    return found if isinstance(found, Course) else None
