"""Rollout writers: files shaped as veRL and TRL write them, read back by the real readers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from rlvitals.errors import InputError
from rlvitals.rollout.readers import read_rollouts
from rlvitals.rollout.writers import group_advantages, write_trl_completions, write_verl_dump

SYSTEM = {"role": "system", "content": "Solve it."}
COMPARED = ["step", "group", "sample", "response", "score", "correct"]


def records(step: int, sizes: tuple[int, ...] = (4, 4, 4)) -> list[dict[str, Any]]:
    """Rollouts as the sampler gives them: groups of consecutive samples, some without an answer."""
    out = []
    for g, n in enumerate(sizes):
        question = f"Zoë has {g + 2} pens. She gets 3 more. How many pens?"
        for s in range(n):
            answer = None if s == 1 else str(g + 5 - (s % 2) * (step % 2))
            correct = answer == str(g + 5)
            out.append({
                "step": step, "prompt": question, "prompt_messages": [SYSTEM, {"role": "user", "content": question}],
                "prompt_text": f"system\nSolve it.\nuser\n{question}\nassistant\n",
                "response": f"{g + 2} + 3 = {answer}. The answer is {answer}." if answer else "I don't know… café",
                "score": 1.0 if correct else 0.0, "correct": correct, "answer": answer, "target": str(g + 5),
                "source": "arith/one_step" if g % 2 == 0 else "arith/two_step", "split": "train",
                "length": 12 + s, "truncated": answer is None,
            })
    return out


@pytest.fixture
def written(tmp_path: Path) -> tuple[Path, Path, list[dict[str, Any]]]:
    verl, trl = tmp_path / "rollout_data", tmp_path / "trl_out"
    everything = []
    for step in (1, 2):
        recs = records(step)
        write_verl_dump(recs, verl, step)
        write_trl_completions(recs, trl, step)
        everything += recs
    return verl, trl, everything


def test_verl_dump_lines_are_what_verl_writes(written: tuple[Path, Path, list[dict[str, Any]]]) -> None:
    verl, _, recs = written
    assert sorted(p.name for p in verl.iterdir()) == ["1.jsonl", "2.jsonl"]
    raw = (verl / "1.jsonl").read_text(encoding="utf-8")
    assert "café" in raw and "…" in raw  # ensure_ascii=False, as veRL dumps
    lines = [json.loads(line) for line in raw.splitlines()]
    assert len(lines) == 12 and raw.endswith("\n")
    assert list(lines[0]) == ["input", "output", "gts", "score", "step", "acc", "pred", "data_source"]
    first = lines[0]
    assert first["input"] == recs[0]["prompt_text"] and first["output"] == recs[0]["response"]
    assert (first["gts"], first["score"], first["step"], first["acc"], first["data_source"]) == \
        ("5", 1.0, 1, True, "arith/one_step")
    assert [type(first[k]) for k in ("input", "output", "gts", "score", "step", "acc")] == \
        [str, str, str, float, int, bool]
    assert lines[1]["pred"] is None


def test_trl_completions_have_trl_columns_and_types(written: tuple[Path, Path, list[dict[str, Any]]]) -> None:
    _, trl, recs = written
    files = sorted((trl / "completions").iterdir())
    assert [p.name for p in files] == ["completions_00001.parquet", "completions_00002.parquet"]
    df = pl.read_parquet(files[0])
    assert df.columns == ["step", "prompt", "completion", "accuracy_reward", "advantage"]
    assert df.schema["step"] == pl.Utf8 and df["step"].unique().to_list() == ["1"]
    assert df.schema["prompt"] == pl.List(pl.Struct({"role": pl.Utf8, "content": pl.Utf8}))
    assert df["prompt"][0].to_list() == recs[0]["prompt_messages"]
    assert df["completion"].to_list() == [r["response"] for r in recs[:12]]
    assert df["accuracy_reward"].to_list() == [r["score"] for r in recs[:12]]


def test_advantage_is_trl_group_normalised_reward(written: tuple[Path, Path, list[dict[str, Any]]]) -> None:
    _, trl, recs = written
    df = pl.read_parquet(trl / "completions" / "completions_00001.parquet")
    rewards = np.array([r["score"] for r in recs[:12]]).reshape(3, 4)
    mean, std = rewards.mean(axis=1, keepdims=True), rewards.std(axis=1, ddof=1, keepdims=True)
    expected = ((rewards - mean) / (std + 1e-4)).ravel()
    np.testing.assert_allclose(df["advantage"].to_numpy(), expected, rtol=1e-12, atol=1e-12)
    assert np.isclose(df["advantage"].to_numpy()[:4].sum(), 0.0)


def test_group_advantages_reference_and_odd_groups() -> None:
    rng = np.random.default_rng(0)
    r = rng.normal(size=12)
    keys = [i % 3 for i in range(12)]  # groups need not be consecutive
    got = np.array(group_advantages(r.tolist(), keys))
    for k in range(3):
        part = r[k::3]
        np.testing.assert_allclose(got[k::3], (part - part.mean()) / (part.std(ddof=1) + 1e-4), rtol=1e-12)
    assert group_advantages([1.0, 1.0, 1.0], ["a"] * 3) == [0.0, 0.0, 0.0]  # zero spread: no signal
    assert group_advantages([0.3], ["solo"]) == [0.0]
    with pytest.raises(InputError, match=r"group_advantages: 2 rewards but 1 group keys; give one key per reward"):
        group_advantages([1.0, 0.0], ["a"])


def test_both_formats_read_back_as_the_same_rollouts(written: tuple[Path, Path, list[dict[str, Any]]]) -> None:
    verl, trl, recs = written
    v, t = read_rollouts(verl, group_size=4), read_rollouts(trl, group_size=4)
    assert (v.format, t.format) == ("verl-dump", "trl-completions")
    assert v.skips.count == t.skips.count == 0
    assert v.notes == []
    said = ("prompts are chat message lists", "correctness from the accuracy-type reward column 'accuracy_reward'")
    assert all(n.startswith(said) for n in t.notes)
    assert v.table.select(COMPARED).equals(t.table.select(COMPARED))
    assert v.table.height == len(recs) == 24
    assert v.table["response"].to_list() == [r["response"] for r in recs]
    assert v.table["answer"].to_list() == [r["answer"] for r in recs]
    assert v.table["target"].to_list() == [r["target"] for r in recs]
    assert v.table["source"].to_list() == [r["source"] for r in recs]
    assert t.table["prompt"].to_list() == [r["prompt"] for r in recs]  # the last user message
    np.testing.assert_allclose(t.table["advantage"].to_numpy(),
                               pl.concat([pl.read_parquet(p) for p in sorted((trl / "completions").iterdir())])
                               ["advantage"].to_numpy())


def test_groups_of_one_and_missing_answers_round_trip(tmp_path: Path) -> None:
    recs = records(3, sizes=(1, 3, 1))
    write_verl_dump(recs, tmp_path / "v", 3)
    path = write_trl_completions(recs, tmp_path / "t", 3)
    assert pl.read_parquet(path)["advantage"].to_list()[0] == 0.0
    assert pl.read_parquet(path)["advantage"].to_list()[4] == 0.0
    v, t = read_rollouts(tmp_path / "v"), read_rollouts(tmp_path / "t")
    assert v.table["group"].to_list() == ["0", "1", "1", "1", "2"]
    assert v.table.select(COMPARED).equals(t.table.select(COMPARED))
    assert v.table["answer"].to_list() == [r["answer"] for r in recs]
    assert v.table["answer"].null_count() == 1 and any("group sizes vary" in n for n in v.notes)


def test_bare_records_fall_back_to_the_prompt(tmp_path: Path) -> None:
    recs = [{"prompt": "2+2?", "response": r, "score": s} for r, s in (("4", 1.0), ("5", 0.0))]
    line = json.loads(write_verl_dump(recs, tmp_path, 0).read_text(encoding="utf-8").splitlines()[0])
    assert line == {"input": "2+2?", "output": "4", "gts": None, "score": 1.0, "step": 0}
    df = pl.read_parquet(write_trl_completions(recs, tmp_path, 0))
    assert df["prompt"][0].to_list() == [{"role": "user", "content": "2+2?"}]
    rs = read_rollouts(tmp_path / "completions")
    assert rs.table["correct"].to_list() == [True, False]


def test_an_extra_key_is_written_only_when_every_record_has_it(tmp_path: Path) -> None:
    recs = records(1, sizes=(2,))
    del recs[1]["answer"]
    line = json.loads(write_verl_dump(recs, tmp_path, 1).read_text(encoding="utf-8").splitlines()[0])
    assert "pred" not in line and "acc" in line


@pytest.mark.parametrize(("recs", "step", "match"), [
    ([], 1, r"write_\w+: no records for step 1; a dump holds at least one rollout"),
    ([{"prompt": "q", "score": 1.0}], 1, r"record 0 has no \['response'\]; every rollout needs a response and a score"),
    ([{"response": "r", "score": 1.0, "step": 2}], 1, r"record 0 is from step 2, not step 1; write each step's"),
    ([{"response": "r", "score": 1.0}], -1, r"step=-1; expected a training step, a whole number >= 0"),
    ([{"response": "r", "score": 1.0}], True, r"step=True; expected a training step"),
])
def test_bad_records_are_refused(tmp_path: Path, recs: list[dict[str, Any]], step: int, match: str) -> None:
    for writer in (write_verl_dump, write_trl_completions):
        with pytest.raises(InputError, match=match):
            writer(recs, tmp_path, step)
    assert list(tmp_path.iterdir()) == []
