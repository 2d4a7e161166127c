"""A column is named by the file or the user, never read as a pattern: polars takes a name that starts with
``^`` and ends with ``$`` for a regular expression in ``pl.col``, so a reward function named ``^r$`` (TRL
names each reward column after the user's function) would match no column, or another one, and its
reward would silently drop out of the score."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rlvitals.rollout.readers import ColumnMap, read_rollouts

NAN = float("nan")


def _completions(path: Path, **rewards: list[float]) -> Path:
    """One step of TRL completions as TRL's pandas ``to_parquet`` writes them (pyarrow), 2 prompts x 2."""
    pq.write_table(pa.table({"step": ["1"] * 4, "prompt": ["q1", "q1", "q2", "q2"],
                             "completion": ["a", "b", "c", "d"], **rewards,
                             "advantage": [0.5, -0.5, 0.5, -0.5]}), path)
    return path


@pytest.fixture
def trl(tmp_path: Path) -> Path:
    # the regex ^r$ would match a column 'r'; there is one, so a pattern reading picks the wrong column
    return _completions(tmp_path / "completions_00001.parquet",
                        **{"^r$": [1.0, 0.0, 0.5, NAN], "acc": [1.0, 0.0, 1.0, 0.0], "r": [9.0, 9.0, 9.0, 9.0]})


def test_reward_weights_weigh_a_column_named_like_a_pattern(trl: Path) -> None:
    rs = read_rollouts(trl, reward_weights={"^r$": 2.0, "acc": 0.5, "r": 0.0})
    # TRL's nansum: the NaN reward of the last rollout is left out, its 'acc' 0.0 counts
    assert rs.table["score"].to_list() == [2.5, 0.0, 1.5, 0.0]
    assert read_rollouts(trl, reward_weights=[2.0, 0.5, 0.0]).table["score"].to_list() == [2.5, 0.0, 1.5, 0.0]
    assert rs.table["^r$"].to_list()[:3] == [1.0, 0.0, 0.5]  # the reward column is kept under its own name
    assert any("'^r$': 2.0" in n for n in rs.notes)


def test_unit_weights_sum_a_column_named_like_a_pattern(trl: Path) -> None:
    assert read_rollouts(trl).table["score"].to_list() == [11.0, 9.0, 10.5, 9.0]


def test_a_column_map_naming_a_pattern_like_column(trl: Path) -> None:
    rs = read_rollouts(trl, columns=ColumnMap(correct="^r$"), reward_weights={"^r$": 2.0, "acc": 0.5, "r": 0.0})
    assert rs.table["score"].to_list() == [2.5, 0.0, 1.5, 0.0]
    assert rs.table["correct"].to_list() == [True, False, None, None]  # 0.5 is not 0/1, NaN unknown
    scored = read_rollouts(trl, columns=ColumnMap(score="^r$"))
    assert scored.table["score"].to_list()[:3] == [1.0, 0.0, 0.5]


def test_the_accuracy_column_and_the_prompt_column_named_like_patterns(tmp_path: Path) -> None:
    path = tmp_path / "completions_00002.parquet"
    pq.write_table(pa.table({"step": ["2"] * 4, "^q$": ["x", "x", "y", "y"], "q": ["z"] * 4,
                             "completion": ["a", "b", "c", "d"], "^acc$": [1.0, 0.0, 0.0, 1.0],
                             "fmt": [0.5, 0.5, 0.0, 0.5], "acc": [0.0] * 4}), path)
    # 'acc' and '^acc$' are both accuracy-type: correctness unknown; weigh them and choose by --correct
    rs = read_rollouts(path, columns=ColumnMap(prompt="^q$", correct="^acc$"),
                       reward_weights={"^acc$": 1.0, "fmt": 1.0, "acc": 5.0})
    assert rs.table["score"].to_list() == [1.5, 0.5, 0.0, 1.5]
    assert rs.table["correct"].to_list() == [True, False, False, True]
    assert rs.table["prompt"].to_list() == ["x", "x", "y", "y"]
    assert rs.table["group"].to_list() == ["0", "0", "1", "1"]  # grouped by '^q$', not by 'q' (all one prompt)
    alone = read_rollouts(_completions(tmp_path / "completions_00003.parquet",
                                       **{"^acc$": [1.0, 0.0, 1.0, 0.0], "fmt": [0.5, 0.5, 0.0, 0.0]}))
    assert alone.table["correct"].to_list() == [True, False, True, False]  # the one accuracy-type column
    assert any("'^acc$'" in n and "accuracy-type" in n for n in alone.notes)


def test_a_generic_table_groups_by_a_prompt_column_named_like_a_pattern(tmp_path: Path) -> None:
    path = tmp_path / "samples.parquet"
    pq.write_table(pa.table({"^p$": ["x", "x", "y"], "p": ["z"] * 3, "response": ["a", "b", "c"],
                             "^s$": [1.0, 0.0, 1.0]}), path)
    rs = read_rollouts(path, columns=ColumnMap(prompt="^p$", score="^s$"))
    assert rs.table["group"].to_list() == ["0", "0", "1"]
    assert rs.table["score"].to_list() == [1.0, 0.0, 1.0]
