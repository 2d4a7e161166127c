"""RunBuilder's storage: dense columns, a one-shot finish that hands them over without a copy, a
watcher's finish that copies and lets the builder grow, steps out of order and logged again."""

from __future__ import annotations

import gc
import math
import struct

import numpy as np
import polars as pl
import pytest
from tiny_catalog import CATALOG

from rlvitals.catalog.aliases import KeyResolver
from rlvitals.ingest import Record, SourceMeta
from rlvitals.run.builder import ABSENT, RunBuilder, _lay_out

RESOLVER = KeyResolver(CATALOG)


def _builder(steps: list[int], **extra: dict[int, float]) -> RunBuilder:
    builder = RunBuilder(SourceMeta(format="test", framework="verl"))
    for step in steps:
        values = {"actor/entropy": 1.0 / step, "mystery/metric": float(step)}
        values.update({k: v[step] for k, v in extra.items() if step in v})
        builder.add(Record(step, values, f"f:{step}"))
    return builder


def _column(builder: RunBuilder, key: str) -> np.ndarray:
    return np.frombuffer(builder._cols[key], dtype=np.float64)


def test_a_final_finish_shares_the_builders_columns_and_they_outlive_it() -> None:
    builder = _builder(list(range(1, 2001)))
    run = builder.finish("mem", CATALOG, RESOLVER, final=True)
    mine = _column(builder, "actor/entropy")
    # the raw frame, and the canonical key read from that one raw key, are the builder's own memory
    assert np.shares_memory(run.raw["actor/entropy"].to_numpy(), mine)
    assert np.shares_memory(run.frame["actor/entropy"].to_numpy(), mine)
    del builder, mine
    gc.collect()
    junk = [np.full(2000, 7.0) for _ in range(200)]  # reuse any memory freed too early
    assert run.frame["actor/entropy"].to_list() == [1.0 / s for s in range(1, 2001)] and junk


def test_nothing_can_be_added_after_a_final_finish() -> None:
    builder = _builder([1, 2])
    builder.finish("mem", CATALOG, RESOLVER, final=True)
    with pytest.raises(RuntimeError, match="gave its columns to a Run"):
        builder.add(Record(3, {"actor/entropy": 0.1}, "f:3"))
    with pytest.raises(RuntimeError, match="already gave its columns"):
        builder.finish("mem", CATALOG, RESOLVER)


def test_a_growing_builders_run_is_a_copy_a_later_record_does_not_change() -> None:
    builder = _builder([1, 2, 3])
    first = builder.finish("mem", CATALOG, RESOLVER)
    assert not np.shares_memory(first.raw["actor/entropy"].to_numpy(), _column(builder, "actor/entropy"))
    builder.add(Record(2, {"actor/entropy": 9.0}, "f:again"))  # grows and overwrites: no BufferError
    builder.add(Record(4, {"actor/entropy": 0.25}, "f:4"))
    second = builder.finish("mem", CATALOG, RESOLVER)
    assert first.frame["actor/entropy"].to_list() == [1.0, 0.5, 1 / 3]
    assert second.frame["actor/entropy"].to_list() == [1.0, 9.0, 1 / 3, 0.25]


def test_steps_out_of_order_are_sorted_in_every_column() -> None:
    run = _builder([5, 1, 3, 2, 4], **{"val/test_score/openai/gsm8k": {3: 0.3, 1: 0.1}}).finish(
        "mem", CATALOG, RESOLVER, final=True)
    assert run.steps.tolist() == [1, 2, 3, 4, 5]
    assert run.raw["mystery/metric"].to_list() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert run.raw["val/test_score/openai/gsm8k"].to_list() == [0.1, None, 0.3, None, None]
    assert run.tail(2).steps.tolist() == [4, 5]


def test_a_key_first_logged_late_and_absent_at_the_end_is_null_there() -> None:
    run = _builder([1, 2, 3, 4], **{"late/key": {3: 1.5}}).finish("mem", CATALOG, RESOLVER, final=True)
    assert run.raw["late/key"].to_list() == [None, None, 1.5, None]


def test_only_a_value_changed_at_a_step_logged_again_counts_as_overwritten() -> None:
    builder = _builder([1, 2])
    builder.add(Record(1, {"actor/entropy": 1.0, "mystery/metric": math.nan}, "f:same"))  # same value; NaN over 1.0
    builder.add(Record(2, {"actor/entropy": 0.75}, "f:changed"))
    run = builder.finish("mem", CATALOG, RESOLVER)
    assert [n for n in run.notes if "logged twice" in n] == [
        "2 values were logged twice for the same step with different values (a resumed run?); the later value was kept"]
    assert run.raw["actor/entropy"].to_list() == [1.0, 0.75] and math.isnan(run.raw["mystery/metric"][0])


def test_a_logged_nan_of_any_payload_but_absents_stays_nan() -> None:
    absent = struct.unpack("d", struct.pack("Q", ABSENT))[0]
    other = struct.unpack("d", struct.pack("Q", ABSENT + 1))[0]
    builder = _builder([1, 2, 3])
    for step, value in ((1, math.nan), (2, other), (3, absent)):
        builder.add(Record(step, {"nan/key": value}, f"f:{step}"))
    col = builder.finish("mem", CATALOG, RESOLVER, final=True).raw["nan/key"]
    # the one bit pattern reserved for "not logged" reads as null, as builder.ABSENT documents
    assert col.is_nan().to_list()[:2] == [True, True] and col.is_null().to_list() == [False, False, True]


@pytest.mark.parametrize("order", [[1, 2, 3, 2, 3, 4], [1, 2, 3, 5, 4, 6, 2], [3, 3, 1, 1, 2]])
def test_a_step_seen_again_finds_its_row_in_order_or_not(order: list[int]) -> None:
    builder = RunBuilder(SourceMeta(format="test", framework="verl"))
    for i, step in enumerate(order):
        builder.add(Record(step, {"mystery/metric": float(i)}, f"f:{i}"))
    run = builder.finish("mem", CATALOG, RESOLVER, final=True)
    last = {step: float(i) for i, step in enumerate(order)}  # the later value of a step logged again wins
    assert run.steps.tolist() == sorted(last)
    assert run.raw["mystery/metric"].to_list() == [last[s] for s in sorted(last)]


def _timed(meta_clock: str | None = "TensorBoard wall_time") -> RunBuilder:
    builder = RunBuilder(SourceMeta(format="test", framework="verl", clock=meta_clock, started=90.0))
    for step, wall in ((1, 100.0), (2, 110.0), (3, None), (4, 130.0)):
        builder.add(Record(step, {"actor/entropy": 1.0 / step}, f"f:{step}", wall=wall))
    builder.add(Record(2, {"actor/entropy": 0.4}, "f:5", wall=105.0))  # an earlier time does not move a step back
    builder.add(Record(4, {"actor/entropy": 0.2}, "f:6", wall=200.0))  # logged again later: the later time
    return builder


def test_the_wall_clock_is_one_float_per_step_and_no_metric() -> None:
    run = _timed().finish("f", CATALOG, RESOLVER)
    assert run.wall is not None and run.wall.seconds.dtype == np.float64 and len(run.wall.seconds) == 4
    assert run.wall_times[0].tolist() == [1, 2, 4] and run.wall_times[1].tolist() == [100.0, 110.0, 200.0]
    assert (run.wall.source, run.wall.epoch, run.wall.started) == ("TensorBoard wall_time", True, 90.0)
    assert run.raw.columns == ["step", "actor/entropy"] and run.metrics == ["actor/entropy"]
    assert _timed(None).finish("f", CATALOG, RESOLVER).wall is None  # times without a named clock are not kept


def test_packed_records_keep_their_wall_time() -> None:
    from rlvitals.ingest import WALL_KEY, pack
    from rlvitals.run.follow import add_packed

    packed = pack(Record(7, {"actor/entropy": 0.5, "note": "x"}, "f:1", wall=1234.5))
    assert packed[1] == ("actor/entropy", WALL_KEY)
    builder = RunBuilder(SourceMeta(format="test", clock="W&B _timestamp"))
    add_packed(builder, packed)
    add_packed(builder, pack(Record(8, {"actor/entropy": 0.25}, "f:2")))
    run = builder.finish("f", CATALOG, RESOLVER)
    assert run.raw.columns == ["step", "actor/entropy"] and run.text == {"note": {7: "x"}}
    assert run.wall_times[0].tolist() == [7] and run.wall_times[1].tolist() == [1234.5]


def test_a_growing_builders_clock_is_a_copy_and_a_tail_keeps_its_steps() -> None:
    builder = _timed()
    last = builder.finish("f", CATALOG, RESOLVER, last=2)
    assert last.wall_times[0].tolist() == [4] and len(last.wall.seconds) == 2
    builder.add(Record(5, {"actor/entropy": 0.1}, "f:7", wall=300.0))  # the builder still grows
    run = builder.finish("f", CATALOG, RESOLVER)
    assert run.wall_times[1].tolist() == [100.0, 110.0, 200.0, 300.0] and last.wall_times[1].tolist() == [200.0]
    assert run.tail(3).wall_times[0].tolist() == [4, 5]
    joined = run.with_series(pl.DataFrame({"step": [2, 6], "actor/entropy": [0.0, 0.0]}))
    assert joined.steps.tolist() == [1, 2, 3, 4, 5, 6]
    steps, seconds = joined.wall_times
    assert steps.tolist() == [1, 2, 4, 5] and seconds.tolist() == [100.0, 110.0, 200.0, 300.0]


@pytest.mark.parametrize("every_row", [True, False])
@pytest.mark.parametrize("keys", [["k1", "k2", "k3"], ["k3", "k1", "other", "k4"]])
def test_a_block_is_laid_out_where_a_key_by_key_scatter_puts_it(every_row: bool, keys: list[str]) -> None:
    """A block's values in the frame of some columns (the columns side by side in the block, or not, or absent
    from it; at every row of the segment or some): where putting them one key at a time puts them."""
    rng = np.random.default_rng(0)
    chunk, n = [f"k{i}" for i in range(6)], 50
    rows = np.arange(n) if every_row else np.sort(rng.choice(n, 20, replace=False))
    values = rng.normal(size=(len(rows), len(keys)))
    frame = np.full((len(chunk), n), ABSENT, dtype=np.uint64).view(np.float64)
    want = frame.copy()
    for j, key in enumerate(keys):
        if key in chunk:
            want[chunk.index(key), rows] = values[:, j]
    _lay_out(frame, chunk, {key: j for j, key in enumerate(keys)}, rows, values)
    assert frame.view(np.uint64).tolist() == want.view(np.uint64).tolist()
