"""The hand-written protobuf wire decoder, against messages encoded by the real protobuf runtime."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvitals.ingest._protobuf import LEN, WireError, double, fields, signed64, text, varint, zigzag

event_pb2 = pytest.importorskip("tensorboard.compat.proto.event_pb2")
summary_pb2 = pytest.importorskip("tensorboard.compat.proto.summary_pb2")


@given(st.integers(1, 2**64 - 1))
def test_varint_round_trip(n: int) -> None:
    raw = event_pb2.Event(step=signed64(n)).SerializeToString()  # field 2, varint (0 is not written)
    assert raw[0] == 0x10
    assert varint(raw, 1, len(raw)) == (n, len(raw))


@given(st.integers(-(2**63), 2**63 - 1))
def test_signed_and_zigzag(n: int) -> None:
    assert signed64(n & (2**64 - 1)) == n
    assert zigzag((n << 1) ^ (n >> 63)) == n


@given(st.floats(allow_nan=False), st.integers(-(2**63), 2**63 - 1), st.text(max_size=30),
       st.lists(st.floats(width=32, allow_nan=False), max_size=3))
def test_fields_of_a_real_message(wall: float, step: int, tag: str, values: list[float]) -> None:
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=v) for v in values])
    raw = event_pb2.Event(wall_time=wall, step=step, summary=summary).SerializeToString()
    got = {num: (wire, a, b) for num, wire, a, b in fields(raw, 0, len(raw))}
    if wall:
        assert double(raw, got[1][1]) == wall
    if step:
        assert signed64(got[2][1]) == step
    if values:
        wire, a, b = got[5]
        assert wire == LEN
        tags = []
        for num, _, va, vb in fields(raw, a, b):
            assert num == 1
            tags += [text(raw, x, y) for n, _, x, y in fields(raw, va, vb) if n == 1]
        assert tags == ([tag] * len(values) if tag else [])


@given(st.binary(max_size=60))
def test_any_bytes_either_decode_or_raise_wire_error(data: bytes) -> None:
    try:
        for num, wire, a, b in fields(data, 0, len(data)):
            assert num > 0 and wire in (0, 1, 2, 5)
            if wire != 0:
                assert 0 <= a <= b <= len(data)
    except WireError:
        pass
