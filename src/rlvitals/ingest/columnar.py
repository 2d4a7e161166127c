"""Records parsed straight into columns, and a large log read by two processes.

A reader's fast path keeps no dict per record: :class:`Columns` holds the step of each record (its
*row*, in the order read) and, per set of keys (a *layout*: a metric log repeats a few), the rows
with those keys and their values one after another as float64. The rest (text values, a record that
needs converting or checking) goes through :meth:`Columns.add`, the one check every record passes
(:class:`~rlvitals.ingest.record.RecordCheck`). A layout whose every key that check has seen and kept
is *plain*: the next record with it needs no check. :meth:`rlvitals.run.builder.RunBuilder.add_columns`
takes the lot.

:func:`halves` reads a large file as two byte ranges split at a newline, the second in a forked
process, so a parse uses both cores. The second worker numbers its lines from the newlines before its
range and reads on the same 1 MiB grid (:func:`~rlvitals.ingest.text.line_blocks`), so what it reads,
skips and notes is what a read of the whole file does there; the caller puts the two together in file
order. :mod:`.pieces` shares a file's pieces between the two instead, for a parse whose line numbers
show only in what it says.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import pickle
import struct
import sys
import warnings
from array import array
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Generic, TypeVar

from .cursor import count_lines
from .record import Record, RecordCheck, SkipLog, SourceMeta

T = TypeVar("T")

#: a file smaller than this is read by one process (a fork costs more than it saves)
SPLIT_BYTES = 16 << 20


#: a packer of n doubles per n (one struct for a record's values: a copy of the doubles, where appending
#: them to an array one by one costs twice as much)
_PACKS: dict[int, Callable[..., bytes]] = {}


def _packer(n: int) -> Callable[..., bytes]:
    pack = _PACKS.get(n)
    if pack is None:
        pack = _PACKS[n] = struct.Struct(f"{n}d").pack
    return pack


@dataclass
class Block:
    """The records of one layout: their rows, and their values row after row (float64)."""

    rows: array[int] = field(default_factory=lambda: array("q"))
    values: array[float] = field(default_factory=lambda: array("d"))
    #: where the last record of this layout that held a null held them: a log that leaves some keys null
    #: between evaluations (veRL's ``val-core/*``) has them at the same places line after line, so the next
    #: such record costs a copy of its values and a look at those places, not a failed pack and a scan
    nulls: tuple[int, ...] = ()

    def take(self, values: Collection[Any]) -> bool:
        """Append ``values`` to :attr:`values` as float64 when each is a number or null (NaN); False
        (:attr:`values` as it was) when one is not (text, a list, an integer beyond float64). Learns where this
        layout's nulls are.

        >>> block = Block()
        >>> [block.take(v) for v in ([1, None, 2.5], [3, None, 4], [None, 5, None], [None, None, 6], [1, "x", 2])]
        [True, True, True, True, False]
        >>> block.values.tolist(), block.nulls
        ([1.0, nan, 2.5, 3.0, nan, 4.0, nan, 5.0, nan, nan, nan, 6.0], (0, 1))
        """
        pack = _PACKS.get(len(values)) or _packer(len(values))  # a call a line less: the loop's own cost
        if self.nulls:
            row = list(values)
            for at in self.nulls:
                if row[at] is None:
                    row[at] = math.nan
            try:
                self.values.frombytes(pack(*row))
                return True
            except struct.error:
                pass
        else:
            try:
                self.values.frombytes(pack(*values))
                return True
            except struct.error:
                pass
        row = list(values)  # the nulls have moved, or a value is not a number
        nulls = tuple(at for at, v in enumerate(row) if v is None)
        for at in nulls:
            row[at] = math.nan
        try:
            self.values.frombytes(pack(*row))
        except struct.error:
            return False
        self.nulls = nulls
        return True


#: values a segment of :class:`Columns` holds before the next begins (a chunk of lines may overshoot):
#: 40 MiB, above the size from which malloc maps a buffer of its own (32 MiB at most), so a segment the
#: builder has taken goes back to the system at once instead of staying in the heap
SEGMENT_VALUES = 5 << 20

_Part = dict[tuple[str, ...], Block]


@dataclass
class Columns:
    """Records as columns: ``steps`` (a row per record, in the order read), ``blocks`` (layout ->
    :class:`Block`, for the rows from ``start`` on), ``segments`` (the blocks of the rows before, about
    :data:`SEGMENT_VALUES` values each, so the builder can take them a segment at a time and the memory
    read never stands twice), ``text`` (row, key, value), ``walls`` (row -> the tracker's time, NaN for
    none, made at the first record that has one), ``summary`` (an end-of-training summary's values) and
    ``fast``, the blocks of ``blocks`` whose records need no check (:meth:`approve`). A worker's
    Columns travel without their ``progress``.

    Example:
        >>> cols = Columns()
        >>> cols.add(Record(3, {"loss": 0.5, "mode": "x"}, "run.log:1"), SkipLog())
        >>> cols.steps.tolist(), list(cols.blocks), cols.text
        ([3], [('loss',)], [(0, 'mode', 'x')])
    """

    steps: array[int] = field(default_factory=lambda: array("q"))
    blocks: _Part = field(default_factory=dict)
    segments: list[_Part] = field(default_factory=list)
    start: int = 0
    text: list[tuple[int, str, str]] = field(default_factory=list)
    walls: array[float] | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    check: RecordCheck = field(default_factory=RecordCheck)
    fast: _Part = field(default_factory=dict)
    #: told how many records are in at each :meth:`roll` (a progress display)
    progress: Callable[[int], None] | None = None
    #: the line of each row in its file, when the reader knows it (a console log: to tell where each of the
    #: trainings it holds begins and ends)
    lines: array[int] | None = None

    def __len__(self) -> int:
        return len(self.steps)

    def add(self, record: Record, skips: SkipLog) -> None:
        """One record through the check every record passes (a counted skip when it fails)."""
        if record.kind == "summary":
            self.summary.update(record.values)
            return
        problem = self.check.problem(record)
        if problem is not None:
            skips.skip(record.where, problem)
            return
        row = len(self.steps)
        self.steps.append(record.step)
        numbers: dict[str, float] = {}
        for key, value in record.values.items():
            if isinstance(value, str):
                self.text.append((row, key, value))
            else:
                numbers[key] = value
        keys = tuple(numbers)
        block = self.blocks.get(keys)
        if block is None:
            block = self.blocks[keys] = Block()
        block.rows.append(row)
        block.values.extend(numbers.values())
        if record.wall is not None:
            self.wall(row, record.wall)

    def approve(self, keys: tuple[str, ...]) -> None:
        """Put the block of ``keys`` in :attr:`fast` when a record of these keys and float values needs
        no check (every key was checked and keeps its name)."""
        if keys not in self.fast:
            block = self.blocks.get(keys)
            if block is not None and self.check.plain(keys):
                self.fast[keys] = block

    def roll(self) -> None:
        """Begin the next segment when this one is full (a reader calls it between chunks)."""
        if self.progress is not None:
            self.progress(len(self.steps))
        if sum(len(block.values) for block in self.blocks.values()) >= SEGMENT_VALUES:
            self._close()

    def _close(self) -> None:
        if self.blocks:
            self.segments.append(self.blocks)
        self.blocks, self.start = {}, len(self.steps)
        self.fast.clear()

    def drain(self) -> Iterator[_Part]:
        """Every segment in row order, each let go once taken (the Columns are empty after)."""
        self._close()
        self.segments.reverse()
        while self.segments:
            yield self.segments.pop()

    def wall(self, row: int, wall: float) -> None:
        walls = self.walls
        if walls is None:
            walls = self.walls = array("d")
        if len(walls) < row:
            walls.frombytes(array("d", [float("nan")]).tobytes() * (row - len(walls)))
        walls.append(wall)

    def extend(self, later: Columns) -> None:
        """The records of ``later`` after these (the next byte range of the same file); ``later``'s
        segments are taken, not copied."""
        import numpy as np  # here, not at the top: a log's worker is forked before numpy is imported

        base = len(self.steps)
        self._close()
        self.steps.extend(later.steps)
        for part in later.drain():
            for block in part.values():
                block.rows = array("q", (np.frombuffer(block.rows, dtype=np.int64) + base).tobytes())
            self.segments.append(part)
        self.start = len(self.steps)
        self.text.extend((row + base, key, value) for row, key, value in later.text)
        if later.walls is not None:
            for row, wall in enumerate(later.walls, base):
                if wall == wall:
                    self.wall(row, wall)
        self.summary.update(later.summary)


def split_rows(cols: Columns, starts: list[int]) -> list[Columns]:
    """``cols`` cut before each row of ``starts`` (rising, each above 0): one Columns per part, its rows
    numbered from 0 in the same order, its blocks in one segment. ``cols`` is drained (empty after); an
    end-of-training summary goes with the last part.

    >>> cols = Columns()
    >>> for step in (1, 2, 1, 2, 3):
    ...     cols.add(Record(step, {"loss": step / 10}, f"run.log:{step}"), SkipLog())
    >>> [(part.steps.tolist(), part.blocks[("loss",)].values.tolist()) for part in split_rows(cols, [2])]
    [([1, 2], [0.1, 0.2]), ([1, 2, 3], [0.1, 0.2, 0.3])]
    """
    import numpy as np  # here, not at the top: a log's worker is forked before numpy is imported

    edges = [0, *starts, len(cols.steps)]
    parts = [Columns() for _ in range(len(edges) - 1)]
    for k, part in enumerate(parts):
        lo, hi = edges[k], edges[k + 1]
        part.steps = cols.steps[lo:hi]
        part.lines = cols.lines[lo:hi] if cols.lines is not None else None
        part.walls = cols.walls[lo:hi] if cols.walls is not None and len(cols.walls) > lo else None
    bounds = np.array(edges)
    for segment in cols.drain():
        for keys, block in segment.items():
            rows = np.frombuffer(block.rows, dtype=np.int64)
            values = np.frombuffer(block.values, dtype=np.float64).reshape(len(rows), len(keys))
            which = np.searchsorted(bounds, rows, side="right") - 1
            for k in np.unique(which).tolist():
                pick = which == k
                into = parts[k].blocks.setdefault(keys, Block())
                into.rows.frombytes((rows[pick] - edges[k]).tobytes())
                into.values.frombytes(np.ascontiguousarray(values[pick]).tobytes())
    for row, key, value in cols.text:
        k = int(np.searchsorted(bounds, row, side="right")) - 1
        parts[k].text.append((row - edges[k], key, value))
    parts[-1].summary.update(cols.summary)
    return parts


@dataclass
class Share(Generic[T]):
    """What the second worker read: its result, skips and notes, how many bytes it read, from where."""

    value: T
    skipped: SkipLog
    notes: list[str]
    bytes_read: int
    start: int

    def merge(self, meta: SourceMeta, skips: SkipLog) -> T:
        """Its skips, notes and bytes after the first range's; its result."""
        skips.merge(self.skipped)
        meta.notes.extend(self.notes)
        meta.bytes_read += self.bytes_read
        return self.value


def can_fork() -> bool:
    """Fork is the cheap way to a second worker that has everything imported (Linux only: macOS
    forks badly once threads run); a daemonic process (a multiprocessing pool's worker) may not have one."""
    return (sys.platform.startswith("linux") and hasattr(os, "fork")
            and not multiprocessing.current_process().daemon)


def split_point(path: Path, size: int) -> int | None:
    """Where the second half of ``path`` starts: just after the first newline at or past the middle;
    None when there is none before the end."""
    with path.open("rb") as fh:
        at = size // 2
        fh.seek(at)
        while True:
            chunk = fh.read(1 << 16)
            if not chunk:
                return None
            found = chunk.find(b"\n")
            if found >= 0:
                mid = at + found + 1
                return mid if mid < size else None
            at += len(chunk)


def halves(path: Path, meta: SourceMeta, skips: SkipLog, parse: Callable[[Path, SourceMeta, SkipLog], T],
           min_bytes: int = SPLIT_BYTES,
           here: Callable[[Path, SourceMeta, SkipLog], T] | None = None) -> tuple[T, Share[T] | None]:
    """``parse`` over the first half of ``path`` in this process and over the second in a forked one,
    at once. Returns the first half's result (its skips and notes already in ``skips`` and ``meta``) and
    the second's :class:`Share` (read here when its worker failed), or None for it when the file was read
    whole here (smaller than ``min_bytes``, a window of it, no fork). ``here``, when given, is the parse
    for this process's share (one that tells the progress on this process's terminal).

    ``parse`` must read only ``meta.window``'s bytes (it gets the first half's window, then ``meta``
    gets its own back); the second worker's ``meta`` is a copy with its window and line numbers.
    """
    here = here or parse
    size = path.stat().st_size if meta.window is None and can_fork() else 0
    mid = split_point(path, size) if size >= min_bytes else None
    if mid is None:
        return here(path, meta, skips), None
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    worker = context.Process(target=_second, args=(path, meta, parse, mid, send), daemon=True)
    try:
        with warnings.catch_warnings():
            # Python 3.12 warns that a forked child of a threaded process may deadlock on a lock another
            # thread held; the child here runs only the reader's parse (no thread pool, no logging)
            warnings.simplefilter("ignore", DeprecationWarning)
            worker.start()
    except OSError:  # no process to be had (a limit on processes, no memory to fork): one reads it all
        receive.close()
        send.close()
        return here(path, meta, skips), None
    send.close()
    try:
        meta.window = (0, mid)
        try:
            first = here(path, meta, skips)
        finally:
            meta.window = None
        try:
            share = _receive(receive)
        except (EOFError, OSError, pickle.UnpicklingError):  # the worker died before it said all
            share = second_half(path, meta, parse, mid)
    finally:
        receive.close()
        if worker.is_alive():
            worker.kill()
        worker.join()
    return first, share


def second_half(path: Path, meta: SourceMeta, parse: Callable[[Path, SourceMeta, SkipLog], T],
                mid: int) -> Share[T]:
    """``parse`` over the bytes from ``mid`` to the end, with a ``meta`` of its own that numbers the
    lines as in the whole file."""
    mine = replace(meta, notes=[], bytes_read=0, config={}, window=(mid, sys.maxsize),
                   line_base=count_lines(path, 0, mid))
    skipped = SkipLog()
    value = parse(path, mine, skipped)
    return Share(value, skipped, mine.notes, mine.bytes_read, mid)


def _columns_of(value: object) -> Columns | None:
    """The :class:`Columns` a reader's parse gave (itself, or the first of a tuple), if any."""
    if isinstance(value, tuple) and value:
        value = value[0]
    return value if isinstance(value, Columns) else None


def _second(path: Path, meta: SourceMeta, parse: Callable[[Path, SourceMeta, SkipLog], T], mid: int,
            send: Connection) -> None:
    """The second worker: parse from ``mid`` to the end and send the :class:`Share`."""
    send_share(send, second_half(path, meta, parse, mid))
    send.close()


def send_share(send: Connection, share: Share[Any]) -> None:
    """``share`` sent to the reading process: its columns a segment at a time (so neither process holds
    them twice), an empty message after the last, then the rest."""
    cols = _columns_of(share.value)
    if cols is not None:
        cols.progress = None  # a callback does not travel
    for part in cols.drain() if cols is not None else ():
        send.send_bytes(pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL))
    send.send_bytes(b"")
    send.send_bytes(pickle.dumps(share, protocol=pickle.HIGHEST_PROTOCOL))


def _receive(receive: Connection) -> Share[Any]:
    """What :func:`send_share` sent, put together."""
    parts: list[_Part] = []
    while data := receive.recv_bytes():
        parts.append(pickle.loads(data))
    share: Share[Any] = pickle.loads(receive.recv_bytes())
    cols = _columns_of(share.value)
    if cols is not None:
        cols.segments, cols.start = parts, len(cols.steps)
    return share
