"""When an in-process :class:`~rlvitals.watch.monitor.Monitor` tells the training loop to stop, and why.

The loop is told to stop once the diagnosis's verdict reaches ``stop_on`` *and* the alert policy stands by a
finding at that level: one alerted (or riding under its cause's alert) and still active. A finding still
waiting to hold (:mod:`.confirm`) stops nothing, as ``rlvitals watch --exit-on`` acts only on alerted findings.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..checks import STATUS_RANK
from ..diagnosis import Diagnosis, Finding
from ..render.diagnosis import STATUS_WORDS
from ..words import Words
from .alerts import KeyState

__all__ = ["stop_reason"]


def stop_reason(d: Diagnosis, keys: Mapping[str, KeyState], stop_on: str, step: int) -> Words | None:
    """Why the loop should stop at ``step`` (its worst standing findings, three at most), or None.

    Example:
        >>> stop_reason(diagnosis, {}, "fail", 40) is None  # doctest: +SKIP
        True
    """
    bar = STATUS_RANK[stop_on]
    if STATUS_RANK[d.verdict] < bar:
        return None
    standing = {k.check for k in keys.values() if k.active and STATUS_RANK[k.alerted] >= bar}
    worst = sorted((f for f in d.findings if STATUS_RANK[f.status] >= bar and f.check in standing),
                   key=lambda f: -STATUS_RANK[f.status])
    if not worst:
        return None

    def title(f: Finding, lang: str) -> str:
        return f.title.get(lang) or f.title.get("en", f.check)

    en = "; ".join(title(f, "en") + (f" (since step {f.onset_step})" if f.onset_step is not None else "")
                   for f in worst[:3])
    zh = "；".join(title(f, "zh") + (f"（自第 {f.onset_step} 步起）" if f.onset_step is not None else "")
                  for f in worst[:3])
    return Words(f"verdict {d.verdict} at step {step} (stop_on={stop_on}): {en}",
                 f"第 {step} 步的判定为{STATUS_WORDS['zh'][d.verdict]}（stop_on={stop_on}）：{zh}")
