"""Framework, version-era and algorithm detection."""

from __future__ import annotations

from corpus import corpus_input
from tiny_catalog import CATALOG

from rlvitals import Run, load
from rlvitals.catalog.aliases import KeyResolver
from rlvitals.run.detect import detect, detect_framework, format_window, normalised_keys

R = KeyResolver(CATALOG)


def test_reader_hint_wins() -> None:
    assert detect_framework({"entropy"}, R, "openrlhf") == "openrlhf"


def test_framework_is_voted_from_framework_specific_names() -> None:
    assert detect_framework({"entropy", "rewards/x/mean"}, R, None) == "trl"
    assert detect_framework({"actor/lr(1e-4)"}, R, None) == "verl"


def test_no_framework_evidence_is_unknown() -> None:
    assert detect_framework({"actor/entropy", "my_key"}, R, None) == "unknown"


def test_tie_is_unknown() -> None:
    assert detect_framework({"entropy", "actor/lr(1e-4)"}, R, None) == "unknown"


def test_manglings_expand_the_key_set() -> None:
    keys = normalised_keys(["train/rewards / chosen"], CATALOG)
    assert {"train/rewards / chosen", "rewards / chosen", "rewards/chosen", "train/rewards/chosen"} <= keys


def test_detect_version_and_algorithm() -> None:
    found = detect(["entropy", "rewards/a"], {}, "trl", CATALOG, R)
    # entropy exists since 0.20, rewards/<fn> without /mean only before 0.17: contradiction → no claim
    assert found.era is None
    found = detect(["entropy"], {}, None, CATALOG, R)
    assert (found.framework, found.era, found.algorithm) == ("trl", ">=0.20", "grpo")


def test_format_window() -> None:
    assert format_window("verl", (2024, 12), (2025, 5)) == ">=2024-12,<2025-05"
    assert format_window("trl", (), (0, 17)) == "<0.17"
    assert format_window("trl", (), (10**9,)) is None


def test_unknown_algorithm() -> None:
    assert detect(["xyz"], {}, None, CATALOG, R).algorithm == "unknown"


# -- on real corpus runs (benchmarks/corpus/runs/<id>/), with the shipped catalog ---------------------------

def _load(run_id: str) -> Run:
    return load(corpus_input(run_id))[0]


def test_reinforce_plus_plus_is_told_by_returns_that_are_not_the_advantages() -> None:
    # veRL GRPO logs returns == advantages; REINFORCE++ whitens the discounted return (3-decimal console values:
    # critic/returns/mean 0.147 vs critic/advantages/mean -0.000 at step 1)
    run = _load("verl__logic-rl-formula__reinforcepp-qwen2.5-3b-10steps")
    assert (run.algorithm, run.family) == ("reinforce++", "rl")


def test_grpo_keeps_its_reading_when_returns_equal_advantages() -> None:
    run = _load("verl__agent-opd__qwen2.5-3b-klreward0.0005-healthy")
    assert run.algorithm == "grpo"


def test_orpo_from_reference_free_rewards() -> None:
    # the Unsloth ORPO table has no log_odds columns, but rewards / chosen = 0.1 × logps / chosen on every row
    assert _load("shared__unsloth_orpo_llama3_8b").algorithm == "orpo"
    assert _load("notebook__unsloth_zephyr7b_dpo").algorithm == "dpo-family"


def test_llamafactory_orpo_from_its_odds_ratio_loss() -> None:
    assert _load("trlstate__glm4-9b-orpo-recsys-llamafactory").algorithm == "orpo"


def test_a_reward_model_from_its_accuracy_only_evaluation() -> None:
    assert _load("trlstate__distilgpt2-rewardmodel-chess").algorithm == "rm"
    assert _load("trlstate__distilgpt2-sft-chess").algorithm == "sft"


def test_a_reward_model_from_its_config_fields() -> None:
    # W&B keeps RewardConfig's center_rewards_coefficient (None); the history has only loss / grad_norm / lr
    run = _load("wandb__t-lab-alignment__distilbert-rewardtrainer-wvk49vqj")
    assert (run.framework, run.algorithm) == ("trl", "rm")


def test_a_verl_run_in_wandb_is_told_by_its_namespaces() -> None:
    # no key of a veRL run is an alias: actor/, critic/, timing_s/ ... are the catalog's own names
    run = _load("wandb__open-agentrl-opd__qwen2.5-3b-gjvwlq13")
    assert (run.framework, run.algorithm) == ("verl", "grpo")


def test_namespaces_alone_without_a_config() -> None:
    from rlvitals.catalog.catalog import load_catalog

    catalog = load_catalog()
    resolver = KeyResolver(catalog)
    keys = {"actor/pg_loss", "critic/score/mean", "timing_s/gen", "response_length/mean"}
    assert detect_framework(keys, resolver, None, {}, catalog) == "verl"
    assert detect_framework({"actor/pg_loss", "my_key"}, resolver, None, {}, catalog) == "unknown"  # too few
    assert detect_framework({"my_key"}, resolver, None, {"actor_rollout_ref.actor.strategy": "fsdp"},
                            catalog) == "verl"
