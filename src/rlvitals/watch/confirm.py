"""A finding is alerted once it has held long enough that a later look is unlikely to take it back.

Read live, a run is a prefix of itself: its first steps can show a KL outside its band, an entropy fall or a
flat reward that the steps after them put right, and a finding raised on them would be contradicted by the
diagnosis of the whole run. A careful reader waits to see a new finding hold. :class:`Confirmations` holds a
finding (or a worse level of one already alerted) back from the alert policy until it has been reported at
that level or worse in :attr:`Confirm.looks` diagnoses of its run in a row, spanning at least
:attr:`Confirm.share` of the run's steps read so far (and one step). A diagnosis that does not report it starts
the count again. Findings already alerted at their level pass straight on, so holding back never clears one,
and so do those of the checks marked ``final`` (a crash, a NaN: later steps cannot undo them, and a run that
died brings no next look).
The figures come from ``benchmarks/live_eval.py``: the corpus replayed as it was written, the alerts the whole
run contradicts against the lead time lost (docs/integrations.md).

>>> from rlvitals.diagnosis import Finding
>>> c = Confirmations(Confirm(looks=2, share=0.0))
>>> f = Finding("kl_band", "L1", "warn", {}, {}, {})
>>> [len(c.confirmed(Observation("run.log", s, [f]), {}).findings) for s in (10, 11)]
[0, 1]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from ..checks import STATUS_RANK, final_checks
from ..diagnosis import Finding
from .alerts import KeyState, Observation, alert_key, one_per_check

__all__ = ["Confirm", "Confirmations"]


@dataclass(frozen=True)
class Confirm:
    """How long a new finding must hold before it is alerted: ``looks`` diagnoses in a row, over at least
    ``share`` of the steps read (and at least one step). ``looks=1``: at once."""

    looks: int = 2
    share: float = 0.05


class Confirmations:
    """What each finding has shown over the last looks of its run, and which may reach the policy now."""

    def __init__(self, rule: Confirm | None = None) -> None:
        self.rule = rule or Confirm()
        #: (run, check) -> (the level waiting, the step it was first seen at, looks in a row)
        self._waiting: dict[tuple[str, str], tuple[str, int, int]] = {}
        #: run -> its last whole diagnosis and when it was made
        self._last: dict[str, tuple[Observation, float]] = {}

    def confirmed(self, obs: Observation, keys: Mapping[str, KeyState], now: float = 0.0) -> Observation:
        """``obs`` with its warn and fail findings that have not held long enough taken out (or, for a finding
        alerted at a lower level, put back at that level)."""
        if self.rule.looks <= 1 or obs.held:
            return obs
        if not obs.partial:
            self._last[obs.run] = (obs, now)
        final = final_checks()
        reps = {f.check: f for f in one_per_check(obs.findings) if f.check not in final}
        ready = {check: self._held_long_enough((obs.run, check), rep.status, obs.step, keys)
                 for check, rep in reps.items()}
        out: list[Finding] = []
        for f in obs.findings:
            wait = ready.get(f.check)
            if wait is None or wait is True:
                out.append(f)
            elif wait in ("warn", "fail"):
                out.append(replace(f, status="fail" if wait == "fail" else "warn"))  # the worse level waits
        if not obs.partial:  # a finding a whole diagnosis no longer reports waits afresh
            for run, check in [k for k in self._waiting if k[0] == obs.run and k[1] not in reps]:
                del self._waiting[run, check]
        return replace(obs, findings=out)

    def quiet(self, now: float, after: float) -> list[Observation]:
        """The last whole diagnoses of runs that brought nothing new for ``after`` seconds while a finding of
        theirs waits: a run that stopped moving cannot be read differently by a later look, so what waits has
        held (a trainer that finished, stalled or died without a traceback). Each is given once."""
        out = []
        for run, (obs, at) in list(self._last.items()):
            waiting = [k for k in self._waiting if k[0] == run]
            if waiting and now - at >= after:
                for k in waiting:
                    del self._waiting[k]
                del self._last[run]
                out.append(obs)
        return out

    def _held_long_enough(self, at: tuple[str, str], status: str, step: int,
                          keys: Mapping[str, KeyState]) -> bool | str:
        """True when the finding may reach the policy at ``status``; else the level it stands at (the one
        alerted, "" for none)."""
        standing = keys.get(alert_key(*at))
        level = standing.alerted if standing is not None and standing.active else ""
        if level and STATUS_RANK[status] <= STATUS_RANK[level]:
            self._waiting.pop(at, None)
            return True  # alerted at this level already: nothing to wait for
        waiting = self._waiting.get(at)
        if waiting is None or waiting[0] != status:
            waiting = (status, step, 0)
        since, looks = waiting[1], waiting[2] + 1
        if looks >= self.rule.looks and step - since >= max(1, int(self.rule.share * step)):
            self._waiting.pop(at, None)
            return True
        self._waiting[at] = (status, since, looks)
        return level
