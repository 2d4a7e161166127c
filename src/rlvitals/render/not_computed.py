"""The rollout metrics that could not be computed, as the terminal shows them: one line that fits the
width (how many, and as many "name: reason" as fit, each reason cut to its first clause) pointing at
``--verbose``, which lists every one with its whole reason.

The reasons come from the analysis (``RolloutAnalysis.skipped``, ``"name: reason"``), written in English and
Chinese (:class:`~rlvitals.words.Words`); in Chinese a reason that has no Chinese is shown as it is, and the
line says which are English originals.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence

from rich.cells import cell_len
from rich.text import Text

from ..words import in_lang, translated
from .console import WIDTH, console

__all__ = ["fold_not_computed", "render_not_computed", "short_reason"]

#: where a reason's first clause ends: its hint in parentheses, the columns the table has, a second clause
_CLAUSE_END = re.compile(r" \(|; |, so | — |（|；|，因此")
_WORDS = {
    "en": {"head": "not computed: {n} metric famil{y} or key{s}", "more": "… {k} more",
           "tail": " — --verbose lists them", "all": "not computed ({n}):"},
    "zh": {"head": "有 {n} 项指标没有算出", "more": "……另 {k} 项", "tail": "；加 --verbose 可查看全部原因",
           "all": "没有算出的指标（{n} 项）：", "all_en": "没有算出的指标（{n} 项，原因为英文原文）：",
           "all_some": "没有算出的指标（{n} 项，{k} 项原因为英文原文）："},
}


def _heading(lines: Sequence[str], lang: str) -> str:
    words, untold = _WORDS[lang], sum(not translated(x) for x in lines)
    if lang != "zh" or not untold:
        return words["all"].format(n=len(lines))
    return words["all_en" if untold == len(lines) else "all_some"].format(n=len(lines), k=untold)


def short_reason(line: str) -> str:
    """``"name: reason"`` with the reason cut to its first clause.

    Example:
        >>> short_reason("diversity/answer_entropy: needs the rollout column 'answer' (veRL pred, --answer COLUMN)")
        "diversity/answer_entropy: needs the rollout column 'answer'"
        >>> short_reason("tokens: token metrics need 'token_entropy'; the table has ['step', 'group']")
        "tokens: token metrics need 'token_entropy'"
    """
    name, _, reason = line.partition(": ")
    if not reason:
        return line
    cut = _CLAUSE_END.search(reason)
    return f"{name}: {reason[:cut.start()] if cut else reason}"


def _cut(text: str, n: int) -> str:
    """The first ``n`` characters of ``text``, shortened so that no list or quoted name is left open (a name
    cut in half reads as a different name).

    >>> _cut("needs the rollout column ['states']; the table has", 30)
    'needs the rollout column '
    """
    head = text[:n]
    for opening, closing in (("[", "]"), ("'", "'")):
        unclosed = head.count(opening) > head.count(closing) if opening != closing else head.count("'") % 2
        if unclosed and head.rfind(opening) >= 12:
            head = head[:head.rfind(opening)]
    return head


def fold_not_computed(lines: Sequence[str], width: int = WIDTH, lang: str = "en") -> str:
    """One line (``width`` terminal cells at most, the indent included, where the count, a reason cut to
    12 characters and the pointer fit) for ``lines``: the count, the
    short reasons that fit, how many more, and that ``--verbose`` lists them; "" when there are none.

    Example:
        >>> fold_not_computed(["tokens: needs 'token_entropy'", "segments: needs a cap: --tool-cap N"], 110)
        "  not computed: 2 metric families or keys (tokens: needs 'token_entropy'; … 1 more) — --verbose lists them"
    """
    if not lines:
        return ""
    words = _WORDS[lang]
    n = len(lines)
    head = "  " + words["head"].format(n=n, y="y" if n == 1 else "ies", s="" if n == 1 else "s")
    english = "英文原文：" if any(not translated(x) for x in lines) else ""
    sep, (left, right) = ("；", (f"（{english}", "）")) if lang == "zh" else ("; ", (" (", ")"))
    shown: list[str] = []
    for i, item in enumerate(short_reason(in_lang(x, lang)) for x in lines):
        rest = n - i - 1
        more = [words["more"].format(k=rest)] if rest else []
        trial = head + left + sep.join([*shown, item, *more]) + right + words["tail"]
        if cell_len(trial) > width:
            if shown:
                break
            # even the first does not fit: it is cut, so the line still fits
            item = _cut(item, max(len(item) - (cell_len(trial) - width) - 1, 12)) + "…"
        shown.append(item)
    rest = n - len(shown)
    more = [words["more"].format(k=rest)] if rest else []
    return head + left + sep.join([*shown, *more]) + right + words["tail"]


def render_not_computed(lines: Sequence[str], verbose: bool = False, color: bool = False, width: int = WIDTH,
                        lang: str = "en") -> str:
    """What the terminal prints for the metrics not computed: :func:`fold_not_computed`, or with
    ``verbose`` a heading and every ``"name: reason"`` in full; "" when there are none.

    Example:
        >>> print(render_not_computed(["tokens: needs 'token_entropy' (per-token lists)"], verbose=True), end="")
          not computed (1):
            tokens: needs 'token_entropy' (per-token lists)
    """
    if not lines:
        return ""
    buf = io.StringIO()
    con = console(buf, color, width)
    if not verbose:
        # one line, never wrapped: it was fitted to the width, and a reason cut short still reads
        con.print(Text(fold_not_computed(lines, width, lang), style="dim"), soft_wrap=True)
        return buf.getvalue()
    con.print(Text("  " + _heading(lines, lang), style="dim"))
    for line in lines:
        con.print(Text(f"    {in_lang(line, lang)}"), soft_wrap=lang == "zh")
    return buf.getvalue()
