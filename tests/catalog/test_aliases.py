"""Key resolution: literal, pattern, mangling, and ranking by framework / algorithm / version."""

from __future__ import annotations

import pytest
from tiny_catalog import CATALOG

from rlvitals.catalog.aliases import Context, KeyResolver, parse_version

R = KeyResolver(CATALOG)
RL = Context(framework="trl", algorithm="grpo", family="rl")


def test_literal_alias_and_scale() -> None:
    hit = R.resolve("actor/lr(1e-4)", Context(framework="verl"))
    assert hit is not None and hit.canonical == "actor/lr" and hit.scale == 1e-4 and hit.via == "exact"


def test_canonical_key_resolves_to_itself_in_any_framework() -> None:
    hit = R.resolve("actor/entropy", Context(framework="openrlhf"))
    assert hit is not None and hit.alias is None and hit.canonical == "actor/entropy"


def test_templated_canonical_key_parses_source_with_slashes_from_the_right() -> None:
    hit = R.resolve("val-core/DigitalLearningGmbH/MATH-lighteval/reward/best@4/mean", Context())
    assert hit is not None and hit.split == "eval"
    groups = hit.metric.regex.fullmatch(hit.canonical).groupdict()  # type: ignore[union-attr]
    assert groups == {"source": "DigitalLearningGmbH/MATH-lighteval", "var": "reward", "stat": "best@4/mean"}


def test_pattern_alias_binds_missing_placeholders() -> None:
    hit = R.resolve("val/test_score/openai/gsm8k", Context(framework="verl"))
    assert hit is not None and hit.canonical == "val-core/openai/gsm8k/reward/mean@1" and hit.via == "pattern"


def test_algorithm_restriction_decides_generic_names() -> None:
    assert R.resolve("loss", RL).canonical == "actor/loss"  # type: ignore[union-attr]
    dpo = Context(framework="trl", algorithm="dpo-family", family="preference")
    assert R.resolve("loss", dpo).canonical == "loss/dpo"  # type: ignore[union-attr]


def test_reward_function_pattern_never_captures_preference_keys() -> None:
    dpo = Context(framework="trl", algorithm="dpo-family", family="preference")
    assert R.resolve("rewards/chosen", dpo).canonical == "rewards/chosen"  # type: ignore[union-attr]
    assert R.resolve("rewards/correctness/mean", RL).canonical == "reward_fn/correctness/mean"  # type: ignore[union-attr]
    assert R.resolve("rewards/foo/mean", dpo) is None


def test_version_window_selects_meaning() -> None:
    new = Context(framework="trl", algorithm="grpo", family="rl", version_low=(1, 0), version_high=(10**9,))
    old = Context(framework="trl", algorithm="grpo", family="rl", version_low=(0, 14), version_high=(0, 17))
    assert R.resolve("reward_std", new).canonical == "critic/score/std"  # type: ignore[union-attr]
    assert R.resolve("reward_std", old).canonical == "group/reward_std/mean"  # type: ignore[union-attr]


def test_undecided_version_takes_default_and_says_so() -> None:
    notes: list[str] = []
    hit = R.resolve("reward_std", RL, notes)
    assert hit is not None and hit.canonical == "group/reward_std/mean"
    assert len(notes) == 1 and "version is not visible" in notes[0] and "mean of group stds" in notes[0]


def test_version_outside_alias_range_rules_it_out() -> None:
    old = Context(framework="trl", algorithm="grpo", family="rl", version_low=(0, 14), version_high=(0, 17))
    assert R.resolve("entropy", old) is None


def test_manglings_eval_prefix_and_nesting() -> None:
    hit = R.resolve("eval/rewards/chosen", Context(framework="trl"))
    assert hit is not None and hit.canonical == "eval/rewards/chosen" and hit.split == "eval"
    hit = R.resolve("eval_rewards/chosen", Context(framework="trl"))
    assert hit is not None and hit.canonical == "eval/rewards/chosen"
    hit = R.resolve("train/rewards / chosen", Context())
    assert hit is not None and hit.canonical == "rewards/chosen" and hit.via.startswith("wandb-tb:")
    hit = R.resolve("val-core/openai/gsm8k/reward/mean_at_4", Context(framework="verl"))
    assert hit is not None and hit.canonical == "val-core/openai/gsm8k/reward/mean@4"


def test_eval_metric_keeps_its_own_key_under_eval_prefix() -> None:
    hit = R.resolve("eval/val-core/a/acc/mean@1", Context())
    assert hit is not None and hit.canonical == "val-core/a/acc/mean@1"


def test_unknown_key_is_none() -> None:
    assert R.resolve("my_custom_metric", RL) is None


def test_version_range_of_key() -> None:
    assert R.version_range("completion_length", "trl") is None
    assert R.version_range("entropy", "trl") == ((0, 20), (10**9,))


@pytest.mark.parametrize(("text", "expected"), [("0.17", (0, 17)), ("2025-04", (2025, 4)), (None, None), ("x", None)])
def test_parse_version(text: str | None, expected: tuple[int, ...] | None) -> None:
    assert parse_version(text) == expected
