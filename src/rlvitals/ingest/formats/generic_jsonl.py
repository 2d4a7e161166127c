"""One JSON object per line with a step key: custom loggers and W&B's ``wandb-history.jsonl``.

A file whose first line is a program's event log line (a level and a message: W&B's ``debug-internal.log``,
structlog's output) is not taken: it holds events, not metrics.

The step is the first of :data:`STEP_KEYS` present in the first :data:`SCAN_RECORDS`
records; without one the records are numbered 1, 2, 3... and a note says so. In a W&B
history, ``_step`` counts every ``wandb.log`` call, so ``train/global_step`` wins; the lines
that carry only ``_step`` (TRL's profiling timings and completion tables) are left out
and counted in a note. W&B's own clock on each row (``_timestamp``, else ``_runtime``) is
the record's wall time, not a metric. Nested objects are flattened with ``/``; a W&B media reference
(an object with ``_type``: table, histogram, image) and lists are not metrics and are
ignored. ``null`` is NaN; Python's ``json`` writes ``NaN``/``Infinity``, which orjson
rejects, so such a line is parsed again with the standard library.

Memory is bounded: lines are streamed and only the first records are held to choose the
step key. A large file is read by two processes sharing its pieces once its first rows have settled the
step key and the clock (:func:`read_columns`).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from functools import partial
from itertools import chain, islice
from operator import itemgetter
from pathlib import Path
from typing import Any

from ...words import Words
from .._reader import Reader
from .._wall import WandbClock
from ..columnar import SPLIT_BYTES, Columns
from ..pieces import read_shared
from ..record import STEP_RANGE, Record, SkipLog, SourceMeta, Value
from ..text import json_dicts, parse_json

FORMAT = "jsonl"

#: step columns, most specific first (W&B's own ``_step`` counts log calls, not optimizer steps)
STEP_KEYS = ("train/global_step", "global_step", "step", "_step", "iteration", "iter")
#: W&B bookkeeping that is not a training metric
WANDB_KEYS = frozenset({"_runtime", "_timestamp", "_step", "_wandb"})
#: how many records are looked at to choose the step key
SCAN_RECORDS = 1000

EPOCH_KEYS = ("epoch", "train/epoch")
_EVAL_PREFIXES = ("eval_", "eval/", "test_", "test/", "val_", "val/")


def choose_step_key(keysets: Iterable[Iterable[str]]) -> str | None:
    """The first of :data:`STEP_KEYS` that any of ``keysets`` holds, else None."""
    seen: set[str] = set()
    for keys in keysets:
        seen.update(keys)
    return next((key for key in STEP_KEYS if key in seen), None)


def as_step(value: object) -> int | None:
    """A logged step as an int: ``12`` or ``12.0``; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def json_value(v: object) -> Value | None:
    """A JSON scalar as a record value: null is NaN, booleans are 0/1, strings stay text;
    None for lists and objects."""
    if v is None:
        return math.nan
    if isinstance(v, (bool, int, float)):
        try:
            return float(v)
        except OverflowError:  # an integer beyond float range (the standard parser allows it)
            return math.inf if v > 0 else -math.inf
    if isinstance(v, str):
        return v
    return None


def flatten(obj: dict[str, Any], out: dict[str, Value], prefix: str = "",
            skip: frozenset[str] = frozenset()) -> None:
    """Scalar leaves of ``obj`` into ``out`` under ``a/b`` keys, leaving out the top-level
    keys in ``skip``; W&B media references are not metrics."""
    for key, raw in obj.items():
        if key in skip:
            continue
        name = prefix + key if prefix else key
        kind = type(raw)
        if kind is float:  # the common case, fast
            out[name] = raw
        elif kind is dict:
            if "_type" not in raw:  # with _type it is a W&B table/histogram/image reference
                flatten(raw, out, name + "/")
        else:
            value = json_value(raw)
            if value is not None:
                out[name] = value


class Numbers:
    """A record's metrics when each is a number (a W&B history's rows): their names and their values as
    float64, in the order :func:`flatten` gives them; :meth:`values` is that dict. What :func:`_rows` yields
    for :func:`fill` instead of a dict, when it is asked to (``packed``)."""

    __slots__ = ("names", "numbers")

    def __init__(self, names: tuple[str, ...], numbers: array[float]) -> None:
        self.names, self.numbers = names, numbers

    def values(self) -> dict[str, Value]:
        return dict(zip(self.names, self.numbers.tolist(), strict=True))


#: what picks a layout's metrics out of a record's values (in order), and their names; None when a layout has none
_Layout = tuple[Callable[[tuple[Any, ...]], Any], tuple[str, ...]] | None


def numbers(obj: dict[str, Any], skip: frozenset[str], layouts: dict[tuple[str, ...], _Layout]) -> Numbers | None:
    """The metrics of one record when each kept value is a number or a boolean (as :func:`flatten` then
    :func:`drop_eval_epoch` give them: a key kept by its name alone, an evaluation row's epoch dropped by the
    names left), picked at once by the record's keys in order (``layouts``, made on first sight); None when a
    value is null, text, a list or an object (:func:`flatten` reads it), or the record has no metric.

    >>> layouts = {}
    >>> [(n.values() if n else n) for n in (numbers({"_step": 3, "loss": 0.5, "n": v}, frozenset({"_step"}), layouts)
    ...                                    for v in (7, True, None))]
    [{'loss': 0.5, 'n': 7.0}, {'loss': 0.5, 'n': 1.0}, None]
    """
    keys = tuple(obj)
    if keys in layouts:
        layout = layouts[keys]
    else:
        layout = layouts[keys] = _layout(keys, skip)
    if layout is None:
        return None
    pick, names = layout
    try:  # as float() each: an int exactly as it converts, a boolean 0 or 1
        return Numbers(names, array("d", pick(tuple(obj.values()))))
    except (TypeError, OverflowError):  # null, text, a list or an object; an integer beyond float64
        return None


def _layout(keys: tuple[str, ...], skip: frozenset[str]) -> _Layout:
    kept = {key: at for at, key in enumerate(keys) if key not in skip}
    names: dict[str, Value] = dict.fromkeys(kept, 0.0)
    drop_eval_epoch(names)
    if not names:
        return None
    at = [kept[name] for name in names]
    pick = itemgetter(*at) if len(at) > 1 else (lambda values: (values[at[0]],))
    return pick, tuple(names)


def note_side_logs(meta: SourceMeta, path: Path, count: int, unit: str) -> None:
    """Say how many W&B rows were logged between training steps (no train/global_step) and left out."""
    if count:
        meta.notes.append(Words(f"{path}: {count} {unit} had W&B's _step but no train/global_step "
                                "(timings and tables logged between training steps); they were left out",
                                f"{path}：有 {count} 行只有 W&B 的 _step，没有 train/global_step"
                                "（是在训练步之间记录的耗时和表格）；没有读入"))


def drop_eval_epoch(values: dict[str, Value]) -> None:
    """An evaluation-only record repeats the epoch counter of training; dropping it keeps
    the evaluation step from looking like a training step (and from a double-logged note)."""
    if not any(key in values for key in EPOCH_KEYS):
        return
    others = [k for k in values if k not in EPOCH_KEYS]
    if others and all(k.startswith(_EVAL_PREFIXES) for k in others):
        for key in EPOCH_KEYS:
            values.pop(key, None)


def sniff(path: Path, head: bytes) -> bool:
    segments = head.split(b"\n")
    for i, raw in enumerate(segments):
        line = raw.strip()
        if not line:
            continue
        if not line.startswith(b"{"):
            return False
        try:
            obj = parse_json(line)
        except RecursionError:
            return False  # nested deeper than any metric record
        except ValueError:
            # a first line longer than the head is cut short; judge it by its start
            cut = i == len(segments) - 1 and len(head) >= 1 << 16
            return cut and line.startswith(b'{"')
        if not isinstance(obj, dict):
            return False
        return set(obj) != {"step", "data"} and not _event_log(obj)  # veRL's file logger has its own reader
    return False


#: the keys of a program's structured log line (Go's slog, structlog, JSON logging formatters): its level and
#: its message; W&B's ``debug-internal.log`` is one: events of the wandb service, not training metrics
_LEVEL_KEYS = frozenset({"level", "levelname", "severity", "lvl"})
_MESSAGE_KEYS = frozenset({"msg", "message", "event"})


def _event_log(obj: dict[str, Any]) -> bool:
    """Whether a first JSON line is a program's event log line (a level and a message), not a metrics record."""
    return bool(obj.keys() & _LEVEL_KEYS) and bool(obj.keys() & _MESSAGE_KEYS)


_CHOOSE = "\0choose"  # _rows' step key when it is to be chosen from the first records


def _rows(path: Path, meta: SourceMeta, skips: SkipLog, *, step_key: str | None = _CHOOSE,
          clock: WandbClock | None = None, side: list[int] | None = None,
          packed: bool = False) -> Iterator[tuple[int, dict[str, Value] | Numbers, str, float | None]]:
    """``(step, values, file:line, wall time)`` of each record, its skips counted. A piece of a file gets
    what the whole file settled on (``step_key``, ``clock``) and tallies its side logs in ``side``
    instead of noting them. With ``packed``, a record whose metrics are all numbers gives them as
    :class:`Numbers` (what :func:`fill` takes without a dict)."""
    objects = json_dicts(path, meta, skips)
    first: list[tuple[int, dict[str, Any]]] = []
    if step_key == _CHOOSE:
        first = list(islice(objects, SCAN_RECORDS))
        step_key = choose_step_key(obj.keys() for _, obj in first)
        if step_key is None and first:
            meta.notes.append(Words(f"{path}: no step key ({', '.join(STEP_KEYS)}) in the first records; "
                                    "the records were numbered 1, 2, 3, ... as steps",
                                    f"{path}：开头的记录里没有步数键（{', '.join(STEP_KEYS)}）；"
                                    "各条记录依次编为第 1、2、3…… 步"))
    dropped = WANDB_KEYS | frozenset(STEP_KEYS)  # counters, not metrics (and "step" names the axis)
    layouts: dict[tuple[str, ...], _Layout] = {}
    named = f"{path}:"  # a record's place: the file, then its line
    side_logs = 0
    clock = clock or WandbClock(meta)
    for n, (lineno, obj) in enumerate(chain(first, objects), 1):
        where = named + str(lineno)
        if step_key is None:
            step = n
        elif obj.get(step_key) is None:
            if step_key == "train/global_step" and "_step" in obj:
                side_logs += 1
                continue
            skips.skip(where, Words(f"no {step_key!r} in this line; the line was skipped",
                                    f"这一行没有 {step_key!r}；这一行已跳过"))
            continue
        else:
            found = as_step(obj[step_key])
            if found is None:
                skips.skip(where, Words(f"step {obj[step_key]!r} is not an integer; the line was skipped",
                                        f"步数 {obj[step_key]!r} 不是整数；这一行已跳过"))
                continue
            step = found
        if packed and (found_numbers := numbers(obj, dropped, layouts)) is not None:
            yield step, found_numbers, where, clock.wall(obj)
            continue
        values: dict[str, Value] = {}
        flatten(obj, values, skip=dropped)
        drop_eval_epoch(values)
        if values:
            yield step, values, where, clock.wall(obj)
    if side is None:
        note_side_logs(meta, path, side_logs, "lines")
    else:
        side.append(side_logs)


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    for step, values, where, wall in _rows(path, meta, skips):
        yield Record(step, values if isinstance(values, dict) else values.values(), where, wall=wall)


def read_columns(path: Path, meta: SourceMeta, skips: SkipLog, *, min_bytes: int = SPLIT_BYTES,
                 progress: Callable[[int], None] | None = None) -> Columns:
    """What :func:`read` yields, as :class:`Columns`. A file of ``min_bytes`` or more is read by two
    processes sharing its pieces (:mod:`.pieces`) once its first rows have settled which key is the step
    and which clock the rows carry (:func:`_settled`), as they settle a read of the whole file; records
    numbered 1, 2, 3 (no step key) need every row before them, and are read here."""
    settled = _settled(path, meta) if meta.window is None and path.stat().st_size >= min_bytes else None
    if settled is None:
        return fill(Columns(progress=progress), _rows(path, meta, skips, packed=True), skips)
    step_key, scan, head = settled
    parse = partial(_piece, step_key=step_key, clock_key=scan.key or "")
    (cols, side), later = read_shared(path, meta, skips, parse, min_bytes=min_bytes, progress=progress, head=head)
    for share in later:
        more, their_side = share.merge(meta, skips)
        cols.extend(more)
        side += their_side
    meta.clock, meta.clock_epoch, meta.started = scan.meta.clock, scan.meta.clock_epoch, scan.meta.started
    note_side_logs(meta, path, side, "lines")
    return cols


def _settled(path: Path, meta: SourceMeta) -> tuple[str, WandbClock, int] | None:
    """The step key and the clock a read of the whole file settles on in its first rows (the clock on a
    copy of ``meta``), and where the first :data:`SCAN_RECORDS` records end (the first piece holds them:
    a whole read takes them first, so their skips come before those of their rows); None when there is no
    step key, the file ends within those records, or before the clock is settled."""
    scan = replace(meta, notes=[], bytes_read=0, config={})
    first = list(islice(json_dicts(path, scan, SkipLog()), SCAN_RECORDS))
    step_key = choose_step_key(obj.keys() for _, obj in first)
    if step_key is None or len(first) < SCAN_RECORDS:
        return None
    clock = WandbClock(scan)
    for _ in _rows(path, scan, SkipLog(), step_key=step_key, clock=clock, side=[]):
        if clock.key is not None:
            return step_key, clock, _line_end(path, first[-1][0])
    return None


def _line_end(path: Path, lineno: int) -> int:
    """The offset just past line ``lineno``'s newline (the file's size when it has fewer lines)."""
    at, seen = 0, 0
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            count = chunk.count(b"\n")
            if seen + count >= lineno:
                cut = -1
                for _ in range(lineno - seen):
                    cut = chunk.index(b"\n", cut + 1)
                return at + cut + 1
            seen, at = seen + count, at + len(chunk)
    return at


def _piece(path: Path, meta: SourceMeta, skips: SkipLog, *, progress: Callable[[int], None] | None = None,
           step_key: str, clock_key: str) -> tuple[Columns, int]:
    """One piece of the file (``meta.window``) with what the whole file settled on; its side logs counted."""
    side: list[int] = []
    # the head reads its first records ahead, as a whole read does (their skips come first)
    chosen = _CHOOSE if meta.window is None or meta.window[0] == 0 else step_key
    rows = _rows(path, meta, skips, step_key=chosen, clock=WandbClock.settled(meta, clock_key), side=side, packed=True)
    cols = fill(Columns(progress=progress), rows, skips)
    return cols, side[0]


#: rows :func:`fill` takes between two looks at whether the segment is full (each sums its blocks' sizes)
ROLL_ROWS = 256


def fill(cols: Columns, rows: Iterator[tuple[int, dict[str, Value] | Numbers, str, float | None]],
         skips: SkipLog) -> Columns:
    """``rows`` into ``cols``: a row of a plain layout and numbers is a copy of its values (:class:`Numbers`: of
    their bytes); any other goes through the one check every record passes."""
    steps, fast = cols.steps, cols.fast
    lowest, highest = STEP_RANGE
    for n, (step, given, where, wall) in enumerate(rows):
        if not n % ROLL_ROWS:
            cols.roll()
        if type(given) is Numbers:
            block = fast.get(given.names)
            if block is not None and lowest <= step <= highest:
                block.values.extend(given.numbers)  # an array of the same type: one copy
                block.rows.append(len(steps))
                if wall is not None:
                    cols.wall(len(steps), wall)
                steps.append(step)
                continue
        values = given if isinstance(given, dict) else given.values()
        keys = tuple(values)
        block = fast.get(keys)
        if block is not None and lowest <= step <= highest and block.take(values.values()):
            block.rows.append(len(steps))
            if wall is not None:
                cols.wall(len(steps), wall)
            steps.append(step)
            continue
        record = Record(step, values, where, wall=wall)
        cols.add(record, skips)
        if tuple(record.values) == keys:
            cols.approve(keys)
    return cols


READER = Reader(FORMAT, sniff, read, columns=read_columns,
                describes="JSON lines of metrics with a step key: a custom logger, W&B's wandb-history.jsonl")
