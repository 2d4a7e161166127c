"""Checks on the per-step series the rollout analysis derives (``rlvitals diagnose --rollouts``).

The reading rules ask for the segment quality of a reasoning rollout — the think segment's repetition,
the answer's format compliance and its consistency with the think segment, repeated tool calls
(docs/reading-rules.md#segments), tool calls whose arguments do not parse (docs/reading-rules.md#tool-call-args)
and the entropy inside the think segment (docs/reading-rules.md#segment-entropy) — for the high-entropy
("forking") tokens the entropy squeeze removes (docs/reading-rules.md#high-entropy-tokens), and for the
effective batch that is far smaller than the batch when few prompts carry the signal
(docs/reading-rules.md#effective-batch). No framework logs
these; :mod:`rlvitals.rollout` computes them from dumped rollouts and ``Run.with_series`` joins
them onto the run. Each check reads shares that are fractions by definition against fixed
bands, and changes against the run's own first steps (rollout dumps are often short, so the
windows are a few steps, not tens).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import signals
from ..signals import median
from ._base import CheckFn, Outcome, RunView, Series, Status

#: a reward function whose name says it rewards the format (TRL ``rewards/format_reward/mean``)
_FORMAT_REWARD = re.compile(r"^reward_fn/.*format.*/mean$")


#: fewer steps than this have no start and end to tell apart (a start and an end of 3 steps each)
MIN_CHANGE = 6


def _ends(x: np.ndarray, share: float) -> tuple[float, float, int]:
    """Medians of the first and the last ``share`` of a series (at least 3 values, at most half of
    it) and that count: where the run started and where it is now. A series shorter than
    :data:`MIN_CHANGE` has no start and end apart: both are its median, over all of it.

    >>> _ends(np.array([1.0, 1.0, 1.0, 5.0, 9.0, 9.0, 9.0]), 0.2)
    (1.0, 9.0, 3)
    >>> _ends(np.array([1.0, 2.0, 9.0]), 0.2)
    (2.0, 2.0, 3)
    """
    n = len(x)
    if n < MIN_CHANGE:
        level = float(median(x))
        return level, level, n
    b = max(3, min(n // 2, int(round(n * share))))
    return float(median(x[:b])), float(median(x[-b:])), b


def _onset(level: np.ndarray, mark: float, below: bool, start: int = 0) -> int:
    """The first index from ``start`` whose level is past ``mark`` (below or above it) and stays
    past it for at least 80 % of the rest of the run: where a sustained move began, not an early
    dip that came back.

    >>> _onset(np.array([5.0, 1.0, 5.0, 5.0, 2.0, 1.0, 1.0]), 3.0, below=True)
    4
    """
    past = level[start:] < mark if below else level[start:] > mark
    if not past.any():
        return start
    rest = np.cumsum(past[::-1])[::-1] / np.arange(len(past), 0, -1)
    held = np.flatnonzero(past & (rest >= 0.8))
    return start + int(held[0] if len(held) else np.flatnonzero(past)[0])


def _at(s: Series | None, steps: np.ndarray) -> np.ndarray:
    """Values of ``s`` at ``steps`` (NaN where it was not logged, or everywhere without ``s``)."""
    out = np.full(len(steps), np.nan)
    if s is not None:
        _, mine, theirs = np.intersect1d(steps, s.steps, return_indices=True)
        out[mine] = s.values[theirs]
    return out


def _stretch(s: Series, p: Mapping[str, Any], template: str) -> list[Outcome]:
    """A share held at ``fail`` (else ``warn``) for ``min_steps``: its first stretch, or nothing."""
    level = signals.rolling_level(s.values, p["window"])
    need = min(int(p["min_steps"]), len(s))
    for status in ("fail", "warn"):
        found = signals.sustained_above(s.values, p[status], window=p["window"], min_len=need)
        if found:
            a, b = found[0]
            values = {"onset": s.step(a), "end": s.step(b), "steps": b - a + 1,
                      "level": float(median(s.values[a : b + 1])), "peak": float(level[a : b + 1].max()),
                      "threshold": p[status]}
            return [Outcome(status, f"{template}_{status}", values, s.step(a), s.span(a, b), (s.key,),
                            {"value": values["level"], "peak": values["peak"], "threshold": p[status]})]
    return []


def _rise(s: Series, p: Mapping[str, Any]) -> tuple[bool, dict[str, Any]]:
    """Whether a share rose by ``rise`` (absolute) to at least twice its start, with the numbers."""
    first, last, _ = _ends(s.values, p["share"])
    values: dict[str, Any] = {"first": first, "last": last, "rise": p["rise"]}
    if last - first < p["rise"] or last < 2 * first:
        return False, values
    level = signals.rolling_level(s.values, p["window"])
    i = _onset(level, first + (last - first) / 4, below=False)
    values["onset"] = s.step(i)
    return True, values


def format_compliance(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Share of rollouts in the think-then-answer format (one think segment, then one ``<answer>`` segment
    as R1, or a final ``\\boxed{}`` as veRL's own rewards: :func:`~rlvitals.rollout.segments.format_compliant`),
    the format-compliance rate (docs/reading-rules.md#format-compliance): near 0 on most steps, or fallen to near 0,
    fails; a fall of ``drop`` from its best level warns; staying below ``high`` is a note. Skipped when no rollout ever
    wrote a think segment (the format is not in use) or when the rollouts call tools (the one-think-one-answer
    rule does not fit multi-turn agent rollouts)."""
    s = view.series("rollout/format_compliance")
    if s is None:
        return []
    tools = view.series("rollout/tool_calls/mean", min_points=1)
    if tools is not None and float(median(tools.values)) > 0:
        return [Outcome("skipped", "tools", {"calls": float(median(tools.values))}, metrics=(s.key, tools.key))]
    if view.series("rollout/think_length/mean", min_points=1) is None:
        rewarded = sorted(k for k in view.metrics() if _FORMAT_REWARD.match(k))
        return [Outcome("skipped", "unused", {"rewards": ", ".join(rewarded) or "none"}, metrics=(s.key,))]
    x = s.values
    first, last, b = _ends(x, p["share"])
    level = signals.rolling_level(x, p["window"])
    top = int(np.argmax(level[: max(1, len(x) - b)]))
    low = x <= p["fail"]
    values: dict[str, Any] = {"first": first, "last": last, "peak": float(level[top]), "peak_step": s.step(top),
                              "low_steps": int(low.sum()), "n": len(x), "fail": p["fail"], "high": p["high"]}
    evidence = {"first": first, "last": last, "peak": values["peak"], "low_steps": values["low_steps"]}
    end = s.step(len(x) - 1)
    if low.mean() >= p["fail_share"] and last <= p["fail"]:
        onset = s.step(int(np.flatnonzero(low)[0]))
        return [Outcome("fail", "absent", {**values, "onset": onset}, onset, (onset, end), (s.key,),
                        {**evidence, "threshold": p["fail"]})]
    if len(x) >= MIN_CHANGE and values["peak"] - last >= p["drop"]:
        onset = s.step(_onset(level, values["peak"] - (values["peak"] - last) / 4, below=True, start=top))
        status: Status = "fail" if last <= p["fail"] else "warn"
        template = "broke" if status == "fail" else "drift"
        return [Outcome(status, template, {**values, "onset": onset}, onset, (onset, end), (s.key,),
                        {**evidence, "threshold": p["drop"]})]
    if last < p["high"]:
        since = s.step(len(x) - b)
        return [Outcome("note", "below", {**values, "since": since, "broken": 1 - last}, since, (since, end),
                        (s.key,), {**evidence, "threshold": p["high"]})]
    return [Outcome("ok", "ok", values, metrics=(s.key,), evidence=evidence)]


def think_repetition(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Repeated 4-word phrases inside the think segment, its repetition rate
    (docs/reading-rules.md#think-repetition): held at ``fail``
    the reasoning loops, at ``warn`` it is padded; a rise of ``rise`` to twice its start warns,
    read with the think length (growing together = the length bias Dr. GRPO describes)."""
    s = view.series("rollout/think_repetition")
    if s is None:
        return []
    held = _stretch(s, p, "loop")
    if held:
        return held
    rose, values = _rise(s, p)
    if not rose:
        return [Outcome("ok", "ok", values, metrics=(s.key,), evidence=values)]
    metrics: tuple[str, ...] = (s.key,)
    template = "rising"
    length = view.series("rollout/think_length/mean")
    if length is not None:
        l0, l1, _ = _ends(length.values, p["share"])
        values.update(length_first=l0, length_last=l1)
        if l0 > 0 and l1 >= (1 + p["grow"]) * l0:
            template, metrics = "rising_long", (s.key, length.key)
    onset = values["onset"]
    return [Outcome("warn", template, values, onset, (onset, s.step(len(s) - 1)), metrics,
                    {**values, "threshold": p["rise"]})]


def _copied(view: RunView, s: Series | None, p: Mapping[str, Any]) -> list[Outcome]:
    """Steps whose median think segment holds at most ``min_words`` words, or is barely longer than
    the answer (at most ``ratio`` × its words) while nearly every answer is in it or no answer can be
    compared with it: held for ``min_steps``, there is no reasoning behind the answer."""
    think = view.series("rollout/think_length/p50", min_points=1)
    if think is None or len(think) < p["min_steps"]:
        return []
    answer = np.nan_to_num(_at(view.series("rollout/answer_length/p50", min_points=1), think.steps), nan=0.0)
    limit = np.maximum(p["min_words"], p["ratio"] * answer)
    share = _at(s, think.steps)  # NaN: no rollout of the step had a non-empty think segment and an answer
    copy = (think.values <= limit) & ((share >= p["all"]) | np.isnan(share))
    found = signals.runs_of(copy | (think.values <= p["min_words"]), min_len=int(p["min_steps"]))
    if not found:
        return []
    a, b = found[0]
    known = share[a : b + 1][np.isfinite(share[a : b + 1])]
    values = {"onset": think.step(a), "end": think.step(b), "steps": b - a + 1,
              "share": float(median(known)) if len(known) else float("nan"),
              "think": float(median(think.values[a : b + 1])), "answer": float(median(answer[a : b + 1])),
              "all": p["all"]}
    # a few words, or nothing to compare the answer with: no reasoning at all, whatever it holds
    template = "copy" if len(known) and values["think"] > p["min_words"] else "empty"
    metrics = (think.key,) if s is None else (s.key, think.key)
    return [Outcome("fail", template, values, think.step(a), think.span(a, b), metrics,
                    {"value": values["share"], "think_words": values["think"], "answer_words": values["answer"],
                     "threshold": p["all"]})]


def answer_in_reasoning(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Whether the answer given appears in the think segment (docs/reading-rules.md#answer-in-reasoning:
    the answer's consistency with the think segment, and whether the chain of thought is real reasoning). A healthy
    reasoning ends on its answer, so a high share alone is fine. It fails when the think segment
    is barely longer than the answer and holds it in nearly every rollout, or is empty (there is
    no reasoning to be faithful to); it warns when the share climbs while the think segment
    shrinks (heading there), or when it falls by ``drop`` (answers stop following the reasoning)."""
    s = view.series("rollout/answer_in_reasoning")
    copied = _copied(view, s, p)
    if copied:
        return copied
    if s is None:
        think = view.series("rollout/think_length/p50")
        words = float(median(think.values)) if think is not None else float("nan")
        return [Outcome("skipped", "no_answers", {"think": words}, metrics=("rollout/think_length/p50",))]
    first, last, _ = _ends(s.values, p["share"])
    values: dict[str, Any] = {"first": first, "last": last}
    level = signals.rolling_level(s.values, p["window"])
    end = s.step(len(s) - 1)
    think = view.series("rollout/think_length/mean")
    if think is not None and last - first >= p["rise"]:
        t0, t1, _ = _ends(think.values, p["share"])
        if t0 > 0 and t1 <= (1 - p["shrink"]) * t0:
            onset = s.step(_onset(level, first + (last - first) / 4, below=False))
            values.update(onset=onset, think_first=t0, think_last=t1)
            return [Outcome("warn", "shrinking", values, onset, (onset, end), (s.key, think.key),
                            {**values, "threshold": p["shrink"]})]
    if first - last >= p["drop"]:
        onset = s.step(_onset(level, first - (first - last) / 4, below=True))
        values["onset"] = onset
        return [Outcome("warn", "apart", values, onset, (onset, end), (s.key,), {**values, "threshold": p["drop"]})]
    return [Outcome("ok", "ok", values, metrics=(s.key,), evidence=values)]


def tool_call_repeats(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Tool calls identical to an earlier call of the same rollout, the repeated-call rate
    (docs/reading-rules.md#tool-call-repeats), and its redundant-call failure: each query searched 3–5 times
    over while the reward looks fine.
    Held at ``fail`` or ``warn`` for ``min_steps``; a rise of ``rise`` to twice its start warns."""
    s = view.series("rollout/tool_calls/repeat_rate")
    if s is None:
        return []
    calls = view.series("rollout/tool_calls/mean")
    if calls is None:
        return []
    per = float(median(calls.values))
    found = _stretch(s, p, "repeat")
    if found:
        out = found[0]
        level = float(out.values["level"])
        # a call made k times in all has k - 1 repeats: a repeat share r means 1 / (1 - r) copies of each
        times = 1 / (1 - level) if level < 1 else float("inf")
        extra = {"times": times, "calls": per}
        return [Outcome(out.status, out.template, {**out.values, **extra}, out.onset_step, out.span,
                        (s.key, calls.key), {**out.evidence, **extra})]
    rose, values = _rise(s, p)
    values["calls"] = per
    if not rose:
        return [Outcome("ok", "ok", values, metrics=(s.key,), evidence=values)]
    onset = values["onset"]
    return [Outcome("warn", "rising", values, onset, (onset, s.step(len(s) - 1)), (s.key,),
                    {**values, "threshold": p["rise"]})]


def high_entropy_tokens(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Share of tokens above the first step's 0.8 entropy quantile (docs/reading-rules.md#high-entropy-tokens:
    the entropy squeeze; Clip-Cov keeps the gradient of these "forking" tokens because that is where the policy
    still explores). About 0.2 at the start by construction: fallen by ``warn_drop`` warns, by
    ``fail_drop`` (almost no forking token left) fails; risen to ``rise`` × its start warns (the
    policy grows less certain at many positions, the converse of
    docs/reading-rules.md#entropy-collapse)."""
    s = view.series("token/entropy_high_share")
    if s is None:
        return []
    if len(s) < MIN_CHANGE:
        return [Outcome("skipped", "short", {"n": len(s), "needed": MIN_CHANGE}, metrics=(s.key,))]
    first, last, values = _start_to_end(s, p["share"])
    if first <= 0:
        return [Outcome("skipped", "no_tail", values, metrics=(s.key,))]
    entropy = view.series("actor/entropy")
    evidence = dict(values)
    if entropy is not None:
        e0, e1, _ = _ends(entropy.values, p["share"])
        evidence["entropy_change"] = e1 / e0 - 1 if e0 > 0 else None
    level = signals.rolling_level(s.values, p["window"])
    ratio = last / first
    if ratio <= 1 - p["warn_drop"] or ratio >= p["rise"]:
        falling = ratio < 1
        onset = s.step(_onset(level, first + (last - first) / 4, below=falling))
        status: Status = "fail" if ratio <= 1 - p["fail_drop"] else "warn"
        template = ("collapse" if status == "fail" else "fall") if falling else "rise"
        values["onset"] = onset
        threshold = p[f"{status}_drop"] if falling else p["rise"]
        return [Outcome(status, template, values, onset, (onset, s.step(len(s) - 1)), (s.key,),
                        {**evidence, "threshold": threshold})]
    return [Outcome("ok", "ok", values, metrics=(s.key,), evidence=evidence)]


def effective_batch(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Share of the batch's rollouts in groups whose rewards differ, the only ones with a non-zero
    GRPO advantage (docs/reading-rules.md#effective-batch: an effective batch far smaller than the batch). Zero on most
    steps, or on every recent step, fails (nothing is learned); halved from its start (``shrink``) warns;
    below ``note`` of the batch is a note: that much generation teaches nothing."""
    s = view.series("group/effective_batch")
    if s is None:
        return []
    x = s.values
    first, last, b = _ends(x, p["share"])
    zero = x <= 0
    groups, size = view.series("group/effective_batch/groups"), view.series("group/size/mean")
    g = float(median(groups.values[-b:])) if groups is not None else float("nan")
    per = float(median(size.values[-b:])) if size is not None else float("nan")
    values: dict[str, Any] = {"first": first, "last": last, "n": len(x), "zero_steps": int(zero.sum()),
                              "groups": g, "samples": g * per, "waste": 1 - last, "note": p["note"]}
    evidence = {"first": first, "last": last, "zero_steps": values["zero_steps"], "groups": g}
    end = s.step(len(x) - 1)
    if zero.mean() >= p["fail_share"] or zero[-b:].all():
        onset = s.step(int(np.flatnonzero(zero)[0]))
        return [Outcome("fail", "none", {**values, "onset": onset}, onset, (onset, end), (s.key,),
                        {**evidence, "threshold": p["fail_share"]})]
    if first >= p["min_first"] and last <= (1 - p["shrink"]) * first:
        level = signals.rolling_level(x, p["window"])
        onset = s.step(_onset(level, first - (first - last) / 4, below=True))
        return [Outcome("warn", "shrinking", {**values, "onset": onset}, onset, (onset, end), (s.key,),
                        {**evidence, "threshold": p["shrink"]})]
    if last < p["note"]:
        since = s.step(len(x) - b)
        template = "small" if groups is not None and size is not None else "small_share"
        return [Outcome("note", template, {**values, "since": since}, since, (since, end), (s.key,),
                        {**evidence, "threshold": p["note"]})]
    return [Outcome("ok", "ok", values, metrics=(s.key,), evidence=evidence)]


def tool_call_args(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Share of tool calls whose arguments parse as a JSON object (docs/reading-rules.md#tool-call-args: the
    tool-call segment's argument format). Invalid on ``fail`` of the calls, or on ``warn``, held for ``min_steps``
    on ``window``-step levels; the valid share fallen by ``drop`` from its start warns."""
    s = view.series("rollout/tool_calls/valid_args")
    if s is None:
        return []
    bad = 1 - s.values
    level = signals.rolling_level(bad, p["window"])
    need = min(int(p["min_steps"]), len(s))
    for status in ("fail", "warn"):
        found = signals.sustained_above(bad, p[status], window=p["window"], min_len=need)
        if found:
            a, b = found[0]
            held = {"onset": s.step(a), "end": s.step(b), "steps": b - a + 1,
                    "level": 1 - float(median(bad[a : b + 1])), "low": 1 - float(level[a : b + 1].max()),
                    "threshold": 1 - p[status]}
            return [Outcome(status, f"invalid_{status}", held, s.step(a), s.span(a, b), (s.key,),
                            {"value": held["level"], "low": held["low"], "threshold": held["threshold"]})]
    first, last, _ = _ends(s.values, p["share"])
    values: dict[str, Any] = {"first": first, "last": last}
    if first - last < p["drop"]:
        return [Outcome("ok", "ok", values, metrics=(s.key,), evidence=values)]
    onset = s.step(_onset(signals.rolling_level(s.values, p["window"]), first - (first - last) / 4, below=True))
    values["onset"] = onset
    return [Outcome("warn", "falling", values, onset, (onset, s.step(len(s) - 1)), (s.key,),
                    {**values, "threshold": p["drop"]})]


def _start_to_end(s: Any, share: float) -> tuple[float, float, dict[str, Any]]:
    """A series' level at its start and at its end (:func:`_ends`) and the values its messages quote."""
    first, last, _ = _ends(s.values, share)
    return first, last, {"first": first, "last": last, "change": last / first - 1 if first > 0 else 0.0}


def think_entropy_collapse(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Token entropy inside the think segment against the answer segment's (docs/reading-rules.md#segment-entropy):
    the think segment's fallen by ``drop`` from its start while the answer's fell by less than ``answer_drop``
    warns (the reasoning became a fixed template while the answer is still uncertain); both fallen is a note (the
    policy's entropy fell everywhere: the entropy checks read that)."""
    s = view.series("rollout/think_entropy/mean")
    if s is None:
        return []
    if len(s) < MIN_CHANGE:
        return [Outcome("skipped", "short", {"n": len(s), "needed": MIN_CHANGE}, metrics=(s.key,))]
    first, last, values = _start_to_end(s, p["share"])
    if first <= 0 or last > (1 - p["drop"]) * first:
        return [Outcome("ok", "ok", values, metrics=(s.key,), evidence=values)]
    onset = s.step(_onset(signals.rolling_level(s.values, p["window"]), first + (last - first) / 4, below=True))
    values["onset"] = onset
    span, answer = (onset, s.step(len(s) - 1)), view.series("rollout/answer_entropy/mean")
    if answer is None:
        return [Outcome("warn", "think", values, onset, span, (s.key,), {**values, "threshold": p["drop"]})]
    a0, a1, _ = _ends(answer.values, p["share"])
    values.update(answer_first=a0, answer_last=a1, answer_change=a1 / a0 - 1 if a0 > 0 else 0.0)
    status: Status = "note" if a0 > 0 and a1 <= (1 - p["answer_drop"]) * a0 else "warn"
    return [Outcome(status, "both" if status == "note" else "think_only", values, onset, span, (s.key, answer.key),
                    {**values, "threshold": p["drop"]})]


def tool_output_ignored(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """The reasoning right after a tool response (docs/reading-rules.md#after-tool-response): the share of the
    response's words it uses fallen by ``drop`` from its start, or its length fallen by ``drop`` while the reasoning
    before the calls did not, warns — the model calls and no longer reads what came back."""
    s, after = view.series("rollout/tool_response/overlap"), view.series("rollout/tool_response/think_after")
    if s is None:
        return []
    if len(s) < MIN_CHANGE:
        return [Outcome("skipped", "short", {"n": len(s), "needed": MIN_CHANGE}, metrics=(s.key,))]
    first, last, values = _start_to_end(s, p["share"])
    used = first > 0 and last <= (1 - p["drop"]) * first
    shrank = False
    if after is not None and len(after) >= MIN_CHANGE:
        a0, a1, _ = _ends(after.values, p["share"])
        before = view.series("rollout/tool_response/think_before")
        b0, b1 = _ends(before.values, p["share"])[:2] if before is not None else (float("nan"), float("nan"))
        values.update(after_first=a0, after_last=a1, after_change=a1 / a0 - 1 if a0 > 0 else 0.0,
                      before_first=b0, before_last=b1)
        # the reasoning after the response shrank, not all reasoning (that is the length checks' to read)
        shrank = a0 > 0 and a1 <= (1 - p["drop"]) * a0 and not (b0 > 0 and b1 <= (1 - p["drop"]) * b0)
    if not (used or shrank):
        return [Outcome("ok", "ok", values, metrics=(s.key,), evidence=values)]
    key = s if used else after
    assert key is not None
    level_first, level_last = (first, last) if used else (values["after_first"], values["after_last"])
    onset = key.step(_onset(signals.rolling_level(key.values, p["window"]),
                            level_first + (level_last - level_first) / 4, below=True))
    values["onset"] = onset
    template = "both" if used and shrank else "ignored" if used else "shorter"
    metrics = (s.key, after.key) if after is not None and shrank else (key.key,)
    return [Outcome("warn", template, values, onset, (onset, key.step(len(key) - 1)), metrics,
                    {**values, "threshold": p["drop"]})]


FUNCTIONS: dict[str, CheckFn] = {
    "format_compliance": format_compliance,
    "think_repetition": think_repetition,
    "answer_in_reasoning": answer_in_reasoning,
    "tool_call_repeats": tool_call_repeats,
    "high_entropy_tokens": high_entropy_tokens,
    "effective_batch": effective_batch,
    "tool_call_args": tool_call_args,
    "think_entropy_collapse": think_entropy_collapse,
    "tool_output_ignored": tool_output_ignored,
}
