"""Run every check on a Run and assemble the findings into a layered verdict.

Findings come in the reading order (docs/reading-rules.md#reading-order: the effect first, then stability,
then efficiency, then the data): first "did the model get better" (L5), then is it stable (L1), then is it
efficient (efficiency), then the data and the policy — policy behaviour (L2), the data's
learning signal (L3), exploration (L4) and reasoning quality (L6); inside a layer the worst
come first.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .catalog import load_catalog
from .checks import (
    FINDING_STATUSES,
    STATUS_RANK,
    VERDICT_STATUSES,
    WORST_FIRST,
    Check,
    Outcome,
    RunForecast,
    RunView,
    Status,
    forecast_params,
    load_checks,
    run_forecast,
    target_of,
)
from .checks.config import DiagnoseConfig
from .rollout import extreme_rollouts
from .run.run import Run
from .signals import median
from .story import Scale, Story, tell
from .words import Words, in_lang

if TYPE_CHECKING:
    from .rollout.analysis import RolloutAnalysis

__all__ = ["LAYER_NAMES", "READING_ORDER", "SPIKE_CHECKS", "Diagnosis", "Finding", "Headline", "Moment", "assemble",
           "diagnose", "with_rollouts"]

#: the dashboard's layers in reading order, and each one's question (en, zh): from ``[layers]`` in the catalog
READING_ORDER: tuple[str, ...] = load_catalog().reading_order
LAYER_NAMES: dict[str, tuple[str, str]] = {k: (v.en, v.zh) for k, v in load_catalog().layers.items()
                                           if k in READING_ORDER}
_SKIP = {
    "disabled": ("disabled in the config", "已在配置中关闭"),
    "family": ("applies to {families} runs; this run is {family}", "只适用于{families}，本次是{family}"),
    "needs": ("needs {missing}, which this run did not log", "需要 {missing}，本次训练没有记录"),
    # what a check needs said in words (``needs_text``): no space after 需要 before Chinese words
    "needs_text": ("needs {missing}, which this run did not log", "需要{missing}，本次训练没有记录"),
    "error": ("the check failed on this run: {error}", "该检查在本次训练上出错：{error}"),
    "few": ("this run logged {missing}, but too few usable values (steps, finite points) to judge",
            "本次训练记录了 {missing}，但可用的值（步数、有限值）太少，无法判断"),
}
#: how the needed metrics are joined in each language: the keys one of which is needed, and the needs
_JOIN = {"en": (" or ", ", "), "zh": (" 或 ", "，以及 ")}


def _keys(groups: Sequence[Sequence[str]]) -> dict[str, str]:
    """Needed metrics in both languages: ``[["a", "b"], ["c"]]`` reads ``a or b, c`` and ``a 或 b，以及 c``."""
    return {lang: needs.join(alts.join(g) for g in groups) for lang, (alts, needs) in _JOIN.items()}


@dataclass(frozen=True)
class Finding:
    """One result of one check, in both languages."""

    check: str
    layer: str
    status: Status
    title: Mapping[str, str]
    message: Mapping[str, str]
    advice: Mapping[str, str]
    metrics: tuple[str, ...] = ()
    onset_step: int | None = None
    span: tuple[int, int] | None = None
    evidence: Mapping[str, object] = field(default_factory=dict)
    #: steps of point events (spikes), each shown at its step; empty for a finding about a stretch
    points: tuple[int, ...] = ()
    #: which of its check's messages it is (``fail_early``, ``oom`` …): what was found, for the story's links
    template: str = ""

    def to_json(self) -> dict[str, object]:
        return {"check": self.check, "layer": self.layer, "status": self.status, "title": dict(self.title),
                "message": dict(self.message), "metrics": list(self.metrics), "onset_step": self.onset_step,
                "span": list(self.span) if self.span else None, "points": list(self.points),
                "template": self.template, "evidence": dict(self.evidence), "advice": dict(self.advice)}


@dataclass(frozen=True)
class Moment:
    """One event of the timeline: a warn/fail finding at its onset, and the finding that explains it (its
    index in :attr:`Diagnosis.findings`) with the mechanism in words; None for a root cause."""

    step: int
    finding: Finding
    caused_by: Finding | None = None
    because: Mapping[str, str] | None = None

    def to_json(self) -> dict[str, object]:
        return {"step": self.step, "check": self.finding.check, "status": self.finding.status,
                "caused_by": None if self.caused_by is None else self.caused_by.check,
                "because": None if self.because is None else dict(self.because)}


@dataclass(frozen=True)
class Headline:
    """What the diagnosis says first: the root cause — the worst finding nothing explains, one still going on
    before one the run got over, the one that explains the most of what followed — since when, and the one
    thing to do first (its advice); ``explains`` are the moments it caused, in step order."""

    finding: Finding
    onset_step: int
    explains: tuple[Moment, ...] = ()

    def to_json(self) -> dict[str, object]:
        f = self.finding
        return {"check": f.check, "status": f.status, "onset_step": self.onset_step, "title": dict(f.title),
                "message": dict(f.message), "advice": dict(f.advice),
                "explains": list(dict.fromkeys(m.finding.check for m in self.explains))}


@dataclass(frozen=True)
class Diagnosis:
    """All findings of one run with a verdict per layer and overall."""

    path: str
    verdict: Status
    layers: Mapping[str, Status]
    findings: tuple[Finding, ...]
    run: Run
    #: where the run will top out (the ceiling check's forecast); None when that check was not run
    forecast: RunForecast | None = None
    #: the findings' story: which explains which, and the root causes (:mod:`rlvitals.story`)
    story: Story = field(default_factory=lambda: Story((), ()))

    @property
    def timeline(self) -> tuple[Moment, ...]:
        """Every warn/fail finding at its onset, in step order, with the finding that explains it."""
        return tuple(self._moment(i) for i in range(len(self.story.events)))

    def _moment(self, index: int) -> Moment:
        event = self.story.events[index]
        cause = None if event.caused_by is None else self.findings[self.story.events[event.caused_by].finding]
        return Moment(event.step, self.findings[event.finding], cause,
                      None if event.link is None else event.link.words)

    def causes(self) -> tuple[Headline, ...]:
        """Each root cause with what it explains: the headline first, then the independent problems, worst
        first (a finding explained by another is under it, never beside it)."""
        return tuple(Headline(self.findings[self.story.events[r].finding], self.story.events[r].step,
                              tuple(self._moment(i) for i in self.story.consequences(r)))
                     for r in self.story.roots)

    @property
    def headline(self) -> Headline | None:
        """The root cause the diagnosis opens with; None when nothing needs action (a healthy run)."""
        found = self.causes()
        return found[0] if found else None

    def __repr__(self) -> str:
        """``<Diagnosis 'train.log': fail — L1 ok, L2 warn, … — 4 fail, 2 warn, 3 note>``"""
        layers = ", ".join(f"{layer} {self.layers[layer]}" for layer in READING_ORDER)
        counts = ", ".join(f"{n} {s}" for s in FINDING_STATUSES if (n := sum(f.status == s for f in self.findings)))
        return f"<Diagnosis {self.path!r}: {self.verdict} — {layers} — {counts or 'no finding'}>"

    def _repr_html_(self) -> str:
        """What a notebook shows: the verdict, each layer's verdict, and the findings worst first."""
        rows = "".join(f"<tr><td>{html.escape(LAYER_NAMES[layer][0])}</td><td><b>{self.layers[layer]}</b></td></tr>"
                       for layer in READING_ORDER)
        found = sorted((f for f in self.findings if f.status in FINDING_STATUSES),
                       key=lambda f: -STATUS_RANK[f.status])
        items = "".join(f"<li><b>{f.status}</b> {html.escape(f.title['en'])}"
                        f"{f' (since step {f.onset_step})' if f.onset_step is not None else ''}: "
                        f"{html.escape(f.message['en'])}</li>" for f in found)
        return (f"<div><p><b>{html.escape(self.path)}</b>: verdict <b>{self.verdict}</b></p>"
                f"<table>{rows}</table><ul>{items}</ul></div>")

    def to_json(self) -> dict[str, object]:
        layers = {}
        for layer in READING_ORDER:
            mine = [f for f in self.findings if f.layer == layer]
            layers[layer] = {"verdict": self.layers[layer], "name": LAYER_NAMES[layer][0],
                             "counts": {s: sum(f.status == s for f in mine)
                                        for s in WORST_FIRST}}
        headline = self.headline
        return {"path": self.path, "framework": self.run.framework, "algorithm": self.run.algorithm,
                "steps": int(len(self.run.train_steps)), "verdict": self.verdict,
                "headline": None if headline is None else headline.to_json(),
                "timeline": [m.to_json() for m in self.timeline], "layers": layers,
                "findings": [f.to_json() for f in self.findings],
                "forecast": None if self.forecast is None else self.forecast.to_json()}


class _Safe(dict[str, Any]):
    """A template's values: a missing one shows as ``{name}``."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _format(template: str, values: Mapping[str, Any]) -> str:
    """Fill a message template; a missing value shows as ``{name}`` instead of failing."""
    try:
        return template.format_map(_Safe(values))
    except (ValueError, TypeError, IndexError):
        return template


def _finding(check: Check, out: Outcome) -> Finding:
    def words(lang: str) -> str:
        text = check.text(lang)
        template = text.messages.get(out.template) or text.messages.get(out.status, "")
        # a value said in words (a forecast's reason) is said in the message's language
        values = {k: in_lang(v, lang) if isinstance(v, Words) else v for k, v in out.values.items()}
        return _format(template, {**check.params, **values})

    template = out.template if out.template in check.en.messages else out.status
    return Finding(check.id, check.layer, out.status, {"en": check.en.title, "zh": check.zh.title},
                   {"en": words("en"), "zh": words("zh")},
                   {"en": check.en.advice_for(template), "zh": check.zh.advice_for(template)},
                   out.metrics or tuple(k for alts in check.needs for k in alts[:1]), out.onset_step, out.span,
                   dict(out.evidence), tuple(out.points), template)


def _skipped(check: Check, reason: str, **values: Any) -> Finding:
    """A skipped finding; a value is one string or its words per language (``{"en": …, "zh": …}``)."""
    def said(lang: str) -> dict[str, Any]:
        return {k: v[lang] if isinstance(v, Mapping) else v for k, v in values.items()}

    en, zh = _SKIP[reason]
    return Finding(check.id, check.layer, "skipped", {"en": check.en.title, "zh": check.zh.title},
                   {"en": _format(en, said("en")), "zh": _format(zh, said("zh"))}, {"en": "", "zh": ""},
                   tuple(k for alts in check.needs for k in alts[:1]))


def _missing(view: RunView, check: Check) -> tuple[list[list[str]], list[list[str]]]:
    """The needed metrics the run did not log at all, and those it logged too few usable times (each
    need as the keys any one of which would do)."""
    absent: list[list[str]] = []
    short: list[list[str]] = []
    for alts in check.needs:
        if view.first(*alts, min_points=check.min_points) is not None:
            continue
        logged = [k for k in alts if view.series(k, min_points=1) is not None or k in view.run.frame.columns]
        (short if logged else absent).append(logged or list(alts))
    return absent, short


def _run_check(view: RunView, check: Check, params: Mapping[str, Any], cap: Status | None) -> list[Finding]:
    # an unrecognised algorithm gets every check whose metrics it logged
    if check.families and view.family != "unknown" and view.family not in check.families:
        catalog = load_catalog()
        return [_skipped(check, "family", family={lang: catalog.family_name(view.family, lang) for lang in _JOIN},
                         families={lang: "/".join(catalog.family_name(f, lang) for f in check.families)
                                   for lang in _JOIN})]
    absent, short = _missing(view, check)
    if absent:
        return [_skipped(check, "needs", missing=_keys(absent))]
    if short:
        return [_skipped(check, "few", missing=_keys(short))]
    try:
        outcomes = check.fn(view, params)
    except Exception as exc:  # a bug in one check must not hide the others' findings
        return [_skipped(check, "error", error=f"{type(exc).__name__}: {exc}")]
    if not outcomes:
        if check.needs_text or not check.needs:
            return [_skipped(check, "needs_text", missing={"en": check.needs_text or "data",
                                                           "zh": check.needs_text_zh or "足够的数据"})]
        present = [view.first(*alts, min_points=check.min_points) for alts in check.needs]
        return [_skipped(check, "few", missing=_keys([[s.key] for s in present if s is not None]))]
    found = []
    for out in outcomes:
        if cap is not None and STATUS_RANK[out.status] > STATUS_RANK[cap]:
            # the words still say what was found; only the severity is capped (an "ok" or "note" template of
            # the check describes another finding: a spike too small to matter, not this one capped)
            template = cap if cap in VERDICT_STATUSES and cap in check.en.messages else out.template
            out = Outcome(cap, template, out.values, out.onset_step, out.span, out.metrics, out.evidence, out.points)
        found.append(_finding(check, out))
    return found


def _worst(statuses: list[Status]) -> Status:
    """The verdict of some findings: the worst ``fail``/``warn``, else ``ok`` when anything was judged
    (a note is advice, not a verdict), else ``skipped``."""
    real = [s for s in statuses if s != "skipped"]
    if not real:
        return "skipped"
    judged = [s for s in real if s in VERDICT_STATUSES]
    return max(judged, key=lambda s: STATUS_RANK[s]) if judged else "ok"


def assemble(run: Run, findings: list[Finding], forecast: RunForecast | None = None) -> Diagnosis:
    """``findings`` of ``run`` in the reading order (worst first inside a layer, then by onset),
    with the verdict of each layer and of the run.

    Example:
        >>> from rlvitals import load
        >>> run = load("run.log")[0]  # doctest: +SKIP
        >>> assemble(run, [f for f in diagnose(run).findings if f.layer == "L1"]).verdict  # doctest: +SKIP
        'warn'
    """
    order = {layer: i for i, layer in enumerate(READING_ORDER)}
    findings = sorted(findings, key=lambda f: (order[f.layer], -STATUS_RANK[f.status],
                                               f.onset_step if f.onset_step is not None else 1 << 62))
    layers = {layer: _worst([f.status for f in findings if f.layer == layer]) for layer in READING_ORDER}
    story = tell(findings, _scale(run), _resolutions(run, findings))
    return Diagnosis(run.path, _worst(list(layers.values())), layers, tuple(findings), run, forecast, story)


def _cadence(steps: Any) -> int:
    """The usual number of steps between two logged values (1 for fewer than two); ``steps`` ascending, as a
    run's series and frames hold them."""
    gaps = np.diff(np.asarray(steps))
    return max(1, int(median(gaps))) if len(gaps) else 1


def _scale(run: Run) -> Scale:
    steps = run.train_steps
    if not len(steps):
        return Scale(0, 0)
    return Scale(int(steps[0]), int(steps[-1]), _cadence(steps))


def _resolutions(run: Run, findings: Sequence[Finding]) -> list[int]:
    """Per finding, the steps between two values of what it read: its metrics' logging interval, a
    validation source's evaluation interval (``source/label`` keys), else the run's cadence."""
    known: dict[str, int] = {}

    def of(key: str) -> int:
        if key not in known:
            source = key.split("/", 1)[0]
            if key in run.frame.columns:
                known[key] = _cadence(run.series(key)[0])
            elif source in run.validation:
                known[key] = _cadence(run.validation[source]["step"].to_numpy())
            else:
                known[key] = 1
        return known[key]

    # only the story's events need one: a passed or skipped finding is never linked
    return [max((of(k) for k in f.metrics), default=1) if f.status in VERDICT_STATUSES else 1 for f in findings]


#: the most threads the checks of one run are spread over: a check's work on a long run is polars' and
#: numpy's, which let go of the interpreter lock, so two cores judge a 100k-step run in about 0.6 of the time
MAX_THREADS = 4


def _threads() -> int:
    """The cores this process may use, at most :data:`MAX_THREADS`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(MAX_THREADS, cores))


def diagnose(run: Run, config: DiagnoseConfig | None = None, checks: Sequence[Check] | None = None, *,
             threads: int | None = None, downstream: Run | None = None) -> Diagnosis:
    """Every check on ``run`` (or only ``checks``); disabled, inapplicable and data-less checks are
    reported as skipped with the reason, never left out.

    The checks run side by side in ``threads`` threads (default: the usable cores, at most
    :data:`MAX_THREADS`; 1 runs them one after another here). A check only reads the run, so the
    findings are the same, in the same order, however many threads judged them. ``downstream``: the policy run a
    reward model (``run``) judged, read against it by ``rm_downstream``."""
    config = config or DiagnoseConfig()
    view = RunView(run, downstream)
    chosen = tuple(load_checks() if checks is None else checks)

    def judge(check: Check) -> list[Finding]:
        settings = config.for_check(check.id)
        if not settings.enabled:
            return [_skipped(check, "disabled")]
        return _run_check(view, check, {**check.params, **settings.params}, settings.max_status)

    n = _threads() if threads is None else max(1, threads)
    if n == 1 or len(chosen) < 2:
        results = [judge(check) for check in chosen]
    else:
        with ThreadPoolExecutor(min(n, len(chosen)), thread_name_prefix="rlvitals-check") as pool:
            results = list(pool.map(judge, chosen))
    return assemble(run, [finding for found in results for finding in found], _forecast(view, chosen, config))


def _forecast(view: RunView, chosen: Sequence[Check], config: DiagnoseConfig) -> RunForecast | None:
    """The run's forecast with the ceiling check's settings (the one it judged, shared through the view), or
    None when that check was not among those run."""
    check = next((c for c in chosen if c.id == "entropy_ceiling"), None)
    if check is None:
        return None
    params = {**check.params, **config.for_check(check.id).params}
    return replace(run_forecast(view, forecast_params(params)), target=target_of(params))


#: checks whose findings are point events at steps (``evidence["spike_steps"]``) that the rollouts of those steps
#: may explain: a gradient spike usually matches an extreme-reward rollout (docs/reading-rules.md#grad-norm-spike)
SPIKE_CHECKS = ("grad_norm_spike",)
#: the spike steps whose rollouts are named, at most
SPIKE_STEPS = 8


def with_rollouts(d: Diagnosis, rollouts: RolloutAnalysis) -> Diagnosis:
    """``d`` with each spike finding (:data:`SPIKE_CHECKS`) tied to the rollouts of its steps: its evidence gains
    ``spike_rollouts``, for each of its first :data:`SPIKE_STEPS` spike steps that has rollouts, the rollouts at
    the extremes of advantage, reward and length (:func:`~rlvitals.rollout.extremes.extreme_rollouts`: step,
    group, sample, reward, advantage, group z, length, the group's size and mean reward, why). A spike step
    without rollouts is left out; a diagnosis with nothing to tie is returned as it is.

    Example:
        >>> from rlvitals.rollout.analysis import analyze_rollouts
        >>> d = with_rollouts(diagnose(run), analyze_rollouts("rollouts/"))  # doctest: +SKIP
    """
    have = set(rollouts.rollout_steps())
    wanted = [[s for s in _steps(f.evidence.get("spike_steps")) if s in have][:SPIKE_STEPS]
              if f.check in SPIKE_CHECKS and f.status in FINDING_STATUSES else [] for f in d.findings]
    steps = sorted({s for mine in wanted for s in mine})
    if not steps:
        return d
    table = rollouts.table_at(steps)
    picked = {s: extreme_rollouts(table, s) for s in steps}
    findings = tuple(replace(f, evidence={**f.evidence, "spike_rollouts": [r for s in mine for r in picked[s]]})
                     if mine else f for f, mine in zip(d.findings, wanted, strict=True))
    return replace(d, findings=findings)


def _steps(value: object) -> list[int]:
    return [int(s) for s in value] if isinstance(value, (list, tuple)) else []
