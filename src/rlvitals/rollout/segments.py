"""Think / answer / tool-call segments of a response, and their per-step quality table.

Lengths are counted in whitespace words (``str.split()``), not policy tokens.

Streaming: ``update(state | None, chunk, tags=, tool_call_cap=)``, ``merge(a, b)``, ``compute(state)``.
The state keeps integer counts and sums, each rollout's think-repetition rate (summed with
``math.fsum``) and its segment word counts (quantiles depend only on the set of values), so a sharded
result equals the unsharded one bit for bit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..words import Words
from .answers import last_boxed
from .schema import ANSWER, RESPONSE, STEP, TOOL_CALLS
from .tags import SegmentTags

if TYPE_CHECKING:  # the tables import polars when built: the probe's chains use only the tags and the text
    import polars as pl


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

    >>> round(repetition_rate("a b c d a b c d", 4), 12)
    0.2
    """
    words = text.split()
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    return 1.0 - len(set(grams)) / len(grams) if grams else math.nan


#: end-of-sequence tokens a dump may keep at the end of a response (chat templates of Qwen, Llama, Mistral ...):
#: they close the sequence, they are not text after the answer
_END_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "</s>", "<eos>", "<|end|>")


def format_compliant(text: str, tags: SegmentTags = SegmentTags()) -> bool:
    """True when the response is exactly one think segment followed by its final answer, in either
    of two formats, end-of-sequence tokens at its end set aside:

    - the R1 format: it matches ``^\\s*<think>.*</think>\\s*<answer>.*</answer>\\s*$`` and each of
      the four tags occurs exactly once (the R1 format reward's rule);
    - veRL's boxed format: it opens with the think segment (each think tag once) and the text after it
      holds a complete ``\\boxed{…}`` (veRL's geo3k format reward: ``<think>.*</think>.*\\boxed{.*}.*``;
      its math reward reads the last ``\\boxed``, :func:`.answers.last_boxed`).

    Tool-call segments are not allowed outside.

    >>> format_compliant("<think>2+2</think> <answer>4</answer><|im_end|>")
    True
    >>> format_compliant("<think>2+2</think> So it is \\\\boxed{4}."), format_compliant("2+2 = \\\\boxed{4}")
    (True, False)
    """
    text = text.rstrip()
    while text.endswith(_END_TOKENS):
        text = text[: -len(next(t for t in _END_TOKENS if text.endswith(t)))].rstrip()
    (t0, t1), (a0, a1) = tags.think, tags.answer
    if text.count(t0) != 1 or text.count(t1) != 1:
        return False
    head, _, tail = text.partition(t1)
    if not (text.count(a0) or text.count(a1)) and head.lstrip().startswith(t0):
        return last_boxed(tail) is not None
    if text.count(a0) != 1 or text.count(a1) != 1:
        return False
    pattern = (r"\s*" + re.escape(t0) + r".*?" + re.escape(t1) + r"\s*"
               + re.escape(a0) + r".*?" + re.escape(a1) + r"\s*")
    return re.fullmatch(pattern, text, flags=re.DOTALL) is not None


def answer_in_reasoning(text: str, answer: str | None = None, tags: SegmentTags = SegmentTags()) -> bool | None:
    """Whether the final answer already appears inside the think segment(s).

    The answer is ``answer`` if given, else the content of the last answer segment, else that of the
    last ``\\boxed{}`` after the think segment (veRL's format); both sides are whitespace-collapsed and
    the answer must occur as a whole token run (not inside a longer word or number, so "1" is not found
    in "10"). None when there is no think segment or no non-empty answer.
    """
    think = " ".join(segments(text, tags.think))
    if answer is None:
        found = segments(text, tags.answer)
        answer = found[-1] if found else last_boxed(text.rpartition(tags.think[1])[2])
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
    import polars as pl

    missing = [c for c in (STEP, RESPONSE) if c not in df.columns]
    if missing:
        raise ValueError(Words(f"segment metrics need the rollout column(s) {missing}; the table has {df.columns}",
                               f"片段指标需要 rollout 列 {missing}；表中只有这些列：{df.columns}"))
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


_COUNTS = ("rollouts", "think_n", "think_sum", "answer_n", "answer_sum", "format_ok", "air_true", "air_known",
           "calls", "calls_sq", "repeats", "at_cap")


#: the length distribution of a segment kind: numpy's linear-rule quantiles, and the longest
DIST = (("p10", 0.1), ("p50", 0.5), ("p90", 0.9), ("max", 1.0))
_SEGMENT_LENGTHS = ("think", "answer")


@dataclass(frozen=True)
class StepSegments:
    """One step's partial state: integer counts and sums (``_COUNTS``), the think-repetition rate
    of every rollout that has one (the only float averaged), and the word count of every rollout's
    think and answer segments (for the length distribution; a quantile depends only on the set)."""

    counts: dict[str, int]
    repetition: np.ndarray
    think: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    answer: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    def __add__(self, o: StepSegments) -> StepSegments:
        return StepSegments({k: self.counts[k] + o.counts[k] for k in _COUNTS},
                            np.concatenate([self.repetition, o.repetition]),
                            np.concatenate([self.think, o.think]), np.concatenate([self.answer, o.answer]))


@dataclass(frozen=True)
class SegmentState:
    """Mergeable partial state of :func:`segments_table`: the settings and one :class:`StepSegments` per step."""

    tags: SegmentTags = SegmentTags()
    tool_call_cap: int | None = None
    steps: dict[int, StepSegments] = field(default_factory=dict)


def _step_counts(per: pl.DataFrame, cap: int | None) -> dict[int, StepSegments]:
    import polars as pl

    calls = pl.col("tool_calls")
    agg = per.group_by(STEP).agg(
        rollouts=pl.len(), think_n=pl.col("think_length").count(), think_sum=pl.col("think_length").sum(),
        answer_n=pl.col("answer_length").count(), answer_sum=pl.col("answer_length").sum(),
        format_ok=pl.col("format_ok").sum(), air_true=pl.col("answer_in_reasoning").sum(),
        air_known=pl.col("answer_in_reasoning").count(), calls=calls.sum(), calls_sq=(calls * calls).sum(),
        repeats=pl.col("tool_repeats").sum(), at_cap=(calls >= cap).sum() if cap is not None else pl.lit(0),
        repetition=pl.col("think_repetition").drop_nulls(), think=pl.col("think_length").drop_nulls(),
        answer=pl.col("answer_length").drop_nulls())
    return {int(r[STEP]): StepSegments({k: int(r[k] or 0) for k in _COUNTS}, np.asarray(r["repetition"], float),
                                       np.asarray(r["think"], np.int64), np.asarray(r["answer"], np.int64))
            for r in agg.iter_rows(named=True)}


def update(state: SegmentState | None, chunk: pl.DataFrame, *, tags: SegmentTags | None = None,
           tool_call_cap: int | None = None) -> SegmentState:
    """Fold a chunk of rollouts into ``state`` (None: a new state with the given options)."""
    if state is None:
        state = SegmentState(tags or SegmentTags(), tool_call_cap)
    elif not (tags in (None, state.tags) and tool_call_cap in (None, state.tool_call_cap)):
        raise ValueError("update: tags or tool_call_cap differ from the state's settings; build a new state instead")
    steps = _step_counts(rollout_segments(chunk, state.tags), state.tool_call_cap)
    return merge(state, SegmentState(state.tags, state.tool_call_cap, steps))


def merge(a: SegmentState, b: SegmentState) -> SegmentState:
    """Combine two states built from disjoint sets of rollouts."""
    if (a.tags, a.tool_call_cap) != (b.tags, b.tool_call_cap):
        raise ValueError("cannot merge segment states built with different tags or tool_call_cap")
    steps = dict(a.steps)
    for step, acc in b.steps.items():
        steps[step] = steps[step] + acc if step in steps else acc
    return SegmentState(a.tags, a.tool_call_cap, steps)


def _div(num: float, den: int) -> float | None:
    return num / den if den else None


def _step_row(step: int, acc: StepSegments, cap: int | None) -> dict[str, float | int | None]:
    c, n = acc.counts, acc.counts["rollouts"]
    # population variance from integer sums, exact up to the final division and root
    var_num = n * c["calls_sq"] - c["calls"] * c["calls"]
    row: dict[str, float | int | None] = {
        STEP: step, "rollout/think_length/mean": _div(c["think_sum"], c["think_n"]),
        "rollout/think_repetition": _div(math.fsum(acc.repetition.tolist()), acc.repetition.size),
        "rollout/answer_length/mean": _div(c["answer_sum"], c["answer_n"]),
        "rollout/format_compliance": _div(c["format_ok"], n),
        "rollout/answer_in_reasoning": _div(c["air_true"], c["air_known"]),
        "rollout/tool_calls/mean": _div(c["calls"], n),
        "rollout/tool_calls/std": math.sqrt(var_num) / n if n else None,
        "rollout/tool_calls/repeat_rate": _div(c["repeats"], c["calls"]),
    }
    if cap is not None:
        row["rollout/tool_calls/at_cap"] = _div(c["at_cap"], n)
    for kind in _SEGMENT_LENGTHS:
        words = acc.think if kind == "think" else acc.answer
        for name, q in DIST:
            value = None if not words.size else int(words.max()) if name == "max" else float(np.quantile(words, q))
            row[f"rollout/{kind}_length/{name}"] = value
    return row


def compute(state: SegmentState) -> pl.DataFrame:
    """Per-step frame of :func:`segments_table` from a state."""
    import polars as pl

    rows = [_step_row(s, state.steps[s], state.tool_call_cap) for s in sorted(state.steps)]
    names = list(_step_row(0, StepSegments(dict.fromkeys(_COUNTS, 0), np.empty(0)), state.tool_call_cap))
    schema = {k: pl.Int64() if k == STEP or k.endswith("_length/max") else pl.Float64() for k in names}
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def segments_table(df: pl.DataFrame, tags: SegmentTags = SegmentTags(),
                   tool_call_cap: int | None = None) -> pl.DataFrame:
    """Per-step table with the catalog keys ``rollout/think_length/mean``, ``rollout/think_repetition``,
    ``rollout/answer_length/mean`` (means over rollouts that have the segment),
    ``rollout/format_compliance``, ``rollout/answer_in_reasoning`` (share over rollouts where it is
    defined), ``rollout/tool_calls/mean`` and ``/std`` (population std, ddof=0),
    ``rollout/tool_calls/repeat_rate`` (repeated calls / all calls of the step), when
    ``tool_call_cap`` is given ``rollout/tool_calls/at_cap`` (share of rollouts with >= cap calls),
    and the length distribution of the think and answer segments over the rollouts that have them,
    ``rollout/{think,answer}_length/{p10,p50,p90,max}`` (numpy's linear quantiles; max in words).
    ``compute(update(None, df, tags=tags, tool_call_cap=tool_call_cap))``.

    >>> import polars as pl
    >>> df = pl.DataFrame({"step": [0, 0], "response": ["<think>a b</think><answer>1</answer>", "1"]})
    >>> segments_table(df).select("rollout/think_length/mean", "rollout/format_compliance").row(0)
    (2.0, 0.5)
    """
    return compute(update(None, df, tags=tags, tool_call_cap=tool_call_cap))
