"""Reward hacking through one reward function (docs/reading-rules.md#reward-component-hacking).

When the total reward is a sum of several reward functions (TRL logs each as ``rewards/<fn>/mean``, read here
as ``reward_fn/{fn}/mean``), the total can rise while the task gets worse: one function — a format reward, a
length bonus — pays more and more while the accuracy-like one, or the validation, falls. The total alone never
shows it. Each component's move is read against its own noise (:func:`~rlvitals.checks._shared.progress`: the
first and last levels, ``z`` standard errors apart) with a Kendall trend, and must be a share ``min_move`` of
the component's own range, so a long run's tiny drifts and a short run's noise are no moves. Which component is
accuracy-like is read from its name by the catalog's ``reward_roles`` (data, not code).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import signals
from ..catalog import load_catalog
from ._base import CheckFn, Outcome, RunView, Series, Status
from ._reward import reward_of
from ._shared import held_from, progress
from .generalisation.tracks import core_tracks

__all__ = ["FUNCTIONS", "accuracy_like", "reward_component_hacking"]

#: the canonical key of one reward function's batch mean
COMPONENT = re.compile(r"^reward_fn/(?P<fn>[^/]+)/mean$")
#: where a reward function's name splits into parts: separators, and a lower-case letter meeting a capital
_PARTS = re.compile(r"[^0-9A-Za-z]+|(?<=[a-z])(?=[A-Z])")


def accuracy_like(name: str) -> bool:
    """Whether a reward function's name says it pays for getting the task right: one of its parts is a word of the
    catalog's ``reward_roles.accuracy``.

    >>> accuracy_like("correctness_reward_func"), accuracy_like("accuracy_reward"), accuracy_like("mathVerify")
    (True, True, True)
    >>> accuracy_like("format_reward"), accuracy_like("check_answer"), accuracy_like("accept_len")
    (False, False, False)
    """
    words = load_catalog().reward_roles.get("accuracy", ())
    return any(part.lower() in words for part in _PARTS.split(name) if part)


@dataclass(frozen=True)
class Move:
    """How one curve moved over the run: its first and last levels, the change as a share of its own range
    (``share``) and the share of its starting level it lost (``lost``: a fall from 0.3 to 0 loses all of it, one to
    0.2 a third; for a curve that goes below 0, the fall against its range), whether the change is beyond its
    noise and trend (``moved``: +1 up, -1 down, 0 neither), and the step the move began at."""

    name: str
    key: str
    start: float
    end: float
    share: float
    lost: float
    moved: int
    onset: int
    accuracy: bool = False
    validation: bool = False


def _move(name: str, key: str, steps: np.ndarray, values: np.ndarray, p: Mapping[str, Any],
          accuracy: bool = False, validation: bool = False) -> Move:
    pr = progress(values, z=p["z"])
    lo, hi = (float(v) for v in np.percentile(values, [2, 98]))
    change = pr.end - pr.start
    share = abs(change) / max(hi - lo, 1e-12)
    trend = signals.trend(values)
    up = change > pr.tol and trend >= p["trend"] and share >= p["min_move"]
    down = -change > pr.tol and trend <= -p["trend"] and share >= p["min_move"]
    moved = 1 if up else -1 if down else 0
    onset = int(steps[0])
    if moved:
        level = signals.rolling_level(values, max(3, min(int(p["window"]), len(values) // 5)))
        mark = pr.start + change / 4
        past = level > mark if moved > 0 else level < mark
        onset = int(steps[held_from(past, 0, len(values) - 1)])
    # a curve that never goes below 0 (an accuracy, a share) falls against its level; one that does, against its range
    lost = -change / max(abs(pr.start) if lo >= 0 else hi - lo, 1e-12)
    return Move(name, key, pr.start, pr.end, share, lost, moved, onset, accuracy, validation)


def _copies(a: Series, b: Series) -> bool:
    """Whether two series hold the same values at the steps both logged (a component that is the total)."""
    _, x, y = a.aligned(b)
    return len(x) > 0 and bool(np.mean(np.isclose(x, y, rtol=1e-6, atol=1e-9)) >= 0.95)


def _components(view: RunView, total: Series, min_steps: int) -> list[tuple[str, Series]]:
    """The reward functions logged for at least ``min_steps`` steps, by name, but one that repeats the total."""
    found = [(m["fn"], view.series(k, min_steps)) for k in view.metrics() if (m := COMPONENT.match(k))]
    return [(fn, s) for fn, s in found if s is not None and not _copies(s, total)]


def _validation(view: RunView, p: Mapping[str, Any]) -> list[Move]:
    """The core validation curves' moves, read "higher is better" (a loss upside down), shown as logged."""
    out = []
    for t in core_tracks(view, int(p["min_evals"])):
        m = _move(f"{t.source} ({t.label})", f"{t.source}/{t.label}", t.steps, t.sign * t.values, p, validation=True)
        out.append(replace(m, start=t.sign * m.start, end=t.sign * m.end))
    return out


def _rank(fell: Move) -> tuple[int, float]:
    """Which fall says most: an accuracy-like component, then validation, then any other; the largest first."""
    return (0 if fell.accuracy else 1 if fell.validation else 2, -fell.lost)


def reward_component_hacking(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """One reward function rising while an accuracy-like one or the validation falls, the total reward rising
    or flat (docs/reading-rules.md#reward-component-hacking): the policy earns its reward through that function,
    not the task. An accuracy-like component or validation that lost ``fail_loss`` of its starting level fails, a
    smaller fall warns; another component falling while a non-accuracy one rises is a note (a trade-off to
    read). Skipped without two components (one that is not the total), or with fewer than ``min_steps`` steps."""
    total = reward_of(view)
    if total is None:
        return []
    comps = _components(view, total, int(p["min_steps"]))
    vals = _validation(view, p)
    if not comps or len(comps) + len(vals) < 2:
        return []
    moves = [_move(fn, s.key, s.steps, s.values, p, accuracy=accuracy_like(fn)) for fn, s in comps]
    whole = _move("total", total.key, total.steps, total.values, p)
    names = ", ".join(m.name for m in moves)
    base = {"components": names, "total_from": whole.start, "total_to": whole.end, "total": total.key}
    keys = (total.key, *(m.key for m in moves))
    if whole.moved < 0:
        return [Outcome("ok", "total_falling", base, metrics=keys)]
    pairs = [(r, f) for r in moves if r.moved > 0 and not r.accuracy
             for f in [*moves, *vals] if f.moved < 0 and f is not r]
    if not pairs:
        return [Outcome("ok", "ok", base, metrics=keys, evidence={"total_from": whole.start, "total_to": whole.end})]
    rose, fell = min(pairs, key=lambda rf: (_rank(rf[1]), -rf[0].share))
    status: Status = ("note" if not (fell.accuracy or fell.validation)
                      else "fail" if fell.lost >= p["fail_loss"] else "warn")
    onset = max(rose.onset, fell.onset)
    template = "validation" if fell.validation else "hacking" if fell.accuracy else "trade_off"
    values = {**base, "rose": rose.name, "rose_from": rose.start, "rose_to": rose.end, "rose_step": rose.onset,
              "fell": fell.name, "fell_from": fell.start, "fell_to": fell.end, "fell_step": fell.onset,
              "fell_share": fell.lost, "onset": onset, "fail_loss": p["fail_loss"]}
    end = max(int(total.steps[-1]), onset)
    return [Outcome(status, template, values, onset, (onset, end), (rose.key, fell.key, total.key),
                    {"rose": rose.key, "rose_from": rose.start, "rose_to": rose.end, "fell": fell.key,
                     "fell_from": fell.start, "fell_to": fell.end, "share_lost": fell.lost,
                     "total_from": whole.start, "total_to": whole.end, "threshold": p["fail_loss"]})]


FUNCTIONS: dict[str, CheckFn] = {
    "reward_component_hacking": reward_component_hacking,
}
