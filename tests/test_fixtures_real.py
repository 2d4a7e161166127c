"""Acceptance: every real public log is read with the right format, framework, algorithm and steps,
and every key it logged maps to the catalog (nothing silently dropped)."""

from __future__ import annotations

from pathlib import Path

import pytest

import rlvitals

# file → (format, framework, algorithm, family, steps, first, last)
EXPECTED = {
    # the deepseek logs end with a validation-only line at step 1120 (veRL validated after the loop)
    "verl__verl_training_log__grpo_run_deepseek7b_llm.log": ("verl-console", "verl", "grpo", "rl", 1119, 1, 1119),
    "verl__verl_training_log__ppo_run_deepseek7b_llm.log": ("verl-console", "verl", "ppo", "rl", 1119, 1, 1119),
    "verl__verl-data__Qwen2.5-0.5B-bsz256_2-prompt1024-resp512-0.567.log":
        ("verl-console", "verl", "ppo", "rl", 435, 0, 434),
    "verl__verl-data__gemma-2-2b-it-ppo-bsz512_4-prompt1024-resp-512-0.640.log":
        ("verl-console", "verl", "ppo", "rl", 106, 0, 105),
    # SFT trains on steps 0..57; step 58 holds only val/loss
    "verl__verl-data__gemma-2-2b-it-sft-0.411.log": ("verl-console", "verl", "sft", "sft", 58, 0, 57),
    "verl__verldata__qwen2-7b_math_megatron.log": ("verl-console", "verl", "gpg", "rl", 105, 1, 105),
    "trl__UnslothGRPO__checkpoint-250_trainer_state.json": ("trl-state", "trl", "grpo", "rl", 250, 1, 250),
    "trl__ppo-vs-grpo-math-rlvr__grpo_matched_0p5b_seed123.trainer_log_history.json":
        ("trl-state", "trl", "grpo", "rl", 1, 1, 1),
    "trl-unsloth__notebooks__Qwen2.5_3B-GRPO.training_table.csv": ("csv", "trl", "grpo", "rl", 250, 1, 250),
    "trl-unsloth__notebooks__Llama3.1_8B-GRPO.training_table.csv": ("csv", "trl", "grpo", "rl", 250, 1, 250),
    "trl-unsloth__notebooks__Advanced_Llama3_2_3B_GRPO_LoRA.training_table.csv":
        ("csv", "trl", "grpo", "rl", 500, 1, 500),
    "trl-unsloth__notebooks__gpt_oss_20B_Reinforcement_Learning_2048_Game_BF16.training_table.csv":
        ("csv", "trl", "grpo", "rl", 432, 1, 432),
    "trl-unsloth__notebooks__Qwen2_5_7B_VL_GRPO.training_table.csv": ("csv", "trl", "grpo", "rl", 142, 1, 142),
    # ORPO's rewards are β·logps (no reference): rewards / chosen = 0.1 × logps / chosen on every row
    "trl-unsloth__notebooks__Llama3_8B-ORPO.training_table.csv":
        ("csv", "trl", "orpo", "preference", 30, 1, 30),
}


def test_every_real_fixture_is_listed(real: Path) -> None:
    logs = {p.name for p in real.iterdir() if p.suffix not in (".txt", ".md")}
    assert logs == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_fixture(real: Path, name: str) -> None:
    fmt, framework, algorithm, family, steps, first, last = EXPECTED[name]
    runs = rlvitals.load(real / name)
    assert len(runs) == 1
    run = runs[0]
    assert (run.format, run.framework, run.algorithm, run.family) == (fmt, framework, algorithm, family)
    assert (len(run.train_steps), int(run.train_steps[0]), int(run.train_steps[-1])) == (steps, first, last)
    assert run.unmapped == [], f"keys the catalog does not know: {run.unmapped}"
    assert run.skipped.count == 0, run.skipped.reasons


def test_dec_2024_verl_scaled_learning_rate(real: Path) -> None:
    run = rlvitals.load(real / "verl__verl-data__Qwen2.5-0.5B-bsz256_2-prompt1024-resp512-0.567.log")[0]
    steps, lr = run.series("actor/lr")
    assert lr[0] == pytest.approx(0.010 * 1e-4)
    assert run.raw["actor/lr(1e-4)"][0] == pytest.approx(0.010)
    assert "actor/entropy" in run.metrics and "actor/reward_kl_penalty" in run.metrics
    assert run.framework_era == ">=2024-12,<2025-01"


def test_validation_per_data_source(real: Path) -> None:
    grpo = rlvitals.load(real / "verl__verl_training_log__grpo_run_deepseek7b_llm.log")[0]
    val = grpo.validation["openai/gsm8k"]
    assert val["reward/mean@1"][-1] == pytest.approx(0.697)
    assert val["step"].to_list()[:3] == [10, 20, 30]
    megatron = rlvitals.load(real / "verl__verldata__qwen2-7b_math_megatron.log")[0]
    val = megatron.validation["openai/gsm8k"]
    assert val["step"][0] == 0 and val["reward/mean@1"][0] == pytest.approx(0.212)


def test_trl_old_keys_map_to_canonical(real: Path) -> None:
    run = rlvitals.load(real / "trl__UnslothGRPO__checkpoint-250_trainer_state.json")[0]
    for key in ("response_length/mean", "critic/score/mean", "actor/kl_loss", "actor/grad_norm", "actor/lr",
                "reward_fn/correctness_reward_func/mean"):
        assert key in run.metrics, key
    assert run.framework_era is not None and run.framework_era.startswith("<")


def test_trl_modern_keys(real: Path) -> None:
    run = rlvitals.load(real / "trl__ppo-vs-grpo-math-rlvr__grpo_matched_0p5b_seed123.trainer_log_history.json")[0]
    assert "group/zero_std/share" in run.metrics and "actor/entropy" in run.metrics
    assert run.summary["train_loss"] == pytest.approx(0.21626996994018555)


def test_notebook_preference_table(real: Path) -> None:
    run = rlvitals.load(real / "trl-unsloth__notebooks__Llama3_8B-ORPO.training_table.csv")[0]
    for key in ("rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracy", "loss/dpo"):
        assert key in run.metrics, key
