"""Efficiency: where the step time goes, generation vs update, throughput, MFU, load balance
across ranks and memory pressure (docs/reading-rules.md#efficiency: load balance, timing, throughput and
MFU, and the symptom table's rows for a slow run and an out-of-memory one); the stragglers and tool time of
veRL's agent loop are in :mod:`.agent_loop`, their records here in efficiency.toml.

A slow run can still learn, so efficiency findings are notes ("could be better": shown with
their advice, never part of the verdict), with the phase, the share and the step it started, so
the reader knows what to optimise first. The one exception is ``oom_risk``: memory pressure that
keeps growing puts the run at risk of dying, so it warns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import signals
from ..signals import median
from . import agent_loop
from ._base import CheckFn, Outcome, RunView, Series, Status

#: veRL's top-level timers inside ``timing_s/step`` (sub-timers such as generate_sequences or
#: reshard are nested in gen and are left out so shares do not double count)
VERL_PHASES = ("gen", "gen_max", "reward", "old_log_prob", "ref", "values", "adv", "update_critic",
               "update_actor", "update_weights", "testing", "save_checkpoint")
OPENRLHF_PHASES = ("make_experience", "ppo_train", "broadcast")
GENERATION = ("gen", "gen_max", "make_experience")
UPDATE = ("update_actor", "update_critic", "ppo_train")
#: timers that only run on some steps; their steps are left out of per-step rates
OCCASIONAL = ("timing_s/testing", "timing_s/save_checkpoint")
MFU_KEYS = ("perf/mfu/actor", "perf/mfu/critic", "perf/mfu/actor_infer")


def _on(view: RunView, key: str, steps: np.ndarray) -> np.ndarray:
    """Values of ``key`` at ``steps``, 0 where it was not logged (a timer that did not run)."""
    out = np.zeros(len(steps))
    s = view.series(key, 1)
    if s is not None:
        hit = np.isin(steps, s.steps)
        out[hit] = s.values[np.isin(s.steps, steps)]
    return out


def _phases(view: RunView) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], str] | None:
    """``(steps, step seconds, {phase: seconds}, total key)``; without ``timing_s/step`` (veRL
    Dec 2024) the step is the sum of its phases."""
    names = [p for p in VERL_PHASES if view.series(f"timing_s/{p}") is not None]
    names = names or [p for p in OPENRLHF_PHASES if view.series(f"timing_s/{p}") is not None]
    total = view.series("timing_s/step")
    if not names:
        return None
    anchor = total if total is not None else view.series(f"timing_s/{names[0]}")
    steps = anchor.steps if anchor is not None else np.array([], dtype=np.int64)
    phases = {p: _on(view, f"timing_s/{p}", steps) for p in names}
    if total is not None:
        return steps, total.values, phases, total.key
    return steps, np.sum(list(phases.values()), axis=0), phases, "sum"


def _ranking(shares: Mapping[str, float], limit: int = 6) -> str:
    top = sorted(shares.items(), key=lambda kv: -kv[1])[:limit]
    return ", ".join(f"{name} {share:.0%}" for name, share in top if share >= 0.005)


def time_breakdown(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The share of the step time each phase takes (docs/reading-rules.md#time-breakdown: optimise the phase
    that takes longest first);
    notes a phase that should be small (reward, ref/old log-prob, values, adv, weight sync,
    validation, checkpointing) taking ``aux_share`` or more (a model-based reward is slow)."""
    found = _phases(view)
    if found is None:
        return []
    steps, total, phases, total_key = found
    denom = float(total.sum())
    if denom <= 0:
        return []
    shares = {name: float(x.sum()) / denom for name, x in phases.items()}
    if total_key != "sum":
        shares["other"] = max(0.0, 1.0 - sum(shares.values()))
    largest = max((k for k in shares if k != "other"), key=lambda k: shares[k])
    v: dict[str, Any] = {"largest": largest, "share": shares[largest], "ranking": _ranking(shares),
                         "seconds": float(median(total)), "total": total_key, "aux_share": p["aux_share"]}
    ev = {"shares": shares, "seconds_median": float(median(total)), "total": total_key}
    heavy = [k for k in phases if k not in GENERATION + UPDATE and shares[k] >= p["aux_share"]]
    if not heavy:
        return [Outcome("ok", "ok" if total_key != "sum" else "ok_sum", v, metrics=(f"timing_s/{largest}",),
                        evidence=ev)]
    phase = max(heavy, key=lambda k: shares[k])
    share_t = phases[phase] / np.where(total > 0, total, np.nan)
    runs = signals.runs_of(np.nan_to_num(signals.rolling_level(share_t, 10)) >= p["aux_share"], min(10, len(steps)))
    onset = int(steps[runs[0][0]]) if runs else int(steps[0])
    v |= {"phase": phase, "phase_share": shares[phase]}
    return [Outcome("note", "reward" if phase == "reward" else "heavy", v, onset_step=onset,
                    span=(onset, int(steps[-1])), metrics=(f"timing_s/{phase}", "timing_s/step"),
                    evidence=ev | {"threshold": p["aux_share"], "phase": phase})]


def _sum_keys(view: RunView, names: tuple[str, ...]) -> Series | None:
    found = [s for n in names if (s := view.series(f"timing_s/{n}")) is not None]
    if not found:
        return None
    steps = found[0].steps
    return Series("+".join(s.key for s in found), steps, np.sum([_on(view, s.key, steps) for s in found], axis=0))


def _early_late(x: np.ndarray) -> tuple[float, float]:
    k = max(1, len(x) // 5)
    return float(median(x[:k])), float(median(x[-k:]))


def gen_update_balance(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Generation time over update time, and how it drifts: a ratio that doubles usually means
    longer responses (or a slower rollout engine), one that halves a slower update."""
    gen, upd = _sum_keys(view, GENERATION), _sum_keys(view, UPDATE)
    if gen is None or upd is None:
        return []
    steps, g, u = gen.aligned(upd)
    keep = (u > 0) & (g > 0)
    steps, ratio = steps[keep], g[keep] / u[keep]
    if len(ratio) < 10:
        return []
    early, late = _early_late(ratio)
    length = view.series("response_length/mean")
    lv = _early_late(length.values) if length is not None else None
    v: dict[str, Any] = {"ratio": float(median(ratio)), "early": early, "late": late, "drift": late / early,
                         "gen": gen.key, "update": upd.key, "limit": p["drift"],
                         "length": f"{lv[0]:.0f} → {lv[1]:.0f}" if lv else "—"}
    if 1 / p["drift"] < late / early < p["drift"]:
        return [Outcome("ok", "ok_gen" if v["ratio"] >= 1 else "ok_update", v, metrics=(gen.key, upd.key), evidence=v)]
    mid = float(np.sqrt(early * late))
    level = signals.rolling_level(ratio, max(3, len(ratio) // 20))
    crossed = np.flatnonzero(level >= mid if late > early else level <= mid)
    onset = int(steps[crossed[0]]) if len(crossed) else int(steps[0])
    v["step"] = onset
    return [Outcome("note", "up" if late > early else "down", v, onset_step=onset, span=(onset, int(steps[-1])),
                    metrics=(gen.key, upd.key, "response_length/mean"), evidence=v | {"threshold": p["drift"]})]


def _rate(view: RunView) -> tuple[Series, str] | None:
    """The work rate, higher is better: perf/throughput; without it, (prompt + response) tokens
    per sample over the step seconds (the batch size is fixed). Steps that also validated or
    saved a checkpoint are left out — those timers run inside the step."""
    s = view.series("perf/throughput")
    kind = "throughput"
    if s is None:
        found = _phases(view)
        if found is None:
            return None
        steps, total = found[0], found[1]
        work = np.ones(len(steps))
        if view.series("response_length/mean") is not None:
            kind = "per_token"
            work = _on(view, "response_length/mean", steps) + _on(view, "prompt_length/mean", steps)
        else:
            kind = "step"
        keep = (total > 0) & (work > 0)
        s = Series("timing_s/step" if found[3] != "sum" else "timing_s/*", steps[keep], work[keep] / total[keep])
    occasional = np.zeros(len(s.steps), dtype=bool)
    for key in OCCASIONAL:
        o = view.series(key, 1)
        if o is not None:
            occasional |= np.isin(s.steps, o.steps)
    s = Series(s.key, s.steps[~occasional], s.values[~occasional])
    return (s, kind) if len(s) >= 20 else None


def _tokens_drop(view: RunView, step: int, window: int) -> float | None:
    """How much the tokens per step fell around ``step`` (median of ``window`` steps after over
    before): perf/total_num_tokens, else prompt + response length per sample."""
    tokens = view.series("perf/total_num_tokens")
    if tokens is None:
        resp = view.series("response_length/mean")
        if resp is None:
            return None
        tokens = Series("tokens", resp.steps, resp.values + _on(view, "prompt_length/mean", resp.steps))
    before, after = tokens.values[tokens.steps < step][-window:], tokens.values[tokens.steps >= step][:window]
    if len(before) == 0 or len(after) == 0 or median(before) <= 0:
        return None
    return 1.0 - float(median(after) / median(before))


def throughput_drop(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """A sudden drop (level shift down) or a steady decline of throughput — or, when it is not
    logged, a rise of the step time per token (docs/reading-rules.md#throughput-drop: training became slow)."""
    found = _rate(view)
    if found is None:
        return []
    s, kind = found
    x = s.values
    first, last = _early_late(x)
    v: dict[str, Any] = {"metric": s.key, "first": first, "last": last, "change": last / first - 1,
                         "min_drop": p["min_drop"], "decline": p["decline"]}
    window = max(5, min(30, len(x) // 8))
    shift = signals.level_shift(x, window=window, k=p["k"], direction="down")
    if shift is not None and shift.baseline > 0 and 1 - shift.value / shift.baseline >= p["min_drop"]:
        onset = s.step(shift.start)
        v |= {"step": onset, "before": shift.baseline, "after": shift.value, "drop": 1 - shift.value / shift.baseline}
        ev = v | {"baseline": shift.baseline, "value": shift.value, "threshold": p["min_drop"]}
        tokens = _tokens_drop(view, onset, window)
        if tokens is not None and tokens >= v["drop"] / 2:
            # fewer tokens per step leave the fixed per-step costs dominant: not a slower machine
            return [Outcome("ok", "ok_shorter", v | {"tokens": tokens}, metrics=(s.key, "response_length/mean"),
                            evidence=ev | {"tokens_drop": tokens})]
        return [Outcome("note", f"shift_{kind}", v, onset_step=onset, span=(onset, s.step(-1)), metrics=(s.key,),
                        evidence=ev)]
    if v["change"] <= -p["decline"] and signals.trend(x) <= -0.3:
        level = signals.rolling_level(x, window)
        below = np.flatnonzero(level < first * (1 - p["decline"] / 2))
        onset = s.step(int(below[0])) if len(below) else s.step(0)
        v |= {"step": onset, "fall": -v["change"]}
        return [Outcome("note", f"decline_{kind}", v, onset_step=onset, span=(onset, s.step(-1)), metrics=(s.key,),
                        evidence=v | {"threshold": p["decline"]})]
    return [Outcome("ok", f"ok_{kind}", v, metrics=(s.key,), evidence=v)]


def mfu_low(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """MFU below ``low`` (docs/reading-rules.md#mfu-low: normal is 50–60 %; below 30 % the GPUs spend much
    of their time waiting). veRL logs
    0.0 when it does not know the GPU's peak FLOPs: an all-zero MFU is "not measured"."""
    logged = {k: s for k in MFU_KEYS if (s := view.series(k)) is not None}
    if not logged:
        return []
    zero = [k for k, s in logged.items() if np.all(s.values == 0)]
    real = {k: s for k, s in logged.items() if k not in zero}
    v: dict[str, Any] = {"unmeasured": ", ".join(zero) or "—", "low": p["low"]}
    if not real:
        return [Outcome("skipped", "unmeasured", v, metrics=tuple(zero))]
    med = {k: float(median(s.values[s.values > 0])) for k, s in real.items()}
    v["mfus"] = ", ".join(f"{k.removeprefix('perf/mfu/')} {m:.0%}" for k, m in med.items())
    low = [k for k, m in med.items() if m < p["low"]]
    if not low:
        return [Outcome("ok", "ok", v, metrics=tuple(real), evidence={"median": med, "unmeasured": zero})]
    worst = min(low, key=lambda k: med[k])
    s = real[worst]
    runs = signals.runs_of(signals.rolling_level(s.values, 10) < p["low"], min(10, len(s)))
    onset = s.step(runs[0][0]) if runs else s.step(0)
    v |= {"worst": worst, "value": med[worst], "step": onset}
    return [Outcome("note", "low", v, onset_step=onset, span=(onset, s.step(-1)), metrics=tuple(low),
                    evidence={"median": med, "threshold": p["low"], "value": med[worst], "unmeasured": zero})]


def _share(view: RunView, top: str, bottom: str, mean: Series) -> Series | None:
    """``(top − bottom) / mean`` per step (``top / mean`` without ``bottom``)."""
    a = view.series(top)
    if a is None:
        return None
    steps, d = a.steps, a.values
    if bottom:
        b = view.series(bottom)
        if b is None:
            return None
        steps, x, y = a.aligned(b)
        d = x - y
    common, dd, m = Series(top, steps, d).aligned(mean)
    keep = m > 0
    return Series(top, common[keep], dd[keep] / m[keep])


def seqlen_imbalance(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Tokens per rank: (max − min) / mean (docs/reading-rules.md#seqlen-imbalance). veRL logs global_seqlen/min, max
    and minmax_diff for the plain split *before* balance_batch and balanced_min/max *after* it; the
    GPUs see the balanced one when it is logged."""
    mean = view.series("global_seqlen/mean")
    if mean is None:
        return []
    before = _share(view, "global_seqlen/minmax_diff", "", mean) or _share(view, "global_seqlen/max",
                                                                          "global_seqlen/min", mean)
    after = _share(view, "global_seqlen/balanced_max", "global_seqlen/balanced_min", mean)
    seen = after or before
    if seen is None:
        return []
    v: dict[str, Any] = {"before": float(median(before.values)) if before else float("nan"),
                         "after": float(median(after.values)) if after else float("nan"),
                         "share": float(median(seen.values)), "peak": float(np.max(seen.values)),
                         "limit": p["imbalance"]}
    template = "balanced" if after is not None else "plain"
    if v["share"] < p["imbalance"]:
        return [Outcome("ok", f"ok_{template}", v, metrics=(seen.key, mean.key), evidence=v)]
    runs = signals.runs_of(signals.rolling_level(seen.values, 10) >= p["imbalance"], min(10, len(seen)))
    onset = seen.step(runs[0][0]) if runs else seen.step(0)
    return [Outcome("note", f"imbalanced_{template}", v, onset_step=onset, span=(onset, seen.step(-1)),
                    metrics=(seen.key, mean.key), evidence=v | {"threshold": p["imbalance"]})]


def _config_number(view: RunView, *suffixes: str) -> float | None:
    for key, value in view.config.items():
        if key.endswith(suffixes) and isinstance(value, (int, float, str)) and not isinstance(value, bool):
            try:
                return float(value)
            except (TypeError, ValueError):
                continue
    return None


def _growth(s: Series, p: Mapping[str, Any]) -> int | None:
    """The onset step when ``s`` grows by ``growth`` or more with a clear upward trend."""
    first, last = _early_late(s.values)
    if first <= 0 or last / first - 1 < p["growth"] or signals.trend(s.values) < 0.3:
        return None
    level = signals.rolling_level(s.values, max(3, len(s) // 20))
    above = np.flatnonzero(level >= first * (1 + p["growth"] / 2))
    return s.step(int(above[0])) if len(above) else s.step(0)


def _cap_note(view: RunView, key: str, cap_keys: tuple[str, ...]) -> tuple[str, float, int | None]:
    """``("max / cap", late share of steps at the cap, step it reached the cap for good)``."""
    s, cap = view.series(key), _config_number(view, *cap_keys)
    if s is None:
        return "—", 0.0, None
    text = f"{float(np.max(s.values)):.0f}" + (f" / {cap:.0f}" if cap else "")
    if not cap:
        return text, 0.0, None
    hit = s.values >= cap - 0.5
    k = max(1, len(s) // 5)
    runs = signals.runs_of(signals.rolling_level(hit.astype(float), k) >= 0.5, 1)
    reached = s.step(runs[-1][0]) if runs and runs[-1][1] == len(s) - 1 and hit[:k].mean() < 0.5 else None
    return text, float(hit[-k:].mean()), reached


def oom_risk(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Growing memory pressure (docs/reading-rules.md#oom-risk: on running out of GPU memory, read
    global_seqlen/max, then response_length/max and prompt_length/max): the peak memory growing by ``growth`` or more
    warns; the heaviest rank's tokens growing as much, with no memory logged, is a note. Lengths at max_response_length
    / max_prompt_length are bounded by the config (the worst case is already reached and fits), so they
    are reported, not warned about."""
    response, at_cap, reached = _cap_note(view, "response_length/max",
                                          ("max_response_length", "max_completion_length", "generate_max_len"))
    prompt = _cap_note(view, "prompt_length/max", ("max_prompt_length", "prompt_max_len"))[0]
    v: dict[str, Any] = {"growth": p["growth"], "response": response, "prompt": prompt, "seqlen": "—",
                         "memory": "—", "step": reached}
    out: list[Outcome] = []
    read: list[str] = []  # what was judged: the tokens per rank, the memory, and the lengths said beside them
    for key, template in (("global_seqlen/max", "seqlen"), ("perf/max_memory_reserved_gb", "memory"),
                          ("perf/max_memory_allocated_gb", "memory")):
        s = view.series(key)
        if s is None or v[template] != "—":
            continue
        read.append(key)
        first, last = _early_late(s.values)
        v[template] = f"{first:.4g} → {last:.4g}" + (" GB" if template == "memory" else "")
        onset = _growth(s, p)
        if onset is not None:
            gv = v | {"metric": key, "first": first, "last": last, "step": onset}
            # tokens per rank say how the load grows, not how close the memory is to its end: without a memory
            # reading the growth is an advisory (a note, read with the response lengths that drive it)
            status: Status = "warn" if template == "memory" else "note"
            out.append(Outcome(status, template, gv, onset_step=onset, span=(onset, s.step(-1)),
                               metrics=(key, "response_length/max", "prompt_length/max"),
                               evidence=gv | {"baseline": first, "value": last, "threshold": p["growth"]}))
    if out:
        return out
    template = "ok_reached_cap" if reached is not None else "ok_at_cap" if at_cap >= 0.5 else "ok"
    if template == "ok" and v["seqlen"] == v["memory"] == "—":
        return []  # lengths below their cap, with no tokens per rank or memory, say nothing of memory pressure
    read += [k for k in ("response_length/max", "prompt_length/max") if view.series(k) is not None]
    return [Outcome("ok", template, v, metrics=tuple(read), evidence=v)]


FUNCTIONS: dict[str, CheckFn] = {
    "time_breakdown": time_breakdown,
    "gen_update_balance": gen_update_balance,
    "throughput_drop": throughput_drop,
    "mfu_low": mfu_low,
    "seqlen_imbalance": seqlen_imbalance,
    "oom_risk": oom_risk,
    **agent_loop.FUNCTIONS,  # stragglers and tool time of veRL's agent loop (records in efficiency.toml)
}
