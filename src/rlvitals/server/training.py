"""A training folder served as one run: one training logged to several places, a trainer's ``output_dir`` before
its first checkpoint (the console ``train.log`` beside the trackers' copies: ``runs/``, ``wandb/``, ``mlflow.db``,
``trackio/``; :mod:`.discover` finds it).

:class:`TrainingFollow` reads the folder whole at each change, as ``rlvitals diagnose FOLDER`` reads it
(:func:`rlvitals.run.load`: the copies that hold the same steps and values are folded into the log kept,
:mod:`rlvitals.run.twins`), and :func:`standing_for` lists the run that stands for the training under the folder's
own path, as a Trainer's output_dir is listed once it holds a ``trainer_state.json``: the run keeps its id when
the trainer writes its first checkpoint.

Live, the copies are written at different moments: a tracker flushes every few seconds or minutes (TensorBoard),
a checkpoint's ``trainer_state.json`` stops at its step while the trackers go on. A copy that agrees with the
training's run on every step both hold but stops at another step is a copy still being written, not another
training: it is read with that run, not listed as a run of its own that would vanish at the next look, and the
run is read from the copy that reaches furthest (a step once shown stays shown). A copy whose values differ is a
run of its own, under its own path, as diagnose lists it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ..run import Follow, Run, SnapshotSource, copies_note, merge
from ..words import Words


class TrainingFollow(Follow):
    """A training folder followed: re-read whole when a file in it changes (at most once per ``min_gap`` s), its
    runs as :func:`standing_for` names them.

    Example:
        >>> follow = TrainingFollow(Path("out"), None, 2.0)  # doctest: +SKIP
        >>> follow.poll(0.0); [run.path for run in follow.runs()]  # doctest: +SKIP
        ['out']
    """

    def _open(self) -> bool:
        # no reader takes the folder whole (until its first checkpoint): it is read as diagnose reads it
        self.inner = SnapshotSource(self.path, self.fmt, self.min_gap, self.algorithm)
        return True

    def runs(self, last: int | None = None) -> list[Run]:
        runs = standing_for(self.path, super().runs())  # whole runs: copies are compared on the steps they share
        return runs if last is None else [run.tail(last) for run in runs]


def standing_for(folder: Path, runs: list[Run]) -> list[Run]:
    """``runs`` (a reading of training folder ``folder``) with the run that stands for the training under
    ``folder``'s path, and the copies still being written read with it (see the module docstring). The run that
    stands for it: the folder's own (a Trainer output_dir's), else the one the trackers' copies were folded into
    (:func:`rlvitals.run.copies_note`), else the only one; none when two trainings each have their copies, or
    when a folder of logs that are no copies of one another holds no run that stands out.

    Example:
        >>> standing_for(Path("out"), [])
        []
    """
    anchor = _anchor(folder, runs)
    if anchor is None:
        return runs
    group = [anchor, *(run for run in runs if run is not anchor and _same_so_far(anchor, run))]
    if len(group) == 1 and len(runs) > 1 and anchor.path != str(folder) and copies_note(anchor) is None:
        return runs  # logs that are no copies of one another: none stands for the folder
    best = max(group, key=_reach)  # the first of those that reach furthest: the anchor when they all do
    behind = [run for run in group if run is not best]
    notes = [*best.notes, _read_with(folder, best, behind)] if behind else best.notes
    kept, read = replace(best, path=str(folder), notes=notes), {id(run) for run in group}
    return [kept if run is anchor else run for run in runs if run is anchor or id(run) not in read]


def _anchor(folder: Path, runs: list[Run]) -> Run | None:
    own = next((run for run in runs if run.path == str(folder)), None)
    if own is not None:
        return own
    kept = [run for run in runs if copies_note(run) is not None]
    return kept[0] if len(kept) == 1 else runs[0] if runs and not kept else None


def _reach(run: Run) -> int:
    steps = run.train_steps
    return int(steps.max()) if len(steps) else -1


def _upto(run: Run, step: int) -> Run:
    """``run`` cut to its steps up to ``step`` (to compare it with a copy that stops there)."""
    n = int(np.searchsorted(run.steps, step, side="right"))
    if n >= run.frame.height:
        return run
    return replace(run, frame=run.frame.head(n), raw=run.raw.head(n), train_mask=run.train_mask[:n])


def _same_so_far(a: Run, b: Run) -> bool:
    """Whether ``b`` is a copy of ``a`` that stops at another step: the two are twins
    (:func:`rlvitals.run.twins.merge` folds one into the other) on the steps both hold."""
    upto = min(_reach(a), _reach(b))
    if upto < 0 or _reach(a) == _reach(b):
        return False  # the same extent: load()'s merge compared them as they are
    return len(merge([_upto(a, upto), _upto(b, upto)])) == 1


def _read_with(folder: Path, best: Run, behind: list[Run]) -> Words:
    """The note on the copies read with ``best``: where each stops."""
    def name(run: Run) -> str:
        path = Path(run.path.split("#", 1)[0])
        where = path.relative_to(folder).as_posix() if path.is_relative_to(folder) and path != folder else ""
        return (where + (f"#{run.path.split('#', 1)[1]}" if "#" in run.path else "") or run.format)

    shown = name(best)
    en = ", ".join(f"{name(run)} (to step {_reach(run)})" for run in behind)
    zh = "、".join(f"{name(run)}（到第 {_reach(run)} 步）" for run in behind)
    return Words(f"serve: {folder}: {en} agree with {shown} on every step they share, the copies being written at "
                 "different moments (a tracker flushes later, a checkpoint holds the steps up to it), so they are the "
                 f"same run, read from {shown}, which reaches furthest (step {_reach(best)})",
                 f"serve：{folder}：{zh} 与 {shown} 在共有的每一步上都一致，只是各份记录写入的时机不同"
                 f"（跟踪器稍后才写入，检查点只含到它为止的步），所以是同一个运行，读取的是走得最远的 {shown}"
                 f"（到第 {_reach(best)} 步）")


__all__ = ["TrainingFollow", "standing_for"]
