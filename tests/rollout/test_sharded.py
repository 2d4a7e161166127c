"""A path read shard by shard gives what one read of everything gives: every per-step value, every value over
the whole table, what could not be computed, the skips and every note — on the inputs where shards must
guess (the score range, the largest group) and where they cannot be folded apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from rlvitals.rollout.analysis import RolloutAnalysis, analyze
from rlvitals.rollout.options import RolloutSettings
from rlvitals.rollout.readers import ColumnMap, read_rollouts
from rlvitals.rollout.shards import ShardedRollouts
from rlvitals.rollout.writers import write_trl_completions, write_verl_dump
from rlvitals.words import in_lang


def whole(path: Path, settings: RolloutSettings) -> RolloutAnalysis:
    """The reference: everything read into one table first, then analysed."""
    rs = read_rollouts(path, columns=settings.columns, group_size=settings.group_size,
                       reward_weights=settings.reward_weights)
    return analyze(rs, settings)


def assert_same(a: RolloutAnalysis, b: RolloutAnalysis) -> None:
    assert_frame_equal(a.steps, b.steps, check_exact=True)
    assert a.overall.keys() == b.overall.keys()
    for key, value in a.overall.items():  # NaN is the same NaN
        assert value == b.overall[key] or (value != value and b.overall[key] != b.overall[key]), key
    assert a.skipped == b.skipped
    assert a.notes == b.notes and [in_lang(n, "zh") for n in a.notes] == [in_lang(n, "zh") for n in b.notes]
    assert a.rollouts is not None and b.rollouts is not None
    # the same skips; a shard's are listed together (one read lists the unreadable lines of every file first)
    assert a.rollouts.skips.count == b.rollouts.skips.count
    assert sorted(a.rollouts.skips.reasons) == sorted(b.rollouts.skips.reasons)
    assert_frame_equal(a.rollouts.table, b.rollouts.table, check_exact=True)


def _rows(step: int, scores: list[float], prompts: int = 3, **extra: Any) -> list[dict[str, Any]]:
    return [{"prompt": f"q{step}-{p}", "response": f"answer {i % 3} for {p}", "score": s, **extra}
            for p in range(prompts) for i, s in enumerate(scores)]


def test_a_real_learners_verl_dump_folded_by_step_is_the_whole_read(tmp_path: Path) -> None:
    from rlvitals.synthetic.demo import run_demo

    folder = run_demo(tmp_path, steps=12).rollouts
    settings = RolloutSettings(ks=(1, 2, 4))
    sharded = analyze(folder, settings)
    assert sharded.shards is not None and isinstance(sharded.rollouts, ShardedRollouts)
    assert_same(sharded, whole(folder, settings))
    assert sharded.rollout_steps() == list(range(1, 13))
    assert_frame_equal(sharded.table_at([3, 5]), whole(folder, settings).table_at([3, 5]), check_exact=True)


def test_a_score_beyond_one_in_a_late_shard_makes_every_shard_fold_again_without_correctness(tmp_path: Path) -> None:
    write_verl_dump(_rows(1, [1.0, 0.0, 0.0, 1.0]), tmp_path, 1)
    write_verl_dump(_rows(2, [0.0, 1.0, 1.0, 1.0]), tmp_path, 2)
    write_verl_dump(_rows(3, [0.5, 2.5, 0.0, 1.0]), tmp_path, 3)  # not a 0/1 reward after all
    settings = RolloutSettings(ks=(1, 2))
    got = analyze(tmp_path, settings)
    assert_same(got, whole(tmp_path, settings))
    assert any(n.startswith("scores range over [0, 2.5], not a 0/1 reward") for n in got.notes)
    assert got.rollouts is not None and "correct" not in got.rollouts.table.columns


def test_ks_all_takes_the_largest_group_of_every_shard(tmp_path: Path) -> None:
    write_verl_dump(_rows(1, [1.0, 0.0]), tmp_path, 1)
    write_verl_dump(_rows(2, [1.0, 0.0, 0.0, 0.0, 1.0]), tmp_path, 2)
    settings = RolloutSettings(ks="all")
    got = analyze(tmp_path, settings)
    assert got.ks == (1, 2, 3, 4, 5)
    assert_same(got, whole(tmp_path, settings))
    assert any(n == "group sizes vary: 2, 5 samples" for n in got.notes)


def test_bad_lines_an_empty_file_and_a_file_of_bad_lines_are_counted_as_one_read_counts_them(tmp_path: Path) -> None:
    write_verl_dump(_rows(1, [1.0, 0.0, 1.0]), tmp_path, 1)
    with (tmp_path / "1.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"input": "q", "output": \n{"input": "q", "output": "x", "score": "high"}\n')
    (tmp_path / "2.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "3.jsonl").write_text("not json\n{broken\n", encoding="utf-8")
    write_verl_dump(_rows(4, [0.0, 0.0, 1.0], length="12x"), tmp_path, 4)
    settings = RolloutSettings(ks=(1, 2))
    got = analyze(tmp_path, settings)
    assert_same(got, whole(tmp_path, settings))
    assert got.rollouts is not None and got.rollouts.skips.count == 4
    assert any("2.jsonl holds no samples" in n for n in got.notes)


def test_group_size_mismatches_and_prompts_split_into_runs_add_up_over_the_shards(tmp_path: Path) -> None:
    write_verl_dump(_rows(1, [1.0, 0.0, 1.0, 1.0]), tmp_path, 1)
    split = _rows(2, [1.0, 0.0], prompts=2) + _rows(2, [1.0], prompts=2)  # prompts come back: grouped by text
    write_verl_dump(split, tmp_path, 2)
    write_verl_dump(_rows(3, [0.0, 0.0, 1.0]), tmp_path, 3)
    settings = RolloutSettings(ks=(1, 2), group_size=4)
    got = analyze(tmp_path, settings)
    assert_same(got, whole(tmp_path, settings))
    assert any(n.startswith("the same prompt appears in separate runs at step(s) 2") for n in got.notes)
    assert any(n.startswith("5 of 8 groups do not have group_size=4 samples") for n in got.notes)


def test_trl_completions_with_one_odd_file_are_the_whole_read(tmp_path: Path) -> None:
    for step, n in ((10, 4), (20, 4), (30, 2), (40, 4)):
        rows = [{"step": step, "prompt": f"p{p}", "response": f"r{i}", "score": float(i % 2)}
                for p in range(2) for i in range(n)]
        write_trl_completions(rows, tmp_path, step)
    settings = RolloutSettings(ks=(1, 2))
    got = analyze(tmp_path, settings)
    assert_same(got, whole(tmp_path, settings))
    assert any(n.startswith("1 file(s) have a row count other than 8") for n in got.notes)


def test_generic_files_that_share_a_step_are_read_as_one_table_and_say_so(tmp_path: Path) -> None:
    folder = tmp_path / "tables"
    folder.mkdir()
    for name, score in (("a.jsonl", 1.0), ("b.jsonl", 0.0)):
        rows = [{"step": 1, "q": "same prompt", "r": name, "s": score}, {"step": 2, "q": "other", "r": name, "s": 1.0}]
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    settings = RolloutSettings(ks=(1, 2), columns=ColumnMap(prompt="q", response="r", score="s"))
    got = analyze(folder, settings)
    ref = whole(folder, settings)
    assert_frame_equal(got.steps, ref.steps, check_exact=True)
    said = [n for n in got.notes if n not in ref.notes]
    assert said == [f"the files were read as one table (step 1 is in {folder / 'a.jsonl'} and {folder / 'b.jsonl'}): "
                    "memory holds all of them"]
    assert got.shards is None
    assert got.steps.filter(pl.col("step") == 1)["pass@2"].to_list() == [1.0]  # one group of both files


def test_files_whose_columns_differ_are_read_as_one_table(tmp_path: Path) -> None:
    write_verl_dump(_rows(1, [1.0, 0.0], correct=True), tmp_path, 1)  # veRL's acc in this file only
    write_verl_dump(_rows(2, [1.0, 0.0]), tmp_path, 2)
    settings = RolloutSettings(ks=(1,))
    got = analyze(tmp_path, settings)
    assert_frame_equal(got.steps, whole(tmp_path, settings).steps, check_exact=True)
    assert "the files were read as one table (some files give a correctness column and some do not): memory " \
           "holds all of them" in got.notes


def test_sharded_generic_parquet_files_with_a_column_map(tmp_path: Path) -> None:
    folder = tmp_path / "parts"
    folder.mkdir()
    for part in range(3):
        rows = [{"step": part * 2 + s, "gid": f"g{g}", "text": f"t{i}", "reward": float((i + g + s) % 3 == 0)}
                for s in range(2) for g in range(3) for i in range(4)]
        pl.DataFrame(rows).write_parquet(folder / f"part-{part}.parquet")
    settings = RolloutSettings(ks=(1, 2, 4), columns=ColumnMap(group="gid", response="text", score="reward"))
    got = analyze(folder, settings)
    assert got.shards is not None and len(got.shards.by_step) == 6
    assert_same(got, whole(folder, settings))


def test_no_readable_rollout_in_any_shard_is_the_whole_reads_error(tmp_path: Path) -> None:
    from rlvitals.errors import EmptyInputError

    (tmp_path / "1.jsonl").write_text("{broken\n", encoding="utf-8")
    (tmp_path / "2.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(EmptyInputError) as sharded:
        analyze(tmp_path, RolloutSettings())
    with pytest.raises(EmptyInputError) as one:
        read_rollouts(tmp_path)
    assert str(sharded.value) == str(one.value)
    assert in_lang(sharded.value.args[0], "zh") == in_lang(one.value.args[0], "zh")


def test_one_large_parquet_table_is_read_in_slices_of_whole_steps(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from rlvitals.rollout import shards

    rows = [{"step": s, "gid": f"g{g}", "text": f"t{i}", "reward": float((i + g * s) % 4 == 0)}
            for s in range(9) for g in range(3) for i in range(5)]
    path = tmp_path / "all.parquet"
    pl.DataFrame(rows).write_parquet(path, row_group_size=7)
    settings = RolloutSettings(ks=(1, 2), columns=ColumnMap(group="gid", response="text", score="reward"))
    from rlvitals.rollout.readers import locate

    planned = shards.jobs(locate(path, settings.columns), settings, slice_rows=40)
    assert [job.rows for job in planned] == [(0, 45), (45, 45), (90, 45)]  # 15 rows a step: cut between steps
    ref = whole(path, settings)
    monkeypatch.setattr(shards, "SLICE_ROWS", 40)
    got = analyze(path, settings)
    assert got.shards is not None and len({id(j) for j in got.shards.by_step.values()}) == 3
    assert_same(got, ref)


def test_a_large_parquet_table_not_in_step_order_is_read_as_one(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from rlvitals.rollout import shards

    rows = [{"step": i % 2, "gid": f"g{i % 3}", "reward": float(i % 5 == 0)} for i in range(120)]  # steps interleaved
    path = tmp_path / "mixed.parquet"
    pl.DataFrame(rows).write_parquet(path)
    settings = RolloutSettings(ks=(1, 2), columns=ColumnMap(group="gid", score="reward"))
    monkeypatch.setattr(shards, "SLICE_ROWS", 40)
    got = analyze(path, settings)
    assert got.shards is None and any(n.startswith("the files were read as one table (step 0 is in") for n in got.notes)
    assert_frame_equal(got.steps, whole(path, settings).steps, check_exact=True)


def test_a_shard_folded_in_pieces_of_whole_steps_is_the_whole_read(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from rlvitals.rollout import shards
    from rlvitals.synthetic.demo import run_demo

    folder = tmp_path / "parts"
    folder.mkdir()
    demo = read_rollouts(run_demo(tmp_path / "demo", steps=9).rollouts).table  # a real learner's rollouts
    for part, steps in enumerate(((1, 2, 3, 4), (5, 6, 7, 8, 9))):
        demo.filter(pl.col("step").is_in(steps)).drop("group", "sample").write_parquet(folder / f"p{part}.parquet")
    settings = RolloutSettings(ks=(1, 2, 4), columns=ColumnMap(prompt="prompt", response="response", score="score",
                                                               correct="correct", answer="answer", target="target"))
    ref = whole(folder, settings)
    monkeypatch.setattr(shards, "PIECE_ROWS", 10)  # every step a piece of its own
    assert len(shards._pieces(read_rollouts(folder, columns=settings.columns).table, 10)) == 9
    assert_same(analyze(folder, settings), ref)
