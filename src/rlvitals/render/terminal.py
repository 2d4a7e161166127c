"""Terminal renderings: pure functions from result data to text (rich markup rendered)."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ..words import in_lang, translated
from .console import WIDTH, console
from .not_computed import render_not_computed

#: how the Chinese views mark a passage written in English only (the readers' notes and skip reasons, an
#: alias's note in the catalog), as the HTML report does
ENGLISH_ORIGINAL = "（英文原文）"


def zh_said(head: str, text: str) -> str:
    """``head：text`` in Chinese: the text's Chinese where it has one (:class:`~rlvitals.words.Words`), else the
    English, marked as the original (a message rlvitals did not write, such as a training's own exception).

    >>> from rlvitals.words import Words
    >>> zh_said("说明", Words("3 lines", "3 行")), zh_said("说明", "plain")
    ('说明：3 行', '说明（英文原文）：plain')
    """
    return f"{head}：{in_lang(text, 'zh')}" if translated(text) else f"{head}{ENGLISH_ORIGINAL}：{text}"


def _short(items: list[str], limit: int, lang: str = "en") -> str:
    sep = " · " if lang == "zh" else ", "  # spaces: rich wraps a key whole, never cuts it, as explain does
    if len(items) <= limit:
        return sep.join(items)
    more = f" ……（另 {len(items) - limit} 个）" if lang == "zh" else f", … (+{len(items) - limit} more)"
    return sep.join(items[:limit]) + more


#: the row names and words of ``inspect``, per language
_INSPECT = {
    "en": {"format": "format", "framework": "framework", "algorithm": "algorithm", "steps": "steps",
           "metrics": "metrics", "validation": "validation", "unmapped": "unmapped", "skipped": "skipped",
           "crash": "crash", "train": "{n} training steps", "span": ", {a} → {b}", "eval": "; {n} evaluation-only",
           "canonical": "{n} canonical: {keys}", "none logged": "none logged", "none": "none",
           "count": "{n}: {keys}", "records": "{n} records", "sep": "; ", "colon": ": ",
           "first": "before its first step", "after": "after step {n}",
           "died": "died {when} ({kind}): {said} ({where})",
           "skip": "  [yellow]skipped[/] ", "note": "  [yellow]note[/] "},
    "zh": {"format": "格式", "framework": "框架", "algorithm": "算法", "steps": "步数", "metrics": "指标",
           "validation": "验证集", "unmapped": "未映射", "skipped": "跳过", "crash": "崩溃",
           "train": "{n} 个训练步", "span": "，{a} → {b}", "eval": "；另有 {n} 步只有评估",
           "canonical": "{n} 个标准指标：{keys}", "none logged": "没有记录", "none": "无",
           "count": "{n} 个：{keys}", "records": "{n} 条记录", "sep": "；", "colon": "：",
           "first": "第一步之前", "after": "第 {n} 步之后",
           "died": "在{when}中断" + ENGLISH_ORIGINAL + "：{kind}，{said}（{where}）",
           "skip": "  [yellow]跳过[/]", "note": "  [yellow]说明[/]"},
}


def _inspect_rows(summary: dict[str, Any], lang: str) -> list[tuple[str, str]]:
    from ..catalog import load_catalog

    w = _INSPECT[lang]
    era = f" ({summary['framework_era']})" if summary.get("framework_era") else ""
    label = load_catalog().algorithm_label(summary["algorithm_label"], lang) if lang == "zh" else \
        summary["algorithm_label"]
    steps = w["train"].format(n=summary["steps"]) + (
        w["span"].format(a=summary["first_step"], b=summary["last_step"]) if summary["steps"] else "") + (
        w["eval"].format(n=summary["eval_only_steps"]) if summary["eval_only_steps"] else "")
    validation = w["sep"].join(f"{src}{w['colon']}{_short(cols, 4, lang)}"
                               for src, cols in summary["validation"].items())
    rows = [
        (w["format"], summary["format"]), (w["framework"], f"{summary['framework']}{era}"),
        (w["algorithm"], f"{label} [{summary['algorithm']}]"), (w["steps"], steps),
        (w["metrics"], w["canonical"].format(n=len(summary["metrics"]), keys=_short(summary["metrics"], 12, lang))),
        (w["validation"], validation or w["none logged"]),
        (w["unmapped"], w["count"].format(n=len(summary["unmapped"]), keys=_short(summary["unmapped"], 10, lang))
         if summary["unmapped"] else w["none"]),
        (w["skipped"], w["records"].format(n=summary["skipped"]["count"]) if summary["skipped"]["count"]
         else w["none"]),
    ]
    crash = summary.get("crash")
    if crash:
        when = w["first"] if crash["last_step"] is None else w["after"].format(n=crash["last_step"])
        said = f"{crash['exception']}: {crash['message']}" if crash["message"] else crash["exception"]
        rows.append((w["crash"], w["died"].format(when=when, kind=crash["kind"], said=said[:300],
                                                  where=crash["where"])))
    return rows


def render_inspect(summary: dict[str, Any], color: bool = False, width: int = WIDTH, lang: str = "en") -> str:
    """What ``rlvitals inspect`` prints about a run (``summary``: :func:`~.summary.run_summary`), in
    ``lang``; the readers' skip reasons, notes and a crash's message are English only, marked so in Chinese."""
    buf = io.StringIO()
    con = console(buf, color, width)
    con.print(Text(summary["path"], style="bold"))
    table = Table.grid(padding=(0, 2))
    table.add_column(style="cyan", no_wrap=True)
    table.add_column(overflow="fold")
    rows = _inspect_rows(summary, lang)
    w = _INSPECT[lang]
    # in Chinese a crash's English message is printed unwrapped after its mark (the terminal wraps it)
    crash = rows.pop() if lang == "zh" and rows[-1][0] == w["crash"] else None
    for name, value in rows:
        table.add_row(name, value)
    con.print(table)
    if crash is not None:
        pad = max(cell_len(name) for name, _ in rows) + 2 - cell_len(crash[0])
        con.print(Text(f"{crash[0]}{' ' * pad}{crash[1]}"), soft_wrap=True)
    for kind, texts in (("skip", summary["skipped"]["reasons"]), ("note", summary["notes"])):
        for text in texts:
            shown = escape(zh_said("", text)) if lang == "zh" else escape(text)
            con.print(w[kind] + shown, markup=True, highlight=False, soft_wrap=lang == "zh")
    return buf.getvalue()


def render_explain(info: dict[str, Any], color: bool = False, width: int = WIDTH, lang: str = "en") -> str:
    """What ``rlvitals explain`` prints: the metric's name, how the key was reached, its place in the
    layers and the multi-scale view, what it means and how to read it, its healthy range and course,
    what to check next and its aliases. ``info`` is :func:`~rlvitals.catalog.lookup.explain` in ``lang``."""
    if lang == "zh":
        return _explain_zh(info, color, width)
    buf = io.StringIO()
    con = console(buf, color, width)
    con.print(Text(f"{info['key']} — {info['name']}", style="bold"))
    for line in info["resolved"]:
        con.print(Text(f"  {line}", style="dim"))
    con.print(Text(f"layer {info['layer']} · scale {info['scale']} · over {info['axes']['scope']} · "
                   f"varies across {info['axes']['varies']} · measures {info['axes']['measures']}"
                   + (f" · unit {info['unit']}" if info["unit"] else "")))
    con.print()
    con.print(Text(info["meaning"]))
    con.print()
    con.print(Text(info["read"]))
    if info["healthy"]:
        lo, hi = info["healthy"]["low"], info["healthy"]["high"]
        con.print(Text(f"\nhealthy: {'' if lo is None else lo} … {'' if hi is None else hi}"))
    if info["direction"]:
        con.print(Text(f"over training: {info['direction']}"))
    if info["next"]:
        con.print(Text(f"check next: {', '.join(info['next'])}"))
    if info["aliases"]:
        names = [f"{a.get('name') or a.get('pattern')} ({a['framework']})" for a in info["aliases"]]
        con.print(Text(f"aliases: {', '.join(names)}", style="dim"))
    return buf.getvalue()


def _explain_zh(info: dict[str, Any], color: bool, width: int) -> str:
    from ..catalog import load_catalog

    catalog = load_catalog()
    axes = info["axes"]
    buf = io.StringIO()
    con = console(buf, color, width)
    con.print(Text(f"{info['key']} — {info['name']}", style="bold"))
    for line in info["resolved"]:  # an alias's note is English only: unwrapped, the terminal wraps it
        con.print(Text(f"  {line}", style="dim"), soft_wrap=ENGLISH_ORIGINAL in line)
    unit = catalog.units_zh.get(info["unit"], info["unit"])
    con.print(Text(f"所在层：{catalog.layers[info['layer']].short('zh')} · "
                   f"尺度：{catalog.words('axis', info['scale'], 'zh')} · "
                   f"统计范围：{catalog.words('axis', axes['scope'], 'zh')} · "
                   f"波动来源：{catalog.words('axis', axes['varies'], 'zh')} · "
                   f"衡量：{catalog.words('measures', axes['measures'], 'zh')}" + (f" · 单位：{unit}" if unit else "")))
    con.print()
    con.print(Text(info["meaning"]))
    con.print()
    con.print(Text(info["read"]))
    if info["healthy"]:
        lo, hi = info["healthy"]["low"], info["healthy"]["high"]
        con.print(Text(f"\n健康范围：{'' if lo is None else lo} … {'' if hi is None else hi}"))
    if info["direction"]:
        con.print(Text(f"正常走势：{catalog.words('direction', info['direction'], 'zh')}"))
    if info["next"]:
        con.print(Text(f"接着看：{' · '.join(info['next'])}"))  # spaces: a key is wrapped whole, never cut
    if info["aliases"]:
        names = [f"{a.get('name') or a.get('pattern')}（{'各框架通用' if a['framework'] == 'any' else a['framework']}）"
                 for a in info["aliases"]]
        con.print(Text(f"别名：{' · '.join(names)}", style="dim"))
    return buf.getvalue()


#: the headers of ``explain --list``
_LIST_HEADERS = {"en": ("layer", "scale", "key", "name"), "zh": ("层", "尺度", "指标", "名称")}


def render_list(rows: list[dict[str, str]], color: bool = False, width: int = WIDTH, lang: str = "en") -> str:
    """``explain --list``: every metric with its layer, scale and name (``rows`` of ``list_metrics(lang)``)."""
    from ..catalog import load_catalog

    catalog = load_catalog()
    buf = io.StringIO()
    con = console(buf, color, width)
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 1))
    for col in _LIST_HEADERS[lang]:
        table.add_column(col, overflow="fold")
    for row in sorted(rows, key=lambda r: (r["layer"], r["key"])):
        layer = catalog.layers[row["layer"]].short(lang).split()[0] if lang == "zh" else row["layer"]
        table.add_row(layer, catalog.words("axis", row["scale"], lang), row["key"], row["name"])
    con.print(table)
    return buf.getvalue()


#: a value getter over one row of ``rollouts --json`` and how to print it
_Get = Callable[[Mapping[str, Any]], Any]
_Kind = Literal["int", "num", "text"]


@dataclass(frozen=True)
class _Col:
    """A table column: header, value getter, kind, and a legend entry (shown when the column is)."""

    header: str
    get: _Get
    kind: _Kind = "num"
    legend: str = ""
    left: bool = False
    #: the header and the legend in Chinese (the English ones when not given: a key, a formula)
    header_zh: str = ""
    legend_zh: str = ""

    def words(self, lang: str) -> tuple[str, str]:
        """The header and the legend in ``lang``."""
        if lang == "zh":
            return self.header_zh or self.header, self.legend_zh or self.legend
        return self.header, self.legend


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _cell(v: Any, kind: _Kind) -> str:
    if _missing(v):
        return ""
    if kind == "text":
        return str(v)
    if kind == "int":
        return str(int(v))
    # gaps that are 0 in exact arithmetic come out as ±1e-17; printing those would read as a signal
    return "0" if abs(v) < 5e-13 else f"{v:.3g}"


#: the titles of ``rollouts``' tables and their words, per language
_TABLES = {"en": {"group": "group scale", "rollout": "rollout scale", "source": "by data source",
                  "continued": "{title}, continued", "all": "all"},
           "zh": {"group": "组尺度", "rollout": "rollout 尺度", "source": "按数据来源", "continued": "{title}（续）",
                  "all": "全部"}}


def _print_table(con: Console, title: str, rows: Sequence[Mapping[str, Any]], cols: Sequence[_Col],
                 lang: str = "en") -> None:
    """Print the columns that have a value in some row (the first always; nothing when no other has),
    split into several tables, each led by the first column, when one would not fit the width."""
    cells = [[_cell(c.get(r), c.kind) for c in cols] for r in rows]
    keep = [i for i, c in enumerate(cols) if i == 0 or any(row[i] for row in cells)]
    if len(keep) == 1:
        return
    heads = [c.words(lang) for c in cols]
    widths = {i: max(cell_len(heads[i][0]), *(cell_len(row[i]) for row in cells)) + 2 for i in keep}
    for part, chunk in enumerate(_fit(keep[1:], widths, con.width - widths[keep[0]])):
        table = Table(show_header=True, header_style="bold", box=None, padding=(0, 1))
        for i in (keep[0], *chunk):
            table.add_column(heads[i][0], justify="left" if cols[i].left else "right", no_wrap=True)
        for row in cells:
            table.add_row(*(row[i] for i in (keep[0], *chunk)))
        con.print(Text(title if part == 0 else _TABLES[lang]["continued"].format(title=title), style="bold"))
        con.print(table)
        legend = [heads[i][1] for i in chunk if heads[i][1]]
        if legend:
            con.print(Padding(Text(("；" if lang == "zh" else "; ").join(legend), style="dim"), (0, 0, 0, 2),
                              expand=False))


def _fit(columns: list[int], widths: Mapping[int, int], room: int) -> list[list[int]]:
    """``columns`` in order, cut into runs whose widths add up to at most ``room`` (one column per
    run at least: a column wider than the room is printed as it is, never folded)."""
    runs: list[list[int]] = [[]]
    used = 0
    for i in columns:
        if runs[-1] and used + widths[i] > room:
            runs.append([])
            used = 0
        runs[-1].append(i)
        used += widths[i]
    return runs


def _kmax(rows: Sequence[Mapping[str, Any]], ks: Sequence[int]) -> int:
    """The largest k with a pass@k somewhere: pass@16 of groups of 8 is empty everywhere."""
    have = [k for k in ks if any(not _missing(r["pass@k"].get(str(k))) for r in rows)]
    return max(have) if have else max(ks)


def _metric(key: str) -> _Get:
    return lambda r: r["metrics"].get(key)


def _group_columns(kmax: int) -> list[_Col]:
    k = str(kmax)
    cols = [
        _Col("step", lambda r: r["step"], "text", header_zh="步"),
        _Col("groups", lambda r: r["groups"], "int", header_zh="组数"),
        _Col("rollouts", lambda r: r["rollouts"], "int", header_zh="rollout 数"),
        _Col("σ_G", _metric("group/reward_std/mean")),
        _Col("zero-var", lambda r: r["zero_variance"].get("share"), header_zh="零方差"),
        _Col("all ✓", lambda r: r["zero_variance"].get("all_correct"), header_zh="全对"),
        _Col("all ✗", lambda r: r["zero_variance"].get("all_wrong"), header_zh="全错"),
        _Col("eff.batch", _metric("group/effective_batch"),
             legend="eff.batch = share of rollouts in groups whose rewards vary", header_zh="有效批",
             legend_zh="有效批 = 组内 reward 有差异的那些组所含 rollout 的占比"),
        _Col("pass@1", lambda r: r["pass@k"].get("1")),
    ]
    if kmax > 1:
        cols += [
            _Col(f"pass@{k}", lambda r: r["pass@k"].get(k)),
            _Col(f"gap@{k}", lambda r: r["pass_gap@k"].get(k), legend=f"gap@{k} = pass@{k} − pass@1"),
            _Col(f"maj@{k}", lambda r: r["maj@k"].get(k)),
            _Col(f"sc-gap@{k}", _metric(f"reasoning/self_consistency_gap@{k}"),
                 legend=f"sc-gap@{k} = maj@{k} − pass@1 (self-consistency)",
                 legend_zh=f"sc-gap@{k} = maj@{k} − pass@1（自洽性差距）"),
        ]
    return cols


_READING = {"en": {"longer_more_correct": "longer ✓", "longer_less_correct": "longer ✗", "no_change": "no change"},
            "zh": {"longer_more_correct": "越长越对", "longer_less_correct": "越长越错", "no_change": "无明显变化"}}


def _reading(lang: str) -> _Get:
    def get(r: Mapping[str, Any]) -> str | None:
        got = r.get("length_reading")
        return None if not got or got["reading"] is None else _READING[lang][got["reading"]]
    return get


def _rollout_columns(tools: bool, lang: str = "en") -> list[_Col]:
    cols = [
        _Col("step", lambda r: r["step"], "text", header_zh="步"),
        _Col("distinct-2", _metric("diversity/distinct_2")),
        _Col("dup", _metric("diversity/duplicate_rate"), legend="dup = share of exact duplicate responses",
             header_zh="重复率", legend_zh="重复率 = 与别的回复完全相同的回复所占比例"),
        _Col("edit", _metric("diversity/edit_distance"), legend="edit = mean normalised word edit distance",
             header_zh="编辑距离", legend_zh="编辑距离 = 按词计、归一化后的编辑距离均值"),
        _Col("length×✓", _reading(lang), "text",
             legend="length×✓ = longer responses more (✓) or less (✗) often correct, within groups", left=True,
             header_zh="长度×✓", legend_zh="长度×✓ = 同一组内，更长的回复是更常答对还是更少答对"),
        _Col("trunc", _metric("rollout/truncation_share"), legend="trunc = share truncated", header_zh="截断",
             legend_zh="截断 = 被截断的回复所占比例"),
    ]
    if tools:  # every response is scanned for tool-call tags, so 0.0 everywhere means "no tool calls"
        cols += [
            _Col("tools", _metric("rollout/tool_calls/mean"), legend="tools = calls per rollout",
                 header_zh="工具调用", legend_zh="工具调用 = 每个 rollout 的平均调用次数"),
            _Col("at cap", _metric("rollout/tool_calls/at_cap"), header_zh="达上限"),
            _Col("repeat", _metric("rollout/tool_calls/repeat_rate"), legend="repeat = share of repeated calls",
                 header_zh="重复调用", legend_zh="重复调用 = 重复的调用所占比例"),
        ]
    return cols


def _source_columns(first: Any, last: Any) -> list[_Col]:
    cols = [
        _Col("source", lambda r: r["source"], "text", left=True, header_zh="数据来源"),
        _Col("pass@1", lambda r: r["all"].get("pass@1")),
        _Col("score", lambda r: r["all"].get("score/mean"), header_zh="平均得分"),
        _Col("id_gap", lambda r: r["all"].get("id_gap"),
             legend="id_gap = pass@1 of the in-distribution sources − the source's",
             legend_zh="id_gap = 分布内各数据来源的 pass@1 − 该来源的 pass@1"),
    ]
    if first != last:
        cols += [_Col(f"pass@1 step {first}", lambda r: r["first"].get("pass@1"), header_zh=f"第 {first} 步 pass@1"),
                 _Col(f"pass@1 step {last}", lambda r: r["last"].get("pass@1"), header_zh=f"第 {last} 步 pass@1")]
    return cols


def _print_sources(con: Console, doc: Mapping[str, Any], lang: str = "en") -> None:
    steps = doc["steps"]
    names = sorted({name for r in [*steps, doc["overall"]] for name in r["sources"]})
    if not names:
        return
    first, last = steps[0], steps[-1]
    rows = [{"source": name, "all": doc["overall"]["sources"].get(name, {}),
             "first": first["sources"].get(name, {}), "last": last["sources"].get(name, {})} for name in names]
    _print_table(con, _TABLES[lang]["source"], rows, _source_columns(first["step"], last["step"]), lang)


def _length_line(overall: Mapping[str, Any], lang: str = "en") -> str | None:
    got = overall.get("length_reading")
    if not got or got["reading"] is None:
        return None
    quartiles = [overall["metrics"].get(f"rollout/correct_by_length/q{b}") for b in range(1, 5)]
    by_length = " ".join("–" if _missing(q) else f"{q:.3g}" for q in quartiles)
    if lang == "zh":
        return (f"长度与正确率（全部步）：{_READING['zh'][got['reading']]}（组内 Spearman 相关系数 {got['corr']:.3g}，"
                f"基于 {got['groups']} 组；|ρ| ≤ {got['tol']:g} 视为无明显变化）；按长度四分位从短到长的正确率："
                f"{by_length}")
    return (f"length × correctness, all steps: {_READING['en'][got['reading']]} (within-group Spearman "
            f"{got['corr']:.3g} over {got['groups']} groups; |ρ| ≤ {got['tol']:g} reads as no change); "
            f"correct by length quartile, shortest first: {by_length}")


def render_rollouts(doc: dict[str, Any], ks: tuple[int, ...], color: bool = False, width: int = WIDTH,
                    lang: str = "en") -> str:
    """Per-step rollout metrics at a glance: a group-scale table (counts, σ_G, zero-variance split,
    effective batch, pass@1 and at the largest k with a value pass@k, its gap, maj@k and the
    self-consistency gap), a rollout-scale table (diversity, length × correctness reading, truncation,
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
    words = _TABLES[lang]
    rows = [*doc["steps"], {**doc["overall"], "step": words["all"]}]
    _print_table(con, words["group"], rows, _group_columns(_kmax(rows, ks)), lang)
    tools = any((r["metrics"].get("rollout/tool_calls/mean") or 0) > 0 for r in rows)
    _print_table(con, words["rollout"], rows, _rollout_columns(tools, lang), lang)
    if doc["steps"]:
        _print_sources(con, doc, lang)
    line = _length_line(doc["overall"], lang)
    if line:
        con.print(Padding(Text(line), (0, 0, 0, 2), expand=False))
    _print_log_zh(con, doc) if lang == "zh" else _print_log(con, doc)
    return buf.getvalue()


def _print_log(con: Console, doc: Mapping[str, Any]) -> None:
    skipped = doc["skipped"]
    if skipped["count"]:
        con.print(f"  [red]skipped[/] {skipped['count']} line(s) or row(s) of the input:", markup=True,
                  highlight=False)
        for reason in skipped["reasons"]:
            con.print(Text(f"    {reason}"))
        if skipped["count"] > len(skipped["reasons"]):
            con.print(Text(f"    … and {skipped['count'] - len(skipped['reasons'])} more"))
    for line in doc["not_computed"]:
        con.print(f"  [dim]not computed[/] {line}", markup=True, highlight=False)
    for note in doc["notes"]:
        con.print(f"  [yellow]note[/] {note}", markup=True, highlight=False)


def _print_log_zh(con: Console, doc: Mapping[str, Any]) -> None:
    """:func:`_print_log` in Chinese: the reader's skip reasons and notes are English only, marked so and
    printed unwrapped (the terminal wraps them)."""
    skipped = doc["skipped"]
    if skipped["count"]:
        con.print(f"  [red]跳过[/]了输入中的 {skipped['count']} 行：", markup=True, highlight=False)
        for reason in skipped["reasons"]:
            con.print(Text(f"    {in_lang(reason, 'zh') if translated(reason) else ENGLISH_ORIGINAL + reason}"),
                      soft_wrap=True)
        if skipped["count"] > len(skipped["reasons"]):
            con.print(Text(f"    …… 另有 {skipped['count'] - len(skipped['reasons'])} 行"))
    for line in doc["not_computed"]:
        con.print(Text(f"  {zh_said('没有算出', line)}", style="dim"), soft_wrap=True)
    for note in doc["notes"]:
        con.print(Text(f"  {zh_said('说明', note)}"), soft_wrap=True)


#: how many of the rollout reader's skip reasons ``diagnose --rollouts`` shows (``rollouts`` shows all it kept)
SHOWN_ROLLOUT_SKIPS = 5


def render_rollout_log(log: Mapping[str, Any], color: bool = False, width: int = WIDTH, lang: str = "en",
                       verbose: bool = False) -> str:
    """The short block ``diagnose --rollouts DIR`` prints under a run: what the rollout reader skipped
    (the first few reasons), which rollout metrics could not be computed (names only, on one line;
    with ``verbose`` every one with its whole reason, as ``rlvitals rollouts --verbose`` lists them)
    and the readers' notes. ``log`` is ``{"path", **summary.rollout_log(...)}``.
    The readers write their skip reasons and notes in English only: in Chinese they are marked so and
    printed unwrapped (the terminal wraps them).

    >>> print(render_rollout_log({"path": "dump/", "skipped": {"count": 0, "reasons": []},
    ...                           "not_computed": ["tokens: needs token_entropy"], "notes": []}).rstrip())
    rollouts dump/: nothing skipped, 1 metric family or key not computed
      not computed tokens (rlvitals rollouts dump/ says why)
    """
    if lang == "zh":
        return _rollout_log_zh(log, color, width, verbose)
    buf = io.StringIO()
    con = console(buf, color, width)
    skipped, missing = log["skipped"], [line.split(": ", 1)[0] for line in log["not_computed"]]
    head = Text(f"rollouts {log['path']}: ", style="bold")
    head.append(f"{skipped['count']} line(s) or row(s) skipped" if skipped["count"] else "nothing skipped",
                style="red" if skipped["count"] else "")
    if missing:
        head.append(f", {len(missing)} metric famil{'y' if len(missing) == 1 else 'ies'} or key"
                    f"{'' if len(missing) == 1 else 's'} not computed")
    con.print(head)
    for reason in skipped["reasons"][:SHOWN_ROLLOUT_SKIPS]:
        con.print(Padding(Text(f"skipped {reason}"), (0, 0, 0, 2), expand=False))
    more = skipped["count"] - min(len(skipped["reasons"]), SHOWN_ROLLOUT_SKIPS)
    if more:
        con.print(Text(f"  … and {more} more (rlvitals rollouts {log['path']} lists them)"))
    if missing and verbose:
        buf.write(_every_reason(log["not_computed"], color, width, "en"))
    elif missing:
        con.print(Padding(Text(f"not computed {'; '.join(missing)} (rlvitals rollouts {log['path']} says why)",
                               style="dim"), (0, 0, 0, 2), expand=False))
    for note in log["notes"]:
        con.print(Padding(Text(f"note {note}"), (0, 0, 0, 2), expand=False))
    return buf.getvalue()


def _every_reason(lines: Sequence[str], color: bool, width: int, lang: str) -> str:
    """Every metric not computed with its whole reason, as ``rollouts --verbose`` prints them
    (:func:`~.not_computed.render_not_computed`; the console's earlier lines are in the buffer already)."""
    return render_not_computed(lines, True, color, width, lang)


def _rollout_log_zh(log: Mapping[str, Any], color: bool, width: int, verbose: bool = False) -> str:
    buf = io.StringIO()
    con = console(buf, color, width)
    skipped, missing = log["skipped"], [line.split(": ", 1)[0] for line in log["not_computed"]]
    head = Text(f"rollout 数据 {log['path']}：", style="bold")
    head.append(f"跳过了 {skipped['count']} 行" if skipped["count"] else "没有跳过任何行",
                style="red" if skipped["count"] else "")
    if missing:
        head.append(f"；{len(missing)} 项指标没有算出")
    con.print(head)
    for reason in skipped["reasons"][:SHOWN_ROLLOUT_SKIPS]:
        con.print(Text(f"  {zh_said('跳过', reason)}"), soft_wrap=True)
    more = skipped["count"] - min(len(skipped["reasons"]), SHOWN_ROLLOUT_SKIPS)
    if more:
        con.print(Text(f"  …… 另有 {more} 行（rlvitals rollouts {log['path']} 会全部列出）"))
    if missing and verbose:
        buf.write(_every_reason(log["not_computed"], color, width, "zh"))
    elif missing:  # the names of the metric families and keys, as rlvitals rollouts --json has them: unwrapped
        con.print(Text(f"  没有算出：{'；'.join(missing)}（原因见 rlvitals rollouts {log['path']}）", style="dim"),
                  soft_wrap=True)
    for note in log["notes"]:
        con.print(Text(f"  {zh_said('说明', note)}"), soft_wrap=True)
    return buf.getvalue()
