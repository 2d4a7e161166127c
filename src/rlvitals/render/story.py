"""The story part of the text views: the root cause with what followed under it, the independent problems,
and the timeline — what every view of a diagnosis opens with (docs/reading-rules.md#links).

Pure functions from a :class:`~rlvitals.diagnosis.Diagnosis` to text; the links and their words come from
the diagnosis's story, nothing is decided here.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from ..diagnosis import Diagnosis, Headline, Moment
from .console import print_kept

__all__ = ["STORY_WORDS", "because_words", "healthy_words", "print_consequences", "story_markdown"]

#: the story's headings and connecting words, per language
STORY_WORDS = {
    "en": {"root": "Root cause — fix this first", "others": "Other problems, worst first",
           "followed": "What followed", "timeline": "Timeline", "step": "step", "after": "after {cause}: {why}",
           "healthy": "Nothing to act on: {passed} passed, {skipped} could not judge (skipped).",
           "healthy_notes": "Nothing to act on: {passed} passed, {skipped} could not judge (skipped); "
                            "{notes} below could be better.",
           "todo": "What to do first", "root_mark": "root cause", "finding": "finding", "because": "because",
           "none": "—"},
    "zh": {"root": "根本原因——先处理这一项", "others": "其他问题（最严重的在前）", "followed": "随后发生",
           "timeline": "时间线", "step": "步", "after": "源于“{cause}”：{why}",
           "healthy": "没有需要处理的问题：{passed} 项检查通过，{skipped} 项无法判断（跳过）。",
           "healthy_notes": "没有需要处理的问题：{passed} 项检查通过，{skipped} 项无法判断（跳过）；"
                            "下面的{notes}可以做得更好。",
           "todo": "先做什么", "root_mark": "根本原因", "finding": "发现", "because": "原因", "none": "—"},
}


def because_words(m: Moment, root: Headline, lang: str) -> str:
    """Why ``m`` followed: the mechanism's words, naming its nearest cause when that is not the root itself.

    Example:
        >>> import rlvitals
        >>> d = rlvitals.diagnose(rlvitals.load("output.log")[0])  # doctest: +SKIP
        >>> because_words(d.headline.explains[0], d.headline, "en")  # doctest: +SKIP
        'a KL penalty in the reward is paid per token: …'
    """
    why = "" if m.because is None else m.because[lang]
    if m.caused_by is None or m.caused_by is root.finding:
        return why
    return STORY_WORDS[lang]["after"].format(cause=m.caused_by.title[lang], why=why)


def healthy_words(d: Diagnosis, lang: str, notes: str = "") -> str:
    """The one line a run with nothing to act on gets: how many checks passed and how many could not judge."""
    judged = {f.check for f in d.findings if f.status != "skipped"}
    passed = len({f.check for f in d.findings if f.status == "ok"})
    skipped = len({f.check for f in d.findings if f.status == "skipped"} - judged)
    key = "healthy_notes" if notes else "healthy"
    if lang != "zh":
        return STORY_WORDS[lang][key].format(passed=f"{passed} check{'s' if passed != 1 else ''}", skipped=skipped,
                                             notes=notes)
    return STORY_WORDS[lang][key].format(passed=passed, skipped=skipped, notes=notes)


def _step(step: int, lang: str) -> str:
    return f"第 {step} 步" if lang == "zh" else f"step {step}"


def print_consequences(con: Console, cause: Headline, lang: str, marks: dict[str, str], styles: dict[str, str],
                       layer: dict[str, str]) -> None:
    """Under a root cause's card: each finding it explains at its step, why, and what was found."""
    if not cause.explains:
        return
    words = STORY_WORDS[lang]
    con.print(Text(f"    {words['followed']}{'：' if lang == 'zh' else ':'}", style="bold"))
    width = max(cell_len(_step(m.step, lang)) for m in cause.explains)
    for m in cause.explains:
        f = m.finding
        when = _step(m.step, lang)
        head = Text(f"      {when}{' ' * (width - cell_len(when))}  ")
        head.append(f"{marks[f.status]} ", style=styles[f.status])
        head.append(f"{layer[f.layer]} ", style="cyan")
        head.append(f.title[lang], style="bold")
        print_kept(con, head)
        why = because_words(m, cause, lang)
        if why:
            print_kept(con, Text(f"← {why}", style="dim"), 8 + width)
        print_kept(con, Text(f.message[lang]), 8 + width)


def _md_moment(m: Moment, lang: str, status_words: dict[str, str]) -> str:
    f, words = m.finding, STORY_WORDS[lang]
    cause = words["root_mark"] if m.caused_by is None else m.caused_by.title[lang]
    why = "" if m.because is None else f"：{m.because[lang]}" if lang == "zh" else f": {m.because[lang]}"
    cells = (str(m.step), status_words[f.status], f.title[lang], f"{cause}{why}")
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _paren(text: str, lang: str) -> str:
    return f"（{text}）" if lang == "zh" else f" ({text})"


def story_markdown(d: Diagnosis, lang: str, status_words: dict[str, str], notes: str = "") -> list[str]:
    """The Markdown report's opening: the root cause with what to do first and what followed, the other
    problems in a line each, then the timeline of every warn/fail finding with its cause."""
    words = STORY_WORDS[lang]
    causes = d.causes()
    if not causes:
        return [healthy_words(d, lang, notes), ""]
    head = causes[0]
    f = head.finding
    colon = "：" if lang == "zh" else ": "
    out = [f"## {words['root']}", "", f"**{status_words[f.status]}** — **{f.title[lang]}**"
           f"{_paren(_step(head.onset_step, lang), lang)}", "", f.message[lang], "",
           f"**{words['todo']}**{colon}{f.advice[lang]}"]
    if head.explains:
        out += ["", f"**{words['followed']}**{colon.rstrip()}", ""]
        for m in head.explains:
            why = because_words(m, head, lang)
            out.append(f"- {_step(m.step, lang)}{colon}**{m.finding.title[lang]}**"
                       f"{_paren(status_words[m.finding.status], lang)}" + (f" — {why}" if why else ""))
    if len(causes) > 1:
        out += ["", f"## {words['others']}", ""]
        for c in causes[1:]:
            then = "、" if lang == "zh" else ", "
            followed = (f"；{words['followed']}{colon}" if lang == "zh" else f"; {words['followed']}{colon}") + \
                then.join(m.finding.title[lang] for m in c.explains) if c.explains else ""
            out.append(f"- **{status_words[c.finding.status]}** — **{c.finding.title[lang]}**"
                       f"{_paren(_step(c.onset_step, lang), lang)}{followed}")
    out += ["", f"## {words['timeline']}", "", f"| {words['step']} | | {words['finding']} | {words['because']} |",
            "|---|---|---|---|"]
    out += [_md_moment(m, lang, status_words) for m in d.timeline]
    return [*out, ""]
