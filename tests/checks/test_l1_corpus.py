"""The L1 stability and KL rules on the real corpus runs that show them (benchmarks/corpus/runs/<id>/):
damage from the first steps, the KL band / ceiling / different-reference / sequence-sum readings, a
gradient of exactly 0 and its cause, fp16 loss-scaler skips, GRPO loss noise, pg-loss bursts, a critic
that caught up, clip fraction ~0 with one or several updates per batch, and the learning-rate restart.
Each window below is the corpus label's (labels.toml), written from the raw numbers."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import rlvitals
from rlvitals.diagnosis import Diagnosis, diagnose

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

RUNS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs"
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"


@cache
def run_of(run_id: str) -> Diagnosis:
    label = tomllib.loads((RUNS / run_id / "labels.toml").read_text(encoding="utf-8"))
    name = str(label["run"]["input"])
    path = REAL / name.removeprefix("fixture:") if name.startswith("fixture:") else RUNS / run_id / name
    return diagnose(rlvitals.load(path)[0])


def one(run_id: str, check: str, metric: str | None = None) -> Any:
    found = [f for f in run_of(run_id).findings if f.check == check and (metric is None or metric in f.metrics)]
    assert len(found) == 1, [(f.status, f.message["en"]) for f in found]
    return found[0]


def within(step: int | None, window: tuple[int, int]) -> bool:
    return step is not None and window[0] <= step <= window[1]


QWEN3_COLLAPSE = "verl__agent-opd__qwen3-4b-klreward-length-collapse"


def test_kl_in_the_reward_exploding_in_the_first_steps_fails_from_its_start() -> None:
    # actor/reward_kl_penalty 0.83, 0.85, 1.32, 2.0, 2.5, 4.4, 7.8, 13.0, 15.7, then ~17 nats/token
    band = one(QWEN3_COLLAPSE, "kl_band")
    assert band.status == "fail" and within(band.onset_step, (2, 9)) and "above 2 nats per token" in band.message["en"]
    jump = one(QWEN3_COLLAPSE, "kl_jump", "actor/reward_kl_penalty")
    assert jump.status == "fail" and within(jump.onset_step, (2, 9))
    assert jump.evidence["baseline"] == pytest.approx(0.85, abs=0.05)  # the run's first values, not a later window


def test_a_gradient_collapsing_in_the_first_steps_is_measured_from_them() -> None:
    # actor/grad_norm 0.40-1.0 on steps 1-7, 0.0113 at step 12, ~1e-4 for the remaining 240 steps
    v = one(QWEN3_COLLAPSE, "grad_norm_vanishing")
    assert v.status == "fail" and within(v.onset_step, (12, 17))
    assert v.evidence["baseline"] == pytest.approx(0.4, rel=0.1)
    # a DPO gradient 3.8 → 0.55 → 0.009 by step 100 and < 1e-3 from step 300 (logged every 20 steps)
    dpo = one("trlstate__llama32-1b-dpo-explainer-loss0", "grad_norm_vanishing")
    assert dpo.status == "fail" and within(dpo.onset_step, (80, 320))
    # its blips around 1e-6 … 0.1 after that are a vanished gradient's noise, not spikes
    assert one("trlstate__llama32-1b-dpo-explainer-loss0", "grad_norm_spike").status == "ok"
    # 0.25 on steps 10-50, 2.5e-4 from step 60 (every group identical): small, not gone
    zs = one("trlstate__qwen25-3b-grpo-graphcross-zerostd", "grad_norm_vanishing")
    assert zs.status == "warn" and within(zs.onset_step, (50, 70))


def test_a_saturating_dpo_gradient_is_a_warning_not_a_failure() -> None:
    # grad_norm 8 → 0.02 over five epochs, never below 0.0064: saturated, not broken (label: must not fail)
    f = one("trlstate__llama32-1b-dpo-paddedheavy-5ep", "grad_norm_vanishing")
    assert f.status == "warn" and "though not gone" in f.message["en"]


def test_a_gradient_of_exactly_zero_names_its_cause() -> None:
    # DPO: grad_norm 0.0 on 100/100 steps, loss 0.6931 and margins 0: the policy is its reference
    ref = one("trlstate__mistral7b-dpo-selfreward-m2v2-zerograd", "grad_norm_zero")
    assert ref.status == "fail" and ref.onset_step == 1 and "identical to its reference" in ref.message["en"]
    assert "LoRA adapter" in ref.advice["en"]
    # GRPO: grad_norm 0.0 on 42 of 49 records, frac_reward_zero_std ≥ 0.9 on most
    zv = one("trlconsole__trldapo_qwen25vl3b_grpo_collapse", "grad_norm_zero")
    assert zv.status == "fail" and within(zv.onset_step, (10, 40)) and "identical rewards" in zv.message["en"]
    assert one("trlconsole__trldapo_qwen25vl3b_grpo_collapse", "grad_norm_vanishing").status == "skipped"
    # four records, all 0.0: enough to say so
    four = one("trlconsole__trldapo_qwen25vl3b_grpo_interrupted", "grad_norm_zero")
    assert four.status == "fail" and within(four.onset_step, (10, 20))
    # one zero (step 1, reward 0 for all six) in 250 steps is no finding
    assert one("shared__trl_unsloth_grpo_llama31_8b_ckpt250", "grad_norm_zero").status == "ok"


def test_kl_to_a_teacher_is_judged_by_how_far_it_moves() -> None:
    # on-policy distillation: KL to the 32B teacher ~0.54 at step 1, slowly falling to ~0.45
    ok = one("verl__agent-opd__qwen2.5-3b-klreward0.0005-healthy", "kl_band")
    assert ok.status == "ok" and "different model" in ok.message["en"]
    # 0.51-0.57 on steps 1-31, then 0.94 (34), 1.30 (35), 1.88 (36), 2.07 (37): ×3.7
    moved = one("verl__agent-opd__qwen2.5-3b-klreward0.05-length-collapse", "kl_band")
    assert moved.status == "warn" and within(moved.onset_step, (32, 37))


def test_trl_ppo_sequence_kl_is_read_on_its_own_scale() -> None:
    # objective/kl summed over 6-token responses: median 0.86 over steps 1-10, 8.25 at 26, ~15 late
    f = one("trlstate__distilgpt2-ppo-chess", "kl_band")
    assert f.status == "warn" and within(f.onset_step, (20, 50)) and "actor/seq_kl" in f.metrics
    assert "no response length is logged" in f.message["en"]
    # the value loss did not fall over steps 40-76 but fell to 0.27 by the end: the critic caught up
    assert one("trlstate__distilgpt2-ppo-chess", "critic_lag").status == "note"


def test_kl_far_above_the_band_warns_but_does_not_fail_below_the_ceiling() -> None:
    # per-token kl 0.002-0.011 over steps 1-19, 0.3-0.96 by 28-48, level ~1.2 late (never 2)
    f = one("shared__unsloth_grpo_gptoss20b_2048", "kl_band")
    assert f.status == "warn" and within(f.onset_step, (30, 120))


def test_small_kl_spikes_and_grpo_loss_noise_are_not_warnings() -> None:
    # kl median 0.018 with one-step spikes to 0.27 (below the 0.3 floor): a note at their steps
    kl = one("shared__unsloth_grpo_llama31_8b", "kl_jump", "actor/kl_loss")
    assert kl.status == "note" and kl.points == (114, 147)
    # TRL's GRPO loss between -0.135 and +0.249, zero median: noise, not a jump
    assert one("shared__unsloth_grpo_qwen25vl_7b", "loss_jump").status == "ok"
    # a DPO loss of exactly 0 that blips to 0.0033 (it started at 0.69) has not jumped
    assert one("trlstate__llama32-1b-dpo-explainer-loss0", "loss_jump").status == "ok"


def test_a_pg_loss_burst_that_comes_back_is_not_a_climb() -> None:
    # actor/pg_loss 0.02-0.05, then 0.43, 0.68, 0.73, 0.44, 0.20 on steps 36-40, back to ~0.01 at 42
    f = one("verl__agent-opd__qwen2.5-3b-klreward0.05-length-collapse", "pg_loss_climb")
    assert f.status == "ok" and "a burst" in f.message["en"]


def test_a_single_non_finite_grad_norm_in_fp16_is_a_loss_scaler_skip() -> None:
    for run_id, step in (("trlstate__mistral7b-sft-ift-eft-fp16", 7), ("trlstate__distilgpt2-sft-chess", 32750)):
        f = one(run_id, "nan_inf")
        assert (f.status, f.onset_step, f.points) == ("note", step, (step,)) and "loss scaler" in f.message["en"]


def test_clip_fraction_near_zero_never_warns() -> None:
    # TRL GRPO, one update per generation batch: clip_ratio 0 on all 300 steps; no config logged
    assert one("trlstate__qwen25-1p5b-grpo-unalign-truncated", "clipfrac_low").status == "skipped"
    # veRL, one PPO epoch on two mini-batches of 16 prompts (config.yaml): could be better, a note
    f = one("wandb__open-agentrl-opd__qwen2.5-3b-tokenkl0.1-xx1oj7kk", "clipfrac_low")
    assert f.status == "note" and "2 updates" in f.message["en"]


def test_learning_rate_restart_and_rounded_rates() -> None:
    # linear decay to 6.67e-08 at step 150, 0.0 at 151, 4.97e-06 at 152: the schedule restarted on resume
    f = one("trlstate__qwen25-1p5b-grpo-unalign-truncated", "lr_schedule")
    assert (f.status, f.onset_step) == ("warn", 152) and "restarted" in f.message["en"]
    # actor/lr printed as 0.000 by a three-decimal console: not judged (skipped, never ok)
    for metric in ("actor/lr", "critic/lr"):
        r = one("verl__dstack-configs__qwen2.5-7b-ppo-gsm8k-resumed", "lr_schedule", metric)
        assert r.status == "skipped" and "rounded to 0" in r.message["en"]


def test_a_kto_loss_that_never_leaves_its_reference_value_fails() -> None:
    """Real (corpus other__model-diffing__qwen3-0.6b-kto-qlora-loss-flat, a notebook's Trainer table): the KTO
    loss is 0.5048 at step 10 and 0.5056 at step 2,250 — 1 - sigmoid(0), its value while the policy equals the
    reference — for three epochs and 8.5 hours."""
    f = one("other__model-diffing__qwen3-0.6b-kto-qlora-loss-flat", "loss_flat")
    assert f.status == "fail" and f.evidence["reference"] == 0.5 and "nothing is being learned" in f.message["en"]


def test_a_dpo_loss_at_ln2_fails_and_a_learning_one_is_ok() -> None:
    """Real (corpus): m2v2's DPO loss is 0.6931 on all 100 steps (policy = reference, grad_norm 0); the first
    self-rewarding DPO run's loss falls from ln 2 while its margins grow."""
    stuck = one("trlstate__mistral7b-dpo-selfreward-m2v2-zerograd", "loss_flat")
    assert stuck.status == "fail" and abs(stuck.evidence["value"] - 0.6931) < 1e-3
    assert one("trlstate__mistral7b-dpo-selfreward-m2", "loss_flat").status == "ok"
