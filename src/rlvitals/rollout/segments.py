"""Think / answer / tool-call segments of a response, and their per-step quality table.

Lengths are counted in whitespace words (``str.split()``), not policy tokens.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from rlvitals.rollout.schema import ANSWER, RESPONSE, STEP, TOOL_CALLS


@dataclass(frozen=True)
class SegmentTags:
    """Opening and closing tags of the three segment kinds (defaults: R1-style XML tags)."""

    think: tuple[str, str] = ("<think>", "</think>")
    answer: tuple[str, str] = ("<answer>", "</answer>")
    tool_call: tuple[str, str] = ("<tool_call>", "</tool_call>")

    def __post_init__(self) -> None:
        for name in ("think", "answer", "tool_call"):
            pair = getattr(self, name)
            if len(pair) != 2 or not pair[0] or not pair[1] or pair[0] == pair[1]:
                raise ValueError(f"SegmentTags.{name} must be two different non-empty tags, got {pair!r}")


def segments(text: str, tag: tuple[str, str]) -> list[str]:
    """Contents of every ``open … close`` segment of ``text``, in order (non-greedy, no nesting).

    >>> segments("<a>x</a> y <a>z</a>", ("<a>", "</a>"))
    ['x', 'z']
    """
    pattern = re.escape(tag[0]) + r"(.*?)" + re.escape(tag[1])
    return re.findall(pattern, text, flags=re.DOTALL)


def repetition_rate(text: str, n: int = 4) -> float:
    """Share of word n-grams that repeat an earlier n-gram of the same text: 1 - |distinct| / |all|.

    NaN when the text has fewer than n words.

    >>> repetition_rate("a b c d a b c d", 4)
    0.2
    """
    words = text.split()
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    return 1.0 - len(set(grams)) / len(grams) if grams else math.nan


def format_compliant(text: str, tags: SegmentTags = SegmentTags()) -> bool:
    """True when the response is exactly one think segment followed by exactly one answer segment:
    it matches ``^\\s*<think>.*</think>\\s*<answer>.*</answer>\\s*$`` and each of the four tags
    occurs exactly once (the R1 format reward's rule). Tool-call segments are not allowed outside."""
    (t0, t1), (a0, a1) = tags.think, tags.answer
    if any(text.count(t) != 1 for t in (t0, t1, a0, a1)):
        return False
    pattern = (r"\s*" + re.escape(t0) + r".*?" + re.escape(t1) + r"\s*"
               + re.escape(a0) + r".*?" + re.escape(a1) + r"\s*")
    return re.fullmatch(pattern, text, flags=re.DOTALL) is not None


def answer_in_reasoning(text: str, answer: str | None = None, tags: SegmentTags = SegmentTags()) -> bool | None:
    """Whether the final answer already appears inside the think segment(s).

    The answer is ``answer`` if given, else the content of the last answer segment; both sides
    are whitespace-collapsed and the answer must occur as a whole token run (not inside a longer
    word or number, so "1" is not found in "10"). None when there is no think segment or no
    non-empty answer.
    """
    think = " ".join(segments(text, tags.think))
    if answer is None:
        found = segments(text, tags.answer)
        answer = found[-1] if found else None
    answer = " ".join((answer or "").split())
    if not think or not answer:
        return None
    pattern = r"(?<![\w.])" + re.escape(answer) + r"(?!\w)"
    return re.search(pattern, " ".join(think.split())) is not None


def repeat_share(calls: Sequence[str]) -> float:
    """Share of calls identical (after whitespace collapsing) to an earlier call of the same list;
    NaN for no calls.

    >>> repeat_share(["search(a)", "search( a)", "search(b)", "search(a)"])
    0.25
    """
    norm = [" ".join(c.split()) for c in calls]
    return (len(norm) - len(set(norm))) / len(norm) if norm else math.nan


def rollout_segments(df: pl.DataFrame, tags: SegmentTags = SegmentTags()) -> pl.DataFrame:
    """One row per rollout: think_length, answer_length (words; null without the segment),
    think_repetition, format_ok, answer_in_reasoning, tool_calls (count), tool_repeats (count of
    repeated calls). Tool calls come from the ``tool_calls`` column when present, else from the
    tool-call segments of ``response``. Needs ``step`` and ``response``."""
    missing = [c for c in (STEP, RESPONSE) if c not in df.columns]
    if missing:
        raise ValueError(f"segment metrics need the rollout column(s) {missing}; the table has {df.columns}")
    texts = df[RESPONSE].fill_null("").to_list()
    answers = df[ANSWER].to_list() if ANSWER in df.columns else [None] * len(texts)
    call_lists = df[TOOL_CALLS].to_list() if TOOL_CALLS in df.columns else [None] * len(texts)
    rows = []
    for text, ans, calls in zip(texts, answers, call_lists, strict=True):
        think, answer = segments(text, tags.think), segments(text, tags.answer)
        calls = segments(text, tags.tool_call) if calls is None else calls
        rep = repeat_share(calls)
        rows.append({
            "think_length": sum(len(s.split()) for s in think) if think else None,
            "answer_length": sum(len(s.split()) for s in answer) if answer else None,
            "think_repetition": repetition_rate(" ".join(think)) if think else None,
            "format_ok": format_compliant(text, tags),
            "answer_in_reasoning": answer_in_reasoning(text, ans, tags),
            "tool_calls": len(calls),
            "tool_repeats": 0 if not calls else round(rep * len(calls)),
        })
    schema = {"think_length": pl.Int64, "answer_length": pl.Int64, "think_repetition": pl.Float64,
              "format_ok": pl.Boolean, "answer_in_reasoning": pl.Boolean, "tool_calls": pl.Int64,
              "tool_repeats": pl.Int64}
    out = pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)
    return pl.concat([df.select(STEP), out.with_columns(pl.col("think_repetition").fill_nan(None))],
                     how="horizontal")


def segments_table(df: pl.DataFrame, tags: SegmentTags = SegmentTags(),
                   tool_call_cap: int | None = None) -> pl.DataFrame:
    """Per-step table with the catalog keys ``rollout/think_length/mean``, ``rollout/think_repetition``,
    ``rollout/answer_length/mean`` (means over rollouts that have the segment),
    ``rollout/format_compliance``, ``rollout/answer_in_reasoning`` (share over rollouts where it is
    defined), ``rollout/tool_calls/mean`` and ``/std`` (population std, ddof=0),
    ``rollout/tool_calls/repeat_rate`` (repeated calls / all calls of the step) and, when
    ``tool_call_cap`` is given, ``rollout/tool_calls/at_cap`` (share of rollouts with >= cap calls)."""
    per = rollout_segments(df, tags)
    aggs = [pl.col("think_length").mean().alias("rollout/think_length/mean"),
            pl.col("think_repetition").mean().alias("rollout/think_repetition"),
            pl.col("answer_length").mean().alias("rollout/answer_length/mean"),
            pl.col("format_ok").mean().alias("rollout/format_compliance"),
            pl.col("answer_in_reasoning").mean().alias("rollout/answer_in_reasoning"),
            pl.col("tool_calls").cast(pl.Float64).mean().alias("rollout/tool_calls/mean"),
            pl.col("tool_calls").cast(pl.Float64).std(ddof=0).alias("rollout/tool_calls/std"),
            (pl.col("tool_repeats").sum() / pl.col("tool_calls").sum()).alias("rollout/tool_calls/repeat_rate")]
    if tool_call_cap is not None:
        aggs.append((pl.col("tool_calls") >= tool_call_cap).mean().alias("rollout/tool_calls/at_cap"))
    out = per.group_by(STEP).agg(aggs).sort(STEP)
    return out.with_columns(pl.col("rollout/tool_calls/repeat_rate").fill_nan(None))

