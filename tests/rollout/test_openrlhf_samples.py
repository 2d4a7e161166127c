"""OpenRLHF's PPO sample table (``train/generated_samples``) read as rollouts, from a W&B run its own
``WandbLogger`` wrote (``tests/ingest/data/openrlhf/ppo-samples-0.11.2``, made by
``scripts/captures/openrlhf_trainers.py samples``; its ``source.toml`` says what the rows are)."""

from __future__ import annotations

import io
from pathlib import Path

import orjson

from rlvitals.cli import main
from rlvitals.rollout import read_rollouts
from rlvitals.words import in_lang

DATA = Path(__file__).parents[1] / "ingest" / "data" / "openrlhf" / "ppo-samples-0.11.2" / "wandb-run"


def _run() -> Path:
    (run,) = DATA.glob("offline-run-*")
    return run


def _tables() -> list[dict[str, list[list[object]]]]:
    files = (_run() / "files" / "media" / "table" / "train").glob("generated_samples_*.table.json")
    return sorted((orjson.loads(f.read_bytes()) for f in files), key=lambda t: len(t["data"]))


def test_the_logger_repeats_every_earlier_row_in_each_table() -> None:
    tables = _tables()
    assert [len(t["data"]) for t in tables] == [1, 2, 3, 4, 5, 6]
    assert all(t["columns"] == ["global_step", "text", "reward"] for t in tables)
    assert all(t["data"] == tables[-1]["data"][: len(t["data"])] for t in tables)


def test_each_step_sample_is_read_once_with_its_text_and_reward() -> None:
    rollouts = read_rollouts(_run())
    logged = _tables()[-1]["data"]
    got = rollouts.table.sort("step").select("step", "response", "score", "split").rows()
    assert got == [(step, text, reward, "train") for step, text, reward in logged]
    assert rollouts.format == "wandb-table"
    note = next(n for n in rollouts.notes if "OpenRLHF" in n)
    assert note == ("OpenRLHF's generated samples ('train/generated_samples'): one training sample per global step, "
                    "its prompt and response in one text (OpenRLHF logs the decoded sequence), each its own group")
    assert "OpenRLHF 的生成样本" in in_lang(note, "zh")


def test_the_command_line_reads_them() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", str(_run())], out=out, err=err) == 0, err.getvalue()
    assert "OpenRLHF's generated samples" in out.getvalue()
