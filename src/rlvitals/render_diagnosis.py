"""Renderings of a Diagnosis: terminal (layers at a glance, worst first) and Markdown.

Pure functions from a :class:`~rlvitals.diagnosis.Diagnosis` to text; nothing is computed here.
"""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from rich.text import Text

from .diagnosis import LAYER_NAMES, READING_ORDER, Diagnosis, Finding
from .render_text import WIDTH, console

_MARK = {"fail": "✗", "warn": "!", "ok": "✓", "skipped": "·"}
_STYLE = {"fail": "bold red", "warn": "yellow", "ok": "green", "skipped": "dim"}
_WORD = {"en": {"fail": "FAIL", "warn": "WARN", "ok": "OK", "skipped": "SKIPPED"},
         "zh": {"fail": "失败", "warn": "警告", "ok": "正常", "skipped": "跳过"}}
_SHORT = {"L5": "L5 generalisation", "L1": "L1 stability", "L2": "L2 behaviour", "L3": "L3 signal",
          "L4": "L4 exploration", "L6": "L6 reasoning", "efficiency": "efficiency"}
_SHORT_ZH = {"L5": "L5 泛化", "L1": "L1 稳定性", "L2": "L2 策略行为", "L3": "L3 学习信号", "L4": "L4 探索",
             "L6": "L6 推理质量", "efficiency": "效率"}
_RANK = {"fail": 0, "warn": 1, "ok": 2, "skipped": 3}
_LABELS = {
    "en": {"since": "since step", "at": "at step", "steps": "steps", "advice": "advice", "passed": "passed",
           "skipped": "skipped", "more": "run with --all to list them", "verdict": "verdict"},
    "zh": {"since": "自第", "at": "第", "steps": "步", "advice": "建议", "passed": "通过", "skipped": "跳过",
           "more": "加 --all 可全部列出", "verdict": "结论"},
}


def _when(f: Finding, lang: str) -> str:
    if f.onset_step is None:
        return ""
    if lang == "zh":
        span = f"（{f.span[0]}–{f.span[1]}）" if f.span and f.span[0] != f.span[1] else ""
        return f"自第 {f.onset_step} 步{span}"
    if f.span and f.span[0] != f.span[1]:
        return f"since step {f.onset_step} (steps {f.span[0]}–{f.span[1]})"
    return f"at step {f.onset_step}"


def _head(d: Diagnosis, lang: str) -> str:
    run = d.run
    steps = len(run.train_steps)
    if lang == "zh":
        return f"{run.framework} · {run.algorithm_label} · {steps} 个训练步"
    return f"{run.framework} · {run.algorithm_label} · {steps} training steps"


def render_diagnosis(d: Diagnosis, lang: str = "en", show_all: bool = False, color: bool = False,
                     width: int = WIDTH) -> str:
    """The terminal view: the layers at a glance, then the worst findings first."""
    buf = io.StringIO()
    con = console(buf, color, width)
    labels, words = _LABELS[lang], _WORD[lang]
    title = Text(d.path, style="bold")
    title.append(f"  {_head(d, lang)}  ", style="dim")
    title.append(f"{labels['verdict']}: {words[d.verdict]}", style=_STYLE[d.verdict])
    con.print(title)
    glance = Text("  ")
    for layer in READING_ORDER:
        status = d.layers[layer]
        glance.append(f"{_MARK[status]} {(_SHORT_ZH if lang == 'zh' else _SHORT)[layer]}", style=_STYLE[status])
        glance.append("  ")
    con.print(glance)
    con.print()
    shown = [f for f in d.findings if f.status in ("fail", "warn")]
    shown.sort(key=lambda f: _RANK[f.status])  # stable: reading order kept within a status
    for f in shown:
        _print_finding(con, f, lang, labels, words)
    passed = [f for f in d.findings if f.status == "ok"]
    skipped = [f for f in d.findings if f.status == "skipped"]
    if show_all:
        for f in passed + skipped:
            _print_finding(con, f, lang, labels, words, brief=True)
    else:
        names = ", ".join(dict.fromkeys(f.title[lang] for f in passed))
        con.print(Text(f"{_MARK['ok']} {labels['passed']} ({len(passed)}): {names}", style="green"))
        if skipped:
            con.print(Text(f"{_MARK['skipped']} {labels['skipped']} ({len(skipped)}): {labels['more']}", style="dim"))
    return buf.getvalue()


def _print_finding(con: Console, f: Finding, lang: str, labels: dict[str, str], words: dict[str, str],
                   brief: bool = False) -> None:
    head = Text(f"{_MARK[f.status]} {words[f.status]:<7} ", style=_STYLE[f.status])
    head.append(f"{f.layer:<10} ", style="cyan")
    head.append(f.title[lang], style="bold")
    when = _when(f, lang)
    if when:
        head.append(f"  {when}", style="dim")
    con.print(head)
    con.print(Text("    " + f.message[lang]))
    if not brief and f.advice[lang]:
        con.print(Text(f"    → {f.advice[lang]}", style="dim"))
    if not brief:
        con.print()


def _md_finding(f: Finding, lang: str) -> list[str]:
    words = _WORD[lang]
    when = _when(f, lang)
    lines = [f"- **{words[f.status]}** — **{f.title[lang]}**" + (f" ({when})" if when else ""),
             f"  {f.message[lang]}"]
    if f.status in ("fail", "warn"):
        if f.metrics:
            lines.append("  " + ("指标" if lang == "zh" else "Metrics") + ": " + ", ".join(f"`{m}`" for m in f.metrics))
        ev = _evidence(f.evidence)
        if ev:
            lines.append("  " + ("证据" if lang == "zh" else "Evidence") + f": {ev}")
        lines.append(f"  → {f.advice[lang]}")
    return lines


def _evidence(ev: Any) -> str:
    parts = []
    for key, value in dict(ev).items():
        if isinstance(value, float):
            parts.append(f"{key} = {value:.4g}")
        elif isinstance(value, (int, str)):
            parts.append(f"{key} = {value}")
        elif isinstance(value, (list, tuple)) and len(value) <= 10:
            parts.append(f"{key} = {list(value)}")
    return ", ".join(parts)


def render_markdown(d: Diagnosis, lang: str = "en") -> str:
    """A Markdown report to paste into an issue or send to a colleague."""
    words = _WORD[lang]
    names = {k: v[1] if lang == "zh" else v[0] for k, v in LAYER_NAMES.items()}
    out = [f"# {d.path}", "", f"{_head(d, lang)} — **{words[d.verdict]}**", "",
           "| " + ("层" if lang == "zh" else "layer") + " | " + ("结论" if lang == "zh" else "verdict") + " |",
           "|---|---|"]
    out += [f"| {names[layer]} | {_MARK[d.layers[layer]]} {words[d.layers[layer]]} |" for layer in READING_ORDER]
    for layer in READING_ORDER:
        mine = [f for f in d.findings if f.layer == layer]
        if not mine:
            continue
        out += ["", f"## {names[layer]}", ""]
        for f in sorted(mine, key=lambda f: _RANK[f.status]):
            out += _md_finding(f, lang)
    return "\n".join(out) + "\n"
