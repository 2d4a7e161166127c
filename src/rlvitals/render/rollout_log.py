"""The short block ``diagnose --rollouts DIR`` prints under a run: what reading its rollouts skipped and
could not compute."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.text import Text

from .console import WIDTH, console, print_kept
from .not_computed import render_not_computed
from .said import said

__all__ = ["SHOWN_ROLLOUT_SKIPS", "render_rollout_log"]

#: how many of the rollout reader's skip reasons ``diagnose --rollouts`` shows (``rollouts`` shows all it kept)
SHOWN_ROLLOUT_SKIPS = 5

_WORDS = {
    "en": {"head": "rollouts {path}: ", "skipped": "{n} line(s) or row(s) skipped", "none": "nothing skipped",
           "missing": ", {n} metric famil{y} or key{s} not computed", "skip": "skipped", "note": "note",
           "more": "… and {n} more (rlvitals rollouts {path} lists them)",
           "names": "not computed {names} (rlvitals rollouts {path} says why)", "sep": "; "},
    "zh": {"head": "rollout 数据 {path}：", "skipped": "跳过了 {n} 行", "none": "没有跳过任何行",
           "missing": "；{n} 项指标没有算出", "skip": "跳过", "note": "说明",
           "more": "…… 另有 {n} 行（rlvitals rollouts {path} 会全部列出）",
           "names": "没有算出：{names}（原因见 rlvitals rollouts {path}）", "sep": "；"},
}


def _aside(con: Console, text: Text, lang: str) -> None:
    """A line under the head, indented: wrapped under its indent in English; in Chinese, where it may hold
    English-only words, unwrapped (the terminal wraps it)."""
    if lang == "zh":
        con.print(Text("  ") + text, soft_wrap=True)
    else:
        print_kept(con, text, 2)  # a path too wide for a line is never cut


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
    w, path = _WORDS[lang], log["path"]
    buf = io.StringIO()
    con = console(buf, color, width)
    skipped, missing = log["skipped"], [line.split(": ", 1)[0] for line in log["not_computed"]]
    head = Text(w["head"].format(path=path), style="bold")
    head.append(w["skipped"].format(n=skipped["count"]) if skipped["count"] else w["none"],
                style="red" if skipped["count"] else "")
    if missing:
        one = len(missing) == 1
        head.append(w["missing"].format(n=len(missing), y="y" if one else "ies", s="" if one else "s"))
    print_kept(con, head)
    for reason in skipped["reasons"][:SHOWN_ROLLOUT_SKIPS]:
        _aside(con, said(w["skip"], reason, lang), lang)
    more = skipped["count"] - min(len(skipped["reasons"]), SHOWN_ROLLOUT_SKIPS)
    if more:
        print_kept(con, Text("  " + w["more"].format(n=more, path=path)))
    if missing and verbose:  # the console's earlier lines are in the buffer already
        buf.write(render_not_computed(log["not_computed"], True, color, width, lang))
    elif missing:  # the names of the metric families and keys, as rlvitals rollouts --json has them
        _aside(con, Text(w["names"].format(names=w["sep"].join(missing), path=path), style="dim"), lang)
    for note in log["notes"]:
        _aside(con, said(w["note"], note, lang), lang)
    return buf.getvalue()
