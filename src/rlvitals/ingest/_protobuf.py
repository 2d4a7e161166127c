"""A minimal protobuf wire-format decoder, enough to read TensorBoard and W&B records
without their generated classes (and so without tensorflow, tensorboard or wandb).

Only the wire format is known here; which field number means what is up to the caller.
Every function raises :class:`WireError` on bytes that are not valid protobuf, never
IndexError or struct.error, so a caller can count one skipped record and go on.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5

_F64 = struct.Struct("<d").unpack_from
_F32 = struct.Struct("<f").unpack_from
_U64 = struct.Struct("<Q").unpack_from
_U32 = struct.Struct("<I").unpack_from


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """``(value, next_pos)`` of the base-128 varint at ``pos`` (unsigned, at most 10 bytes)."""
    result = 0
    shift = 0
    while pos < end:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            break
    raise WireError(f"bad varint at byte {pos}")


def signed64(value: int) -> int:
    """An int64 field read as an unsigned varint, back to its two's-complement value."""
    return value - (1 << 64) if value >= 1 << 63 else value


def zigzag(value: int) -> int:
    """A sint32/sint64 field (zigzag-encoded) to its value."""
    return (value >> 1) ^ -(value & 1)


def fields(buf: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """Iterate the fields of the message at ``buf[start:end]``.

    Yields ``(field_number, wire_type, a, b)``: for a varint ``a`` is the value; for
    fixed64/fixed32/length-delimited fields ``buf[a:b]`` holds the raw bytes.
    """
    pos = start
    while pos < end:
        key = buf[pos]  # one-byte keys and lengths (the common case) skip the varint call
        if key < 0x80:
            pos += 1
        else:
            key, pos = varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError(f"field number 0 at byte {pos}")
        if wire == VARINT:
            value, pos = varint(buf, pos, end)
            yield number, wire, value, pos
            continue
        if wire == LEN:
            if pos < end and buf[pos] < 0x80:
                size = buf[pos]
                pos += 1
            else:
                size, pos = varint(buf, pos, end)
            stop = pos + size
        elif wire == FIXED64:
            stop = pos + 8
        elif wire == FIXED32:
            stop = pos + 4
        else:
            raise WireError(f"unsupported wire type {wire} for field {number} at byte {pos}")
        if stop > end:
            raise WireError(f"field {number} runs past the end of its message")
        yield number, wire, pos, stop
        pos = stop


def text(buf: bytes, a: int, b: int) -> str:
    """A string field (invalid UTF-8 is replaced, never fatal)."""
    return bytes(buf[a:b]).decode("utf-8", "replace")


def double(buf: bytes, a: int) -> float:
    return float(_F64(buf, a)[0])


def float32(buf: bytes, a: int) -> float:
    return float(_F32(buf, a)[0])
