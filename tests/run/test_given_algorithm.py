"""TRL's older PPO-style names read by what they are, the algorithm they show detected from the catalog's
signatures, and an algorithm the user gives (``load(algorithm=...)``, ``Follow``) read instead of the detected one.

No public log with TRL's PPOTrainer names of 0.4-0.11 or its RLOOTrainer's PPO-style names was found (the one
real PPOTrainer log, ``trlstate__distilgpt2-ppo-chess`` of the corpus, is the PPOv2 key set of 0.9 on, and is
read here too): the other logs are constructed, each with exactly the keys the trainer's code of those versions
logs (``trl/trainer/ppo_trainer.py`` ``record_step_stats``/``loss`` of v0.4.2-v0.11.4,
``trl/trainer/rloo_trainer.py`` of v0.13-v0.21, ``online_dpo_trainer.py`` of v0.19), values made up.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from corpus import corpus_input

from rlvitals import load
from rlvitals.errors import InputError
from rlvitals.run import Follow

#: the keys PPOTrainer 0.4.2-0.11 logs (``accelerator.log(logs)``: record_step_stats, the ``ppo/``-prefixed
#: loss() stats, log_stats' env/*), each with the canonical key it is read as
OLD_PPO = {
    "objective/kl": "actor/seq_kl", "objective/kl_coef": "actor/reward_kl_penalty_coeff",
    "objective/entropy": "actor/seq_entropy", "ppo/mean_non_score_reward": "actor/non_score_reward",
    "ppo/mean_scores": "critic/score/mean", "ppo/std_scores": "critic/score/std",
    "tokens/queries_len_mean": "prompt_length/mean", "tokens/responses_len_mean": "response_length/mean",
    "ppo/loss/policy": "actor/pg_loss", "ppo/loss/value": "critic/vf_loss", "ppo/loss/total": "actor/loss",
    "ppo/policy/entropy": "actor/entropy", "ppo/policy/approxkl": "actor/ppo_kl", "ppo/policy/policykl": "actor/ppo_kl",
    "ppo/policy/clipfrac": "actor/pg_clipfrac", "ppo/policy/advantages_mean": "critic/advantages/mean",
    "ppo/returns/mean": "critic/returns/mean", "ppo/val/vpred": "critic/vpred_mean", "ppo/val/error": "critic/vf_loss",
    "ppo/val/clipfrac": "critic/vf_clipfrac", "ppo/val/mean": "critic/values/mean",
    "ppo/val/var_explained": "critic/vf_explained_var", "ppo/learning_rate": "actor/lr",
    "env/reward_mean": "critic/score/mean", "env/reward_std": "critic/score/std",
}
#: the metrics RLOOTrainer 0.13-0.21 logs (PPOTrainer's, without loss/value_avg), as trainer_state.json keeps them
RLOO = ["eps", "objective/kl", "objective/entropy", "objective/non_score_reward", "objective/rlhf_reward",
        "objective/scores", "policy/approxkl_avg", "policy/clipfrac_avg", "loss/policy_avg", "val/clipfrac_avg",
        "policy/entropy_avg", "val/ratio", "val/ratio_var", "val/num_eos_tokens", "lr", "episode"]
#: PPOv2Trainer (0.9-0.11) and PPOTrainer (0.12 on): RLOO's and the value loss
PPO_V2 = [*RLOO, "loss/value_avg"]
#: the names the metric dictionary's §11 gives for TRL
DICTIONARY = ["rewards", "objective/kl", "policy/approx_kl", "entropy"]


def _values(keys: list[str], step: int) -> dict[str, float]:
    """Made-up values, each key its own curve (no two keep one ratio, as ORPO's rewards and log-probs do)."""
    return {k: round(0.5 + 0.01 * step + 0.05 * math.sin(step * (i + 1)), 6) for i, k in enumerate(keys)}


def _jsonl(path: Path, keys: list[str], steps: int = 12) -> Path:
    path.write_text("".join(json.dumps({"step": s, **_values(keys, s)}) + "\n" for s in range(1, steps + 1)))
    return path


def _trainer_state(folder: Path, keys: list[str], steps: int = 12) -> Path:
    history = [{"epoch": s / steps, "step": s, **_values(keys, s)} for s in range(1, steps + 1)]
    path = folder / "trainer_state.json"
    path.write_text(json.dumps({"global_step": steps, "log_history": history}, indent=2, sort_keys=True))
    return path


def test_the_old_ppotrainer_names_are_read_by_what_they_are_as_ppo(tmp_path: Path) -> None:
    run = load(_jsonl(tmp_path / "ppo.jsonl", list(OLD_PPO)))[0]
    assert (run.framework, run.framework_era, run.algorithm, run.algorithm_given) == ("trl", ">=0.4.2,<0.12", "ppo",
                                                                                      False)
    assert run.unmapped == []
    assert {k: run.key_map[k].canonical for k in OLD_PPO} == OLD_PPO
    # two names of the PPO KL: the one of veRL's own form (old − new log-prob) is read first
    steps, values = run.series("actor/ppo_kl")
    assert values[0] == pytest.approx(run.raw["ppo/policy/policykl"][0])


def test_the_metric_dictionarys_trl_names_read_as_ppo_not_sft(tmp_path: Path) -> None:
    run = load(_trainer_state(tmp_path, [*DICTIONARY, "loss"]))[0]
    assert (run.framework, run.algorithm, run.family) == ("trl", "ppo", "rl")
    assert {k: run.key_map[k].canonical for k in DICTIONARY} == {
        "rewards": "critic/score/mean", "objective/kl": "actor/seq_kl", "policy/approx_kl": "actor/ppo_kl",
        "entropy": "actor/entropy"}


def test_rlootrainers_ppo_style_names_read_as_rloo(tmp_path: Path) -> None:
    run = load(_trainer_state(tmp_path, RLOO))[0]
    assert (run.algorithm, run.framework_era, run.unmapped) == ("rloo", ">=0.9", [])
    assert run.key_map["objective/rlhf_reward"].canonical == "critic/rewards/mean"


def test_ppov2_names_with_a_value_loss_read_as_ppo(tmp_path: Path) -> None:
    assert load(_trainer_state(tmp_path, PPO_V2))[0].algorithm == "ppo"
    real = load(corpus_input("trlstate__distilgpt2-ppo-chess"))[0]  # TRL 0.20 PPOTrainer
    assert (real.algorithm, real.framework_era, real.unmapped) == ("ppo", ">=0.9", [])


def test_online_dpo_is_not_taken_for_ppo_by_its_objective_names(tmp_path: Path) -> None:
    keys = ["objective/kl", "objective/entropy", "objective/non_score_reward", "objective/rlhf_reward",
            "objective/scores", "objective/scores_margin", "rewards/chosen", "rewards/rejected", "rewards/margins",
            "rewards/accuracies", "logps/chosen", "logps/rejected", "val/contain_eos_token", "beta", "loss"]
    run = load(_trainer_state(tmp_path, keys))[0]
    assert (run.algorithm, run.family) == ("dpo-family", "preference")


def test_a_given_algorithm_is_read_instead_and_said_given(tmp_path: Path) -> None:
    path = _trainer_state(tmp_path, PPO_V2)  # RLOOTrainer 0.9-0.12 logged this very key set
    run = load(path, algorithm="rloo")[0]
    assert (run.algorithm, run.family, run.algorithm_label, run.algorithm_given) == ("rloo", "rl", "RLOO", True)
    assert any("given as rloo (RLOO), but the run's keys and config read as ppo (PPO)" in n for n in run.notes)


def test_a_given_algorithm_the_keys_agree_with_gets_no_note(tmp_path: Path) -> None:
    run = load(_trainer_state(tmp_path, RLOO), algorithm="rloo")[0]
    assert run.algorithm_given and not any("given as" in n for n in run.notes)


def test_a_given_algorithm_changes_how_the_keys_are_read(tmp_path: Path) -> None:
    """``loss`` of a TRL log with no other key reads as SFT's loss; given as GRPO, as the actor's loss."""
    path = _trainer_state(tmp_path, ["loss"])
    assert load(path)[0].key_map["loss"].canonical == "sft/loss"
    given = load(path, algorithm="grpo")[0]
    assert given.key_map["loss"].canonical == "actor/loss" and given.algorithm_given


def test_an_unknown_algorithm_is_refused_before_reading(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"algorithm='dpo': not an algorithm rlvitals knows \(did you mean "
                                         r"dpo-family\?\); give one of grpo, rloo, ppo, .*dpo-family"):
        load(tmp_path / "not-there.jsonl", algorithm="dpo")


def test_a_followed_log_is_read_as_the_given_algorithm(tmp_path: Path) -> None:
    """What ``watch`` and ``serve`` follow: the given algorithm holds for every Run built as the log grows."""
    path = _jsonl(tmp_path / "run.jsonl", list(OLD_PPO), steps=4)
    follow = Follow(path, None, 0.0, algorithm="rloo")
    follow.poll(0.0)
    (run,) = follow.runs()
    assert (run.algorithm, run.algorithm_given) == ("rloo", True)
    with path.open("a") as fh:
        fh.write(json.dumps({"step": 5, **dict.fromkeys(OLD_PPO, 0.6)}) + "\n")
    follow.poll(1.0)
    assert [(r.algorithm, r.algorithm_given, r.last_step) for r in follow.runs()] == [("rloo", True, 5)]
