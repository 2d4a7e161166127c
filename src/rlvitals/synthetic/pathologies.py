"""Known failure modes, injected at a known step into a healthy simulated run.

The scenario suite measures every check against these: does it find the pathology it
targets (detection rate), how far is its onset from the injection step (onset error), and
does it stay quiet on healthy controls of every length, noise level and entropy scale
(false-alarm rate). Each pathology names the checks expected to catch it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .simulate import Scenario, simulate

Series = dict[str, np.ndarray]
Inject = Callable[[Series, np.ndarray, int, np.random.Generator], None]


@dataclass(frozen=True)
class Pathology:
    name: str
    targets: tuple[str, ...]
    inject: Inject
    algorithm: str = "grpo"
    #: the pathology needs this many steps after its onset to be visible
    tail: int = 40


@dataclass(frozen=True)
class Spec:
    """One simulated run: length, seed, noise multiplier, entropy scale, algorithm, pathology."""

    steps: int = 300
    seed: int = 0
    noise: float = 1.0
    entropy0: float = 0.55
    algorithm: str = "grpo"
    pathology: str | None = None
    at: int | None = None


def _after(t: np.ndarray, at: int) -> np.ndarray:
    return (t >= at).astype(float)


def _ramp(t: np.ndarray, at: int, width: float) -> np.ndarray:
    return np.clip((t - at) / width, 0.0, 1.0)


def base_series(spec: Spec) -> tuple[Series, np.ndarray, np.random.Generator]:
    """A healthy run with every metric the checks read: the simulator's veRL GRPO metrics plus
    an actor loss, group statistics (as derived from rollouts), a second validation source with
    maj@4/mean@4, and for PPO the critic."""
    sc = Scenario(steps=spec.steps, seed=spec.seed, entropy0=spec.entropy0, collapse_at=None,
                  grad_spike_at=None, noise=spec.noise)
    s = simulate(sc)
    rng = np.random.default_rng(spec.seed + 10_000)
    n = spec.steps
    t = np.arange(1, n + 1, dtype=float)

    def noise(scale: float) -> np.ndarray:
        out: np.ndarray = rng.normal(0.0, scale * spec.noise, n)
        return out

    s["actor/loss"] = s["actor/pg_loss"] + 0.001 * s["actor/kl_loss"]
    score = s["critic/score/mean"]
    s["group/zero_std/share"] = np.clip(0.18 + 0.1 * (score - 0.45) + noise(0.02), 0, 1)
    s["group/reward_std/mean"] = np.clip(0.32 - 0.05 * (score - 0.45) + noise(0.01), 0, None)
    val = s[f"val-core/{sc.data_source}/acc/mean@1"]
    logged = ~np.isnan(val)
    math_src = np.full(n, np.nan)
    math_src[logged] = np.round(0.3 + 0.1 * (val[logged] - 0.55) / 0.2 + noise(0.005)[logged], 4)
    s["val-core/math/acc/mean@1"] = math_src
    mean4, maj4 = np.full(n, np.nan), np.full(n, np.nan)
    mean4[logged] = val[logged] + noise(0.004)[logged]
    maj4[logged] = mean4[logged] + 0.06 + noise(0.004)[logged]
    s[f"val-core/{sc.data_source}/acc/mean@4"] = mean4
    s[f"val-core/{sc.data_source}/acc/maj@4/mean"] = maj4
    if spec.algorithm == "ppo":
        s["critic/vf_loss"] = 0.2 * np.exp(-t / 80) + 0.03 + np.abs(noise(0.005))
        s["critic/vf_explained_var"] = np.clip(0.2 + 0.5 * (1 - np.exp(-t / 60)) + noise(0.02), -1, 1)
        s["critic/grad_norm"] = 5.0 * np.exp(noise(0.1))
        s["critic/values/mean"] = score + noise(0.02)
        s["timing_s/update_critic"] = 30 + noise(1.0)
        s["actor/reward_kl_penalty"] = s.pop("actor/kl_loss")
        s.pop("group/zero_std/share")
        s.pop("group/reward_std/mean")
    return s, t, rng


# -- injections --------------------------------------------------------------------------------

def _grad_spike(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    s["actor/grad_norm"][at - 1] *= 14.0


def _grad_spikes(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    for k in (0, 7, 15, 22):
        if at - 1 + k < len(t):
            s["actor/grad_norm"][at - 1 + k] *= 15.0


def _grad_explosion(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    s["actor/grad_norm"] *= np.exp(_ramp(t, at, 30) * np.log(40.0))


def _grad_vanishing(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    s["actor/grad_norm"] *= np.exp(-_ramp(t, at, 15) * np.log(1e4))


def _kl_spike(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    """An update too large for a few steps: the KL spikes and, as in real runs, the gradient norm and the clip
    fraction of that update jump with it (a KL spike alone, with nothing else moving, is read as isolated)."""
    for key in ("actor/ppo_kl", "actor/kl_loss", "actor/reward_kl_penalty"):
        if key in s:
            s[key][at - 1 : at + 2] *= 8.0
    for key, factor in (("actor/grad_norm", 6.0), ("actor/pg_clipfrac", 4.0)):
        if key in s:
            s[key][at - 1 : at + 2] *= factor


def _kl_jump(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    key = "actor/kl_loss" if "actor/kl_loss" in s else "actor/reward_kl_penalty"
    s[key] += _after(t, at) * 6.0 * float(np.median(s[key][: at - 1]))


def _kl_runaway(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    key = "actor/kl_loss" if "actor/kl_loss" in s else "actor/reward_kl_penalty"
    s[key] *= np.exp(np.clip(t - at, 0, None) / 12.0)


def _clipfrac_high(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    s["actor/pg_clipfrac"] += _after(t, at) * 0.4


def _clipfrac_burst(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    s["actor/pg_clipfrac"][at - 1 : at + 3] += 0.45


def _loss_jump(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    s["actor/loss"] += _after(t, at) * 12.0 * float(np.std(s["actor/loss"][: at - 1]))


def _pg_loss_climb(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    s["actor/pg_loss"] += np.clip(t - at, 0, None) * 0.01


def _lr_zero(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    s["actor/lr"][at - 1 :] = 0.0


def _nan(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    # NaN in these arrays means "not logged", so the divergence is logged as inf
    s["actor/pg_loss"][at - 1 :] = np.inf
    s["actor/grad_norm"][at - 1] = np.inf


def _entropy_collapse(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    r = _ramp(t, at, 8)
    s["actor/entropy"] *= 1 - 0.8 * r
    s["actor/pg_clipfrac"] += 0.3 * r
    s["response_length/mean"] *= 1 - 0.4 * r


def _reward_crash(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    _entropy_collapse(s, t, at, rng)
    s["critic/score/mean"] -= 0.35 * _ramp(t, at + 5, 10)
    s["critic/rewards/mean"] = s["critic/score/mean"].copy()


def _entropy_surge(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    s["actor/entropy"] *= 1 + 2.0 * _ramp(t, at, 4)


def _entropy_clip_joint(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    r = _ramp(t, at, 40)
    s["actor/entropy"] *= 1 - 0.6 * r
    s["actor/pg_clipfrac"] += 0.35 * r


def _response_clip(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    s["response_length/clip_ratio"] += 0.25 * _ramp(t, at, 10)
    s["response_length/max"] = np.where(t >= at, 1024.0, s["response_length/max"])


def _length_hacking(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    r = _ramp(t, at, 60)
    s["response_length/mean"] *= 1 - 0.6 * r
    s["critic/score/mean"] += 0.2 * r
    s["critic/rewards/mean"] = s["critic/score/mean"].copy()


def _aborted(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    s["response/aborted_ratio"] += 0.2 * _ramp(t, at, 5)


def _zero_variance(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    s["group/zero_std/share"] += (0.85 - s["group/zero_std/share"]) * _ramp(t, at, 20)


def _reward_std_collapse(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    s["group/reward_std/mean"] *= 1 - 0.9 * _ramp(t, at, 15)


def _val_stall(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    for key in [k for k in s if k.startswith("val-core/")]:
        v = s[key]
        logged = ~np.isnan(v)
        first_after = np.flatnonzero(logged & (t >= at))
        if len(first_after):
            level = v[first_after[0]]
            v[logged & (t >= at)] = level - 0.002 * (t[logged & (t >= at)] - at) / 10


def _ood_gap(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    v = s["val-core/math/acc/mean@1"]
    logged = ~np.isnan(v) & (t >= at)
    v[logged] -= 0.0015 * (t[logged] - at)


def _no_self_consistency(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    for key in [k for k in s if k.endswith("maj@4/mean")]:
        mean_key = key.replace("maj@4/mean", "mean@4")
        late = t >= at
        s[key][late] = s[mean_key][late] - 0.01


def _throughput_drop(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    slow = 1 + 0.8 * _after(t, at)
    s["timing_s/gen"] *= slow
    s["timing_s/step"] = s["timing_s/step"] + s["timing_s/gen"] * (1 - 1 / slow)
    s["perf/time_per_step"] = s["timing_s/step"].copy()
    s["perf/throughput"] /= 1 + 0.45 * _after(t, at)


def _mfu_low(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    s["perf/mfu/actor"] = np.where(t >= at, s["perf/mfu/actor"] * 0.45, s["perf/mfu/actor"])


def _seqlen_imbalance(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    extra = 0.45 * s["global_seqlen/mean"] * _after(t, at)
    s["global_seqlen/minmax_diff"] += extra
    s["global_seqlen/max"] += extra / 2
    s["global_seqlen/min"] -= extra / 2
    # very long samples no partition can split: the ranks stay uneven after balance_batch
    s["global_seqlen/balanced_max"] += extra / 3
    s["global_seqlen/balanced_min"] -= extra / 3


def _oom_risk(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    r = _ramp(t, at, 60)
    s["response_length/max"] = s["response_length/max"] + (1024.0 - s["response_length/max"]) * r
    s["global_seqlen/max"] *= 1 + 0.8 * r


def _critic_lag(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    s["critic/vf_loss"] = np.where(t >= at, s["critic/vf_loss"][at - 2] * (1 + 0.01 * (t - at)), s["critic/vf_loss"])


def _explained_var(s: Series, t: np.ndarray, at: int, rng: np.random.Generator) -> None:
    s["critic/vf_explained_var"] -= 1.0 * _ramp(t, at, 10)


PATHOLOGIES: dict[str, Pathology] = {p.name: p for p in (
    Pathology("grad_spike", ("grad_norm_spike",), _grad_spike),
    Pathology("grad_spikes", ("grad_norm_spike",), _grad_spikes),
    Pathology("grad_explosion", ("grad_norm_explosion",), _grad_explosion),
    Pathology("grad_vanishing", ("grad_norm_vanishing",), _grad_vanishing),
    Pathology("kl_spike", ("kl_jump",), _kl_spike),
    Pathology("kl_jump", ("kl_jump", "kl_shape"), _kl_jump),
    Pathology("kl_runaway", ("kl_shape", "kl_jump"), _kl_runaway),
    Pathology("clipfrac_high", ("clipfrac_high",), _clipfrac_high),
    Pathology("clipfrac_burst", ("clipfrac_high",), _clipfrac_burst),
    Pathology("loss_jump", ("loss_jump",), _loss_jump),
    Pathology("pg_loss_climb", ("pg_loss_climb",), _pg_loss_climb),
    Pathology("lr_zero", ("lr_schedule",), _lr_zero),
    Pathology("nan", ("nan_inf",), _nan),
    Pathology("entropy_collapse", ("entropy_collapse",), _entropy_collapse),
    Pathology("reward_crash", ("reward_collapse",), _reward_crash),
    Pathology("entropy_surge", ("entropy_surge",), _entropy_surge),
    Pathology("entropy_clip_joint", ("entropy_clip_joint",), _entropy_clip_joint),
    Pathology("response_clip", ("response_clip_high",), _response_clip),
    Pathology("length_hacking", ("length_reward_hacking",), _length_hacking),
    Pathology("aborted", ("aborted_high",), _aborted),
    Pathology("zero_variance", ("zero_variance_groups",), _zero_variance),
    Pathology("reward_std_collapse", ("reward_std_collapse",), _reward_std_collapse),
    Pathology("val_stall", ("val_reward_divergence", "val_progress"), _val_stall, tail=80),
    Pathology("ood_gap", ("ood_gap",), _ood_gap, tail=80),
    Pathology("no_self_consistency", ("self_consistency",), _no_self_consistency),
    Pathology("throughput_drop", ("throughput_drop",), _throughput_drop),
    Pathology("mfu_low", ("mfu_low",), _mfu_low),
    Pathology("seqlen_imbalance", ("seqlen_imbalance",), _seqlen_imbalance),
    Pathology("oom_risk", ("oom_risk",), _oom_risk, tail=60),
    Pathology("critic_lag", ("critic_lag",), _critic_lag, algorithm="ppo", tail=80),
    Pathology("explained_variance", ("explained_variance",), _explained_var, algorithm="ppo"),
)}


def scenario(spec: Spec) -> Series:
    """The series of one simulated run, with its pathology (if any) injected at ``spec.at``."""
    s, t, rng = base_series(spec)
    if spec.pathology is not None:
        path = PATHOLOGIES[spec.pathology]
        at = spec.at if spec.at is not None else max(30, spec.steps // 2)
        path.inject(s, t, at, rng)
    return s
