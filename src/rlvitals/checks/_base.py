"""The check contract: a record from ``checks.toml`` plus one function.

A check function receives a :class:`RunView` (canonical series of one run, training steps
only, finite values) and its parameters, and returns :class:`Outcome`s: a status, the
template to phrase it with, the numbers for that template, onset and span in steps, and
evidence. Words live in ``checks.toml`` (English and Chinese); functions only compute.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..run.run import Run

#: ``fail`` broken or burning compute now; ``warn`` at risk, act soon; ``note`` could be better (shown with
#: its advice, never part of a verdict); ``ok`` judged and fine; ``skipped`` could not judge (with the reason)
Status = Literal["ok", "note", "warn", "fail", "skipped"]
#: every status from the most to the least severe; ``skipped`` (could not judge) ranks below ``ok``
WORST_FIRST: tuple[Status, ...] = ("fail", "warn", "note", "ok", "skipped")
STATUS_RANK: dict[str, int] = {s: len(WORST_FIRST) - 2 - i for i, s in enumerate(WORST_FIRST)}
#: the statuses a finding is listed with, worst first (the rest are checks that passed or were skipped)
FINDING_STATUSES: tuple[Status, ...] = WORST_FIRST[:3]
#: the statuses a verdict is made of: a run whose worst finding is a note is ``ok``
VERDICT_STATUSES: tuple[Status, ...] = ("fail", "warn")
#: fewer logged points than this and a series is treated as absent
MIN_POINTS = 5


@dataclass(frozen=True)
class Series:
    """One canonical metric over training steps (finite values only)."""

    key: str
    steps: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return len(self.values)

    def step(self, index: int) -> int:
        return int(self.steps[index])

    def span(self, start: int, end: int) -> tuple[int, int]:
        return int(self.steps[start]), int(self.steps[end])

    def after(self, step: int) -> Series:
        keep = self.steps >= step
        return Series(self.key, self.steps[keep], self.values[keep])

    def aligned(self, other: Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(steps, self values, other values)`` at the steps both logged."""
        a, b = self.steps, other.steps
        if len(a) == len(b) and (a is b or np.array_equal(a, b)) and bool((a[1:] > a[:-1]).all()):
            # one run's series mostly share their steps (rising, each once): what the intersection gives
            return a.copy(), self.values.copy(), other.values.copy()
        common, ia, ib = np.intersect1d(a, b, return_indices=True)
        return common, self.values[ia], other.values[ib]


_MISSING = object()


class RunView:
    """What checks may read of a run: canonical series, the algorithm family and the config."""

    def __init__(self, run: Run, downstream: Run | None = None) -> None:
        self.run = run
        #: the policy run a reward model (this run) judged, when given (``diagnose --downstream``): what the
        #: reward model's accuracy bought downstream is read against it (checks ``rm_downstream``)
        self.downstream = RunView(downstream) if downstream is not None else None
        self.family = run.family
        self.algorithm = run.algorithm
        self.config = run.config
        #: steps at the start of the run that this view does not hold (the last steps of a long run)
        self.cut = run.cut
        self._cache: dict[str, Series | None] = {}
        self._derived: dict[Hashable, object] = {}
        self._derived_lock = threading.Lock()
        self._shared: dict[Hashable, object] = {}

    def series(self, key: str, min_points: int = MIN_POINTS) -> Series | None:
        """The training-step series of ``key`` with non-finite values dropped, or None when
        the run logged it fewer than ``min_points`` times."""
        if key not in self._cache:
            if key not in self.run.frame.columns:
                self._cache[key] = None
            else:
                steps, values = self.run.series(key, finite=True)
                self._cache[key] = Series(key, steps, values)
        found = self._cache[key]
        return found if found is not None and len(found) >= min_points else None

    def first(self, *keys: str, min_points: int = MIN_POINTS) -> Series | None:
        """The first of ``keys`` that the run logged."""
        for key in keys:
            found = self.series(key, min_points)
            if found is not None:
                return found
        return None

    def metrics(self) -> list[str]:
        return self.run.metrics

    def derived(self, key: Hashable, make: Callable[[], object]) -> object:
        """``make()`` computed once per view and ``key`` and shared: a result several checks and the
        diagnosis read (the run's forecast). Checks judge in threads, so the first caller computes it and
        the others wait for it."""
        with self._derived_lock:
            if key not in self._derived:
                self._derived[key] = make()
            return self._derived[key]

    def validation(self) -> dict[str, Any]:
        return self.run.validation

    def shared(self, key: Hashable, make: Callable[[], object]) -> object:
        """``make()`` kept per view and ``key`` without a lock: a pure result several checks read (the
        validation tracks), cheap enough that two threads racing for it may both compute it, and safe to ask
        for inside :meth:`derived`'s ``make`` (which holds its lock)."""
        found = self._shared.get(key, _MISSING)
        if found is _MISSING:
            found = self._shared.setdefault(key, make())
        return found


@dataclass(frozen=True)
class Outcome:
    """What a check found. ``template`` names the message in checks.toml (usually the status);
    ``values`` fill its placeholders; ``evidence`` is machine-readable (value, baseline,
    threshold, peak …)."""

    status: Status
    template: str
    values: Mapping[str, Any] = field(default_factory=dict)
    onset_step: int | None = None
    span: tuple[int, int] | None = None
    metrics: tuple[str, ...] = ()
    evidence: Mapping[str, Any] = field(default_factory=dict)
    #: the steps of point events (spikes): shown at those steps, not as one span from first to last
    points: tuple[int, ...] = ()


CheckFn = Callable[[RunView, Mapping[str, Any]], list[Outcome]]


@dataclass(frozen=True)
class Text:
    title: str
    messages: Mapping[str, str]
    advice: str
    #: advice for particular templates (``advice_<template>`` in checks.toml): what to change depends on
    #: what was found, so a template with its own advice never shows the general one
    advices: Mapping[str, str] = field(default_factory=dict)

    def advice_for(self, template: str) -> str:
        return self.advices.get(template, self.advice)


@dataclass(frozen=True)
class Check:
    """One diagnosis: id, layer, the metrics it needs (each entry: any one of these keys),
    the algorithm families it applies to, default parameters, words, and its function."""

    id: str
    layer: str
    needs: tuple[tuple[str, ...], ...]
    families: tuple[str, ...]
    params: Mapping[str, Any]
    en: Text
    zh: Text
    fn: CheckFn
    #: the anchors of the entries of docs/reading-rules.md the check applies (checks.toml ``rule``): the rule in the
    #: project's words, its numbers and where it comes from
    rule: tuple[str, ...] = ()
    #: what to say is missing when ``needs`` cannot name single metrics (validation series, probes), in
    #: English and in Chinese (``needs_text`` and ``needs_text_zh`` in checks.toml: both or neither)
    needs_text: str = ""
    needs_text_zh: str = ""
    #: an abrupt event read against a window of recent steps: the last steps of a run show it as the
    #: whole run does, so ``watch`` may read it on those alone between full diagnoses (checks.toml ``sudden``)
    sudden: bool = False
    #: what it finds, later steps cannot undo (a value went NaN): ``watch`` alerts it without waiting for it to
    #: hold (checks.toml ``final``)
    final: bool = False
    #: read from how the log ends (a traceback): only output flushed after it can change it, so ``watch``
    #: alerts it once the log stopped growing (checks.toml ``when_quiet``)
    when_quiet: bool = False
    #: fewer logged points of a needed metric than this and the check is skipped (checks.toml ``min_points``):
    #: a few values suffice where the evidence is absolute (a response length of two tokens)
    min_points: int = MIN_POINTS

    def text(self, lang: str) -> Text:
        return self.zh if lang == "zh" else self.en
