"""The bytes of a TensorBoard event file: protobuf fields, Events and TFRecord framing.

Only what the writer needs, encoded by hand (field numbers from tensorboard's
``event.proto``/``summary.proto``/``tensor.proto``, the same ones the reader in
:mod:`rlvitals.ingest.tfevents` decodes):

- Event: ``wall_time=1`` double, ``step=2`` int64, ``file_version=3`` string, ``summary=5``
- Summary: ``value=1``; Value: ``tag=1``, ``simple_value=2`` float, ``tensor=8``, ``metadata=9``
- SummaryMetadata: ``plugin_data=1`` { ``plugin_name=1`` }
- TensorProto: ``dtype=1`` (7 = DT_STRING), ``tensor_shape=2`` (empty: a scalar), ``string_val=8``

A TFRecord is ``uint64 length``, ``masked_crc32c(length bytes)``, the payload,
``masked_crc32c(payload)``, all little endian.
"""

from __future__ import annotations

import functools
import math
import struct
from collections import defaultdict

import numpy as np

from ..ingest import masked_crc32c, masked_crc32c_columns

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
DT_STRING = 7
FILE_VERSION = b"brain.Event:2"
_F32_MAX = 3.4028234663852886e38
_U64 = (1 << 64) - 1
_ONE_BYTE = [bytes((i,)) for i in range(0x80)]  # almost every length and key: no loop


def varint(n: int) -> bytes:
    """Base-128 varint; a negative int64 is written as its 64-bit two's complement (10 bytes).

    >>> varint(300).hex()
    'ac02'
    """
    if 0 <= n < 0x80:
        return _ONE_BYTE[n]
    n &= _U64
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def length_field(field: int, payload: bytes) -> bytes:
    return _key(field, LEN) + varint(len(payload)) + payload


def float32_bytes(value: float) -> bytes:
    """``value`` as the float32 TensorBoard stores; beyond float32's range it becomes ±inf
    (struct refuses to pack it, numpy would warn)."""
    if math.isfinite(value) and abs(value) > _F32_MAX:
        value = math.copysign(math.inf, value)
    return struct.pack("<f", value)


_WALL_KEY, _STEP_KEY, _SIMPLE_KEY = bytes((1 << 3 | FIXED64,)), bytes((2 << 3 | VARINT,)), bytes((2 << 3 | FIXED32,))


def _head(wall_time: float, step: int) -> bytes:
    return _WALL_KEY + struct.pack("<d", wall_time) + _STEP_KEY + varint(step)


@functools.lru_cache(maxsize=4096)
def _tag_field(tag: str) -> bytes:
    return length_field(1, tag.encode())


def version_event(wall_time: float) -> bytes:
    """The first Event of every event file: which format follows."""
    return _key(1, FIXED64) + struct.pack("<d", wall_time) + length_field(3, FILE_VERSION)


def scalar_event(wall_time: float, step: int, tag: str, value: float) -> bytes:
    """One ``simple_value`` (what tensorboardX and torch's SummaryWriter write)."""
    summary_value = _tag_field(tag) + _SIMPLE_KEY + float32_bytes(value)
    return _head(wall_time, step) + length_field(5, length_field(1, summary_value))


def text_event(wall_time: float, step: int, tag: str, text: str) -> bytes:
    """One text summary in the text plugin's tensor form (a scalar DT_STRING tensor; the
    dashboard renders it as Markdown)."""
    tensor = _key(1, VARINT) + varint(DT_STRING) + length_field(2, b"") + length_field(8, text.encode())
    metadata = length_field(1, length_field(1, b"text"))
    summary_value = length_field(1, tag.encode()) + length_field(8, tensor) + length_field(9, metadata)
    return _head(wall_time, step) + length_field(5, length_field(1, summary_value))


def tfrecord(payload: bytes) -> bytes:
    """``payload`` framed as one TFRecord."""
    header = struct.pack("<Q", len(payload))
    return (header + struct.pack("<I", masked_crc32c(header)) + payload
            + struct.pack("<I", masked_crc32c(payload)))


def tfrecords(payloads: list[bytes]) -> bytes:
    """Every payload framed as a TFRecord, the same bytes as :func:`tfrecord` on each.

    Payloads of one length have their CRCs computed together, one numpy step per byte
    position (a byte-at-a-time Python CRC over a few MB takes seconds).

    >>> tfrecords([b"ab", b"cd"]) == tfrecord(b"ab") + tfrecord(b"cd")
    True
    """
    by_length: dict[int, list[int]] = defaultdict(list)
    for i, payload in enumerate(payloads):
        by_length[len(payload)].append(i)
    crcs = [0] * len(payloads)
    heads: dict[int, bytes] = {}
    for length, members in by_length.items():
        header = struct.pack("<Q", length)
        heads[length] = header + struct.pack("<I", masked_crc32c(header))
        block = np.frombuffer(b"".join(payloads[i] for i in members), dtype=np.uint8).reshape(len(members), length)
        for i, crc in zip(members, masked_crc32c_columns(np.ascontiguousarray(block.T)).tolist(), strict=True):
            crcs[i] = crc
    return b"".join(heads[len(p)] + p + struct.pack("<I", c) for p, c in zip(payloads, crcs, strict=True))
