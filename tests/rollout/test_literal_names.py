"""Column names are names, never patterns: polars reads ``pl.col("^x$")`` as a regular expression, so a
rollout file with a key ``^x$`` (or ``^.*$``) and a column map naming it must still read that very column —
not a column ``x`` the pattern matches, not every column ``^.*$`` matches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rlvitals.rollout.readers import ColumnMap, read_rollouts, rollouts_from_frame, rollouts_from_records

#: the score the map names (``^x$``), a plain ``x`` the pattern ``^x$`` would match, and ``^.*$``, which
#: as a pattern matches every column
ROWS: list[dict[str, Any]] = [
    {"prompt": "2+3?", "response": "5", "^x$": 1.0, "x": -0.5, "^.*$": "all-0", "id": 10},
    {"prompt": "2+3?", "response": "6", "^x$": 0.0, "x": 0.25, "^.*$": "all-1", "id": 11},
    {"prompt": "7*6?", "response": "42", "^x$": 1.0, "x": 0.5, "^.*$": "all-2", "id": 12},
    {"prompt": "7*6?", "response": "41", "^x$": 0.5, "x": 0.75, "^.*$": "all-3", "id": 13},
]
TABLE = ["step", "group", "sample", "prompt", "response", "score", "correct", "x", "^.*$", "id"]


def _column(name: str) -> list[Any]:
    return [r[name] for r in ROWS]


def _write_jsonl(path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


def _write_parquet(path: Path) -> Path:
    pq.write_table(pa.table({k: _column(k) for k in ROWS[0]}), path)
    return path


def _assert_read_literally(table: Any) -> None:
    assert table.columns == TABLE
    assert table["score"].to_list() == _column("^x$")
    assert table["x"].to_list() == _column("x")
    assert table["^.*$"].to_list() == _column("^.*$")
    assert table["id"].to_list() == _column("id")
    assert table["prompt"].to_list() == _column("prompt") and table["response"].to_list() == _column("response")
    assert table["group"].to_list() == ["0", "0", "1", "1"] and table["correct"].to_list() == [True, False, True, False]


@pytest.mark.parametrize("write", [_write_jsonl, _write_parquet], ids=["jsonl", "parquet"])
def test_a_file_whose_column_names_look_like_patterns_is_read_by_name(tmp_path: Path, write: Any) -> None:
    path = write(tmp_path / ("rollouts.jsonl" if write is _write_jsonl else "rollouts.parquet"))
    rs = read_rollouts(path, columns=ColumnMap(score="^x$"))
    _assert_read_literally(rs.table)
    assert rs.skips.count == 0


def test_records_and_columns_with_pattern_like_names_are_read_by_name() -> None:
    _assert_read_literally(rollouts_from_records(ROWS, columns=ColumnMap(score="^x$")).table)
    columns = {k: _column(k) for k in ROWS[0]}
    _assert_read_literally(rollouts_from_frame(columns, columns=ColumnMap(score="^x$")).table)


def test_a_pattern_like_table_column_name_is_read_as_that_column(tmp_path: Path) -> None:
    """The map may name a column spelled like a pattern for any field, the prompt too: groups follow it."""
    rows = [{"^p$": q, "p": "same", "response": a, "score": s} for q, a, s in
            [("q1", "a", 1.0), ("q2", "b", 0.0), ("q1", "c", 0.0), ("q2", "d", 1.0)]]
    t = rollouts_from_records(rows, columns=ColumnMap(prompt="^p$")).table
    assert t["prompt"].to_list() == ["q1", "q2", "q1", "q2"] and t["group"].to_list() == ["0", "1", "0", "1"]
    assert t["p"].to_list() == ["same"] * 4 and t["response"].to_list() == ["a", "b", "c", "d"]


def _verl_rows() -> list[dict[str, Any]]:
    return [{"input": q, "output": a, "score": s, "step": 3, "^.*$": extra}
            for q, a, s, extra in [("q1", "a", 1.0, "e0"), ("q1", "b", 0.0, "e1"), ("q2", "c", 0.0, "e2"),
                                   ("q2", "d", 1.0, "e3")]]


def test_a_verl_dump_with_a_pattern_like_key_keeps_it_as_a_column(tmp_path: Path) -> None:
    dump = tmp_path / "3.jsonl"
    dump.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in _verl_rows()), encoding="utf-8")
    rs = read_rollouts(dump)
    t = rs.table
    assert rs.format == "verl-dump" and rs.skips.count == 0
    assert t.columns == ["step", "group", "sample", "prompt", "response", "score", "correct", "^.*$"]
    assert t["^.*$"].to_list() == ["e0", "e1", "e2", "e3"] and t["score"].to_list() == [1.0, 0.0, 0.0, 1.0]
    assert t["prompt"].to_list() == ["q1", "q1", "q2", "q2"] and t["group"].to_list() == ["0", "0", "1", "1"]


def test_a_verl_dump_whose_prompt_override_looks_like_a_pattern(tmp_path: Path) -> None:
    """``--prompt '^p$'`` over a dump with keys ``^p$`` and ``p``: the prompt and the groups are ``^p$``'s."""
    rows = [{**r, "^p$": f"P{i // 2}", "p": "one"} for i, r in enumerate(_verl_rows())]
    dump = tmp_path / "3.jsonl"
    dump.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    t = read_rollouts(dump, columns=ColumnMap(prompt="^p$")).table
    assert t["prompt"].to_list() == ["P0", "P0", "P1", "P1"] and t["group"].to_list() == ["0", "0", "1", "1"]
    assert t["p"].to_list() == ["one"] * 4 and t["input"].to_list() == ["q1", "q1", "q2", "q2"]
