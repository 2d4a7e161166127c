"""Telling one run watched through two files from two runs: by content, within float32 precision."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvitals import load
from rlvitals.synthetic.simulate import Scenario, jsonl_lines
from rlvitals.watch.twins import Twins, same_run

SC = Scenario(steps=40, collapse_at=None, grad_spike_at=None)


def _jsonl(path: Path, sc: Scenario, steps: int) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in list(jsonl_lines(sc))[:steps]))
    return path


def test_same_run_is_undecided_until_enough_common_steps(tmp_path: Path) -> None:
    a = load(_jsonl(tmp_path / "a.jsonl", SC, 9))[0]
    b = load(_jsonl(tmp_path / "b.jsonl", SC, 40))[0]
    assert same_run(a, b) is None
    assert same_run(load(_jsonl(tmp_path / "a.jsonl", SC, 10))[0], b) is True


def test_another_seed_is_another_run(tmp_path: Path) -> None:
    a = load(_jsonl(tmp_path / "a.jsonl", SC, 40))[0]
    b = load(_jsonl(tmp_path / "b.jsonl", Scenario(steps=40, collapse_at=None, grad_spike_at=None, seed=8), 40))[0]
    assert same_run(a, b) is False
    twins = Twins()
    assert twins.primary(b, [a, b]) == b.path and twins.notes == []


def test_a_tensorboard_copy_in_float32_is_the_same_run(tmp_path: Path) -> None:
    tbx = pytest.importorskip("tensorboardX")
    a = load(_jsonl(tmp_path / "a.jsonl", SC, 40))[0]
    writer = tbx.SummaryWriter(str(tmp_path / "tb"))
    for key in ("actor/entropy", "actor/ppo_kl", "critic/score/mean", "actor/grad_norm"):
        for step, value in zip(a.steps.tolist(), a.raw[key].to_list(), strict=True):
            writer.add_scalar(key, value, step)
    writer.close()
    b = load(tmp_path / "tb")[0]
    twins = Twins()
    assert twins.primary(b, [a, b]) == a.path
    assert twins.notes == [f"{b.path} holds the same run as {a.path} (their first 10 common steps agree); its "
                           f"findings are alerted once, as {a.path}'s"]
    assert twins.primary(b, []) == a.path  # remembered
