"""What ``rlvitals rollouts`` prints: per-step tables of the group and rollout scales, the rollouts by data
source, the length reading, and what the reader skipped and could not compute."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from ..words import in_lang, translated
from .console import WIDTH, console
from .said import ENGLISH_ORIGINAL, said
from .table import Col, Get, missing, print_table

__all__ = ["render_rollouts"]

#: the titles of the tables and the other words of the view, per language
_WORDS = {
    "en": {"group": "group scale", "sigma": "σ_G across groups", "rollout": "rollout scale", "source": "by data source",
           "all": "all",
           "skipped": "  [red]skipped[/] {n} line(s) or row(s) of the input:", "more": "    … and {n} more",
           "not computed": "not computed", "note": "note", "shape": "σ_G across the groups, all steps: {reading}",
           "length": "length × correctness, all steps: {reading} (within-group Spearman {corr:.3g} over {groups} "
                     "groups; |ρ| ≤ {tol:g} reads as no change); correct by length quartile, shortest first: {q}"},
    "zh": {"group": "组尺度", "sigma": "组间 σ_G 分布", "rollout": "rollout 尺度", "source": "按数据来源",
           "all": "全部",
           "skipped": "  [red]跳过[/]了输入中的 {n} 行：", "more": "    …… 另有 {n} 行",
           "not computed": "没有算出", "note": "说明", "shape": "组间 σ_G 分布（全部步）：{reading}",
           "length": "长度与正确率（全部步）：{reading}（组内 Spearman 相关系数 {corr:.3g}，基于 {groups} 组；"
                     "|ρ| ≤ {tol:g} 视为无明显变化）；按长度四分位从短到长的正确率：{q}"},
}
_SHAPES = {"en": {"at_zero": "at 0", "spread": "spread", "bimodal": "bimodal"},
           "zh": {"at_zero": "集中在 0", "spread": "分散", "bimodal": "双峰"}}
_READING = {"en": {"longer_more_correct": "longer ✓", "longer_less_correct": "longer ✗", "no_change": "no change"},
            "zh": {"longer_more_correct": "越长越对", "longer_less_correct": "越长越错", "no_change": "无明显变化"}}


def _kmax(rows: Sequence[Mapping[str, Any]], ks: Sequence[int]) -> int:
    """The largest k with a pass@k somewhere: pass@16 of groups of 8 is empty everywhere."""
    have = [k for k in ks if any(not missing(r["pass@k"].get(str(k))) for r in rows)]
    return max(have) if have else max(ks)


def _metric(key: str) -> Get:
    return lambda r: r["metrics"].get(key)


def _group_columns(kmax: int) -> list[Col]:
    k = str(kmax)
    cols = [
        Col("step", lambda r: r["step"], "text", header_zh="步"),
        Col("groups", lambda r: r["groups"], "int", header_zh="组数"),
        Col("rollouts", lambda r: r["rollouts"], "int", header_zh="rollout 数"),
        Col("σ_G", _metric("group/reward_std/mean")),
        Col("zero-var", lambda r: r["zero_variance"].get("share"), header_zh="零方差"),
        Col("all ✓", lambda r: r["zero_variance"].get("all_correct"), header_zh="全对"),
        Col("all ✗", lambda r: r["zero_variance"].get("all_wrong"), header_zh="全错"),
        Col("eff.batch", _metric("group/effective_batch"),
            legend="eff.batch = share of rollouts in groups whose rewards vary", header_zh="有效批",
            legend_zh="有效批 = 组内 reward 有差异的那些组所含 rollout 的占比"),
        Col("pass@1", lambda r: r["pass@k"].get("1")),
    ]
    if kmax > 1:
        cols += [
            Col(f"pass@{k}", lambda r: r["pass@k"].get(k)),
            Col(f"gap@{k}", lambda r: r["pass_gap@k"].get(k), legend=f"gap@{k} = pass@{k} − pass@1"),
            Col(f"maj@{k}", lambda r: r["maj@k"].get(k)),
            Col(f"sc-gap@{k}", _metric(f"reasoning/self_consistency_gap@{k}"),
                legend=f"sc-gap@{k} = maj@{k} − pass@1 (self-consistency)",
                legend_zh=f"sc-gap@{k} = maj@{k} − pass@1（自洽性差距）"),
        ]
    return cols


def _sigma(part: str, name: str) -> Get:
    return lambda r: (r.get("sigma_g") or {}).get(part, {}).get(name)


def _sigma_columns(lang: str) -> list[Col]:
    """σ_G across the step's groups: p10, p50, p90, the share of groups per band, the shape."""
    cols = [Col("step", lambda r: r["step"], "text", header_zh="步")]
    cols += [Col(q, _sigma("quantiles", q)) for q in ("p10", "p50", "p90")]
    cols += [Col("=0", _sigma("shares", "zero"), legend="=0 … 75-100 = share of groups with σ_G = 0, then by σ_G "
                 "as % of the largest the step's reward range allows (half of max − min)",
                 legend_zh="=0 … 75-100 = σ_G = 0 的组所占比例，然后按 σ_G 占该 step reward 区间所允许最大值"
                 "（最大值与最小值之差的一半）的百分比分档")]
    cols += [Col(b, _sigma("shares", b)) for b in ("0-25", "25-50", "50-75", "75-100")]
    cols.append(Col("shape", lambda r: _SHAPES[lang].get((r.get("sigma_g") or {}).get("shape") or ""), "text",
                    left=True, header_zh="形状"))
    return cols


def _sigma_line(overall: Mapping[str, Any], lang: str) -> str | None:
    got = overall.get("sigma_g")
    if not got:
        return None
    return _WORDS[lang]["shape"].format(reading=got["reading"]["zh" if lang == "zh" else "en"])


def _reading(lang: str) -> Get:
    def get(r: Mapping[str, Any]) -> str | None:
        got = r.get("length_reading")
        return None if not got or got["reading"] is None else _READING[lang][got["reading"]]
    return get


def _rollout_columns(tools: bool, lang: str = "en") -> list[Col]:
    cols = [
        Col("step", lambda r: r["step"], "text", header_zh="步"),
        Col("distinct-2", _metric("diversity/distinct_2")),
        Col("dup", _metric("diversity/duplicate_rate"), legend="dup = share of exact duplicate responses",
            header_zh="重复率", legend_zh="重复率 = 与别的回复完全相同的回复所占比例"),
        Col("edit", _metric("diversity/edit_distance"), legend="edit = mean normalised word edit distance",
            header_zh="编辑距离", legend_zh="编辑距离 = 按词计、归一化后的编辑距离均值"),
        Col("length×✓", _reading(lang), "text",
            legend="length×✓ = longer responses more (✓) or less (✗) often correct, within groups", left=True,
            header_zh="长度×✓", legend_zh="长度×✓ = 同一组内，更长的回复是更常答对还是更少答对"),
        Col("trunc", _metric("rollout/truncation_share"), legend="trunc = share truncated", header_zh="截断",
            legend_zh="截断 = 被截断的回复所占比例"),
        Col("think H", _metric("rollout/think_entropy/mean"), legend="think H = token entropy inside <think> (nats)",
            header_zh="思考段熵", legend_zh="思考段熵 = think 段内的 token 熵（nats）"),
    ]
    if tools:  # every response is scanned for tool-call tags, so 0.0 everywhere means "no tool calls"
        cols += [
            Col("tools", _metric("rollout/tool_calls/mean"), legend="tools = calls per rollout",
                header_zh="工具调用", legend_zh="工具调用 = 每个 rollout 的平均调用次数"),
            Col("at cap", _metric("rollout/tool_calls/at_cap"), header_zh="达上限"),
            Col("repeat", _metric("rollout/tool_calls/repeat_rate"), legend="repeat = share of repeated calls",
                header_zh="重复调用", legend_zh="重复调用 = 重复的调用所占比例"),
            Col("valid", _metric("rollout/tool_calls/valid_args"),
                legend="valid = share of calls whose arguments parse (and fit --tool-schema)",
                header_zh="参数合法", legend_zh="参数合法 = 参数能解析（并符合 --tool-schema）的调用所占比例"),
            Col("reads", _metric("rollout/tool_response/overlap"),
                legend="reads = share of a tool response's words the next reasoning uses",
                header_zh="读取输出", legend_zh="读取输出 = 工具响应中被下一段推理用到的词所占比例"),
        ]
    return cols


def _source_columns(first: Any, last: Any) -> list[Col]:
    cols = [
        Col("source", lambda r: r["source"], "text", left=True, header_zh="数据来源"),
        Col("pass@1", lambda r: r["all"].get("pass@1")),
        Col("score", lambda r: r["all"].get("score/mean"), header_zh="平均得分"),
        Col("id_gap", lambda r: r["all"].get("id_gap"),
            legend="id_gap = pass@1 of the in-distribution sources − the source's",
            legend_zh="id_gap = 分布内各数据来源的 pass@1 − 该来源的 pass@1"),
    ]
    if first != last:
        cols += [Col(f"pass@1 step {first}", lambda r: r["first"].get("pass@1"), header_zh=f"第 {first} 步 pass@1"),
                 Col(f"pass@1 step {last}", lambda r: r["last"].get("pass@1"), header_zh=f"第 {last} 步 pass@1")]
    return cols


def _print_sources(con: Console, doc: Mapping[str, Any], lang: str = "en") -> None:
    steps = doc["steps"]
    names = sorted({name for r in [*steps, doc["overall"]] for name in r["sources"]})
    if not names:
        return
    first, last = steps[0], steps[-1]
    rows = [{"source": name, "all": doc["overall"]["sources"].get(name, {}),
             "first": first["sources"].get(name, {}), "last": last["sources"].get(name, {})} for name in names]
    print_table(con, _WORDS[lang]["source"], rows, _source_columns(first["step"], last["step"]), lang)


def _length_line(overall: Mapping[str, Any], lang: str = "en") -> str | None:
    got = overall.get("length_reading")
    if not got or got["reading"] is None:
        return None
    quartiles = [overall["metrics"].get(f"rollout/correct_by_length/q{b}") for b in range(1, 5)]
    by_length = " ".join("–" if missing(q) else f"{q:.3g}" for q in quartiles)
    return _WORDS[lang]["length"].format(reading=_READING[lang][got["reading"]], corr=got["corr"],
                                         groups=got["groups"], tol=got["tol"], q=by_length)


def render_rollouts(doc: dict[str, Any], ks: tuple[int, ...], color: bool = False, width: int = WIDTH,
                    lang: str = "en") -> str:
    """Per-step rollout metrics at a glance: a group-scale table (counts, σ_G, zero-variance split,
    effective batch, pass@1 and at the largest k with a value pass@k, its gap, maj@k and the
    self-consistency gap), σ_G across the groups (its p10, p50, p90, the share of groups per band and the
    shape, with the whole table's shape in words below), a rollout-scale table (diversity, length ×
    correctness reading, truncation,
    tool calls when there are any), a per-source table when the rollouts have sources, then the
    overall length reading, the reader's skips, what was not computed and the notes. Columns with no
    value in any row are left out.

    >>> import rlvitals
    >>> from rlvitals.render.summary import rollout_summary
    >>> a = rlvitals.analyze_rollouts([{"step": 1, "prompt": "2+2", "response": r, "score": s}
    ...                                for r, s in (("4", 1.0), ("5", 0.0))], ks=(1, 2))
    >>> print(render_rollouts(rollout_summary(a, "x", (1, 2)), (1, 2)).splitlines()[2].rstrip())
     step  groups  rollouts    σ_G  zero-var  all ✓  all ✗  eff.batch  pass@1  pass@2  gap@2
    """
    buf = io.StringIO()
    con = console(buf, color, width)
    con.print(Text(doc["path"], style="bold"))
    words = _WORDS[lang]
    rows = [*doc["steps"], {**doc["overall"], "step": words["all"]}]
    print_table(con, words["group"], rows, _group_columns(_kmax(rows, ks)), lang)
    if any(r.get("sigma_g") for r in rows):
        print_table(con, words["sigma"], rows, _sigma_columns(lang), lang)
    tools = any((r["metrics"].get("rollout/tool_calls/mean") or 0) > 0 for r in rows)
    print_table(con, words["rollout"], rows, _rollout_columns(tools, lang), lang)
    if doc["steps"]:
        _print_sources(con, doc, lang)
    for line in (_length_line(doc["overall"], lang), _sigma_line(doc["overall"], lang)):
        if line:
            con.print(Padding(Text(line), (0, 0, 0, 2), expand=False))
    _print_log(con, doc, lang)
    return buf.getvalue()


def _print_log(con: Console, doc: Mapping[str, Any], lang: str) -> None:
    """The reader's skips, what was not computed and its notes; in Chinese the reader's English-only words
    are marked so and printed unwrapped (the terminal wraps them)."""
    words, zh = _WORDS[lang], lang == "zh"
    skipped = doc["skipped"]
    if skipped["count"]:
        con.print(words["skipped"].format(n=skipped["count"]), markup=True, highlight=False)
        for reason in skipped["reasons"]:
            shown = reason if not zh else in_lang(reason, "zh") if translated(reason) else ENGLISH_ORIGINAL + reason
            con.print(Text(f"    {shown}"), soft_wrap=zh)
        if skipped["count"] > len(skipped["reasons"]):
            con.print(Text(words["more"].format(n=skipped["count"] - len(skipped["reasons"]))))
    for line in doc["not_computed"]:
        con.print(Text("  ") + said(words["not computed"], line, lang, "dim"), soft_wrap=zh)
    for note in doc["notes"]:
        con.print(Text("  ") + said(words["note"], note, lang, "yellow"), soft_wrap=zh)
