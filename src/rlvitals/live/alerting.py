"""The one alert path of every live reader: look → confirm → decide → commit → say → deliver.

``rlvitals watch`` (logs on disk), ``rlvitals serve`` (the dashboard's own reading of the logs it serves) and the
in-process ``Monitor`` (a training loop) read a run as it grows, diagnose it when their :class:`~.pace.Pace`
allows, and hand each diagnosis to an :class:`Alerting`, which

1. **looks** (:meth:`Alerting.look`): what the policy is to see of the diagnosis — held whole while the run's
   steps are an estimate a later look may renumber (:mod:`.estimates`), its crash or NaN said at once;
2. **confirms** (:mod:`.confirm`): a new finding waits until it has held, and what waits in a run that
   stopped moving is let through (:meth:`Alerting.quiet`);
3. **decides, commits, says and delivers** (:func:`.dispatch.dispatch`): the policy of :mod:`.alerts` — one
   alert per root cause and onset, raised again only when it worsens, **cleared** when the diagnosis stops
   holding it (:meth:`Alerting.settle` for a run that stopped logging).

Where the alerts are stored (``commit``), how a line is said (``say``) and how a message reaches a sink
(``send``) are the reader's: watch stores them with its cursors in one SQLite transaction, the Monitor in
memory or a state file, serve in memory for its run pages. With no ``commit`` the alerts are kept in
:attr:`Alerting.said`, numbered from 1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..checks import final_checks
from ..diagnosis import Diagnosis
from ..run.run import Run
from .alerts import Alert, Cooldown, KeyState, Observation, key_of, settle
from .causes import story_of
from .confirm import Confirm, Confirmations
from .dispatch import Commit, Send, Sink, dispatch
from .estimates import Estimates

__all__ = ["Alerting", "read_to"]


def read_to(run: Run) -> int:
    """The last step on ``run``'s axis (0 for none): how far a live reading of it got.

    >>> from rlvitals.ingest import Record, SourceMeta
    >>> from rlvitals.run.builder import RunBuilder
    >>> builder = RunBuilder(SourceMeta(format="jsonl"))
    >>> builder.add(Record(7, {"loss": 0.5}, "m.jsonl:1"))
    >>> read_to(builder.finish("m.jsonl"))
    7
    """
    steps = run.steps
    return int(steps[-1]) if len(steps) else 0


class Alerting:
    """A live reader's alert policy and its memory: ``keys`` (each finding's standing), the findings waiting to
    hold, the runs whose steps are an estimate. ``rule``: how long a new finding must hold (``Confirm(looks=1)``:
    at once)."""

    def __init__(self, rule: Confirm, cooldown: Cooldown, *, keys: Mapping[str, KeyState] | None = None,
                 commit: Commit | None = None, say: Callable[[Alert], None] | None = None,
                 sinks: Sequence[Sink] = (), send: Send | None = None) -> None:
        self.keys: dict[str, KeyState] = dict(keys or {})
        self.cooldown = cooldown
        self.confirms = Confirmations(rule)
        self.estimates = Estimates()
        #: the alerts raised, in order, when no ``commit`` stores them
        self.said: list[Alert] = []
        self.sinks = list(sinks)
        self._commit = commit or self._remember
        self._say = say or (lambda alert: None)
        self._send = send or (lambda sink, ids, alert: None)

    def _remember(self, changed: Mapping[str, KeyState], alerts: Sequence[Alert]) -> list[int]:
        first = len(self.said) + 1
        self.said.extend(alerts)
        return list(range(first, first + len(alerts)))

    def look(self, run: Run, d: Diagnosis, *, at_once: bool = False) -> list[Observation]:
        """What the policy sees of ``d``, the whole diagnosis of ``run`` now: held while ``run``'s steps are an
        estimate not yet stable (its crash or NaN, resting on no step's number, said at once as a part that
        clears nothing). ``at_once``: everything there is was read (``watch --once``), nothing is held."""
        held = not at_once and self.estimates.held(run.path, run.steps, run.estimated_steps)
        observed = [Observation(run.path, read_to(run), d.findings, held=held, estimated=run.estimated_steps,
                                story=story_of(run.path, d, key_of))]
        if held:
            finals = [f for f in d.findings if f.check in final_checks()]
            observed.append(Observation(run.path, read_to(run), finals, partial=True, estimated=True))
        return observed

    def part(self, run: Run, d: Diagnosis) -> Observation:
        """What the policy sees of ``d``, read on a part of ``run`` (the tail pass): it may raise, never clear."""
        return Observation(run.path, read_to(run), d.findings, partial=True, held=self.estimates.holding(run.path),
                           estimated=run.estimated_steps, story=story_of(run.path, d, key_of))

    def observe(self, observed: Sequence[Observation], now: float, *, at_once: bool = False) -> list[Alert]:
        """Confirm ``observed`` (unless ``at_once``: nothing later can take it back), then decide, commit, say
        and deliver; the alerts raised."""
        if not at_once:
            observed = [self.confirms.confirmed(o, self.keys, now) for o in observed]
        return self._dispatch(observed, now)

    def quiet(self, now: float, after: float) -> list[Alert]:
        """The alerts of what waits in runs whose logs stopped moving (:meth:`.confirm.Confirmations.quiet`)."""
        still = self.confirms.quiet(now, after)
        return self._dispatch(still, now) if still else []

    def release(self, now: float) -> list[Alert]:
        """The reading ended (a loop closed, a trainer stopped): what waits is alerted at its own level now."""
        waiting = self.confirms.release()
        return self._dispatch(waiting, now) if waiting else []

    def restart(self) -> None:
        """Forget what waits to be confirmed (a reading that ended; the next one starts afresh)."""
        self.confirms = Confirmations(self.confirms.rule)

    def moved(self, path: str, now: float) -> None:
        """The log at ``path`` was written to at ``now``: its runs are still moving."""
        self.confirms.moved(path, now)

    def settle(self, now: float, steps: Mapping[str, int]) -> list[Alert]:
        """The ``cleared`` alerts due now for the runs of ``steps`` (run → its last step) that brought nothing new:
        a finding that went away and stayed away for the cooldown while its run stopped logging."""
        if not settle(dict(self.keys), now, self.cooldown, steps):
            return []
        return self._dispatch([], now, quiet=steps)

    def _dispatch(self, observed: Sequence[Observation], now: float,
                  quiet: Mapping[str, int] | None = None) -> list[Alert]:
        alerts, self.keys = dispatch(self.keys, observed, now, self.cooldown, commit=self._commit, say=self._say,
                                     sinks=self.sinks, send=self._send, quiet=quiet)
        return alerts
