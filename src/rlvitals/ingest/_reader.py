"""The reader contract: how a format is recognised and streamed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .record import Record, SkipLog, SourceMeta

if TYPE_CHECKING:
    from .columnar import Columns


class ReadColumns(Protocol):
    """A reader's whole-file read into :class:`~rlvitals.ingest.columnar.Columns`: ``progress`` is told
    how many records are in as the reading goes, ``min_bytes`` is the size from which two processes
    read the file (where the reader can split it)."""

    def __call__(self, path: Path, meta: SourceMeta, skips: SkipLog, *, min_bytes: int = ...,
                 progress: Callable[[int], None] | None = None) -> Columns: ...


def _single(path: Path) -> list[Path]:
    return [path]


@dataclass(frozen=True)
class Reader:
    """One log format.

    ``sniff(path, head)`` says whether this reader takes ``path``; ``head`` holds the
    first bytes of a file (empty for a folder). ``read`` streams records, counting what it
    must skip in ``skips`` and writing what it learns about the source into ``meta``.
    ``runs(path)`` splits a folder holding several runs (nested TensorBoard runs, an
    MLflow store) into one root per run. ``describes`` says in a line what a user would hand it
    (``rlvitals formats``). ``columns``, where a reader has it, reads the whole file into
    :class:`~rlvitals.ingest.columnar.Columns` (what ``read`` yields, without a dict per record, by two
    processes for a large file): what a one-shot load uses; ``read`` stays for a watcher's windows.
    ``since``, where a reader has it (a database that grows by rows), reads what a run gained after a
    position it returned before (None: from the start): ``since(root, meta, skips, position) ->
    (records, position)``, so a watcher follows the run without reading it again. ``trainings`` says the
    format is a console capture several trainings may follow each other in (a second launch appended to
    the log): a load gives one run for each (:mod:`rlvitals.run.trainings`).
    """

    format: str
    sniff: Callable[[Path, bytes], bool]
    read: Callable[[Path, SourceMeta, SkipLog], Iterator[Record]]
    takes_dir: bool = False
    runs: Callable[[Path], list[Path]] = _single
    describes: str = ""
    columns: ReadColumns | None = None
    since: Callable[[Path, SourceMeta, SkipLog, Any], tuple[list[Record], Any]] | None = None
    trainings: bool = False
