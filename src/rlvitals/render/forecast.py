"""What ``rlvitals forecast`` prints for a run: the ceiling the entropy–performance law gives with its interval,
where the run is now, how much of its entropy and of the attainable gain is spent, what later steps buy, and
the fit behind it — or why there is no forecast — in English or Chinese. A pure function of the forecast's JSON
(``rlvitals forecast --json``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from rich.cells import cell_len

__all__ = ["render_forecast"]

_W = {
    "en": {"of": "forecast of {metric} ({kind}), read against {entropy}", "none": "no forecast: {reason}",
           "ceiling": "ceiling (at zero entropy)", "interval": "95 % interval {lo}–{hi}", "now": "now",
           "now_v": "{observed} as logged, {law} by the law", "entropy": "entropy",
           "entropy_v": "{h0} → {h} nats: {spent} spent, {left} of the attainable gain left",
           "settles": "left as it is",
           "settles_v": "the entropy settles near {h} nats: the run tops out near {plateau}",
           "next": "next 1,000 steps", "ahead": "predicted", "step": "step {s:>6}  {v:<6} 95 % {lo}–{hi}",
           "fit": "fit", "fit_v": "a = {a}, b = {b}; the law explains {explained} of how it moved ({n} points); "
                                  "fitted on the first half, it missed the end by {miss}",
           "target": "target {t}", "below": "below: the ceiling {c} does not reach it",
           "above": "within reach: the ceiling {c} is above it", "validation": "validation",
           "training reward": "training reward", "others": "other series", "declined": "no forecast",
           "ceiling_of": "ceiling {c} (95 % interval {lo}–{hi})"},
    "zh": {"of": "对 {metric}（{kind}）的预测，以 {entropy} 为依据", "none": "无法预测：{reason}",
           "ceiling": "天花板（熵为 0 时）", "interval": "95% 区间 {lo}–{hi}", "now": "当前",
           "now_v": "记录值 {observed}，按定律为 {law}", "entropy": "熵",
           "entropy_v": "{h0} → {h} nats：已用掉 {spent}，可获得的提升还剩 {left}",
           "settles": "照现在这样", "settles_v": "熵将稳定在 {h} nats 附近：这次训练会止步于 {plateau} 左右",
           "next": "接下来 1000 步", "ahead": "预测", "step": "第 {s:>6} 步  {v:<6} 95% {lo}–{hi}",
           "fit": "拟合", "fit_v": "a = {a}，b = {b}；定律解释了变化的 {explained}（{n} 个点）；"
                                  "只用前一半拟合时，对结尾的误差为 {miss}",
           "target": "目标 {t}", "below": "达不到：天花板 {c} 低于目标", "above": "够得着：天花板 {c} 高于目标",
           "validation": "验证集", "training reward": "训练 reward", "others": "其他序列", "declined": "无法预测",
           "ceiling_of": "天花板 {c}（95% 区间 {lo}–{hi}）"},
}


def _n(x: object, fmt: str = ".3g") -> str:
    return "—" if not isinstance(x, int | float) else format(x, fmt)


def _pct(x: object) -> str:
    return "—" if not isinstance(x, int | float) else f"{100 * x:.0f}%"


def _row(name: str, value: str) -> str:
    """A labelled line, the labels padded to one column by their width on screen (a Chinese character is two)."""
    return f"  {name}{' ' * max(1, 26 - cell_len(name))}{value}\n"


def _paren(text: str, lang: str) -> str:
    return f"（{text}）" if lang == "zh" else f" ({text})"


def _reason(entry: Mapping[str, Any], lang: str) -> str:
    reason = entry.get("reason") or {}
    return str(reason.get(lang) or reason.get("en") or "")


def _ahead(entry: Mapping[str, Any], w: Mapping[str, str]) -> str:
    """One line per future step: the forecast and its interval."""
    bands = cast(Mapping[str, Sequence[float]], entry.get("predicted_interval") or {})
    return "".join(_row(w["ahead"] if i == 0 else "", w["step"].format(
        s=s, v=_n(v), lo=_n(bands.get(s, (None, None))[0]), hi=_n(bands.get(s, (None, None))[1])))
        for i, (s, v) in enumerate(cast(Mapping[str, float], entry["predicted"]).items()))


def _held(entry: Mapping[str, Any], w: Mapping[str, str]) -> str:
    lo, hi = cast(Sequence[float], entry["ceiling_interval"])
    out = _row(w["ceiling"], f"{_n(entry['ceiling'])}   {w['interval'].format(lo=_n(lo), hi=_n(hi))}")
    out += _row(w["now"], w["now_v"].format(observed=_n(entry["observed"]), law=_n(entry["now"])))
    out += _row(w["entropy"], w["entropy_v"].format(h0=_n(entry["entropy_start"]), h=_n(entry["entropy_now"]),
                                                    spent=_pct(entry["entropy_consumed"]),
                                                    left=_pct(entry["gain_left"])))
    out += _row(w["settles"], w["settles_v"].format(h=_n(entry["entropy_settles"]), plateau=_n(entry["plateau"])))
    out += _row(w["next"], _n(entry["gain_per_1000"], "+.2g"))
    out += _ahead(entry, w)
    out += _row(w["fit"], w["fit_v"].format(a=_n(entry["a"]), b=_n(entry["b"]), explained=_pct(entry["explained"]),
                                            n=entry["points"], miss=_n(entry["backtest_error"], ".2g")))
    return out


def render_forecast(path: str, entry: Mapping[str, Any], lang: str = "en") -> str:
    """The forecast of the run at ``path`` (its ``rlvitals forecast --json`` entry) as text.

    >>> print(render_forecast("run.log", {"metric": None, "reason": {"en": "no entropy", "zh": "没有熵"},
    ...                                   "by_metric": []}), end="")
    run.log
      no forecast: no entropy
    """
    w = _W[lang]
    out = f"{path}\n"
    if entry.get("metric") is None:
        return out + f"  {w['none'].format(reason=_reason(entry, lang))}\n"
    kind = w.get(str(entry["kind"]), str(entry["kind"]))
    out += f"  {w['of'].format(metric=entry['metric'], kind=kind, entropy=entry['entropy_metric'])}\n"
    declined = f"  {w['none'].format(reason=_reason(entry, lang))}\n"
    out += _held(entry, w) if entry.get("ceiling") is not None else declined
    if entry.get("target") is not None and entry.get("ceiling") is not None:
        verdict = w["below" if entry.get("below_target") else "above"].format(c=_n(entry["ceiling"]))
        out += _row(w["target"].format(t=_n(entry["target"])), verdict)
    others = list(entry.get("by_metric", [])[1:])
    for other in others:
        colon = "：" if lang == "zh" else ": "
        said = (w["ceiling_of"].format(c=_n(other["ceiling"]), lo=_n(other["ceiling_interval"][0]),
                                       hi=_n(other["ceiling_interval"][1]))
                if other.get("ceiling") is not None else f"{w['declined']}{colon}{_reason(other, lang)}")
        kind = w.get(str(other["kind"]), str(other["kind"]))
        out += _row(w["others"] if other is others[0] else "", f"{other['metric']}{_paren(kind, lang)}{colon}{said}")
    return out
