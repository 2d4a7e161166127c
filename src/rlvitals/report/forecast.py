"""The forecast in the report (and the dashboard, which serves the report's page): per run, where the
entropy–performance law says the run tops out, drawn as the logged points, the law over the logged steps,
the forecast into later steps with its 95 % band, and the ceiling with its interval — or why there is none.
Nothing is fitted here: the numbers are the diagnosis' :class:`~rlvitals.checks.ceiling.RunForecast`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..diagnosis import Diagnosis
from ..forecast import Forecast
from .charts import Page, trace

__all__ = ["forecast_section"]

#: the words of a forecast chart's lines (English, Chinese)
ROLES = {"observed": ("{metric} (logged)", "{metric}（记录值）"), "fitted": ("the law", "定律"),
         "future": ("forecast", "预测"), "hi": ("95 % band", "95% 区间"), "lo": ("95 % band", "95% 区间")}


def _traces(page: Page, rid: str, fc: Forecast) -> list[dict[str, Any]]:
    parts = [("observed", fc.observed_curve), ("fitted", fc.fitted), ("future", fc.future)]
    out = []
    for role, curve in parts:
        if curve is None or not len(curve.steps):
            continue
        en, zh = ROLES[role]
        t = trace(en.format(metric=fc.metric), rid, fc.metric, curve.steps, curve.values, page.buckets)
        out.append(t | {"role": role, "name_zh": zh.format(metric=fc.metric)})
    if fc.future is not None and len(fc.future.lo):
        for role, values in (("hi", fc.future.hi), ("lo", fc.future.lo)):
            t = trace(ROLES[role][0], rid, fc.metric, fc.future.steps, values, page.buckets)
            out.append(t | {"role": role, "name_zh": ROLES[role][1]})
    return out


def _chart(page: Page, rid: str, fc: Forecast) -> str:
    """A forecast chart: its lines, and the ceiling with its interval (a line and a band across it)."""
    assert fc.law is not None  # only a forecast that holds is drawn
    cid = page.add([fc.metric], _traces(page, rid, fc), kind="forecast",
                   title={"en": f"{fc.metric}: forecast", "zh": f"{fc.metric}：预测"})
    lo, hi = fc.law.ceiling_interval
    page.charts[cid]["ceiling"] = {"value": _round(fc.law.ceiling), "lo": _round(lo), "hi": _round(hi)}
    return cid


def _round(x: float) -> float | None:
    return float(f"{x:.6g}") if np.isfinite(x) else None


def _said(fc: dict[str, Any]) -> dict[str, str]:
    """The forecast in a sentence, in both languages."""
    if fc["ceiling"] is None:
        reason = fc["reason"] or {"en": "", "zh": ""}
        return {"en": f"No forecast: {reason['en']}.", "zh": f"无法预测：{reason['zh']}。"}
    lo, hi = fc["ceiling_interval"]
    kind_zh = "验证集" if fc["kind"] == "validation" else "训练 reward"
    en = (f"{fc['metric']} ({fc['kind']}) heads for a ceiling of {fc['ceiling']:.3g} (95 % interval {lo:.3g}–{hi:.3g}) "
          f"at zero entropy; it is at {fc['observed']:.3g} now, {fc['entropy_consumed']:.0%} of its entropy is spent "
          f"and {fc['gain_left']:.0%} of the attainable gain is left; left as it is, it tops out near "
          f"{fc['plateau']:.3g}, and the next 1,000 steps buy about {fc['gain_per_1000']:+.2g}.")
    zh = (f"{fc['metric']}（{kind_zh}）在熵为 0 时的天花板为 {fc['ceiling']:.3g}（95% 区间 {lo:.3g}–{hi:.3g}）；"
          f"目前为 {fc['observed']:.3g}，熵已用掉 {fc['entropy_consumed']:.0%}，"
          f"可获得的提升还剩 {fc['gain_left']:.0%}；"
          f"照现在这样会止步于 {fc['plateau']:.3g} 左右，接下来 1000 步大约能带来 {fc['gain_per_1000']:+.2g}。")
    if fc["target"] is not None:
        below = fc["below_target"]
        en += f" The target {fc['target']:.3g} is {'out of reach' if below else 'within reach'}."
        zh += f"目标 {fc['target']:.3g}{'达不到' if below else '够得着'}。"
    return {"en": en, "zh": zh}


def forecast_section(page: Page, diagnoses: Sequence[tuple[str, Diagnosis]]) -> list[dict[str, Any]]:
    """Per run with a forecast: its JSON (``diagnose --json``'s ``forecast``) and its chart id (None when
    the law does not hold, and ``reason`` says why)."""
    out = []
    for rid, d in diagnoses:
        if d.forecast is None:
            continue
        primary = d.forecast.primary
        summary = d.forecast.to_json()
        chart = _chart(page, rid, primary) if primary is not None and primary.holds else None
        entry = {k: summary[k] for k in ("metric", "kind", "ceiling", "ceiling_interval", "observed", "entropy_start",
                                          "entropy_now", "entropy_consumed", "gain_left", "plateau", "gain_per_1000",
                                          "target", "below_target", "reason")}
        out.append({"run": rid, "label": page.labels[rid], "chart": chart, **entry, "said": _said(entry)})
    return out
