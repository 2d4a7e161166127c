"""Turn a path into Runs: find the reader, stream its records into a RunBuilder per run.

A folder that no folder format takes (a plain folder of logs: ``runs/exp1/train.log``, what
``rlvitals example DIR`` writes) is read as the logs in it: see :mod:`rlvitals.ingest._folder`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import EmptyInputError, UnknownFormatError
from ..ingest import Reader, SourceMeta, find_reader, logs_in, readers
from .builder import RunBuilder
from .run import Run


def sources(path: Path, fmt: str | None) -> tuple[list[tuple[Reader, Path]], list[str]]:
    """Every (reader, root) under ``path``, and notes about what a plain folder held besides."""
    reader: Reader | None
    try:
        reader = find_reader(path, fmt)
    except UnknownFormatError:
        if not path.is_dir():
            raise
        reader = None
    if reader is not None and (path.is_dir() == reader.takes_dir or not path.is_dir()):
        return [(reader, root) for root in reader.runs(path)], []
    found = logs_in(path, readers(), fmt)
    if not found.logs:
        what = f"no {fmt} log" if fmt else "no training log rlvitals can read"
        left = f" (it holds {', '.join(found.others[:5])}{', …' if len(found.others) > 5 else ''})" \
            if found.others else " (it is empty)"
        raise UnknownFormatError(f"{path}: this folder is not a run rlvitals knows (W&B, MLflow, TensorBoard, a "
                                 f"Trainer output_dir) and holds {what}, nor do its subfolders{left}; "
                                 "pass the log file itself")
    return found.logs, found.notes


#: how many records are read between two calls of ``load``'s ``progress``
PROGRESS_EVERY = 1 << 14


def load(path: str | Path, fmt: str | None = None,
         progress: Callable[[Path, int], None] | None = None) -> list[Run]:
    """Read every run under ``path``: one for a log file, several for a folder of runs, and for a plain
    folder one per training log in it (and in its subfolders). ``progress(root, records)`` is called
    every :data:`PROGRESS_EVERY` records read (a progress display)."""
    path = Path(path)
    found, notes = sources(path, fmt)
    runs, empty = [], []
    for reader, root in found:
        meta = SourceMeta(format=reader.format, files=[str(root)])
        builder = RunBuilder(meta)
        for count, record in enumerate(reader.read(root, meta, builder.skipped), 1):
            builder.add(record)
            if progress is not None and not count % PROGRESS_EVERY:
                progress(root, count)
        if builder.is_empty and meta.crash is None:
            detail = ""
            if builder.skipped.count:
                detail = f"; {builder.skipped.count} records were unreadable, first: {builder.skipped.reasons[0]}"
            empty.append(f"{root}: read as {reader.format} but it holds no metrics{detail}")
            continue
        meta.notes.extend(notes)
        runs.append(builder.finish(str(root), final=True))  # the Run takes the columns, no copy
    if not runs:
        raise EmptyInputError(empty[0] if len(empty) == 1 else
                              f"{path}: none of its {len(empty)} runs holds metrics; first: {empty[0]}")
    for message in empty:  # a folder of runs keeps its readable runs and says which were empty
        runs[0].notes.append(f"skipped an empty run — {message}")
    return runs
