"""The dashboard's own alerts: what ``rlvitals watch`` would say of each served run, decided as the run grows.

A run page lists the alerts of its run. Where ``rlvitals watch --alert jsonl:FILE`` writes into the served
folders, those are the alerts that were sent (:mod:`.alert_files`). Where no watcher runs, the dashboard decides
them itself, on the same live path as ``watch`` and the ``Monitor`` (:class:`rlvitals.live.Alerting`, with
``watch``'s defaults: a new finding waits until it has held, a run whose steps are an estimate is held, a
finding the diagnosis stops holding is **cleared**), from each diagnosis the dashboard makes of a growing log.

Only runs the dashboard saw grow have such a list: a log read once, whole, has no live history, and its findings
are on its page already. The lists live in memory (the last :data:`MAX_KEPT` alerts of each run): a restarted
dashboard starts them again, from the runs that grow after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..diagnosis import Diagnosis
from ..live import Alert, Alerting, Confirm, Cooldown, KeyState, read_to
from ..run.run import Run
from .alert_files import Said, said_of

__all__ = ["MAX_KEPT", "LiveAlerts"]

#: the alerts kept of one run, newest
MAX_KEPT = 500


class LiveAlerts:
    """Each served run's alerts, decided from the dashboard's diagnoses by the rules of ``rlvitals watch``."""

    def __init__(self, confirm: Confirm | None = None, cooldown: Cooldown | None = None) -> None:
        self.alerting = Alerting(confirm or Confirm(), cooldown or Cooldown(), commit=self._commit)
        self._told: dict[str, list[Said]] = {}  # a run (its path as read) -> its alerts, oldest first
        self._grew: set[str] = set()  # the runs read again with more steps (their path as read)
        self._steps: dict[str, int] = {}  # run (as read) -> its last step at its last diagnosis
        self._changed: set[str] = set()

    def _commit(self, changed: Mapping[str, KeyState], alerts: Sequence[Alert]) -> list[int]:
        for alert in alerts:
            said = said_of(alert.payload())
            if said is not None:
                kept = self._told.setdefault(said[0], [])
                kept.append(said[1])
                del kept[:-MAX_KEPT]
                self._changed.add(said[0])
        return [0] * len(alerts)

    def seen(self, run: Run, d: Diagnosis, now: float) -> set[str]:
        """``run`` was diagnosed (``d``) at ``now``; the runs (their paths as read) whose alerts changed."""
        step, before = read_to(run), self._steps.get(run.path)
        if before is not None and step > before:
            self._grew.add(run.path)
        self._steps[run.path] = step
        self.alerting.observe(self.alerting.look(run, d), now)
        return self._take()

    def moved(self, path: str, now: float) -> None:
        """The log at ``path`` was written to at ``now``: its runs are still moving."""
        self.alerting.moved(path, now)

    def tick(self, now: float, after: float) -> set[str]:
        """What waits in runs that stopped moving for ``after`` seconds, and the findings due to be cleared in
        runs that brought nothing new; the runs (their paths as read) whose alerts changed."""
        self.alerting.quiet(now, after)
        self.alerting.settle(now, dict(self._steps))
        return self._take()

    def of(self, run: str) -> list[Said]:
        """The alerts of the run read at ``run``, oldest first; none for a run the dashboard did not see grow."""
        if run not in self._grew:
            return []
        return list(self._told.get(run, []))

    def _take(self) -> set[str]:
        """The runs whose listed alerts changed: only those seen growing list any."""
        changed, self._changed = self._changed, set()
        return changed & self._grew

