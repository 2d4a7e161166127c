"""veRL's ``file`` logger: one ``{"step": N, "data": {flat metrics}}`` object per line.

orjson writes NaN/inf as ``null``; string values occur (``"resize/mode": "schedule"``);
a line may hold only validation keys. A line that is not such an object is skipped and
counted; a partial last line (the trainer is still writing) is skipped the same way.

A one-shot load reads the file with :func:`read_columns`: the lines straight into
:class:`~rlvitals.ingest.columnar.Columns` (a large file by two processes), what :func:`read`'s
records would give, skip for skip; :func:`read` stays for a watcher's windows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from ...words import Words
from .._reader import Reader
from ..columnar import SPLIT_BYTES, Columns
from ..pieces import read_shared
from ..record import STEP_RANGE, Record, SkipLog, SourceMeta, Value
from ..text import json_line, json_objects, line_blocks

FORMAT = "verl-jsonl"
_NUMERIC = {float, int}
SHAPE = '{"step": N, "data": {...}}'


def sniff(path: Path, head: bytes) -> bool:
    first = head.lstrip()[:4096]
    return first.startswith(b"{") and b'"step"' in first and b'"data"' in first


def _value(v: object) -> Value | None:
    if v is None:
        return math.nan
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        return v
    return None  # lists/dicts (tables) are not scalar metrics


def _record(path: Path, lineno: int, obj: dict[str, Any], skips: SkipLog) -> Record | None:
    """The record of one line's object, or None (a counted skip, or no scalar value)."""
    where = f"{path}:{lineno}"
    if not isinstance(obj.get("data"), dict):
        skips.skip(where, Words(f"expected {SHAPE}; the line was skipped", f"应为 {SHAPE}；这一行已跳过"))
        return None
    step = obj.get("step")
    if isinstance(step, float) and step.is_integer():
        step = int(step)
    if not isinstance(step, int) or isinstance(step, bool):
        skips.skip(where, Words(f"step {step!r} is not an integer; the line was skipped",
                                f"步数 {step!r} 不是整数；这一行已跳过"))
        return None
    data = obj["data"]
    if set(map(type, data.values())) <= _NUMERIC:  # the common line: nothing to convert
        values: dict[str, Value] = data
    else:
        values = {}
        for key, raw in data.items():
            value = _value(raw)
            if value is not None:
                values[key] = value
    return Record(step, values, where) if values else None


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    meta.framework = "verl"
    for lineno, _, obj in json_objects(path, meta, skips, Words(SHAPE, SHAPE)):
        record = _record(path, lineno, obj, skips)
        if record is not None:
            yield record


def _parse(path: Path, meta: SourceMeta, skips: SkipLog,
           progress: Callable[[int], None] | None = None) -> Columns:
    """The lines of ``meta.window`` (all of them without one) straight into :class:`Columns`: a line of
    a plain layout and numbers (or nulls) costs a parse and a copy of its values (:meth:`Block.take
    <rlvitals.ingest.columnar.Block.take>`); any other goes the way :func:`read` reads it."""
    cols = Columns(progress=progress)
    steps, fast = cols.steps, cols.fast
    loads, decode_error = orjson.loads, orjson.JSONDecodeError
    lowest, highest = STEP_RANGE
    shape = Words(SHAPE, SHAPE)
    for first, lines in line_blocks(path, meta, ends=True):  # a newline at the end is JSON whitespace
        cols.roll()
        for lineno, raw in enumerate(lines, first):
            try:
                obj = loads(raw)
            except decode_error:
                obj = None
            if type(obj) is dict:
                data, step = obj.get("data"), obj.get("step")
                if type(data) is dict and type(step) is int and lowest <= step <= highest:
                    block = fast.get(tuple(data))
                    if block is not None and block.take(data.values()):
                        block.rows.append(len(steps))
                        steps.append(step)
                        continue
            else:
                obj = json_line(path, lineno, raw.removesuffix(b"\n"), skips, shape)
                if obj is None:
                    continue
            _slow(path, lineno, obj, skips, cols)
    return cols


def _slow(path: Path, lineno: int, obj: dict[str, Any], skips: SkipLog, cols: Columns) -> None:
    """One line the way :func:`read` reads it, into ``cols``; its layout takes the fast path from now
    on when the check passed it unchanged."""
    record = _record(path, lineno, obj, skips)
    if record is None:
        return
    cols.add(record, skips)
    keys = tuple(obj["data"])
    if tuple(record.values) == keys:
        cols.approve(keys)


def read_columns(path: Path, meta: SourceMeta, skips: SkipLog, *, min_bytes: int = SPLIT_BYTES,
                 progress: Callable[[int], None] | None = None) -> Columns:
    """What :func:`read` yields, as :class:`Columns`; a file of ``min_bytes`` or more is parsed by two
    processes, each its half."""
    meta.framework = "verl"
    # a line's number shows only in what is said about it (a skip, a note): the pieces can be shared
    cols, later = read_shared(path, meta, skips, _parse, min_bytes=min_bytes, progress=progress)
    for share in later:
        cols.extend(share.merge(meta, skips))
    return cols


READER = Reader(FORMAT, sniff, read, columns=read_columns,
                describes="veRL's file logger: one {\"step\": N, \"data\": {...}} object per line")
