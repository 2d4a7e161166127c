"""A finding is alerted once it has held long enough that a later look is unlikely to take it back.

Read live, a run is a prefix of itself: its first steps can show a KL outside its band, an entropy fall or a
flat reward that the steps after them put right, and a finding raised on them would be contradicted by the
diagnosis of the whole run. A careful reader waits to see a new finding hold. :class:`Confirmations` holds a
finding back from the alert policy until it has been reported at its level or worse in :attr:`Confirm.looks`
diagnoses of its run in a row, over a span of steps since it was first seen at that level:

- a **warning** (or the warning a failure also is) over :attr:`Confirm.share` of the steps read so far (and
  one step);
- a **failure** over :attr:`Confirm.fail_share` of them: until then it is alerted as the warning it also is.
  A failure is what ``--exit-on fail`` stops a job on, and a check's windows and shares are read on the run
  as far as it goes: the corpus replays (``benchmarks/live_eval.py``) show failures that held for dozens of
  steps and that the whole run reads as a warning or a note (an entropy fall the outcome later explains, half
  of the first 60 steps cut at the length limit that become a third of the run).

A diagnosis that does not report a level starts its count again. Findings already alerted at their level
pass straight on, so holding back never clears one. The checks marked ``final`` pass at once (a NaN: later
steps cannot undo it). Those marked ``when_quiet`` (a crash, read from the traceback the log ends in) wait
for the log to stop growing: a dying trainer prints its traceback at once and flushes its buffered metrics
after it, which may show the training had finished.

A run whose log stopped moving (:meth:`Confirmations.quiet`: silent for a few seconds and three of its usual
gaps between writes) cannot be read differently by a later look: what waits there is let through at its own
level (a trainer that finished, stalled or died). A crash needs only the few seconds.

>>> from rlvitals.diagnosis import Finding
>>> c = Confirmations(Confirm(looks=2, share=0.0))
>>> f = Finding("kl_band", "L1", "warn", {}, {}, {})
>>> [len(c.confirmed(Observation("run.log", s, [f]), {}).findings) for s in (10, 11)]
[0, 1]
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, replace

from ..checks import STATUS_RANK, Status, final_checks, quiet_checks
from ..diagnosis import Finding
from .alerts import KeyState, Observation, alert_key, one_per_check

__all__ = ["Confirm", "Confirmations"]

#: the levels a finding is confirmed at, lowest first
_LEVELS: tuple[Status, ...] = ("warn", "fail")
#: a run whose log was silent for this many of its usual gaps between writes has stopped moving
RUN_GAPS = 3
#: how many gaps between writes the usual one is the median of
GAPS_KEPT = 20


@dataclass(frozen=True)
class Confirm:
    """How long a new finding must hold before it is alerted: ``looks`` diagnoses in a row, over at least
    ``share`` of the steps read for a warning and ``fail_share`` for a failure (and at least one step).
    ``looks=1``: at once, at every level."""

    looks: int = 2
    share: float = 0.05
    fail_share: float = 0.5

    def __post_init__(self) -> None:
        if self.looks < 1 or not 0.0 <= self.share <= 1.0 or not 0.0 <= self.fail_share <= 1.0:
            raise ValueError(f"Confirm: looks={self.looks}, share={self.share}, fail_share={self.fail_share}; "
                             "expected looks ≥ 1 and shares between 0 and 1")


@dataclass(frozen=True)
class _Run:
    """How long one level of one finding has held: the step it was first seen at, looks in a row."""

    since: int
    looks: int


class Confirmations:
    """What each finding has shown over the last looks of its run, and which may reach the policy now."""

    def __init__(self, rule: Confirm | None = None) -> None:
        self.rule = rule or Confirm()
        #: (run, check, level) -> how long that level (or worse) has held
        self._held: dict[tuple[str, str, str], _Run] = {}
        #: (run, check) of the findings held back now
        self._waiting: set[tuple[str, str]] = set()
        #: run -> its last whole diagnosis, and when its log was last written to
        self._last: dict[str, tuple[Observation, float]] = {}
        #: run -> the last times between two writes to its log
        self._gaps: dict[str, deque[float]] = {}

    def confirmed(self, obs: Observation, keys: Mapping[str, KeyState], now: float = 0.0) -> Observation:
        """``obs`` with its warn and fail findings that have not held long enough taken out, or put at the level
        that has (the warning a failure also is, or the level alerted already)."""
        if obs.held:
            self._hold(obs, now)
            return obs
        if self.rule.looks <= 1:
            return obs
        if not obs.partial:
            self._last[obs.run] = (obs, now)
        final, quiet = final_checks(), quiet_checks()
        reps = {f.check: f for f in one_per_check(obs.findings) if f.check not in final}
        allowed = {check: self._allowed((obs.run, check), rep.status, obs.step, keys, check in quiet, obs.partial)
                   for check, rep in reps.items()}
        out: list[Finding] = []
        for f in obs.findings:
            if f.check not in allowed:
                out.append(f)  # not held back: a note, an ok, a final check's
                continue
            level = allowed[f.check]
            if level is not None and STATUS_RANK[f.status] <= STATUS_RANK[level]:
                out.append(f)
            elif level is not None:
                out.append(replace(f, status=level))  # the level that held (or was alerted); the worse one waits
        if not obs.partial:  # a finding a whole diagnosis no longer reports waits afresh
            for at in [k for k in self._held if k[0] == obs.run and k[1] not in reps]:
                del self._held[at]
            self._waiting -= {k for k in self._waiting if k[0] == obs.run and k[1] not in reps}
        return replace(obs, findings=out)

    def quiet(self, now: float, after: float) -> list[Observation]:
        """What waits in runs whose logs stopped moving, each given once:

        - a run silent for ``after`` seconds: its findings of the ``when_quiet`` checks (a crash: the output a
          dying trainer flushes comes at once), as a part of the run (clearing nothing);
        - a run silent for ``after`` seconds and three of its usual gaps between writes (a trainer's step,
          eval or checkpoint can take minutes): its last whole diagnosis — a run that stopped moving cannot be
          read differently by a later look, so what waits has held (a trainer that finished, stalled or died).
        """
        out = []
        quiet = quiet_checks()
        for run, (obs, at) in list(self._last.items()):
            waiting = {k for k in self._waiting if k[0] == run}
            if not waiting or now - at < after:
                continue
            if now - at >= max(after, RUN_GAPS * self._gap(run)):
                out.append(self._let_through(run))
                continue
            crashed = [f for f in obs.findings if f.check in quiet and (run, f.check) in waiting]
            if crashed:
                self._waiting -= {(run, f.check) for f in crashed}
                out.append(replace(obs, findings=crashed, partial=True))
        return out

    def release(self) -> list[Observation]:
        """The reading ended (the caller knows the writer stopped): the last whole diagnosis of every run where
        something waits, each given once, whatever its gaps between writes."""
        return [self._let_through(run) for run in list(self._last) if any(k[0] == run for k in self._waiting)]

    def _let_through(self, run: str) -> Observation:
        """``run``'s last whole diagnosis, all of it let through at its own level: nothing of it waits any more."""
        self._waiting -= {k for k in self._waiting if k[0] == run}
        for k in [k for k in self._held if k[0] == run]:
            del self._held[k]
        obs, _ = self._last.pop(run)
        return obs

    def _gap(self, run: str) -> float:
        """The median time between two writes to ``run``'s log seen so far (0 before two)."""
        gaps = self._gaps.get(run, ())
        return float(statistics.median(gaps)) if gaps else 0.0

    def moved(self, path: str, now: float) -> None:
        """The log at ``path`` was written to at ``now`` (a progress bar, a partial line): its runs are still
        moving, whatever their last diagnosis holds."""
        for run, (obs, at) in list(self._last.items()):
            if run == path or run.startswith(path + "/") or run.startswith(path + ":"):
                self._last[run] = (obs, now)
                if now > at:
                    gaps = self._gaps.setdefault(run, deque(maxlen=GAPS_KEPT))
                    gaps.append(now - at)

    def _hold(self, obs: Observation, now: float) -> None:
        """Remember the findings of a run held whole (its steps an estimate a later look may renumber): if the
        run stops moving with them, no later look will, and :meth:`quiet` lets them through (a buffered trainer
        that died: its traceback is there at once, its numbering never settles)."""
        if obs.partial:
            return
        self._last[obs.run] = (replace(obs, held=False), now)
        self._waiting -= {k for k in self._waiting if k[0] == obs.run}
        self._waiting |= {(obs.run, f.check) for f in one_per_check(obs.findings)}

    def _allowed(self, at: tuple[str, str], status: str, step: int, keys: Mapping[str, KeyState],
                 when_quiet: bool, partial: bool) -> Status | None:
        """The highest level the finding at ``at`` (now at ``status``) may reach the policy at: the highest that
        has held long enough, or the one alerted already (None for none). A look at part of the run (the tail
        pass) counts, but never starts a count again."""
        standing = keys.get(alert_key(*at))
        alerted = standing.alerted if standing is not None and standing.active else None
        shares = {"warn": self.rule.share, "fail": self.rule.fail_share}
        best: Status | None = alerted
        for level in _LEVELS:
            key = (*at, level)
            if STATUS_RANK[status] < STATUS_RANK[level]:
                if not partial:
                    self._held.pop(key, None)  # not at this level now: its count starts again
                continue
            run = self._held.get(key)
            run = _Run(step, 1) if run is None else _Run(run.since, run.looks + 1)
            self._held[key] = run
            long_enough = run.looks >= self.rule.looks and step - run.since >= max(1, int(shares[level] * step))
            if long_enough and not when_quiet and (best is None or STATUS_RANK[level] > STATUS_RANK[best]):
                best = level
        if best is None or STATUS_RANK[best] < STATUS_RANK[status]:
            self._waiting.add(at)
        else:
            self._waiting.discard(at)
        return best
