"""Where a run is going: the entropy–performance law fitted to what the run logged, and read forward.

:func:`forecast` takes the entropy series and one performance series (a validation curve, or the training
reward when the run validated too rarely) and returns a :class:`Forecast`: the ceiling at zero entropy with
its interval, how much of the entropy (and of the gain it buys) is already spent, and the performance at
later steps, the entropy carried forward by the exponential approach it has followed so far. When the
law does not describe the run — the entropy did not fall, performance did not rise with it, or the law
leaves most of the movement unexplained — or cannot be fitted (too few points; values so large their squares
overflow, a broken log), the forecast says why and forecasts nothing.
"""

from __future__ import annotations

import hashlib
import heapq
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from ..signals import rolling_median
from ..words import Words
from .decay import Decay, fit_decay, fit_rows
from .law import SEED, LawFit, block_indices, fit_law, in_range, line_fits
from .resample import exact_quantiles

__all__ = ["Curve", "Forecast", "ForecastParams", "forecast", "horizons"]

#: the most points a fit reads: longer series are averaged over consecutive stretches first (the decay's
#: bootstrap refits every resample, so it reads fewer: a smooth exponential needs no more)
MAX_POINTS, DECAY_POINTS, DECAY_REPLICATES = 600, 200, 200


@dataclass(frozen=True)
class ForecastParams:
    """When the law is trusted: at least ``min_points`` pairs, an entropy that fell by ``min_drop`` of its
    start, a slope ``a`` whose whole interval is above zero, and a law that explains at least
    ``min_explained`` of how the performance's level moved."""

    min_points: int = 6
    min_drop: float = 0.1
    min_explained: float = 0.6


@dataclass(frozen=True)
class Curve:
    """Values over steps, with a 95 % band where the values are forecast (``lo``/``hi`` empty otherwise)."""

    steps: np.ndarray
    values: np.ndarray
    lo: np.ndarray = field(default_factory=lambda: np.empty(0))
    hi: np.ndarray = field(default_factory=lambda: np.empty(0))


@dataclass(frozen=True)
class Forecast:
    """The law fitted to one performance series of a run (``metric``; ``kind`` says whether it is a
    validation curve or the training reward), or the reason it could not be (``reason``, with every
    other estimate None)."""

    metric: str
    kind: str
    entropy_metric: str
    last_step: int
    points: int
    entropy_start: float | None
    entropy_now: float | None
    #: the step ``entropy_now`` is the level at: the middle of the stretch it is the median of
    entropy_now_step: float | None = None
    reason: Words | None = None
    law: LawFit | None = None
    #: the exponential decay the entropy followed, which carries it past the last step
    decay: Decay | None = None
    #: how far the same forecast, fitted on the first half of the run, missed the level at its end: the
    #: intervals (the ceiling's and the predictions') are widened by it on both sides
    backtest_error: float | None = None
    #: the level the performance series had over its last points, as logged
    observed: float | None = None
    #: the law's performance at each future step of :func:`horizons`, with its 95 % interval
    predicted: Mapping[int, float] = field(default_factory=dict)
    predicted_interval: Mapping[int, tuple[float, float]] = field(default_factory=dict)
    #: the logged points, the law over the logged steps, and the forecast beyond them (for the views)
    observed_curve: Curve | None = None
    fitted: Curve | None = None
    future: Curve | None = None

    @property
    def holds(self) -> bool:
        return self.law is not None

    @property
    def ceiling(self) -> float | None:
        return self.law.ceiling if self.law else None

    @property
    def entropy_consumed(self) -> float | None:
        """The share of the starting entropy already spent (``1 − H_now / H_start``)."""
        if not self.holds or not self.entropy_start or self.entropy_now is None:
            return None
        return float(np.clip(1.0 - self.entropy_now / self.entropy_start, 0.0, 1.0))

    @property
    def gain_left(self) -> float | None:
        """The share of the gain the law allows (from the starting entropy down to zero) still to come:
        ``(exp(H_now) − 1) / (exp(H_start) − 1)``."""
        if not self.holds or self.entropy_start is None or self.entropy_now is None:
            return None
        return float(np.clip(np.expm1(self.entropy_now) / np.expm1(self.entropy_start), 0.0, 1.0))

    @property
    def now(self) -> float | None:
        """The law's performance at the entropy the run has now."""
        return float(self.law.at(self.entropy_now)) if self.law and self.entropy_now is not None else None

    def entropy_at(self, steps: np.ndarray | float) -> np.ndarray:
        """The entropy at later ``steps`` by the decay, carried on from its level now (never below zero)."""
        if self.decay is None or self.entropy_now is None:
            raise ValueError(f"no forecast for {self.metric}: {self.reason}")
        at = float(self.last_step if self.entropy_now_step is None else self.entropy_now_step)
        out: np.ndarray = np.maximum(self.entropy_now + self.decay.at(steps) - self.decay.at(at), 0.0)
        return out

    def performance_at(self, steps: np.ndarray | float) -> np.ndarray:
        """The law's performance at later ``steps``: :meth:`entropy_at` read through the law."""
        if self.law is None:
            raise ValueError(f"no forecast for {self.metric}: {self.reason}")
        return self.law.at(self.entropy_at(steps))

    @property
    def entropy_settles(self) -> float | None:
        """The entropy the decay settles at, carried on from its level now."""
        return None if self.decay is None else float(self.entropy_at(np.inf))

    @property
    def plateau(self) -> float | None:
        """The law's performance at the entropy the decay settles at: where this run, left as it is, tops out."""
        settles = self.entropy_settles
        return None if self.law is None or settles is None else float(self.law.at(settles))

    @property
    def gain_per_1000(self) -> float | None:
        """What the next 1,000 steps add to the law's performance, by the forecast."""
        later = self.predicted.get(self.last_step + 1000)
        return None if later is None or self.now is None else later - self.now

    @staticmethod
    def empty_json() -> dict[str, object]:
        """Every key of :meth:`to_json`, empty: what a run with no series to forecast has."""
        empty = Forecast("", "", "", 0, 0, None, None).to_json()
        return {k: None if k not in ("predicted", "predicted_interval") else {} for k in empty}

    def to_json(self) -> dict[str, object]:
        """The keys of ``rlvitals forecast --json`` (docs/json.md, Forecast keys)."""
        law = self.law
        return {
            "metric": self.metric, "kind": self.kind, "entropy_metric": self.entropy_metric,
            "last_step": self.last_step, "points": self.points,
            "ceiling": self.ceiling, "ceiling_interval": list(law.ceiling_interval) if law else None,
            "a": law.a if law else None, "a_interval": list(law.a_interval) if law else None,
            "b": law.b if law else None, "b_interval": list(law.b_interval) if law else None,
            "explained": law.explained if law else None,
            "entropy_start": self.entropy_start, "entropy_now": self.entropy_now,
            "entropy_settles": self.entropy_settles, "entropy_consumed": self.entropy_consumed,
            "gain_left": self.gain_left, "observed": self.observed, "now": self.now, "plateau": self.plateau,
            "gain_per_1000": self.gain_per_1000, "backtest_error": self.backtest_error,
            "predicted": {str(k): v for k, v in self.predicted.items()},
            "predicted_interval": {str(k): list(v) for k, v in self.predicted_interval.items()},
            "reason": None if self.reason is None else {"en": str(self.reason), "zh": self.reason.zh},
        }


def horizons(last_step: int, span: int) -> list[int]:
    """The future steps a forecast is given at: a quarter, a half, one and two run lengths on, and 1,000 on.

    >>> horizons(300, 300)
    [375, 450, 600, 900, 1300]
    """
    steps = {last_step + max(1, int(span * f + 0.5)) for f in (0.25, 0.5, 1.0, 2.0)} | {last_step + 1000}
    return sorted(steps)


def _bins(steps: np.ndarray, values: np.ndarray, most: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ``most`` points: the means of consecutive stretches of a longer series."""
    if len(values) <= most:
        return steps.astype(float), values.astype(float)
    edges = np.linspace(0, len(values), most + 1).astype(int)
    return (np.add.reduceat(steps.astype(float), edges[:-1]) / np.diff(edges),
            np.add.reduceat(values.astype(float), edges[:-1]) / np.diff(edges))


def _ends(values: np.ndarray) -> tuple[float, float]:
    """The levels of a series at its start and at its end: medians of its first and last twentieth (3+)."""
    k = _end_size(len(values))
    return float(np.median(values[:k])), float(np.median(values[-k:]))


def _end(values: np.ndarray) -> float:
    """The level of a series at its end: :func:`_ends`' second."""
    return float(np.median(values[-_end_size(len(values)):]))


def _end_size(n: int) -> int:
    return max(3, n // 20)


def _end_step(steps: np.ndarray) -> float:
    """The step the end level of a series over ``steps`` stands for: the middle of its last twentieth."""
    return float(np.median(steps[-_end_size(len(steps)):]))


#: the entropy's levels computed, by its values (or by the digest of its steps and values, :class:`_Entropy`'s
#: key): a run's forecasts (each validation curve, the training reward) read the same entropy; a few series kept,
#: read-only
_LEVELS: OrderedDict[bytes, np.ndarray] = OrderedDict()
_LEVELS_LOCK = threading.Lock()
LEVELS_KEPT = 2


def _digest(*arrays: np.ndarray) -> bytes:
    """What the caches here are keyed by: the SHA-256 of the arrays' values and lengths (32 bytes held, not the
    values: a million-step entropy is 8 MB)."""
    found = hashlib.sha256()
    for a in arrays:
        found.update(len(a).to_bytes(8, "little"))
        found.update(np.ascontiguousarray(a).data)
    return found.digest()


def _level(x: np.ndarray, key: bytes | None = None) -> np.ndarray:
    """The entropy's level: a centred rolling median whose window (``2·half + 1``, about 2 % of the run) shrinks
    symmetrically at the ends, so a smooth monotone curve is its own level and one noisy step is not.
    Computed once per series (read-only; ``key``: the series' digest when the caller has one)."""
    x = np.asarray(x, dtype=float)
    key = _digest(x) if key is None else key
    with _LEVELS_LOCK:
        if (found := _LEVELS.get(key)) is not None:
            _LEVELS.move_to_end(key)
            return found
    out = _level_of(x)
    out.setflags(write=False)
    with _LEVELS_LOCK:
        _LEVELS[key] = out
        while len(_LEVELS) > LEVELS_KEPT:
            _LEVELS.popitem(last=False)
    return out


def _level_of(x: np.ndarray) -> np.ndarray:
    n, half = len(x), max(1, len(x) // 100)
    if n < 3:
        return x.copy()
    # the full centred windows, as trailing ones moved back by ``half`` (the same values; polars' trailing
    # median is several times faster than its centred one); the ``half`` at each end are the prefix medians
    w = 2 * half + 1
    out = np.empty(n)
    out[half : n - half] = rolling_median(x, w)[w - 1:]
    count = min(half, n)
    out[:count] = _odd_prefix_medians(x, count)
    out[n - count:] = _odd_prefix_medians(x[::-1], count)[::-1]
    return out


def _odd_prefix_medians(x: np.ndarray, count: int) -> np.ndarray:
    """The medians of ``x[:1]``, ``x[:3]``, …, ``x[:2·count − 1]``: each the middle value of its prefix (an odd
    count has one), kept with two heaps in O(count · log count) rather than a sort of every prefix.

    >>> _odd_prefix_medians(np.array([5.0, 1.0, 9.0, 2.0, 8.0]), 3).tolist()
    [5.0, 5.0, 5.0]
    """
    low: list[float] = []  # the smaller half, negated (a max-heap), holding the median on top
    high: list[float] = []
    out = np.empty(count, dtype=float)
    values = np.asarray(x, dtype=float)[: 2 * count - 1].tolist()
    for i in range(count):
        for v in values[max(0, 2 * i - 1): 2 * i + 1]:
            if low and v > -low[0]:
                heapq.heappush(high, v)
            else:
                heapq.heappush(low, -v)
            if len(low) > len(high) + 1:
                heapq.heappush(high, -heapq.heappop(low))
            elif len(high) > len(low):
                heapq.heappush(low, -heapq.heappop(high))
        out[i] = -low[0]
    return out


def _pairs(h_steps: np.ndarray, level: np.ndarray, gap: float, r_steps: np.ndarray,
           r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each performance point paired with the entropy's ``level`` (:func:`_level`) at its step (interpolated
    between logged steps); points more than one logging interval (``gap``) outside the entropy's steps are left
    out."""
    keep = (r_steps >= h_steps[0] - gap) & (r_steps <= h_steps[-1] + gap)
    return r_steps[keep], np.interp(r_steps[keep], h_steps, level), r[keep]


def _too_little(n: int, start: float, now: float, metric: str, p: ForecastParams) -> Words | None:
    """Why the pairs cannot carry a fit, before one is tried."""
    if n < p.min_points:
        return Words(f"only {n} points of {metric} fall within the steps the entropy was logged "
                     f"({p.min_points} needed)",
                     f"{metric} 只有 {n} 个点落在记录了熵的步数范围内（至少需要 {p.min_points} 个）")
    drop = 1.0 - now / start if start > 0 else 0.0
    if drop < p.min_drop:
        return Words(f"the entropy did not fall enough to read {metric} against it: {start:.3g} → {now:.3g} nats "
                     f"({drop:.0%}; a fall of {p.min_drop:.0%} is needed)",
                     f"熵下降得不够，无法用它来解读 {metric}：{start:.3g} → {now:.3g} nats"
                     f"（{drop:.0%}；至少需要下降 {p.min_drop:.0%}）")
    return None


def _out_of_range(h: np.ndarray, r: np.ndarray, metric: str) -> Words | None:
    """Why pairs with values too large for a fit (:func:`~rlvitals.forecast.law.in_range`: an entropy of hundreds of
    nats, a performance of 1e150 — a broken log) are not fitted."""
    if in_range(h, r):
        return None
    return Words(f"the values are too large to fit a law to (entropy up to {h.max():.3g} nats, {metric} up to "
                 f"{np.abs(r).max():.3g} in size): their squares do not fit in a float",
                 f"数值太大，无法拟合定律（熵最高 {h.max():.3g} nats，{metric} 的绝对值最高 {np.abs(r).max():.3g}）："
                 "它们的平方超出了浮点数的范围")


def _rejected(law: LawFit, metric: str, p: ForecastParams) -> Words | None:
    """Why a fitted law does not describe the run, read from the fit."""
    lo, hi = law.a_interval
    if lo <= 0:
        return Words(f"{metric} did not rise as the entropy fell: a = {law.a:.3g}, and its 95 % interval "
                     f"({lo:.3g} to {hi:.3g}) does not stay above zero",
                     f"熵下降时 {metric} 并没有随之上升：a = {law.a:.3g}，其 95% 区间（{lo:.3g} 到 {hi:.3g}）"
                     "没有完全落在零以上")
    if law.explained < p.min_explained:
        return Words(f"the law explains only {max(law.explained, 0.0):.0%} of how {metric} moved "
                     f"({p.min_explained:.0%} needed): it followed something other than the entropy",
                     f"该定律只解释了 {metric} 变化的 {max(law.explained, 0.0):.0%}（至少需要 "
                     f"{p.min_explained:.0%}）：它的走势由熵以外的因素决定")
    return None


@dataclass
class _Entropy:
    """What every forecast read against one entropy series shares (its validation curves, its training reward),
    kept per series: its levels at the start and the end (and the step the end stands for), its logging
    interval, and — computed when a forecast first needs them — the decay it followed with its bootstrap refits,
    and the decays of its first halves (by the step a half ends at)."""

    key: bytes
    start: float
    now: float
    now_step: float
    gap: float
    #: the decay, and its bootstrap refits' c, d and k (a row each) with the start and span they share
    carried: tuple[Decay, np.ndarray, np.ndarray, np.ndarray, float, float] | None = None
    #: by the last step of a first half: the entropy's points up to it, its decay, its level at its end and
    #: the step that level stands for
    halves: dict[float, tuple[int, Decay | None, float, float]] = field(default_factory=dict)
    #: by the future steps read (their bytes): each resample's entropy there, and its exp (:func:`_carry`)
    carried_to: dict[bytes, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


_ENTROPIES: OrderedDict[bytes, _Entropy] = OrderedDict()
_ENTROPIES_LOCK = threading.Lock()
#: a few runs' worth (each holds a few numbers and 200 bootstrap curves, not the series), and of each a few
#: future grids' paths
ENTROPIES_KEPT, CARRIED_KEPT = 8, 3


def _entropy(h_steps: np.ndarray, h: np.ndarray) -> _Entropy:
    """The entropy series' shared facts (:class:`_Entropy`), computed once per series; the fields filled later
    are filled with the same values by whichever forecast gets there first."""
    key = _digest(np.asarray(h_steps, dtype=float), np.asarray(h, dtype=float))
    with _ENTROPIES_LOCK:
        if (found := _ENTROPIES.get(key)) is not None:
            _ENTROPIES.move_to_end(key)
            return found
    start, now = _ends(h)
    gap = float(np.median(np.diff(h_steps))) if len(h_steps) > 1 else 1.0
    out = _Entropy(key, start, now, _end_step(h_steps), gap)
    with _ENTROPIES_LOCK:
        out = _ENTROPIES.setdefault(key, out)
        while len(_ENTROPIES) > ENTROPIES_KEPT:
            _ENTROPIES.popitem(last=False)
    return out


def _decays(ent: _Entropy, h_steps: np.ndarray,
            h: np.ndarray) -> tuple[Decay, np.ndarray, np.ndarray, np.ndarray, float, float]:
    """The exponential decay the entropy followed, and its refits to the bootstrap resamples of its residuals
    (their ``c``, ``d`` and ``k``, and the start and span they share). Computed once per entropy series."""
    if ent.carried is None:
        t, y = _bins(h_steps, h, DECAY_POINTS)
        best = fit_decay(t, y, floor=0.0, falling=True)
        resid = y - best.at(t)
        rows = block_indices(len(y), DECAY_REPLICATES, np.random.default_rng(SEED + 1))
        c, d, k = (np.array(v, dtype=float) for v in fit_rows(t, best.at(t) + resid[rows], floor=0.0, falling=True))
        for v in (c, d, k):
            v.setflags(write=False)
        ent.carried = (best, c, d, k, float(t[0]), max(float(t[-1] - t[0]), 1.0))
    return ent.carried


def _carry(ent: _Entropy, h_steps: np.ndarray, h: np.ndarray,
           future: np.ndarray) -> tuple[Decay, np.ndarray, np.ndarray]:
    """The exponential decay the entropy followed (:func:`_decays`), the entropy it gives at ``future`` for each
    bootstrap resample (rows; each carried on from the level now at the step it stands for, never below zero), and
    the exp of those (what the law reads). Computed once per entropy series and future steps: a run's series
    share their last step, and so their future steps, more often than not."""
    best, c, d, k, start, span = _decays(ent, h_steps, h)
    future = np.asarray(future, dtype=float)
    if (found := ent.carried_to.get(key := future.tobytes())) is None:
        # every resample's Decay.at at once (the same arithmetic, element by element)
        ahead = (future - start) / span
        here = (np.asarray(ent.now_step, dtype=float) - start) / span
        paths = np.maximum(ent.now + ((c[:, None] + d[:, None] * np.exp(-k[:, None] * ahead))
                                      - (c + d * np.exp(-k * here))[:, None]), 0.0)
        growth = np.exp(paths)
        for a in (paths, growth):
            a.setflags(write=False)
        found = (paths, growth)
        with _ENTROPIES_LOCK:  # another forecast may be adding its own grid
            ent.carried_to[key] = found
            while len(ent.carried_to) > CARRIED_KEPT:
                ent.carried_to.pop(next(iter(ent.carried_to)))
    return best, *found


def _first_half(ent: _Entropy, h_steps: np.ndarray, h: np.ndarray, last: float) -> tuple[int, Decay | None, float,
                                                                                          float]:
    """The entropy up to step ``last``: how many points, and (3 or more) the decay fitted to them, their level at
    the end and the step it stands for. Computed once per entropy series and ``last``."""
    if (found := ent.halves.get(last)) is None:
        h_half = h_steps <= last
        count = int(h_half.sum())
        if count < 3:
            found = (count, None, 0.0, 0.0)
        else:
            decay = fit_decay(*_bins(h_steps[h_half], h[h_half], DECAY_POINTS), floor=0.0, falling=True)
            found = (count, decay, _end(h[h_half]), _end_step(h_steps[h_half]))
        ent.halves[last] = found
    return found


def _backtest(ent: _Entropy, h_steps: np.ndarray, h: np.ndarray, steps: np.ndarray, hp: np.ndarray,
              rp: np.ndarray) -> float:
    """The error the same forecast makes on the run's own second half: the law and the decay fitted on the
    pairs of the first half (by step), read at the last pair, against the level there. It is how far the
    law and the decay miss beyond what their own noise explains; the intervals are widened by it."""
    half = steps <= steps[0] + (steps[-1] - steps[0]) / 2
    if half.sum() < 3 or (~half).sum() < 3:
        return 0.0
    _, decay, now, at = _first_half(ent, h_steps, h, float(steps[half][-1]))
    if decay is None:  # fewer than 3 entropy points in the first half
        return 0.0
    a, b = (float(v) for v in line_fits(np.exp(hp[half]), rp[half]))
    ahead = max(0.0, now + float(decay.at(_end_step(steps))) - float(decay.at(at)))
    return abs(b - a * float(np.exp(ahead)) - _end(rp))


def _spread(law: LawFit, growth: np.ndarray) -> np.ndarray:
    """The 95 % interval of the law's performance along the entropy's resampled paths (``growth``: their exp, a
    row each): each decay resample beside a law resample (the law has more; its first ones are taken), the
    quantiles those of the plain fits of the law's resamples (:func:`exact_quantiles`)."""
    reps = law.replicates[: len(growth)]
    fast = reps[:, 1:2] - reps[:, 0:1] * growth
    resamples = law.resamples
    if resamples is None:
        out: np.ndarray = np.quantile(fast, [0.025, 0.975], axis=0)
        return out

    def exact(which: np.ndarray) -> np.ndarray:
        ab = resamples.exact(which)
        spread: np.ndarray = ab[:, 1:2] - ab[:, 0:1] * growth[which]
        return spread

    slack_a, slack_b = law.slack
    return exact_quantiles(fast, [0.025, 0.975], exact, slack_b + slack_a * growth.max(axis=0))


def _downsample(steps: np.ndarray, values: np.ndarray, most: int = 300) -> Curve:
    s, v = _bins(steps, values, most)
    return Curve(s, v)


def forecast(h_steps: np.ndarray, h: np.ndarray, r_steps: np.ndarray, r: np.ndarray, *, metric: str,
             kind: str, entropy_metric: str = "actor/entropy",
             params: ForecastParams = ForecastParams()) -> Forecast:  # noqa: B008 — frozen, shared safely
    """The law ``R = b − a·exp(H)`` fitted to the performance ``r`` (at ``r_steps``) against the entropy
    ``h`` (at ``h_steps``; both in step order, finite, the entropy 3 points or more), read forward.

    >>> steps = np.arange(1, 301)
    >>> h = 0.1 + 1.2 * np.exp(-steps / 80.0)
    >>> val_steps = steps[::10]
    >>> f = forecast(steps, h, val_steps, 0.75 - 0.2 * np.exp(h[::10]), metric="acc", kind="validation")
    >>> round(f.ceiling, 3), round(f.law.a, 3), f.reason is None, f"{f.entropy_consumed:.0%}"
    (0.55, 0.2, True, '89%')
    """
    ent = _entropy(h_steps, h)
    start, now = ent.start, ent.now
    level = _level(h, ent.key)
    steps, hp, rp = _pairs(h_steps, level, ent.gap, r_steps, r)
    last = int(max(h_steps[-1], r_steps[-1]))
    base = {"metric": metric, "kind": kind, "entropy_metric": entropy_metric, "last_step": last,
            "points": len(rp), "entropy_start": start, "entropy_now": now, "entropy_now_step": ent.now_step,
            "observed": _end(rp) if len(rp) >= 3 else None, "observed_curve": _downsample(r_steps, r)}
    reason = _too_little(len(rp), start, now, metric, params)
    if reason is None:
        bh, br = _bins(steps, hp, MAX_POINTS)[1], _bins(steps, rp, MAX_POINTS)[1]
        reason = _out_of_range(bh, br, metric)
    if reason is None:
        law = fit_law(bh, br)
        reason = _rejected(law, metric, params)
    if reason is not None:
        return Forecast(**base, reason=reason)  # type: ignore[arg-type]
    ahead = horizons(last, last - int(min(h_steps[0], r_steps[0])) + 1)
    grid = np.unique(np.concatenate([np.linspace(last, ahead[-1], 60).round(), ahead]))
    decay, _, growth = _carry(ent, h_steps, h, grid)
    miss = _backtest(ent, h_steps, h, steps, hp, rp)
    law = replace(law, ceiling_interval=(law.ceiling_interval[0] - miss, law.ceiling_interval[1] + miss))
    found = Forecast(**base, law=law, decay=decay, backtest_error=miss)  # type: ignore[arg-type]
    values = found.performance_at(grid)
    lo, hi = _spread(law, growth) + np.array([[-miss], [miss]])
    at = {int(s): i for i, s in enumerate(grid)}
    # the band is read: the law's pairs, kept to refit its resamples, need not stay with the run
    return replace(found, law=replace(law, resamples=None), predicted={s: float(values[at[s]]) for s in ahead},
                   predicted_interval={s: (float(lo[at[s]]), float(hi[at[s]])) for s in ahead},
                   fitted=Curve(*_bins(h_steps, law.at(level), 300)), future=Curve(grid, values, lo, hi))
