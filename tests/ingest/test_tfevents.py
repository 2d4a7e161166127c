"""CRC-32C (scalar and vectorised) and the TFRecord/Event decoding helpers, against
references no one here wrote: tensorboard's and tensorboardX's own CRC functions."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvitals.ingest._crc import crc32c, masked_crc32c, masked_crc32c_columns
from rlvitals.ingest.tfevents import first_bad_crc

tb_crc = pytest.importorskip("tensorboard.compat.tensorflow_stub.pywrap_tensorflow")
tbx_record = pytest.importorskip("tensorboardX.record_writer")


def test_known_vector() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0


@given(st.binary(max_size=300))
def test_crc_matches_tensorboard_and_tensorboardx(data: bytes) -> None:
    assert crc32c(data) == tb_crc.crc32c(data)
    assert masked_crc32c(data) == tb_crc.masked_crc32c(data) == tbx_record.masked_crc32c(data)


@given(st.integers(0, 200).flatmap(lambda n: st.lists(st.binary(min_size=n, max_size=n), min_size=1, max_size=40)))
def test_vectorised_crc_matches_scalar(rows: list[bytes]) -> None:
    length = len(rows[0])
    cols = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(len(rows), length).T
    assert masked_crc32c_columns(cols).tolist() == [masked_crc32c(r) for r in rows]


@given(st.lists(st.tuples(st.binary(max_size=40), st.booleans()), min_size=1, max_size=80),
       st.lists(st.tuples(st.binary(min_size=12, max_size=12), st.booleans()), min_size=20, max_size=20),
       st.integers(0, 7), st.randoms(use_true_random=False))
def test_first_bad_crc_finds_the_earliest_damage(items: list[tuple[bytes, bool]], group: list[tuple[bytes, bool]],
                                                 pad: int, rnd: random.Random) -> None:
    """Payloads of mixed lengths, some with a wrong stored CRC, plus one length group big enough
    for the numpy path: the first wrong one is found, whatever group it is in."""
    items = items + group
    rnd.shuffle(items)
    buf = bytes(pad)
    starts, stored = [], []
    for payload, bad in items:
        starts.append(len(buf))
        buf += payload
        stored.append(masked_crc32c(payload) ^ (1 if bad else 0))
    arr = np.frombuffer(buf, dtype=np.uint8)
    lengths = np.array([len(p) for p, _ in items], dtype=np.int64)
    got = first_bad_crc(buf, arr, np.array(starts, dtype=np.int64), lengths, np.array(stored, dtype=np.uint32))
    want = next((i for i, (_, bad) in enumerate(items) if bad), None)
    assert got == want
