"""One training logged to several places is one run.

A trainer's ``output_dir`` holds the training once in its own log (``trainer_state.json``, the console
captured in ``train.log``) and again in every tracker it reported to: TensorBoard's event files
(``runs/``), a W&B offline run (``wandb/offline-run-…``), an MLflow store (``mlflow.db``, ``mlruns/``),
Trackio's and SwanLab's databases. Each copy holds the same steps and the same values (a console rounds
them to 4 significant digits, a tracker may keep float32), so they are one run, not five: :func:`merge`
keeps the trainer's own log and names the others in a note. A copy is a twin only on evidence: another
format's log (a tracker's, the console) in the kept log's folder, the same training steps, and the same
values (within :data:`RTOL`) at every compared step of the metrics both hold (the first :data:`METRICS` of
them, with at least :data:`MIN_POINTS` points in all). A copy that differs — other steps, other values,
nothing to compare — stays a run of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..words import Words
from .run import Run

#: relative tolerance of two copies of a value: a console's 4 significant digits (``'%.4g'``: at most 5e-4
#: off), a tracker's float32 (6e-8)
RTOL = 1e-3
#: the metrics compared, at most (the shared ones with the most points first)
METRICS = 8
#: the points compared, at least, for two copies to be twins
MIN_POINTS = 3

#: which log of a training is kept, first found first: the trainer's own structured log (its state file, a JSONL
#: or table), then the trackers' copies (full precision), then a console (values rounded to a few digits; a
#: crash it alone saw is carried over to the kept run)
PRIMARY = ("trl-state", "verl-jsonl", "jsonl", "parquet", "csv", "notebook")
#: what each tracker's copy is called in a note
TRACKERS = {"tensorboard": "TensorBoard", "wandb-offline": "W&B", "mlflow": "MLflow", "trackio": "Trackio",
            "swanlab": "SwanLab", "aim": "Aim", "clearml": "ClearML"}


def _rank(run: Run) -> int:
    if run.format in PRIMARY:
        return PRIMARY.index(run.format)
    return len(PRIMARY) + (0 if run.format in TRACKERS else 1)


def _home(run: Run) -> Path:
    """The folder a run's log stands for: a folder taken whole is itself, a file (or a run inside a
    database, ``mlflow.db#id``) its folder."""
    path = Path(run.path.split("#", 1)[0])
    return path if path.is_dir() else path.parent


def _log(run: Run) -> str:
    return run.path.split("#", 1)[0]


def _copy_of(copy: Run, kept: Run, home: Path) -> bool:
    """Whether ``copy`` may be a copy of ``kept``: another format's log (a tracker's, a console), in ``kept``'s
    folder. Two runs of one format or of one store (two runs of a project with the same values) are two runs."""
    return copy.format != kept.format and _log(copy) != _log(kept) and _home(copy).is_relative_to(home)


def twins(a: Run, b: Run) -> bool:
    """Whether ``b`` is a copy of ``a``: the same training steps, and the same values at the steps of the
    metrics both logged (see the module docstring).

    Example:
        >>> from rlvitals.ingest import Record, SourceMeta
        >>> from rlvitals.run.builder import RunBuilder
        >>> def run(fmt, values):
        ...     b = RunBuilder(SourceMeta(format=fmt))
        ...     for step, v in enumerate(values, 1):
        ...         b.add(Record(step, {"loss": v, "grad_norm": 2 * v}, f"x:{step}"))
        ...     return b.finish(fmt)
        >>> twins(run("jsonl", [0.5, 0.25, 0.125]), run("tensorboard", [0.50001, 0.25, 0.125]))
        True
        >>> twins(run("jsonl", [0.5, 0.25, 0.125]), run("tensorboard", [0.5, 0.3, 0.125]))
        False
    """
    steps_a, steps_b = a.train_steps, b.train_steps
    if len(steps_a) == 0 or not np.array_equal(np.unique(steps_a), np.unique(steps_b)):
        return False
    shared = [m for m in a.metrics if m in set(b.metrics)]
    compared: list[tuple[np.ndarray, np.ndarray]] = []
    for metric in shared:
        (sa, va), (sb, vb) = a.series(metric, finite=True), b.series(metric, finite=True)
        common, ia, ib = np.intersect1d(sa, sb, assume_unique=False, return_indices=True)
        if len(common):
            compared.append((va[ia], vb[ib]))
    compared.sort(key=lambda pair: -len(pair[0]))
    compared = compared[:METRICS]
    if sum(len(x) for x, _ in compared) < min(MIN_POINTS, len(steps_a)):
        return False
    return all(np.allclose(x, y, rtol=RTOL, atol=1e-12) for x, y in compared)


def _where(twin: Run, home: Path) -> str:
    path = Path(twin.path.split("#", 1)[0])
    shown = path.relative_to(home).as_posix() if path.is_relative_to(home) and path != home else path.name
    return shown + (f"#{twin.path.split('#', 1)[1]}" if "#" in twin.path else "")


def _said(primary: Run, copies: Sequence[Run]) -> Words:
    home = _home(primary)
    named = [(TRACKERS.get(c.format), _where(c, home)) for c in copies]
    en = ", ".join(f"{who} ({where})" if who else f"the console ({where})" if c.format.endswith("-console")
                   else f"{c.format} ({where})" for (who, where), c in zip(named, copies, strict=True))
    zh = "、".join(f"{who}（{where}）" if who else f"控制台（{where}）" if c.format.endswith("-console")
                  else f"{c.format}（{where}）" for (who, where), c in zip(named, copies, strict=True))
    return Words(f"{primary.path}: also logged to {en}: the same steps and values, so one run, read from its "
                 f"{primary.format} log",
                 f"{primary.path}：同一训练也记录在 {zh}：步数和数值都相同，是同一个运行，只读取它的 "
                 f"{primary.format} 日志")


def copies_note(run: Run) -> Words | None:
    """The note :func:`merge` gave ``run`` on the copies it stands for, if it gave one (under the path it was read
    from: a training folder's run is listed under the folder's, :mod:`.training`)."""
    return next((n for n in run.notes if isinstance(n, Words) and ": also logged to " in n
                 and "the same steps and values, so one run" in n), None)


def merge(runs: Sequence[Run]) -> list[Run]:
    """``runs`` with the copies of one training folded into its trainer's own log (see the module docstring):
    a copy is looked for among the runs whose log lies in the kept run's folder. The kept run says which
    copies it stands for, and takes a crash only a copy saw (a console's traceback). Order is kept.

    Example:
        >>> merge([])
        []
    """
    order = sorted(range(len(runs)), key=lambda i: _rank(runs[i]))
    folded: dict[int, list[int]] = {}
    taken: set[int] = set()
    for i in order:
        if i in taken:
            continue
        home = _home(runs[i])
        mine = [j for j in order if j != i and j not in taken and j not in folded and _copy_of(runs[j], runs[i], home)
                and twins(runs[i], runs[j])]
        if mine:
            folded[i] = mine
            taken.update(mine)
    out = []
    for i, run in enumerate(runs):
        if i in taken:
            continue
        copies = [runs[j] for j in folded.get(i, [])]
        if copies:
            crash = run.crash or next((c.crash for c in copies if c.crash is not None), None)
            run = replace(run, notes=[*run.notes, _said(run, copies)], crash=crash,
                          crash_scanned=run.crash_scanned or any(c.crash_scanned for c in copies))
        out.append(run)
    return out


__all__ = ["METRICS", "MIN_POINTS", "RTOL", "TRACKERS", "copies_note", "merge", "twins"]
