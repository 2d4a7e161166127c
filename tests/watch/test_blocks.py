"""The watch state's stored records: blocks of columns, compressed, decoded back bit for bit; rows
packed into blocks as they accumulate over commits; a version-2 file read on; a damaged block named."""

from __future__ import annotations

import math
import sqlite3
import struct
import zlib
from array import array
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvitals.errors import RlvitalsError
from rlvitals.ingest.record import Packed
from rlvitals.watch import blocks
from rlvitals.watch.state import BLOCK, MIN_BLOCK, WatchState

LAYOUTS = {0: ("actor/entropy", "actor/kl"), 1: ("val/score",), 2: ()}

_bits = st.integers(0, 2**64 - 1).map(lambda b: struct.pack("<Q", b))  # any float64, NaN payloads included


@st.composite
def _records(draw: st.DrawFn) -> tuple[list[Packed], list[int]]:
    ids = draw(st.lists(st.sampled_from(sorted(LAYOUTS)), min_size=1, max_size=60))
    out = []
    for i, layout in enumerate(ids):
        nums = b"".join(draw(_bits) for _ in LAYOUTS[layout])
        texts = draw(st.none() | st.dictionaries(st.text(max_size=5), st.text(max_size=8), max_size=2)
                     .map(orjson.dumps))
        out.append((draw(st.integers(-2**63, 2**63 - 1)) if i % 7 == 3 else i, LAYOUTS[layout], nums, texts,
                    draw(st.booleans())))
    return out, ids


@settings(max_examples=150, deadline=None)
@given(_records())
def test_a_block_decodes_to_the_records_it_was_made_of_bit_for_bit(case: tuple[list[Packed], list[int]]) -> None:
    records, ids = case
    assert blocks.decode(blocks.encode(records, ids), LAYOUTS) == records


def _steps(n: int, start: int = 0, decimals: int | None = None) -> list[Packed]:
    out = []
    for step in range(start, start + n):
        x = 0.5 + 0.3 * math.sin(step / 40) + ((step * 7919) % 1000) * 1.234567891e-5
        y = round(x, decimals) if decimals is not None else x
        out.append((step, LAYOUTS[0], array("d", [y, y / 3]).tobytes(), None, False))
    return out


def test_each_block_keeps_the_smaller_of_its_two_forms() -> None:
    """Printed with three decimals, values compress best as they are; at full precision with their
    bytes regrouped. Either way a block is well under its records as rows (8 bytes a value, 8 a step,
    4 a layout id, 1 a flag: 29 bytes a record here)."""
    for decimals, mode, most in ((3, 0, 0.35), (None, 1, 0.6)):
        records = _steps(BLOCK, decimals=decimals)
        blob = blocks.encode(records, [0] * len(records))
        assert blob[4] == mode, decimals
        assert len(blob) < most * len(records) * 29, (decimals, len(blob))


@pytest.mark.parametrize("damage, says", [
    (lambda b: b[:8], "does not decode"),
    (lambda b: b"XXXX" + b[4:], "does not start as one does"),
    (lambda b: b[:13] + zlib.compress(zlib.decompress(b[13:])[:-8]), "fewer values"),
    (lambda b: b[:13] + zlib.compress(zlib.decompress(b[13:]) + b"\0" * 8), "more values"),
])
def test_a_damaged_block_is_refused_with_what_is_wrong(damage, says: str) -> None:
    records = _steps(10)
    blob = blocks.encode(records, [0] * 10)
    with pytest.raises(blocks.BlockError, match=says):
        blocks.decode(damage(blob), LAYOUTS)


def _commit(state: WatchState, path: str, records: list[Packed], reset: bool = False) -> None:
    state.commit({path: {"kind": "lines"}}, {}, [], [], {path: (reset, records)})


def test_records_committed_a_few_at_a_time_are_packed_into_blocks_and_read_back_in_order(tmp_path: Path) -> None:
    state = WatchState(tmp_path / "s.sqlite")
    records, at = _steps(3 * BLOCK + 77, decimals=4), 0
    for size in (1, 5, BLOCK - 7, 3, 2 * BLOCK + 10, 50, 15):  # crosses block edges mid-commit
        _commit(state, "run.log", records[at:at + size])
        at += size
        assert list(state.packed("run.log")) == records[:at]
    assert at == len(records)
    db = state.db
    counts = [c for (c,) in db.execute("SELECT count FROM blocks ORDER BY seq")]
    rows = db.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    # every block full but the last, then fewer rows than the smallest block
    assert counts[:-1] == [BLOCK] * (len(counts) - 1) and counts[-1] >= MIN_BLOCK and rows < MIN_BLOCK, counts
    assert sum(counts) + rows == len(records) and len(counts) == 4
    assert [r.step for r in state.records("run.log")] == list(range(len(records)))
    size = sum(len(d) for (d,) in db.execute("SELECT data FROM blocks"))
    assert size < 0.5 * sum(counts) * 29  # against the same records as rows (29 bytes each, see above)
    _commit(state, "run.log", _steps(4, start=1000), reset=True)  # a replaced log drops its blocks too
    assert [r[0] for r in state.packed("run.log")] == [1000, 1001, 1002, 1003]
    assert db.execute("SELECT COUNT(*) FROM blocks").fetchone()[0] == 0


def test_a_version_2_file_is_read_on_and_written_in_version_3(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    state = WatchState(path)
    _commit(state, "run.log", _steps(20))
    state.close()
    with sqlite3.connect(path) as db:  # what version 2 wrote: the same tables without blocks
        db.execute("DROP TABLE blocks")
        db.execute("UPDATE schema SET version = 2")
    db.close()
    state = WatchState(path)
    assert state.db.execute("SELECT version FROM schema").fetchone()[0] == 3
    assert list(state.packed("run.log")) == _steps(20)
    _commit(state, "run.log", _steps(BLOCK, start=20))
    assert list(state.packed("run.log")) == _steps(BLOCK + 20)


def test_a_watcher_committing_a_record_a_poll_ends_with_full_blocks(tmp_path: Path) -> None:
    state = WatchState(tmp_path / "s.sqlite")
    records = _steps(2 * BLOCK + 5, decimals=3)
    for record in records:
        _commit(state, "run.log", [record])
    counts = [c for (c,) in state.db.execute("SELECT count FROM blocks ORDER BY seq")]
    assert counts == [BLOCK, BLOCK] and state.db.execute("SELECT COUNT(*) FROM records").fetchone()[0] == 5
    assert list(state.packed("run.log")) == records


def test_a_damaged_block_in_the_state_file_names_the_file_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    state = WatchState(path)
    _commit(state, "run.log", _steps(BLOCK + 3))
    state.db.execute("UPDATE blocks SET data = X'00'")
    stored = state.packed("run.log")
    assert len(stored) == BLOCK + 3
    with pytest.raises(RlvitalsError, match=f"{path}: block 1 of the stored records is damaged .*--state NEW_FILE"):
        list(stored)


def test_stored_records_give_back_their_wall_time_not_a_value(tmp_path: Path) -> None:
    from rlvitals.ingest import WALL_KEY, Record, pack

    state = WatchState(tmp_path / "s.sqlite")
    timed = [pack(Record(s, {"loss": 1.0 / s}, f"run.log:{s}", wall=1.7e9 + s)) for s in range(1, 4)]
    _commit(state, "run.log", [*timed, pack(Record(4, {"loss": 0.2}, "run.log:4"))])
    got = state.records("run.log")
    assert [r.wall for r in got] == [1.7e9 + 1, 1.7e9 + 2, 1.7e9 + 3, None]
    assert all(WALL_KEY not in r.values for r in got) and [r.values["loss"] for r in got] == [1.0, 0.5, 1 / 3, 0.2]
