"""Alerts by root cause: one fault, one alert, with what followed under it.

The diagnosis's story (:mod:`rlvitals.story`) says which finding explains which. An alert is raised for a root
cause; the findings it explains ride in that alert (``Alert.consequences``) when they appear with it, and
later ones add nothing while the cause's alert already says as much — they raise it again only when they are
worse than what was alerted (an escalation of the cause). A finding whose cause was never alerted (a cause
that is only a note, or was not seen) alerts on its own, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..checks import STATUS_RANK
from ..diagnosis import Diagnosis
from ..render import because_words

__all__ = ["Standing", "Told", "by_cause", "story_of"]


@dataclass(frozen=True)
class Told:
    """What the story says of one finding key: the key of the root cause that explains it, and the moment in
    words (its step, its status, its title, why it followed)."""

    root: str
    step: int
    status: str
    title: Mapping[str, str]
    because: Mapping[str, str]

    def to_json(self, check: str) -> dict[str, Any]:
        return {"check": check, "step": self.step, "status": self.status, "title": dict(self.title),
                "because": dict(self.because)}


def story_of(run: str, d: Diagnosis, key: Any) -> dict[str, Told]:
    """Every explained finding of ``d`` by its key (``key(run, finding)``, the alert policy's finding key), with
    the key of its root cause and the words of the moment."""
    out: dict[str, Told] = {}
    for cause in d.causes():
        root = key(run, cause.finding)
        for m in cause.explains:
            because = {lang: because_words(m, cause, lang) for lang in ("en", "zh")}
            out[key(run, m.finding)] = Told(root, m.step, m.finding.status, dict(m.finding.title), because)
    return out


@dataclass(frozen=True)
class Standing:
    """A finding of the observation that is not alerted now (it already was, on its own, or it held before its cause
    was alerted): its alert key, check and status, for the root cause's alert said now to carry among what
    followed."""

    key: str
    check: str
    status: str


def by_cause(alerts: Sequence[Any], story: Mapping[str, Told], alerted: Mapping[str, str],
             raise_cause: Any, standing: Sequence[Standing] = ()) -> list[Any]:
    """``alerts`` of one observation regrouped by root cause. ``alerted`` is the level each root's key had
    already alerted before this observation; ``raise_cause(root key, consequence alert)`` makes the escalation
    of a root whose alert must be said again (None when the root is not among the findings). A root cause's
    alert said now carries every warn/fail finding it explains in this observation, ``standing`` ones (alerted
    before, on their own, but not under this cause) too: an escalation tells what followed since its last alert."""
    mine = {a.key: a for a in alerts}
    under: dict[str, list[Any]] = {}
    kept: list[Any] = []
    for a in alerts:
        told = story.get(a.key)
        if told is None or told.root == a.key:
            kept.append(a)
        else:
            under.setdefault(told.root, []).append(a)
    also: dict[str, list[Any]] = {}
    for s in standing:
        told = story.get(s.key)
        if s.key not in mine and told is not None and told.root != s.key:
            also.setdefault(told.root, []).append(s)
    out = []
    for a in kept:
        followed = [*under.pop(a.key, []), *also.get(a.key, [])]
        out.append(_with(a, followed, story) if followed else a)
    for root, followed in under.items():  # causes alerted before: said again only when something is worse
        if root in mine:
            continue
        worst = max(followed, key=lambda a: STATUS_RANK[a.status])
        before = alerted.get(root)
        if before is not None and STATUS_RANK[worst.status] <= STATUS_RANK[before]:
            continue  # its cause's alert already says as much
        again = raise_cause(root, worst) if before is not None else None
        out.extend([_with(again, [*followed, *also.get(root, [])], story)] if again is not None else followed)
    return out


def _with(alert: Any, followed: Sequence[Any], story: Mapping[str, Told]) -> Any:
    """``alert`` with the findings it explains, one line per check (the first of a check's findings: a diversity
    collapse read on seven measures is one thing that followed), in step order, each at the level it may be said
    at now: a failure the run has not held long enough (:mod:`rlvitals.live.confirm`) follows as the warning it
    also is, as it would be alerted on its own, not at the diagnosis's level."""
    moments: dict[str, dict[str, Any]] = {}
    for a in sorted(followed, key=lambda a: (story[a.key].step, -STATUS_RANK[a.status])):
        moments.setdefault(a.check, {**story[a.key].to_json(a.check), "status": a.status})
    return replace(alert, consequences=(*alert.consequences, *moments.values()))
