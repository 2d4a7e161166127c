"""veRL's ``file`` logger: one ``{"step": N, "data": {flat metrics}}`` object per line.

orjson writes NaN/inf as ``null``; string values occur (``"resize/mode": "schedule"``);
a line may hold only validation keys. A line that is not such an object is skipped and
counted; a partial last line (the trainer is still writing) is skipped the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from ..words import Words
from ._reader import Reader
from .record import Record, SkipLog, SourceMeta, Value
from .text import json_objects

FORMAT = "verl-jsonl"
_NUMERIC = {float, int}


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


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    meta.framework = "verl"
    shape = '{"step": N, "data": {...}}'
    for lineno, _, obj in json_objects(path, meta, skips, Words(shape, shape)):
        where = f"{path}:{lineno}"
        if not isinstance(obj.get("data"), dict):
            skips.skip(where, Words(f"expected {shape}; the line was skipped", f"应为 {shape}；这一行已跳过"))
            continue
        step = obj.get("step")
        if isinstance(step, float) and step.is_integer():
            step = int(step)
        if not isinstance(step, int) or isinstance(step, bool):
            skips.skip(where, Words(f"step {step!r} is not an integer; the line was skipped",
                                    f"步数 {step!r} 不是整数；这一行已跳过"))
            continue
        data = obj["data"]
        if set(map(type, data.values())) <= _NUMERIC:  # the common line: nothing to convert
            values: dict[str, Value] = data
        else:
            values = {}
            for key, raw in data.items():
                value = _value(raw)
                if value is not None:
                    values[key] = value
        if values:
            yield Record(step, values, where)


READER = Reader(FORMAT, sniff, read,
                describes="veRL's file logger: one {\"step\": N, \"data\": {...}} object per line")
