"""rollout_mismatch (docs/reading-rules.md#rollout-mismatch) on what other frameworks log, and the engine–trainer
mismatch told apart from off-policy staleness where a rollout dump carries the per-token log-probs. No public
open-instruct or slime log with these keys was found: the logs and dumps here are constructed (said per test)."""

from __future__ import annotations

import numpy as np
import pytest
from runs import make_run

from rlvitals.diagnosis import diagnose
from rlvitals.rollout.analysis import analyze_rollouts, join_series
from rlvitals.run.run import Run
from rlvitals.synthetic.simulate import Scenario, simulate

STEPS = 80


def _grpo() -> dict[str, np.ndarray]:
    return simulate(Scenario(steps=STEPS, seed=0, collapse_at=None, grad_spike_at=None))


def _mine(run: Run) -> list:  # type: ignore[type-arg]
    return [f for f in diagnose(run).findings if f.check == "rollout_mismatch"]


@pytest.mark.parametrize("key", ["debug/vllm_vs_local_logprob_diff_mean", "debug/vllm_local_reverse_kl",
                                 "train/train_rollout_logprob_abs_diff", "train_rollout_logprob_abs_diff"])
def test_open_instruct_and_slime_names_are_judged_as_mismatch(key: str) -> None:
    """A constructed log under open-instruct's and slime's names: read as the canonical mismatch metrics."""
    t = np.arange(STEPS)
    x = 0.006 + np.random.default_rng(1).normal(0, 0.0005, STEPS) + 0.08 * (t >= 40)
    (f,) = _mine(make_run({**_grpo(), key: x}))
    assert f.status == "fail" and f.metrics[0].startswith("rollout_corr/"), f.message["en"]
    assert "rollout engine and the trainer" in f.message["en"]


def _dump(stale_rise: float, engine_jump: float) -> list[dict[str, object]]:
    """Constructed rollouts: 4 per step, 6 tokens each, with the old, rollout and current log-probs; the policy
    moves ``stale_rise`` times more by the end, the engine's noise grows ``engine_jump`` times at step 41."""
    rng, rows = np.random.default_rng(7), []
    for step in range(1, STEPS + 1):
        frac = step / STEPS
        for i in range(4):
            old = -rng.gamma(1.0, 0.7, size=6)
            engine = 0.01 * (engine_jump if step > STEPS // 2 else 1.0)
            stale = 0.05 * (1 + stale_rise * frac)
            rows.append({"step": step, "prompt": f"q{i // 2}", "response": "r", "score": float(i % 2),
                         "token_old_logprob": old.tolist(),
                         "token_rollout_logprob": (old + rng.normal(0, engine, 6)).tolist(),
                         "token_logprob": (old + rng.normal(0, stale, 6)).tolist()})
    return rows


def _joined(rows: list[dict[str, object]], run: Run) -> Run:
    """``run`` with the rollouts' token-scale series joined as ``diagnose --rollouts`` joins them."""
    series = analyze_rollouts(rows).series()
    return join_series(run, [series.select("step", *(c for c in series.columns if c.startswith("token/")))])


def _judged(rows: list[dict[str, object]]) -> dict[str, object]:
    return {f.metrics[0]: f for f in _mine(_joined(rows, make_run(_grpo())))}


def test_staleness_is_named_as_staleness_not_as_an_engine_mismatch() -> None:
    found = _judged(_dump(stale_rise=9.0, engine_jump=1.0))
    mis, stale = found["token/mismatch_logp_abs_diff"], found["token/staleness_logp_abs_diff"]
    assert mis.status == "ok" and "rollout engine and the trainer compute the same policy" in mis.message["en"]
    assert stale.status == "warn", stale.message["en"]
    assert "off-policy staleness" in stale.message["en"] and "not a rollout-engine mismatch" in stale.message["en"]
    assert "陈旧度" in stale.message["zh"] and "不是 rollout 引擎的不一致" in stale.message["zh"]
    assert "asynchronous lag" in stale.advice["en"]


def test_an_engine_mismatch_is_named_as_such_while_staleness_stays() -> None:
    found = _judged(_dump(stale_rise=0.0, engine_jump=30.0))
    mis, stale = found["token/mismatch_logp_abs_diff"], found["token/staleness_logp_abs_diff"]
    assert mis.status == "fail" and "no longer compute the same policy" in mis.message["en"], mis.message["en"]
    assert stale.status == "ok" and "off-policy staleness, not an engine mismatch" in stale.message["en"]


def test_a_logged_mismatch_comes_before_the_one_from_the_rollouts() -> None:
    t = np.arange(STEPS)
    logged = 0.002 + np.random.default_rng(2).normal(0, 0.0002, STEPS) + 0.03 * (t >= 40)
    run = _joined(_dump(0.0, 1.0), make_run({**_grpo(), "rollout_corr/kl": logged}))
    assert {f.metrics[0]: f.status for f in _mine(run)} == {"rollout_corr/kl": "fail",
                                                            "token/staleness_logp_abs_diff": "ok"}
