"""L1 training-stability checks: each triggered at a known step, quiet on a healthy control,
unchanged at a very different scale, and read correctly on the real public logs."""

from __future__ import annotations

import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from runs import corpus_run, finding, make_run

import rlvitals
from rlvitals.checks import Outcome, RunView, load_checks, stability
from rlvitals.checks import kl as kl_checks
from rlvitals.diagnosis import diagnose
from rlvitals.synthetic.pathologies import Spec, scenario
from rlvitals.synthetic.simulate import Scenario, simulate

CHECKS = {c.id: c for c in load_checks()}
MINE = (*stability.FUNCTIONS, *kl_checks.FUNCTIONS)
Arrays = dict[str, np.ndarray]


def grpo(steps: int = 300, seed: int = 0) -> Arrays:
    """A healthy simulated veRL GRPO run."""
    return simulate(Scenario(steps=steps, seed=seed, collapse_at=None, grad_spike_at=None))


def ppo(steps: int = 300, seed: int = 0) -> Arrays:
    """A healthy simulated PPO run with a critic (vf_loss, explained variance, in-reward KL)."""
    return scenario(Spec(steps, seed, algorithm="ppo"))


def outcomes(series: Mapping[str, np.ndarray], cid: str, *, config: Mapping[str, Any] | None = None,
             framework: str = "verl", **params: Any) -> list[Outcome]:
    check = CHECKS[cid]
    run = make_run(series, config=config, framework=framework)
    return check.fn(RunView(run), {**check.params, **params})


def one(series: Mapping[str, np.ndarray], cid: str, metric: str | None = None, **kw: Any) -> Outcome:
    """The single outcome of ``cid`` (for ``metric`` when the check reads several)."""
    found = [o for o in outcomes(series, cid, **kw) if metric is None or metric in o.metrics]
    assert len(found) == 1, [(o.status, o.template, o.metrics) for o in found]
    return found[0]


def message(o: Outcome, lang: str, cid: str = "lr_schedule") -> str:
    """The words of ``o`` in ``lang``, filled as the diagnosis fills them."""
    check = CHECKS[cid]
    return check.text(lang).messages[o.template].format(**{**check.params, **o.values})


def scaled(series: Arrays, keys: tuple[str, ...], factor: float) -> Arrays:
    return {k: v * factor if k in keys else v for k, v in series.items()}


def assert_same_at_scales(series: Arrays, cid: str, keys: tuple[str, ...], metric: str | None = None,
                          factors: tuple[float, ...] = (1e-3, 1e3), **kw: Any) -> Outcome:
    """The outcome at scale 1, and the same status, template and onset at 1e-3 and 1e3."""
    base = one(series, cid, metric, **kw)
    for factor in factors:
        other = one(scaled(series, keys, factor), cid, metric, **kw)
        assert (other.status, other.template, other.onset_step) == (base.status, base.template, base.onset_step), factor
    return base


def near(step: int | None, expected: int, tol: int = 3) -> bool:
    return step is not None and abs(step - expected) <= tol


def noise(n: int, sd: float, seed: int = 0) -> np.ndarray:
    out: np.ndarray = np.random.default_rng(seed).normal(0.0, sd, n)
    return out


# -- grad_norm_spike --------------------------------------------------------------------------

def test_grad_spikes_fail_only_when_clustered() -> None:
    s = grpo()
    for at in (230, 245, 260):
        s["actor/grad_norm"][at - 1] *= 15
    o = one(s, "grad_norm_spike", "actor/grad_norm")
    assert o.status == "fail" and o.onset_step == 230
    # the same cluster with 170 steps of a settled gradient after it: unstable then, not now — a warning
    s = grpo()
    for at in (100, 115, 130):
        s["actor/grad_norm"][at - 1] *= 15
    o = one(s, "grad_norm_spike", "actor/grad_norm")
    assert (o.status, o.template, o.onset_step, o.values["since"], o.values["after"]) == \
        ("warn", "warn_settled", 100, 130, 170)
    spread = grpo()
    for at in (30, 80, 130, 180, 230, 280):
        spread["actor/grad_norm"][at - 1] *= 15
    o = assert_same_at_scales(spread, "grad_norm_spike", ("actor/grad_norm",), "actor/grad_norm")
    assert o.status == "warn" and o.onset_step == 30 and o.values["count"] == 6  # 2 % of 300 steps: repeated
    assert o.points == (30, 80, 130, 180, 230, 280)
    lone = grpo()
    lone["actor/grad_norm"][149] *= 15  # one spike in 300 steps: a note (the healthy corpus runs: 1-7 in 250-1,119)
    o = one(lone, "grad_norm_spike", "actor/grad_norm")
    assert o.status == "note" and o.template == "note"
    assert one(grpo(), "grad_norm_spike", "actor/grad_norm").status == "ok"


# -- loss_jump --------------------------------------------------------------------------------

def loss_series(n: int = 300, seed: int = 0) -> np.ndarray:
    """A positive loss falling from 1.0 to 0.4 with 3 % noise."""
    t = np.arange(n)
    return (0.4 + 0.6 * np.exp(-t / 80.0)) * (1 + noise(n, 0.03, seed))


def test_loss_level_shift_fails_at_its_step() -> None:
    x = loss_series()
    x[150:] *= 2.0
    o = assert_same_at_scales({"actor/loss": x}, "loss_jump", ("actor/loss",))
    assert o.status == "fail" and o.template == "shift" and o.onset_step == 151
    # the baseline is the median of the 20 steps before the jump (the loss was still falling)
    assert o.evidence["baseline"] == pytest.approx(0.5, rel=0.1) and o.evidence["peak"] > 0.85


def test_loss_spike_warns_and_comes_back() -> None:
    x = loss_series()
    x[199] *= 3.0
    o = assert_same_at_scales({"actor/loss": x}, "loss_jump", ("actor/loss",))
    assert (o.status, o.template, o.onset_step) == ("warn", "spike", 200)
    assert o.values["after"] == pytest.approx(0.41, rel=0.1)


def test_loss_jump_reads_dpo_and_sft_losses_and_signed_losses() -> None:
    x = loss_series(120)
    x[80:] += 0.5
    dpo = one({"loss/dpo": x, "rewards/chosen": np.linspace(0, 1, 120)}, "loss_jump", framework="trl")
    assert dpo.metrics == ("loss/dpo",) and dpo.status == "fail" and near(dpo.onset_step, 81, 1)
    # a PPO actor loss around zero: no ratio test, the jump is read in robust sd
    pg = noise(300, 0.02, 4)
    pg[220:223] += 0.5
    o = one({"actor/loss": pg}, "loss_jump")
    assert o.status == "warn" and o.onset_step == 221


def test_loss_jump_quiet_on_healthy_and_rounded_losses() -> None:
    for seed in range(5):
        assert one({"sft/loss": loss_series(seed=seed)}, "loss_jump").status == "ok"
    # a TRL GRPO loss printed with four decimals, 0.0000–0.0003: one-step blips are rounding
    x = np.round(np.abs(noise(250, 0.0001, 5)), 4)
    x[100] = 0.0006
    assert one({"actor/loss": x}, "loss_jump").status == "ok"


def saturating_dpo_loss(seed: int = 0) -> np.ndarray:
    """A notebook DPO run's per-step loss over 3 epochs of 40 steps on the same pairs: the first epoch falls from
    ln 2 to ~0.55; from the second the loss sits near 0 (~0.02, then ~0.003), except the 12 % of batches that
    hold a pair not yet separated (0.1-0.45)."""
    r = np.random.default_rng(seed)
    t = np.arange(1, 121)
    x = np.where(t <= 40, 0.69 - 0.004 * t + r.normal(0, 0.04, 120),
                 np.exp(r.normal(np.log(np.where(t <= 80, 0.02, 0.003)), 0.8, 120)))
    hard = (t > 40) & (r.random(120) < 0.12)
    x[hard] = r.uniform(0.1, 0.45, int(hard.sum()))
    return np.clip(x, 0, None)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_dpo_loss_fallen_near_0_does_not_jump(seed: int) -> None:
    # the batches that spike from a saturated preference loss come back at once: no jump (they were 2-4
    # "jumps" before, a warning); pref_accuracy_saturated reports the saturation
    o = one({"loss/dpo": saturating_dpo_loss(seed)}, "loss_jump", framework="trl")
    assert (o.status, o.template) == ("ok", "ok_saturated") and o.values["count"] >= 1
    assert "a falling loss is not a jump" in CHECKS["loss_jump"].en.messages["ok_saturated"]


def test_from_near_0_a_rise_that_lasts_is_still_a_jump_and_other_losses_keep_their_spikes() -> None:
    x = saturating_dpo_loss()
    x[100:] += 0.5  # back above its start for the last 20 steps: the preferences were lost
    o = one({"loss/dpo": x}, "loss_jump", framework="trl")
    assert o.status == "fail" and o.template in ("shift", "shifts") and 96 <= o.onset_step <= 101
    # an SFT loss near 0 is not a preference objective: its spikes are jumps as before
    assert one({"sft/loss": saturating_dpo_loss()}, "loss_jump").status in ("warn", "fail")


# -- pg_loss_climb ----------------------------------------------------------------------------

def test_pg_loss_climb_found_at_its_start() -> None:
    s = grpo()
    t = np.arange(1, 301)
    s["actor/pg_loss"] = s["actor/pg_loss"] + np.clip(t - 150, 0, None) * 0.01
    o = assert_same_at_scales(s, "pg_loss_climb", ("actor/pg_loss",))
    assert o.status == "fail" and near(o.onset_step, 150, 6)
    assert o.values["to"] > 1.0 and o.evidence["rise_sd"] > 20


def test_pg_loss_climb_that_levels_off_warns() -> None:
    s = grpo()
    t = np.arange(1, 301)
    s["actor/pg_loss"] = s["actor/pg_loss"] + np.clip((t - 100) * 0.004, 0, 0.24)
    o = one(s, "pg_loss_climb")
    assert o.status == "warn" and near(o.onset_step, 100, 8)


def test_pg_loss_noise_and_slow_drift_are_not_a_climb() -> None:
    for seed in range(6):
        assert one(grpo(seed=seed), "pg_loss_climb").status == "ok"
    s = grpo()
    s["actor/pg_loss"] = noise(300, 0.1, 9) + np.linspace(0, 0.05, 300)  # 0.5 sd over the run
    assert one(s, "pg_loss_climb").status == "ok"


# -- grad_norm_explosion / grad_norm_vanishing ------------------------------------------------

def ramp(n: int, at: int, width: float) -> np.ndarray:
    t = np.arange(1, n + 1)
    out: np.ndarray = np.clip((t - at) / width, 0.0, 1.0)
    return out


def test_grad_norm_explosion() -> None:
    s = grpo()
    s["actor/grad_norm"] = s["actor/grad_norm"] * np.exp(ramp(300, 150, 30) * np.log(40.0))
    o = assert_same_at_scales(s, "grad_norm_explosion", ("actor/grad_norm",), "actor/grad_norm")
    assert o.status == "fail" and near(o.onset_step, 150, 6) and o.evidence["ratio"] > 30
    mild = grpo()
    mild["actor/grad_norm"] = mild["actor/grad_norm"] * np.exp(ramp(300, 150, 30) * np.log(6.0))
    o = one(mild, "grad_norm_explosion", "actor/grad_norm")
    assert o.status == "warn" and near(o.onset_step, 150, 8)
    assert one(grpo(), "grad_norm_explosion", "actor/grad_norm").status == "ok"


def test_grad_norm_vanishing() -> None:
    s = grpo()
    s["actor/grad_norm"] = s["actor/grad_norm"] * np.exp(-ramp(300, 150, 15) * np.log(1e4))
    o = assert_same_at_scales(s, "grad_norm_vanishing", ("actor/grad_norm",), "actor/grad_norm")
    assert o.status == "fail" and near(o.onset_step, 150, 6)
    back = grpo()
    back["actor/grad_norm"][149:189] *= 1e-3  # 40 steps of near-zero gradient, then back
    o = one(back, "grad_norm_vanishing", "actor/grad_norm")
    assert o.status == "warn" and near(o.onset_step, 150, 3)
    assert one(grpo(), "grad_norm_vanishing", "actor/grad_norm").status == "ok"
    # a critic whose gradient starts huge and settles is not vanishing
    p = ppo()
    p["critic/grad_norm"][:5] *= np.array([200.0, 150.0, 40.0, 10.0, 3.0])
    assert one(p, "grad_norm_vanishing", "critic/grad_norm").status == "ok"


# -- kl_jump ----------------------------------------------------------------------------------

def kl_run(steps: int = 300, level: float = 0.02, seed: int = 0) -> Arrays:
    """A KL to the reference rising from ~0 to ``level`` over the first 40 steps, 15 % noise."""
    t = np.arange(steps)
    kl = level * (1 - np.exp(-t / 12.0)) * np.exp(noise(steps, 0.15, seed))
    return {"actor/kl_loss": kl, "critic/score/mean": np.linspace(0.2, 0.7, steps) + noise(steps, 0.02, seed)}


def test_a_transient_kl_spike_is_reported() -> None:
    # the peer that called a 0.9 spike "well behaved": we must not
    s = kl_run()
    s["actor/kl_loss"][149:151] = 0.9
    o = one(s, "kl_jump")
    # reported at its step; alone (nothing else jumped with it) a note, the sharp turn the run shrugged off
    assert (o.status, o.template, o.onset_step, o.points) == ("note", "spike_isolated", 150, (150,))
    moved = dict(s, **{"actor/grad_norm": np.where(np.arange(300) == 149, 4.0, 0.5) * np.exp(noise(300, 0.05))})
    assert (one(moved, "kl_jump").status, one(moved, "kl_jump").template) == ("warn", "spike")
    assert o.evidence["baseline"] == pytest.approx(0.02, rel=0.15) and o.evidence["peak"] == pytest.approx(0.9)
    assert o.evidence["after"] == pytest.approx(0.02, rel=0.2)
    # a per-token KL to the reference is held to the band: the same spike a thousand times smaller
    # (to 0.0009 nats/token) is a note, not a warning
    small = one(scaled(s, ("actor/kl_loss",), 1e-3), "kl_jump")
    assert (small.status, small.template, small.points) == ("note", "note", (150,))
    # the per-update KL (old vs new policy) has no band: read against its own level at any scale (alone, a note;
    # with the gradient norm jumping at its step, a warning)
    for factor in (1e-3, 1.0, 1e3):
        ppo_kl = one({"actor/ppo_kl": s["actor/kl_loss"] * factor}, "kl_jump")
        assert (ppo_kl.status, ppo_kl.template, ppo_kl.onset_step) == ("note", "spike_isolated", 150)
        ppo_kl = one({"actor/ppo_kl": s["actor/kl_loss"] * factor, "actor/grad_norm": moved["actor/grad_norm"]},
                     "kl_jump")
        assert (ppo_kl.status, ppo_kl.template, ppo_kl.onset_step) == ("warn", "spike", 150)


def test_the_seed_example_jump_from_002_to_015() -> None:
    s = kl_run()
    s["actor/kl_loss"][180:] *= 7.5
    o = one(s, "kl_jump")
    assert o.status == "warn" and o.template in ("shift", "shifts") and o.onset_step == 181 and o.points == ()
    assert o.values["before"] == pytest.approx(0.02, rel=0.15) and o.values["peak"] > 0.1
    # the same shift inside the band (0.002 → 0.015 nats/token) is a note
    assert one(scaled(s, ("actor/kl_loss",), 0.1), "kl_jump").status == "note"


def test_kl_spikes_that_come_back_warn_and_a_tenfold_jump_that_stays_fails() -> None:
    s = kl_run()
    for at in (120, 170, 230):
        s["actor/kl_loss"][at - 1] *= 20.0
    o = one(s, "kl_jump")
    # transient: shown at their steps, and never a failure (a real healthy GRPO run spikes to 2.6 and back);
    # three in 300 steps with nothing else moving are isolated (a note), with the clip fraction surging a warning
    assert o.status == "note" and o.template == "spike_isolated" and o.onset_step == 120
    assert o.points == (120, 170, 230)
    clip = np.full(300, 0.01) * np.exp(noise(300, 0.05, 4))
    clip[169] = 0.2
    o = one(dict(s, **{"actor/pg_clipfrac": clip}), "kl_jump")
    assert o.status == "warn" and o.template == "spikes" and o.points == (120, 170, 230)
    stays = kl_run()
    stays["actor/kl_loss"][180:] *= 12.0  # 0.02 → 0.24 for good
    assert one(stays, "kl_jump").status == "fail"


def test_the_first_steps_of_a_tail_are_not_the_runs_first_steps() -> None:
    # watch reads sudden checks on the last steps of a long run: a KL that moved at the start of that tail
    # did not move "in the first steps"
    s = kl_run(600)
    s["actor/kl_loss"][445:] *= 10.0
    full = one(s, "kl_jump")
    assert full.status == "fail" and full.onset_step == 446 and full.template != "early"
    tail = make_run(s).tail(160)  # steps 441-600: the jump is its sixth step
    found = CHECKS["kl_jump"].fn(RunView(tail), CHECKS["kl_jump"].params)
    assert [o.template for o in found] != ["early"] and all(o.template != "early" for o in found)


def test_kl_noise_rounding_and_departure_from_zero_are_no_jump() -> None:
    for seed in range(6):
        assert one(kl_run(seed=seed), "kl_jump").status == "ok"
    # a 1e-5-level KL: its own noise only
    assert one(scaled(kl_run(level=1e-5), ("actor/kl_loss",), 1.0), "kl_jump").status == "ok"
    # veRL Dec-2024 console: ppo_kl printed as 0.000 / -0.000 / 0.001
    q = np.round(noise(300, 0.0007, 3), 3)
    o = one({"actor/ppo_kl": q}, "kl_jump")
    # too coarse to read: not judged, never ok
    assert (o.status, o.template, o.values["quantum"]) == ("skipped", "quantised", 0.001)
    assert one({"actor/ppo_kl": np.zeros(50)}, "kl_jump").template == "zero"
    # the KL leaving zero (2e-5 → 0.02 over the first 40 steps) with wiggles is not a jump …
    t = np.arange(300)
    s = kl_run()
    s["actor/kl_loss"] = 0.02 * np.minimum(1.0, 1e-3 * np.exp(t / 6.0)) * np.exp(noise(300, 0.15))
    s["actor/kl_loss"][[28, 31, 34, 37]] *= 6.0
    assert one(s, "kl_jump").status == "ok"
    # … but the same wiggle once the KL has settled is
    s["actor/kl_loss"][200] *= 6.0
    assert one(s, "kl_jump").onset_step == 201


def test_kl_jump_reads_ppo_kl_and_the_reference_kl_separately() -> None:
    s = grpo()
    s["actor/ppo_kl"][199:202] *= 8.0
    found = {o.metrics[0]: o for o in outcomes(s, "kl_jump")}
    assert found["actor/ppo_kl"].status in ("note", "warn") and found["actor/ppo_kl"].onset_step == 200
    assert found["actor/kl_loss"].status == "ok"


# -- kl_band ----------------------------------------------------------------------------------

def ppo_with_kl(kl: np.ndarray, reward: np.ndarray | None = None) -> Arrays:
    s = ppo(len(kl))
    s["actor/reward_kl_penalty"] = kl
    if reward is not None:
        s["critic/rewards/mean"] = s["critic/score/mean"] = reward
    return s


def test_kl_above_the_ppo_band_and_rising_warns() -> None:
    t = np.arange(300)
    o = one(ppo_with_kl(0.02 + 0.0008 * t + noise(300, 0.003)), "kl_band")  # 0.02 → 0.26
    assert (o.status, o.template) == ("warn", "warn_rising") and near(o.onset_step, 101, 8)
    kl = 0.02 + 0.4 * (1 - np.exp(-t / 40.0))  # past 0.3 (far) at step ~55, level at 0.42 from ~150
    falling = ppo_with_kl(kl, reward=np.where(t < 100, 0.5, 0.5 - 0.002 * (t - 100)) + noise(300, 0.01))
    falling = {k: v for k, v in falling.items() if not k.startswith("val-")}  # the reward is the outcome
    far = one(falling, "kl_band")
    assert (far.status, far.template) == ("warn", "warn_far") and near(far.onset_step, 50, 3)
    # the same KL while the outcome holds: it barely constrains the policy, and nothing is seen lost — a note
    held = one({**falling, "critic/score/mean": 0.5 + noise(300, 0.01)}, "kl_band")
    assert (held.status, held.template) == ("note", "far_level") and held.values["outcome"] == "critic/score/mean"
    # far out from the first updates is a policy broken at once, whatever its outcome shows afterwards
    broke = one({**falling, "actor/reward_kl_penalty": np.where(t < 2, 0.0, 0.5) + np.abs(noise(300, 0.01)),
                 "critic/score/mean": 0.5 + noise(300, 0.01)}, "kl_band")
    assert (broke.status, broke.template, broke.onset_step) == ("warn", "warn_far", 3)


def test_kl_far_above_the_band_late_in_the_run_warns() -> None:
    # constructed on the shape of the Gemma-2-2B LoRA GRPO collapse in the corpus: ~0.15 for most of the
    # run, a dip below the band, then far above it — the stretch that counts is not the first one
    t = np.arange(300)
    kl = np.where(t < 180, 0.15 * np.minimum(1.0, t / 20.0), np.where(t < 200, 0.05, 0.15 + 0.01 * (t - 200)))
    kl = kl + np.abs(noise(300, 0.005))
    o = one(ppo_with_kl(kl), "kl_band")
    assert (o.status, o.template) == ("warn", "warn_far") and near(o.onset_step, 216, 4)  # where it passed 0.3


def test_kl_above_the_band_but_level_is_noted_not_warned() -> None:
    t = np.arange(300)
    o = one(ppo_with_kl(0.16 * (1 - np.exp(-t / 30.0)) + noise(300, 0.002)), "kl_band")
    assert (o.status, o.template) == ("ok", "ok_high") and o.values["level"] == pytest.approx(0.16, rel=0.05)
    assert one(ppo_with_kl(0.05 * (1 - np.exp(-t / 30.0)) + 0.001), "kl_band").template == "ok"


def test_kl_below_the_band_warns_only_with_a_flat_reward() -> None:
    kl = 0.003 + np.abs(noise(300, 0.0005))
    flat = 0.5 + noise(300, 0.02, 2)
    rising = np.linspace(0.3, 0.7, 300) + noise(300, 0.02, 2)
    for factor in (1e-3, 1.0, 1e3):  # the reward's scale does not matter
        o = one(ppo_with_kl(kl, flat * factor), "kl_band")
        assert (o.status, o.template) == ("warn", "warn_low")
        # a KL that never left ~0 has not moved from the first step: dated there (not after the first tenth,
        # which is only left out of the share), over the whole run
        assert (o.onset_step, o.span) == (1, (1, 300))
        assert one(ppo_with_kl(kl, rising * factor), "kl_band").template == "ok_low"
    # a reward whose last fifth sits above its first, but within its own noise, is not said "did not improve"
    # (the Unsloth Llama-3.1-8B run's first 51 steps read 0.0558 -> 0.427 on a 0/1-like reward)
    noisy = np.linspace(0.3, 0.45, 300) + noise(300, 0.6, 3)
    o = one(ppo_with_kl(kl, noisy), "kl_band")
    assert (o.status, o.template) == ("warn", "warn_low_noisy") and o.values["r_last"] > o.values["r_first"]


def test_kl_band_holds_for_every_algorithm_that_logs_kl_to_the_reference() -> None:
    t = np.arange(300)
    s = grpo()
    s["actor/kl_loss"] = 0.02 + 0.4 * (1 - np.exp(-t / 40.0))
    # a GRPO run too: far above the band, levelled off, and the simulated run's validation rises
    assert (one(s, "kl_band").status, one(s, "kl_band").template) == ("note", "far_level")
    s = {k: v for k, v in s.items() if not k.startswith("val-")}
    s["critic/score/mean"] = np.where(t < 100, 0.5, 0.5 - 0.002 * (t - 100))
    assert (one(s, "kl_band").status, one(s, "kl_band").template) == ("warn", "warn_far")


def test_kl_several_nats_per_token_fails_in_any_run() -> None:
    # constructed (a KL that climbs to 3 nats/token and stays); real: the Qwen3-4B veRL run below
    t = np.arange(300)
    for kl in (0.02 + 3.0 * np.clip((t - 100) / 50.0, 0, 1), np.full(300, 3.0)):
        o = one(ppo_with_kl(kl + noise(300, 0.01)), "kl_band")
        assert (o.status, o.template) == ("fail", "fail_ceiling")
    o = one(ppo_with_kl(0.02 + 3.0 * np.clip((t - 100) / 50.0, 0, 1)), "kl_band")
    assert near(o.onset_step, 135, 6)  # where its level crossed 2 nats/token
    f = finding(diagnose(make_run(ppo_with_kl(np.full(300, 3.0)))), "kl_band")
    assert "no RLHF run is healthy" in f.message["en"] and f.advice["en"].startswith("Several nats per token")


def test_a_sequence_summed_kl_is_judged_per_token_when_the_length_is_logged() -> None:
    # constructed (no real log here has TRL's objective/kl beside a mean response length): 200-token
    # responses, a per-token KL of 0.02 → 0.06 is 4 → 12 nats per sequence: inside the band per token
    t = np.arange(300)
    length = np.full(300, 200.0) + noise(300, 5.0)
    per_token = 0.02 + 0.04 * t / 300
    o = one({"actor/seq_kl": per_token * length, "response_length/mean": length}, "kl_band")
    assert (o.status, o.template) == ("ok", "ok") and o.metrics == ("actor/seq_kl", "response_length/mean")
    far = one({"actor/seq_kl": (0.02 + 0.6 * t / 300) * length, "response_length/mean": length}, "kl_band")
    assert (far.status, far.template) == ("warn", "warn_far") and "÷" in far.values["metric"]


def test_a_kl_far_from_zero_at_the_first_step_is_to_a_different_model() -> None:
    # on-policy distillation: the 'reference' is a teacher, so the KL starts at ~0.5 and the band does not apply
    s = grpo()
    s["actor/kl_loss"] = 0.54 - 0.1 * np.arange(300) / 300 + noise(300, 0.01)
    o = one(s, "kl_band")
    assert (o.status, o.template) == ("ok", "ok_offset") and o.values["first"] == pytest.approx(0.54, abs=0.02)
    moved = dict(s)
    moved["actor/kl_loss"] = np.where(np.arange(300) >= 200, 1.8, 0.54) + noise(300, 0.01)
    m = one(moved, "kl_band")
    assert (m.status, m.template) == ("warn", "warn_moved") and near(m.onset_step, 201, 2)
    # a log that starts later (a resume at step 101) cannot tell where the KL started: the band applies
    resumed = make_run({"actor/kl_loss": s["actor/kl_loss"]}, steps=list(range(101, 401)))
    r = CHECKS["kl_band"].fn(RunView(resumed), CHECKS["kl_band"].params)
    assert (r[0].status, r[0].template) == ("warn", "warn_far")


# -- loss_trend ---------------------------------------------------------------------------------

def test_a_preference_loss_climbing_steadily() -> None:
    """Constructed (issue 37): a DPO loss climbing steadily 0.53 -> 1.07 over 300 steps (noise 0.02) passed every
    check (no jump). It ends above where it started: a failure dated at its low. One that fell to 0.30 and
    climbs back to ~0.50 (below its start) is a warning dated where the climb began."""
    t = np.arange(300)
    climbing = {"loss/dpo": np.linspace(0.53, 1.07, 300) + noise(300, 0.02, 1)}
    o = one(climbing, "loss_trend", framework="trl")
    assert (o.status, o.template, o.onset_step) == ("fail", "fail", 1)
    assert one(climbing, "loss_jump", framework="trl").status == "ok"  # no jump: this is the trend's to say
    en, zh = message(o, "en", "loss_trend"), message(o, "zh", "loss_trend")
    assert "has climbed steadily since step 1, from its lowest level 0.5" in en and "back above where it started" in en
    assert "从第 1 步起持续上升" in zh and "回到了起点" in zh
    back = {"loss/dpo": np.where(t < 150, 0.69 - 0.0026 * t, 0.30 + 0.0013 * (t - 150)) + noise(300, 0.01, 2)}
    o = one(back, "loss_trend", framework="trl")
    assert (o.status, o.template) == ("warn", "warn") and 140 <= o.onset_step <= 160
    assert o.values["end"] < o.values["start"]
    assert "the optimisation is going backwards on its own data" in message(o, "en", "loss_trend")
    assert "优化在自己的数据上倒退" in message(o, "zh", "loss_trend")


def test_a_falling_or_stepped_loss_is_no_climb_and_short_runs_are_not_judged() -> None:
    """Constructed controls: a DPO loss falling 0.69 -> 0.3 (healthy); one that steps up once at step 150 and
    stays (loss_jump's, not a steady climb); 20 values (not judged)."""
    t = np.arange(300)
    assert one({"loss/dpo": 0.69 - 0.0013 * t + noise(300, 0.02, 3)}, "loss_trend", framework="trl").status == "ok"
    stepped = {"loss/dpo": np.where(t < 150, 0.4, 0.8) + noise(300, 0.01, 4)}
    assert one(stepped, "loss_trend", framework="trl").status == "ok"
    o = one({"loss/dpo": np.linspace(0.5, 1.0, 20)}, "loss_trend", framework="trl")
    assert (o.status, o.template) == ("skipped", "short")
    assert "whether it trends is judged from 30 on" in message(o, "en", "loss_trend")
    assert "要从 30 个点起才判断" in message(o, "zh", "loss_trend")


def test_an_rl_loss_climb_is_read_through_its_parts() -> None:
    """Constructed veRL GRPO runs whose actor/loss climbs 0.53 -> 1.07: the policy term's mean is ~0 by
    construction (group-normalised advantages), so the climb is read through the parts — pg_loss climbing with
    it is pg_loss_climb's (skipped here, not said twice), a KL to the reference rising with it is the
    regulariser (ok), and no part logged cannot be judged."""
    g = grpo()
    climb = np.linspace(0.53, 1.07, 300) + noise(300, 0.02, 5)
    with_pg = {**g, "actor/loss": climb, "actor/pg_loss": climb - 0.5}
    o = one(with_pg, "loss_trend")
    assert (o.status, o.template, o.values["part"]) == ("skipped", "rl_policy", "actor/pg_loss")
    assert "read by pg_loss_climb" in message(o, "en", "loss_trend")
    assert "由 pg_loss_climb 判断" in message(o, "zh", "loss_trend")
    with_kl = {**g, "actor/loss": climb, "actor/kl_loss": np.linspace(0.001, 0.05, 300)}
    o = one(with_kl, "loss_trend")
    assert (o.status, o.template, o.values["part"]) == ("ok", "rl_kl", "actor/kl_loss")
    assert "an RL loss holds β·KL" in message(o, "en", "loss_trend")
    assert "RL 的 loss 包含 β·KL" in message(o, "zh", "loss_trend")
    bare = {k: v for k, v in g.items() if k not in ("actor/pg_loss", "actor/kl_loss")}
    o = one({**bare, "actor/loss": climb}, "loss_trend")
    assert (o.status, o.template) == ("skipped", "rl_unread")
    assert "so it is not judged" in message(o, "en", "loss_trend") and "所以不作判断" in message(o, "zh", "loss_trend")


def test_loss_trend_on_real_logs() -> None:
    """Real (corpus): TRL trainer_state.json histories. A 1,229-step SFT run (loss 0.996 -> 0.89) and a healthy
    DPO run (0.692 -> 0.523) do not climb; a GRPO run whose `loss` creeps 5.4e-05 -> 9.7e-05 while its KL to
    the reference rises is the KL term (ok), not a finding."""
    for run_id in ("trlstate__mistral7b-sft-ift-eft-fp16", "trlstate__mistral7b-dpo-selfreward-m2"):
        f = finding(diagnose(corpus_run(run_id)), "loss_trend")
        assert (f.status, f.template) == ("ok", "ok"), run_id
    f = finding(diagnose(corpus_run("trlstate__qwen25-1p5b-grpo-unalign-truncated")), "loss_trend")
    assert (f.status, f.template) == ("ok", "rl_kl")
    assert "actor/loss climbed from 5.43e-05 (step 1) to 9.73e-05 while actor/kl_loss rose" in f.message["en"]
    assert "actor/loss 从 5.43e-05（第 1 步）升到 9.73e-05，同时 actor/kl_loss 上升了" in f.message["zh"]


# -- ppo_kl_band -------------------------------------------------------------------------------

def test_ppo_kl_held_to_its_own_band() -> None:
    """Constructed (issue 37): a simulated veRL PPO run whose KL to the reference stays in its band, but whose
    per-update KL actor/ppo_kl sits at ~0.30 nats/token for all 300 steps. kl_band, which reads the reference
    KL, passes it; ppo_kl_band warns from step 1: each step moves the policy three times the band's top."""
    s = ppo()
    s["actor/ppo_kl"] = 0.30 + noise(300, 0.03, 4)
    assert one(s, "kl_band").status == "ok"  # the reference KL is fine: the band it reads is not the problem
    o = one(s, "ppo_kl_band")
    assert (o.status, o.template, o.onset_step, o.metrics) == ("warn", "warn", 1, ("actor/ppo_kl",))
    assert o.evidence["threshold"] == 0.1 and 0.25 < o.values["peak"] < 0.35
    en, zh = message(o, "en", "ppo_kl_band"), message(o, "zh", "ppo_kl_band")
    assert "has been above 0.1 nats/token from step 1 to step 300 (300 logged steps" in en
    assert "the updates have left PPO's trust region" in en
    assert "从第 1 步到第 300 步一直高于每 token 0.1 nat（300 个记录步" in zh and "更新已经离开了 PPO 的信任域" in zh
    # far out from step 151 (ratios far outside any clip range): a failure dated there
    s["actor/ppo_kl"] = np.where(np.arange(300) < 150, 0.003, 1.5) + noise(300, 0.001, 5)
    o = one(s, "ppo_kl_band")
    assert (o.status, o.template, o.onset_step) == ("fail", "fail", 151)
    assert "above 1 nat per token from step 151 to step 300" in message(o, "en", "ppo_kl_band")
    assert "从第 151 步到第 300 步一直高于每 token 1 nat" in message(o, "zh", "ppo_kl_band")
    # a burst of five steps is no sustained level (kl_jump reads it)
    s["actor/ppo_kl"] = np.where((np.arange(300) >= 100) & (np.arange(300) < 105), 0.5, 0.003)
    assert one(s, "ppo_kl_band").status == "ok"


def test_ppo_kl_band_on_real_healthy_ppo_runs(real: Path) -> None:
    """Real veRL PPO logs (tests/fixtures/real): the deepseek-7B GSM8K run logs actor/ppo_kl 0.000-0.001 with
    three decimals (several updates per batch): ok, in both languages. The gemma-2-2B run logs exactly 0 on every
    step: one update per batch, nothing to judge (skipped, never ok)."""
    d = rlvitals.diagnose(rlvitals.load(real / "verl__verl_training_log__ppo_run_deepseek7b_llm.log")[0])
    f = finding(d, "ppo_kl_band")
    assert f.status == "ok" and "stays below 0.1 nats/token" in f.message["en"]
    assert "一直低于每 token 0.1 nat" in f.message["zh"]
    gemma = "verl__verl-data__gemma-2-2b-it-ppo-bsz512_4-prompt1024-resp-512-0.640.log"
    f = finding(rlvitals.diagnose(rlvitals.load(real / gemma)[0]), "ppo_kl_band")
    assert f.status == "skipped" and "exactly 0 on every step" in f.message["en"]
    assert "在每一步都恰好为 0" in f.message["zh"]
    # a run that does not log it: not read at all
    assert outcomes({"actor/kl_loss": np.full(50, 0.02)}, "ppo_kl_band") == []


# -- kl_shape ---------------------------------------------------------------------------------

def test_runaway_kl_found_at_its_bend() -> None:
    s = kl_run()
    s["actor/kl_loss"] = s["actor/kl_loss"] * np.exp(np.clip(np.arange(300) - 150, 0, None) / 12.0)
    o = assert_same_at_scales(s, "kl_shape", ("actor/kl_loss",))
    assert (o.status, o.template) == ("fail", "runaway") and near(o.onset_step, 151, 10)
    mild = kl_run()
    mild["actor/kl_loss"] = mild["actor/kl_loss"] * np.exp(np.clip(np.arange(300) - 150, 0, None) / 80.0)
    o = one(mild, "kl_shape")
    assert (o.status, o.template) == ("warn", "runaway") and near(o.onset_step, 151, 25)


def test_a_kl_that_held_its_level_then_ran_away_is_dated_where_it_left_it() -> None:
    """The corpus's KL-in-reward run, in shape: a penalty measured against another model holds ~0.55 (it
    starts there), then runs away from step 32. The words do not call a first half that did not rise a "rise"
    (the fit of a hinge to the whole run dated it at 21)."""
    t = np.arange(60)
    kl = np.where(t < 31, 0.53, 0.53 * np.exp(np.minimum(t - 30, 6) * 0.23)) * np.exp(noise(60, 0.03, 1))
    o = one({"actor/reward_kl_penalty": kl, "critic/score/mean": np.full(60, -0.5) + noise(60, 0.02)}, "kl_shape")
    assert (o.status, o.template) == ("warn", "runaway_flat") and near(o.onset_step, 32, 1), o
    assert "held its level through the first half" in CHECKS["kl_shape"].en.messages["runaway_flat"]


def test_kl_falling_back_to_zero_warns() -> None:
    s = kl_run()
    s["actor/kl_loss"][200:] *= 0.05
    o = assert_same_at_scales(s, "kl_shape", ("actor/kl_loss",), factors=(1e3,))
    assert (o.status, o.template) == ("warn", "fallback") and near(o.onset_step, 201, 5)
    # per token, a KL whose peak never reached the band's bottom (0.01 nats) did not rise: no fall back either
    # (the MiniMind run's k1 KL wiggles between -0.002 and 0.001; a thousandth of this one is as small)
    assert one(scaled(s, ("actor/kl_loss",), 1e-3), "kl_shape").status == "ok"


def test_healthy_kl_shapes() -> None:
    t = np.arange(300)
    for kl in (0.001 + 0.0001 * t, 0.1 * np.sqrt(t / 300), 0.1 * (1 - np.exp(-t / 30.0))):
        s = {"actor/kl_loss": kl * np.exp(noise(300, 0.1, 7))}
        assert one(s, "kl_shape").status == "ok"
        assert one(scaled(s, ("actor/kl_loss",), 1e-3), "kl_shape").status == "ok"
    assert one({"actor/kl_loss": np.linspace(0, 0.1, 20)}, "kl_shape").template == "short"


# -- clip fraction ----------------------------------------------------------------------------

def test_clipfrac_sustained_above_03() -> None:
    s = grpo()
    s["actor/pg_clipfrac"][149:] += 0.4
    o = one(s, "clipfrac_high")
    assert o.status == "fail" and o.onset_step == 150 and o.evidence["value"] > 0.4
    short = grpo()
    short["actor/pg_clipfrac"][149:169] = 0.35
    o = one(short, "clipfrac_high")
    assert (o.status, o.onset_step, o.values["steps"]) == ("warn", 150, 20)


def test_a_four_step_clipfrac_burst_is_reported() -> None:
    s = grpo()
    s["actor/pg_clipfrac"][199:203] += 0.45
    o = one(s, "clipfrac_high")
    assert (o.status, o.template, o.onset_step, o.values["end_step"]) == ("warn", "burst", 200, 203)
    assert len(o.points) == 1 and 200 <= o.points[0] <= 203  # a point event, shown at its step
    two = grpo()
    two["actor/pg_clipfrac"][[99, 100, 101, 199, 200, 201]] += 0.45
    assert len(one(two, "clipfrac_high").points) == 2
    single = grpo()
    single["actor/pg_clipfrac"][199] = 0.5  # one step is not a burst
    assert one(single, "clipfrac_high").status == "ok"
    assert one(grpo(), "clipfrac_high").status == "ok"


#: veRL configs: one PPO epoch on one mini-batch (one update per batch), and four mini-batches
ONE_UPDATE = {"actor_rollout_ref.actor.ppo_epochs": 1, "data.train_batch_size": 256,
              "actor_rollout_ref.actor.ppo_mini_batch_size": 256}
FOUR_UPDATES = {"data.train_batch_size": 256, "actor_rollout_ref.actor.ppo_mini_batch_size": 64}


def test_clipfrac_near_zero_is_read_with_the_config_and_the_reward() -> None:
    s = grpo()
    s["actor/pg_clipfrac"] = np.round(np.abs(noise(300, 0.001)), 3)
    flat = dict(s)
    flat["critic/score/mean"] = flat["critic/rewards/mean"] = 0.6 + noise(300, 0.02, 8)
    # one update per batch: ~0 by construction, whatever the reward does
    for run in (s, flat):
        assert one(run, "clipfrac_low", config=ONE_UPDATE).template == "ok_one_update"
    # no config: it cannot tell, so it does not judge (never a warning)
    assert (one(flat, "clipfrac_low").status, one(flat, "clipfrac_low").template) == ("skipped", "no_config")
    # several updates per batch (veRL's default ppo_epochs 1 × four mini-batches)
    assert one(s, "clipfrac_low", config=FOUR_UPDATES).template == "ok_learning"  # the simulated reward rises
    for factor in (1e-3, 1.0, 1e3):
        scaled_flat = {**flat, "critic/score/mean": flat["critic/score/mean"] * factor,
                       "critic/rewards/mean": flat["critic/rewards/mean"] * factor}
        o = one(scaled_flat, "clipfrac_low", config=FOUR_UPDATES)
        assert (o.status, o.template) == ("note", "note") and o.evidence["updates_per_batch"] == 4
        assert o.onset_step == 1 and o.evidence["share_below"] == 1.0
    assert one(flat, "clipfrac_low", config={"num_iterations": 2}).status == "note"  # TRL GRPO μ = 2
    alone = {"actor/pg_clipfrac": s["actor/pg_clipfrac"]}
    assert one(alone, "clipfrac_low", config=FOUR_UPDATES).template == "ok_no_reward"
    assert one(grpo(), "clipfrac_low").template == "ok"


def test_clipfrac_lower() -> None:
    s = grpo()
    base = s["actor/pg_clipfrac_lower"]
    rising = dict(s)
    rising["actor/pg_clipfrac_lower"] = base * np.exp(ramp(300, 150, 60) * np.log(20.0))
    # a fraction of tokens: the rise is read on its own scale, the 0.01 level is absolute
    o = assert_same_at_scales(rising, "clipfrac_lower", ("actor/pg_clipfrac_lower",), factors=(1e-3, 0.1))
    assert (o.status, o.template) == ("warn", "warn_rising") and near(o.onset_step, 165, 15)
    high = dict(s)
    high["actor/pg_clipfrac_lower"] = base + 0.03 * (np.arange(300) >= 100)
    o = one(high, "clipfrac_lower")
    assert (o.status, o.template) == ("warn", "warn_high") and near(o.onset_step, 101, 3)
    o = one(s, "clipfrac_lower")
    assert o.status == "ok" and one(scaled(s, ("actor/pg_clipfrac_lower",), 1e-3), "clipfrac_lower").status == "ok"


# -- lr_schedule ------------------------------------------------------------------------------

def cosine(n: int = 300, warmup: int = 20, peak: float = 1e-6) -> np.ndarray:
    t = np.arange(n, dtype=float)
    decay = 0.5 * (1 + np.cos(np.pi * np.clip((t - warmup) / (n - warmup), 0, 1)))
    out: np.ndarray = np.where(t < warmup, peak * (t + 1) / warmup, peak * decay)
    return out


def lr_check(lr: np.ndarray, config: Mapping[str, Any] | None = None) -> Outcome:
    s = grpo(len(lr))
    s["actor/lr"] = lr
    return assert_same_at_scales(s, "lr_schedule", ("actor/lr",), "actor/lr", config=config)


def test_lr_sudden_zero_fails() -> None:
    lr = cosine()
    lr[150:] = 0.0
    o = lr_check(lr)
    assert (o.status, o.template, o.onset_step) == ("fail", "fail_zero", 151)
    assert o.values["zero_steps"] == 150 and o.evidence["before"] > 0.4e-6


def test_lr_constant_printed_as_1e06_dropping_to_zero() -> None:
    """Constructed: GRPO's most common rate, a constant 1e-06 (one significant digit, as veRL's console and
    wandb print it), dropping to 0 while the other metrics keep their full digits. It was skipped as "too few
    digits"; it is exact, and the drop is judged by how long the rate has been 0 at the end."""
    lr = np.full(300, 1e-6)
    lr[200:] = 0.0  # a third of the run at 0, to the last step: the run stopped learning
    o = lr_check(lr)
    assert (o.status, o.template, o.onset_step, o.values["zero_steps"]) == ("fail", "fail_zero", 201, 100)
    assert "to zero at step 201" in message(o, "en") and "第 201 步" in message(o, "zh")
    lr = np.full(300, 1e-6)
    lr[290:] = 0.0  # the last ten steps (3 % < fail_share): it just stopped, act now
    o = lr_check(lr)
    assert (o.status, o.template, o.onset_step) == ("warn", "warn_zero_end", 291)
    assert "still 0 at the last logged step 300 (10 logged steps, 3% of the run)" in message(o, "en")
    assert "到最后记录的第 300 步仍为 0（10 个记录步，占训练的 3%）" in message(o, "zh")
    lr = np.full(300, 1e-6)
    lr[100:110] = 0.0  # ten steps at 0, then the rate came back: lost steps, not a run that stopped
    o = lr_check(lr)
    assert (o.status, o.template, o.onset_step, o.values["back_step"]) == ("warn", "warn_zero_back", 101, 111)
    assert "came back to 1e-06 at step 111" in message(o, "en") and "在第 111 步回到 1e-06" in message(o, "zh")
    # the healthy control: the same constant, never dropping (no config: a common choice, not flagged)
    assert lr_check(np.full(300, 1e-6)).template == "ok_constant_unstated"
    # the edge: two values of the rate (0 and 1e-06) in a log whose other numbers carry no more digits than
    # that (all rounded to six decimals): a decay printed coarsely looks the same, so it is not judged
    six = {k: np.round(v, 6) for k, v in grpo().items()}
    six["actor/lr"] = np.r_[np.full(200, 1e-6), np.zeros(100)]
    assert one(six, "lr_schedule", "actor/lr").template == "coarse"


def test_lr_restarted_after_a_decay_is_a_restart() -> None:
    lr = cosine()
    lr[200:] = cosine(100, warmup=1)  # a scheduler restarted on resume
    o = lr_check(lr)
    assert (o.status, o.template, o.onset_step) == ("warn", "warn_restart", 201)


def test_lr_jump_on_a_constant_schedule() -> None:
    # constructed, as rlvitals demo does it: constant, then 5000× at step 30 for good
    demo = np.full(300, 0.02)
    demo[29:] = 100.0
    o = lr_check(demo)
    assert (o.status, o.template, o.onset_step) == ("fail", "fail_jump", 30)
    assert o.values["over_prior"] == pytest.approx(5000)
    tenfold = np.full(300, 1e-6)
    tenfold[150:] = 1e-5
    assert (lr_check(tenfold).status, lr_check(tenfold).template) == ("fail", "fail_jump")
    threefold = np.full(300, 1.25e-6)  # (1e-6 → 3e-6 would read as a rate printed with one digit: "coarse")
    threefold[150:] = 3.75e-6
    assert (lr_check(threefold).status, lr_check(threefold).template) == ("warn", "warn_jump")
    spike = np.full(300, 1e-6)
    spike[150] = 5e-6  # five times for one step
    s = lr_check(spike)
    assert (s.status, s.template, s.onset_step, s.points) == ("warn", "warn_spike", 151, (151,))
    # after a warm-up the same spike is found too; the warm-up itself is not a jump
    warm = cosine()
    warm[150] *= 5
    assert lr_check(warm).template == "warn_spike" and lr_check(cosine()).template == "ok"


def test_lr_constant_against_the_config() -> None:
    cfg = {"actor_rollout_ref.actor.optim.lr_warmup_steps_ratio": 0.1,
           "actor_rollout_ref.actor.optim.warmup_style": "cosine"}
    o = lr_check(np.full(300, 1e-6), cfg)
    assert (o.status, o.template) == ("warn", "warn_constant") and "lr_warmup_steps_ratio=0.1" in o.values["config"]
    trl = lr_check(np.full(300, 5e-6), {"lr_scheduler_type": "cosine"})
    assert trl.template == "warn_constant" and trl.values["wanted"] == "decay"
    flat_cfg = {"actor_rollout_ref.actor.optim.warmup_style": "constant",
                "critic.optim.warmup_style": "cosine"}  # the critic's schedule is not the actor's
    assert lr_check(np.full(300, 1e-6), flat_cfg).template == "ok_constant"
    assert lr_check(np.full(300, 1e-6)).template == "ok_constant_unstated"  # no config: not flagged


def test_healthy_and_rounded_learning_rates() -> None:
    assert lr_check(cosine()).template == "ok"  # warm-up, cosine to zero at the very end
    decayed = cosine(300)
    decayed[280:] = 0.0  # the last steps of a schedule that reached zero smoothly
    decayed[279] = 1e-9
    assert lr_check(decayed).status == "ok"
    rounded = lr_check(np.zeros(300))  # '0.000' on every step of a 3-decimal log: not judged, never ok
    assert (rounded.status, rounded.template) == ("skipped", "rounded")
    # a decay from 6e-4 printed with three decimals (as every number of that console): 0.001 … then 0.000 is
    # rounding, not a drop
    console = {k: np.round(v, 3) for k, v in grpo().items()}
    console["actor/lr"] = np.round(np.linspace(6e-4, 3e-4, 300), 3)
    assert one(console, "lr_schedule", "actor/lr").template == "coarse"
    # ... and with no other metric to show the log's digits, the same rate cannot be told from a drop either
    assert one({"actor/lr": console["actor/lr"]}, "lr_schedule").template == "coarse"
    # a warm-up printed with six decimals climbs in stairs (0, 0, …, 1e-06, 2e-06): no jump
    stairs = np.round(np.minimum(1e-5, 1e-7 * np.arange(300)), 6)
    assert lr_check(stairs).template == "ok"


# -- critic_lag / explained_variance ----------------------------------------------------------

def test_critic_lag_reward_rising_value_loss_not_falling() -> None:
    s = ppo()
    t = np.arange(1, 301)
    s["critic/rewards/mean"] = s["critic/score/mean"] = 0.2 + 0.5 * t / 300 + noise(300, 0.02, 3)
    vf = s["critic/vf_loss"].copy()
    vf[149:] = vf[148] * (1 + 0.01 * (t[149:] - 150))
    s["critic/vf_loss"] = vf
    o = assert_same_at_scales(s, "critic_lag", ("critic/vf_loss", "critic/rewards/mean", "critic/score/mean"))
    assert o.status == "warn" and near(o.onset_step, 150, 12)
    assert o.evidence["vf_loss_to"] > o.evidence["vf_loss_from"] and o.evidence["reward_to"] > o.evidence["reward_from"]


def test_critic_that_keeps_up_is_ok() -> None:
    for seed in range(4):
        assert one(ppo(seed=seed), "critic_lag").status == "ok"


def test_explained_variance_negative() -> None:
    s = ppo()
    s["critic/vf_explained_var"] = s["critic/vf_explained_var"] - ramp(300, 150, 10)
    o = assert_same_at_scales(s, "explained_variance", ("critic/vf_explained_var",))
    assert o.status == "fail" and near(o.onset_step, 157, 4) and o.evidence["value"] < -0.2
    dip = ppo()
    dip["critic/vf_explained_var"][99:124] = -0.2
    o = one(dip, "explained_variance")
    assert (o.status, o.onset_step, o.values["steps"]) == ("warn", 100, 25)
    start = ppo()
    start["critic/vf_explained_var"][:5] = -0.6  # an untrained critic on the first steps
    assert one(start, "explained_variance").status == "ok"


# -- every template, both languages ------------------------------------------------------------

def template_runs() -> list[tuple[str, Arrays, dict[str, Any]]]:
    """Runs that between them reach every message template of the L1 checks."""
    runs: list[tuple[str, Arrays, dict[str, Any]]] = []
    t = np.arange(300)

    def add(cid: str, s: Arrays, **kw: Any) -> None:
        runs.append((cid, s, kw))

    g = grpo()
    add("grad_norm_spike", g)
    s = grpo()
    s["actor/grad_norm"][99] *= 15
    add("grad_norm_spike", s)
    s = grpo()
    s["actor/grad_norm"][[29, 79, 129, 179, 229, 279]] *= 15
    add("grad_norm_spike", s)
    s = grpo()
    s["actor/grad_norm"][[99, 109, 119]] *= 15  # a cluster the gradient then settled from
    add("grad_norm_spike", s)
    s = grpo()
    s["actor/grad_norm"][[249, 259, 269]] *= 15  # a cluster near the end: not settled
    add("grad_norm_spike", s)
    s = grpo()  # one spike that moved the policy: its KL jumped at the same step
    s["actor/grad_norm"][99] *= 15
    s["actor/ppo_kl"][99] *= 8
    add("grad_norm_spike", s)
    add("nan_inf", {"actor/pg_loss!nan": np.where(t == 50, np.nan, 0.1), "actor/entropy": np.ones(300)})
    add("nan_inf", g)
    for inj in ("", "spike", "spikes", "shift", "shifts", "signed"):
        x = loss_series()
        if inj.startswith("spike"):
            x[[120, 200] if inj == "spikes" else [120]] *= 4.0
        elif inj.startswith("shift"):
            x[150:] *= 2.0
            if inj == "shifts":
                x[250] *= 4.0
        add("loss_jump", {"actor/loss": x})
    add("loss_jump", {"loss/dpo": saturating_dpo_loss()}, framework="trl")
    n = 100
    dpo = {"rewards/margins": np.linspace(0.0, 1.0, n), "rewards/chosen": np.linspace(0.0, 0.5, n)}
    add("loss_flat", {**dpo, "loss/dpo": np.linspace(0.693, 0.3, n)})
    add("loss_flat", {**dpo, "loss/dpo": np.full(10, 0.693)})
    add("loss_flat", {**dpo, "loss/dpo": np.full(n, 0.6931)})
    add("loss_flat", {**dpo, "loss/dpo": 0.3 + 0.002 * np.sin(np.arange(n))})
    for cid in ("pg_loss_climb",):
        add(cid, g)
        for cap in (0.3, None):
            s = grpo()
            s["actor/pg_loss"] = s["actor/pg_loss"] + np.clip((t - 150) * 0.01, 0, cap)
            add(cid, s)
    for cid, sign in (("grad_norm_explosion", 1), ("grad_norm_vanishing", -1)):
        add(cid, g)
        add(cid, {"actor/grad_norm": np.r_[np.zeros(200), np.ones(100)]})
        for end in (300, 200):
            s = grpo()
            s["actor/grad_norm"][140:end] *= 10.0 ** (sign * (3 if end == 300 else 0.8 if sign > 0 else 2))
            add(cid, s)
    k = kl_run()
    add("kl_jump", k)
    add("kl_jump", {"actor/ppo_kl": np.zeros(50)})
    add("kl_jump", {"actor/ppo_kl": np.round(noise(300, 0.0007, 3), 3)})
    for inj in ("spike", "spikes", "shift", "shifts", "fail"):
        s = kl_run()
        if inj.startswith("spike") or inj == "fail":
            at = {"fail": [150, 220, 260], "spikes": [150, 220]}.get(inj, [150])
            s["actor/kl_loss"][at] *= 20
            add("kl_jump", dict(s))  # alone: isolated spikes
            # with the gradient norm jumping at the same steps: they moved the update, not isolated
            s["actor/grad_norm"] = np.where(np.isin(t, at), 5.0, 0.5) * np.exp(noise(300, 0.05, 7))
        else:
            s["actor/kl_loss"][150:] *= 7.5
            if inj == "shifts":
                s["actor/kl_loss"][250] *= 10
        add("kl_jump", s)
    for kl, reward in ((0.05 * (1 - np.exp(-t / 30.0)) + 0.001, None),
                       (0.16 * (1 - np.exp(-t / 30.0)), None), (0.02 + 0.0008 * t, None),
                       (0.02 + 0.4 * (1 - np.exp(-t / 40.0)), None),
                       (np.full(300, 0.003), 0.5 + noise(300, 0.02)),
                       (np.full(300, 0.003), np.linspace(0.3, 0.7, 300)),
                       (np.full(300, 0.003), np.linspace(0.3, 0.45, 300) + noise(300, 0.6, 3))):
        add("kl_band", ppo_with_kl(kl, reward))
    far_falling = ppo_with_kl(0.02 + 0.4 * (1 - np.exp(-t / 40.0)), np.where(t < 100, 0.5, 0.5 - 0.002 * (t - 100)))
    add("kl_band", {k: v for k, v in far_falling.items() if not k.startswith("val-")})
    add("kl_band", {"actor/reward_kl_penalty": np.full(300, 0.003), "critic/vf_loss": np.ones(300)})
    add("kl_band", g)
    for per_update in (np.full(300, 0.3), np.full(300, 1.5), np.zeros(300), np.full(300, 0.001)):
        add("ppo_kl_band", {**g, "actor/ppo_kl": per_update})
    climb = np.linspace(0.53, 1.07, 300) + noise(300, 0.02, 5)
    back = np.where(t < 150, 0.69 - 0.0026 * t, 0.30 + 0.0013 * (t - 150)) + noise(300, 0.01, 2)
    for loss in (climb, back, 0.69 - 0.0013 * t, climb[:20]):
        add("loss_trend", {"loss/dpo": loss})
    bare = {k: v for k, v in g.items() if k not in ("actor/pg_loss", "actor/kl_loss")}
    for extra in ({"actor/pg_loss": climb - 0.5}, {"actor/kl_loss": np.linspace(0.001, 0.05, 300)}):
        add("loss_trend", {**bare, "actor/loss": climb, **extra})
    add("loss_trend", {**bare, "actor/loss": climb})
    flat_mismatch = 0.002 + noise(300, 0.0002, 7)
    add("rollout_mismatch", {**g, "rollout_corr/kl": flat_mismatch})
    add("rollout_mismatch", {**g, "rollout_corr/kl": flat_mismatch + 0.01 * t / 300})
    add("rollout_mismatch", {**g, "rollout_corr/kl": flat_mismatch + 0.03 * (t >= 150)})
    # staleness (current vs old policy, from the rollouts' per-token log-probs) is judged apart and named as such
    add("rollout_mismatch", {**g, "token/staleness_logp_abs_diff": 10 * flat_mismatch})
    add("rollout_mismatch", {**g, "token/staleness_logp_abs_diff": 10 * (flat_mismatch + 0.03 * (t >= 150))})
    add("kl_shape", k)
    add("kl_shape", {"actor/kl_loss": np.linspace(0, 0.1, 20)})
    for factor in (1 / 12.0, 1 / 80.0):
        add("kl_shape", {"actor/kl_loss": k["actor/kl_loss"] * np.exp(np.clip(t - 150, 0, None) * factor)})
    add("kl_shape", {"actor/kl_loss": k["actor/kl_loss"] * np.where(t >= 200, 0.05, 1.0)})
    held = np.where(t < 200, 0.5, 0.5 * np.exp(np.minimum(t - 199, 30) * 0.1)) * np.exp(noise(300, 0.03, 2))
    add("kl_shape", {"actor/reward_kl_penalty": held, "critic/score/mean": np.full(300, -0.5) + noise(300, 0.02)})
    for cid in ("clipfrac_high", "clipfrac_low", "clipfrac_lower"):
        add(cid, g)
    for start, stop, plus in ((149, 300, 0.4), (149, 169, 0.35), (199, 203, 0.45)):
        s = grpo()
        s["actor/pg_clipfrac"][start:stop] += plus
        add("clipfrac_high", s)
    low = grpo()
    low["actor/pg_clipfrac"] = np.abs(noise(300, 0.001))
    add("clipfrac_low", low)
    add("clipfrac_low", {"actor/pg_clipfrac": low["actor/pg_clipfrac"]})
    flat = 0.6 + noise(300, 0.02)
    add("clipfrac_low", {**low, "critic/score/mean": flat, "critic/rewards/mean": flat})
    for lower in (g["actor/pg_clipfrac_lower"] * np.exp(ramp(300, 150, 60) * np.log(20.0)),
                  g["actor/pg_clipfrac_lower"] + 0.03 * (t >= 100)):
        add("clipfrac_lower", {**g, "actor/pg_clipfrac_lower": lower})
    restart = cosine()
    restart[200:] = cosine(100, warmup=1)
    zero, zero_end, zero_back = cosine(), np.full(300, 1e-6), np.full(300, 1e-6)
    zero[150:], zero_end[290:], zero_back[100:110] = 0, 0, 0
    for lr, cfg in ((cosine(), {}), (np.full(300, 1e-6), {}), (np.zeros(300), {}), (zero, {}), (restart, {}),
                    (zero_end, {}), (zero_back, {}),
                    (np.full(300, 1e-6), {"actor_rollout_ref.actor.optim.lr_warmup_steps_ratio": 0.1})):
        add("lr_schedule", {**g, "actor/lr": lr}, config=cfg)
    add("lr_schedule", {"actor/lr": np.round(np.linspace(6e-4, 3e-4, 300), 3)})  # no digits beside it: coarse
    for cid in ("pg_loss_climb", "grad_norm_explosion", "grad_norm_vanishing"):  # too short to read
        add(cid, {"actor/pg_loss": noise(20, 0.02), "actor/grad_norm": np.ones(12)})
    add("critic_lag", {"critic/vf_loss": np.ones(20), "critic/score/mean": np.linspace(0, 1, 20)})
    p = ppo()
    add("critic_lag", p)
    add("explained_variance", p)
    lag = ppo()
    lag["critic/rewards/mean"] = lag["critic/score/mean"] = 0.2 + 0.5 * t / 300 + noise(300, 0.02, 3)
    vf = lag["critic/vf_loss"]
    lag["critic/vf_loss"] = np.where(t >= 149, vf[148] * (1 + 0.01 * (t - 149)), vf)
    add("critic_lag", lag)
    climb = ppo()
    climb["critic/rewards/mean"] = climb["critic/score/mean"] = 0.6 + noise(300, 0.02, 3)
    climb["critic/vf_loss"] = 0.05 * np.exp(t / 100.0) + np.abs(noise(300, 0.002))
    add("critic_lag", climb)
    for ev in (p["critic/vf_explained_var"] - ramp(300, 150, 10), np.where((t >= 99) & (t < 124), -0.2, 0.6)):
        add("explained_variance", {**p, "critic/vf_explained_var": ev})
    runs += new_template_runs(g)
    return runs


def new_template_runs(g: Arrays) -> list[tuple[str, Arrays, dict[str, Any]]]:
    """Runs for the templates of the first-steps, band, zero-gradient, loss-scaler, burst, catch-up,
    update-count and schedule readings (all constructed)."""
    t = np.arange(300)
    runs: list[tuple[str, Arrays, dict[str, Any]]] = []

    def add(cid: str, s: Arrays, **kw: Any) -> None:
        runs.append((cid, s, kw))

    add("kl_jump", {**g, "actor/kl_loss": np.r_[[0.83, 0.85, 1.3, 2.0, 2.5, 4.4, 7.8, 13.0], np.full(292, 16.8)]})
    small = kl_run()
    small["actor/kl_loss"] = small["actor/kl_loss"] * 1e-3
    small["actor/kl_loss"][149] *= 40
    add("kl_jump", small)
    for kl in (np.full(300, 3.0), np.full(300, 0.54), np.where(t >= 200, 1.8, 0.54), np.full(20, 0.003)):
        add("kl_band", ppo_with_kl(kl + noise(len(kl), 0.005)))
    for seq in (1.0 + noise(300, 0.05), np.where(t >= 150, 8.0, 1.0) + noise(300, 0.05), np.linspace(0, 10, 300)):
        add("kl_band", {"actor/seq_kl": seq})
    add("kl_shape", {"actor/kl_loss": 1e-4 + 0.05 * (t / 300.0) ** 4})
    add("grad_norm_vanishing", {"actor/grad_norm": np.r_[np.ones(20), np.zeros(70), np.ones(210)]})
    low = grpo()
    low["actor/grad_norm"][140:] *= 0.01
    add("grad_norm_vanishing", low)
    zeros = np.zeros(50)
    add("grad_norm_zero", g)
    add("grad_norm_zero", {"actor/grad_norm": zeros})
    add("grad_norm_zero", {"actor/grad_norm": zeros, "loss/dpo": np.full(50, np.log(2.0)), "rewards/margins": zeros})
    add("grad_norm_zero", {"actor/grad_norm": zeros, "group/zero_std/share": np.ones(50)})
    add("grad_norm_zero", {"actor/grad_norm": zeros, "actor/loss": zeros})
    add("nan_inf", {"actor/grad_norm!nan": np.where(t == 50, np.nan, 1.0), "actor/loss": np.ones(300)})
    add("loss_jump", {**g, "actor/loss": loss_series()})  # a GRPO run: its loss is read for lasting shifts only
    burst = grpo()
    burst["actor/pg_loss"] = burst["actor/pg_loss"] + np.where((t >= 140) & (t < 200), (t - 140) * 0.01, 0.0)
    add("pg_loss_climb", burst)
    caught = ppo()
    caught["critic/rewards/mean"] = caught["critic/score/mean"] = 0.2 + 0.5 * t / 300 + noise(300, 0.02, 3)
    vf = caught["critic/vf_loss"]
    caught["critic/vf_loss"] = np.where((t >= 100) & (t < 220), vf[99] * (1 + 0.01 * (t - 100)),
                                        np.where(t >= 220, vf[99] * 0.1, vf))
    add("critic_lag", caught)
    clip = {**grpo(), "actor/pg_clipfrac": np.abs(noise(300, 0.001))}
    flat = 0.6 + noise(300, 0.02)
    add("clipfrac_low", clip, config=ONE_UPDATE)
    add("clipfrac_low", {**clip, "critic/score/mean": flat, "critic/rewards/mean": flat})
    add("clipfrac_low", {**clip, "critic/score/mean": flat, "critic/rewards/mean": flat}, config=FOUR_UPDATES)
    add("clipfrac_low", clip, config=FOUR_UPDATES)
    add("clipfrac_low", {"actor/pg_clipfrac": clip["actor/pg_clipfrac"]}, config=FOUR_UPDATES)
    demo, spike, three = np.full(300, 0.02), np.full(300, 1e-6), np.full(300, 1.25e-6)
    demo[29:], spike[150], three[150:] = 100.0, 5e-6, 3.75e-6
    for lr in (demo, spike, three):
        add("lr_schedule", {**g, "actor/lr": lr})
    add("lr_schedule", {**g, "actor/lr": np.full(300, 1e-6)},
        config={"actor_rollout_ref.actor.optim.warmup_style": "constant"})
    return runs


def test_every_template_in_both_languages_is_reached_and_filled() -> None:
    reached: dict[str, set[str]] = {cid: set() for cid in MINE}
    statuses: dict[str, set[str]] = {cid: set() for cid in MINE}
    fmt = string.Formatter()
    for cid, series, kw in template_runs():
        check = CHECKS[cid]
        for out in outcomes(series, cid, **kw):
            reached[cid].add(out.template)
            statuses[cid].add(out.status)
            values = {**check.params, **out.values}
            # the outcome's own template, and the generic ones diagnosis uses when a config caps
            # a failure at warn (and that name the status)
            generic = {"warn", "fail"} if out.status == "fail" else set()
            names = {out.template} | (generic & set(check.en.messages))
            for lang in ("en", "zh"):
                for name in names:
                    text = fmt.format(check.text(lang).messages[name], **values)  # KeyError on a missing value
                    assert "{" not in text and "}" not in text, (cid, name, text)
    for cid in MINE:
        check = CHECKS[cid]
        assert set(check.en.messages) == set(check.zh.messages), cid
        specific = set(check.en.messages) - {"warn", "fail"}
        assert specific <= reached[cid], (cid, specific - reached[cid])
        generic = set(check.en.messages) & {"warn", "fail"}
        assert generic <= reached[cid] | statuses[cid], (cid, generic)


def test_no_advice_tells_a_run_its_learning_rate_is_too_small() -> None:
    # the clip fraction, the KL and the gradient cannot tell a small rate from a converged policy or
    # a large rate held back by the KL penalty: no advice of these checks presumes the rate is small
    for cid in MINE:
        check = CHECKS[cid]
        for text in (check.en.advice, *check.en.advices.values()):
            low = text.lower()
            for claim in ("learning rate is too small", "learning rate may be too small", "raise the learning rate",
                          "raise it, or"):
                assert claim not in low, (cid, claim)


def test_findings_render_without_placeholders() -> None:
    s = grpo()
    s["actor/kl_loss"][149:151] = 0.9
    s["actor/pg_clipfrac"][199:203] += 0.45
    s["actor/lr"][250:] = 0.0
    d = diagnose(make_run(s))
    assert finding(d, "clipfrac_high").status == "warn" and finding(d, "lr_schedule").status == "fail"
    kl = [f for f in d.findings if f.check == "kl_jump" and "actor/kl_loss" in f.metrics]
    assert kl[0].status == "note" and kl[0].onset_step == 150 and "第 150 步" in kl[0].message["zh"]
    for f in d.findings:
        if f.check in MINE:
            for lang in ("en", "zh"):
                assert "{" not in f.message[lang] and f.title[lang], (f.check, f.message[lang])
                assert f.status == "skipped" or f.advice[lang]


# -- real logs ---------------------------------------------------------------------------------

UNHEALTHY: tuple[str, ...] = ()  # the corpus labels none of the shared real logs broken at L1


def real_logs(real: Path) -> list[Path]:
    return sorted(p for p in real.iterdir() if p.is_file() and not p.name.endswith((".txt", ".md")))


def mine(d: Any, cid: str, metric: str | None = None) -> list[Any]:
    return [f for f in d.findings if f.check == cid and (metric is None or metric in f.metrics)]


def test_no_l1_failure_on_the_healthy_real_logs(real: Path) -> None:
    for path in real_logs(real):
        if any(name in path.name for name in UNHEALTHY):
            continue
        d = diagnose(rlvitals.load(path)[0])
        bad = [(f.check, f.message["en"]) for f in d.findings if f.check in MINE and f.status == "fail"]
        assert not bad, (path.name, bad)


def test_real_kl_spikes_to_26_are_a_kl_jump_from_step_111(real: Path) -> None:
    (path,) = [p for p in real_logs(real) if "Advanced_Llama3_2_3B" in p.name]
    d = diagnose(rlvitals.load(path)[0])
    (kl,) = mine(d, "kl_jump", "actor/kl_loss")
    # one-step spikes that come back (2.64 at 111 → 0.048 the next step), six in 350 steps, nothing but TRL's
    # loss (β·KL) jumping with them: isolated, a note shown at their steps on this healthy run (its corpus label)
    assert kl.status == "note" and kl.template == "spike_isolated" and kl.onset_step == 111
    assert kl.points[:2] == (111, 130)
    assert kl.evidence["peak"] == pytest.approx(2.6355, rel=1e-3) and kl.evidence["baseline"] < 0.03
    assert 111 in kl.evidence["jump_steps"] and 306 in kl.evidence["jump_steps"]
    (loss,) = mine(d, "loss_jump")  # TRL's GRPO loss is β·KL: its spikes are the KL's, left to kl_jump
    assert loss.status == "ok" and "left to kl_jump" in loss.message["en"]
    assert finding(d, "kl_shape").status == "ok"  # the level itself settles near 0.1


def test_real_kl_growing_to_several_nats_is_read(real: Path) -> None:
    (path,) = [p for p in real_logs(real) if "gpt_oss_20B" in p.name]
    d = diagnose(rlvitals.load(path)[0])
    # a very noisy KL (0.01–1 from step to step) whose level keeps climbing: it first bursts to
    # 2.3–3.6 at steps 56–66, seven to twelve times its recent level, then climbs again after ~240
    (kl,) = mine(d, "kl_jump", "actor/kl_loss")
    assert kl.status == "warn" and kl.onset_step == 56 and kl.evidence["peak"] > 2.0
    assert max(kl.evidence["peaks"]) == pytest.approx(3.6217, rel=1e-3)
    shape = finding(d, "kl_shape")
    assert shape.status in ("warn", "fail") and 200 <= shape.onset_step <= 280
    assert shape.evidence["last"] > 1.0 and shape.evidence["growth"] > 3


def test_what_the_healthy_real_logs_get(real: Path) -> None:
    def load(pattern: str) -> Any:
        (path,) = [p for p in real_logs(real) if p.match(pattern)]
        return diagnose(rlvitals.load(path)[0])

    ppo_deepseek = load("*ppo_run_deepseek7b*")
    assert finding(ppo_deepseek, "kl_band").message["en"].startswith("actor/reward_kl_penalty has been above 0.1")
    assert finding(ppo_deepseek, "explained_variance").status == "ok"  # negative only on the first steps
    assert finding(ppo_deepseek, "critic_lag").status == "ok"
    assert {f.status for f in mine(ppo_deepseek, "lr_schedule")} == {"skipped"}  # printed as 0.000: not judged
    assert "rounded to 0" in mine(ppo_deepseek, "lr_schedule")[0].message["en"]
    (ppo_kl,) = mine(ppo_deepseek, "kl_jump", "actor/ppo_kl")
    assert "resolution of 0.001" in ppo_kl.message["en"]
    grpo_deepseek = load("*grpo_run_deepseek7b*")
    assert "rose from" in finding(grpo_deepseek, "clipfrac_low").message["en"]  # ~0 clipfrac, learning
    # 7 spikes in 1,119 steps, never 3 within 50: isolated events of a healthy run (its corpus label), a note
    assert mine(grpo_deepseek, "grad_norm_spike")[0].status == "note"
    sft = load("*gemma-2-2b-it-sft*")
    assert finding(sft, "lr_schedule").status == "ok" and finding(sft, "loss_jump").status == "ok"
    qwen = load("*Qwen2.5-0.5B-bsz256*")
    assert {f.message["en"].split(" is constant")[0] for f in mine(qwen, "lr_schedule")} == {"actor/lr", "critic/lr"}


# ---------------------------------------------------------------- rollout_mismatch

@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_rollout_mismatch_rise_and_jump_at_any_scale(scale: float) -> None:
    t = np.arange(300)
    base = (0.002 + noise(300, 0.0002, 7)) * scale
    ok = finding(diagnose(make_run({**grpo(), "rollout_corr/kl": base})), "rollout_mismatch")
    assert ok.status == "ok", ok.message["en"]
    jump = finding(diagnose(make_run({**grpo(), "rollout_corr/kl": base + 0.03 * scale * (t >= 150)})),
                   "rollout_mismatch")
    assert jump.status == "fail" and abs(jump.onset_step - 150) <= 3 and "silently off-policy" in jump.message["en"]
    rise = finding(diagnose(make_run({**grpo(), "rollout_corr/kl": base + 0.01 * scale * t / 300})),
                   "rollout_mismatch")
    assert rise.status == "warn" and "drifting apart" in rise.message["en"]
    assert "正在变成 off-policy" in rise.message["zh"]


def test_rollout_mismatch_reads_every_framework_name() -> None:
    t = np.arange(300)
    for key in ("training/rollout_probs_diff_mean", "vllm_kl", "rollout_corr/logp_abs_diff_mean"):
        x = 0.002 + noise(300, 0.0002, 7) + 0.03 * (t >= 150)
        f = finding(diagnose(make_run({**grpo(), key: x})), "rollout_mismatch")
        assert f.status == "fail" and f.metrics, (key, f.message["en"])
    missing = finding(diagnose(make_run(grpo())), "rollout_mismatch")
    assert missing.status == "skipped" and "did not log" in missing.message["en"]
