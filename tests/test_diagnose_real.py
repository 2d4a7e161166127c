"""What a careful engineer reads from each real log, pinned: the verdict and every warn/fail finding
and note with its onset (± a few steps). The healthy veRL runs read ok: their isolated grad-norm spikes, early
format-learning entropy fall and 14-22 % MFU are notes (their corpus labels, benchmarks/corpus/runs/shared__*).
No `fail` on the healthy runs. The KL spikes of the Unsloth
GRPO runs (2.64 at step 111 of the Llama-3.2-3B run, 0.27 at 147 of the Llama-3.1-8B run) come back at
once: per token, those above the band's 0.3 warn and those below it are notes, and none fails (the
corpus labels them healthy); TRL's GRPO loss is β·KL, so its spikes are the KL's and the loss check
leaves them to kl_jump. An MFU of 14-22 % (the three 7B veRL runs) could be better but is ordinary
for FSDP RL: a note, which leaves the verdict to the other findings."""

from __future__ import annotations

from pathlib import Path

import pytest

import rlvitals
from rlvitals.diagnosis import diagnose

# file → (verdict, {(check, status): onset step}) for every note, warn and fail
EXPECTED: dict[str, tuple[str, dict[tuple[str, str], int]]] = {
    # six one-step KL spikes in 350 steps, nothing but TRL's loss (β·KL) jumping with them: isolated, a note
    "trl-unsloth__notebooks__Advanced_Llama3_2_3B_GRPO_LoRA.training_table.csv":
        ("ok", {("kl_jump", "note"): 111}),
    "trl-unsloth__notebooks__Llama3.1_8B-GRPO.training_table.csv":
        ("ok", {("kl_jump", "note"): 114, ("reward_std_collapse", "note"): 7}),
    "trl-unsloth__notebooks__Llama3_8B-ORPO.training_table.csv": ("warn", {("pref_margins", "warn"): 1}),
    "trl-unsloth__notebooks__Qwen2.5_3B-GRPO.training_table.csv":
        ("warn", {("kl_jump", "note"): 119, ("response_clip_high", "warn"): 1, ("reward_std_collapse", "warn"): 1}),
    "trl-unsloth__notebooks__Qwen2_5_7B_VL_GRPO.training_table.csv":
        ("ok", {("kl_jump", "note"): 75, ("reward_std_collapse", "note"): 3}),
    "trl-unsloth__notebooks__gpt_oss_20B_Reinforcement_Learning_2048_Game_BF16.training_table.csv":
        # kl_shape: the KL holds ~0.3 from step 80 to 260 (rolling level 0.23-0.34) and leaves it at 265-269
        # (0.61, 0.72): the runaway starts there, not at the 236 a hinge fitted to the whole run gave
        ("warn", {("kl_band", "warn"): 35, ("kl_jump", "warn"): 56, ("kl_shape", "warn"): 266,
                  ("reward_std_collapse", "warn"): 4}),
    "trl__UnslothGRPO__checkpoint-250_trainer_state.json":
        ("warn", {("grad_norm_spike", "note"): 84, ("kl_jump", "warn"): 206, ("reward_std_collapse", "note"): 1}),
    "trl__ppo-vs-grpo-math-rlvr__grpo_matched_0p5b_seed123.trainer_log_history.json": ("ok", {}),
    "verl__verl-data__Qwen2.5-0.5B-bsz256_2-prompt1024-resp512-0.567.log":
        ("ok", {("grad_norm_spike", "note"): 16, ("entropy_collapse", "note"): 17, ("entropy_ceiling", "note"): 227}),
    "verl__verl-data__gemma-2-2b-it-ppo-bsz512_4-prompt1024-resp-512-0.640.log": ("ok", {}),
    "verl__verl-data__gemma-2-2b-it-sft-0.411.log": ("ok", {}),
    "verl__verl_training_log__grpo_run_deepseek7b_llm.log":
        ("ok", {("grad_norm_spike", "note"): 431, ("entropy_collapse", "note"): 6, ("mfu_low", "note"): 1}),
    "verl__verl_training_log__ppo_run_deepseek7b_llm.log":
        ("ok", {("grad_norm_spike", "note"): 162, ("entropy_collapse", "note"): 6, ("mfu_low", "note"): 1}),
    "verl__verldata__qwen2-7b_math_megatron.log":
        ("ok", {("val_progress", "note"): 40, ("val_reward_divergence", "note"): 40, ("mfu_low", "note"): 1}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_log_reads_as_expected(real: Path, name: str) -> None:
    verdict, expected = EXPECTED[name]
    d = diagnose(rlvitals.load(real / name)[0])
    found = {(f.check, f.status): f.onset_step for f in d.findings if f.status in ("note", "warn", "fail")}
    assert d.verdict == verdict
    assert set(found) == set(expected), sorted(found)
    for key, onset in expected.items():
        assert found[key] is not None and abs(found[key] - onset) <= 3, (key, found[key])


def test_no_check_errors_on_real_logs(real: Path) -> None:
    for name in EXPECTED:
        d = diagnose(rlvitals.load(real / name)[0])
        errors = [f.message["en"] for f in d.findings if "the check failed on this run" in f.message["en"]]
        assert errors == [], (name, errors)
