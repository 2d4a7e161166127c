"""Onsets where the damage starts, on real runs with a known cause (issue 34, item 5).

The corpus's made__trl-cpu__* runs are genuine TRL 1.16 trainings of SmolLM2-135M on the CPU, each with one
cause set by scripts/captures/trl_cpu_runs.py beside the healthy baseline of the same set-up (same seed, same
first step). An onset is the first step of the lasting change, judged against what the healthy start looks
like: a value at step 1 that the healthy run shows too is no onset, and a change complete by some step is dated
there, not where a long window catches up with it. The numbers quoted are the runs' own (labels.toml).
"""

from __future__ import annotations

import pytest
from runs import corpus_run

from rlvitals.checks import VERDICT_STATUSES
from rlvitals.diagnosis import Diagnosis, diagnose

_CACHE: dict[str, Diagnosis] = {}


def _diagnosis(name: str) -> Diagnosis:
    if name not in _CACHE:
        _CACHE[name] = diagnose(corpus_run(f"made__trl-cpu__{name}"))
    return _CACHE[name]


@pytest.mark.parametrize("name", ["grpo-healthy", "dpo-healthy"])
def test_a_start_the_healthy_run_shows_is_no_onset(name: str) -> None:
    """The healthy GRPO run starts with 88 % of its answers at the 32-token cap (the untrained policy rambles)
    and falls to 19 %; the healthy DPO run's chosen reward is 0 at step 1 by construction (policy = reference).
    Neither is a problem that starts at step 1: nothing at warn or fail, and the diagnosis says so."""
    d = _diagnosis(name)
    assert [f.check for f in d.findings if f.status in VERDICT_STATUSES] == []
    assert d.headline is None


# (run, check, onset, what the numbers show)
ONSETS = [
    ("grpo-lr-too-high", "kl_band", 2, "kl 0 at step 1 (the healthy run's step), 2.80 at step 2 after one update"),
    ("grpo-lr-too-high", "reward_collapse", 2, "reward 0.375 at step 1, 0 on 28 of the 29 steps after"),
    ("grpo-lr-too-high", "zero_variance_groups", 2, "frac_reward_zero_std 1.0 on 28 of 29 steps from step 2"),
    ("grpo-lr-too-high", "response_clip_high", 3, "step 2's answers are short (11 tokens); every one at the cap "
                                                  "from step 3"),
    ("grpo-lr-too-high", "entropy_collapse", 9, "entropy 0.97 at step 4, 0.095 at step 10: down by step 9, "
                                                "not where a 20-step window catches up"),
    ("grpo-tiny-length", "response_clip_high", 1, "a 4-token cap: every answer cut from step 1, for good"),
    ("grpo-constant-reward", "zero_variance_groups", 1, "the reward is 1.0 for every completion from step 1"),
    ("grpo-short-pays", "length_reward_hacking", 11, "length 31 -> 9 tokens as the reward climbs 0.03 -> 0.71; "
                                                     "labelled window 9-16"),
    ("dpo-tiny-repeated", "pref_accuracy_saturated", 2, "accuracy 0 at step 1 (policy = reference), 1.0 from 2"),
    ("dpo-tiny-repeated", "pref_margins", 6, "rewards/chosen 0.019 (2), -0.005 (5), -0.106 (8): below 0 for good "
                                             "from 6, not at step 1 where it is 0 by construction"),
]


@pytest.mark.parametrize(("name", "check", "onset", "why"), ONSETS, ids=[f"{n}-{c}" for n, c, _, _ in ONSETS])
def test_onsets_on_runs_with_a_known_cause(name: str, check: str, onset: int, why: str) -> None:
    found = [f for f in _diagnosis(name).findings if f.check == check and f.status in VERDICT_STATUSES]
    assert [f.onset_step for f in found] == [onset], why
