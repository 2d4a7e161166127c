"""Typing the columns of the rollout readers' raw frames: Python values of mixed types into one
typed column, text into numbers, booleans and lists (JSON or Python-literal text, as CSV and
hand-written JSONL hold them). Bad values are skipped and counted with the row's ``file:line``
(``WHERE``), or become null with a note, as each caller asks.

>>> column("x", [1, 2.5, None]).dtype
Float64
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

import orjson
import polars as pl

from ..errors import InputError
from ..ingest import parse_literal
from ..ingest.record import SkipLog
from ..words import Words
from .tally import counted_bools, counted_values

#: the column of a raw frame holding each row's ``file:line``, for skip reasons
WHERE = "_where"

_TRUE = {"true", "t", "yes", "y", "1", "1.0", "correct"}
_FALSE = {"false", "f", "no", "n", "0", "0.0", "incorrect", "wrong"}


def _is_num(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def json_text(v: object) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)


#: the range of an Int64 column
INT64 = (-(1 << 63), (1 << 63) - 1)
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _text(value: Any) -> Any:
    """A string a column can hold: a lone surrogate (valid in JSON's \\u escapes, not in UTF-8) as U+FFFD."""
    return _SURROGATE.sub("\ufffd", value) if isinstance(value, str) else value


def column(name: str, values: Sequence[object]) -> pl.Series:
    """One column from Python values of possibly mixed types: numbers, bools, strings and
    lists of numbers/strings keep their type; any other mix becomes JSON text."""
    present = [v for v in values if v is not None]
    if not present:
        return pl.Series(name, [None] * len(values), dtype=pl.Utf8)
    if all(isinstance(v, bool) for v in present):
        return pl.Series(name, values, dtype=pl.Boolean)
    if all(_is_num(v) for v in present):
        if any(isinstance(v, int) and not INT64[0] <= v <= INT64[1] for v in present):
            # a 64-bit unsigned hash as a uid, say: kept exact as text (a float would merge two ids)
            return pl.Series(name, [None if v is None else str(v) for v in values], dtype=pl.Utf8)
        ints = all(isinstance(v, int) for v in present)
        return pl.Series(name, values, dtype=pl.Int64 if ints else pl.Float64)
    if all(isinstance(v, str) for v in present):
        return pl.Series(name, [_text(v) for v in values], dtype=pl.Utf8)
    if all(isinstance(v, list) for v in present):
        items = [x for v in present for x in v]  # type: ignore[attr-defined]
        if all(_is_num(x) for x in items) and all(not isinstance(x, int) or INT64[0] <= x <= INT64[1] for x in items):
            return pl.Series(name, [None if v is None else [float(x) for x in v] for v in values],  # type: ignore[attr-defined]
                             dtype=pl.List(pl.Float64))
        if all(isinstance(x, str) for x in items):
            return pl.Series(name, [None if v is None else [_text(x) for x in v] for v in values],  # type: ignore[attr-defined]
                             dtype=pl.List(pl.Utf8))
    return pl.Series(name, [None if v is None else json_text(v) for v in values], dtype=pl.Utf8)


def frame_from_rows(rows: Sequence[dict[str, Any]]) -> pl.DataFrame:
    """The rows as one frame, a column per key. A key that is no valid text (a lone surrogate from a
    ``\\ud800`` escape) is named with U+FFFD in its place; two keys that then read the same keep both
    columns (the second one's name ends in ``#2``)."""
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(r))
    names: dict[str, str] = {}
    taken: set[str] = set()
    for k in keys:
        name, n = _text(k), 1
        while name in taken:
            n += 1
            name = f"{_text(k)}#{n}"
        names[k] = name
        taken.add(name)
    return pl.DataFrame([column(names[k], [r.get(k) for r in rows]) for k in keys])


def to_number(df: pl.DataFrame, col: str, dtype: pl.DataType, skips: SkipLog | None,
               notes: list[str] | None = None) -> pl.DataFrame:
    """Cast ``col`` to a number; with ``skips``, rows whose value is not a number are skipped,
    else they become null and ``notes`` says how many, with the first one's place."""
    src = df[col]
    if src.dtype.is_numeric() or src.dtype == pl.Null:
        return df.with_columns(src.cast(dtype))
    if src.dtype == pl.Boolean:
        return df.with_columns(src.cast(pl.Int8).cast(dtype))
    text = src if src.dtype == pl.Utf8 else to_text(df, col)[col]
    num = text.str.strip_chars().cast(pl.Float64, strict=False)
    if dtype == pl.Int64:
        num = pl.Series(col, [int(v) if v is not None and math.isfinite(v) and v.is_integer() else None
                              for v in num.to_list()], dtype=pl.Int64)
    bad = text.is_not_null() & num.is_null()
    out = df.with_columns(num.alias(col))
    if not bad.any():
        return out
    if skips is None:
        if notes is not None:
            where, value = df[WHERE].filter(bad)[0], text.filter(bad)[0]
            notes.append(counted_values((col, dtype == pl.Int64), int(bad.sum()), where, value))
        return out
    for where, value in zip(df[WHERE].filter(bad).to_list(), text.filter(bad).to_list(), strict=True):
        skips.skip(where, Words(f"{col} {value!r} is not a number; the row was skipped",
                                f"{col} 的值 {value!r} 不是数值；这一行已跳过"))
    return out.filter(~bad)


def _loads(text: str) -> object:
    """orjson first; then the standard parser for the ``NaN``/``Infinity`` Python's json writes;
    then Python literals, as pandas ``to_csv`` writes a list (``['a', 'b']``), read without eval."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return parse_literal(text)


def list_value(value: object, inner: pl.DataType) -> tuple[list[Any] | None, bool]:
    """``(items, ok)``: a list cell as a list of ``inner`` items (``Utf8``: strings, other items as
    JSON text; ``Float64``: numbers), parsing JSON or Python-literal text — CSV and hand-written JSONL
    hold lists as text. ``ok`` is False when the value is no such list (then ``items`` is None).

    >>> list_value('["a", {"x": 1}]', pl.Utf8())
    (['a', '{"x": 1}'], True)
    >>> list_value("[0.5, 'x']", pl.Float64())
    (None, False)
    """
    if value is None:
        return None, True
    if isinstance(value, str):
        if not value.strip():
            return None, True
        try:
            value = _loads(value)
        except (ValueError, RecursionError):
            return None, False
    if not isinstance(value, (list, tuple)):
        return None, False
    if inner == pl.Float64:
        if not all(x is None or _is_num(x) for x in value):
            return None, False
        return [None if x is None else float(x) for x in value], True
    return [x if x is None or isinstance(x, str) else json_text(x) for x in value], True


def to_list(df: pl.DataFrame, col: str, dtype: pl.List, skips: SkipLog, what: str, source: str) -> pl.DataFrame:
    """Type a list column: lists pass (cast), JSON text is parsed; a row whose value is no list of
    the item type is skipped and counted, and a column with no readable list at all is an error."""
    src, inner = df[col], (pl.Float64() if dtype.inner == pl.Float64 else pl.Utf8())
    # lists of the item type, of numbers (cast to either item type) or of nothing cast as they are
    if src.dtype == pl.Null or (isinstance(src.dtype, pl.List) and (
            src.dtype.inner in (inner, pl.Null) or src.dtype.inner.is_numeric())):
        return df.with_columns(src.cast(dtype))
    parsed = [list_value(v, inner) for v in src.to_list()]
    bad = pl.Series([not ok for _, ok in parsed])
    kind, example = (Words("numbers", "数值"), "[0.12, 1.5, 0.03]") if inner == pl.Float64 else \
        (Words("strings", "字符串"), '["search(x)", "open(3)"]')
    if bad.any() and bad.sum() == src.is_not_null().sum():
        i = bad.arg_true()[0]
        raise InputError(Words(f"{what}: column {source!r} (the {col} column) holds no list of {kind}; e.g. "
                               f"{df[WHERE][i]}: {_short(src[i])}; expected a list, or JSON text like "
                               f"{example}; fix the column or leave it unmapped",
                               f"{what}：列 {source!r}（{col} 列）里没有{kind.zh}列表；例如 {df[WHERE][i]}："
                               f"{_short(src[i])}；应为列表，或形如 {example} 的 JSON 文本；请修正这一列，或不映射它"))
    out = df.with_columns(pl.Series(col, [items for items, _ in parsed], dtype=dtype))
    if not bad.any():
        return out
    wheres, values = df[WHERE].filter(bad).to_list(), src.filter(bad).to_list()
    for where, value in zip(wheres, values, strict=True):
        skips.skip(where, Words(f"{col} {_short(value)} is not a list of {kind}; the row was skipped",
                                f"{col} 的值 {_short(value)} 不是{kind.zh}列表；这一行已跳过"))
    return out.filter(~bad)


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def to_bool(df: pl.DataFrame, col: str, notes: list[str]) -> pl.DataFrame:
    src = df[col]
    if src.dtype == pl.Boolean:
        return df
    values: list[bool | None] = []
    odd = 0
    for v in src.to_list():
        if v is None or (isinstance(v, float) and math.isnan(v)):
            values.append(None)
        elif _is_num(v) and v in (0, 1):
            values.append(bool(v))
        elif isinstance(v, str) and v.strip().lower() in _TRUE | _FALSE:
            values.append(v.strip().lower() in _TRUE)
        else:
            values.append(None)
            odd += 1
    if odd:
        notes.append(counted_bools(col, odd))
    return df.with_columns(pl.Series(col, values, dtype=pl.Boolean))


def to_text(df: pl.DataFrame, col: str) -> pl.DataFrame:
    src = df[col]
    if src.dtype == pl.Utf8:
        return df
    if src.dtype.is_numeric() or src.dtype in (pl.Boolean, pl.Null):
        return df.with_columns(src.cast(pl.Utf8))
    return df.with_columns(pl.Series(col, [None if v is None else json_text(v) for v in src.to_list()], dtype=pl.Utf8))
