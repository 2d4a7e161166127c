"""Inputs the CLI's language tests share: a small metrics log and a veRL dump of three steps."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvitals.rollout import write_verl_dump
from rlvitals.synthetic.simulate import write_example


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return write_example(tmp_path / "example")["jsonl"]


@pytest.fixture
def rollouts(tmp_path: Path) -> Path:
    folder = tmp_path / "rolls"
    for step in (1, 2, 3):
        write_verl_dump([{"prompt": "1 + 1?", "response": "2", "score": float(i % 2), "target": "2"}
                         for i in range(4)], folder, step)
    return folder
