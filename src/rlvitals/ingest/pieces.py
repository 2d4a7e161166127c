"""A large log read by this process and a forked worker that take its pieces from either end.

The file is cut at newlines into :data:`PIECES` pieces (pieces of :data:`PIECE_BYTES` in a larger file). The
worker, forked first, reads from the last piece backwards; this process first does what was asked to be done
meanwhile (:func:`while_reading`: the command line imports the analysis it needs next) and then reads from the
first piece forwards. Each takes the next piece from a counter they share, until they meet, so the two finish
together however long the work meanwhile took and however fast each core is. The worker writes each piece
it read to a spool and says where as it goes: this process takes in those it was told of between two of its
own pieces, and the rest while the worker still reads its last.

For a parse whose line numbers show only in what it says (a skip, a note) and not in its result: a piece
numbers its lines from its own start, and one that said something is read again numbered from the start of
the file (counting the lines before it is a read of all of them, paid only then). What a piece reads on
the file's 1 MiB grid (:func:`~rlvitals.ingest.text.line_blocks`) is what a read of the whole file does
there, so the pieces put together in file order are that read.
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
import pickle
import struct
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol, TypeVar

from .columnar import SPLIT_BYTES, Share, _columns_of, can_fork
from .cursor import count_lines
from .record import SkipLog, SourceMeta

__all__ = ["PIECES", "PIECE_BYTES", "Parse", "done_reading", "read_shared", "while_reading"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

#: how many pieces a file read by two processes is cut into at least: enough that the one that started later
#: (or runs slower) ends at most a piece after the other
PIECES = 16
#: the size of a piece past ``PIECES * PIECE_BYTES`` (a piece is about 0.02 s of parse): a 1.7 GB log in 16
#: pieces left one process waiting up to a quarter of a second for the other's last
PIECE_BYTES = 8 << 20
_MEANWHILE: list[Callable[[], object]] = []
#: what the worker says of a piece it wrote: its number, where in the spool, how many bytes
_WHERE = struct.Struct("<qqq")


class Parse(Protocol[T_co]):
    """A reader's parse of ``meta.window``'s bytes, telling ``progress`` its rows between chunks."""

    def __call__(self, path: Path, meta: SourceMeta, skips: SkipLog, *,
                 progress: Callable[[int], None] | None = None) -> T_co: ...


def while_reading(work: Callable[[], object]) -> None:
    """Have ``work`` done by the next read of a file by two processes, in this process while the worker
    reads (imports this process will need after the read); :func:`done_reading` does what is left."""
    _MEANWHILE.append(work)


def done_reading() -> None:
    """Do now the work asked for with :func:`while_reading` that no read did (no file was large)."""
    while _MEANWHILE:
        _MEANWHILE.pop(0)()



def cuts(path: Path, size: int, pieces: int = PIECES, head: int = 0) -> list[int]:
    """Where the pieces of ``path`` start, then its size: just after the first newline at or past each
    ``k/pieces`` of the file, the second no earlier than ``head`` (a line start: the first piece holds the
    bytes before it whole); pieces that would be empty are left out."""
    starts = [0]
    with path.open("rb") as fh:
        for k in range(1, pieces):
            at = max(size * k // pieces, starts[-1], head - 1)
            fh.seek(at)
            while chunk := fh.read(1 << 16):
                found = chunk.find(b"\n")
                if found >= 0:
                    at += found + 1
                    break
                at += len(chunk)
            if starts[-1] < at < size:
                starts.append(at)
    return [*starts, size]


def read_shared(path: Path, meta: SourceMeta, skips: SkipLog, parse: Parse[T], *, min_bytes: int = SPLIT_BYTES,
                progress: Callable[[int], None] | None = None, head: int = 0) -> tuple[T, list[Share[T]]]:
    """``parse`` over ``path`` by this process and a forked worker sharing its pieces: the first piece's
    result (its skips and notes already in ``skips`` and ``meta``) and every later piece's :class:`Share`,
    in file order. A file smaller than ``min_bytes``, a window of one, or one without a fork is read
    whole here. ``progress`` is told the rows this process has read. The first piece holds at least the
    bytes before ``head`` (what the parse reads ahead at the start of a file).

    The worker writes each piece it read to an unnamed temporary file as soon as it has it (no pipe to
    fill while this process is busy) and says where it is (a few bytes a piece)."""
    size = path.stat().st_size if meta.window is None and can_fork() else 0
    starts = cuts(path, size, max(PIECES, size // PIECE_BYTES), head=head) if size >= min_bytes else [0]
    if len(starts) < 3:
        done_reading()
        return parse(path, meta, skips, progress=progress), []
    context = multiprocessing.get_context("fork")
    claim = context.Array("q", [1, len(starts) - 2])  # the next piece for this process, for the worker
    receive, send = context.Pipe(duplex=False)
    with tempfile.TemporaryFile(prefix="rlvitals-pieces-") as spool:
        worker = context.Process(target=_worker, args=(path, meta, parse, starts, claim, send, spool.fileno()),
                                 daemon=True)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # a fork of a threaded process: see columnar
                worker.start()
        except OSError:  # no process to be had: one reads it all
            receive.close()
            send.close()
            done_reading()
            return parse(path, meta, skips, progress=progress), []
        send.close()
        try:
            done_reading()
            intake = _Intake(receive, spool.fileno())
            first, mine = _read_forwards(path, meta, skips, parse, starts, claim, progress, between=intake.said)
            theirs = intake.rest()
        finally:
            receive.close()
            if worker.is_alive():
                worker.kill()
            worker.join()
    # what the worker did not say it read (it died) is read here
    later = [theirs.get(i) or _piece(path, meta, parse, starts, i) for i in range(len(mine) + 1, len(starts) - 1)]
    return first, [*mine, *later]


class _Intake:
    """The worker's pieces by number, each read back from where it said it wrote it: those said so far between
    two pieces this process reads (:meth:`said`: taking them in while the worker still reads spreads the work
    of the read over both cores), then the rest until it says it is done (an empty message); those it said
    before it died when it died."""

    def __init__(self, receive: Connection, spool: int) -> None:
        self.receive, self.spool = receive, spool
        self.out: dict[int, Share[Any]] = {}
        self.done = False

    def said(self) -> None:
        """Take in the pieces said so far, without waiting for more."""
        while not self.done and self._poll():
            self._one()

    def rest(self) -> dict[int, Share[Any]]:
        """Every piece the worker said, waiting for it to say it is done (or to die)."""
        while not self.done:
            self._one()
        return self.out

    def _poll(self) -> bool:
        try:
            return self.receive.poll(0)
        except (EOFError, OSError):
            self.done = True
            return False

    def _one(self) -> None:
        try:
            said = self.receive.recv_bytes()
            if not said:
                self.done = True
                return
            i, at, size = _WHERE.unpack(said)
            if os.fstat(self.spool).st_size < at + size:
                self.done = True  # less written than it said: what is missing is read here
                return
            self.out[i] = _unpickled(self.spool, at, size)
        except (EOFError, OSError, ValueError, struct.error, pickle.UnpicklingError):
            self.done = True


def _unpickled(spool: int, at: int, size: int) -> Any:
    """The object pickled at ``at`` in ``spool``, unpickled from the page cache (the piece mapped, not read
    into a buffer first: a copy less, a quarter of a second at a million steps); one piece mapped at a time,
    so what is mapped adds a piece to the memory, not the spool."""
    if not size:
        return pickle.loads(b"")  # raises, as an empty read would
    lead = at % mmap.ALLOCATIONGRANULARITY
    with (mmap.mmap(spool, lead + size, access=mmap.ACCESS_READ, offset=at - lead) as mapped,
          memoryview(mapped) as view):
        return pickle.loads(view[lead:])


def _take(claim: Any, forwards: bool) -> int | None:
    """The next piece from the front (this process) or the back (the worker), None once they met."""
    with claim.get_lock():
        front, back = claim[0], claim[1]
        if front > back:
            return None
        if forwards:
            claim[0] = front + 1
            return int(front)
        claim[1] = back - 1
        return int(back)


def _read_forwards(path: Path, meta: SourceMeta, skips: SkipLog, parse: Parse[T], starts: list[int], claim: Any,
                   progress: Callable[[int], None] | None, between: Callable[[], None]) -> tuple[T, list[Share[T]]]:
    """This process's pieces from the first forwards, ``between`` called after each."""
    meta.window = (0, starts[1])
    try:
        first = parse(path, meta, skips, progress=progress)
    finally:
        meta.window = None
    mine: list[Share[T]] = []
    while True:
        between()
        if (i := _take(claim, forwards=True)) is None:
            return first, mine
        told = None if progress is None else _after(progress, _rows(first) + sum(_rows(s.value) for s in mine))
        mine.append(_piece(path, meta, parse, starts, i, told))


def _after(progress: Callable[[int], None], done: int) -> Callable[[int], None]:
    """``progress`` told a later piece's rows after the ``done`` rows of the pieces before it."""
    return lambda rows: progress(done + rows)


def _rows(value: object) -> int:
    cols = _columns_of(value)
    return 0 if cols is None else len(cols.steps)


def _piece(path: Path, meta: SourceMeta, parse: Parse[T], starts: list[int], i: int,
           progress: Callable[[int], None] | None = None) -> Share[T]:
    """Piece ``i`` (not the first), its lines numbered from its start, read again numbered from the start of
    the file when it said something."""
    share = _from(path, meta, parse, starts[i], starts[i + 1], 0, progress)
    if share.skipped.count or share.notes:
        share = _from(path, meta, parse, starts[i], starts[i + 1], count_lines(path, 0, starts[i]), None)
    return share


def _from(path: Path, meta: SourceMeta, parse: Parse[T], start: int, end: int, line_base: int,
          progress: Callable[[int], None] | None) -> Share[T]:
    mine = replace(meta, notes=[], bytes_read=0, config={}, window=(start, end), line_base=line_base)
    skipped = SkipLog()
    value = parse(path, mine, skipped, progress=progress)
    return Share(value, skipped, mine.notes, mine.bytes_read, start)


def _worker(path: Path, meta: SourceMeta, parse: Parse[T], starts: list[int], claim: Any,
            send: Connection, spool: int) -> None:
    """The worker: pieces from the back until the two meet, each written to ``spool`` once read and then
    said (number, offset, size); an empty message at the end."""
    at = 0
    while (i := _take(claim, forwards=False)) is not None:
        blob = memoryview(pickle.dumps(_piece(path, meta, parse, starts, i), protocol=pickle.HIGHEST_PROTOCOL))
        done = 0
        while done < len(blob):  # a regular file may take less than all of it (a signal, a full disk)
            done += os.pwrite(spool, blob[done:], at + done)
        send.send_bytes(_WHERE.pack(i, at, len(blob)))
        at += len(blob)
    send.send_bytes(b"")
    send.close()
