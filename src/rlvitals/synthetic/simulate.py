"""A small, deterministic simulator of a veRL GRPO run, written in veRL's own log formats.

It gives newcomers a real diagnosis without a GPU (``rlvitals inspect --example``), and
tests and benchmarks a run of any length. The curves follow the healthy shapes the reading rules
describe (docs/reading-rules.md#healthy-ranges): reward rising, entropy decaying smoothly, KL growing slowly, clip
fraction in its band — until optional injected pathologies (an entropy collapse with a clip-fraction surge
and shrinking answers, a one-step grad-norm spike) appear at known steps.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson


@dataclass(frozen=True)
class Scenario:
    """What to simulate. Steps where a pathology starts are ``None`` to leave it out."""

    steps: int = 300
    seed: int = 7
    entropy0: float = 0.55
    collapse_at: int | None = 180
    grad_spike_at: int | None = 95
    val_every: int = 10
    n_gpus: int = 8
    max_response_length: int = 1024
    data_source: str = "openai/gsm8k"
    noise: float = 1.0


#: the metrics veRL computes from float32 tensors (``torch.mean(...).item()``), whose logged values are
#: float32 numbers, and those it logs as whole numbers: so in the real veRL logs of the corpus (every
#: value of these keys in verl__agent-opd__*/output.log and wandb__open-agentrl-opd__*); the rest
#: (learning rate, losses averaged over micro-batches, timings, throughput) are full float64
FLOAT32 = ("actor/entropy", "critic/score/mean", "critic/rewards/mean", "critic/advantages/mean",
           "critic/advantages/max", "critic/advantages/min", "global_seqlen/mean", "prompt_length/mean",
           "response_length/mean", "response_length/clip_ratio")
WHOLE = ("response_length/max", "response_length/min", "perf/total_num_tokens")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = 1.0 / (1.0 + np.exp(-x))
    return out


def simulate(sc: Scenario) -> dict[str, np.ndarray]:
    """Every metric as one array over steps 1..N (index i is step i+1)."""
    rng = np.random.default_rng(sc.seed)
    t = np.arange(1, sc.steps + 1, dtype=float)

    def noise(scale: float) -> np.ndarray:
        out: np.ndarray = rng.normal(0.0, scale * sc.noise, sc.steps)
        return out

    after = (t >= sc.collapse_at).astype(float) if sc.collapse_at else np.zeros(sc.steps)
    ramp = np.clip((t - (sc.collapse_at or 0)) / 8.0, 0, 1) * after

    entropy = sc.entropy0 * (0.45 + 0.55 * np.exp(-t / 160.0)) * (1 - 0.8 * ramp) * np.exp(noise(0.03))
    score = 0.25 + 0.45 * _sigmoid((t - 90) / 45.0) + noise(0.02)
    score -= 0.25 * ramp * np.clip((t - (sc.collapse_at or 0)) / 60.0, 0, 1)
    length = 190 + 60 * _sigmoid((t - 120) / 50.0) - 110 * ramp + noise(6)
    clipfrac = np.clip(0.012 + 0.004 * np.log1p(t) + 0.33 * ramp + noise(0.003), 0, 1)
    ppo_kl = 0.0005 + 0.0015 * ramp + np.abs(noise(0.0003))
    # KL to the reference grows and levels off, as in real runs
    kl_ref = 0.001 + 0.03 * (1 - np.exp(-t / 300.0)) * (1 + 3 * ramp) + np.abs(noise(0.001))
    grad = 0.22 * (1 + 0.8 * ramp) * np.exp(noise(0.12))
    if sc.grad_spike_at and sc.grad_spike_at <= sc.steps:
        grad[sc.grad_spike_at - 1] *= 14.0
    lr = np.full(sc.steps, 1e-6) * np.minimum(1.0, t / 10.0)
    gen = 60 + 0.12 * length + noise(2)
    upd = 38 + 0.05 * length + noise(1.5)
    ref, old = 9 + noise(0.4), 10 + noise(0.4)
    step_time = gen + upd + ref + old + 3.5
    tokens = 1024 * 5 * (length + 105)
    seqlen_mean = tokens / sc.n_gpus
    imbalance = np.abs(noise(0.025)) * seqlen_mean
    val = np.full(sc.steps, np.nan)
    val_steps = (t % sc.val_every == 0) | (t == sc.steps)
    acc = 0.55 + 0.2 * _sigmoid((t - 100) / 50.0) - 0.12 * ramp * np.clip((t - (sc.collapse_at or 0)) / 40, 0, 1)
    val[val_steps] = np.round(acc[val_steps] + noise(0.006)[val_steps], 4)
    series = _series(sc, t, entropy, score, length, clipfrac, ppo_kl, kl_ref, grad, lr, gen, upd, ref, old, step_time,
                     tokens, seqlen_mean, imbalance, val, noise)
    for key in FLOAT32:
        series[key] = series[key].astype(np.float32).astype(np.float64)
    for key in WHOLE:
        series[key] = np.round(series[key])
    return series


def _series(sc: Scenario, t: np.ndarray, entropy: np.ndarray, score: np.ndarray, length: np.ndarray,
            clipfrac: np.ndarray, ppo_kl: np.ndarray, kl_ref: np.ndarray, grad: np.ndarray, lr: np.ndarray,
            gen: np.ndarray, upd: np.ndarray, ref: np.ndarray, old: np.ndarray, step_time: np.ndarray,
            tokens: np.ndarray, seqlen_mean: np.ndarray, imbalance: np.ndarray, val: np.ndarray,
            noise: Any) -> dict[str, np.ndarray]:
    return {
        "global_seqlen/min": np.round(seqlen_mean - imbalance / 2),
        "global_seqlen/max": np.round(seqlen_mean + imbalance / 2),
        "global_seqlen/minmax_diff": np.round(imbalance),
        "global_seqlen/balanced_min": np.floor(seqlen_mean),
        "global_seqlen/balanced_max": np.ceil(seqlen_mean),
        "global_seqlen/mean": seqlen_mean,
        "actor/entropy": entropy,
        "actor/kl_loss": kl_ref,
        "actor/kl_coef": np.full(sc.steps, 0.001),
        "actor/pg_loss": noise(0.02),
        "actor/pg_clipfrac": clipfrac,
        "actor/ppo_kl": ppo_kl,
        "actor/pg_clipfrac_lower": np.abs(noise(0.0002)),
        "actor/grad_norm": grad,
        "perf/mfu/actor": np.clip(0.38 + noise(0.01), 0, 1),
        "perf/max_memory_allocated_gb": 61 + noise(0.5),
        "actor/lr": lr,
        "training/global_step": t,
        "training/epoch": np.floor((t - 1) / 7),
        "critic/score/mean": score,
        "critic/score/max": np.ones(sc.steps),
        "critic/score/min": np.zeros(sc.steps),
        "critic/rewards/mean": score,
        "critic/advantages/mean": noise(0.01),
        "critic/advantages/max": 1.79 + noise(0.02),
        "critic/advantages/min": -1.79 + noise(0.02),
        "response_length/mean": length,
        "response_length/max": np.minimum(sc.max_response_length, length * 4.5),
        "response_length/min": np.maximum(1, length * 0.05),
        "response_length/clip_ratio": np.clip(0.002 + noise(0.001), 0, 1),
        "response/aborted_ratio": np.zeros(sc.steps),
        "prompt_length/mean": 105 + noise(1),
        "prompt_length/max": np.full(sc.steps, 312.0),
        "prompt_length/min": np.full(sc.steps, 48.0),
        "prompt_length/clip_ratio": np.zeros(sc.steps),
        "timing_s/gen": gen,
        "timing_s/reward": 1.2 + noise(0.05),
        "timing_s/old_log_prob": old,
        "timing_s/ref": ref,
        "timing_s/adv": 0.15 + noise(0.005),
        "timing_s/update_actor": upd,
        "timing_s/step": step_time,
        "timing_per_token_ms/gen": gen * 1000 / (1024 * 5 * length),
        "timing_per_token_ms/update_actor": upd * 1000 / tokens,
        "perf/total_num_tokens": tokens,
        "perf/time_per_step": step_time,
        "perf/throughput": tokens / (step_time * sc.n_gpus),
        f"val-core/{sc.data_source}/acc/mean@1": val,
    }


def _config_lines(sc: Scenario) -> list[str]:
    return [
        "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size=1024 \\",
        f"    data.max_response_length={sc.max_response_length} actor_rollout_ref.actor.optim.lr=1e-6 \\",
        "    actor_rollout_ref.rollout.n=5 actor_rollout_ref.actor.use_kl_loss=True \\",
        f"    trainer.logger=['console','file'] trainer.n_gpus_per_node={sc.n_gpus} trainer.test_freq={sc.val_every}",
    ]


def _fmt(value: float) -> str:
    if math.isnan(value):
        return "nan"
    return repr(float(value))


def console_lines(sc: Scenario) -> Iterator[str]:
    """The run as veRL's console logger prints it (full-precision era, Ray prefix, ANSI)."""
    series = simulate(sc)
    prefix = "\x1b[36m(TaskRunner pid=4242)\x1b[0m "
    yield from _config_lines(sc)
    yield prefix + "Training from scratch"
    for i in range(sc.steps):
        pairs = [f"step:{i + 1}"]
        for key, arr in series.items():
            value = float(arr[i])
            if key.startswith("val-") and math.isnan(value):
                continue
            pairs.append(f"{key}:{_fmt(value)}")
        yield prefix + " - ".join(pairs)


def jsonl_lines(sc: Scenario) -> Iterator[bytes]:
    """The run as veRL's ``file`` logger writes it (``{"step", "data"}``, NaN as null)."""
    series = simulate(sc)
    for i in range(sc.steps):
        data = {k: (None if math.isnan(float(a[i])) else float(a[i])) for k, a in series.items()
                if not (k.startswith("val-") and math.isnan(float(a[i])))}
        yield orjson.dumps({"step": i + 1, "data": data})


def write_example(folder: Path, sc: Scenario | None = None) -> dict[str, Path]:
    """Write the example run as a veRL console log and a veRL JSONL file into ``folder``."""
    sc = sc or Scenario()
    folder.mkdir(parents=True, exist_ok=True)
    console = folder / "grpo_example.log"
    console.write_text("\n".join(console_lines(sc)) + "\n", encoding="utf-8")
    jsonl = folder / "grpo_example.jsonl"
    jsonl.write_bytes(b"\n".join(jsonl_lines(sc)) + b"\n")
    return {"console": console, "jsonl": jsonl}
