"""Rollouts from Python objects of a training loop: NumPy / torch values in records, generators,
lazy frames, dicts of arrays, structured arrays, and bare score arrays."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import polars as pl
import pytest

import rlvitals
from rlvitals.errors import InputError
from rlvitals.rollout._python import plain
from rlvitals.rollout.passk import pass_at_k
from rlvitals.rollout.readers import ColumnMap, rollouts_from_frame, rollouts_from_python, rollouts_from_scores


def _batch(step: Any, scores: list[Any]) -> list[dict[str, Any]]:
    """Records as a loop builds them from a batch: one prompt, its samples' scores."""
    return [{"step": step, "prompt": "What is 2+3?", "response": f"#### {5 if i % 2 == 0 else 6}", "score": s}
            for i, s in enumerate(scores)]


def test_numpy_step_keeps_every_row() -> None:
    a = rlvitals.analyze_rollouts(_batch(np.int64(3), [1.0, 0.0]), ks=(1,))
    assert a.steps["step"].to_list() == [3] and a.steps["pass@1"].to_list() == [0.5]
    assert a.rollouts is not None and a.rollouts.skips.count == 0


def test_numpy_float32_scores_are_numbers() -> None:
    a = rlvitals.analyze_rollouts(_batch(1, [np.float32(1.0), np.float32(0.0)]), ks=(1,))
    assert a.steps["pass@1"].to_list() == [0.5]
    assert a.rollouts is not None and a.rollouts.table["score"].to_list() == [1.0, 0.0]


@pytest.mark.model
def test_torch_scalar_scores_and_tensor_token_lists() -> None:
    torch = pytest.importorskip("torch")
    recs = _batch(torch.tensor(2), [torch.tensor(1.0), torch.tensor(0.0, dtype=torch.bfloat16)])
    recs[0]["token_entropy"] = torch.tensor([0.5, 2.0], requires_grad=True)
    recs[1]["token_entropy"] = torch.tensor([0.25])
    a = rlvitals.analyze_rollouts(recs, ks=(1,))
    assert a.steps["step"].to_list() == [2] and a.steps["pass@1"].to_list() == [0.5]
    assert a.rollouts is not None and a.rollouts.table["token_entropy"].to_list() == [[0.5, 2.0], [0.25]]


def test_numpy_arrays_as_token_lists() -> None:
    recs = _batch(1, [1.0, 0.0])
    recs[0]["token_entropy"], recs[1]["token_entropy"] = np.array([0.1, 0.2], np.float32), np.array([0.3])
    recs[0]["actions"], recs[1]["actions"] = np.array(["left", "up"]), ("up",)
    t = rlvitals.analyze_rollouts(recs, ks=(1,)).rollouts.table  # type: ignore[union-attr]
    assert t["token_entropy"].to_list() == [[float(np.float32(0.1)), float(np.float32(0.2))], [0.3]]
    assert t["actions"].to_list() == [["left", "up"], ["up"]]


def test_plain_converts_nested_values() -> None:
    value = {"calls": [{"n": np.int32(2)}], "ok": np.bool_(True), "t": (np.float64(0.5), "x"), "s": np.str_("a")}
    got = plain(value)
    assert got == {"calls": [{"n": 2}], "ok": True, "t": [0.5, "x"], "s": "a"}
    assert type(got["ok"]) is bool and type(got["calls"][0]["n"]) is int and type(got["s"]) is str


def test_generators_and_tuples_of_records() -> None:
    gen = (r for r in _batch(4, [1.0, 0.0, 0.0]))
    assert rlvitals.analyze_rollouts(gen, ks=(1,)).steps["pass@1"].to_list() == [pytest.approx(1 / 3)]
    assert rlvitals.analyze_rollouts(tuple(_batch(4, [1.0, 1.0])), ks=(1,)).steps["pass@1"].to_list() == [1.0]


def test_lazy_frame_and_dict_of_arrays_and_structured_array() -> None:
    lazy = pl.LazyFrame({"step": [1, 1], "prompt": ["p", "p"], "score": [1.0, 0.0]})
    assert rlvitals.analyze_rollouts(lazy, ks=(2,)).steps["pass@2"].to_list() == [1.0]
    cols = {"step": np.array([5, 5, 5]), "prompt": ["a", "a", "b"], "score": [np.float32(1), 0.0, 1.0],
            "token_entropy": [np.array([0.5]), np.array([1.0, 2.0]), None]}
    t = rollouts_from_frame(cols).table
    assert t["group"].to_list() == ["0", "0", "1"] and t["score"].to_list() == [1.0, 0.0, 1.0]
    assert t["token_entropy"].to_list() == [[0.5], [1.0, 2.0], None]
    rec = np.array([(7, "q1", 1.0), (7, "q1", 0.0), (7, "q2", 0.0)],
                   dtype=[("it", "i8"), ("question", "U8"), ("reward", "f4")])
    a = rlvitals.analyze_rollouts(rec, columns=ColumnMap(step="it", prompt="question", score="reward"), ks=(1,))
    assert a.steps["step"].to_list() == [7] and a.steps["pass@1"].to_list() == [0.25]


def test_dict_of_columns_with_different_lengths() -> None:
    with pytest.raises(InputError, match=r"dict of columns: the columns have different lengths "
                       r"\{'prompt': 2, 'score': 3\}; give one value per rollout in every column"):
        rollouts_from_frame({"prompt": ["a", "b"], "score": np.array([1.0, 0.0, 1.0])})


def test_two_dimensional_score_array_is_groups_by_samples() -> None:
    scores = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, np.nan]])
    a = rlvitals.analyze_rollouts(scores, ks=(1, 2, 4))
    row = a.steps.row(0, named=True)
    assert (row["step"], row["groups"], row["rollouts"]) == (0, 3, 11)
    n, c = np.array([4, 4, 3]), np.array([2, 0, 3])
    assert row["pass@2"] == pytest.approx(float(pass_at_k(n, c, 2).mean()), abs=1e-12)
    assert row["pass@4"] == pytest.approx(float(pass_at_k(n[:2], c[:2], 4).mean()), abs=1e-12)  # group 2 has 3
    assert row["group/zero_std/all_wrong"] == pytest.approx(1 / 3)


@pytest.mark.model
def test_three_dimensional_boolean_tensor_is_steps_by_groups_by_samples() -> None:
    torch = pytest.importorskip("torch")
    correct = torch.tensor([[[True, False], [True, True]], [[False, False], [True, False]]])
    rs = rollouts_from_python(correct)
    assert rs.table.select("step", "group", "sample").rows()[:3] == [(0, "0", 0), (0, "0", 1), (0, "1", 0)]
    assert "score" not in rs.table.columns and rs.table["correct"].to_list()[:2] == [True, False]
    a = rlvitals.analyze_rollouts(correct, ks=(1,))
    assert a.steps["step"].to_list() == [0, 1] and a.steps["pass@1"].to_list() == [0.75, 0.25]


def test_score_arrays_of_the_wrong_shape_or_type() -> None:
    with pytest.raises(InputError, match=r"array of scores: shape \(8,\) is not \(groups, samples\) or \(steps, "
                       r"groups, samples\); reshape it \(e\.g\. rewards\.reshape\(-1, G\) for G samples"):
        rollouts_from_scores(np.zeros(8))
    with pytest.raises(InputError, match=r"array of scores: dtype <U1 is neither numbers \(scores\) nor booleans"):
        rollouts_from_scores(np.array([["a", "b"]]))
    with pytest.raises(InputError, match=r"a column map names the columns of records or frames; an array of "
                       r"scores has none"):
        rlvitals.analyze_rollouts(np.zeros((2, 2)), columns=ColumnMap(score="r"))


def test_other_objects_are_refused_with_what_is_taken() -> None:
    with pytest.raises(InputError, match=r"got int; expected a path, records \(dicts\), a polars or pandas "
                       r"DataFrame, a dict of columns, or a NumPy array of scores"):
        rollouts_from_python(3)
    with pytest.raises(InputError, match=r"got the bytes b'x.jsonl'; give a path as pathlib.Path"):
        rollouts_from_python(b"x.jsonl")


def test_group_size_is_checked_for_python_objects() -> None:
    a = rlvitals.analyze_rollouts(_batch(1, [1.0, 0.0, 1.0]), ks=(1,), group_size=4)
    assert any("do not have group_size=4" in n for n in a.notes)


@pytest.mark.process
def test_torch_is_not_imported_for_numpy_input() -> None:
    code = ("import sys, numpy as np, rlvitals\n"
            "a = rlvitals.analyze_rollouts([{'step': np.int64(1), 'prompt': 'p', 'score': np.float32(1)}], ks=(1,))\n"
            "rlvitals.analyze_rollouts(np.ones((2, 2)), ks=(1,))\n"
            "print('torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
