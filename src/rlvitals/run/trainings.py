"""Several trainings in one console log: where the step count starts again, and one Run for each.

A console log is a capture of a program's output, and it is often appended to: a second launch after a
crash (``>> train.log``), a script that trains twice, a job that starts again from step 1 because its
checkpoint did not load. The records say where: the step count goes back to where the training began.
The rule, on the steps of the records in the order they were read (docs/formats/consoles.md says why):

* a record at a step **below the highest step** of the training being read, and **at or below its first
  step** (the first above 0), begins another training: 1..50 then 1..80, or 101..200 then 101..250;
* a step at or above the highest continues the training (51..100 after 1..50: a resumed run that goes
  on counting), and so does one that goes back less far (41..100 after 1..47: a run resumed from its
  checkpoint at step 40 logs 41..47 again, and the later values win, as :func:`~rlvitals.run.load_launches`
  joins the logs of one run's launches);
* step 0 is not a training's first step: veRL validates at step 0 before its first step, and TRL attaches
  an evaluation before the first logged step to step 0. So 0, 1..50 then 0, 1..80 is two trainings (the
  second begins at its step 0), and 0, 1..50 then 1..80 too;
* a record at the step just logged (veRL's validation after the training line of the same step, TRL's
  evaluation after its training step) is never a new training.

A reader may know more than the steps (:attr:`~rlvitals.ingest.SourceMeta.starts`): TRL numbers its dicts by
order, so the TRL reader says where a training begins from its own evidence (a dict after the summary of
the training before, the training bar drawn anew from its start).

The first training keeps the log's name, so a run followed live keeps its name when a second training is
appended to its log; the later ones are ``<log>#2``, ``<log>#3``, … in the order they appear. Each
training gets its own crash (the tracebacks that ended it: :meth:`~rlvitals.ingest._crash.CrashScanner.account`),
its own skipped lines, and a note saying where in the log it is.

Example:
    >>> import numpy as np
    >>> restarts(np.array([0, 1, 2, 3, 0, 1, 2, 1, 2, 3, 4, 3, 4]))  # 0,1..3 / 0,1,2 / 1..4, then 3 again
    [4, 7]
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ..ingest import STEP_RANGE, Columns, Record, SkipLog, SourceMeta, split_rows, survived_note
from ..words import Words
from .builder import RunBuilder

if TYPE_CHECKING:
    from .run import Run

__all__ = ["Restarts", "Trainings", "restarts", "training_name"]


class Restarts:
    """The rule of the module docstring, one record at a time: :meth:`step` says whether a record at that
    step begins another training.

    Example:
        >>> rule = Restarts()
        >>> [rule.step(s) for s in (0, 1, 2, 2, 1, 2)]
        [False, False, False, False, True, False]
    """

    __slots__ = ("first", "top")

    def __init__(self) -> None:
        self.first: int | None = None  # the training's first step above 0
        self.top: int | None = None  # its highest step

    def step(self, step: int) -> bool:
        if type(step) is not int or not STEP_RANGE[0] <= step <= STEP_RANGE[1]:
            return False  # a step no run can have (its record is skipped): it says nothing of the count
        top = self.top
        if top is not None and step < top:
            first = self.first
            if first is None or step > first:
                return False  # a step logged again after a resume: the same training
            self.first, self.top = (step if step > 0 else None), step
            return True
        self.top = step
        if self.first is None and step > 0:
            self.first = step
        return False


def restarts(steps: np.ndarray) -> list[int]:
    """The rows (in the order read) at which another training begins; a log whose steps never go below the
    highest before (nearly every log) is told apart without a loop over its rows."""
    if len(steps) < 2 or not bool(np.any(steps[1:] < np.maximum.accumulate(steps)[:-1])):
        return []
    rule = Restarts()
    return [row for row, step in enumerate(steps.tolist()) if rule.step(step)]


def training_name(path: str, k: int) -> str:
    """The name of training ``k`` (from 0) of the log at ``path``: the log's own for the first.

    >>> training_name("train.log", 0), training_name("train.log", 1)
    ('train.log', 'train.log#2')
    """
    return path if k == 0 else f"{path}#{k + 1}"


class Trainings:
    """The records of one log into one :class:`RunBuilder` per training (with ``split``: a console log, which
    may hold several; otherwise all into one): :meth:`add` and :meth:`add_columns` take what the reader
    gives (records, or columns with the line of each row), :meth:`finish` makes a Run of each."""

    def __init__(self, meta: SourceMeta, skipped: SkipLog, split: bool = True) -> None:
        self.meta = meta
        self.split = split
        self.builders = [RunBuilder(meta, skipped=skipped)]
        self.rule = Restarts()
        self.order = 0  # the records so far, summaries left out (how SourceMeta.starts counts them)
        #: per training: its first and last record, as ``file:line`` (a record's ``where``) or a line number
        self.bounds: list[list[str | int]] = [["", ""]]

    @property
    def is_empty(self) -> bool:
        return all(b.is_empty for b in self.builders)

    def add(self, record: Record) -> None:
        if self.split and record.kind != "summary":
            begins = self.rule.step(record.step)
            if self.order in self.meta.starts and not begins:
                self.rule = Restarts()
                self.rule.step(record.step)
                begins = True
            if begins and self.order:
                self._begin()
            bounds = self.bounds[-1]
            bounds[0] = bounds[0] or record.where
            bounds[1] = record.where
            self.order += 1
        self.builders[-1].add(record)

    def add_columns(self, columns: Columns) -> None:
        """A reader's columns (its rows in the order read), cut where a training begins."""
        if not self.split:
            self.builders[0].add_columns(columns)
            return
        steps = np.frombuffer(columns.steps, dtype=np.int64)
        rows = restarts(steps)
        lines = columns.lines
        parts = split_rows(columns, rows) if rows else [columns]
        edges = [0, *rows, len(steps)]
        for k, part in enumerate(parts):
            if k:
                self._begin()
            if lines is not None and edges[k + 1] > edges[k]:
                self.bounds[-1] = [lines[edges[k]], lines[edges[k + 1] - 1]]
            self.builders[-1].add_columns(part)
        self.order += len(steps)

    def _begin(self) -> None:
        self.builders.append(RunBuilder(self.meta, skipped=SkipLog()))
        self.bounds.append(["", ""])

    def finish(self, path: str) -> list[Run]:
        """One Run per training (the builders give their columns away: nothing may be added after)."""
        if len(self.builders) == 1:
            return [self.builders[0].finish(path, final=True)]
        meta, scanner = self.meta, self.meta.tracebacks
        spans = [(_line(first), _line(last)) for first, last in self.bounds]
        endings = scanner.account(spans) if scanner is not None else []
        whole = scanner.survived() if scanner is not None else (0, None)
        notes = [n for n in meta.notes if not (whole[0] and n == survived_note(path, *whole))]
        skips = _split_skips(self.builders[0].skipped, path, [first for first, _ in spans])
        runs = []
        for k, builder in enumerate(self.builders):
            name = training_name(path, k)
            end = endings[k] if k < len(endings) else None
            said = [_where(path, k, spans)]
            if end is not None and end.survived:
                said.append(survived_note(name, end.survived, end.first_survived))
            builder.meta = replace(meta, crash=end.crash if end is not None else None, notes=[*notes, *said])
            if k:
                skips[k].merge(builder.skipped)
            builder.skipped = skips[k]
            runs.append(builder.finish(name, final=True))
        return runs


def _line(where: str | int) -> int:
    """The line of a record's ``where`` (``file:line``); 0 when it names none."""
    if isinstance(where, int):
        return where
    tail = where.rpartition(":")[2]
    return int(tail) if tail.isdigit() else 0


def _where(path: str, k: int, spans: list[tuple[int, int]]) -> Words:
    """Where training ``k`` is in the log, and why the log was cut there."""
    starts = ", ".join(str(first) for first, _ in spans[1:])
    first, last = spans[k]
    lines = "line" if len(spans) == 2 else "lines"
    return Words(f"{path}: this log holds {len(spans)} trainings, one after the other (the step count starts again "
                 f"at {lines} {starts}: another launch appended to the log, or a script that trained again); this is "
                 f"training {k + 1} of {len(spans)}, lines {first}–{last}, read as {training_name(path, k)}",
                 f"{path}：这份日志里先后有 {len(spans)} 次训练（步数在第 {starts} 行重新开始：日志后面追加了另一次"
                 f"启动，或者脚本又训练了一次）；这是其中第 {k + 1} 次，第 {first}–{last} 行，"
                 f"读作 {training_name(path, k)}")


def _split_skips(skipped: SkipLog, path: str, starts: list[int]) -> list[SkipLog]:
    """The lines the reader skipped, each with the training its line falls in (by the line its reason
    names); those only counted (past the reasons kept) stay with the training of the last reason kept."""
    out = [SkipLog() for _ in starts]
    line = re.compile(re.escape(path) + r":(\d+):")
    k = 0
    for reason in skipped.reasons:
        m = line.match(reason)
        if m is not None:
            k = max(bisect_right(starts, int(m.group(1))) - 1, 0)
        out[k].count += 1
        out[k].reasons.append(reason)
    out[k].count += skipped.count - len(skipped.reasons)
    return out
