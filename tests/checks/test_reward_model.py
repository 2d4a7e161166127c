"""L3 reward-model learning (``rm_learning``): the real OpenRLHF reward-model capture (its first 9 steps, before it
learnt anything, and the whole run), the corpus's healthy TRL RewardTrainer runs, constructed TRL and OpenRLHF
runs for each template, and the edge where it cannot judge."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from runs import corpus_run, finding, make_run

import rlvitals
from rlvitals.checks import load_checks
from rlvitals.diagnosis import diagnose
from rlvitals.run.run import Run

CAPTURE = Path(__file__).resolve().parents[1] / "ingest" / "data" / "openrlhf" / "rm-0.11.2"


def head(run: Run, n: int) -> Run:
    """The first ``n`` steps of a real run, as its log read at that point would give them."""
    last = int(run.frame["step"][n - 1])
    return dataclasses.replace(run, frame=run.frame.head(n), raw=run.raw.head(n), train_mask=run.train_mask[:n],
                               validation={k: v.filter(pl.col("step") <= last) for k, v in run.validation.items()})


@pytest.fixture(scope="module")
def captured() -> Run:
    return rlvitals.load(CAPTURE / "tensorboard-run" / "tensorboard")[0]


def test_real_openrlhf_rm_before_it_learnt_is_a_failure(captured: Run) -> None:
    # steps 1-9 of the real capture: loss 0.693-0.703, accuracy 0-75 % per batch of 4, chosen below rejected
    f = finding(diagnose(head(captured, 9)), "rm_learning")
    assert f.status == "fail" and f.onset_step == 1
    assert "learnt nothing" in f.message["en"] and "rejected answers above the chosen" in f.message["en"]
    assert "0.694 → 0.703" in f.message["en"] and "什么都没学到" in f.message["zh"]


def test_real_openrlhf_rm_that_learnt_is_ok(captured: Run) -> None:
    # the whole capture: the loss leaves ln 2 (0.694 → 0.627) and chosen ends above rejected
    f = finding(diagnose(captured), "rm_learning")
    assert f.status == "ok" and "0.694 → 0.627" in f.message["en"] and "学到了东西" in f.message["zh"]


@pytest.mark.parametrize("run_id", ["wandb__t-lab-alignment__distilbert-rewardtrainer-wvk49vqj",
                                    "trlstate__distilgpt2-rewardmodel-chess"])
def test_healthy_corpus_reward_models_pass(run_id: str) -> None:
    found = [f for f in diagnose(corpus_run(run_id)).findings if f.check == "rm_learning"]
    assert all(f.status == "ok" for f in found), [(f.status, f.message["en"]) for f in found]


def openrlhf(n: int = 60, *, loss: float = 0.693, acc: float = 0.45, gap: float = -0.02, seed: int = 0) -> Run:
    """An OpenRLHF reward-model run held at the given levels (its own key names), with batch noise."""
    r = np.random.default_rng(seed)
    chosen = 0.1 + r.normal(0, 0.01, n)
    return make_run({"loss_mean": loss + r.normal(0, 0.005, n), "acc_mean": acc + r.normal(0, 0.02, n),
                     "chosen_reward": chosen, "reject_reward": chosen - gap + r.normal(0, 0.005, n)},
                    framework="openrlhf", config={"trainer_class": "RewardModelTrainer"})


def test_stuck_at_ln2_with_accuracy_below_chance_and_inverted_scores_fails() -> None:
    d = diagnose(openrlhf())
    f = finding(d, "rm_learning")
    assert f.status == "fail" and f.template == "nothing_inverted" and d.verdict == "fail"
    assert "accuracy is 46%" in f.message["en"] and "准确率 46%" in f.message["zh"]
    assert set(f.metrics) >= {"rm/loss", "rm/accuracy", "rm/reward_chosen/mean", "rm/reward_rejected/mean"}


def test_each_sign_alone() -> None:
    assert finding(diagnose(openrlhf(gap=0.02)), "rm_learning").template == "nothing"
    backwards = finding(diagnose(openrlhf(loss=0.75)), "rm_learning")
    assert backwards.status == "fail" and backwards.template == "backwards"
    chance = finding(diagnose(openrlhf(loss=0.6, gap=0.05)), "rm_learning")
    assert chance.status == "warn" and "coin flip" in chance.message["en"]
    stuck = finding(diagnose(openrlhf(acc=0.8, gap=0.05)), "rm_learning")
    assert stuck.status == "warn" and stuck.template == "stuck"
    inverted = finding(diagnose(openrlhf(loss=0.4, acc=0.8)), "rm_learning")
    assert inverted.status == "warn" and "swapped" in inverted.message["en"]


def trl(n: int = 60, margin: float = 0.5, falls: bool = True) -> Run:
    t = np.arange(1, n + 1, dtype=float)
    r = np.random.default_rng(3)
    keys: dict[str, Any] = {"loss": (0.69 - 0.005 * t if falls else np.full(n, 0.693)) + r.normal(0, 0.005, n),
                            "accuracy": (0.6 + 0.005 * t if falls else np.full(n, 0.5)) + r.normal(0, 0.02, n),
                            "margin": margin + r.normal(0, 0.01, n)}
    return make_run(keys, framework="trl", config={"trainer_class": "RewardTrainer"})


def test_trl_margin_is_the_gap() -> None:
    ok = finding(diagnose(trl()), "rm_learning")
    assert ok.status == "ok" and ok.evidence["gap_metric"] == "rm/reward_margin"
    f = finding(diagnose(trl(margin=-0.1, falls=False)), "rm_learning")
    assert f.status == "fail" and f.template == "nothing_inverted" and "-0.0952" in f.message["en"]


def test_too_short_or_no_rm_metrics_is_not_judged(captured: Run) -> None:
    assert not [f for f in diagnose(head(captured, 7)).findings if f.check == "rm_learning" and f.status != "skipped"]
    assert not [f for f in diagnose(make_run({"actor/entropy": np.linspace(1, 0.5, 30)})).findings
                if f.check == "rm_learning" and f.status != "skipped"]


def test_not_judged_while_the_learning_rate_warms_up() -> None:
    run = openrlhf()
    warming = make_run({"loss_mean": run.frame["rm/loss"].to_numpy(), "acc_mean": run.frame["rm/accuracy"].to_numpy(),
                        "learning_rate": np.linspace(1e-7, 1e-5, 60)}, framework="openrlhf",
                       config={"trainer_class": "RewardModelTrainer"})
    assert finding(diagnose(warming), "rm_learning").status == "skipped"
    done = make_run({"loss_mean": run.frame["rm/loss"].to_numpy(), "acc_mean": run.frame["rm/accuracy"].to_numpy(),
                     "learning_rate": np.r_[np.linspace(1e-7, 1e-5, 10), np.full(50, 1e-5)]}, framework="openrlhf",
                    config={"trainer_class": "RewardModelTrainer"})
    assert finding(diagnose(done), "rm_learning").status == "fail"


def test_every_template_formats_in_both_languages() -> None:
    check = next(c for c in load_checks() if c.id == "rm_learning")
    values = {"ln2": 0.693, "chance": 0.55, "loss": "0.69 → 0.69", "accuracy": "45%", "gap": "-0.02"}
    for lang in ("en", "zh"):
        for template in ("ok", "nothing", "nothing_inverted", "backwards", "stuck", "chance", "inverted"):
            assert check.text(lang).messages[template].format(**values)


# -- rm_downstream: the reward model against the policy run it judged -------------------------------------------
# The corpus holds no reward model with the very policy run it judged and that run's validation (the chess pair,
# trlstate__distilgpt2-rewardmodel-chess and trlstate__distilgpt2-ppo-chess, logged no validation of the policy),
# so these pairs are constructed: the real chess reward model (eval accuracy 0.862 → 0.887) against real policy
# runs of the corpus, and against a constructed policy run for the over-optimisation.

CHESS_RM = "trlstate__distilgpt2-rewardmodel-chess"


def downstream(policy: Run) -> Any:
    return finding(diagnose(corpus_run(CHESS_RM), downstream=policy), "rm_downstream")


def test_downstream_validation_rising_is_ok() -> None:
    f = downstream(corpus_run("shared__verl_ppo_qwen25_05b_gsm8k"))
    assert f.status == "ok" and "validation reward/mean@1 0.317 → 0.549" in f.message["en"]
    assert "accuracy 0.869 → 0.887" in f.message["en"] and "下游" in f.message["zh"]


def test_downstream_accuracy_without_gains_warns() -> None:
    policy = corpus_run("verl__dstack-configs__qwen2.5-7b-ppo-gsm8k-resumed")
    f = downstream(policy)
    assert f.status == "warn" and f.template == "no_gain" and f.onset_step is None
    assert "0.892 → 0.872" in f.message["en"] and policy.path in f.message["en"]
    assert "checkpoint-37500/trainer_state.json" in f.message["en"] and "没有变好" in f.message["zh"]


def test_downstream_small_fall_while_reward_rises_is_no_overoptimisation() -> None:
    # the real GPG run: validation 0.895 (best) → 0.88 while the reward rose 0.946 → 0.984, under fall_rel of its best
    f = downstream(corpus_run("shared__verl_gpg_qwen2_7b_megatron"))
    assert f.status != "fail"


def policy(n: int = 200) -> Run:
    t = np.arange(1, n + 1, dtype=float)
    r = np.random.default_rng(5)
    val = np.full(n, np.nan)
    at = t % 20 == 0
    val[at] = 0.6 - 0.15 * np.clip((t[at] - 60) / 140, 0, 1) + r.normal(0, 0.003, int(at.sum()))
    return make_run({"critic/score/mean": 0.2 + 0.6 * t / n + r.normal(0, 0.01, n),
                     "val-core/gsm8k/reward/mean@1": val}, config={"algorithm.adv_estimator": "gae"})


def test_downstream_reward_rising_while_validation_falls_fails() -> None:
    f = downstream(policy())
    assert f.status == "fail" and f.template == "overoptimised"
    assert "over-optimises this reward model" in f.message["en"] and "过度优化" in f.message["zh"]


def test_downstream_not_given_or_without_validation_is_skipped() -> None:
    assert finding(diagnose(corpus_run(CHESS_RM)), "rm_downstream").status == "skipped"
    without = corpus_run("trlstate__distilgpt2-ppo-chess")  # the chess RM's own PPO run: no validation logged
    assert downstream(without).status == "skipped"
