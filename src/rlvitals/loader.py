"""Turn a path into Runs: find the reader, stream its records into a RunBuilder per run."""

from __future__ import annotations

from pathlib import Path

from .errors import EmptyInputError
from .ingest import SourceMeta, find_reader
from .run import Run, RunBuilder


def load(path: str | Path, fmt: str | None = None) -> list[Run]:
    """Read every run under ``path``: one for a log file, several for a folder of runs."""
    path = Path(path)
    reader = find_reader(path, fmt)
    roots = reader.runs(path)
    runs, empty = [], []
    for root in roots:
        meta = SourceMeta(format=reader.format, files=[str(root)])
        builder = RunBuilder(meta)
        for record in reader.read(root, meta, builder.skipped):
            builder.add(record)
        if builder.records == 0 and not builder._summary and meta.crash is None:
            detail = ""
            if builder.skipped.count:
                detail = f"; {builder.skipped.count} records were unreadable, first: {builder.skipped.reasons[0]}"
            empty.append(f"{root}: read as {reader.format} but it holds no metrics{detail}")
            continue
        runs.append(builder.finish(str(root)))
    if not runs:
        raise EmptyInputError(empty[0] if len(empty) == 1 else
                              f"{path}: none of its {len(empty)} runs holds metrics; first: {empty[0]}")
    for message in empty:  # a folder of runs keeps its readable runs and says which were empty
        runs[0].notes.append(f"skipped an empty run — {message}")
    return runs
