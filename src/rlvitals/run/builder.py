"""The RunBuilder: a reader's records in, one :class:`~rlvitals.run.run.Run` out.

The builder keeps one float64 column per numeric key, indexed by the row of the record's step
(rows in the order steps were first seen): 8 bytes a value, so a long log takes about the
memory of its numbers. A step a key was not logged at holds :data:`ABSENT`, a NaN no arithmetic
produces, so a logged NaN stays a NaN and a key not logged becomes null.

``finish`` detects the framework, version era and algorithm, maps raw keys to canonical keys
through the catalog and builds the Run's frames. A one-shot read (``final=True``, what
:func:`~rlvitals.run.load.load` does) hands the columns to the frames without a copy, and a
canonical key read from one raw key shares that key's column; a builder that keeps growing (a
watcher's) gives the Run a copy.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from ..catalog.aliases import Context, KeyResolver, Resolved
from ..catalog.catalog import Catalog, load_catalog
from ..ingest.columnar import Block, Columns
from ..ingest.record import WALL_KEY, Crash, Packed, Record, RecordCheck, SkipLog, SourceMeta
from ..words import Words
from .detect import Detection, detect

if TYPE_CHECKING:  # polars and the Run come in at finish(): a reader's worker forked before then has neither
    import polars as pl

    from .run import Run, WallClock

_EVALISH = ("eval", "val", "test")

#: the bits of "not logged at this step": a quiet NaN with a payload no arithmetic makes (an invalid
#: operation gives the default NaN, without payload), so no value a trainer computed has them; a file
#: that stored exactly these bits would read as null, not NaN
ABSENT = 0x7FF8_A85E_0000_0001
_ABSENT_BYTES = np.array([ABSENT], dtype=np.uint64).tobytes()
_NAN_BYTES = array("d", [float("nan")]).tobytes()

#: rows of the run to build: every row (None), a range of rows in step order, or rows by index
_Pick = slice | np.ndarray


@dataclass
class RunBuilder:
    """Collects records as dense raw columns (8 bytes a value). ``finish(final=True)`` gives the
    columns away: nothing may be added after it."""

    meta: SourceMeta
    skipped: SkipLog = field(default_factory=SkipLog)
    #: the step of each row, in the order steps were first seen (8 bytes a step)
    _steps: array[int] = field(default_factory=lambda: array("q"))
    #: step -> row, made once a new step comes before one already seen (rows no longer in step order)
    _index: dict[int, int] | None = None
    _cols: dict[str, array[float]] = field(default_factory=dict)
    _text: dict[str, dict[int, str]] = field(default_factory=lambda: defaultdict(dict))
    _summary: dict[str, Any] = field(default_factory=dict)
    _records: int = 0
    _check: RecordCheck = field(default_factory=RecordCheck)
    #: values logged again at a step they were logged at, with a different value
    _overwritten: int = 0
    _given: bool = False
    #: the tracker's wall time of each row (NaN: none), made at the first record that has one
    _wall: array[float] | None = None

    def add(self, record: Record) -> None:
        """Add one record; a record that cannot join a run (:class:`RecordCheck`) is a counted skip."""
        if record.kind == "summary":
            self._summary.update(record.values)
            return
        problem = self._check.problem(record)
        if problem is not None:
            self.skipped.skip(record.where, problem)
            return
        row = self._next_row(record.step)
        if record.wall is not None:
            self._put_wall(row, record.wall)
        cols = self._cols
        for key, value in record.values.items():
            if isinstance(value, str):
                self._text[key][record.step] = value
                continue
            col = cols.get(key)
            if col is None:
                col = cols[key] = array("d")
            if len(col) == row:
                col.append(value)
            else:
                self._put(col, row, value)

    def add_row(self, step: int, names: Sequence[str], numbers: Sequence[float],
                text: Mapping[str, str] | None = None, summary: bool = False) -> None:
        """What :meth:`add` does, for a record given as its numeric keys and values apart (the
        compact form a watcher keeps, without a dict per record) and its text values; a last
        number under :data:`~rlvitals.ingest.WALL_KEY` is the record's wall time (:func:`~rlvitals.ingest.pack`)."""
        if summary:
            self._summary.update(zip(names, numbers, strict=True))
            self._summary.update(text or {})
            return
        row = self._next_row(step)
        if names and names[-1] == WALL_KEY:
            self._put_wall(row, numbers[-1])
            names, numbers = names[:-1], numbers[:-1]
        self._put_row(row, step, names, numbers, text)

    def _put_row(self, row: int, step: int, names: Sequence[str], numbers: Sequence[float],
                 text: Mapping[str, str] | None) -> None:
        cols = self._cols
        for key, value in zip(names, numbers, strict=True):
            col = cols.get(key)
            if col is None:
                col = cols[key] = array("d")
            if len(col) == row:
                col.append(value)
            else:
                self._put(col, row, value)
        for name, word in (text or {}).items():
            self._text[name][step] = word

    def add_columns(self, columns: Columns) -> None:
        """What :meth:`add` does for each record of ``columns`` in turn (they passed its check already),
        a segment of rows at a time (each let go once taken: the Columns are empty after). When they are
        the first records and their steps rise (the common log) a segment goes in a column at a time,
        else record by record."""
        if self._given:
            raise RuntimeError("this RunBuilder gave its columns to a Run (finish(final=True)); "
                               "records cannot be added after that")
        self._summary.update(columns.summary)
        n = len(columns.steps)
        steps = np.frombuffer(columns.steps, dtype=np.int64)
        text: dict[int, dict[str, str]] = defaultdict(dict)
        for at, key, value in columns.text:
            text[at][key] = value
        if self._steps or (n > 1 and not bool(np.all(steps[1:] > steps[:-1]))):
            for part in columns.drain():
                self._replay(part, columns.steps, text, columns.walls)
            return
        self._records += n
        self._steps = columns.steps  # the Columns are the caller's to drop: no copy
        for part in columns.drain():
            self._put_part(part)
        for at, values in text.items():
            for key, value in values.items():
                self._text[key][int(steps[at])] = value
        if columns.walls is not None:
            self._wall = columns.walls

    def _put_part(self, part: dict[tuple[str, ...], Block]) -> None:
        """One segment of rows ``[lo, hi)`` whose steps are new and rising, :data:`_KEYS_AT_ONCE` columns at
        a time: each block's values go into a frame of those columns (ABSENT where a row has not the key)
        with one copy per block, not one scatter per key and block."""
        lo = min(block.rows[0] for block in part.values())
        hi = max(block.rows[-1] for block in part.values()) + 1
        blocks = []
        names: dict[str, None] = {}
        for keys, block in part.items():
            rows = np.frombuffer(block.rows, dtype=np.int64) - lo
            blocks.append(({key: j for j, key in enumerate(keys)}, rows,
                           np.frombuffer(block.values, dtype=np.float64).reshape(len(rows), len(keys))))
            names.update(dict.fromkeys(keys))
        order = list(names)
        for first in range(0, len(order), _KEYS_AT_ONCE):
            chunk = order[first:first + _KEYS_AT_ONCE]
            frame = np.full((len(chunk), hi - lo), ABSENT, dtype=np.uint64).view(np.float64)
            for at, rows, values in blocks:
                _lay_out(frame, chunk, at, rows, values)
            for i, key in enumerate(chunk):
                col = self._cols.get(key)
                if col is None:
                    col = self._cols[key] = array("d")
                if len(col) < lo:
                    col.frombytes(_ABSENT_BYTES * (lo - len(col)))
                col.frombytes(frame[i].data.cast("B"))  # one copy, no bytes in between

    def _replay(self, part: dict[tuple[str, ...], Block], steps: array[int], text: dict[int, dict[str, str]],
                walls: array[float] | None) -> None:
        """The records of one segment one by one, in the order they were read."""
        lo = min(block.rows[0] for block in part.values())
        hi = max(block.rows[-1] for block in part.values()) + 1
        layout = np.zeros(hi - lo, dtype=np.int64)
        offset = np.zeros(hi - lo, dtype=np.int64)
        blocks = list(part.items())
        for b, (_, block) in enumerate(blocks):
            rows = np.frombuffer(block.rows, dtype=np.int64) - lo
            layout[rows], offset[rows] = b, np.arange(len(rows))
        for at in range(lo, hi):
            keys, block = blocks[layout[at - lo]]
            k, start = len(keys), int(offset[at - lo]) * len(keys)
            step = steps[at]
            row = self._next_row(step)
            if walls is not None and at < len(walls) and walls[at] == walls[at]:
                self._put_wall(row, walls[at])
            self._put_row(row, step, keys, block.values[start:start + k], text.get(at))

    def _next_row(self, step: int) -> int:
        if self._given:
            raise RuntimeError("this RunBuilder gave its columns to a Run (finish(final=True)); "
                               "records cannot be added after that")
        self._records += 1
        steps = self._steps
        if self._index is None:  # rows in step order so far: no index is needed to find one
            if not steps or step > steps[-1]:
                steps.append(step)
                return len(steps) - 1
            at = bisect_left(steps, step)
            if steps[at] == step:
                return at
            self._index = {s: row for row, s in enumerate(steps)}
        row = self._index.get(step)
        if row is None:
            row = self._index[step] = len(steps)
            steps.append(step)
        return row

    def _put_wall(self, row: int, wall: float) -> None:
        """The wall time of ``row``: the latest of the times its records were logged at (a step logged
        again by a later launch takes the later time)."""
        walls = self._wall
        if walls is None:
            walls = self._wall = array("d")
        have = len(walls)
        if have == row:
            walls.append(wall)
        elif have < row:
            walls.frombytes(_NAN_BYTES * (row - have))
            walls.append(wall)
        elif not walls[row] >= wall:  # NaN (no time yet) or earlier
            walls[row] = wall

    def _put(self, col: array[float], row: int, value: float) -> None:
        """Store ``value`` at ``row`` of a column not of that length: after steps it was not
        logged at, or at a step logged again (the later value is kept)."""
        have = len(col)
        if row > have:
            col.frombytes(_ABSENT_BYTES * (row - have))
            col.append(value)
            return
        old = col[row]
        if struct.pack("d", old) != _ABSENT_BYTES and not (old == value or (old != old and value != value)):
            self._overwritten += 1
        col[row] = value

    @property
    def records(self) -> int:
        return self._records

    @property
    def is_empty(self) -> bool:
        """Nothing added yet: no step records and no end-of-training summary."""
        return self._records == 0 and not self._summary

    @property
    def rows(self) -> int:
        """How many steps were added (a row each, in the order they were first seen)."""
        return len(self._steps)

    def step_at(self, row: int) -> int | None:
        """The step of ``row`` (None past the last row)."""
        return self._steps[row] if row < len(self._steps) else None

    def packed_rows(self, rows: int, layouts: dict[tuple[str, ...], tuple[str, ...]] | None = None) -> list[Packed]:
        """The first ``rows`` rows as packed records, one a step (its values, text and wall time, as
        :func:`rlvitals.ingest.pack` packs a record), and the summary: a builder given them holds in those
        rows what this one holds. What a followed log read before a file that is read again whole keeps.

        Example:
            >>> b = RunBuilder(SourceMeta(format="jsonl"))
            >>> b.add(Record(1, {"a": 1.0}, "x")); b.add(Record(1, {"b": 2.0}, "x")); b.add(Record(2, {"a": 3.0}, "x"))
            >>> [(step, names) for step, names, *_ in b.packed_rows(1)]
            [(1, ('a', 'b'))]
        """
        n = min(rows, len(self._steps))
        present = [(key, col, np.frombuffer(col, dtype=np.uint64)[:n] != ABSENT) for key, col in self._cols.items()]
        out: list[Packed] = []
        for row in range(n):
            step = self._steps[row]
            names = [key for key, _, logged in present if row < len(logged) and logged[row]]
            numbers = array("d", (col[row] for key, col, logged in present if row < len(logged) and logged[row]))
            if self._wall is not None and row < len(self._wall) and self._wall[row] == self._wall[row]:
                names.append(WALL_KEY)
                numbers.append(self._wall[row])
            text = {key: values[step] for key, values in self._text.items() if step in values}
            shape = tuple(names)
            shape = layouts.setdefault(shape, shape) if layouts is not None else shape
            out.append((step, shape, numbers.tobytes(), orjson.dumps(text) if text else None, False))
        if self._summary:
            numeric = {k: float(v) for k, v in self._summary.items() if isinstance(v, (int, float))}
            words = {k: v for k, v in self._summary.items() if not isinstance(v, (int, float))}
            out.append((0, tuple(numeric), array("d", numeric.values()).tobytes(),
                        orjson.dumps(words) if words else None, True))
        return out

    def finish(self, path: str, catalog: Catalog | None = None, resolver: KeyResolver | None = None,
               last: int | None = None, final: bool = False) -> Run:
        """The Run of the records added so far; with ``last``, only its last ``last`` steps, as
        ``finish(path).tail(last)`` would give them but without building the steps left out (a
        watcher reading the end of a long run often). With ``final``, the Run takes the builder's
        columns without a copy and the builder takes no more records."""
        from .run import Run

        if self._given:
            raise RuntimeError("this RunBuilder already gave its columns to a Run (finish(final=True))")
        catalog = catalog or load_catalog()
        resolver = resolver or KeyResolver(catalog)
        steps_seen = np.array(self._steps, dtype=np.int64)
        pick, cut = _pick(steps_seen, last, ordered=self._index is None)
        steps = steps_seen[pick]
        raw_arrays: dict[str, np.ndarray] = {}
        present: dict[str, np.ndarray | None] = {}
        for key, col in self._cols.items():
            raw_arrays[key], present[key] = _column(col, len(steps_seen), pick, copy=not final)
        wall = _wall_clock(self._wall, self.meta, len(steps_seen), pick, copy=not final)
        self._given = final
        notes = list(self.meta.notes)
        if self._overwritten:
            notes.append(Words(f"{self._overwritten} values were logged twice for the same step with different values "
                               "(a resumed run?); the later value was kept",
                               f"有 {self._overwritten} 个值在同一步被记录了两次且取值不同（是恢复过的运行？）；"
                               "保留的是后一次的值"))
        detection = detect(list(raw_arrays) + list(self._text), self.meta.config,
                           self.meta.framework, catalog, resolver, raw_arrays, given=self.meta.algorithm)
        if detection.given and detection.detected not in ("unknown", detection.algorithm):
            notes.append(_contradicted(detection, catalog))
        ctx = Context(detection.framework if detection.framework != "unknown" else None,
                      detection.algorithm, detection.family, detection.version_low, detection.version_high)
        key_map, unmapped = _map_keys(list(raw_arrays), resolver, ctx, notes)
        train_mask = _train_mask(len(steps), present, key_map, unmapped)
        raw_series = {key: _series(key, raw_arrays[key], present[key]) for key in raw_arrays}
        frame = _frame(steps, _canonical_series(raw_arrays, present, raw_series, key_map))
        meta = self.meta
        return Run(
            path=path, format=meta.format, framework=detection.framework, framework_era=detection.era,
            algorithm=detection.algorithm, family=detection.family, algorithm_label=detection.label,
            frame=frame, raw=_frame(steps, raw_series), key_map=key_map, unmapped=sorted(unmapped),
            train_mask=train_mask, validation=_validation(frame, key_map), summary=dict(self._summary),
            config=dict(meta.config), text=_text_from(self._text, int(steps[0]) if cut and len(steps) else None),
            notes=notes, skipped=self.skipped, files=list(meta.files), bytes_read=meta.bytes_read, cut=cut,
            crash=_crash_at(meta.crash, steps[train_mask]), crash_scanned=meta.crash_scanned, reached=meta.reached,
            wall=wall, estimated_steps=meta.estimated_steps, algorithm_given=detection.given,
        )


def _contradicted(detection: Detection, catalog: Catalog) -> Words:
    """The note on an algorithm the user gave that the run's keys and config read otherwise: a note, not an
    error (the user may know better: a fork's keys, a trainer whose names another's share)."""
    keys_say = catalog.algorithm_short(detection.detected) or detection.detected
    given = catalog.algorithm_short(detection.algorithm) or detection.algorithm
    return Words(f"the algorithm was given as {detection.algorithm} ({given}), but the run's keys and config read as "
                 f"{detection.detected} ({keys_say}); its keys were read as {given}'s",
                 f"算法被指定为 {detection.algorithm}（{given}），但这个运行的键名和配置看起来是 {detection.detected}"
                 f"（{keys_say}）；键名按 {given} 读取")


def add_packed(builder: RunBuilder, record: Packed) -> None:
    """Add a packed record (:func:`rlvitals.ingest.pack`) to ``builder`` without rebuilding its dict."""
    step, names, nums, texts, summary = record
    numbers = array("d")
    numbers.frombytes(nums)
    builder.add_row(step, names, numbers, orjson.loads(texts) if texts else None, summary)


def _pick(steps_seen: np.ndarray, last: int | None, ordered: bool) -> tuple[_Pick, int]:
    """The rows to build, in step order (a range when the steps came in order, the common case,
    so no copy is needed), and how many of the first steps ``last`` leaves out."""
    rows = len(steps_seen)
    cut = rows - max(last, 0) if last is not None and last < rows else 0
    if ordered:
        return slice(cut, rows), cut
    return np.argsort(steps_seen, kind="stable")[cut:], cut


#: how many columns :meth:`RunBuilder._put_part` lays out at once: a frame of a few MB beside the segment
_KEYS_AT_ONCE = 16


def _lay_out(frame: np.ndarray, chunk: list[str], at: dict[str, int], rows: np.ndarray, values: np.ndarray) -> None:
    """The values of ``chunk``'s keys that a block holds (``at``: key -> its column in ``values``, a row per
    row of ``rows``) into ``frame`` (a row per key of ``chunk``, a column per row of the segment)."""
    pairs = [(i, at[key]) for i, key in enumerate(chunk) if key in at]
    if not pairs:
        return
    mine = np.array([i for i, _ in pairs])
    theirs = np.array([j for _, j in pairs])
    # the common block holds the chunk's keys side by side in the same order: slices, no index arrays
    ranged = bool(np.all(np.diff(mine) == 1) and np.all(np.diff(theirs) == 1))
    source = values[:, theirs[0]:theirs[-1] + 1] if ranged else values[:, theirs]
    keys = slice(mine[0], mine[-1] + 1) if ranged else mine
    if len(rows) == frame.shape[1]:  # the block holds every row of the segment (the only block in it)
        frame[keys] = source.T
    else:
        frame[keys if ranged else mine[:, None], rows] = source.T


def _column(col: array[float], rows: int, pick: _Pick, copy: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """One raw column at the picked rows, and where it was logged (None: at every row). Without
    ``copy`` the array is the builder's own memory (the builder must not grow after)."""
    if len(col) < rows:
        col.frombytes(_ABSENT_BYTES * (rows - len(col)))
    values = np.frombuffer(col, dtype=np.float64)[pick]
    if copy and isinstance(pick, slice):
        values = values.copy()  # a view would pin the builder's array: it could not grow again
    logged = values.view(np.uint64) != ABSENT
    return values, None if logged.all() else logged


def _wall_clock(walls: array[float] | None, meta: SourceMeta, rows: int, pick: _Pick,
                copy: bool) -> WallClock | None:
    """The tracker's clock at the picked rows; None when the source has no clock or no row a time."""
    from .run import WallClock

    if walls is None or meta.clock is None:
        return None
    if len(walls) < rows:
        walls.frombytes(_NAN_BYTES * (rows - len(walls)))
    seconds = np.frombuffer(walls, dtype=np.float64)[pick]
    if not np.isfinite(seconds).any():
        return None
    if copy and isinstance(pick, slice):
        seconds = seconds.copy()  # a view would pin the builder's array: it could not grow again
    return WallClock(seconds, meta.clock, meta.clock_epoch, meta.started)


def _series(name: str, values: np.ndarray, logged: np.ndarray | None) -> pl.Series:
    """A Float64 series over ``values`` (without a copy when every row was logged) where a row not
    logged is null and a logged NaN stays NaN."""
    import polars as pl

    if logged is None:
        return pl.Series(name, values, dtype=pl.Float64, nan_to_null=False)
    return pl.Series(name, np.ma.masked_array(values, mask=~logged), nan_to_null=False)


def _crash_at(crash: Crash | None, train_steps: np.ndarray) -> Crash | None:
    """The crash with the last step the log shows finished before it: its last training record, or the
    step a progress bar showed finished after that (what the reader set, see :mod:`rlvitals.ingest._crash`)."""
    if crash is None or not len(train_steps):
        return crash
    last = int(train_steps.max())
    return crash if crash.last_step is not None and crash.last_step >= last else replace(crash, last_step=last)


def _text_from(text: dict[str, dict[int, str]], first: int | None) -> dict[str, dict[int, str]]:
    """A copy of the text values, only those at ``first`` and later when it is given."""
    if first is None:
        return {k: dict(v) for k, v in text.items()}
    return {k: {s: x for s, x in v.items() if s >= first} for k, v in text.items()}


def _map_keys(keys: list[str], resolver: KeyResolver, ctx: Context,
              notes: list[str]) -> tuple[dict[str, Resolved], list[str]]:
    key_map: dict[str, Resolved] = {}
    unmapped: list[str] = []
    for key in keys:
        hit = resolver.resolve(key, ctx, notes)
        if hit is None:
            unmapped.append(key)
        else:
            key_map[key] = hit
    return key_map, unmapped


def _frame(steps: np.ndarray, columns: Mapping[str, pl.Series]) -> pl.DataFrame:
    """The frame of ``columns`` on the step axis; a log that also wrote its step as a metric keeps
    it, renamed."""
    import polars as pl

    series = [pl.Series("step", steps)]
    series += [col.alias("step (logged)") if name == "step" else col.alias(name) for name, col in columns.items()]
    return pl.DataFrame(series)


def _canonical_series(raw: dict[str, np.ndarray], present: dict[str, np.ndarray | None],
                      raw_series: dict[str, pl.Series], key_map: dict[str, Resolved]) -> dict[str, pl.Series]:
    """One column per canonical key: the raw key's own column when one raw key gives it unscaled;
    several raw keys for one canonical key are coalesced in the order a name the catalog prefers (a
    window's mean over a micro-batch's value) beats a literal name beats a pattern beats a mangled name."""
    by_canonical: dict[str, list[Resolved]] = defaultdict(list)
    for res in key_map.values():
        by_canonical[res.canonical].append(res)
    out: dict[str, pl.Series] = {}
    for canonical in sorted(by_canonical):
        sources = sorted(by_canonical[canonical], key=lambda r: (not (r.alias is not None and r.alias.prefer),
                                                                 ":" in r.via, r.via != "exact", r.raw))
        first = sources[0]
        if len(sources) == 1 and first.scale == 1:
            out[canonical] = raw_series[first.raw]
            continue
        n = len(raw[first.raw])
        col, mask = np.full(n, np.nan), np.zeros(n, dtype=bool)
        for res in sources:
            fill = _logged(present[res.raw], n) & ~mask
            if fill.any():
                col[fill] = raw[res.raw][fill] * res.scale
                mask |= fill
        out[canonical] = _series(canonical, col, None if mask.all() else mask)
    return out


def _logged(mask: np.ndarray | None, n: int) -> np.ndarray:
    return np.ones(n, dtype=bool) if mask is None else mask


def _train_mask(n: int, present: dict[str, np.ndarray | None], key_map: dict[str, Resolved],
                unmapped: list[str]) -> np.ndarray:
    # a key the catalog does not know still shows that a training step happened, unless its
    # name says evaluation
    evidence = [k for k, r in key_map.items() if r.split == "train" and r.metric.kind == "train"]
    evidence += [k for k in unmapped if not k.lower().startswith(_EVALISH)]
    mask = np.zeros(n, dtype=bool)
    for key in evidence:
        logged = present[key]
        if logged is None:
            return np.ones(n, dtype=bool)
        mask |= logged
    return mask


def _validation(frame: pl.DataFrame, key_map: dict[str, Resolved]) -> dict[str, pl.DataFrame]:
    """Validation series grouped by data source: ``{source: frame(step, '<var>/<stat>'...)}``."""
    import polars as pl

    groups: dict[str, dict[str, str]] = defaultdict(dict)
    for res in key_map.values():
        metric = res.metric
        if metric.regex is not None and metric.kind == "eval":
            hit = metric.regex.fullmatch(res.canonical)
            if hit and "source" in hit.groupdict():
                parts = hit.groupdict()
                label = "/".join(v for k, v in parts.items() if k != "source" and v)
                groups[parts["source"]][label or res.canonical] = res.canonical
                continue
        if res.split == "eval" or metric.kind == "eval":
            groups["eval"][res.canonical.removeprefix("eval/")] = res.canonical
    out: dict[str, pl.DataFrame] = {}
    for source, cols in sorted(groups.items()):
        sub = frame.select(["step", *[pl.col(c).alias(label) for label, c in sorted(cols.items())]])
        keep = sub.select(pl.any_horizontal([pl.col(lbl).is_not_null() for lbl in cols])).to_series()
        out[source] = sub.filter(keep)
    return out

