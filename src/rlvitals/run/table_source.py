"""A log that grows by records (the rows of a Trackio project, the record stream of a SwanLab run), followed
by reading only what each run gained.

Where :class:`~rlvitals.run.snapshot.SnapshotSource` reads a changed log again whole, a reader with
``since`` (:class:`~rlvitals.ingest.Reader`) says what a run gained after the position it returned the time
before; each run's records go on into its own :class:`~rlvitals.run.builder.RunBuilder`, which puts the
values of one step together however the polls cut them. A run that appears in the database later is
picked up at the poll that finds it. Nothing is stored for a restart: the next watcher reads each run from
its first row, once (a query, not a parse of the whole file).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..ingest import Reader, SourceMeta
from .builder import RunBuilder
from .run import Run
from .snapshot import signature


@dataclass
class _Followed:
    meta: SourceMeta
    builder: RunBuilder
    position: Any = None  # what the reader's since() returned last (None: nothing read yet)


class TableSource:
    """Follows the runs of one path (a database, a run folder); ``poll`` reads what they gained, ``runs``
    builds them."""

    def __init__(self, path: Path, reader: Reader, algorithm: str | None = None) -> None:
        assert reader.since is not None
        self.path = path
        self.reader = reader
        self.algorithm = algorithm  # the algorithm the user said the runs are (--algorithm); None: detected
        self.messages: list[str] = []
        #: why the last poll could not read the database (None after a good one)
        self.error: str | None = None
        self._runs: dict[str, _Followed] = {}
        self._sig: tuple[tuple[str, int, int, int], ...] = ()

    def state(self) -> dict[str, Any]:
        return {"kind": "rows"}

    def runs(self) -> list[Run]:
        return [f.builder.finish(root) for root, f in self._runs.items() if not f.builder.is_empty]

    def poll(self, now: float, cost: float = 0.0) -> bool:
        """Read the rows each run gained since the last poll (when the file changed); whether any came."""
        since = self.reader.since
        assert since is not None
        try:
            sig = signature(self.path)
            if sig == self._sig:
                return False
            roots = self.reader.runs(self.path)
        except OSError:
            return False
        got = 0
        try:
            for root in roots:
                followed = self._runs.get(str(root))
                if followed is None:
                    meta = SourceMeta(format=self.reader.format, files=[str(root)], algorithm=self.algorithm)
                    followed = self._runs[str(root)] = _Followed(meta, RunBuilder(meta))
                records, followed.position = since(root, followed.meta, followed.builder.skipped, followed.position)
                for record in records:
                    followed.builder.add(record)
                got += len(records)
        except (InputError, OSError) as exc:  # the database is being created: the next poll reads it
            self.error = str(exc)
            return got > 0
        self.error, self._sig = None, sig
        return got > 0


__all__ = ["TableSource"]
