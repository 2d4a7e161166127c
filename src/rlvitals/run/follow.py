"""A watched path as a source of Runs that grows between polls.

Two ways to follow a log, chosen by its format:

- **Line formats** (veRL console and JSONL, generic JSONL, TRL and OpenRLHF console) grow by
  appended lines. :class:`LineSource` keeps a :class:`~rlvitals.ingest.cursor.FileCursor` and calls
  the format's own reader on the complete lines appended since the last poll only
  (``SourceMeta.window``), adding their records to one :class:`~rlvitals.run.run.RunBuilder`.
  Until a file has given its first record it is re-read from byte 0 on each change, because
  the veRL console reader parses the startup config dump as one block before the first step
  line and the generic JSONL reader picks its step key from the first records; after that a
  window parses exactly as the same lines do inside the whole file. The records read, and what
  the reader learned, are stored with the cursor (:mod:`.state`), so a restart rebuilds the
  Run without the files: a log deleted or replaced meanwhile takes nothing with it.
  A generic JSONL file without a step key numbers its records 1, 2, 3, ... as steps, so a window
  cannot be numbered alone: such a file is re-read whole at each change, and when it rotates or is
  truncated, what it held is *carried*: kept, with the next file's records numbered on after it,
  as ``load()`` numbers the files' lines concatenated.
- **Whole-file formats** (TRL ``trainer_state.json`` rewritten at checkpoints, TensorBoard and
  W&B offline with their binary record framing, and every folder) are re-read whole by
  :func:`rlvitals.run.load.load` when a file's size, mtime or inode changes, at most once per
  ``min_gap`` seconds (doubled by the last read's cost). The new read *replaces* the old
  one rather than adding "steps not seen yet": TensorBoard writes one event per tag, so a
  step's tags can straddle two flushes, and a rewritten trainer_state may revise or roll
  back steps — replacing is lossless and duplicate-free by construction (it *is*
  ``load()``) and cheap for files of this size (measured in ``benchmarks/bench_watch.py``).
"""

from __future__ import annotations

import contextlib
import errno
import os
from array import array
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from ..errors import EmptyInputError, InputError, MissingInputError, UnknownFormatError
from ..ingest import (
    COMPRESSED,
    FileCursor,
    Packed,
    Reader,
    Record,
    RecordCheck,
    SkipLog,
    SourceMeta,
    advance,
    complete_end,
    count_lines,
    examine,
    find_previous,
    find_reader,
    pack,
    readers,
    rotated_since,
    same_file,
)
from .run import Run, RunBuilder

LINE_FORMATS = frozenset({"verl-console", "verl-jsonl", "jsonl", "trl-console", "openrlhf-console"})
#: how many files read from are remembered (not to read a rotated one twice); a log rotates this often
#: between two polls only if it rotates every few lines
_KNOWN_FILES = 256



class LineSource:
    """Follows one growing text log; ``poll()`` reads what was appended, ``run()`` builds the Run.

    Example:
        >>> src = LineSource(Path("run.log"), find_reader(Path("run.log")))  # doctest: +SKIP
        >>> src.poll(); src.run().steps[-1]  # doctest: +SKIP
    """

    def __init__(self, path: Path, reader: Reader, saved: Mapping[str, Any] | None = None,
                 records: Sequence[Record] | None = None) -> None:
        self.path = path
        self.reader = reader
        self.meta = SourceMeta(format=reader.format, files=[str(path)])
        self.builder = RunBuilder(self.meta)
        self.cursor = FileCursor.start(path)
        self.messages: list[str] = []
        self.unsaved: list[Packed] = []  # read since the last stored() (see .state.WatchState.commit)
        self._keep = records is not None  # the caller stores the records: keep them until it has
        self._layouts: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._check = RecordCheck()  # every record read is checked once, before it is packed
        self._reset = False  # the stored records are to be replaced by `unsaved`, not extended
        self._meta_taken = False
        self._whole = False  # generic JSONL without a step key numbers its records: re-read whole
        self._carried: list[Packed] = []  # whole: the records of the files before the current one
        self._carried_skips = SkipLog()  # whole: what their reads skipped
        self._current: list[Packed] = []  # whole: the current file's records as last added (numbered on)
        self._seen_size = -1
        self._got = 0  # records added by the current poll
        self._restored = 0  # records rebuilt from the state file, not diagnosed yet
        self.races = 0  # polls that lost a race with a rotation
        self.read_files: list[tuple[int, int]] = []  # (device, inode) of the files read from, latest last
        self._rotated: os.stat_result | None = None  # the file last rotated off, until the next one is known
        # without the records read (a caller that stores only cursors, like the dashboard's state),
        # a cursor alone cannot rebuild the Run: the file is read again from its first line
        if saved and records is not None:
            self._resume(saved, records)

    def state(self) -> dict[str, Any]:
        """What a restart needs besides the records: the cursor and what the reader learned."""
        meta = self.meta
        return {"kind": "lines", "format": self.reader.format, "cursor": self.cursor.to_json(),
                "meta": {"framework": meta.framework, "config": meta.config, "notes": meta.notes,
                         "bytes_read": meta.bytes_read},
                "skipped": {"count": self.builder.skipped.count, "reasons": self.builder.skipped.reasons},
                "meta_taken": self._meta_taken, "whole": self._whole, "read_files": self.read_files,
                "carried": len(self._carried),
                "carried_skipped": {"count": self._carried_skips.count, "reasons": self._carried_skips.reasons}}

    def pending(self) -> tuple[bool, list[Packed]]:
        """The records read since the last :meth:`stored` (packed), and whether they replace the stored
        ones; always none for a caller that keeps no records (it passed ``records=None``)."""
        return self._reset, self.unsaved

    def stored(self) -> None:
        """The pending records are in the state file now."""
        self.unsaved = []
        self._reset = False

    def run(self, last: int | None = None) -> Run | None:
        """The Run read so far (only its last ``last`` steps, when given); None before any record — unless
        the log already ends in a crash (a run that died before its first step is news too)."""
        if self.builder.is_empty and self.meta.crash is None:
            return None
        return self.builder.finish(str(self.path), last=last)

    def poll(self) -> bool:
        """Read the complete lines appended since the last poll; whether any record came.

        A rotation may rename or remove the file between two looks at it (the stat and the
        open): that OSError means "not there right now", as ``missing`` does. What this poll
        read from a file that did not stay the same file throughout is dropped, and the next
        poll, seeing the rotation, reads it again from where the cursor stands.
        """
        self._got, self._restored = self._restored, 0  # a rebuilt Run is news to the watcher once
        try:
            self._poll()
        except OSError as exc:
            self._race(exc)
        return self._got > 0

    def _poll(self) -> None:
        change, st = examine(self.cursor, self.path)
        if change == "missing" or st is None:
            return
        if self.cursor.inode == 0:
            self._know(st)
        if change in ("truncated", "replaced"):
            self._restart_file(change)
            change, st = examine(self.cursor, self.path)
            if st is None:
                return
        if change == "grown":
            self._grow(st)

    def _race(self, exc: OSError) -> None:
        self.races += 1
        if self.races == 1:  # a log rotated every few seconds would say it every few seconds
            self.messages.append(f"{self.path}: the file was renamed or removed while it was being read "
                                 f"({exc.strerror or exc}: {exc.filename}); it is read again at the next poll "
                                 "(reported once)")

    def _restart_file(self, change: str) -> None:
        old = find_previous(self.cursor)
        old_st = old.stat() if old is not None else None
        renamed = old_st is not None and (old_st.st_dev, old_st.st_ino) == (self.cursor.device, self.cursor.inode)
        if self._whole:  # its records are numbered by their place in the file: keep them all
            self._carry(old, old_st)
        elif old is not None and old_st is not None:
            self._read(old, old_st, self.cursor.offset, old_st.st_size, self.cursor.lines)  # to its very end
        lost = "" if old is not None else "; lines written after the last poll and before that were not seen"
        self.messages.append(f"{self.path}: the file was {change} after line {self.cursor.lines}"
                             + (f"; read the rest of the old content from {old.name}" if old else "")
                             + f"{lost}; following the new file from its first line")
        self.cursor = FileCursor.start(self.path)
        self._seen_size = -1
        self._rotated = old_st if renamed else None
        with contextlib.suppress(OSError):  # between the rename and the new file: known at the next look
            self._know(self.path.stat())

    def _know(self, st: os.stat_result) -> None:
        """Take the identity of the file now at the path before reading a line of it, so that if it is
        rotated before it is read it is found by it; then read the files rotated in between, if a
        rotation is being followed."""
        self.cursor = FileCursor(str(self.path), st.st_dev, st.st_ino)
        if self._rotated is not None:
            after, self._rotated = self._rotated, None
            self._read_between(after)

    def _read_between(self, old: os.stat_result) -> None:
        """Read whole the files rotated off the log after ``old`` (two rotations between polls)."""
        known = {*self.read_files, (self.cursor.device, self.cursor.inode)}
        for path in rotated_since(self.path, old, known):
            if path.suffix in COMPRESSED:
                self.messages.append(f"{path}: rotated off {self.path.name} between two polls and compressed; "
                                     "it is not opened, so its steps are missing from the run")
                continue
            try:
                st = path.stat()
                if self._whole:
                    self._carry(path, st)
                else:
                    self._read(path, st, 0, st.st_size, 0)
            except OSError as exc:
                self.messages.append(f"{path}: rotated off {self.path.name} between two polls, but could not be "
                                     f"read ({exc.strerror or exc}); its steps are missing from the run")
                continue
            self.messages.append(f"{self.path}: rotated more than once since the last poll; read {path.name} "
                                 "whole, which was never seen at the log's path")

    def _grow(self, st: os.stat_result) -> None:
        if self.cursor.offset == 0 and st.st_size == self._seen_size:
            return  # only startup output so far, unchanged since the last look
        start = 0 if self._whole else self.cursor.offset
        end = complete_end(self.path, start, st.st_size)
        if end == start:
            return
        if self.cursor.offset == 0 or self._whole:
            self._first_read(st, end)
            return
        lines = count_lines(self.path, start, end)
        self._read(self.path, st, start, end, self.cursor.lines)
        self.cursor = advance(self.cursor, self.path, st, end, lines)

    def _first_read(self, st: os.stat_result, end: int) -> None:
        meta = SourceMeta(format=self.reader.format, files=[str(self.path)], window=(0, end))
        skipped = SkipLog()
        records = self._packed(self.path, meta, skipped)
        lines = count_lines(self.path, 0, end)
        cursor = advance(FileCursor.start(self.path), self.path, st, end, lines)
        if not same_file(self.path, st, end):
            raise FileNotFoundError(errno.ENOENT, "another file took its name while it was read", str(self.path))
        self._seen_file(st)
        self._seen_size = st.st_size
        if not records and meta.crash is None:
            return
        if not self._meta_taken:
            self._take_meta(meta)
        self._ending(meta, records)
        if not records:  # a crash before the first step: nothing to add, but the cursor moves on
            self._got += 1
            self.cursor = cursor
            return
        if self._whole:  # a whole re-read replaces what the last one built, after what is carried
            records = self._numbered_on(records)
            self._current = records
            self.builder = RunBuilder(self.meta)
            self.unsaved, self._reset = [], True
            self._add(self._carried, self._carried_skips, news=False)
        self._add(records, skipped)
        self.cursor = cursor

    def _packed(self, path: Path, meta: SourceMeta, skipped: SkipLog) -> list[Packed]:
        """The records of ``path`` in ``meta``'s window, packed as they stream from the reader: a
        30,000-step log would take five times the memory as a list of records."""
        layouts, check, out = self._layouts, self._check, []
        for record in self.reader.read(path, meta, skipped):
            problem = check.problem(record) if record.kind != "summary" else None
            if problem is not None:  # skipped here, so the cursor moves past it and a restart does not meet it
                skipped.skip(record.where, problem)
                continue
            out.append(pack(record, layouts))
        return out

    def _numbered_on(self, records: list[Packed]) -> list[Packed]:
        """``records`` (numbered from 1 in their file) numbered on after the last carried step."""
        base = self._carried[-1][0] if self._carried else 0
        return [(r[0] + base, *r[1:]) for r in records] if base else records

    def _carry(self, old: Path | None, old_st: os.stat_result | None) -> None:
        """Keep the records of the file that is being left (whole mode): re-read whole from ``old``
        when it is still there (renamed, or copied before a truncation), else as last read."""
        if old is None or old_st is None:
            records = self._current
        else:
            meta = SourceMeta(format=self.reader.format, files=[str(old)])
            skipped = SkipLog()
            records = self._numbered_on(self._packed(old, meta, skipped))
            if not same_file(old, old_st, old_st.st_size):
                raise FileNotFoundError(errno.ENOENT, "another file took its name while it was read", str(old))
            self._seen_file(old_st)
            self._carried_skips.merge(skipped)
            self.meta.bytes_read += meta.bytes_read
        self._carried = self._carried + records
        self._current = []
        self.builder = RunBuilder(self.meta)  # what the next file's first read adds to
        self.builder.skipped.merge(self._carried_skips)
        for record in self._carried:
            add_packed(self.builder, record)
        if self._keep:
            self.unsaved, self._reset = list(self._carried), True

    def _take_meta(self, meta: SourceMeta) -> None:
        self._meta_taken = True
        self.meta.framework = meta.framework
        self.meta.config.update(meta.config)
        # the reader looks at the file's real end, which may be a line still being written
        self.meta.notes.extend(n for n in meta.notes if "the last line has no newline" not in n)
        if self.reader.format == "jsonl" and any(n.startswith(f"{self.path}: no step key") for n in meta.notes):
            self._whole = True
        # the TRL console reader numbers its dicts once it has seen the whole log (a buffered bar, steps by
        # order x logging_steps): a window of appended lines alone cannot be numbered, so it is re-read whole
        if self.reader.format == "trl-console":
            self._whole = True

    def _read(self, path: Path, st: os.stat_result, start: int, end: int, base: int) -> None:
        """Add the records of the lines ``[start, end)`` of ``path``, the file ``st`` was taken of;
        nothing at all if another file took its name meanwhile (raises OSError if none did)."""
        meta = SourceMeta(format=self.reader.format, files=[str(path)], window=(start, end), line_base=base)
        skipped = SkipLog()
        records = self._packed(path, meta, skipped)
        if not same_file(path, st, end):
            raise FileNotFoundError(errno.ENOENT, "another file took its name while it was read", str(path))
        self._seen_file(st)
        self._add(records, skipped)
        if self._ending(meta, records) and not records:
            self._got += 1  # a traceback appended after the last record: the run died, which is news
        self.meta.bytes_read += meta.bytes_read
        if start == 0 and records and not self._meta_taken:  # a whole rotated file read on a restart
            self._take_meta(meta)

    def _ending(self, meta: SourceMeta, records: list[Packed]) -> bool:
        """How the log ends, as the lines just read say: a traceback after their last record is the
        crash; records after an earlier traceback mean the run went on (ingest._crash). Whether the
        lines just read brought a crash."""
        self.meta.crash_scanned = self.meta.crash_scanned or meta.crash_scanned
        if meta.crash is not None or records:
            self.meta.crash = meta.crash
        return meta.crash is not None

    def _seen_file(self, st: os.stat_result) -> None:
        ident = (st.st_dev, st.st_ino)
        if ident not in self.read_files:
            self.read_files.append(ident)
            del self.read_files[:-_KNOWN_FILES]

    def _add(self, records: list[Packed], skipped: SkipLog, news: bool = True) -> None:
        self.builder.skipped.merge(skipped)
        for record in records:
            add_packed(self.builder, record)
        if self._keep:
            self.unsaved.extend(records)
        self._got += len(records) if news else 0

    def _resume(self, saved: Mapping[str, Any], records: Sequence[Record]) -> None:
        """Rebuild the Run as it was before a restart, from the state file alone (the records
        read, what the reader learned), and go on from the saved cursor: a file rotated,
        truncated or replaced meanwhile is found out by the next poll as it would have been
        without the restart."""
        meta = saved.get("meta", {})
        self.meta.framework = meta.get("framework")
        self.meta.config.update(meta.get("config", {}))
        self.meta.notes.extend(meta.get("notes", []))
        self.meta.bytes_read = int(meta.get("bytes_read", 0))
        skipped = saved.get("skipped", {})
        self.builder.skipped = SkipLog(int(skipped.get("count", 0)), list(skipped.get("reasons", [])))
        self._meta_taken = bool(saved.get("meta_taken", False))
        self._whole = bool(saved.get("whole", False))
        self.read_files = [(int(d), int(i)) for d, i in saved.get("read_files", [])]
        carried = int(saved.get("carried", 0))
        if self._whole:
            self._carried = [pack(r, self._layouts) for r in records[:carried]]
            self._current = [pack(r, self._layouts) for r in records[carried:]]
        skips = saved.get("carried_skipped", {})
        self._carried_skips = SkipLog(int(skips.get("count", 0)), list(skips.get("reasons", [])))
        for record in records:
            self.builder.add(record)
        self._restored = len(records)
        if "cursor" in saved:
            self.cursor = FileCursor.from_json(saved["cursor"])


def add_packed(builder: RunBuilder, record: Packed) -> None:
    """Add a packed record (:func:`.state.pack`) to ``builder`` without rebuilding its dict."""
    step, names, nums, texts, summary = record
    numbers = array("d")
    numbers.frombytes(nums)
    builder.add_row(step, names, numbers, orjson.loads(texts) if texts else None, summary)


def signature(path: Path) -> tuple[tuple[str, int, int, int], ...]:
    """What changes when a whole-file log is written: each file's name, size, mtime and inode."""
    if path.is_file():
        st = path.stat()
        return ((path.name, st.st_size, st.st_mtime_ns, st.st_ino),)
    out = []
    for folder, _dirs, files in os.walk(path):
        for name in files:
            full = os.path.join(folder, name)
            try:
                st = os.stat(full)
            except OSError:
                continue
            out.append((os.path.relpath(full, path), st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(sorted(out))


class SnapshotSource:
    """Re-reads a whole-file log (or a folder) when it changes, at most once per ``min_gap`` s."""

    def __init__(self, path: Path, fmt: str | None, min_gap: float) -> None:
        self.path = path
        self.fmt = fmt
        self.min_gap = min_gap
        self.messages: list[str] = []
        self._runs: list[Run] = []
        self._sig: tuple[tuple[str, int, int, int], ...] = ()
        self._next = 0.0
        self._last_error = ""

    def state(self) -> dict[str, Any]:
        return {"kind": "snapshot"}

    def runs(self) -> list[Run]:
        return list(self._runs)

    def poll(self, now: float, cost: float = 0.0) -> bool:
        """Re-read if the files changed and the throttle allows; whether the runs changed."""
        from .load import load

        try:
            sig = signature(self.path)
        except OSError:
            return False
        if sig == self._sig or now < self._next:
            return False
        try:
            runs = load(self.path, self.fmt)
        except EmptyInputError:
            runs = []
        except (InputError, OSError) as exc:  # mid-rewrite (half a JSON file): keep the last good read, retry
            if str(exc) != self._last_error:
                self.messages.append(f"{exc}; kept the last complete read and will retry")
                self._last_error = str(exc)
            self._next = now + self.min_gap
            return False
        self._sig = sig
        self._next = now + max(self.min_gap, 2 * cost)
        changed = bool(runs) or bool(self._runs)
        self._runs = runs
        return changed


class Follow:
    """One watched PATH: waits until it exists and is recognised, then follows it."""

    def __init__(self, path: Path, fmt: str | None, min_gap: float, saved: dict[str, Any] | None = None,
                 records: Sequence[Record] | None = None) -> None:
        self.path = path
        self.fmt = fmt
        self.min_gap = min_gap
        self.saved = saved
        # stored by the last watcher with ``saved`` (None: not kept, the log is read again from its
        # start); handed to the LineSource, then dropped
        self.records = records
        self.inner: LineSource | SnapshotSource | None = None
        self.messages: list[str] = []
        self._waiting = ""

    def state(self) -> dict[str, Any]:
        return self.inner.state() if self.inner is not None else dict(self.saved or {})

    def pending(self) -> tuple[bool, list[Packed]]:
        """The records to store with this path's state (see :meth:`LineSource.pending`)."""
        return self.inner.pending() if isinstance(self.inner, LineSource) else (False, [])

    def stored(self) -> None:
        if isinstance(self.inner, LineSource):
            self.inner.stored()

    def poll(self, now: float, cost: float = 0.0) -> bool:
        if self.inner is None and not self._open():
            return False
        assert self.inner is not None
        changed = self.inner.poll() if isinstance(self.inner, LineSource) else self.inner.poll(now, cost)
        self.messages.extend(self.inner.messages)
        self.inner.messages.clear()
        return changed

    def runs(self, last: int | None = None) -> list[Run]:
        """The runs read so far; with ``last``, only the last ``last`` steps of each."""
        if isinstance(self.inner, LineSource):
            run = self.inner.run(last)
            return [] if run is None else [run]
        runs = self.inner.runs() if self.inner is not None else []
        return runs if last is None else [r.tail(last) for r in runs]

    def _open(self) -> bool:
        resumed = self._resume()
        if resumed is not None:
            self.inner = resumed
            return True
        try:
            reader = find_reader(self.path, self.fmt)
        except (EmptyInputError, UnknownFormatError) as exc:
            if self.fmt is not None and not isinstance(exc, EmptyInputError):
                raise  # --format names no reader: waiting will not help
            return self._wait(f"{exc}; waiting for it to be written")
        except MissingInputError as exc:  # decided by the error, not by a second look that may race a writer
            return self._wait(f"{exc}; waiting for it to appear")
        except OSError as exc:  # renamed or removed while it was sniffed: a rotation under way
            return self._wait(f"{self.path}: could not be read ({exc.strerror or exc}); waiting for it")
        if reader.format in LINE_FORMATS and self.path.is_file():
            saved = self.saved if (self.saved or {}).get("kind") == "lines" else None
            self.inner = LineSource(self.path, reader, saved, self.records)
            self.records = None
        else:
            self.inner = SnapshotSource(self.path, reader.format if self.fmt else None, self.min_gap)
        return True

    def _resume(self) -> LineSource | None:
        """The text log a previous watcher followed, rebuilt from its state at once, whatever the
        file is now (empty, missing, replaced: the next polls find out), so a restart shows the run
        before the trainer writes again."""
        saved = self.saved or {}
        fmt = saved.get("format")
        if (self.records is None or saved.get("kind") != "lines" or fmt not in LINE_FORMATS
                or self.fmt not in (None, fmt)):
            return None
        reader = next((r for r in readers() if r.format == fmt), None)
        if reader is None:
            return None
        source = LineSource(self.path, reader, saved, self.records)
        self.records = None
        return source

    def _wait(self, message: str) -> bool:
        if message != self._waiting:
            self.messages.append(message)
            self._waiting = message
        return False


__all__ = ["LINE_FORMATS", "Follow", "LineSource", "SnapshotSource", "signature"]
