"""L5: where the run will top out — the entropy–performance law read forward
(docs/reading-rules.md#entropy-ceiling: an entropy that falls fast early predicts saturation later;
Cui et al. 2025: R = −a·exp(H) + b, ceiling −a + b at H = 0).

Which series the law is fitted to is chosen here: each validation data source's core curve (the number
that matters, docs/reading-rules.md#val-progress), else the training reward, saying which. :func:`run_forecast` gives
every forecast of a run with its primary one (for ``rlvitals forecast``, ``diagnose --json`` and the views);
the check ``entropy_ceiling`` reads the primary one: a note when little of the gain the law allows is
left, a warning when the ceiling falls short of a target the user gave.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from .. import signals
from ..forecast import Forecast, ForecastParams, forecast
from ..words import Words
from ._base import Outcome, RunView, Status
from .generalisation.tracks import core_tracks
from .generalisation.validation import REWARD_KEYS

__all__ = ["ENTROPY_KEY", "FUNCTIONS", "ForecastInput", "RunForecast", "forecast_inputs", "forecast_params",
           "run_forecast", "target_of"]

ENTROPY_KEY = "actor/entropy"
#: the kinds of performance series, said in a finding's language
KINDS = {"validation": Words("validation", "验证集"), "training reward": Words("training reward", "训练 reward")}


@dataclass(frozen=True)
class ForecastInput:
    """One performance series to read against the entropy: ``kind`` is ``validation`` or ``training reward``."""

    metric: str
    kind: str
    steps: np.ndarray
    values: np.ndarray


@dataclass(frozen=True)
class RunForecast:
    """Every forecast of a run, the primary one first; ``reason`` says why there is none."""

    forecasts: tuple[Forecast, ...]
    reason: Words | None = None
    #: the score the user wants (``--target``), or None
    target: float | None = None

    @property
    def primary(self) -> Forecast | None:
        return self.forecasts[0] if self.forecasts else None

    @property
    def below_target(self) -> bool | None:
        """Whether the primary ceiling is below the target (None without a target or a ceiling)."""
        ceiling = self.primary.ceiling if self.primary else None
        return None if self.target is None or ceiling is None else ceiling < self.target

    def to_json(self) -> dict[str, object]:
        """The primary forecast's keys at the top, every series' forecast under ``by_metric``, and the target."""
        aim = {"target": self.target, "below_target": self.below_target}
        if self.primary is None:
            reason = self.reason or Words("no forecast", "没有预测")
            return {**Forecast.empty_json(), "reason": {"en": str(reason), "zh": reason.zh}, **aim, "by_metric": []}
        return {**self.primary.to_json(), **aim, "by_metric": [f.to_json() for f in self.forecasts]}


def forecast_inputs(view: RunView, min_points: int) -> list[ForecastInput]:
    """The performance series a forecast may read: every validation source's core curve (higher is
    better; most evaluations first), then the training reward."""
    tracks = sorted((t for t in core_tracks(view) if t.sign > 0), key=lambda t: (-len(t.values), t.source))
    out = [ForecastInput(f"{t.source}/{t.label}", "validation", t.steps, t.values) for t in tracks]
    reward = view.first(*REWARD_KEYS, min_points=min_points)
    if reward is not None:
        out.append(ForecastInput(reward.key, "training reward", reward.steps, reward.values))
    return out


def _primary_first(found: list[Forecast], min_points: int) -> tuple[Forecast, ...]:
    """Validation before the training reward when any validation curve can be read (the law is about
    validation performance); among those, one the law holds for before one it does not."""
    val = [f for f in found if f.kind == "validation" and f.points >= min_points]
    pool = val or found
    first = next((f for f in pool if f.holds), pool[0])
    return (first, *(f for f in found if f is not first))


def target_of(p: Mapping[str, Any]) -> float | None:
    """The score the user wants among the ceiling check's parameters: None for the default −inf (no target)."""
    target = float(p["target"])
    return None if math.isinf(target) and target < 0 else target


def forecast_params(p: Mapping[str, Any]) -> ForecastParams:
    """The forecast's settings among the ceiling check's parameters."""
    return ForecastParams(int(p["min_points"]), float(p["min_drop"]), float(p["min_explained"]))


def run_forecast(view: RunView, params: ForecastParams | None = None) -> RunForecast:
    """The forecasts of the run behind ``view`` (computed once per view and parameters).

    Example:
        >>> from rlvitals import load
        >>> fc = run_forecast(RunView(load("run.log")[0]))  # doctest: +SKIP
        >>> fc.primary.ceiling, fc.primary.metric  # doctest: +SKIP
        (0.62, 'openai/gsm8k/acc/mean@1')
    """
    params = params or ForecastParams()
    return cast(RunForecast, view.derived(("forecast", params), lambda: _run_forecast(view, params)))


def _run_forecast(view: RunView, params: ForecastParams) -> RunForecast:
    entropy = view.series(ENTROPY_KEY, min_points=3)
    if entropy is None:
        return RunForecast((), Words(f"the run did not log the policy's entropy ({ENTROPY_KEY})",
                                     f"本次训练没有记录策略熵（{ENTROPY_KEY}）"))
    inputs = forecast_inputs(view, 3)
    if not inputs:
        return RunForecast((), Words("the run logged no validation curve and no training reward to read against "
                                     "its entropy", "本次训练没有记录可与熵对照的验证曲线或训练 reward"))
    found = [forecast(entropy.steps, entropy.values, i.steps, i.values, metric=i.metric, kind=i.kind,
                      entropy_metric=ENTROPY_KEY, params=params) for i in inputs]
    return RunForecast(_primary_first(found, params.min_points))


def _near_since(view: RunView, start: float, near: float) -> int | None:
    """The step from which less than ``near`` of the gain the law allows was left: from where the entropy's
    level stays at or below ``log(1 + near·(exp(H_start) − 1))`` to the end."""
    entropy = view.series(ENTROPY_KEY, min_points=3)
    if entropy is None:
        return None
    level = signals.rolling_level(entropy.values, max(3, len(entropy) // 20))
    above = np.flatnonzero(level > np.log1p(near * np.expm1(start)))
    first = int(above[-1]) + 1 if len(above) else 0
    return entropy.step(first) if first < len(entropy) else None


def entropy_ceiling(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The primary forecast judged: skipped with the law's reason when it does not hold; ``warn`` when even
    the top of the ceiling's interval is below ``target``, ``note`` when the ceiling is (or when less than
    ``near`` of the attainable gain is left); else ``ok``."""
    fc = run_forecast(view, forecast_params(p)).primary
    if fc is None:
        return []
    metrics = (fc.metric, ENTROPY_KEY)
    if not fc.holds or fc.law is None:
        return [Outcome("skipped", "declined", {"metric": fc.metric, "reason": fc.reason}, metrics=metrics)]
    lo, hi = fc.law.ceiling_interval
    v = {"metric": fc.metric, "kind": KINDS.get(fc.kind, fc.kind), "ceiling": fc.law.ceiling, "lo": lo, "hi": hi,
         "observed": fc.observed, "consumed": fc.entropy_consumed, "left": fc.gain_left,
         "gain": fc.gain_per_1000, "plateau": fc.plateau, "settles": fc.entropy_settles, "h0": fc.entropy_start,
         "h": fc.entropy_now,
         "target": target_of(p)}
    evidence = {k: v[k] for k in ("ceiling", "observed", "consumed", "left", "gain", "plateau")} | {
        "ceiling_interval": [lo, hi], "a": fc.law.a, "b": fc.law.b, "explained": fc.law.explained,
        "threshold": {"near": p["near"], "target": target_of(p)}}
    span = (int(fc.observed_curve.steps[0]), fc.last_step) if fc.observed_curve is not None else None
    target = float(p["target"])
    if fc.law.ceiling < target:  # -inf, the default, is no target: every ceiling reaches it
        status: Status = "warn" if hi < target else "note"
        return [Outcome(status, "target" if status == "warn" else "target_maybe", v, span=span, metrics=metrics,
                        evidence=evidence)]
    if fc.gain_left is not None and fc.gain_left < p["near"] and fc.entropy_start is not None:
        onset = _near_since(view, fc.entropy_start, float(p["near"]))
        return [Outcome("note", "near", v, onset_step=onset, span=(onset, fc.last_step) if onset is not None else span,
                        metrics=metrics, evidence=evidence)]
    return [Outcome("ok", "ok", v, span=span, metrics=metrics, evidence=evidence)]


FUNCTIONS = {"entropy_ceiling": entropy_ceiling}
