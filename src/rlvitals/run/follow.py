"""A watched path as a source of Runs that grows between polls.

Two ways to follow a log, chosen by its format:

- **Line formats** (veRL console and JSONL, generic JSONL, TRL and OpenRLHF console) grow by
  appended lines. :class:`LineSource` keeps a :class:`~rlvitals.ingest.cursor.FileCursor` and calls
  the format's own reader on the complete lines appended since the last poll only
  (``SourceMeta.window``), adding their records to one :class:`~rlvitals.run.builder.RunBuilder`.
  Until a file has given its first record it is re-read from byte 0 on each change, because
  the veRL console reader parses the startup config dump as one block before the first step
  line and the generic JSONL reader picks its step key from the first records; after that a
  window parses exactly as the same lines do inside the whole file. The records read, and what
  the reader learned, are stored with the cursor (:mod:`.state`), so a restart rebuilds the
  Run without the files: a log deleted or replaced meanwhile takes nothing with it. A console whose step
  count starts again holds several trainings (:mod:`.trainings`): it is read whole from then on, as below,
  ``load()`` giving a run for each. A generic JSONL file without a step key numbers its records 1, 2, 3,
  ... as steps, so a window cannot be numbered alone: such a file is re-read whole at each change, and
  when it rotates or is truncated, what it held is *carried*: kept, with the next file's records numbered
  on after it, as ``load()`` numbers the files' lines concatenated.
- **Whole-file formats** (TRL ``trainer_state.json`` rewritten at checkpoints, TensorBoard and
  W&B offline with their binary record framing, and every folder) are re-read whole by
  :func:`rlvitals.run.load.load` when a file's size, mtime or inode changes, at most once per
  ``min_gap`` seconds (doubled by the last read's cost). The new read *replaces* the old
  one rather than adding "steps not seen yet": TensorBoard writes one event per tag, so a
  step's tags can straddle two flushes, and a rewritten trainer_state may revise or roll
  back steps — replacing is lossless and duplicate-free by construction (it *is*
  ``load()``) and cheap for files of this size (measured in ``benchmarks/bench_watch.py``).
- **Logs that grow by records** (a Trackio project's rows, a SwanLab run's record stream: a reader
  with ``since``) are followed by :class:`~rlvitals.run.table_source.TableSource`: only what each run gained.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import EmptyInputError, MissingInputError, UnknownFormatError
from ..ingest import (
    FileCursor,
    Generation,
    Packed,
    Reader,
    RecordCheck,
    RotationRules,
    SkipLog,
    SourceMeta,
    Sweep,
    advance,
    complete_end,
    count_lines,
    examine,
    find_reader,
    pack,
    readers,
    rotations,
    same_file,
)
from ..words import Words, both
from .builder import RunBuilder, add_packed
from .rotation import Rotating
from .run import Run
from .said import chinese_of, told, with_chinese
from .snapshot import SnapshotSource, signature
from .table_source import TableSource
from .training import direct_logs, one_training
from .trainings import Restarts

LINE_FORMATS = frozenset({"verl-console", "verl-jsonl", "jsonl", "trl-console", "openrlhf-console"})


class LineSource(Rotating):
    """Follows one growing text log; ``poll()`` reads what was appended, ``run()`` builds the Run. Where it
    went when the file at its path changed (rotated, re-pointed, rewritten) is :class:`~.rotation.Rotating`'s;
    ``rules`` say where rotated files go that no rotation tool's default names.

    Example:
        >>> src = LineSource(Path("run.log"), find_reader(Path("run.log")))  # doctest: +SKIP
        >>> src.poll(); src.run().steps[-1]  # doctest: +SKIP
    """

    def __init__(self, path: Path, reader: Reader, saved: Mapping[str, Any] | None = None,
                 records: Sequence[Packed] | None = None, rules: RotationRules | None = None,
                 algorithm: str | None = None, training: bool = False) -> None:
        self.path = path
        #: PATH is one training logged to several places (:mod:`.training`): read whole, as diagnose reads it, the
        #: run standing for it listed under PATH; found so when PATH is opened, or said by the caller
        self.training = training
        self.reader = reader
        self.rules = rules or RotationRules()
        self._sweep = Sweep()  # which piece of what was read is compared at the next look (a rewrite in place)
        self._file_rows, self._file_skips = 0, SkipLog()  # the rows and skips before the file followed now
        self._restarting = False  # reading what a rotation left, before the new file
        self._rewrites = 0
        self._capped: list[str] = []
        self.meta = SourceMeta(format=reader.format, files=[str(path)], algorithm=algorithm)
        self._fresh()
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
        self.finished: list[Generation] = []  # the contents read to their end (by content: copies are new files)
        self._last_step: int | None = None  # the highest step added, and the last gaps between steps
        self._strides: list[int] = []
        self._recent: list[int] | None = None  # the steps added since a rotation began to be read
        self._gap: str = ""  # why lines may be lost at that rotation (see _lost_steps), Words once said
        self.restarted = False  # the step count started again in a console (see the module docstring)
        # without the records read (a caller that stores only cursors, like the dashboard's state),
        # a cursor alone cannot rebuild the Run: the file is read again from its first line
        if saved and records is not None:
            self._resume(saved, records)

    def state(self) -> dict[str, Any]:
        """What a restart needs besides the records: the cursor and what the reader learned."""
        meta = self.meta
        return {"kind": "lines", "format": self.reader.format, "cursor": self.cursor.to_json(),
                "meta": {"framework": meta.framework, "config": meta.config, "notes": meta.notes,
                         "notes_zh": chinese_of(meta.notes), "bytes_read": meta.bytes_read, "clock": meta.clock,
                         "clock_epoch": meta.clock_epoch, "started": meta.started},
                "skipped": {"count": self.builder.skipped.count, "reasons": self.builder.skipped.reasons,
                            "reasons_zh": chinese_of(self.builder.skipped.reasons)},
                "meta_taken": self._meta_taken, "whole": self._whole,
                "finished": [g.to_json() for g in self.finished], "last_step": self._last_step,
                "strides": self._strides, "carried": len(self._carried),
                "carried_skipped": {"count": self._carried_skips.count, "reasons": self._carried_skips.reasons,
                                    "reasons_zh": chinese_of(self._carried_skips.reasons)},
                **self._rotation_state()}

    @property
    def progress(self) -> tuple[int, int | None]:
        """How many records were read, and the highest step among them (None before the first)."""
        return self.builder.records, self._last_step

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
        change, st = examine(self.cursor, self.path, self._sweep)
        if change == "missing" or st is None:
            return
        if self._turned(change, st):
            change, st = examine(self.cursor, self.path)
            if st is None:
                return
        if change == "grown":
            self._grow(st)

    def _race(self, exc: OSError) -> None:
        self.races += 1
        if self.races == 1:  # a log rotated every few seconds would say it every few seconds
            self.messages.append(told("race", f"{exc.strerror or exc}: {exc.filename}", path=self.path))

    def _grow(self, st: os.stat_result) -> None:
        if self.cursor.offset == 0 and st.st_size == self._seen_size:
            return  # only startup output so far, unchanged since the last look
        start = 0 if self._whole else self.cursor.offset
        end = complete_end(self.path, start, st.st_size)
        if end == start:
            return
        if self.cursor.offset == 0 or self._whole:
            before = self.cursor
            self._first_read(st, end)
            if before.offset == 0 and before.mtime and self.cursor.offset > 0 and not self._whole:
                # copied and truncated between the last look for copies and this read: only the copy says so
                self._read_between(rotations(before, (st.st_dev, st.st_ino),
                                             [*self.finished, self.cursor.generation()], self.rules, self._kin))
            return
        lines = count_lines(self.path, start, end)
        cursor = advance(self.cursor, self.path, st, end, lines)  # before the records are added: it may raise
        self._read(self.path, st, start, end, self.cursor.lines, cursor)
        self.cursor = cursor

    def _first_read(self, st: os.stat_result, end: int) -> None:
        meta = SourceMeta(format=self.reader.format, files=[str(self.path)], window=(0, end))
        skipped = SkipLog()
        lines = count_lines(self.path, 0, end)
        cursor = advance(FileCursor(str(self.path), target=self.cursor.target), self.path, st, end, lines)
        records = self._packed(self.path, meta, skipped)
        self._unchanged(self.path, st, end, cursor)
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
            self.meta.estimated_steps = meta.estimated_steps  # as the whole log numbers its steps now
            records = self._numbered_on(records)
            self._current = records
            self._fresh()
            self.unsaved, self._reset = [], True
            self._add(self._carried, self._carried_skips, news=False)
        self._add(records, skipped, meta=meta)
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
            self._carried_skips.merge(skipped)
            self.meta.bytes_read += meta.bytes_read
            self.meta.take_clock(meta)
        self._carried = self._carried + records
        self._current = []
        self._fresh()  # what the next file's first read adds to
        self.builder.skipped.merge(self._carried_skips)
        for record in self._carried:
            add_packed(self.builder, record)
        if self._keep:
            self.unsaved, self._reset = list(self._carried), True

    def _fresh(self) -> None:
        """A builder to add to from the first record on, and the rule that tells where a training begins."""
        self.builder, self._rule = RunBuilder(self.meta), Restarts()

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

    def _read(self, path: Path, st: os.stat_result, start: int, end: int, base: int,
              live: FileCursor | None = None, shown: Path | None = None) -> None:
        """Add the records of the lines ``[start, end)`` of ``path``, the file ``st`` was taken of;
        nothing at all if another file took its name meanwhile (raises OSError if none did). ``live``:
        the log itself is read, and this is its cursor after the read, taken before it. ``shown``: the
        file the lines are from, when ``path`` is a copy of it (inflated): skip reasons name it."""
        meta = SourceMeta(format=self.reader.format, files=[str(path)], window=(start, end), line_base=base)
        skipped = SkipLog()
        records = self._packed(path, meta, skipped)
        if shown is not None:
            skipped.reasons = [both(lambda r: r.replace(str(path), str(shown)), r) for r in skipped.reasons]
        if live is not None:
            self._unchanged(path, st, end, live, self.cursor)
        elif not same_file(path, st, end):
            raise FileNotFoundError(errno.ENOENT, "another file took its name while it was read", str(path))
        self._add(records, skipped, meta=meta)
        if self._ending(meta, records) and not records:
            self._got += 1  # a traceback appended after the last record: the run died, which is news
        self.meta.bytes_read += meta.bytes_read
        if start == 0 and records and not self._meta_taken:  # a whole rotated file read on a restart
            self._take_meta(meta)

    @staticmethod
    def _unchanged(path: Path, st: os.stat_result, end: int, cursor: FileCursor,
                   since: FileCursor | None = None) -> None:
        """Raise (the poll is retried) unless the log is still the file ``st`` was taken of, a line ends at
        ``end``, its bytes read are those ``cursor`` was taken of, and it still holds what ``since`` (the
        cursor the read went on from) read: else a copytruncate or rewrite during the read went unseen."""
        if (not same_file(path, st, end, line_end=True) or Generation.of(path, end) != cursor.generation()
                or (since is not None and since.offset > 0 and not since.generation().matches(path, st))):
            raise FileNotFoundError(errno.ENOENT, "another file took its name while it was read", str(path))

    def _ending(self, meta: SourceMeta, records: list[Packed]) -> bool:
        """How the log ends, as the lines just read say: a traceback after their last record is the
        crash; records after an earlier traceback mean the run went on (ingest._crash). Whether the
        lines just read brought a crash."""
        self.meta.crash_scanned = self.meta.crash_scanned or meta.crash_scanned
        self.restarted = self.restarted or bool(meta.starts)  # the reader saw another training begin
        if meta.crash is not None or records:
            self.meta.crash = meta.crash
        return meta.crash is not None

    def _add(self, records: list[Packed], skipped: SkipLog, news: bool = True, meta: SourceMeta | None = None) -> None:
        if meta is not None:
            self.meta.take_clock(meta)  # what the lines just read say of the tracker's clock
        self.builder.skipped.merge(skipped)
        for record in records:
            self.restarted |= self.reader.trainings and self._rule.step(record[0])
            add_packed(self.builder, record)
        if self._keep:
            self.unsaved.extend(records)
        self._got += len(records) if news else 0
        if news and records:
            self._stepped([r[0] for r in records])

    def _stepped(self, steps: list[int]) -> None:
        """Follow the steps added: the usual gap between two (to tell a lost stretch from logging every
        few steps) and, after a rotation that may have lost lines, which steps are missing."""
        if self._recent is not None:  # a rotation's files: their jumps are not the usual stride
            self._recent.extend(steps)
            if self._gap and not self._restarting:  # the new file's first records
                self._lost_steps()
        for step in steps:
            if self._recent is None and self._last_step is not None and step > self._last_step:
                self._strides.append(step - self._last_step)
                del self._strides[:-16]
            if self._last_step is None or step > self._last_step:
                self._last_step = step

    def _resume(self, saved: Mapping[str, Any], records: Sequence[Packed]) -> None:
        """Rebuild the Run as it was before a restart, from the state file alone (the records
        read, what the reader learned), and go on from the saved cursor: a file rotated,
        truncated or replaced meanwhile is found out by the next poll as it would have been
        without the restart."""
        meta = saved.get("meta", {})
        self.meta.framework = meta.get("framework")
        self.meta.config.update(meta.get("config", {}))
        self.meta.notes.extend(with_chinese(meta.get("notes", []), meta.get("notes_zh")))
        self.meta.bytes_read = int(meta.get("bytes_read", 0))
        clock, started = meta.get("clock"), meta.get("started")
        if isinstance(clock, str):
            self.meta.clock, self.meta.clock_epoch = clock, meta.get("clock_epoch") is not False
            self.meta.started = float(started) if isinstance(started, (int, float)) else None
        skipped = saved.get("skipped", {})
        self.builder.skipped = SkipLog(int(skipped.get("count", 0)),
                                       with_chinese(skipped.get("reasons", []), skipped.get("reasons_zh")))
        self._meta_taken = bool(saved.get("meta_taken", False))
        self._whole = bool(saved.get("whole", False))
        self.finished = [g for g in map(Generation.from_json, saved.get("finished", [])) if g is not None]
        last = saved.get("last_step")
        self._last_step = last if isinstance(last, int) else None
        self._strides = [d for d in saved.get("strides", []) if isinstance(d, int)]
        carried = int(saved.get("carried", 0))
        if self._whole:
            self._carried = list(records[:carried])
            self._current = list(records[carried:])
        skips = saved.get("carried_skipped", {})
        self._carried_skips = SkipLog(int(skips.get("count", 0)),
                                      with_chinese(skips.get("reasons", []), skips.get("reasons_zh")))
        for record in records:
            self.restarted |= self.reader.trainings and self._rule.step(record[0])
            add_packed(self.builder, record)  # no dict per record: a restart takes no more memory than the first read
        self._restored = len(records)
        if "cursor" in saved:
            self.cursor = FileCursor.from_json(saved["cursor"])
        self._resume_rotation(saved)


class Follow:
    """One watched PATH: waits until it exists and is recognised, then follows it."""

    def __init__(self, path: Path, fmt: str | None, min_gap: float, saved: dict[str, Any] | None = None,
                 records: Sequence[Packed] | None = None, rules: RotationRules | None = None,
                 algorithm: str | None = None, training: bool = False) -> None:
        self.path = path
        #: PATH is one training logged to several places (:mod:`.training`): read whole, as diagnose reads it, the
        #: run standing for it listed under PATH; found so when PATH is opened, or said by the caller
        self.training = training
        self.fmt = fmt
        self.algorithm = algorithm  # the algorithm the user said the run is (--algorithm); None: detected
        self.rules = rules  # where a text log's rotated files go, beyond the rotation tools' defaults
        self.min_gap = min_gap
        self.saved = saved
        # stored by the last watcher with ``saved`` (None: not kept, the log is read again from its
        # start); handed to the LineSource, then dropped
        self.records = records
        self.inner: LineSource | SnapshotSource | TableSource | None = None
        self.messages: list[str] = []
        self._waiting = ""
        #: whether the last poll found the log written to (a text log's bytes, even with no complete record, such
        #: as a progress bar's; a whole-file log's runs): a trainer still at work
        self.moved = False
        self._size = -1

    def state(self) -> dict[str, Any]:
        return self.inner.state() if self.inner is not None else dict(self.saved or {})

    @property
    def error(self) -> str | None:
        """Why the last read of a whole-file log failed (None after a good one, and for text logs, whose
        bad lines are skipped one by one)."""
        return self.inner.error if isinstance(self.inner, (SnapshotSource, TableSource)) else None

    def pending(self) -> tuple[bool, list[Packed]]:
        """The records to store with this path's state (see :meth:`LineSource.pending`)."""
        return self.inner.pending() if isinstance(self.inner, LineSource) else (False, [])

    def stored(self) -> None:
        if isinstance(self.inner, LineSource):
            self.inner.stored()

    @property
    def progress(self) -> tuple[int, int | None] | None:
        """A text log's records read and its highest step (:attr:`LineSource.progress`); None for a log
        read whole at each change, or not found yet."""
        return self.inner.progress if isinstance(self.inner, LineSource) else None

    def poll(self, now: float, cost: float = 0.0) -> bool:
        if self.inner is None and not self._open():
            return False
        assert self.inner is not None
        changed = self.inner.poll() if isinstance(self.inner, LineSource) else self.inner.poll(now, cost)
        self.messages.extend(self.inner.messages)
        self.inner.messages.clear()
        if isinstance(self.inner, LineSource) and self.inner.restarted:  # a run per training: read whole
            self.messages.append(told("trainings", path=self.path))
            self.inner = SnapshotSource(self.path, self.inner.reader.format if self.fmt else None, self.min_gap,
                                        self.algorithm)
            changed = self.inner.poll(now, cost) or changed
        self.moved = changed
        if isinstance(self.inner, LineSource):
            try:
                size = self.path.stat().st_size
            except OSError:
                size = self._size
            self.moved, self._size = changed or size != self._size, size
        return changed

    def runs(self, last: int | None = None) -> list[Run]:
        """The runs read so far; with ``last``, only the last ``last`` steps of each."""
        if isinstance(self.inner, LineSource):
            run = self.inner.run(last)
            return [] if run is None else [run]
        runs = self.inner.runs() if self.inner is not None else []
        return runs if last is None else [r.tail(last) for r in runs]

    def _open(self) -> bool:
        if self.training:
            self.inner = SnapshotSource(self.path, None, self.min_gap, self.algorithm)
            return True
        resumed = self._resume()
        if resumed is not None:
            self.inner = resumed
            return True
        try:
            reader = find_reader(self.path, self.fmt)
        except (EmptyInputError, UnknownFormatError) as exc:
            if self.fmt is not None and not isinstance(exc, EmptyInputError):
                raise  # --format names no reader: waiting will not help
            if self.fmt is None and self.path.is_dir() and one_training(self.path, direct_logs(self.path)):
                self.training = True  # a trainer's output_dir before its first checkpoint
                return self._open()
            return self._wait(told("written", Words(str(exc), exc.text("zh"))))
        except MissingInputError as exc:  # decided by the error, not by a second look that may race a writer
            return self._wait(told("appear", Words(str(exc), exc.text("zh"))))
        except OSError as exc:  # renamed or removed while it was sniffed: a rotation under way
            return self._wait(told("wait", str(exc.strerror or exc), path=self.path))
        if reader.format in LINE_FORMATS and self.path.is_file():
            saved = self.saved if (self.saved or {}).get("kind") == "lines" else None
            self.inner = LineSource(self.path, reader, saved, self.records, self.rules, self.algorithm)
            self.records = None
        elif reader.since is not None:
            self.inner = TableSource(self.path, reader, self.algorithm)
        else:
            self.inner = SnapshotSource(self.path, reader.format if self.fmt else None, self.min_gap, self.algorithm)
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
        source = LineSource(self.path, reader, saved, self.records, self.rules, self.algorithm)
        self.records = None
        return source

    @property
    def waiting(self) -> str:
        """Why PATH is not followed yet (missing, empty, unreadable); empty once it is."""
        return self._waiting if self.inner is None else ""

    def _wait(self, message: str) -> bool:
        if message != self._waiting:
            self.messages.append(message)
            self._waiting = message
        return False


__all__ = ["LINE_FORMATS", "Follow", "LineSource", "SnapshotSource", "signature"]
