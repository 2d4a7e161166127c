"""Helpers shared by the checks: run-relative windows, tenths, reward improvement, a curve's progress against
its noise, the rounding step of 3-decimal logs, and the words for a too-short series."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import signals
from ..signals import median
from ._base import Outcome, RunView, Series, Status

#: reward series, training batch means: the score after KL shaping first, else the raw score
REWARD_KEYS = ("critic/rewards/mean", "critic/score/mean")
#: what moves when an update moved the policy: the KL (per update and to the reference) and the clip fraction
POLICY_MOVES = ("actor/ppo_kl", "actor/kl_loss", "actor/reward_kl_penalty", "actor/pg_clipfrac")


def jumped_at(s: Series, step: int, ratio: float = 3.0, window: int = 20, k: float = 4.0) -> float | None:
    """How many times its recent median ``s`` was at ``step`` (or the logged step next to it) when it jumped
    there — at least ``ratio``× the median of the ``window`` values before and ``k`` noise scales above it —
    else None. "Something moved at the same step" for the checks that tell an isolated spike from one that
    carried the policy with it.

    Example:
        >>> import numpy as np
        >>> x = np.r_[np.full(30, 0.02) + np.linspace(0, 1e-3, 30), 0.2, np.full(9, 0.02)]
        >>> s = Series("actor/ppo_kl", np.arange(1, 41), x)
        >>> round(jumped_at(s, 31), 1), jumped_at(s, 20)
        (9.6, None)
    """
    near = np.flatnonzero(np.abs(s.steps - step) <= 1)
    if not len(near):
        return None
    first = int(near[0])
    before = s.values[max(0, first - window): first]  # the level the step left, the step itself not in it
    if len(before) < 3:
        return None
    # the level it left: the median of the window, or of the last three values when those are higher (a
    # series still rising from 0, as a KL does early, is not jumping because it left its own start behind)
    base = max(float(median(before)), float(median(before[-3:])))
    noise = max(signals.noise_scale(before), signals.quantum(before), 1e-12)
    value = float(np.max(s.values[near]))
    best = value / base if base > 0 and value >= ratio * base and value - base >= k * noise else None
    return best


def held_from(ok: np.ndarray, start: int, end: int, keep: float = 0.7, gap: int = 2) -> int:
    """The first index in ``start..end`` from which ``ok`` holds for the stretch: true there and at the next
    index, true on at least ``keep`` of the points to ``end``, never false more than ``gap`` in a row; ``start``
    when no index does. An onset is a step that shows the condition and goes on showing it: a rolling level
    crosses a few steps early, and a value at a run's first step shared by chance (two groups of identical
    rewards, then varied ones) is no start of a lasting pattern.

    >>> held_from(np.array([1, 0, 1, 1, 1, 1, 1, 0, 1], bool), 0, 8)
    2
    """
    best, run, held = start, 0, 0
    for i in range(end, start - 1, -1):
        run = 0 if ok[i] else run + 1
        if run > gap:
            break
        held += bool(ok[i])
        nxt = i + 1 > end or ok[i + 1]
        if ok[i] and nxt and held >= keep * (end - i + 1):
            best = i
    return best


def _fmt_steps(s: Series, idx: list[int], limit: int = 8) -> str:
    shown = ", ".join(str(s.step(i)) for i in idx[:limit])
    return shown + (" …" if len(idx) > limit else "")


def _level_window(n: int) -> int:
    """Rolling-level window: 5 % of the run, at least 5 steps."""
    return max(5, n // 20)


def _improving(r: np.ndarray, k: float = 3.0) -> tuple[bool, float, float]:
    """Whether a reward clearly rose over the run: Kendall trend ≥ 0.2 and the last fifth's median
    above the first fifth's by ``k`` × the median's noise. Returns ``(rose, first, last)``."""
    n = len(r)
    b = max(2, n // 5)
    first, last = float(median(r[:b])), float(median(r[-b:]))
    noise = max(signals.noise_scale(r), signals.quantum(r)) * 1.2533 / np.sqrt(b)
    return last - first > k * max(noise, 1e-12) and signals.trend(r) >= 0.2, first, last


def _tenths(x: np.ndarray) -> tuple[float, float, float, int]:
    """Medians of the first, middle and last tenth of a series (at least 3 values each), and that size."""
    n, b = len(x), max(3, len(x) // 10)
    return (float(median(x[:b])), float(median(x[max(0, n // 2 - b // 2) : n // 2 + b // 2 + 1])),
            float(median(x[-b:])), b)


def _short(s: Series, needed: int) -> Outcome:
    """A check that cannot read a series this short says so (rather than calling it healthy)."""
    return Outcome("skipped", "short", {"metric": s.key, "n": len(s), "needed": needed}, metrics=(s.key,))


def _near_zero(x: np.ndarray, min_quanta: float) -> float:
    """The log's rounding step when the series never leaves a few rounding steps of zero
    (``0.000``/``-0.000``/``0.001`` in a three-decimal veRL console log), else 0."""
    q = signals.quantum(x)
    return q if q > 0 and float(np.quantile(np.abs(x), 0.9)) < min_quanta * q else 0.0


def _jump_outcome(s: Series, jumps: list[signals.Jump], status: Status, extra: Mapping[str, Any]) -> Outcome:
    """One warn/fail outcome for the jumps of one series: the first one sets the onset, the
    largest one the numbers; the template says whether it stayed up or came back."""
    first = jumps[0]
    worst = max(jumps, key=lambda j: (j.ratio if np.isfinite(j.ratio) else 1e300, j.score))
    values = {"metric": s.key, "step": s.step(first.start), "before": first.before, "peak": first.value,
              "peak_step": s.step(first.peak), "after": first.after, "ratio": first.ratio, "score": first.score,
              "count": len(jumps), "steps": _fmt_steps(s, [j.start for j in jumps]),
              "worst": worst.value, "worst_step": s.step(worst.peak), "worst_ratio": worst.ratio, **extra}
    template = ("shift" if first.stayed else "spike") + ("s" if len(jumps) > 1 else "")
    threshold = extra["ratio_threshold"] * first.before if "ratio_threshold" in extra else None
    return Outcome(status, template, values, onset_step=s.step(first.start),
                   span=(s.step(first.start), s.step(jumps[-1].end)), metrics=(s.key,),
                   evidence={"baseline": first.before, "peak": first.value, "after": first.after,
                             "ratio": first.ratio, "score": first.score,
                             "threshold": threshold, "threshold_sd": extra["k"],
                             "jump_steps": [s.step(j.start) for j in jumps],
                             "peaks": [j.value for j in jumps], "baselines": [j.before for j in jumps]})


def _knee(y: np.ndarray) -> int:
    """Where a series bends upward most: the hinge ``a + b·t + c·max(0, t − t0)`` that fits best."""
    n = len(y)
    t = np.arange(n, dtype=float)
    best, best_sse = n // 2, np.inf
    for t0 in np.unique(np.linspace(n // 10, n - n // 10 - 1, 60).astype(int)):
        design = np.column_stack([np.ones(n), t, np.maximum(0.0, t - t0)])
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        sse = float(np.sum((design @ coef - y) ** 2))
        if coef[2] > 0 and sse < best_sse:
            best, best_sse = int(t0), sse
    return best


def _rise_onset(x: np.ndarray, first: float, last: float, floor: float) -> int:
    """Index from which a series that rose from ``first`` to ``last`` stays at least a quarter of
    the way up, on a log scale (ratios, not differences, for quantities spanning decades)."""
    level = np.log(np.maximum(signals.rolling_level(x, _level_window(len(x))), floor))
    below = np.flatnonzero(level <= 0.75 * np.log(max(first, floor)) + 0.25 * np.log(last))
    return min(len(x) - 1, int(below[-1]) + 1) if len(below) else 0


def _ends(x: np.ndarray, min_quanta: float) -> tuple[float, float, float]:
    """``(first, last, floor)``: the medians of the first and last fifth (at least 3 points each), and
    the smallest level that counts as non-zero — the noise of such a median, or ``min_quanta`` logging
    quanta (a metric printed with 4 decimals reads 0.0000 long before it is 0)."""
    b = max(3, len(x) // 5)
    first, last = float(median(x[:b])), float(median(x[-b:]))
    floor = max(signals.noise_scale(x) / np.sqrt(b), signals.quantum(x) * min_quanta, 1e-12)
    return first, last, floor


def window_mean(x: np.ndarray, window: int) -> np.ndarray:
    """Centred rolling mean over ``window`` values, cut at the ends: the level of a fraction logged per batch
    (an accuracy), which is the share over the window. A median would read coarse batches wrong: with one
    pair a micro-batch, accuracies are 0 or 1, and three right pairs in four have a median of 1.

    >>> window_mean(np.array([0.0, 1.0, 1.0, 1.0, 0.0]), 3).tolist()
    [0.5, 0.6666666666666666, 1.0, 0.6666666666666666, 0.5]
    """
    w = max(1, min(window, len(x)))
    kernel = np.ones(w)
    sums = np.convolve(x, kernel, mode="same")
    counts = np.convolve(np.ones(len(x)), kernel, mode="same")
    out: np.ndarray = sums / counts
    return out


@dataclass(frozen=True)
class Progress:
    """Levels of a curve in "better is higher" units (``sign`` × value): the start and end
    levels (medians of ``k`` points), the best smoothed level and where it was, and the
    threshold a change must exceed to be more than noise."""

    start: float
    end: float
    peak: float
    peak_index: int
    k: int
    tol: float
    #: where the curve leaves its best level (the hinge of a plateau and a straight fall)
    decline_index: int = 0

    @property
    def gain(self) -> float:
        return self.end - self.start

    @property
    def drop(self) -> float:
        return self.peak - self.end

    @property
    def rising(self) -> bool:
        return self.gain > self.tol

    @property
    def falling(self) -> bool:
        return self.drop > self.tol


def progress(values: np.ndarray, sign: float = 1.0, z: float = 3.0, k: int | None = None) -> Progress:
    """Start/end/peak levels of ``sign × values`` and the noise threshold ``z`` standard
    errors of the difference of two ``k``-point medians (``1.25·σ·√(2/k)``)."""
    v = sign * np.asarray(values, dtype=float)
    n = len(v)
    k = k or max(1, min(n // 3, max(3, n // 10)))
    level = signals.rolling_level(v, k)
    # the peak must lie before the last window, or a final rise would count as "the best"
    head = level[: max(1, n - k)] if n > k else level
    peak_index = int(np.argmax(head)) if n > k else int(np.argmax(level))
    noise = max(signals.noise_scale(v) if n >= 3 else 0.0, 1e-3 * abs(float(median(v))), 1e-12)
    tol = z * 1.25 * noise * float(np.sqrt(2.0 / k))
    return Progress(float(median(v[:k])), float(median(v[-k:])), float(level[peak_index]), peak_index, k,
                    tol, signals.plateau_end(v, peak_index))


def settled_after(s: Series, events: list[signals.Event], p: Mapping[str, Any]) -> tuple[int, float] | None:
    """``(steps, median)`` of the gradient after the last spike when it settled there: at least ``fail_window``
    logged steps followed it, and their median is within ``moved_ratio``× the median before the first spike."""
    after, before = s.values[events[-1].end + 1:], s.values[: max(1, events[0].start)]
    if len(after) < p["fail_window"] or float(median(after)) > p["moved_ratio"] * float(median(before)):
        return None
    return len(after), float(median(after))


def moved_with(view: RunView, steps: list[int], keys: tuple[str, ...],
               p: Mapping[str, Any]) -> tuple[int, str, float] | None:
    """The first of ``steps`` at which one of ``keys`` jumped too (``moved_ratio``× its recent median), as
    ``(step, key, how many times)``; None when every spike came alone."""
    for step in steps:
        for key in keys:
            s = view.series(key)
            ratio = jumped_at(s, step, p["moved_ratio"]) if s is not None else None
            if ratio is not None:
                return step, key, ratio
    return None
