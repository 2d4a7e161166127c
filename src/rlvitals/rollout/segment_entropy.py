"""Token entropy inside the think and the answer segments of a response (docs/reading-rules.md#segment-entropy).

Per-token entropies (``token_entropy``) are placed in a segment through the token strings (``tokens``: the
decoded text of each response token, aligned with the values): the tokens' texts are joined, the think and
answer segments are found in that text (:mod:`.segments`' tags), and a token belongs to a segment when its
characters overlap the segment's content (a tag's own tokens do not; a token of no characters, an
end-of-sequence token decoded as nothing, belongs to none). The answer segment is the content of the answer
tags, else, in a response with a think segment, the text after the last one (veRL's boxed format). Without
token strings the values cannot be placed, and the family says so: token ids alone would need the tokenizer.

Streaming: ``update(state | None, chunk, tags=)``, ``merge(a, b)``, ``compute(state)``. The state keeps every
placed value; means use ``math.fsum``, so a sharded result equals the unsharded one bit for bit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from ..words import Words
from .schema import STEP, TOKEN_ENTROPY, TOKENS
from .tags import SegmentTags

__all__ = ["SegmentEntropyState", "compute", "merge", "segment_entropy_table", "token_segments", "update"]

#: what :func:`token_segments` marks a token with
OTHER, THINK, ANSWER = 0, 1, 2
KEYS = ("rollout/think_entropy/mean", "rollout/answer_entropy/mean")


def _spans(text: str, tag: tuple[str, str]) -> list[tuple[int, int]]:
    pattern = re.escape(tag[0]) + r"(.*?)" + re.escape(tag[1])
    return [m.span(1) for m in re.finditer(pattern, text, flags=re.DOTALL)]


def token_segments(tokens: Sequence[str], tags: SegmentTags = SegmentTags()) -> np.ndarray:
    """The segment of each token (``OTHER`` 0, ``THINK`` 1, ``ANSWER`` 2), by the tokens' accumulated text.

    >>> token_segments(["<think>", "two", " plus", "</think>", "<answer>", "4", "</answer>", ""]).tolist()
    [0, 1, 1, 0, 0, 2, 0, 0]
    >>> token_segments(["<think>", "x", "</think>", " so", " \\\\boxed{4}"]).tolist()
    [0, 1, 0, 2, 2]
    """
    ends = np.cumsum([len(t) for t in tokens], dtype=np.int64)
    starts = ends - np.array([len(t) for t in tokens], dtype=np.int64)
    text = "".join(tokens)
    think = _spans(text, tags.think)
    answer = _spans(text, tags.answer)
    if not answer and think:
        close = text.rfind(tags.think[1])
        answer = [(close + len(tags.think[1]), len(text))]
    out = np.zeros(len(tokens), np.int8)
    for code, spans in ((THINK, think), (ANSWER, answer)):
        for a, b in spans:
            out[(starts < b) & (ends > a) & (ends > starts)] = code
    return out


@dataclass(frozen=True)
class StepEntropy:
    """One step's partial state: the entropies of the think tokens and of the answer tokens."""

    think: np.ndarray = field(default_factory=lambda: np.empty(0))
    answer: np.ndarray = field(default_factory=lambda: np.empty(0))

    def __add__(self, o: StepEntropy) -> StepEntropy:
        return StepEntropy(np.concatenate([self.think, o.think]), np.concatenate([self.answer, o.answer]))


@dataclass(frozen=True)
class SegmentEntropyState:
    """Mergeable partial state of :func:`segment_entropy_table`: the tags and one :class:`StepEntropy` per step."""

    tags: SegmentTags = SegmentTags()
    steps: dict[int, StepEntropy] = field(default_factory=dict)


def _require(chunk: pl.DataFrame) -> None:
    if TOKEN_ENTROPY not in chunk.columns:
        raise ValueError(Words(f"needs the per-token entropies '{TOKEN_ENTROPY}' and the token strings '{TOKENS}' "
                               "(the decoded text of each response token)",
                               f"需要逐 token 的熵 '{TOKEN_ENTROPY}' 和 token 文本 '{TOKENS}'"
                               "（回复中每个 token 解码后的文本）"))
    if TOKENS not in chunk.columns or STEP not in chunk.columns:
        raise ValueError(Words(f"the rollouts carry per-token entropies but no token strings ('{TOKENS}'): the values "
                               "cannot be placed in the think or answer segment; dump each response token's decoded "
                               "text beside its entropy",
                               f"rollout 有逐 token 的熵，但没有 token 文本（'{TOKENS}'）：无法把这些值归到 think 段"
                               "或答案段；请在导出时把每个回复 token 解码后的文本与其熵一起写出"))


def update(state: SegmentEntropyState | None, chunk: pl.DataFrame, *,
           tags: SegmentTags | None = None) -> SegmentEntropyState:
    """Fold a chunk of rollouts into ``state`` (None: a new state with ``tags``). A row whose token strings and
    entropies differ in number cannot be aligned: a ``ValueError`` names it."""
    if state is None:
        state = SegmentEntropyState(tags or SegmentTags())
    elif tags not in (None, state.tags):
        raise ValueError("update: tags differ from the state's; build a new state instead")
    _require(chunk)
    steps: dict[int, StepEntropy] = {}
    rows = zip(chunk[STEP].to_list(), chunk[TOKENS].to_list(), chunk[TOKEN_ENTROPY].to_list(), strict=True)
    for i, (step, tokens, entropy) in enumerate(rows):
        if tokens is None or entropy is None:
            continue
        if len(tokens) != len(entropy):
            raise ValueError(Words(f"row {i}: {len(tokens)} token strings but {len(entropy)} token entropies; they "
                                   "must align token by token",
                                   f"第 {i} 行：有 {len(tokens)} 个 token 文本，却有 {len(entropy)} 个 token 熵；"
                                   "两者必须逐个 token 对齐"))
        where = token_segments(tokens, state.tags)
        values = np.array([math.nan if v is None else v for v in entropy], float)
        keep = np.isfinite(values)
        acc = StepEntropy(values[keep & (where == THINK)], values[keep & (where == ANSWER)])
        steps[int(step)] = steps[int(step)] + acc if int(step) in steps else acc
    return merge(state, SegmentEntropyState(state.tags, steps))


def merge(a: SegmentEntropyState, b: SegmentEntropyState) -> SegmentEntropyState:
    """Combine two states built from disjoint sets of rollouts."""
    if a.tags != b.tags:
        raise ValueError("cannot merge segment-entropy states built with different tags")
    steps = dict(a.steps)
    for step, acc in b.steps.items():
        steps[step] = steps[step] + acc if step in steps else acc
    return SegmentEntropyState(a.tags, steps)


def _mean(values: np.ndarray) -> float | None:
    return math.fsum(values.tolist()) / values.size if values.size else None


def compute(state: SegmentEntropyState) -> pl.DataFrame:
    """Per-step frame of :func:`segment_entropy_table` from a state."""
    rows = [{STEP: s, KEYS[0]: _mean(acc.think), KEYS[1]: _mean(acc.answer)}
            for s, acc in sorted(state.steps.items())]
    schema = {STEP: pl.Int64(), **{k: pl.Float64() for k in KEYS}}
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def segment_entropy_table(df: pl.DataFrame, tags: SegmentTags = SegmentTags()) -> pl.DataFrame:
    """Per-step ``rollout/think_entropy/mean`` and ``rollout/answer_entropy/mean``: the mean entropy over the
    tokens of the step's think segments and over those of its answer segments (nats/token).
    ``compute(update(None, df, tags=tags))``.

    >>> df = pl.DataFrame({"step": [1], "tokens": [["<think>", "a", "</think>", "<answer>", "4", "</answer>"]],
    ...                    "token_entropy": [[0.1, 2.0, 0.1, 0.1, 0.5, 0.1]]})
    >>> segment_entropy_table(df).row(0)
    (1, 2.0, 0.5)
    """
    return compute(update(None, df, tags=tags))
