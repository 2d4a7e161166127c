"""The story of a run's findings: each warn/fail finding is an event at its onset; an event is linked to the
event that explains it (``links.toml``); the worst root cause, still going on, that explains the most is the
headline.

What a careful colleague says first is not the first card of the first layer but the cause: "the KL penalty
in the reward exploded at step 4; the answers shrank to one token from step 7, and with them went the
entropy, the advantages and the score". :func:`tell` finds that order from the findings alone — it computes
nothing about the run's numbers, it only reads when each finding started, what it is about and which
mechanism links it to another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..checks import STATUS_RANK, VERDICT_STATUSES, Status
from .links import Link, Links, load_links

__all__ = ["Event", "Scale", "Story", "Told", "tell"]


class Told(Protocol):
    """What the story reads of a finding (:class:`rlvitals.diagnosis.Finding` has it)."""

    @property
    def check(self) -> str: ...
    @property
    def status(self) -> Status: ...
    @property
    def onset_step(self) -> int | None: ...
    @property
    def span(self) -> tuple[int, int] | None: ...
    @property
    def points(self) -> tuple[int, ...]: ...
    @property
    def metrics(self) -> tuple[str, ...]: ...
    @property
    def template(self) -> str: ...


@dataclass(frozen=True)
class Scale:
    """The run's steps as the story needs them: its first and last training step and the usual step between
    two logged ones (``cadence``)."""

    first: int
    last: int
    cadence: int = 1

    def tolerance(self, links: Links, *resolutions: int) -> int:
        """How many steps a cause may be dated after its effect: ``links.steps`` logged steps, ``links.share``
        of the run, or one logging interval of either finding (``resolutions``), whichever is most.

        Example:
            >>> Scale(1, 100).tolerance(load_links()), Scale(0, 1000, 10).tolerance(load_links(), 20)
            (3, 30)
        """
        return max(links.steps * self.cadence, round(links.share * (self.last - self.first)), *resolutions, 0)


@dataclass(frozen=True)
class Event:
    """A warn/fail finding at its onset: ``finding`` is its index among the findings told; ``caused_by`` the
    index (in :attr:`Story.events`) of the event that explains it, with the ``link`` that does."""

    finding: int
    check: str
    status: Status
    step: int
    end: int
    points: tuple[int, ...] = ()
    caused_by: int | None = None
    link: Link | None = None


@dataclass(frozen=True)
class Story:
    """The events in step order, and the root causes (events nothing explains): the headline first, then the
    independent problems, worst first."""

    events: tuple[Event, ...]
    roots: tuple[int, ...]

    @property
    def headline(self) -> Event | None:
        return self.events[self.roots[0]] if self.roots else None

    def consequences(self, index: int) -> tuple[int, ...]:
        """Every event ``index`` explains, directly or through others, in step order."""
        below: list[int] = []
        frontier = [index]
        while frontier:
            parent = frontier.pop()
            kids = [i for i, e in enumerate(self.events) if e.caused_by == parent]
            below.extend(kids)
            frontier.extend(kids)
        return tuple(sorted(below))


def _event(i: int, f: Told, scale: Scale) -> Event:
    points = tuple(sorted(int(p) for p in f.points))
    step = f.onset_step if f.onset_step is not None else points[0] if points else \
        f.span[0] if f.span else scale.first
    end = f.span[1] if f.span else max(points) if points else step
    return Event(i, f.check, f.status, int(step), int(max(end, step)), points)


def _holds(link: Link, cause: Event, effect: Event, found: Sequence[Told], tol: int, near: int, dated: int) -> bool:
    """Whether ``link`` joins ``cause`` to ``effect``; ``dated``: the logging interval the effect is dated to (a
    validation every 20 steps dates its fall only to the evaluation before it)."""
    c, e = found[cause.finding], found[effect.finding]
    if link.cause_metrics and not set(link.cause_metrics) & set(c.metrics):
        return False
    if link.cause_status and c.status not in link.cause_status:
        return False
    if (link.cause_templates and c.template not in link.cause_templates) or (
            link.effect_templates and e.template not in link.effect_templates):
        return False
    if link.timing == "same_step":
        return any(abs(p - q) <= near for p in cause.points or (cause.step,) for q in effect.points or (effect.step,))
    if link.timing == "after":  # one quantity read twice: its later reading needs no cause still going on
        return cause.step <= effect.step + tol
    if link.timing == "first":  # a mechanism that needs the cause in place before the effect: no detector's
        # tolerance back, only the interval the effect is dated to
        return cause.step < effect.step + dated and effect.step <= cause.end + tol
    return cause.step <= effect.step + tol and effect.step <= cause.end + tol


def _cause(effect: int, events: Sequence[Event], parent: Sequence[int | None], found: Sequence[Told], scale: Scale,
           links: Links, resolution: Sequence[int], later: bool) -> tuple[int, Link] | None:
    """The event that explains event ``effect`` best: of those a link joins to it with its evidence in place,
    and that it does not itself explain (a story never goes round a feedback loop), the nearest before it —
    the most proximate cause, so a chain reads KL → length → entropy, not KL → entropy. Causes dated after the
    effect (within the tolerance) are looked at only with ``later``."""
    e = events[effect]
    best: tuple[tuple[int, int], int, Link] | None = None
    for i, cause in enumerate(events):
        if i == effect or _explains(effect, i, parent) or (cause.step > e.step and not later):
            continue
        tol = scale.tolerance(links, resolution[cause.finding], resolution[e.finding])
        near = max(scale.cadence, resolution[cause.finding], resolution[e.finding])
        link = next((k for k in links.between(cause.check, e.check)
                     if _holds(k, cause, e, found, tol, near, resolution[e.finding])), None)
        if link is None:
            continue
        # a cause dated at or before the effect first, the latest of those; one dated after it (within the
        # tolerance) only when there is none, the nearest of those
        before = cause.step <= e.step
        rank = (int(before), cause.step if before else -cause.step)
        if best is None or rank > best[0]:
            best = (rank, i, link)
    return None if best is None else (best[1], best[2])


def _explains(ancestor: int, index: int, parent: Sequence[int | None]) -> bool:
    """Whether event ``ancestor`` explains event ``index``, directly or through others."""
    seen = parent[index]
    while seen is not None:
        if seen == ancestor:
            return True
        seen = parent[seen]
    return False


def tell(found: Sequence[Told], scale: Scale, resolution: Sequence[int] | None = None,
         links: Links | None = None) -> Story:
    """The story of ``found``: its warn/fail findings as events in step order, each linked to the event that
    explains it, and the root causes ranked — the headline is the root whose chain holds the worst status,
    then one still going on at the end of the log (a run got over a transient surge; a crash at its end it
    did not), then the one that explains the most, then the earliest.

    ``resolution`` gives, per finding, the steps between two logged values of what it read (a validation
    every 20 steps dates its changes to 20 steps); by default the run's cadence.

    Example:
        >>> from types import SimpleNamespace as F
        >>> kl = F(check="kl_band", status="fail", onset_step=4, span=(4, 60), points=(),
        ...        metrics=("actor/reward_kl_penalty",), template="fail_ceiling")
        >>> short = F(check="response_length_collapse", status="fail", onset_step=7, span=(7, 60), points=(),
        ...           metrics=("response_length/mean",), template="fail")
        >>> story = tell([short, kl], Scale(1, 60))
        >>> story.headline.check, [story.events[i].check for i in story.consequences(story.roots[0])]
        ('kl_band', ['response_length_collapse'])
    """
    links = links or load_links()
    resolution = resolution or [scale.cadence] * len(found)
    raw = sorted((_event(i, f, scale) for i, f in enumerate(found) if f.status in VERDICT_STATUSES),
                 key=lambda e: (e.step, e.finding))
    parent: list[int | None] = [None] * len(raw)
    chosen: list[Link | None] = [None] * len(raw)
    # causes dated at or before their effect first, over the whole run; only then, for what is still unexplained,
    # a cause a detector dated a little after it — so a late reading can never take an event from its real cause
    for later in (False, True):
        for effect in range(len(raw)):
            if parent[effect] is None:
                cause = _cause(effect, raw, parent, found, scale, links, resolution, later)
                if cause is not None:
                    parent[effect], chosen[effect] = cause
    events = [Event(e.finding, e.check, e.status, e.step, e.end, e.points, parent[i], chosen[i])
              for i, e in enumerate(raw)]
    story = Story(tuple(events), ())
    roots = [i for i, e in enumerate(events) if e.caused_by is None]

    def rank(i: int) -> tuple[int, int, int, int, int, int]:
        below = story.consequences(i)
        worst = max(STATUS_RANK[events[j].status] for j in (i, *below))
        # a problem still going on at the end of the log before one the run got over (a transient surge)
        lasting = events[i].end + scale.tolerance(links) >= scale.last
        return (-worst, -int(lasting), -len(below), events[i].step, -STATUS_RANK[events[i].status], i)

    return Story(tuple(events), tuple(sorted(roots, key=rank)))
