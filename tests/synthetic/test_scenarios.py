"""The scenario suite's aims on a small grid (the full grid runs in benchmarks/scenario_suite.py):
every injected pathology is found by its target check at a low and a high entropy scale, near its
injection step, and healthy GRPO and PPO controls raise no failure."""

from __future__ import annotations

import pytest

from rlvitals.synthetic.pathologies import PATHOLOGIES
from rlvitals.synthetic.scenarios import Tally, grid, run_suite

pytestmark = pytest.mark.slow

#: pathologies injected as a slow ramp are first visible some steps after the ramp starts
SLOW = {"entropy_clip_joint": 25, "length_hacking": 40, "zero_variance": 25, "ood_gap": 40, "oom_risk": 40,
        "response_clip": 15}


@pytest.fixture(scope="module")
def tallies() -> dict[str, Tally]:
    return run_suite(grid([300], [1.0], [0.05, 2.0], [0]))


@pytest.mark.parametrize("name", sorted(PATHOLOGIES))
def test_pathology_is_found_near_its_onset(tallies: dict[str, Tally], name: str) -> None:
    tally = tallies[name]
    assert tally.detected == tally.runs, f"{name}: found in {tally.detected}/{tally.runs} runs"
    if tally.onset_errors:
        assert max(tally.onset_errors) <= SLOW.get(name, 10), tally.onset_errors


@pytest.mark.parametrize("control", ["healthy-grpo", "healthy-ppo"])
def test_healthy_controls_do_not_fail(tallies: dict[str, Tally], control: str) -> None:
    tally = tallies[control]
    fails = {k: v for k, v in tally.alarms.items() if k.endswith(":fail")}
    assert not fails, fails
