"""A block of stored records: consecutive records of one log packed as columns and compressed
together, the form the watch state keeps all but its newest records in.

A record's values are stored as float64 (exact: NaN and infinities included), but one key's values
side by side rather than one record's: a metric's successive values share their sign, exponent and
leading digits, so the columns compress where the records did not. Each block is compressed
(zlib) as it is or with the bytes of its values regrouped by significance (byte eight of every
value, then byte seven, …), whichever a sample of it says is smaller: values printed with few
decimals compress best as they are, full-precision ones regrouped.

Layout of a block (little-endian): a header ``RVB1``, the mode byte (0 as is, 1 regrouped), the
record count and the length of the text part; then one zlib stream of the steps (int64), the
layout ids (int32), the summary flags (uint8), the text values (JSON ``[[index, text], …]``) and
the values: for each layout in order of first use, its records' values key by key.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping, Sequence

import numpy as np
import orjson

from ..ingest.record import Packed

_HEAD = struct.Struct("<4sBII")
_MAGIC = b"RVB1"
_PLAIN, _REGROUPED = 0, 1


class BlockError(ValueError):
    """A stored block that does not decode (a damaged state file)."""


def encode(records: Sequence[Packed], layout_ids: Sequence[int]) -> bytes:
    """The block of ``records``; ``layout_ids[i]`` is the id of record ``i``'s key list."""
    n = len(records)
    steps = np.fromiter((r[0] for r in records), dtype="<i8", count=n)
    layouts = np.asarray(layout_ids, dtype="<i4")
    summary = np.fromiter((r[4] for r in records), dtype=np.uint8, count=n)
    texts = orjson.dumps([[i, r[3].decode()] for i, r in enumerate(records) if r[3] is not None])
    groups: dict[int, list[bytes]] = {}
    for record, layout in zip(records, layout_ids, strict=True):
        groups.setdefault(layout, []).append(record[2])
    values = b"".join(_by_key(rows) for rows in groups.values())
    head = steps.tobytes() + layouts.tobytes() + summary.tobytes() + texts
    mode = _mode(values)
    body = zlib.compress(head + (_regroup(values) if mode == _REGROUPED else values), 6)
    return _HEAD.pack(_MAGIC, mode, n, len(texts)) + body


def _mode(values: bytes) -> int:
    """The form that compresses ``values`` smaller, judged on every eighth value (every key has its
    share: the values lie key by key) compressed fast both ways: a fifth of the cost of trying both."""
    sample = np.frombuffer(values, dtype=np.float64)[::8].tobytes()
    plain, regrouped = len(zlib.compress(sample, 1)), len(zlib.compress(_regroup(sample), 1))
    return _PLAIN if plain <= regrouped else _REGROUPED


def decode(blob: bytes, layouts_by_id: Mapping[int, tuple[str, ...]]) -> list[Packed]:
    """The records of a block, given the key list of each layout id; raises :class:`BlockError`
    when the block is damaged."""
    try:
        magic, mode, n, text_len = _HEAD.unpack_from(blob)
        body = zlib.decompress(blob[_HEAD.size:])
    except (struct.error, zlib.error) as exc:
        raise BlockError(f"a stored block does not decode ({exc})") from None
    if magic != _MAGIC or mode not in (_PLAIN, _REGROUPED):
        raise BlockError("a stored block does not start as one does")
    at = 13 * n
    if len(body) < at + text_len:
        raise BlockError("a stored block is shorter than its header says")
    steps = np.frombuffer(body, dtype="<i8", count=n).tolist()
    layouts = np.frombuffer(body, dtype="<i4", count=n, offset=8 * n).tolist()
    summary = np.frombuffer(body, dtype=np.uint8, count=n, offset=12 * n).tolist()
    texts = {int(i): t.encode() for i, t in orjson.loads(body[at:at + text_len])}
    values = body[at + text_len:]
    if mode == _REGROUPED:
        values = _ungroup(values)
    rows: list[bytes] = [b""] * n
    offset = 0
    for layout in dict.fromkeys(layouts):
        names = layouts_by_id.get(layout)
        if names is None:
            raise BlockError(f"a stored block uses key list {layout}, which the state file does not hold")
        members = [i for i, lay in enumerate(layouts) if lay == layout]
        size = 8 * len(names) * len(members)
        if offset + size > len(values):
            raise BlockError("a stored block holds fewer values than its records need")
        for i, row in zip(members, _by_record(values[offset:offset + size], len(members)), strict=True):
            rows[i] = row
        offset += size
    if offset != len(values):
        raise BlockError("a stored block holds more values than its records need")
    return [(steps[i], layouts_by_id[layouts[i]], rows[i], texts.get(i), bool(summary[i])) for i in range(n)]


def _by_key(rows: list[bytes]) -> bytes:
    """Records' values (one bytes per record, the same number each) reordered key by key."""
    if not rows[0]:
        return b""
    matrix = np.frombuffer(b"".join(rows), dtype=np.float64).reshape(len(rows), -1)
    return np.ascontiguousarray(matrix.T).tobytes()


def _by_record(values: bytes, count: int) -> list[bytes]:
    if not values:
        return [b""] * count
    matrix = np.frombuffer(values, dtype=np.float64).reshape(-1, count).T
    return [row.tobytes() for row in np.ascontiguousarray(matrix)]


def _regroup(values: bytes) -> bytes:
    return np.frombuffer(values, dtype=np.uint8).reshape(-1, 8).T.tobytes()


def _ungroup(values: bytes) -> bytes:
    if len(values) % 8:
        raise BlockError("a stored block's values are not whole float64s")
    return np.frombuffer(values, dtype=np.uint8).reshape(8, -1).T.tobytes()
