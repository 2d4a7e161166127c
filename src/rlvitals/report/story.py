"""The report's opening, per run: the root cause with what followed under it, the other problems, and the
timeline — the story of the diagnosis (:mod:`rlvitals.story`), in both languages, each finding linked to
its card in its layer's section.

Nothing is decided here: the causes, their order and the words of every link come from the diagnosis.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..diagnosis import Diagnosis, Headline, Moment
from ..render import because_words, count_words, healthy_words, when_words

__all__ = ["story_json"]

LANGS = ("en", "zh")


def _both(make: Any) -> dict[str, str]:
    return {lang: make(lang) for lang in LANGS}


def _moment(m: Moment, root: Headline, ids: dict[int, str]) -> dict[str, Any]:
    f = m.finding
    return {"finding": ids[id(f)], "check": f.check, "status": f.status, "step": m.step, "title": dict(f.title),
            "because": _both(lambda lang: because_words(m, root, lang))}


def _cause(c: Headline, ids: dict[int, str]) -> dict[str, Any]:
    f = c.finding
    when = when_words(f.onset_step, f.span, f.points) or when_words(c.onset_step, None)
    return {"finding": ids[id(f)], "check": f.check, "status": f.status, "step": c.onset_step,
            "title": dict(f.title), "message": dict(f.message), "advice": dict(f.advice), "when": when,
            "explains": [_moment(m, c, ids) for m in c.explains]}


def story_json(rid: str, d: Diagnosis, found: Sequence[tuple[str, str, Any]]) -> dict[str, Any]:
    """The story of run ``rid``: ``causes`` (the headline first, then the independent problems, each with the
    findings it explains), ``timeline`` (every warn/fail finding in step order with its cause) and, for a run
    with nothing to act on, ``healthy`` — the one line it gets. ``found`` are the page's ``(id, run, finding)``
    triples, whose ids the story's links point at."""
    ids = {id(f): fid for fid, frid, f in found if frid == rid}
    causes = [_cause(c, ids) for c in d.causes()]
    notes = sum(f.status == "note" for f in d.findings)
    healthy = None if causes else _both(lambda lang: healthy_words(d, lang, count_words({"note": notes}, lang)))
    timeline = [{"step": m.step, "finding": ids[id(m.finding)], "status": m.finding.status,
                 "title": dict(m.finding.title),
                 "caused_by": None if m.caused_by is None else dict(m.caused_by.title),
                 "because": None if m.because is None else dict(m.because)} for m in d.timeline]
    return {"causes": causes, "timeline": timeline, "healthy": healthy}
