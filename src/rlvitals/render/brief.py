"""The short views of diagnoses: the table that opens the diagnosis of several runs (run, verdict, steps,
headline), and ``diagnose --brief``: the verdict, then one line per warn/fail finding (status, step, layer,
title, key number), in the story's order — each root cause, then what followed it.

Pure functions from :class:`~rlvitals.diagnosis.Diagnosis` objects to text; nothing is computed here.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from ..diagnosis import Diagnosis, Finding
from .console import WIDTH, console, print_kept, print_named, wrapped_whole
from .diagnosis import _MARK, SHOWN, STATUS_STYLE, STATUS_WORDS, _head, count_words, layer_code

__all__ = ["KEY_NUMBERS", "brief_markdown", "key_number", "render_brief", "render_runs_table", "runs_markdown"]

#: the evidence a finding's key number is read from, first pair whose both numbers its message states wins: the
#: move from the established level to where it went (the peak, the level after a jump). Only those: other
#: evidence values are shares, counts or another metric's numbers, which the line could misstate
KEY_NUMBERS: tuple[tuple[str, str], ...] = (("baseline", "value"), ("baseline", "peak"), ("baseline", "after"))
#: the narrowest headline column the table keeps beside the names; narrower, each name gets a line of its own
MIN_HEADLINE = 24
_WORDS = {
    "en": {"run": "run", "verdict": "verdict", "steps": "steps", "headline": "headline",
           "none": "nothing to act on", "at": "{title} (step {n})", "step": "step {n}", "colon": ": ",
           "trained": "{n} training steps"},
    "zh": {"run": "运行", "verdict": "结论", "steps": "步数", "headline": "根本原因",
           "none": "没有需要处理的问题", "at": "{title}（第 {n} 步）", "step": "第 {n} 步", "colon": "：",
           "trained": "{n} 个训练步"},
}


def _stated(value: object, message: str) -> str | None:
    """``value`` as ``message`` writes it (3 or 4 significant digits), None when it does not state it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    for fmt in (".3g", ".4g"):
        said = format(value, fmt)
        if re.search(rf"(?<![\d.]){re.escape(said)}(?!\.?\d)", message):
            return said
    return None


def key_number(f: Finding) -> str:
    """The number that says a finding at a glance: the move its evidence records (:data:`KEY_NUMBERS`) as its
    message states it, ``""`` when the message states none of them — the line never shows a number the
    finding's words do not.

    Example:
        >>> from rlvitals.diagnosis import Finding
        >>> t = {"en": "", "zh": ""}
        >>> m = {"en": "The mean response length collapsed from 1841 to 1 tokens.", "zh": ""}
        >>> key_number(Finding("c", "L2", "fail", t, m, t, evidence={"baseline": 1840.51, "value": 1.0}))
        '1841 → 1'
    """
    for keys in KEY_NUMBERS:
        said = [_stated(f.evidence.get(k), f.message["en"]) for k in keys]
        if all(s is not None for s in said):
            return " → ".join(s for s in said if s is not None)
    return ""


def headline_words(d: Diagnosis, lang: str) -> str:
    """The root cause's title and step, or that there is nothing to act on."""
    w = _WORDS[lang]
    head = d.headline
    return w["none"] if head is None else w["at"].format(title=head.finding.title[lang], n=head.onset_step)


def _rows(ds: Sequence[Diagnosis], lang: str) -> list[tuple[str, str, str, str]]:
    return [(d.path, d.verdict, str(len(d.run.train_steps)), headline_words(d, lang)) for d in ds]


def _say(con: Console, line: Text) -> None:
    """One line laid out here: printed as it is, never wrapped or cut (a path longer than the width stays whole)."""
    con.print(line, crop=False, no_wrap=True, overflow="ignore")


def render_runs_table(ds: Sequence[Diagnosis], lang: str = "en", color: bool = False, width: int = WIDTH) -> str:
    """The table that opens the diagnosis of several runs: each run's name whole, its verdict, its training
    steps and its headline (wrapped in its column). When the names leave the headline less than
    :data:`MIN_HEADLINE` cells, each name gets a line of its own with the rest under it."""
    buf = io.StringIO()
    con = console(buf, color, width)
    w, words = _WORDS[lang], STATUS_WORDS[lang]
    rows = _rows(ds, lang)
    name_w = max(cell_len(w["run"]), *(cell_len(r[0]) for r in rows))
    verdict_w = max(cell_len(w["verdict"]), *(cell_len(f"{_MARK[r[1]]} {words[r[1]]}") for r in rows))
    steps_w = max(cell_len(w["steps"]), *(cell_len(r[2]) for r in rows))
    wide = width - name_w - verdict_w - steps_w - 6 >= MIN_HEADLINE
    lead = name_w + 2 if wide else 2

    def cells(verdict: Text, steps: str) -> Text:
        return verdict + " " * (verdict_w - cell_len(verdict.plain) + 2 + steps_w - cell_len(steps)) + steps + "  "

    if wide:
        head = Text(w["run"] + " " * (name_w - cell_len(w["run"]) + 2), style="bold")
    else:  # the names on lines of their own, the other columns under them
        _say(con, Text(w["run"], style="bold"))
        head = Text("  ")
    _say(con, head + cells(Text(w["verdict"], style="bold"), w["steps"]) + Text(w["headline"], style="bold"))
    room = max(width - lead - verdict_w - steps_w - 4, MIN_HEADLINE)
    for name, verdict, steps, headline in rows:
        status = Text(f"{_MARK[verdict]} {words[verdict]}", style=STATUS_STYLE[verdict])
        if wide:
            first = Text(name + " " * (name_w - cell_len(name) + 2))
        else:
            _say(con, Text(name))
            first = Text("  ")
        lines = wrapped_whole(Text(headline), room)
        _say(con, first + cells(status, steps) + lines[0])
        for line in lines[1:]:
            _say(con, Text(" " * (lead + verdict_w + steps_w + 4)) + line)
    con.print()
    return buf.getvalue()


def runs_markdown(ds: Sequence[Diagnosis], lang: str = "en") -> str:
    """The Markdown table that opens the report of several runs: run, verdict, steps, headline."""
    w, words = _WORDS[lang], STATUS_WORDS[lang]
    out = [f"| {w['run']} | {w['verdict']} | {w['steps']} | {w['headline']} |", "|---|---|---:|---|"]
    for name, verdict, steps, headline in _rows(ds, lang):
        cells = (name, f"{_MARK[verdict]} {words[verdict]}", steps, headline)
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out) + "\n\n"


def _listed(d: Diagnosis) -> list[tuple[Finding, int | None, bool]]:
    """Each warn/fail finding once, in the story's order: a root cause, then what followed it (True), then
    any other by its onset; with the step it is told at."""
    seen: set[int] = set()
    out: list[tuple[Finding, int | None, bool]] = []
    for cause in d.causes():
        for f, step, after in [(cause.finding, cause.onset_step, False),
                               *((m.finding, m.step, True) for m in cause.explains)]:
            if id(f) not in seen:
                seen.add(id(f))
                out.append((f, step, after))
    rest = [f for f in d.findings if f.status in ("warn", "fail") and id(f) not in seen]
    out += [(f, f.onset_step, False) for f in sorted(rest, key=lambda f: f.onset_step or 0)]
    return out


def _counts(d: Diagnosis, lang: str) -> str:
    return count_words({s: sum(f.status == s for f in d.findings) for s in SHOWN}, lang)


def render_brief(d: Diagnosis, lang: str = "en", color: bool = False, width: int = WIDTH) -> str:
    """``diagnose --brief``: the verdict line (the run, its verdict, the count of findings and of steps),
    then one line per warn/fail finding: status, step, layer, title (``↳`` when it followed from the root
    cause above it) and its :func:`key_number`."""
    buf = io.StringIO()
    con = console(buf, color, width)
    w, words = _WORDS[lang], STATUS_WORDS[lang]
    verdict = Text(f"{w['verdict']}{w['colon']}{words[d.verdict]}", style=STATUS_STYLE[d.verdict])
    said = [_counts(d, lang), w["trained"].format(n=len(d.run.train_steps))]
    verdict.append("".join(f" · {s}" for s in said if s), style="dim")
    print_named(con, Text(d.path, style="bold"), verdict)
    listed = _listed(d)
    steps = [w["step"].format(n=step) if step is not None else "" for _, step, _ in listed]
    step_w = max((cell_len(s) for s in steps), default=0)
    codes = [layer_code(f.layer, lang) for f, _, _ in listed]
    code_w = max((cell_len(c) for c in codes), default=0)
    for (f, _, after), step, code in zip(listed, steps, codes, strict=True):
        line = Text("  ")
        line.append(f"{_MARK[f.status]} {words[f.status]}" + " " * (7 - cell_len(words[f.status])),
                    style=STATUS_STYLE[f.status])
        line.append(step + " " * (step_w - cell_len(step) + 2))
        line.append(code + " " * (code_w - cell_len(code) + 1), style="cyan")
        line.append(("↳ " if after else "") + f.title[lang], style="bold")
        number = key_number(f)
        if number:
            line.append(f"  {number}", style="dim")
        print_kept(con, line)
    return buf.getvalue()


def brief_markdown(d: Diagnosis, lang: str = "en") -> str:
    """``diagnose --markdown --brief``: the run as a heading, the verdict, then one bullet per warn/fail
    finding as :func:`render_brief` lists them."""
    w, words = _WORDS[lang], STATUS_WORDS[lang]
    counts = _counts(d, lang)
    out = [f"# {d.path}", "", f"{_head(d, lang)} — **{words[d.verdict]}**" + (f" · {counts}" if counts else ""), ""]
    for f, step, after in _listed(d):
        number = key_number(f)
        out.append(f"- **{words[f.status]}** " + (f"{w['step'].format(n=step)} · " if step is not None else "")
                   + f"{layer_code(f.layer, lang)} {'↳ ' if after else ''}**{f.title[lang]}**"
                   + (f" — `{number}`" if number else ""))
    return "\n".join(out) + "\n"
