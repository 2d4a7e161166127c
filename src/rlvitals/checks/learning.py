"""L3 learning signal (σ_G, zero-variance groups, advantages) and L4 exploration (pass@k against
reward, rollout diversity, step-level group sizes).

Group statistics come from the framework (TRL ``frac_reward_zero_std``, OpenRLHF
``group_reward_std``) or are derived from rollouts; the logged share is always used as is —
never estimated from the batch mean (a binomial estimate called a run with 78% dead groups
healthy).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import signals
from ..signals import median
from ._base import VERDICT_STATUSES, CheckFn, Outcome, RunView, Series, Status
from ._reward import natural_bounds, reward_bounds, reward_of, severity, truncated_after
from ._shared import held_from
from .course import course_since


def _med(x: np.ndarray) -> float:
    return float(median(x)) if len(x) else float("nan")


def _at(s: Series, a: int, b: int) -> np.ndarray:
    return s.values[(s.steps >= a) & (s.steps <= b)]


#: a median share of responses cut at the length limit at or above which they are all alike (none has an answer)
ALL_CUT = 0.95


def constant_reward(view: RunView, a: int, b: int, least: int = 5) -> float | None:
    """The reward's value when it is exactly the same on every logged step of the run (at least ``least`` of
    them, some in ``a..b``) though the answers differed: every completion scored alike, whatever it said, from
    the first step — the reward function decides, or prompts all out of reach (a reward that varied before
    settling at its top is a solved batch, not this). Answers nearly all cut at the length limit (a median
    :data:`ALL_CUT` share) are alike (no answer in any): their equal scores are the limit's doing, and none is
    returned."""
    if truncated_after(view, a, share=ALL_CUT):
        return None
    reward = reward_of(view)
    if reward is None or len(_at(reward, a, b)) == 0:
        return None
    at = reward.values
    return float(at[0]) if len(at) >= least and bool(np.all(at == at[0])) else None


def _split(view: RunView, a: int, b: int, share: float, p: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """Too easy or too hard: the logged all-correct / all-wrong shares over steps ``a..b``, else an
    estimate from the mean reward's place in its logged batch range (mixed groups assumed to
    average half of it: reward ≈ all_correct + (1 − share)/2); unknown without that range."""
    easy, hard = view.series("group/zero_std/all_correct"), view.series("group/zero_std/all_wrong")
    extra: dict[str, Any] = {}
    if easy is not None and hard is not None:
        e, h = _med(_at(easy, a, b)), _med(_at(hard, a, b))
        inferred = ""
    else:
        reward = reward_of(view)
        bounds = natural_bounds(view, reward) if reward is not None else None
        if reward is None or bounds is None:
            return "unknown", {}
        lo, hi = bounds
        r = _med(_at(reward, a, b))
        extra = {"reward": r, "position": (r - lo) / (hi - lo)}
        e = float(np.clip(extra["position"] - (1 - share) / 2, 0, share))
        h, inferred = share - e, "_inferred"
    if not (np.isfinite(e) and np.isfinite(h)):
        return "unknown", {}
    side = "easy" if e >= p["dominant"] * h else "hard" if h >= p["dominant"] * e else "mixed"
    return side + inferred, {"easy": e, "hard": h, **extra}


def _fall(x: np.ndarray, p: Mapping[str, Any]) -> tuple[signals.Event, float] | None:
    """:func:`signals.fall_from_peak` and the severity to judge it by: the smaller of that fall
    and the fall of the mean (last ``tail`` against everything before the onset, a ``window`` at least). A bimodal
    series — σ_G of two-rollout groups is 0 or 1.41 — flips its median with no loss of signal;
    its mean does not."""
    event = signals.fall_from_peak(x, window=p["window"], tail=p["tail"])
    if event is None:
        return None
    n_tail = max(p["window"], int(round(len(x) * p["tail"])))
    # a window at least before: one step's spread (of two-completion groups: 0, 0.35 or 0.71) is no level
    before, after = float(np.mean(x[: max(event.start, p["window"])])), float(np.mean(x[-n_tail:]))
    return event, min(event.score, 1 - after / before if before > 0 else 0.0)


def _last_regime(view: RunView, s: Series, a: int, b: int) -> int:
    """Where the lasting regime of a zero-variance stretch ``a..b`` (indexes of ``s``) starts: groups all
    correct and groups all wrong are opposite conditions, and when the mean reward moves across most of its
    range inside the stretch (a competent start at 0.9 whose groups are all right, then a broken policy at 0
    whose groups are all wrong) the stretch that lasts is the one after that move. ``a`` when the reward
    holds its level, or was not logged."""
    reward = reward_of(view)
    if reward is None:
        return a
    keep = (reward.steps >= s.step(a)) & (reward.steps <= s.step(b))
    x, steps = reward.values[keep], reward.steps[keep]
    window = max(2, len(x) // 10)
    if len(x) < 2 * window + 2:
        return a
    cut = signals.change_point(x, window, len(x) - window, window)
    before, after = _med(x[:cut]), _med(x[cut:])
    spread = float(np.max(x) - np.min(x))
    if spread <= 0 or abs(after - before) < 0.5 * spread:
        return a
    later = np.flatnonzero(s.steps >= steps[cut])
    return int(later[0]) if len(later) and later[0] <= b else a


def _solving(view: RunView, first: int, last: int, p: Mapping[str, Any]) -> dict[str, Any] | None:
    """The words of a model solving its prompts over a zero-variance stretch ``first..last``: the outcome rose
    over the run (validation, else the reward) and the reward over the stretch sits in the top ``solving`` of
    its range (logged batch min..max, else the run's own); None otherwise."""
    course, reward = course_since(view, view.run.train_steps[0] - 1 if len(view.run.train_steps) else 0), \
        reward_of(view)
    if course is None or not course.rising or reward is None:
        return None
    lo, hi = reward_bounds(view, reward)
    level = _med(_at(reward, first, last))
    position = (level - lo) / (hi - lo)
    return {**course.words(), "reward": level, "position": position} if position >= p["solving"] else None


def zero_variance_groups(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Share of prompt groups whose rollouts all got the same reward (σ_G = 0) held at ``warn`` /
    ``fail`` for ``min_steps`` and ``held_share`` of the run (docs/reading-rules.md#zero-variance-groups: such
    prompts are sampled for nothing — every advantage is 0; DAPO's dynamic sampling drops them). Split into
    too easy and too hard, dated where the lasting regime of the stretch starts (:func:`_last_regime`)."""
    s = view.series("group/zero_std/share")
    if s is None:
        return []
    level = signals.rolling_level(s.values, p["window"])
    held_for = max(int(p["min_steps"]), math.ceil(p["held_share"] * len(s)))
    for status in VERDICT_STATUSES:
        found = signals.sustained_above(s.values, p[status], window=p["window"], min_len=held_for)
        if not found:
            continue
        a, b = found[0]
        a = held_from(s.values >= p[status], a, b)  # the first step that shows it for good, not by chance
        later = _last_regime(view, s, a, b)
        if float(median(s.values[later : b + 1])) >= p[status]:  # the lasting regime holds the level too
            a = later
        first, last = s.step(a), s.step(b)
        share = float(median(s.values[a : b + 1]))
        same = constant_reward(view, first, last) if share >= 1 else None
        template, split = ("constant", {"reward": same}) if same is not None else _split(view, first, last, share, p)
        held = int(sum(e - st + 1 for st, e in found))
        values = {"onset": first, "end": last, "steps": last - first + 1, "share": share, "threshold": p[status],
                  "peak": float(level[a : b + 1].max()), "held": held, "n": len(s), **split}
        solving = _solving(view, first, last, p) if not template.startswith(("hard", "constant")) else None
        if solving is not None:
            # groups agreeing because the model learnt: it is solving its prompts — nothing is broken (a note
            # to watch: the data is spent once the outcome stops rising)
            values.update(solving)
            status, template = "note", "learning"
        return [Outcome(status, template, values, first, (first, last), (s.key,),
                        {"value": share, "peak": values["peak"], "threshold": p[status] if status != "note" else
                         p["warn"], "steps_above": held, **split})]
    return [Outcome("ok", "ok", {"median": float(median(s.values)), "max_level": float(level.max()),
                                 "warn": p["warn"]}, metrics=(s.key,))]


def _dead_steps(view: RunView, s: Series, values: dict[str, Any], p: Mapping[str, Any]) -> list[Outcome]:
    """A mean σ_G (or batch std) of exactly 0 means every group of that step got identical rewards: the
    step taught nothing. How many such steps matters, and where: more than ``dead_warn`` of the steps in
    some stretch of a fifth of the run (at least ``window`` × 2 steps) warns; nearly every step of such
    a stretch (``dead_fail``) fails — compute burnt for no learning signal, whether the data is solved
    (the reward at its top there: the words say so) or unlearnable; a scattered ``dead_note`` of the run
    is a note (sample more per prompt, or filter the dead groups). Judged on any number of steps: a
    spread of exactly 0 needs no baseline."""
    dead = s.values <= 0
    runs = signals.runs_of(dead)
    n = len(s)
    share = float(np.mean(dead)) if n else 0.0
    width = min(n, max(2 * int(p["window"]), n // 5))
    # the most dead steps in any stretch of ``width``, counted in integers: a float convolution's
    # rounding depends on the memory the arrays happen to lie in
    counts = np.cumsum(np.concatenate(([0], dead.astype(np.int64))))
    worst = int(np.max(counts[width:] - counts[:-width])) / width if width else 0.0
    values.update(zero_steps=share, worst=worst, width=width)
    if share < p["dead_note"] or not runs:
        return [Outcome("ok", "ok", values, metrics=(s.key,))]
    a, b = max(runs, key=lambda r: r[1] - r[0])
    values.update(zero_count=int(np.sum(dead)), longest=s.step(b) - s.step(a) + 1, longest_start=s.step(a),
                  onset=s.step(runs[0][0]))
    status: Status = "fail" if worst >= p["dead_fail"] else "warn" if worst > p["dead_warn"] else "note"
    reward = reward_of(view)
    easy = False
    if reward is not None:
        at_dead = reward.values[np.isin(reward.steps, s.steps[dead])]
        lo, hi = reward_bounds(view, reward)
        # "the reward at its top there": the top tenth of its range (the batch min..max when logged; a run's own
        # 90th percentile is 0 when it mostly fails), and answers not cut at the length limit, which score alike
        easy = len(at_dead) > 0 and _med(at_dead) >= lo + p["solved"] * (hi - lo) \
            and not truncated_after(view, s.step(runs[0][0]))
    same = constant_reward(view, s.step(runs[0][0]), s.step(runs[-1][1])) if worst >= p["dead_fail"] else None
    if same is not None:
        values["reward"] = same
    template = "dead_constant" if same is not None else "dead_easy" if easy else "dead"
    return [Outcome(status, template, values, s.step(runs[0][0]),
                    (s.step(runs[0][0]), s.step(runs[-1][1])), (s.key,),
                    {"zero_steps": share, "worst_stretch": worst, "stretch": width, "solved": easy,
                     "threshold": p["dead_warn"], "longest": (s.step(a), s.step(b))})]


def reward_std_collapse(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """σ_G (or the batch reward std) fallen by ``warn_drop`` / ``fail_drop`` from its own earlier
    peak level (10-step medians) to its level over the last ``tail`` of the run: the learning
    signal is vanishing, whatever the reward's units. Dated where the lasting regime starts (a spread lost
    to a solved batch, then to a broken policy, is dated at the break: :func:`_last_regime`)."""
    s = view.first("group/reward_std/mean", "critic/score/std")
    if s is None:
        return []
    zero = float(np.mean(s.values <= 0))
    values: dict[str, Any] = {"metric": s.key, "n": len(s), "zero_steps": zero, "min_steps": 3 * p["window"]}
    values.update(first=float(median(s.values[: p["window"]])), last=float(median(s.values[-p["window"]:])))
    if len(s) < 3 * p["window"]:
        dead = _dead_steps(view, s, values, p)
        return dead if dead[0].status != "ok" else [Outcome("skipped", "short", values, metrics=(s.key,))]
    found = _fall(s.values, p)
    if found is None or found[1] < p["warn_drop"]:
        return _dead_steps(view, s, values, p)
    event, score = found
    onset, peak_step = s.step(_last_regime(view, s, event.start, len(s) - 1)), s.step(event.peak)
    status = severity(score >= p["fail_drop"])
    values.update(onset=onset, peak_step=peak_step, peak=event.baseline, value=event.value, drop=event.score)
    template, metrics = "fall", [s.key]
    live = _live_groups(view, onset, p)
    if live is not None:  # most groups still have a spread: each is scaled by its own σ_G, so they still teach
        values.update(zero_share=live[1], zero_key=live[0])
        return [Outcome("note", "fall_live", values, onset, (onset, s.step(len(s) - 1)), (s.key, live[0]),
                        {"baseline": event.baseline, "value": event.value, "drop": event.score, "severity": score,
                         "zero_share": live[1], "threshold": p["live_share"]})]
    reward = reward_of(view)
    if reward is not None:
        lo, hi = reward_bounds(view, reward)
        r = _med(reward.values[reward.steps >= onset])
        values.update(reward=r, position=(r - lo) / (hi - lo))
        template, metrics = "fall_reward", [s.key, reward.key]
        course = course_since(view, onset)
        known = natural_bounds(view, reward) is not None  # "solved" needs the task's range, not the run's own
        if known and values["position"] >= p["solved"] and not truncated_after(view, onset):
            # the groups agree because they are right: the run learnt its data, which now teaches nothing
            # more — act soon (move the data on), nothing is broken
            template, status = "fall_solved", "warn"
        elif course is not None and course.rising:
            # the spread went as the outcome rose: a policy converging on what it learnt, not a broken one
            values.update(course.words())
            template, status = "fall_converged", "warn"
    return [Outcome(status, template, values, onset, (onset, s.step(len(s) - 1)), tuple(metrics),
                    {"baseline": event.baseline, "value": event.value, "drop": event.score, "severity": score,
                     "threshold": p[f"{status}_drop"], "zero_steps": zero})]


def _live_groups(view: RunView, onset: int, p: Mapping[str, Any]) -> tuple[str, float] | None:
    """(key, median share) of the zero-variance share after ``onset`` when it stays below ``live_share``;
    None when it is not logged (the fall alone must judge) or when the groups did go dead."""
    share = view.series("group/zero_std/share")
    if share is None:
        return None
    after = share.after(onset)
    if len(after) < p["window"]:
        return None
    middle = float(median(after.values))
    return (share.key, middle) if middle < p["live_share"] else None


def advantage_collapse(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The advantage range (max − min of the batch) shrinking to ~0: every group in the batch is
    identical and the step teaches nothing. Steps whose range is below ``dead`` × the run's median
    range are dead; ``dead_warn`` of them warn; a range fallen ``fail_drop`` from its peak fails."""
    top, bottom = view.series("critic/advantages/max"), view.series("critic/advantages/min")
    if top is None or bottom is None:
        return []
    steps, a, b = top.aligned(bottom)
    spread = np.maximum(a - b, 0.0)
    typical = float(median(spread))
    dead = spread <= p["dead"] * max(typical, 1e-12)
    values: dict[str, Any] = {"typical": typical, "dead_share": float(dead.mean()), "dead_count": int(dead.sum()),
                              "first": float(median(spread[: p["window"]])),
                              "last": float(median(spread[-p["window"]:]))}
    metrics = (top.key, bottom.key)
    found = _fall(spread, p)
    if found is not None and found[1] >= p["fail_drop"]:
        event = found[0]
        onset = int(steps[event.start])
        values.update(onset=onset, peak=event.baseline, value=event.value, drop=event.score)
        evidence = {"baseline": event.baseline, "value": event.value, "drop": event.score, "threshold": p["fail_drop"]}
        return [Outcome("fail", "collapse", values, onset, (onset, int(steps[-1])), metrics, evidence)]
    if values["dead_share"] >= p["dead_warn"]:
        where = steps[dead]
        listed = ", ".join(str(int(x)) for x in where[:8]) + (" …" if len(where) > 8 else "")
        values.update(onset=int(where[0]), steps=listed)
        return [Outcome("warn", "dead", values, int(where[0]), (int(where[0]), int(where[-1])), metrics,
                        {"dead_steps": [int(x) for x in where[:50]], "threshold": p["dead_warn"]})]
    return [Outcome("ok", "ok", values, metrics=metrics)]


_PASSK = re.compile(r"pass@(\d+)")
_BEST = re.compile(r"(?:.*/)?best@(\d+)/mean")


def _passk(view: RunView, min_points: int) -> tuple[str, np.ndarray, np.ndarray] | None:
    """The widest pass@k the run has (k > 1): from training rollouts, else validation best@N."""
    found = []
    metrics = view.metrics()
    for key in metrics:
        hit = _PASSK.fullmatch(key)
        s = view.series(key, min_points) if hit and int(hit.group(1)) > 1 else None
        if s is not None and hit is not None:
            found.append((int(hit.group(1)), key, s.steps, s.values))
    for source, frame in view.validation().items():
        for col in frame.columns:
            hit = _BEST.fullmatch(col)
            if hit is None or int(hit.group(1)) <= 1:
                continue
            sub = frame.select("step", col).drop_nulls()
            x = sub[col].to_numpy().astype(float)
            keep = np.isfinite(x)
            if keep.sum() >= min_points and not any(f[1].startswith("pass@") for f in found):
                found.append((int(hit.group(1)), f"val {source} {col}", sub["step"].to_numpy()[keep], x[keep]))
    if not found:
        return None
    _, key, steps, values = max(found, key=lambda f: (f[1].startswith("pass@"), f[0]))
    return key, steps, values


def reward_passk_decoupling(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Reward still rising (Kendall trend ≥ ``rise`` and ≥ ``reward_gain`` of its range) while
    pass@k (k > 1; or validation best@N) is flat (trend ≤ ``flat``) from some step to the end
    (docs/reading-rules.md#reward-passk-decoupling: samples concentrate on known correct patterns — early mode collapse,
    long before the reward turns). pass@k falling (trend ≤ −``rise``) while the reward rises fails."""
    reward, found = reward_of(view), _passk(view, p["min_points"])
    if reward is None:
        return []
    if found is None:
        return [Outcome("skipped", "no_passk", {"min_points": p["min_points"]}, metrics=(reward.key,))]
    key, ks, kv = found
    if float(median(kv)) >= p["ceiling"]:  # pass@k already at 1 cannot rise: flat says nothing
        return [Outcome("skipped", "at_ceiling", {"metric": key, "level": float(median(kv)),
                                                  "ceiling": p["ceiling"]}, metrics=(reward.key, key))]
    lo, hi = reward_bounds(view, reward)
    for i in np.unique(np.linspace(0, len(ks) - p["min_points"], p["candidates"]).astype(int)):
        start = int(ks[i])
        rv, pv = reward.values[reward.steps >= start], kv[i:]
        b = max(3, len(rv) // 5)
        rise = _med(rv[-b:]) - _med(rv[:b])
        gain = rise / (hi - lo)
        # the reward's rise must stand out of its own step noise (the first steps of a live run are all noise)
        clear = rise >= p["rise_noise"] * 1.25 * signals.noise_scale(rv) / np.sqrt(b)
        r_tau, k_tau = signals.trend(rv), signals.trend(pv)
        if r_tau >= p["rise"] and gain >= p["reward_gain"] and clear and k_tau <= p["flat"]:
            status = severity(k_tau <= -p["rise"])
            if status == "fail":  # pass@k falls: the decoupling begins where it peaked, not where the search began
                head = signals.rolling_level(pv, 3)[: max(1, int(len(pv) * 0.8))]
                peak, final = float(np.max(head)), _med(pv[-max(2, len(pv) // 5):])
                band = max(2 * signals.noise_scale(pv), 0.05 * (peak - final))
                top = int(np.flatnonzero(head >= peak - band)[-1])  # the last step still at the peak
                i, start = i + top, int(ks[i + top])
                rv, pv = reward.values[reward.steps >= start], np.r_[peak, peak, kv[i + 1:]]
            values = {"metric": key, "onset": start, "reward_first": float(rv[:3].mean()),
                      "reward_last": float(rv[-3:].mean()), "passk_first": float(pv[:2].mean()),
                      "passk_last": float(pv[-2:].mean()), "reward_trend": r_tau, "passk_trend": k_tau}
            return [Outcome(status, status, values, start, (start, int(ks[-1])), (reward.key, key),
                            {"reward_trend": r_tau, "passk_trend": k_tau, "reward_gain": gain,
                             "threshold": {"rise": p["rise"], "flat": p["flat"]}})]
    values = {"metric": key, "reward_first": _med(reward.values[:5]), "reward_last": _med(reward.values[-5:]),
              "passk_first": float(kv[:2].mean()), "passk_last": float(kv[-2:].mean())}
    return [Outcome("ok", "ok", values, metrics=(reward.key, key))]


#: diversity metrics where a higher value means less diversity; read as 1 − value
LESS_DIVERSE_WHEN_HIGH = ("diversity/embedding_cosine", "diversity/duplicate_rate", "group/zero_std/identical")


def diversity_collapse(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Every diversity metric (distinct-n, edit distances, coverage, answer entropy; cosine
    similarity and duplicate rates as 1 − value) fallen ``warn_drop`` / ``fail_drop`` from its
    own earlier peak level (docs/reading-rules.md#diversity-collapse: a steady collapse of trajectory diversity is
    exploration lost)."""
    metrics = view.metrics()
    keys = sorted(k for k in metrics if k.startswith("diversity/") or k == "group/zero_std/identical")
    out = []
    for key in keys:
        s = view.series(key)
        if s is None:
            continue
        flip = key in LESS_DIVERSE_WHEN_HIGH
        x = 1.0 - s.values if flip else s.values
        values: dict[str, Any] = {"metric": key, "n": len(s), "min_steps": 3 * p["window"],
                                  "first": float(median(s.values[: p["window"]])),
                                  "last": float(median(s.values[-p["window"]:]))}
        found = _fall(x, p) if len(s) >= 3 * p["window"] else None
        if found is None or found[1] < p["warn_drop"]:
            out.append(Outcome("ok" if len(s) >= 3 * p["window"] else "skipped",
                               "ok" if len(s) >= 3 * p["window"] else "short", values, metrics=(key,)))
            continue
        event, score = found
        status = severity(score >= p["fail_drop"])
        onset = s.step(event.start)
        peak, now = (1 - event.baseline, 1 - event.value) if flip else (event.baseline, event.value)
        values.update(onset=onset, peak=peak, value=now, drop=event.score)
        out.append(Outcome(status, "rise" if flip else "fall", values, onset, (onset, s.step(len(s) - 1)), (key,),
                           {"baseline": peak, "value": now, "diversity_lost": event.score,
                            "threshold": p[f"{status}_drop"]}))
    return out


def _group_n(view: RunView, p: Mapping[str, Any]) -> int:
    if p["group_size"] > 0:
        return int(p["group_size"])
    for key, value in view.config.items():
        if key.endswith((".rollout.n", "num_generations", "n_samples_per_prompt", "group_size")) \
                and isinstance(value, (int, float, str)):
            try:
                return int(value)
            except (TypeError, ValueError):
                continue
    return 0


def group_size_concentration(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Mean step-level group size (GiGPO anchor-state groups) held at ≥ ``near_full`` of the group
    size N: rollouts pass through the same states — exploration lost, or a policy that has settled
    (docs/reading-rules.md#group-size-concentration reads GiGPO's Fig. 5 both ways). Without N, a sustained
    rise of ``rise`` warns."""
    s = view.series("group/step_groups/size/mean")
    if s is None:
        return []
    n = _group_n(view, p)
    w = p["window"]
    first, last = float(median(s.values[:w])), float(median(s.values[-w:]))
    values: dict[str, Any] = {"first": first, "last": last, "group_n": n, "near_full": p["near_full"]}
    if n > 0:
        found = signals.sustained_above(s.values / n, p["near_full"], window=w, min_len=p["min_steps"])
        if not found:
            return [Outcome("ok", "ok", {**values, "share": last / n}, metrics=(s.key,))]
        a, b = found[-1]
        onset = s.step(a)
        values.update(onset=onset, level=float(median(s.values[a : b + 1])), share=last / n)
        return [Outcome("warn", "warn", values, onset, (onset, s.step(b)), (s.key,),
                        {"value": values["level"], "group_size": n, "threshold": p["near_full"] * n})]
    change = (last - first) / max(abs(first), 1e-12)
    values["change"] = change
    if change >= p["rise"] and signals.trend(s.values) >= p["trend"]:
        i = int(np.flatnonzero(signals.rolling_level(s.values, w) >= first + (last - first) / 4)[0])
        onset = s.step(i)
        values["onset"] = onset
        return [Outcome("warn", "warn_rising", values, onset, (onset, s.step(len(s) - 1)), (s.key,),
                        {"change": change, "threshold": p["rise"]})]
    return [Outcome("skipped", "ok_unknown_n", values, metrics=(s.key,))]  # could not judge: the words say why


FUNCTIONS: dict[str, CheckFn] = {
    "zero_variance_groups": zero_variance_groups,
    "reward_std_collapse": reward_std_collapse,
    "advantage_collapse": advantage_collapse,
    "reward_passk_decoupling": reward_passk_decoupling,
    "diversity_collapse": diversity_collapse,
    "group_size_concentration": group_size_concentration,
}
