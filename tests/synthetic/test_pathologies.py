"""Injected pathologies change their run only from the injection step on."""

from __future__ import annotations

import numpy as np
import pytest

from rlvitals.synthetic.pathologies import PATHOLOGIES, Spec, base_series, scenario


@pytest.mark.parametrize("name", sorted(PATHOLOGIES))
def test_injection_starts_at_its_step(name: str) -> None:
    path = PATHOLOGIES[name]
    at = 120
    healthy = scenario(Spec(300, 3, algorithm=path.algorithm))
    sick = scenario(Spec(300, 3, algorithm=path.algorithm, pathology=name, at=at))
    assert healthy.keys() == sick.keys()
    changed = [k for k in sick if not np.array_equal(sick[k], healthy[k], equal_nan=True)]
    assert changed, f"{name} changed nothing"
    for key in changed:
        np.testing.assert_array_equal(sick[key][: at - 11], healthy[key][: at - 11], err_msg=key)


def test_ppo_base_has_a_critic_and_grpo_base_has_group_statistics() -> None:
    ppo, _, _ = base_series(Spec(100, algorithm="ppo"))
    grpo, _, _ = base_series(Spec(100))
    assert "critic/vf_loss" in ppo and "group/zero_std/share" not in ppo
    assert "group/zero_std/share" in grpo and "critic/vf_loss" not in grpo
    assert np.isfinite(grpo["val-core/math/acc/mean@1"]).sum() == 10
