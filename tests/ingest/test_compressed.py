"""Rotated logs read through their compression: streamed into a temporary file, at most a cap of bytes."""

from __future__ import annotations

import bz2
import gzip
import lzma
from collections.abc import Callable
from pathlib import Path

import pytest

from rlvitals.ingest.compressed import INFLATE_ERRORS, inflatable, inflated, twin_of

DATA = b"".join(b"step:%d - actor/entropy:0.5\n" % i for i in range(1, 2001))


@pytest.mark.parametrize(("suffix", "pack"), [(".gz", gzip.compress), (".bz2", bz2.compress),
                                              (".xz", lzma.compress)])
def test_a_compressed_log_is_inflated_into_a_file_named_like_it(tmp_path: Path, suffix: str,
                                                                 pack: Callable[[bytes], bytes]) -> None:
    packed = tmp_path / f"train.log-20261206{suffix}"
    packed.write_bytes(pack(DATA))
    with inflated(packed) as plain:
        assert plain.path.name == "train.log-20261206" and plain.path.read_bytes() == DATA
        assert (plain.size, plain.capped) == (len(DATA), False)
        folder = plain.path.parent
    assert not folder.exists()  # removed once read


def test_inflating_stops_at_the_cap(tmp_path: Path) -> None:
    packed = tmp_path / "train.log.2.gz"
    packed.write_bytes(gzip.compress(DATA))
    with inflated(packed, cap=1000) as plain:
        assert (plain.size, plain.capped, plain.cap) == (1000, True, 1000)
        assert plain.path.read_bytes() == DATA[:1000]
    with inflated(packed, cap=len(DATA)) as plain:
        assert not plain.capped


def test_a_file_cut_short_raises_what_the_callers_catch(tmp_path: Path) -> None:
    packed = tmp_path / "train.log.2.gz"
    packed.write_bytes(gzip.compress(DATA)[:-40])  # still being written
    with pytest.raises(INFLATE_ERRORS), inflated(packed):
        pass


def test_names() -> None:
    assert [inflatable(n) for n in ("a.log.gz", "a.log.bz2", "a.log.xz", "a.log.zst", "a.log.zip", "a.log")] == \
        [True, True, True, False, False, False]
    assert twin_of(Path("old/a.log.1.gz")) == Path("old/a.log.1") and twin_of(Path("a.log.1")) is None
