"""What ``rlvitals inspect`` prints about a run: how it was read (format, framework, algorithm, steps,
metrics, validation, unmapped keys, skipped lines, a crash) and the readers' notes."""

from __future__ import annotations

import io
from typing import Any

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

from .console import WIDTH, console, print_kept
from .said import ENGLISH_ORIGINAL, said

__all__ = ["render_inspect", "render_shared_notes"]

#: the row names and words of ``inspect``, per language
_INSPECT = {
    "en": {"format": "format", "framework": "framework", "algorithm": "algorithm", "steps": "steps",
           "metrics": "metrics", "validation": "validation", "unmapped": "unmapped", "skipped": "skipped",
           "crash": "crash", "train": "{n} training steps", "span": ", {a} → {b}", "eval": "; {n} evaluation-only",
           "canonical": "{n} canonical: {keys}", "none logged": "none logged", "none": "none",
           "count": "{n}: {keys}", "records": "{n} records", "sep": "; ", "colon": ": ",
           "first": "before its first step", "after": "after step {n}", "given": " (given, not detected)",
           "died": "died {when} ({kind}): {said} ({where})", "skip": "skipped", "note": "note",
           # spaces: rich wraps a key whole, never cuts it, as explain does
           "list": ", ", "more": ", … (+{n} more)"},
    "zh": {"format": "格式", "framework": "框架", "algorithm": "算法", "steps": "步数", "metrics": "指标",
           "validation": "验证集", "unmapped": "未映射", "skipped": "跳过", "crash": "崩溃",
           "train": "{n} 个训练步", "span": "，{a} → {b}", "eval": "；另有 {n} 步只有评估",
           "canonical": "{n} 个标准指标：{keys}", "none logged": "没有记录", "none": "无",
           "count": "{n} 个：{keys}", "records": "{n} 条记录", "sep": "；", "colon": "：",
           "first": "第一步之前", "after": "第 {n} 步之后", "given": "（由用户指定，不是识别出的）",
           "died": "在{when}中断" + ENGLISH_ORIGINAL + "：{kind}，{said}（{where}）", "skip": "跳过", "note": "说明",
           "list": " · ", "more": " ……（另 {n} 个）"},
}


def _listed(items: list[str], limit: int, lang: str) -> str:
    w = _INSPECT[lang]
    if len(items) <= limit:
        return w["list"].join(items)
    return w["list"].join(items[:limit]) + w["more"].format(n=len(items) - limit)


def _rows(summary: dict[str, Any], lang: str) -> list[tuple[str, str]]:
    from ..catalog import load_catalog

    w = _INSPECT[lang]
    era = f" ({summary['framework_era']})" if summary.get("framework_era") else ""
    label = load_catalog().algorithm_label(summary["algorithm_label"], lang) if lang == "zh" else \
        summary["algorithm_label"]
    steps = w["train"].format(n=summary["steps"]) + (
        w["span"].format(a=summary["first_step"], b=summary["last_step"]) if summary["steps"] else "") + (
        w["eval"].format(n=summary["eval_only_steps"]) if summary["eval_only_steps"] else "")
    validation = w["sep"].join(f"{src}{w['colon']}{_listed(cols, 4, lang)}"
                               for src, cols in summary["validation"].items())
    rows = [
        (w["format"], summary["format"]), (w["framework"], f"{summary['framework']}{era}"),
        (w["algorithm"], f"{label} [{summary['algorithm']}]" + (w["given"] if summary.get("algorithm_given") else "")),
        (w["steps"], steps),
        (w["metrics"], w["canonical"].format(n=len(summary["metrics"]), keys=_listed(summary["metrics"], 12, lang))),
        (w["validation"], validation or w["none logged"]),
        (w["unmapped"], w["count"].format(n=len(summary["unmapped"]), keys=_listed(summary["unmapped"], 10, lang))
         if summary["unmapped"] else w["none"]),
        (w["skipped"], w["records"].format(n=summary["skipped"]["count"]) if summary["skipped"]["count"]
         else w["none"]),
    ]
    crash = summary.get("crash")
    if crash:
        when = w["first"] if crash["last_step"] is None else w["after"].format(n=crash["last_step"])
        message = f"{crash['exception']}: {crash['message']}" if crash["message"] else crash["exception"]
        rows.append((w["crash"], w["died"].format(when=when, kind=crash["kind"], said=message[:300],
                                                  where=crash["where"])))
    return rows


def render_inspect(summary: dict[str, Any], color: bool = False, width: int = WIDTH, lang: str = "en") -> str:
    """What ``rlvitals inspect`` prints about a run (``summary``: :func:`~.summary.run_summary`), in
    ``lang``; the readers' skip reasons, notes and a crash's message are English only, marked so in Chinese
    and printed unwrapped there (the terminal wraps them)."""
    buf = io.StringIO()
    con = console(buf, color, width)
    print_kept(con, Text(summary["path"], style="bold"))  # a path wider than the line whole, never cut
    table = Table.grid(padding=(0, 2))
    table.add_column(style="cyan", no_wrap=True)
    table.add_column(overflow="fold")
    rows = _rows(summary, lang)
    w = _INSPECT[lang]
    crash = rows.pop() if lang == "zh" and rows[-1][0] == w["crash"] else None
    for name, value in rows:
        table.add_row(name, Text(value))  # not markup: "[ppo]" and a key with brackets are shown as they are
    con.print(table)
    if crash is not None:
        pad = max(cell_len(name) for name, _ in rows) + 2 - cell_len(crash[0])
        con.print(Text(f"{crash[0]}{' ' * pad}{crash[1]}"), soft_wrap=True)
    for kind, texts in (("skip", summary["skipped"]["reasons"]), ("note", summary["notes"])):
        for text in texts:
            if lang == "zh":
                con.print(Text("  ") + said(w[kind], text, lang, "yellow"), soft_wrap=True)
            else:  # a note often names a file: never cut
                print_kept(con, Text("  ") + said(w[kind], text, lang, "yellow"))
    return buf.getvalue()


#: the head of a note said once for several runs (:func:`~.summary.fold_notes`), per language
_SHARED = {"en": ("note, for all {n} runs:", "note, for {k} of {n} runs ({paths}):", ", "),
           "zh": ("说明（{n} 个运行都适用）", "说明（{n} 个运行中的 {k} 个：{paths}）", "、")}


def render_shared_notes(shared: list[tuple[str, list[str]]], runs: int, color: bool = False, width: int = WIDTH,
                        lang: str = "en") -> str:
    """The notes said of several runs, once each after the runs, naming how many runs (and, when not all of
    them, which) each is about."""
    buf = io.StringIO()
    con = console(buf, color, width)
    every, some, sep = _SHARED[lang]
    for note, paths in shared:
        head = every.format(n=runs) if len(paths) == runs else some.format(k=len(paths), n=runs,
                                                                            paths=sep.join(paths))
        text = Text("  ") + said(head, note, lang, "yellow")
        if lang == "zh":
            con.print(text, soft_wrap=True)
        else:
            print_kept(con, text)
    return buf.getvalue()
