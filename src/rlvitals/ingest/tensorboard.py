"""TensorBoard event files (``events.out.tfevents.*``), read without tensorflow or tensorboard.

Scalars come as ``simple_value`` (tensorboardX, torch's SummaryWriter — what veRL,
OpenRLHF and HF/TRL use) or as one-element tensors of the ``scalars`` plugin
(tensorboard's own writer, TF2); tags are kept verbatim (``train/loss``, ``critic/score/mean``).
Histograms, images, audio and text are not metrics: their tags are listed once in the
run notes and nothing is counted as skipped for them.

Every record length is checked against its CRC, and so is the payload of every record a
value is taken from (see :mod:`._tfevents`). A corrupt record, or a file that ends
mid-record (a run still being written), stops that file with one counted skip:
``file#record N: truncated record ...; the rest of the file was skipped``.

A folder that directly holds event files is one run; several files in it (restarts) are
merged in file-name order, a later value winning for a step logged twice. Nested run
folders (``tb/run_a``, ``tb/run_b``) are split by :func:`runs`. All tags of one step
become one :class:`Record`; a tag seen again at the same step starts a new record so the
Run notes the duplicate. Each Event's ``wall_time`` (seconds since the Unix epoch) gives the
record its wall time; the first Event of the run's first file, when it started.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..words import Words
from ._crc import masked_crc32c
from ._reader import Reader
from .record import Record, SkipLog, SourceMeta, Value

if TYPE_CHECKING:  # the decoder (numpy) is imported when a file is read: sniffing needs only the CRC
    from .tfevents import Hits

FORMAT = "tensorboard"
_NAN = float("nan")

EVENT_MARK = ".tfevents."
#: a folder named like a float timestamp inside a run folder is where add_hparams writes
_HPARAMS_DIR = re.compile(r"\d+(?:\.\d+)?")
_SNIFF_DEPTH = 4
_SNIFF_ENTRIES = 5000


def _is_event_file(path: Path) -> bool:
    return EVENT_MARK in path.name and path.is_file()


def event_files(folder: Path) -> list[Path]:
    """The event files directly in ``folder``, in file-name order."""
    try:
        return sorted(p for p in folder.iterdir() if _is_event_file(p))
    except OSError:
        return []


def _framed(head: bytes) -> bool:
    """Whether ``head`` starts with a TFRecord whose length checksum holds."""
    if len(head) < 12:
        return False
    length, stored = struct.unpack_from("<QI", head)
    return bool(length < 1 << 30 and masked_crc32c(head[:8]) == stored)


def sniff(path: Path, head: bytes) -> bool:
    if path.is_file():
        return _framed(head) and (EVENT_MARK in path.name or b"brain.Event" in head[12:64])
    seen = 0
    for folder, dirs, files in os.walk(path):
        if any(EVENT_MARK in f for f in files):
            return True
        seen += len(dirs) + len(files)
        if seen > _SNIFF_ENTRIES:
            return False
        if len(Path(folder).relative_to(path).parts) >= _SNIFF_DEPTH - 1:
            dirs.clear()
    return False


def runs(path: Path) -> list[Path]:
    """One root per folder that directly holds event files.

    A timestamp-named folder inside a run folder is what ``add_hparams`` writes (HF's
    TensorBoardCallback does on every run) and holds no metrics, so it is not a run; nor
    is a folder whose event files hold only their header (a writer opened, never used),
    unless nothing else is found.
    """
    if path.is_file():
        return [path]
    roots: list[Path] = []
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        if any(EVENT_MARK in f for f in files):
            roots.append(Path(folder))
    if not roots:
        return [path]
    found = set(roots)
    keep = [r for r in roots
            if not (r.parent in found and _HPARAMS_DIR.fullmatch(r.name))
            and not all(_header_only(f) for f in event_files(r))]
    return keep or roots


def _header_only(file: Path) -> bool:
    """Whether an event file holds nothing but its first record (the file_version header)."""
    try:
        with file.open("rb") as fh:
            head = fh.read(12)
        return len(head) == 12 and file.stat().st_size <= 16 + struct.unpack_from("<Q", head)[0]
    except OSError:
        return False


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    """Stream one run: a single event file, or every event file directly in a folder."""
    from .tfevents import EventScanner

    files = [path] if path.is_file() else event_files(path)
    meta.files = [str(f) for f in files]
    nonscalar: set[str] = set()
    meta.clock = "TensorBoard wall_time"
    for file in files:
        yield from _by_step(file, EventScanner(file, meta, skips, nonscalar).chunks())
    if nonscalar:
        names = sorted(nonscalar)
        shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        meta.notes.append(Words(f"{len(names)} non-scalar TensorBoard tags (histograms, images, text) "
                                f"are not metrics and were not read: {shown}",
                                f"有 {len(names)} 个非标量的 TensorBoard 标签（直方图、图像、文本）不是指标，"
                                f"没有读取：{shown}"))


def _by_step(path: Path, chunks: Iterator[Hits]) -> Iterator[Record]:
    """Group consecutive values of one step into one Record. Event files are step-ordered
    per writer, but nothing relies on it: a step that comes back is a new Record. A Record's
    wall time is the wall_time of its last value (when the step's last value was logged)."""
    step = -1
    values: dict[str, Value] = {}
    where = ""
    wall = _NAN
    import numpy as np  # here, not at the top: a log's worker is forked before numpy is imported

    for hits in chunks:
        steps = hits.steps
        walls = hits.walls.tolist()
        bounds = [0, *(np.flatnonzero(steps[1:] != steps[:-1]) + 1).tolist(), len(steps)]
        for a, b in zip(bounds, bounds[1:], strict=False):
            run_step = int(steps[a])
            block: dict[str, Value] = dict(zip(hits.tags[a:b], hits.values[a:b], strict=True))
            if len(block) == b - a and not (run_step == step and block.keys() & values.keys()):
                last = walls[b - 1]
                if run_step == step:
                    values.update(block)
                    wall = last
                    continue
                if values:
                    yield _record(step, values, where, wall)
                step, values, where, wall = run_step, block, f"{path}#record {hits.numbers[a]}", last
                continue
            # a tag repeats within this step: one Record per repetition
            for i in range(a, b):
                tag = hits.tags[i]
                if run_step != step or tag in values or not values:
                    if values:
                        yield _record(step, values, where, wall)
                    step, values, where, wall = run_step, {}, f"{path}#record {hits.numbers[i]}", _NAN
                values[tag] = hits.values[i]
                wall = walls[i]
    if values:
        yield _record(step, values, where, wall)


def _record(step: int, values: dict[str, Value], where: str, wall: float) -> Record:
    return Record(step, values, where, wall=wall if wall == wall else None)


#: the same reader for both forms: a file (event file, .wandb file, SQLite database) or a folder
DESCRIBES = "TensorBoard event files (events.out.tfevents.*), or a folder of runs holding them"
READER = Reader(FORMAT, sniff, read, runs=runs, describes=DESCRIBES)
DIR_READER = Reader(FORMAT, sniff, read, takes_dir=True, runs=runs, describes=DESCRIBES)
READERS = (READER, DIR_READER)
