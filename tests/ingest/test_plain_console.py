"""Console logs with a line format of their own (DeepSpeed-Chat, MiniMind, PostTraining-LLM-Small): the real
corpus logs, and constructed lines for what they do not show."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from corpus import corpus_input, corpus_labels

from rlvitals import load
from rlvitals.errors import UnknownFormatError
from rlvitals.ingest import SkipLog, SourceMeta, find_reader
from rlvitals.ingest.formats.plain_console import READERS

RUNS = ["other__deepspeed-chat__opt1.3b-ppo-step3", "other__minimind-from-scratch__grpo-v1-model-reward-30m",
        "other__minimind-from-scratch__grpo-v2-rule-reward-30m",
        "other__posttraining-llm-small__gemma2-2b-lora-grpo-collapse"]


def _reader(fmt: str) -> object:
    return next(r for r in READERS if r.format == fmt)


@pytest.mark.parametrize("run_id", RUNS)
def test_real_logs_read_as_their_labels_count(run_id: str) -> None:
    path = corpus_input(run_id)
    labels = corpus_labels(run_id)
    assert find_reader(path).format == labels["format"]
    run = load(path)[0]
    assert (run.format, run.framework, run.algorithm) == (labels["format"], "unknown", labels["algorithm"])
    assert (len(run.train_steps), run.last_step) == (labels["records"], labels["last_step"])
    assert run.skipped.count == 0


def test_deepspeed_chat_lines_after_the_step_line_belong_to_it() -> None:
    run = load(corpus_input("other__deepspeed-chat__opt1.3b-ppo-step3"))[0]
    row = run.raw.filter(pl.col("step") == 0)
    assert row["act_loss"].item() == 0.2099609375 and row["average reward score"].item() == -0.67919921875
    assert row["E2E latency"].item() > 0 and row["Generate time"].item() > 0  # the '|E2E latency=3.87s |...' line
    steps, score = run.series("critic/score/mean")
    assert len(steps) == 477 and score[0] == -0.67919921875


def test_minimind_values_map_to_the_catalog() -> None:
    run = load(corpus_input("other__minimind-from-scratch__grpo-v1-model-reward-30m"))[0]
    assert {"critic/score/mean", "actor/kl_loss", "actor/pg_loss", "response_length/mean", "actor/lr"} <= set(
        run.metrics)
    steps, reward = run.series("critic/score/mean")
    assert (int(steps[0]), reward[0]) == (1, -2.3041)


def test_posttraining_steps_by_order_with_the_sampled_groups_and_evaluations() -> None:
    path = corpus_input("other__posttraining-llm-small__gemma2-2b-lora-grpo-collapse")
    run = load(path)[0]
    steps, reward = run.series("critic/score/mean")
    assert int(steps[0]) == 1 and reward[0] == pytest.approx(1.35) and len(steps) == 45  # printed on 45 steps
    evals = run.raw.select("step", "eval/acc").drop_nulls()
    assert evals.row(0) == (25, 0.9) and evals["step"].to_list()[-1] == 450


def test_minimind_steps_count_across_epochs(tmp_path: Path) -> None:
    # constructed: two epochs of 3 steps each restart the in-epoch counter
    path = tmp_path / "ppo.log"
    path.write_text("".join(f"Epoch:[{e}/2]({n}/3), Reward: 0.{e}{n}, Actor Loss: 0.1, Critic Loss: 0.2\n"
                            for e in (1, 2) for n in (1, 2, 3)))
    run = load(path)[0]
    assert (run.format, run.algorithm, list(run.train_steps)) == ("minimind-console", "ppo", [1, 2, 3, 4, 5, 6])


def test_a_value_that_is_not_a_number_is_skipped_with_its_line(tmp_path: Path) -> None:
    # constructed: a tensor printed where the trainer usually prints its float
    path = tmp_path / "step3.log"
    path.write_text("epoch: 0|step: 0|ppo_ep: 1|act_loss: tensor(0.2, device='cuda:0')|cri_loss: 0.1|"
                    "unsuper_loss: 0.0\naverage reward score: 0.5\n")
    meta, skips = SourceMeta(format="deepspeed-chat-console"), SkipLog()
    [record] = list(_reader("deepspeed-chat-console").read(path, meta, skips))  # type: ignore[attr-defined]
    assert record.values == {"epoch": 0.0, "ppo_ep": 1.0, "cri_loss": 0.1, "unsuper_loss": 0.0,
                             "average reward score": 0.5}
    assert skips.reasons == [f"{path}:1: \"act_loss: tensor(0.2, device='cuda:0')\" is not a key and a number; "
                             "the value was skipped"]


def test_a_crash_at_the_end_is_kept(tmp_path: Path) -> None:
    # constructed: the hand-written trainer died in step 3
    path = tmp_path / "grpo.log"
    path.write_text("grpo_loss is 0.1 and kl is 0.01\ngrpo_loss is 0.2 and kl is 0.02\n"
                    "Traceback (most recent call last):\n  File \"/w/run_train.py\", line 9, in train\n"
                    "torch.OutOfMemoryError: MPS backend out of memory\n")
    run = load(path)[0]
    assert run.crash is not None and (run.crash.kind, run.crash.last_step) == ("oom", 2)


def test_sniffing_refuses_prose_that_mentions_the_words(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("we print grpo_loss is small and the kl is fine\n")
    with pytest.raises(UnknownFormatError, match=re.escape(f"{path}: this file is not a training log")):
        load(path)
