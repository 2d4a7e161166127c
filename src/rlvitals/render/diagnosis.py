"""Renderings of a Diagnosis: terminal (layers at a glance, worst first) and Markdown.

Pure functions from a :class:`~rlvitals.diagnosis.Diagnosis` to text; nothing is computed here.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from ..catalog import load_catalog
from ..checks import FINDING_STATUSES, WORST_FIRST
from ..diagnosis import LAYER_NAMES, READING_ORDER, Diagnosis, Finding
from .console import WIDTH, console, print_kept, print_named
from .story import STORY_WORDS, healthy_words, print_consequences, story_markdown

_MARK = {"fail": "✗", "warn": "!", "note": "i", "ok": "✓", "skipped": "·"}
#: the terminal colour of each status (the watcher's view uses it too)
STATUS_STYLE = {"fail": "bold red", "warn": "yellow", "note": "blue", "ok": "green", "skipped": "dim"}
#: each status in a word, per language (the watcher's alerts and table use them too)
STATUS_WORDS = {"en": {"fail": "FAIL", "warn": "WARN", "note": "NOTE", "ok": "OK", "skipped": "SKIPPED"},
         "zh": {"fail": "失败", "warn": "警告", "note": "提示", "ok": "正常", "skipped": "跳过"}}
#: the order findings are listed in: what needs action first, then what could be better
_RANK = {s: i for i, s in enumerate(WORST_FIRST)}
#: the statuses listed with their words and advice (the others are summed up in a line)
SHOWN = FINDING_STATUSES
#: how many steps of point events are written out before "… N more"
POINTS_SHOWN = 8
_COUNTS_EN: dict[str, tuple[str, str]] = {"fail": ("failure", "failures"), "warn": ("warning", "warnings"),
                                          "note": ("note", "notes")}
_COUNTS_ZH: dict[str, str] = {"fail": "项失败", "warn": "项警告", "note": "项提示"}
_LABELS = {
    "en": {"since": "since step", "at": "at step", "steps": "steps", "advice": "advice", "passed": "passed ({n}): ",
           "skipped": "skipped ({n}): ", "and": ", ", "verdict": "verdict",
           "layer_passed": "{n} passed", "layer_skipped": "{n} skipped", "layer_and": ", ",
           "more": "--all lists each passed and skipped check with its words",
           "colon": ": ", "metrics": "Metrics", "evidence": "Evidence",
           "extremes": "extreme rollouts of the spike steps",
           "md_more": "`rlvitals diagnose --markdown --all` lists each passed and skipped check with its words."},
    "zh": {"since": "自第", "at": "第", "steps": "步", "advice": "建议", "passed": "通过 {n} 项：",
           "skipped": "跳过 {n} 项：", "and": "、", "verdict": "结论",
           "layer_passed": "通过 {n} 项", "layer_skipped": "跳过 {n} 项", "layer_and": "，",
           "more": "加 --all 可逐项列出通过和跳过的检查及其说明",
           # evidence is machine-readable: its field names are those of the --json output
           "colon": "：", "metrics": "指标", "evidence": "证据（JSON 字段）", "extremes": "尖峰所在步的极端 rollout",
           "md_more": "`rlvitals diagnose --markdown --all` 会逐项列出通过和跳过的检查及其说明。"},
}


def when_words(onset: int | None, span: Sequence[int] | None, points: Sequence[int] = ()) -> dict[str, str] | None:
    """When a finding happened, in English and Chinese: the steps of point events (spikes) one by one,
    the first :data:`POINTS_SHOWN` of them; else the onset and, when it lasts, the span; None without
    either.

    Example:
        >>> when_words(95, (95, 210), (95, 140, 210))["en"]
        'at steps 95, 140, 210'
        >>> when_words(95, (95, 210))["zh"]
        '自第 95 步（95–210）'
        >>> when_words(1, (1, 10), range(1, 11))["en"]
        'at steps 1, 2, 3, 4, 5, 6, 7, 8 … 2 more'
    """
    steps = sorted(set(int(p) for p in points))
    if len(steps) == 1:
        return {"en": f"at step {steps[0]}", "zh": f"第 {steps[0]} 步"}
    if steps:
        more = len(steps) - POINTS_SHOWN
        head = steps[:POINTS_SHOWN]
        return {"en": f"at steps {', '.join(map(str, head))}" + (f" … {more} more" if more > 0 else ""),
                "zh": f"第 {'、'.join(map(str, head))} 步" + (f"…（另 {more} 处）" if more > 0 else "")}
    if onset is None:
        return None
    if span and span[0] != span[1]:
        return {"en": f"since step {onset} (steps {span[0]}–{span[1]})",
                "zh": f"自第 {onset} 步（{span[0]}–{span[1]}）"}
    return {"en": f"at step {onset}", "zh": f"第 {onset} 步"}


def _when(f: Finding, lang: str) -> str:
    words = when_words(f.onset_step, f.span, f.points)
    return words[lang] if words else ""


def count_words(counts: Mapping[str, int], lang: str) -> str:
    """``"1 failure · 2 notes"``: the findings to read, by status (those with none left out).

    Example:
        >>> count_words({"fail": 0, "warn": 1, "note": 2}, "en"), count_words({"note": 2}, "zh")
        ('1 warning · 2 notes', '2 项提示')
    """
    parts = []
    for status in SHOWN:
        n = counts.get(status, 0)
        if not n:
            continue
        if lang == "zh":
            parts.append(f"{n} {_COUNTS_ZH[status]}")
        else:
            one, many = _COUNTS_EN[status]
            parts.append(f"{n} {one if n == 1 else many}")
    return " · ".join(parts)


def _head(d: Diagnosis, lang: str) -> str:
    run = d.run
    steps = len(run.train_steps)
    label = load_catalog().algorithm_label(run.algorithm_label, lang)
    if run.algorithm_given:  # the user said it (--algorithm): the head does not pass it off as detected
        label += "（由用户指定）" if lang == "zh" else " (given)"
    if lang == "zh":
        return f"{run.framework} · {label} · {steps} 个训练步"
    return f"{run.framework} · {label} · {steps} training steps"


def layer_code(layer: str, lang: str) -> str:
    """A layer's code in a findings column: ``L1`` … ``L6``, ``efficiency`` (``效率`` in Chinese).

    Example:
        >>> layer_code("L2", "zh"), layer_code("efficiency", "zh"), layer_code("efficiency", "en")
        ('L2', '效率', 'efficiency')
    """
    return load_catalog().layers[layer].short(lang).split()[0]


def render_diagnosis(d: Diagnosis, lang: str = "en", show_all: bool = False, color: bool = False,
                     width: int = WIDTH) -> str:
    """The terminal view: the layers at a glance, then the root cause with what followed under it, the other
    problems worst first (each with its own consequences), the notes, then the passed and the skipped checks in
    one line per layer (``show_all``: each with its words, as ``diagnose --all``)."""
    buf = io.StringIO()
    con = console(buf, color, width)
    labels, words = _LABELS[lang], STATUS_WORDS[lang]
    head = Text(f"{_head(d, lang)}  ", style="dim")
    head.append(f"{labels['verdict']}{labels['colon']}{words[d.verdict]}", style=STATUS_STYLE[d.verdict])
    print_named(con, Text(d.path, style="bold"), head)
    _print_glance(con, d, lang)
    counts = count_words({s: sum(f.status == s for f in d.findings) for s in SHOWN}, lang)
    if counts:
        con.print(Text(f"  {counts}", style="dim"))
    con.print()
    notes = [f for f in d.findings if f.status == "note"]
    causes = d.causes()
    if not causes:
        note_words = count_words({"note": len(notes)}, lang)
        print_kept(con, Text(f"{_MARK['ok']} {healthy_words(d, lang, note_words)}", style="green"))
        con.print()
    codes = {layer: layer_code(layer, lang) for layer in READING_ORDER}
    for i, cause in enumerate(causes):
        if i < 2:
            con.print(Text(STORY_WORDS[lang]["root" if i == 0 else "others"], style="bold underline"))
        _print_finding(con, cause.finding, lang, labels, words, brief=True)
        print_kept(con, Text(f"    → {cause.finding.advice[lang]}", style="dim"))
        print_consequences(con, cause, lang, _MARK, STATUS_STYLE, codes)
        con.print()
    # notes come after what needs action, with their advice; they never change the verdict or the glance
    for f in notes:
        _print_finding(con, f, lang, labels, words)
    if show_all:
        for f in [f for f in d.findings if f.status == "ok"] + [f for f in d.findings if f.status == "skipped"]:
            _print_finding(con, f, lang, labels, words, brief=True)
    else:
        _print_summed(con, d.findings, lang)
    return buf.getvalue()


def _summed(findings: Sequence[Finding], status: str, layer: str) -> int:
    """How many checks of ``layer`` ended with ``status`` (a check with several findings once, as in Markdown)."""
    return len({f.title["en"] for f in findings if f.status == status and f.layer == layer})


def _print_summed(con: Console, findings: Sequence[Finding], lang: str) -> None:
    """The passed and the skipped checks in one line per layer, in reading order (``L2 behaviour  7 passed, 3
    skipped``), then how to list them; nothing when none passed or was skipped."""
    labels = _LABELS[lang]
    rows = []
    for layer in READING_ORDER:
        passed, skipped = _summed(findings, "ok", layer), _summed(findings, "skipped", layer)
        counts = [labels["layer_passed"].format(n=passed)] * bool(passed) + \
            [labels["layer_skipped"].format(n=skipped)] * bool(skipped)
        if counts:
            rows.append((load_catalog().layers[layer].short(lang), labels["layer_and"].join(counts), passed))
    if not rows:
        return
    pad = max(cell_len(name) for name, _, _ in rows)
    for name, said, passed in rows:
        mark = "ok" if passed else "skipped"
        con.print(Text(f"{_MARK[mark]} {name}{' ' * (pad - cell_len(name))}  {said}", style=STATUS_STYLE[mark]))
    print_kept(con, Text(f"  {labels['more']}", style="dim"))


def _print_glance(con: Console, d: Diagnosis, lang: str) -> None:
    """Each layer's mark and name, in reading order, on as few lines as the width allows; a layer's name is never
    cut from its mark (``· L6 reasoning`` stays together)."""
    line = Text("  ")
    for layer in READING_ORDER:
        status = d.layers[layer]
        item = f"{_MARK[status]} {load_catalog().layers[layer].short(lang)}"
        if line.plain.strip() and cell_len(line.plain) + cell_len(item) > con.width:
            line.rstrip()
            con.print(line, crop=False, no_wrap=True, overflow="ignore")
            line = Text("  ")
        line.append(item, style=STATUS_STYLE[status])
        line.append("  ")
    line.rstrip()
    con.print(line, crop=False, no_wrap=True, overflow="ignore")


def _print_finding(con: Console, f: Finding, lang: str, labels: dict[str, str], words: dict[str, str],
                   brief: bool = False) -> None:
    head = Text(f"{_MARK[f.status]} {words[f.status]:<7} ", style=STATUS_STYLE[f.status])
    code = layer_code(f.layer, lang)
    head.append(code + " " * max(11 - cell_len(code), 1), style="cyan")
    head.append(f.title[lang], style="bold")
    when = _when(f, lang)
    if when:
        head.append(f"  {when}", style="dim")
    print_kept(con, head)
    print_kept(con, Text("    " + f.message[lang]))
    picked = _extremes(f)
    if picked and not brief:  # a spike's extreme rollouts (diagnose --rollouts): where to look first
        from ..rollout import described_extreme  # polars: only when rollouts were read

        con.print(Text(f"    {labels['extremes']}{labels['colon'].rstrip()}", style="dim"))
        for rollout in picked:
            print_kept(con, Text(f"      {described_extreme(rollout, lang)}", style="dim"))
    if not brief and f.advice[lang]:
        print_kept(con, Text(f"    → {f.advice[lang]}", style="dim"))
    if not brief:
        con.print()


def _md_finding(f: Finding, lang: str) -> list[str]:
    words, labels = STATUS_WORDS[lang], _LABELS[lang]
    when = _when(f, lang)
    lines = [f"- **{words[f.status]}** — **{f.title[lang]}**" + (f" ({when})" if when else ""),
             f"  {f.message[lang]}"]
    if f.status in SHOWN:
        if f.metrics:
            lines.append(f"  {labels['metrics']}{labels['colon']}" + ", ".join(f"`{m}`" for m in f.metrics))
        ev = _evidence(f.evidence)
        if ev:
            lines.append(f"  {labels['evidence']}{labels['colon']}{ev}")
        picked = _extremes(f)
        if picked:
            from ..rollout import described_extreme  # polars: only when rollouts were read

            lines.append(f"  {labels['extremes'][0].upper()}{labels['extremes'][1:]}{labels['colon'].rstrip()}")
            lines += [f"  - {described_extreme(rollout, lang)}" for rollout in picked]
        lines.append(f"  → {f.advice[lang]}")
    return lines


def _extremes(f: Finding) -> list[dict[str, Any]]:
    """The extreme rollouts a spike finding names (:func:`rlvitals.diagnosis.with_rollouts`), none otherwise."""
    picked = f.evidence.get("spike_rollouts")
    return [r for r in picked if isinstance(r, dict)] if isinstance(picked, list) else []


def _evidence(ev: Any) -> str:
    parts = []
    for key, value in dict(ev).items():
        if key == "spike_rollouts":  # said in words under the evidence
            continue
        if isinstance(value, float):
            parts.append(f"{key} = {value:.4g}")
        elif isinstance(value, (int, str)):
            parts.append(f"{key} = {value}")
        elif isinstance(value, (list, tuple)) and len(value) <= 10:
            parts.append(f"{key} = {list(value)}")
    return ", ".join(parts)


def render_markdown(d: Diagnosis, lang: str = "en", show_all: bool = False) -> str:
    """A Markdown report to paste into an issue or send to a colleague: the root cause and what followed, the
    other problems, the timeline, then every layer's failures, warnings and notes, its passed and skipped checks
    in one line each (``show_all``: each with its words, as ``diagnose --markdown --all``)."""
    words = STATUS_WORDS[lang]
    names = {k: v[1] if lang == "zh" else v[0] for k, v in LAYER_NAMES.items()}
    counts = count_words({s: sum(f.status == s for f in d.findings) for s in SHOWN}, lang)
    notes = count_words({"note": sum(f.status == "note" for f in d.findings)}, lang)
    out = [f"# {d.path}", "", f"{_head(d, lang)} — **{words[d.verdict]}**", *([counts] if counts else []), "",
           *story_markdown(d, lang, words, notes),
           "| " + ("层" if lang == "zh" else "layer") + " | " + ("结论" if lang == "zh" else "verdict") + " |",
           "|---|---|"]
    out += [f"| {names[layer]} | {_MARK[d.layers[layer]]} {words[d.layers[layer]]} |" for layer in READING_ORDER]
    for layer in READING_ORDER:
        mine = [f for f in d.findings if f.layer == layer]
        if not mine:
            continue
        out += ["", f"## {names[layer]}", ""]
        listed = mine if show_all else [f for f in mine if f.status in SHOWN]
        for f in sorted(listed, key=lambda f: _RANK[f.status]):
            out += _md_finding(f, lang)
        if not show_all:
            out += _md_summed(mine, lang)
    if not show_all and any(f.status not in SHOWN for f in d.findings):
        out += ["", f"*{_LABELS[lang]['md_more']}*"]
    return "\n".join(out) + "\n"


def _md_summed(findings: Sequence[Finding], lang: str) -> list[str]:
    """The passed and the skipped checks of a layer, one line each: their titles (a check with several
    findings once)."""
    labels = _LABELS[lang]
    lines = []
    for status in ("ok", "skipped"):
        titles = list(dict.fromkeys(f.title[lang] for f in findings if f.status == status))
        if titles:
            head = labels["passed" if status == "ok" else "skipped"].format(n=len(titles))
            lines.append(f"- {_MARK[status]} {head}{labels['and'].join(titles)}")
    return lines
