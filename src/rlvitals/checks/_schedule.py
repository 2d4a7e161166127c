"""The learning-rate check and what a run's config says about its schedules: the warm-up or decay it
asks for, and how many optimiser updates one rollout batch gets (private to the stability checks)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .. import signals
from ..signals import median
from ._base import Outcome, RunView, Series, Status

LR_KEYS = ("actor/lr", "critic/lr")
_WARMUP_KEYS = ("lr_warmup_steps_ratio", "warmup_steps_ratio", "warmup_ratio", "lr_warmup_steps",
                "warmup_steps", "num_warmup_steps")
_STYLE_KEYS = ("warmup_style", "lr_scheduler_type", "lr_decay_style", "lr_scheduler", "scheduler_type")
_FLAT_STYLES = ("constant", "constant_with_warmup", "none", "null", "")
#: config keys (their last dotted part) that set how many optimiser updates one rollout batch gets
_EPOCH_KEYS = ("ppo_epochs", "num_ppo_epochs", "num_iterations")
_SPLIT_KEYS = ("num_mini_batches", "steps_per_generation")


def configured_schedule(config: Mapping[str, Any], critic: bool) -> tuple[str, str]:
    """``(what the config asks for, the key that says so)``: "warmup", "decay", "constant" (it names
    a flat style) or "" (not stated). Keys of the other model (critic vs actor) are ignored."""
    flat = ""
    for key, value in config.items():
        low = key.lower()
        if ("critic" in low) != critic or not isinstance(value, (int, float, str)) or isinstance(value, bool):
            continue
        name = low.rsplit(".", 1)[-1]
        if name in _WARMUP_KEYS and not isinstance(value, str) and value > 0:
            return "warmup", f"{key}={value}"
        if name in _STYLE_KEYS and isinstance(value, str):
            if value.strip().lower() not in _FLAT_STYLES:
                return "decay", f"{key}={value}"
            flat = flat or f"{key}={value}"
    return ("constant", flat) if flat else ("", "")


def updates_per_batch(config: Mapping[str, Any]) -> tuple[int | None, str]:
    """``(optimiser updates per rollout batch, the config keys that say so)``: epochs over the batch
    times the mini-batches it is cut into (veRL ppo_epochs × train_batch_size / ppo_mini_batch_size,
    TRL num_iterations × steps_per_generation, TRL PPO num_ppo_epochs × num_mini_batches); None when
    the config does not say."""
    last = {k.rsplit(".", 1)[-1]: (k, v) for k, v in config.items()
            if "critic" not in k.lower() and isinstance(v, (int, float)) and not isinstance(v, bool)}
    epochs = next((last[k] for k in _EPOCH_KEYS if k in last), None)
    minibatched = "ppo_mini_batch_size" in last and "train_batch_size" in last
    if epochs is None and not minibatched:
        return None, ""
    # a veRL command line that sets the mini-batch but not ppo_epochs runs veRL's default of one epoch
    said = [f"{epochs[0]}={epochs[1]:g}"] if epochs is not None else ["ppo_epochs=1"]
    epochs = epochs or ("ppo_epochs", 1)
    splits = 1
    split = next((last[k] for k in _SPLIT_KEYS if k in last), None)
    if split is not None:
        splits, said = int(split[1]), [*said, f"{split[0]}={split[1]:g}"]
    elif minibatched and last["ppo_mini_batch_size"][1] > 0:
        mini, batch = last["ppo_mini_batch_size"], last["train_batch_size"]
        splits = max(1, int(np.ceil(batch[1] / mini[1])))
        said += [f"{batch[0]}={batch[1]:g}", f"{mini[0]}={mini[1]:g}"]
    return max(1, int(epochs[1])) * max(1, splits), ", ".join(said)


Kind = Literal["jump", "spike", "restart"]


@dataclass(frozen=True)
class Rise:
    """A rise of the learning rate after its warm-up: at ``index``, from ``before`` to ``after``; the
    highest rate the run had used before it is ``prior``. ``kind``: a ``spike`` comes back within a few
    steps, a ``restart`` climbs back to about the earlier peak after a decay (a resumed run whose
    scheduler started again), a ``jump`` stays above anything the schedule used before."""

    index: int
    before: float
    after: float
    prior: float
    kind: Kind


def _warmup_end(x: np.ndarray, settled: int) -> int:
    """The last index of the warm-up: the climb from the start ends where the rate does not rise above
    its last value for ``settled`` logged steps (a warm-up printed with few digits climbs in stairs).
    A rate that starts flat has no warm-up (index 0)."""
    for i in range(1, len(x)):
        if np.all(x[i : i + settled] <= x[i - 1]):
            return i - 1
    return len(x) - 1


def rises(x: np.ndarray, p: Mapping[str, Any]) -> list[Rise]:
    """Every rise by ``jump``× from one logged step to the next after the warm-up, except the ordinary
    increments of a rate that climbs in stairs (a warm-up printed with few digits rises by the same
    rounding step again and again: ``settled`` such rises or more, and this one no larger)."""
    peak = float(np.max(x))
    floor = p["zero_frac"] * peak
    hold = int(p["settled"])
    steps = np.diff(x)
    ups = steps[steps > 0]
    stair = float(median(ups)) * 1.5 if len(ups) > hold else 0.0
    out: list[Rise] = []
    at = np.arange(_warmup_end(x, hold) + 1, len(x))
    jumped = (x[at] >= p["jump"] * np.maximum(x[at - 1], floor)) & (np.diff(x)[at - 1] > stair)
    for i in map(int, at[jumped]):  # the few steps that rose by jump×, not every step of the run
        before, after = float(x[i - 1]), float(x[i])
        prior = float(np.max(x[:i]))
        held = float(median(x[i : i + hold])) >= 0.5 * after
        kind: Kind = ("spike" if not held else
                      "restart" if before <= 0.5 * prior and after <= p["restart"] * prior else "jump")
        out.append(Rise(i, before, after, prior, kind))
    return out


def _drop(x: np.ndarray, p: Mapping[str, Any]) -> tuple[int, int] | None:
    """The stretch of a sudden drop to ~0 while training goes on: ``min_after`` + 1 values at most
    ``zero_frac`` of the peak, right after one still at ``drop_from`` of it."""
    peak = float(np.max(x))
    zero = x <= p["zero_frac"] * peak
    return next(((a, e) for a, e in signals.runs_of(zero, int(p["min_after"]) + 1)
                 if a > 0 and x[a - 1] >= p["drop_from"] * peak), None)


#: metrics a log prints beside its learning rate, read to tell a rounded log from an exact one
_BESIDE_KEYS = ("actor/entropy", "actor/grad_norm", "actor/pg_loss", "actor/loss", "critic/score/mean",
                "critic/rewards/mean")


def _rounded(view: RunView, x: np.ndarray, q: float) -> bool:
    """Whether a rate on a grid of ``q`` is a rounded print of another rate: it takes several non-zero values
    (a decay printed with few decimals moves by whole rounding steps), or its one non-zero value sits on a
    grid the log's other metrics are rounded to as well (a console printing every number with three
    decimals: 0.001 then 0.000 may be 6e-4 decaying to 4e-4). A single value printed as ``1e-06`` in a log
    whose other numbers carry more digits is exact: a constant rate, and a drop from it to 0 is a drop."""
    if len(np.unique(x[x != 0])) > 1:
        return True
    beside = [signals.quantum(b.values) for b in map(view.series, _BESIDE_KEYS) if b is not None]
    # a log whose other metrics say nothing of its digits cannot tell: read as rounded, not judged
    return not beside or all(b >= q for b in beside)


def _drop_outcome(s: Series, drop: tuple[int, int], values: dict[str, Any], p: Mapping[str, Any]) -> Outcome:
    """A sudden drop to ~0 (docs/reading-rules.md#lr-schedule): still at 0 at the last logged step for at least
    ``fail_share`` of the logged steps, the run has stopped learning and every further step burns compute: a
    failure. At 0 on fewer steps at the end (it just stopped: act before more is spent), or a stretch at 0 the
    rate came back from (those steps were lost, the run learns again): a warning."""
    x, n = s.values, len(s)
    a, e = drop
    at_end = e == n - 1
    status: Status = "fail" if at_end and (e - a + 1) >= p["fail_share"] * n else "warn"
    values |= {"step": s.step(a), "before": float(x[a - 1]), "zero_steps": e - a + 1, "end_step": s.step(e),
               "share": (e - a + 1) / n, "fail_share": p["fail_share"]}
    template = "fail_zero" if status == "fail" else "warn_zero_end" if at_end else "warn_zero_back"
    if not at_end:
        values |= {"back_step": s.step(e + 1), "back": float(x[e + 1])}
    return Outcome(status, template, values, onset_step=s.step(a), span=s.span(a, e), metrics=(s.key,),
                   evidence={"before": float(x[a - 1]), "value": float(x[a]), "peak": values["peak"],
                             "zero_steps": e - a + 1, "share": values["share"], "threshold_share": p["fail_share"]})


def lr_schedule(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The learning rate against its configured schedule (docs/reading-rules.md#lr-schedule: a misconfigured
    schedule shows as a rate that never changes or suddenly drops to zero): a sudden drop to ~0 that holds to the end
    fails (a short one at the end, or one the rate came back from, warns); a rise after the warm-up warns (a one-step
    spike, a restarted schedule, a jump) and fails when it stays at ``fail_jump``× anything the schedule used before;
    a constant rate warns only where the config asks for warm-up or decay. A rate printed as 0 on every step (or in
    whole rounding steps of a rounded log) cannot be judged."""
    out = []
    for key in LR_KEYS:
        s = view.series(key)
        if s is None:
            continue
        x, peak = s.values, float(np.max(s.values))
        values: dict[str, Any] = {"metric": key, "first": float(x[0]), "peak": peak, "last": float(x[-1])}
        q = signals.quantum(x)
        if np.all(x == 0) or (q > 0 and peak < 5 * q and len(np.unique(x)) > 1 and _rounded(view, x, q)):
            # '0.000' on every step, or a rate that moves by whole rounding steps of its few digits
            out.append(Outcome("skipped", "rounded" if peak == 0 else "coarse", values | {"quantum": q},
                               metrics=(key,)))
            continue
        wanted, source = configured_schedule(view.config, key.startswith("critic"))
        values |= {"config": source}
        drop, found = _drop(x, p), rises(x, p)
        if drop is not None:
            out.append(_drop_outcome(s, drop, values, p))
        elif found:
            out.append(_rise_outcome(s.steps, key, found, values, p))
        elif float(np.ptp(x)) <= 1e-6 * peak:
            if wanted in ("warmup", "decay"):
                out.append(Outcome("warn", "warn_constant", values | {"wanted": wanted}, onset_step=s.step(0),
                                   span=s.span(0, len(x) - 1), metrics=(key,),
                                   evidence={"value": peak, "config": source}))
            else:
                out.append(Outcome("ok", "ok_constant" if wanted else "ok_constant_unstated", values, metrics=(key,)))
        else:
            out.append(Outcome("ok", "ok", values, metrics=(key,)))
    return out


def _rise_outcome(steps: np.ndarray, key: str, found: list[Rise], values: dict[str, Any],
                  p: Mapping[str, Any]) -> Outcome:
    """One outcome for the rises of one rate: the first sets the onset and the words; a rise that
    stays at ``fail_jump``× the earlier peak fails."""
    worst = max(found, key=lambda r: r.after / max(r.prior, 1e-300))
    failing = [r for r in found if r.kind == "jump" and r.after >= p["fail_jump"] * r.prior]
    first = failing[0] if failing else found[0]
    status: Status = "fail" if failing else "warn"
    i = first.index
    values |= {"step": int(steps[i]), "before": first.before, "after": first.after, "prior": first.prior,
               "times": first.after / max(first.before, p["zero_frac"] * values["peak"]),
               "over_prior": first.after / max(first.prior, 1e-300), "count": len(found),
               "steps": ", ".join(str(int(steps[r.index])) for r in found[:8])}
    spikes = tuple(int(steps[r.index]) for r in found if r.kind == "spike")
    return Outcome(status, f"{status}_{first.kind}", values, onset_step=int(steps[i]),
                   span=(int(steps[found[0].index - 1]), int(steps[found[-1].index])), metrics=(key,),
                   evidence={"before": first.before, "value": first.after, "prior_peak": first.prior,
                             "threshold": p["jump"], "worst": worst.after, "kinds": [r.kind for r in found]},
                   points=spikes if len(spikes) == len(found) else ())
