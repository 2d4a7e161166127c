"""TRL console output (HF ProgressCallback prints ``str(logs)`` through tqdm). Built from the
documented format (research/framework_metrics.md §4.1) and the real GRPO line quoted there."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import pytest

from rlvitals import load
from rlvitals.cli import main
from rlvitals.ingest import SkipLog, SourceMeta, find_reader
from rlvitals.ingest.trl_console import read

TRAIN1 = (
    "{'loss': -0.0982, 'grad_norm': 0.12353515625, 'learning_rate': 1e-05, 'num_tokens': 10222.0, "
    "'completions/mean_length': 506.75, 'rewards/code_reward_func/mean': 0.5, "
    "'rewards/code_reward_func/std': 0.3257, 'reward': 0.5, 'reward_std': 0.3257, "
    "'frac_reward_zero_std': 0.0, 'entropy': 0.4012, 'clip_ratio/low_mean': 0.0, "
    "'clip_ratio/region_mean': 0.0, 'step_time': 238.3, 'epoch': 0.03}"
)
TRAIN2 = "{'loss': 0.0123, 'grad_norm': nan, 'learning_rate': 9e-06, 'kl': None, 'reward': 0.55, 'epoch': 0.07}"
TRAIN4 = "{'loss': 0.02, 'grad_norm': 0.2, 'learning_rate': 7e-06, 'reward': 0.6, 'epoch': 0.13}"
EVAL = ("{'eval_loss': 0.5, 'eval_reward': 0.61, 'eval_runtime': 3.2, 'eval_samples_per_second': 10.0, "
        "'eval_steps_per_second': 1.0, 'epoch': 0.13}")
TRAIN6 = "{'loss': 0.01, 'grad_norm': 0.1, 'learning_rate': 5e-06, 'reward': 0.7, 'epoch': 0.2}"
SUMMARY = ("{'train_runtime': 62.1, 'train_samples_per_second': 0.8, 'train_steps_per_second': 0.1, "
           "'train_loss': 0.02, 'epoch': 0.2}")


def bar(n: int, total: int = 6) -> str:
    return f" {100 * n // total:2d}%|██        | {n}/{total} [00:{n:02d}<00:10,  1.00s/it]"


# a terminal capture: tqdm redraws with '\r', tqdm.write clears the bar and prints the dict
WITH_BARS = [
    "{'bos_token_id': 1, 'eos_token_id': 2}",  # a model config printed at start: not a log
    "\r" + bar(0) + "\r" + bar(1) + "\r" + " " * 50 + "\r" + TRAIN1,
    "\r" + bar(1) + "\rProcessed prompts: 100%|██████████| 8/8 [00:05<00:00,  1.6it/s]",  # vLLM's bar
    "\r" + bar(2) + "\r" + " " * 50 + "\r" + TRAIN2,
    "\r" + bar(2) + "\r" + bar(3) + "\r" + bar(4) + "\r" + " " * 50 + "\r" + TRAIN4,
    "\r" + bar(4) + "\r  0%|          | 0/3 [00:00<?, ?it/s]\r 67%|██████▋   | 2/3 [00:01<00:00]",
    "\r" + " " * 50 + "\r" + EVAL,
    "\r" + bar(5) + "\r{'loss': 0.1, 'grad_norm': tensor(nan, 'epoch': 0.17}",
    "\r" + bar(6) + "\r" + " " * 50 + "\r" + TRAIN6,
    "\r" + bar(6) + "\r" + " " * 50 + "\r" + SUMMARY,
    "\r100%|██████████| 6/6 [01:02<00:00, 10.4s/it]",
]


@pytest.fixture
def with_bars(tmp_path: Path) -> Path:
    path = tmp_path / "train.log"
    path.write_bytes("\n".join(WITH_BARS).encode() + b"\n\xff\xfe stray bytes\n")
    return path


def test_steps_come_from_the_training_bar(with_bars: Path) -> None:
    meta, skips = SourceMeta(format="trl-console"), SkipLog()
    records = list(read(with_bars, meta, skips))
    assert [(r.step, r.kind, r.where) for r in records] == [
        (1, "metrics", f"{with_bars}:2"), (2, "metrics", f"{with_bars}:4"), (4, "metrics", f"{with_bars}:5"),
        (4, "metrics", f"{with_bars}:7"), (6, "metrics", f"{with_bars}:9"), (6, "summary", f"{with_bars}:10"),
    ]
    assert len(records[0].values) == 15 and records[0].values["completions/mean_length"] == 506.75
    assert math.isnan(float(records[1].values["grad_norm"])) and math.isnan(float(records[1].values["kl"]))
    assert records[3].values == {"eval_loss": 0.5, "eval_reward": 0.61, "eval_runtime": 3.2,
                                 "eval_samples_per_second": 10.0, "eval_steps_per_second": 1.0}
    assert records[5].values["train_loss"] == 0.02
    assert meta.notes == [] and meta.framework == "trl"
    assert skips.count == 1
    assert re.match(rf"^{re.escape(str(with_bars))}:8: the logged dict is not a Python dict repr "
                    r"\(at character \d+: .*\); the line was skipped$", skips.reasons[0])


def test_load_with_bars(with_bars: Path) -> None:
    assert find_reader(with_bars).format == "trl-console"
    run = load(with_bars)[0]
    assert (run.format, run.framework) == ("trl-console", "trl")
    assert list(run.steps) == [1, 2, 4, 6] and list(run.train_steps) == [1, 2, 4, 6]
    assert run.raw.filter(run.raw["step"] == 4)["eval_reward"][0] == 0.61
    assert run.summary["train_runtime"] == 62.1
    assert not any("logged twice" in n for n in run.notes)  # eval 'epoch' does not collide
    assert set(run.raw.columns) - {"step"} == set(run.unmapped) | set(run.key_map)


PIPED = [  # disable_tqdm=True or a non-terminal: only the dicts
    "***** Running training *****",
    TRAIN1,
    TRAIN2,
    EVAL,
    TRAIN4,
    SUMMARY,
]


def test_without_bars_steps_are_numbered_and_noted(tmp_path: Path) -> None:
    path = tmp_path / "piped.log"
    path.write_text("\n".join(PIPED) + "\n")
    meta = SourceMeta(format="trl-console")
    records = list(read(path, meta, SkipLog()))
    assert [(r.step, r.kind) for r in records] == [(1, "metrics"), (2, "metrics"), (2, "metrics"),
                                                   (3, "metrics"), (3, "summary")]
    assert len(meta.notes) == 1
    assert re.search(r"3 of 3 training dicts .* inferred by order .* trainer_state\.json", meta.notes[0])
    out = io.StringIO()
    assert main(["inspect", "--json", str(path)], out=out, err=io.StringIO()) == 0
    got = json.loads(out.getvalue())
    assert (got["framework"], got["format"], got["steps"], got["last_step"]) == ("trl", "trl-console", 3, 3)
    assert got["summary"]["train_loss"] == 0.02


def test_first_dict_after_a_long_startup_is_found(tmp_path: Path) -> None:
    path = tmp_path / "late.log"
    noise = "".join(f"Map: {i}%|██| {i}/100 [00:01<00:00, 50.0 examples/s]\n" for i in range(1500))
    path.write_text(noise + TRAIN4 + "\n")
    assert len(noise) > 64 << 10
    assert find_reader(path).format == "trl-console"
    assert [r.step for r in read(path, SourceMeta(format="x"), SkipLog())] == [1]


def test_a_bar_not_redrawn_between_two_dicts_is_not_reused(tmp_path: Path) -> None:
    # fast steps: tqdm's mininterval skipped drawing 2/6, and the evaluation bar (0/5 .. 5/5)
    # was the last bar before the next training dict
    lines = ["\r" + bar(1) + "\r" + TRAIN1, "\r" + bar(1), TRAIN2,
             "\r  0%|          | 0/5 [00:00<?, ?it/s]\r100%|██████████| 5/5 [00:01<00:00]", EVAL, TRAIN4]
    path = tmp_path / "fast.log"
    path.write_text("\n".join(lines) + "\n")
    meta = SourceMeta(format="trl-console")
    assert [r.step for r in read(path, meta, SkipLog())] == [1, 2, 2, 3]
    assert len(meta.notes) == 1 and meta.notes[0].startswith("2 of 3 training dicts had no progress bar")
