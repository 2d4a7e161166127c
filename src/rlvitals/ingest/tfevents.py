"""Scalars out of TensorBoard event files: TFRecord framing, CRC-32C, and Event decoding.

A TFRecord is ``uint64 length``, ``uint32 masked_crc32c(length bytes)``, the payload,
``uint32 masked_crc32c(payload)``. The payload is an ``Event`` protobuf (field numbers
from tensorboard's ``event.proto``/``summary.proto``/``tensor.proto``):

- Event: ``wall_time=1`` double, ``step=2`` int64, ``file_version=3``, ``summary=5``
- Summary: ``value=1`` repeated Value
- Value: ``tag=1``, ``simple_value=2`` float, ``obsolete_old_style_histogram=3``,
  ``image=4``, ``histo=5``, ``audio=6``, ``tensor=8`` TensorProto, ``metadata=9``
- SummaryMetadata: ``plugin_data=1`` { ``plugin_name=1`` }
- TensorProto: ``dtype=1``, ``tensor_shape=2`` { ``dim=2`` { ``size=1`` } },
  ``tensor_content=4``, ``float_val=5``, ``double_val=6``, ``int_val=7``,
  ``string_val=8``, ``int64_val=10``, ``bool_val=11``, ``half_val=13``,
  ``uint32_val=16``, ``uint64_val=17``

Speed: the common record (one ``simple_value``, as tensorboardX and torch write it) is
framed with a tight Python loop and then recognised, decoded and CRC-checked with numpy
a whole chunk at a time; anything else goes through the general decoder.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..words import Words
from ._crc import masked_crc32c, masked_crc32c_columns
from ._files import open_file
from ._protobuf import FIXED32, FIXED64, LEN, VARINT, WireError, double, fields, float32, signed64, text, varint
from .record import SkipLog, SourceMeta

CHUNK = 4 << 20
_MAX_RECORD = 1 << 31  # a longer "record" is taken as corruption
_PAD = bytes(256)  # lets the vectorised fast path read a few bytes past any record
_U64 = struct.Struct("<Q").unpack_from
_U32 = struct.Struct("<I").unpack_from
_F32 = struct.Struct("<f").unpack_from
_NAN = float("nan")

def first_bad_crc(buf: bytes, arr: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                  stored: np.ndarray) -> int | None:
    """Position (into the arrays) of the first payload whose masked CRC-32C differs from
    ``stored``. Payloads of one length are checked together; rare or long ones in Python."""
    bad: int | None = None
    order = np.argsort(lengths, kind="stable")
    sorted_len = lengths[order]
    cuts = np.flatnonzero(np.diff(sorted_len)) + 1
    for members in np.split(order, cuts):
        if not len(members) or (bad is not None and members[0] > bad):
            continue
        length = int(lengths[members[0]])
        if len(members) >= 16 and length <= 1024:
            cols = arr[np.arange(length, dtype=np.int64)[:, None] + starts[members][None, :]]
            wrong = np.flatnonzero(masked_crc32c_columns(cols) != stored[members])
            if len(wrong):
                first = int(members[wrong[0]])
                bad = first if bad is None else min(bad, first)
            continue
        for i in members.tolist():
            start = int(starts[i])
            if masked_crc32c(buf[start:start + length]) != int(stored[i]):
                bad = i if bad is None else min(bad, i)
                break
    return bad


# --- general Event decoding --------------------------------------------------------------------

_DTYPES: dict[int, str] = {1: "<f", 2: "<d", 3: "<i", 4: "<B", 5: "<h", 6: "<b", 9: "<q",
                           10: "<?", 17: "<H", 19: "<e", 22: "<I", 23: "<Q"}
_BFLOAT16 = 14
_NON_SCALAR_FIELDS = {3, 4, 5, 6}  # old-style histogram, image, histo, audio
#: TensorProto value fields that hold varints
_VARINT_VALS = {7: "int", 10: "int", 11: "bool", 13: "half", 16: "uint", 17: "uint"}


def _elements(buf: bytes, a: int, b: int) -> int:
    count = 1
    for num, wire, x, y in fields(buf, a, b):
        if num == 2 and wire == LEN:
            for snum, swire, size, _ in fields(buf, x, y):
                if snum == 1 and swire == VARINT:
                    count *= size
    return count


def _varint_values(buf: bytes, wire: int, x: int, y: int, num: int) -> list[float]:
    raws: list[int] = []
    if wire == VARINT:
        raws.append(x)
    elif wire == LEN:
        pos = x
        while pos < y:
            raw, pos = varint(buf, pos, y)
            raws.append(raw)
    kind = _VARINT_VALS[num]
    if kind == "int":
        return [float(signed64(r)) for r in raws]
    if kind == "bool":
        return [float(r != 0) for r in raws]
    if kind == "half":
        return [float(np.frombuffer(struct.pack("<H", r & 0xFFFF), dtype="<f2")[0]) for r in raws]
    return [float(r) for r in raws]


def _content_scalar(buf: bytes, a: int, b: int, dtype: int) -> float | None:
    if dtype == _BFLOAT16 and b - a == 2:
        return float(np.frombuffer(b"\0\0" + bytes(buf[a:b]), dtype="<f4")[0])
    fmt = _DTYPES.get(dtype)
    if fmt is None or struct.calcsize(fmt) != b - a:
        return None
    return float(struct.unpack_from(fmt, buf, a)[0])


def tensor_scalar(buf: bytes, a: int, b: int) -> float | None:
    """The value of a one-element numeric TensorProto at ``buf[a:b]``, else None."""
    dtype = 0
    values: list[float] = []
    content: tuple[int, int] | None = None
    elements = 1
    for num, wire, x, y in fields(buf, a, b):
        if num == 1 and wire == VARINT:
            dtype = x
        elif num == 2 and wire == LEN:
            elements = _elements(buf, x, y)
        elif num == 4 and wire == LEN:
            content = (x, y)
        elif num == 5:  # float_val: packed, or one fixed32
            values.extend(float32(buf, p) for p in range(x, y, 4))
        elif num == 6:  # double_val
            values.extend(double(buf, p) for p in range(x, y, 8))
        elif num in _VARINT_VALS:
            values.extend(_varint_values(buf, wire, x, y, num))
        elif num == 8:
            return None  # string_val: text, not a metric
        if len(values) > 1:
            return None
    if elements != 1:
        return None
    if values:
        return values[0]
    if content is not None:
        return _content_scalar(buf, content[0], content[1], dtype)
    return None


def _plugin(buf: bytes, a: int, b: int) -> str:
    for num, wire, x, y in fields(buf, a, b):
        if num == 1 and wire == LEN:
            for pnum, pwire, pa, pb in fields(buf, x, y):
                if pnum == 1 and pwire == LEN:
                    return text(buf, pa, pb)
    return ""


def _value(buf: bytes, a: int, b: int, nonscalar: set[str]) -> tuple[str, float] | None:
    """One Summary.Value: ``(tag, value)`` for a scalar; a non-scalar's tag goes to ``nonscalar``."""
    tag = ""
    simple: float | None = None
    tensor: tuple[int, int] | None = None
    plugin = ""
    other = False
    for num, wire, x, y in fields(buf, a, b):
        if num == 1 and wire == LEN:
            tag = text(buf, x, y)
        elif num == 2 and wire == FIXED32:
            simple = float32(buf, x)
        elif num == 8 and wire == LEN:
            tensor = (x, y)
        elif num == 9 and wire == LEN:
            plugin = _plugin(buf, x, y)
        elif num in _NON_SCALAR_FIELDS:
            other = True
    if simple is not None:
        return tag, simple
    if tensor is not None and plugin in ("", "scalars"):
        scalar = tensor_scalar(buf, tensor[0], tensor[1])
        if scalar is not None:
            return tag, scalar
    if tensor is not None or other or plugin:
        nonscalar.add(tag)
    return None


def decode_event(buf: bytes, start: int, end: int,
                 nonscalar: set[str]) -> tuple[int, float, list[tuple[str, float]]] | None:
    """``(step, wall_time, [(tag, value), ...])`` of the Event at ``buf[start:end]``; None without
    scalars (wall_time NaN when the Event has none)."""
    step = 0
    wall = _NAN
    summary: tuple[int, int] | None = None
    for num, wire, x, y in fields(buf, start, end):
        if num == 2 and wire == VARINT:
            step = signed64(x)
        elif num == 1 and wire == FIXED64:
            wall = double(buf, x)
        elif num == 5 and wire == LEN:
            summary = (x, y)
    if summary is None:
        return None
    pairs = []
    for num, wire, x, y in fields(buf, summary[0], summary[1]):
        if num == 1 and wire == LEN:
            hit = _value(buf, x, y, nonscalar)
            if hit is not None:
                pairs.append(hit)
    return (step, wall, pairs) if pairs else None


# --- the vectorised common case ------------------------------------------------------------------

#: after the tag, a one-element float tensor with an empty shape: tensor=8 {dtype=1: DT_FLOAT,
#: tensor_shape=2: {}, then float_val=5 (packed) or tensor_content=4, 4 bytes}
_TENSOR_HEAD = bytes.fromhex("420a08011200")
#: metadata=9 {plugin_data {plugin_name: "scalars"}} with or without data_class=4 (scalar)
_SCALAR_META = (bytes.fromhex("4a0d0a090a07") + b"scalars" + bytes.fromhex("2001"),
                bytes.fromhex("4a0b0a090a07") + b"scalars")


def _all_equal(arr: np.ndarray, at: np.ndarray, pattern: bytes) -> np.ndarray:
    ok = np.ones(len(at), dtype=bool)
    for k, byte in enumerate(pattern):
        ok &= arr[at + k] == byte
    return ok


def _step_varint(arr: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(valid, value, size)`` of a varint of at most four bytes at each offset."""
    b0, b1, b2, b3 = (arr[at + k].astype(np.int64) for k in range(4))
    c0 = b0 < 0x80
    c1 = ~c0 & (b1 < 0x80)
    c2 = ~c0 & ~c1 & (b2 < 0x80)
    c3 = ~c0 & ~c1 & ~c2 & (b3 < 0x80)
    value = ((b0 & 0x7F) | np.where(~c0, (b1 & 0x7F) << 7, 0) | np.where(c2 | c3, (b2 & 0x7F) << 14, 0)
             | np.where(c3, b3 << 21, 0))
    size = np.where(c0, 1, np.where(c1, 2, np.where(c2, 3, 4)))
    return c0 | c1 | c2 | c3, value, size


def _fast_records(arr: np.ndarray, p: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, ...]:
    """Recognise, in every payload ``[p, e)`` at once, an Event holding one scalar Value and
    nothing else, as tensorboardX/torch (``simple_value``) and tensorboard's own writer
    (a float tensor with the ``scalars`` plugin) write it::

        09 <wall_time> [10 <step>] 2a L 0a L-2 0a <n> <tag> (15 <f32> | 42 0a 08 01 12 00 2a 04 <f32> [metadata])

    Returns ``(ok, step, tag_start, tag_end, value)``; payloads not ``ok`` need the general
    decoder. Steps below 2**28 qualify; ``arr`` must extend 256 bytes past the last payload.
    """
    size = e - p
    ok = (size > 12) & (size < 200)
    p = np.where(ok, p, 0)
    e = np.where(ok, e, 40)
    ok &= arr[p] == 0x09
    has_step = arr[p + 9] == 0x10
    valid, step, nbytes = _step_varint(arr, p + 10)
    ok &= valid | ~has_step
    step = np.where(has_step, step, 0)
    q = np.where(has_step, p + 10 + nbytes, p + 9)
    rest = e - q
    ok &= ((arr[q] == 0x2A) & (arr[q + 1] == rest - 2) & (arr[q + 2] == 0x0A) & (arr[q + 3] == rest - 4)
           & (arr[q + 4] == 0x0A) & (arr[q + 5] < 0x80))
    tag_end = q + 6 + arr[q + 5]
    ok &= tag_end <= e
    tag_end = np.where(ok, tag_end, 40)
    suffix = e - tag_end
    simple = (suffix == 5) & (arr[tag_end] == 0x15)
    tensor = ((suffix >= 12) & _all_equal(arr, tag_end, _TENSOR_HEAD)
              & ((arr[tag_end + 6] == 0x2A) | (arr[tag_end + 6] == 0x22)) & (arr[tag_end + 7] == 4))
    meta = suffix == 12
    for pattern in _SCALAR_META:
        meta |= (suffix == 12 + len(pattern)) & _all_equal(arr, tag_end + 12, pattern)
    ok &= simple | (tensor & meta)
    at = np.where(simple, e - 4, tag_end + 8)
    value = arr[at[:, None] + np.arange(4)].copy().view("<f4").ravel()
    return ok, step, q + 6, tag_end, value


# --- one file, chunk by chunk ------------------------------------------------------------------

@dataclass
class Hits:
    """Scalars of one chunk in record order, one entry per value: the record number in the
    file (1-based), the step, the tag, the value and the Event's wall_time (seconds since the
    Unix epoch, NaN when the Event has none)."""

    numbers: np.ndarray
    steps: np.ndarray
    tags: list[str]
    values: list[float]
    walls: np.ndarray


def _chase(buf: bytes, pos: int) -> list[int]:
    """Offsets of the record headers that lie wholly in ``buf``, following the lengths as
    written (they are checked afterwards)."""
    starts: list[int] = []
    add = starts.append
    n = len(buf) - 12
    unpack = _U64
    while pos <= n:
        add(pos)
        pos += unpack(buf, pos)[0] + 16
    return starts


_lencrc: dict[int, int] = {}


def _length_crc(length: int) -> int:
    want = _lencrc.get(length)
    if want is None:
        want = masked_crc32c(struct.pack("<Q", length))
        if len(_lencrc) < 65536:
            _lencrc[length] = want
    return want


def _gather_u32(arr: np.ndarray, at: np.ndarray) -> np.ndarray:
    return arr[at[:, None] + np.arange(4)].copy().view("<u4").ravel()


def _gather_f64(arr: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The little-endian doubles at the (unaligned) offsets ``at``: byte by byte, without an index
    matrix of eight offsets per double."""
    out = np.empty((len(at), 8), dtype=np.uint8)
    for k in range(8):
        out[:, k] = arr[at + k]
    return out.view("<f8").ravel()


class EventScanner:
    """Streams the scalars of one event file: ``for hits in EventScanner(...).chunks()``.

    Skips are counted in ``skips`` with ``file#record N``; tags of non-scalar values are
    collected in ``nonscalar``. The wall_time of the file's first Event (the writer's
    ``file_version`` header, written when it opened the file) is when the run started, as
    ``meta.started`` says (the earliest of a run's files). ``fast=False`` sends every record through the general
    decoder (the tests compare both).
    """

    def __init__(self, path: Path, meta: SourceMeta, skips: SkipLog, nonscalar: set[str], *,
                 fast: bool = True) -> None:
        self.fast = fast
        self.path = path
        self.meta = meta
        self.skips = skips
        self.nonscalar = nonscalar
        self.tags: dict[bytes, str] = {}
        self.number = 0  # records consumed so far

    def chunks(self) -> Iterator[Hits]:
        buf = b""
        pos = 0
        want = CHUNK
        with open_file(self.path) as fh:
            while True:
                data = fh.read(want)
                want = CHUNK
                self.meta.bytes_read += len(data)
                if data:
                    buf = buf[pos:] + data
                    pos = 0
                starts = _chase(buf, pos)
                arr = np.frombuffer(buf + _PAD, dtype=np.uint8)
                s = np.array(starts, dtype=np.int64)
                raw_len = arr[s[:, None] + np.arange(8)].copy().view("<u8").ravel()
                bad_len = self._first_bad_length(raw_len, _gather_u32(arr, s + 8))
                usable = len(starts) if bad_len is None else bad_len
                lengths = raw_len[:usable].astype(np.int64)
                complete = usable
                if usable and starts[usable - 1] + 16 + int(lengths[-1]) > len(buf):
                    complete -= 1  # only the last framed record can be cut off
                    need = starts[usable - 1] + 16 + int(lengths[-1]) - len(buf)
                    want = min(max(CHUNK, need), _MAX_RECORD)  # one read for a long record
                hits, stop = self._records(buf, arr, s[:complete], lengths[:complete])
                if len(hits.numbers):
                    yield hits
                if stop:
                    return
                self.number += complete
                if bad_len is not None and bad_len == complete:
                    self._skip(Words("corrupt record (length checksum mismatch)", "记录已损坏（长度校验和不符）"))
                    return
                if complete:
                    pos = starts[complete - 1] + 16 + int(lengths[complete - 1])
                if not data:
                    if pos < len(buf):
                        self._skip(Words("truncated record (the file ends mid-record; still being written?)",
                                         "记录不完整（文件在一条记录中间结束；还在写入？）"))
                    return

    def _skip(self, what: Words, number: int | None = None) -> None:
        self.skips.skip(f"{self.path}#record {number or self.number + 1}",
                        Words(f"{what}; the rest of the file was skipped", f"{what.zh}；文件余下的部分已跳过"))

    @staticmethod
    def _first_bad_length(raw_len: np.ndarray, stored: np.ndarray) -> int | None:
        if not len(raw_len):
            return None
        uniq, inverse = np.unique(raw_len, return_inverse=True)
        want = np.array([_length_crc(int(v)) for v in uniq.tolist()], dtype=np.uint32)[inverse]
        wrong = np.flatnonzero((want != stored) | (raw_len > _MAX_RECORD))
        return int(wrong[0]) if len(wrong) else None

    def _records(self, buf: bytes, arr: np.ndarray, s: np.ndarray,
                 lengths: np.ndarray) -> tuple[Hits, bool]:
        """Decode and verify the complete records of one chunk; True when the file must stop."""
        p = s + 12
        e = p + lengths
        if not self.number and len(p) and lengths[0] >= 9 and arr[p[0]] == 0x09:
            self._started(double(buf, int(p[0]) + 1))
        ok, steps, tag_at, tag_end, values = _fast_records(arr, p, e)
        if not self.fast:
            ok[:] = False
        slow = np.flatnonzero(~ok).tolist()
        stop_at: int | None = None  # index of a corrupt record found while decoding
        extra: dict[int, tuple[int, float, list[tuple[str, float]]]] = {}
        unreadable: list[tuple[int, str]] = []
        for i in slow:
            a, b = int(p[i]), int(e[i])
            try:
                got = decode_event(buf, a, b, self.nonscalar)
            except (WireError, IndexError, struct.error) as exc:
                if masked_crc32c(buf[a:b]) != _U32(buf, b)[0]:
                    stop_at = i
                    break
                unreadable.append((i, str(exc)))
                continue
            if got is not None:
                extra[i] = got
        used = ok.copy()
        used[list(extra)] = True
        idx = np.flatnonzero(used)
        bad = first_bad_crc(buf, arr, p[idx], lengths[idx], _gather_u32(arr, e[idx]))
        if bad is not None:
            stop_at = int(idx[bad]) if stop_at is None else min(stop_at, int(idx[bad]))
        for i, reason in unreadable:
            if stop_at is None or i < stop_at:
                self.skips.skip(f"{self.path}#record {self.number + i + 1}",
                                Words(f"not a TensorBoard Event ({reason}); the record was skipped",
                                      f"不是 TensorBoard Event（{reason}）；这条记录已跳过"))
        limit = len(s) if stop_at is None else stop_at
        hits = self._collect(arr, ok[:limit], steps, tag_at, tag_end, values, p, extra)
        if stop_at is not None:
            self._skip(Words("corrupt record (payload checksum mismatch)", "记录已损坏（数据校验和不符）"),
                       self.number + stop_at + 1)
            return hits, True
        return hits, False

    def _collect(self, arr: np.ndarray, ok: np.ndarray, steps: np.ndarray,
                 tag_at: np.ndarray, tag_end: np.ndarray, values: np.ndarray, payloads: np.ndarray,
                 extra: dict[int, tuple[int, float, list[tuple[str, float]]]]) -> Hits:
        """The scalars of the fast records (``ok``) and of the ones decoded the long way
        (``extra``), in record order; a fast record's wall_time is the double after its first byte
        (``payloads`` are where the records start)."""
        fast = np.flatnonzero(ok)
        base = self.number + 1
        hits = Hits(fast + base, steps[fast], self._tags(arr, tag_at[fast], tag_end[fast]),
                    values[fast].tolist(), _gather_f64(arr, payloads[fast] + 1))
        extra = {i: v for i, v in extra.items() if i < len(ok)}
        if not extra:
            return hits
        rows = list(zip(hits.numbers.tolist(), hits.steps.tolist(), hits.tags, hits.values, hits.walls.tolist(),
                        strict=True))
        for i, (step, wall, pairs) in extra.items():
            rows.extend((i + base, step, tag, value, wall) for tag, value in pairs)
        rows.sort(key=lambda r: r[0])  # stable: the values of one record keep their order
        numbers, steps_, tags, vals, walls_ = zip(*rows, strict=True)
        return Hits(np.array(numbers, dtype=np.int64), np.array(steps_, dtype=np.int64),
                    list(tags), list(vals), np.array(walls_, dtype=np.float64))

    def _started(self, wall: float) -> None:
        """The run started no later than this file's first Event."""
        meta = self.meta
        if math.isfinite(wall) and (meta.started is None or wall < meta.started):
            meta.started = wall

    def _tags(self, arr: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[str]:
        """The tag of every fast record: records with equal tag bytes are found with numpy
        (grouped by length, compared as fixed-width byte strings); each distinct tag is
        decoded once."""
        out = np.empty(len(starts), dtype=object)
        lens = ends - starts
        order = np.argsort(lens, kind="stable")
        for members in np.split(order, np.flatnonzero(np.diff(lens[order])) + 1):
            if not len(members):
                continue
            length = int(lens[members[0]])
            if length == 0:
                out[members] = ""
                continue
            rows = arr[starts[members][:, None] + np.arange(length)]
            uniq, inverse = np.unique(rows.view(f"V{length}").ravel(), return_inverse=True)
            names = np.array([self._tag(bytes(u)) for u in uniq], dtype=object)
            out[members] = names[inverse]
        return out.tolist()

    def _tag(self, raw: bytes) -> str:
        tag = self.tags.get(raw)
        if tag is None:
            tag = raw.decode("utf-8", "replace")
            if len(self.tags) < 100_000:
                self.tags[raw] = tag
        return tag
