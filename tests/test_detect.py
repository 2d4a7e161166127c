"""Framework, version-era and algorithm detection."""

from __future__ import annotations

from tiny_catalog import CATALOG

from rlvitals.aliases import KeyResolver
from rlvitals.detect import detect, detect_framework, format_window, normalised_keys

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
