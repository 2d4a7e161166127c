"""``rlvitals watch --rollouts DIR --probe-every N``: the followed rollouts probed as the run trains.

Each step the rollout follower reads for the first time (:meth:`.rollouts.RolloutFollow.take_new`) whose number is
due (:func:`rlvitals.probe.periodic.due`, the rule of ``demo --probe`` and the TRL callback) and has no record in
the probe file yet (a restarted watcher does not probe a step again) goes to a
:class:`~rlvitals.probe.periodic.ProbeWorker`: its thread reads the step's rollouts, asks the model, and merges
the step's results into ``rlvitals-probes.jsonl`` beside the rollouts. The watch loop never waits for it: the
follower reads that file again when it changes, as it reads a file ``rlvitals probe`` wrote, so the next
diagnosis judges the new checkpoint (the ``faithfulness`` check) and its findings alert like any other.
"""

from __future__ import annotations

from pathlib import Path

from ..probe import PeriodicProbe, ProbeWorker, due
from ..rollout import PROBES_FILE, read_probe_results
from ..words import Words
from .rollouts import RolloutFollow

__all__ = ["LiveProbes"]


class LiveProbes:
    """Probes the due steps of ``follow`` as ``plan`` says, in the background; see the module.

    Example:
        >>> probes = LiveProbes(PeriodicProbe(every=10, backend=make_backend), follow)  # doctest: +SKIP
        >>> follow.poll(); probes.poll()  # doctest: +SKIP
        []
    """

    def __init__(self, plan: PeriodicProbe, follow: RolloutFollow) -> None:
        self.plan, self.follow = plan, follow
        follow.track_new = True
        self.path = (follow.folder if follow.folder.is_dir() else follow.folder.parent) / PROBES_FILE
        self.worker = ProbeWorker(plan, self.path, name="rlvitals-watch-probe")
        self._known = self._probed_before(self.path)

    @staticmethod
    def _probed_before(path: Path) -> set[int]:
        """The steps the probe file already holds (none when there is no readable file)."""
        if not path.is_file():
            return set()
        try:
            return {int(s) for s in read_probe_results(path).frame["step"].to_list()}
        except Exception:  # noqa: BLE001 (an unreadable file is said by the follower; here it only means none)
            return set()

    def poll(self) -> list[Words]:
        """Hand the due new steps to the worker (it returns at once); what the worker has to say since last time."""
        for step, rollouts in self.follow.take_new():
            if due(step, self.plan.every) and step not in self._known:
                self.worker.submit(step, rollouts)
        return self.worker.messages()

    def close(self, timeout: float) -> list[Words]:
        """Let a probe under way finish (``timeout`` seconds at most), then stop; what is left to say."""
        self.worker.close(timeout)
        return self.worker.messages()
