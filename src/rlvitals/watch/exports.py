"""The watcher's live exports: after each full diagnosis, a run's news goes to its TensorBoard event
file and/or W&B run (:mod:`rlvitals.export.live`).

Exports run after the cycle's alerts are sent (starting W&B takes seconds; an alert must not wait
for it). An export that fails is said once per run and tried again at the next diagnosis; the
watch goes on either way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..diagnosis import Diagnosis
from ..errors import RlvitalsError
from ..export import plan_export
from ..export.live import LiveTensorBoard, LiveWandb


@dataclass(frozen=True)
class WandbTarget:
    """Where ``watch --export-wandb`` logs: the folder of the run files, the project, the user's own
    run to log into (one watched run only), and offline or online."""

    directory: Path
    project: str = "rlvitals"
    run_id: str | None = None
    mode: str = "offline"


class LiveExports:
    """Each watched run's exporters, made at its first diagnosis.

    ``tensorboard``: the LOGDIR of ``--export-tensorboard`` (one run: the file goes there; several: a
    sub-folder per run, named by where its log is below the watched paths' common folder).
    ``derived``: the keys the rollout dumps add (exported as series).
    """

    def __init__(self, tensorboard: Path | None, wandb: WandbTarget | None, watched: Sequence[Path],
                 derived: Callable[[], list[str]], lang: str, note: Callable[[str], None]) -> None:
        self.tensorboard, self.wandb, self.watched = tensorboard, wandb, list(watched)
        self.derived, self.lang, self.note = derived, lang, note
        self.exporters: dict[str, list[LiveTensorBoard | LiveWandb]] = {}
        self.queued: list[tuple[Diagnosis, bool]] = []
        self._failed: set[tuple[str, str]] = set()  # (run, exporter) whose error was said
        self._own_run_used = False

    @property
    def active(self) -> bool:
        return self.tensorboard is not None or self.wandb is not None

    def queue(self, d: Diagnosis, several: bool) -> None:
        """Export ``d`` at the next :meth:`flush`; ``several``: its log holds more than one run."""
        if self.active:
            self.queued.append((d, several))

    def flush(self) -> None:
        queued, self.queued = self.queued, []
        for d, several in queued:
            derived = [k for k in self.derived() if k in d.run.metrics]
            plan = None
            for name, exporter in self._for(d.run.path, several):
                try:
                    plan = plan or plan_export(d, metrics=(), derived=derived, lang=self.lang)
                    exporter.update(plan)
                    self._failed.discard((d.run.path, name))
                except RlvitalsError as exc:
                    if (d.run.path, name) not in self._failed:
                        self._failed.add((d.run.path, name))
                        self.note(str(exc))

    def _for(self, path: str, several: bool) -> list[tuple[str, LiveTensorBoard | LiveWandb]]:
        made = self.exporters.get(path)
        if made is None:
            made = []
            sub = None
            if len(self.watched) > 1 or several:
                top = Path(os.path.commonpath([str(p.parent) for p in self.watched]))
                sub = Path(os.path.relpath(path, top))
            try:
                if self.tensorboard is not None:
                    made.append(LiveTensorBoard(self.tensorboard / sub if sub else self.tensorboard))
                if self.wandb is not None:
                    made.append(self._wandb(path, sub))
            except RlvitalsError as exc:
                self.note(str(exc))
            self.exporters[path] = made
        return [(type(e).__name__, e) for e in made]

    def _wandb(self, path: str, sub: Path | None) -> LiveWandb:
        target = self.wandb
        assert target is not None
        run_id = target.run_id if not self._own_run_used else None
        if target.run_id and self._own_run_used:
            self.note(f"--wandb-run-id {target.run_id} is the W&B run of the first run exported; {path} goes to a "
                      "new W&B run")
        self._own_run_used = True
        return LiveWandb(target.directory, key=str(sub) if sub else Path(path).name, project=target.project,
                         run_id=run_id, mode=target.mode, lang=self.lang)

    def close(self) -> None:
        for made in self.exporters.values():
            for exporter in made:
                if isinstance(exporter, LiveWandb):
                    try:
                        exporter.close()
                    except Exception as exc:  # noqa: BLE001 (stopping: say it, close the rest)
                        self.note(f"--export-wandb: the W&B run did not finish cleanly ({type(exc).__name__}: "
                                  f"{exc})")
