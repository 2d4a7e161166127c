"""Progress on long work, on a terminal only: a line per log being read, updated as records come in,
gone when the reading is done. Nothing is shown when stderr is not a terminal (a pipe, a log file)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any


@contextlib.contextmanager
def reading(err: IO[str], enabled: bool = True) -> Iterator[Callable[[Path, int], None] | None]:
    """A ``progress`` for :func:`rlvitals.run.load.load` that shows ``reading train.log: 49,152 records``
    on ``err`` while it reads, or None when ``err`` is not a terminal or progress is not wanted."""
    if not enabled or not err.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn

    shown = Progress(SpinnerColumn(), TextColumn("{task.description}"), console=Console(file=err),
                     transient=True, auto_refresh=False)
    tasks: dict[Path, Any] = {}  # rich's TaskID

    def update(root: Path, records: int) -> None:
        words = f"reading {root.name}: {records:,} records"
        if root not in tasks:
            tasks[root] = shown.add_task(words)
        shown.update(tasks[root], description=words)
        shown.refresh()

    with shown:
        yield update
