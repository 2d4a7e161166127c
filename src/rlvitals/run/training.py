"""One training logged to several places, read as one run while it is written: a trainer's ``output_dir`` before
its first checkpoint (the console ``train.log`` beside the trackers' copies: ``runs/``, ``wandb/``, ``mlflow.db``,
``trackio/``) and after it (its ``trainer_state.json``, written at each checkpoint, behind the trackers).

:func:`one_training` says whether logs found directly in a folder are such a training (``serve``'s discovery and
:class:`~rlvitals.run.follow.Follow` ask it of a folder no reader takes whole: ``rlvitals watch`` and ``serve`` then
read the folder whole, as ``rlvitals diagnose FOLDER`` does), and :func:`as_one_training` — applied by
:func:`rlvitals.run.load` to what it read of a folder, after :mod:`.twins` folded the copies that hold the same
steps and values — lists the run that stands for the training under the folder's own path (:func:`standing_for`),
as a Trainer's output_dir is listed once it holds a ``trainer_state.json``: the run keeps its id (and its alerts
their keys) when the trainer writes its first checkpoint.

Live, the copies are written at different moments: a tracker flushes every few seconds or minutes (TensorBoard),
a checkpoint's ``trainer_state.json`` stops at its step while the trackers go on. A copy that agrees with the
training's run on every step both hold but stops at another step is a copy still being written, not another
training: it is read with that run, not listed as a run of its own that would vanish at the next look, and the
run is read from the copy that reaches furthest (a step once shown stays shown). A copy whose values differ is a
run of its own, under its own path, as diagnose lists it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..words import Words
from .run import Run
from .twins import TRACKERS, copies_note, merge

#: the format of a Trainer's ``output_dir`` read whole (its checkpoints' ``trainer_state.json``), as ingest names it
OUTPUT_DIR = "trl-state"


def one_training(folder: Path, logs: Sequence[tuple[Path, str]]) -> bool:
    """Whether ``logs`` (each with its reader's format), found in ``folder``, are one training logged to several
    places: at least two, of at least two formats, a tracker's copy among them, all directly in ``folder``, one of
    them a file (the console, ``mlflow.db``: diagnose folds copies only into a log whose folder holds them, so two
    trackers' folders alone stay two runs) and no folder among them but a tracker's (a run folder of another
    kind makes ``folder`` a folder of runs).

    Example:
        >>> out = Path("out")
        >>> one_training(out, [(out / "train.log", "trl-console"), (out / "runs", "tensorboard")])
        True
        >>> one_training(out, [(out / "train.log", "trl-console"), (out / "exp" / "runs", "tensorboard")])
        False
    """
    formats = [fmt for _, fmt in logs]
    if (len(logs) < 2 or len(set(formats)) < 2 or not any(f in TRACKERS for f in formats)
            or any(path.parent != folder for path, _ in logs)):
        return False  # the usual case, told without a look at the disk
    dirs = [path.is_dir() for path, _ in logs]
    return not all(dirs) and not any(d and f and f not in TRACKERS for (_, f), d in zip(logs, dirs, strict=True))


def direct_logs(folder: Path) -> list[tuple[Path, str]]:
    """The logs directly in ``folder`` (not hidden) with their readers' formats: what :func:`one_training` judges
    when nothing takes the folder whole yet."""
    from ..errors import RlvitalsError
    from ..ingest import find_reader

    out = []
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return []
    for child in children:
        if child.name.startswith("."):
            continue
        try:
            out.append((child, find_reader(child, None).format))
        except (RlvitalsError, OSError):
            continue  # not a log (a README, completions/), or not one yet
    return out


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


def as_one_training(folder: Path, runs: list[Run], roots: Sequence[tuple[Path, str]]) -> list[Run]:
    """``runs``, read from ``roots`` (each log's root and format) under ``folder``, with the run that stands for the
    training under ``folder``'s path (:func:`standing_for`) when ``folder`` is a trainer's output_dir or a training
    folder (:func:`one_training` of the entries of ``folder`` the roots lie in: ``wandb/`` for its runs); else as
    they are.

    Example:
        >>> as_one_training(Path("out"), [], [])
        []
    """
    tops: dict[Path, str] = {}
    for root, fmt in roots:
        parts = root.relative_to(folder).parts if root.is_relative_to(folder) else None
        if parts is not None:
            tops.setdefault(folder / parts[0] if parts else folder, fmt)
    if tops.get(folder) == OUTPUT_DIR or one_training(folder, list(tops.items())):
        return standing_for(folder, runs)
    return runs


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


def behind_note(run: Run) -> Words | None:
    """The note :func:`standing_for` gave ``run`` on the copies read with it that stop at other steps, if any."""
    return next((n for n in run.notes if isinstance(n, Words) and " on every step they share, the copies being "
                 "written at different moments" in n), None)


def _read_with(folder: Path, best: Run, behind: list[Run]) -> Words:
    """The note on the copies read with ``best``: where each stops."""
    def name(run: Run) -> str:
        path = Path(run.path.split("#", 1)[0])
        where = path.relative_to(folder).as_posix() if path.is_relative_to(folder) and path != folder else ""
        return (where + (f"#{run.path.split('#', 1)[1]}" if "#" in run.path else "") or run.format)

    shown = name(best)
    en = ", ".join(f"{name(run)} (to step {_reach(run)})" for run in behind)
    zh = "、".join(f"{name(run)}（到第 {_reach(run)} 步）" for run in behind)
    agree = "agrees" if len(behind) == 1 else "agree"
    return Words(f"{folder}: {en} {agree} with {shown} on every step they share, the copies being written at "
                 "different moments (a tracker flushes later, a checkpoint holds the steps up to it), so they are the "
                 f"same run, read from {shown}, which reaches furthest (step {_reach(best)})",
                 f"{folder}：{zh} 与 {shown} 在共有的每一步上都一致，只是各份记录写入的时机不同"
                 f"（跟踪器稍后才写入，检查点只含到它为止的步），所以是同一个运行，读取的是走得最远的 {shown}"
                 f"（到第 {_reach(best)} 步）")


__all__ = ["OUTPUT_DIR", "as_one_training", "behind_note", "direct_logs", "one_training", "standing_for"]
