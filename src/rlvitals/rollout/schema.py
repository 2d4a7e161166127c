"""The rollout table: one row per sampled response, as a polars DataFrame with these columns.

Only ``step``, ``group`` and ``sample`` are always present; every other column may be
missing (a reader fills what its source has) and each metric says which columns it needs.
A *group* is the set of rollouts sampled for one prompt at one step (GRPO's G); its id is
unique within a step. Types are fixed so readers and metrics agree.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

STEP = "step"              # training step (Int64)
GROUP = "group"            # prompt group id within the step (Utf8)
SAMPLE = "sample"          # index of the rollout within its group (Int64)
PROMPT = "prompt"          # prompt text (Utf8)
RESPONSE = "response"      # generated text (Utf8)
SCORE = "score"            # scalar reward / score of the rollout (Float64)
CORRECT = "correct"        # whether the rollout is correct (Boolean; null = unknown)
ANSWER = "answer"          # extracted final answer, for majority votes (Utf8; null = none extracted)
TARGET = "target"          # ground truth (Utf8)
SOURCE = "source"          # data source, e.g. openai/gsm8k (Utf8)
SPLIT = "split"            # train | val | ood … (Utf8)
LENGTH = "length"          # response length in tokens (Int64; else characters, said by the reader)
TRUNCATED = "truncated"    # hit the length limit (Boolean)
ADVANTAGE = "advantage"    # sequence advantage (Float64)
TOOL_CALLS = "tool_calls"  # list of tool calls as strings, in order (List[Utf8])
ACTIONS = "actions"        # agent actions, in order (List[Utf8])
STATES = "states"          # visited environment states (List[Utf8])
TOKEN_ENTROPY = "token_entropy"      # per-token entropies (List[Float64])
TOKEN_LOGPROB = "token_logprob"      # per-token log-probs of the sampled tokens (List[Float64])
TOKEN_ADVANTAGE = "token_advantage"  # per-token advantages (List[Float64])
TOKEN_OLD_LOGPROB = "token_old_logprob"          # the trainer's per-token log-probs under the weights that sampled
TOKEN_ROLLOUT_LOGPROB = "token_rollout_logprob"  # the rollout engine's (vLLM/SGLang) per-token log-probs
TOKENS = "tokens"                    # decoded text of each response token, aligned with the lists above (List[Utf8])

@lru_cache(maxsize=1)
def schema() -> dict[str, pl.DataType]:
    """Each known column's type (polars is imported here: the column names above cost nothing)."""
    import polars as pl

    return {
        STEP: pl.Int64(), GROUP: pl.Utf8(), SAMPLE: pl.Int64(), PROMPT: pl.Utf8(), RESPONSE: pl.Utf8(),
        SCORE: pl.Float64(), CORRECT: pl.Boolean(), ANSWER: pl.Utf8(), TARGET: pl.Utf8(), SOURCE: pl.Utf8(),
        SPLIT: pl.Utf8(), LENGTH: pl.Int64(), TRUNCATED: pl.Boolean(), ADVANTAGE: pl.Float64(),
        TOOL_CALLS: pl.List(pl.Utf8()), ACTIONS: pl.List(pl.Utf8()), STATES: pl.List(pl.Utf8()),
        TOKEN_ENTROPY: pl.List(pl.Float64()), TOKEN_LOGPROB: pl.List(pl.Float64()),
        TOKEN_ADVANTAGE: pl.List(pl.Float64()), TOKENS: pl.List(pl.Utf8()),
        TOKEN_OLD_LOGPROB: pl.List(pl.Float64()), TOKEN_ROLLOUT_LOGPROB: pl.List(pl.Float64()),
    }
REQUIRED = (STEP, GROUP, SAMPLE)


def conform(df: pl.DataFrame) -> pl.DataFrame:
    """Cast the known columns of ``df`` to their schema types (unknown columns are kept as
    they are, e.g. per-reward-function scores) and order them: known columns first."""
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise ValueError(f"a rollout table needs the columns {missing}")
    import polars as pl

    types = schema()
    casts = [pl.col(c).cast(t) for c, t in types.items() if c in df.columns]
    known = [c for c in types if c in df.columns]
    out = df.with_columns(casts)
    # by position: select() reads an unknown column's name like '^.*$' as a pattern
    return out.select(pl.nth([out.columns.index(c) for c in known + [c for c in df.columns if c not in types]]))
