"""Sharded = unsharded, bit for bit: every rollout family's update / merge / compute, and the combined
RolloutState, over a rich random table split by whole groups in random ways and merged in random orders."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from rlvitals.ingest.record import SkipLog
from rlvitals.rollout import (
    analysis,
    by_source,
    diversity,
    groups,
    lengths,
    prompts,
    schema,
    segments,
    step_groups,
    tokens,
)
from rlvitals.rollout._core import RolloutSet

WORDS = ["add", "carry", "check", "the", "sum", "again", "so", "x", "is", "4"]
STATES = ["room", "hall", "kitchen", "garden", "door"]
ACTIONS = ["go north", "go south", "open", "take key"]


def _response(rng: np.random.Generator, answer: str | None) -> str:
    think = " ".join(rng.choice(WORDS, size=int(rng.integers(0, 12))))
    calls = "".join(f"<tool_call>search({rng.choice(WORDS)})</tool_call>" for _ in range(int(rng.integers(0, 3))))
    kind = int(rng.integers(0, 4))
    if kind == 0:
        return f"<think>{think}</think><answer>{answer or ''}</answer>"
    if kind == 1:
        return f"<think>{think} {answer}</think>{calls}<answer>{answer}</answer>"
    # a multi-turn rollout: the tool's response, then reasoning about it (none without a call)
    turn = f"<tool_response>found {answer}</tool_response>so {answer}" if calls else ""
    return f"{think}{calls}{turn}" if kind == 2 else ""


def _rollout(rng: np.random.Generator, step: int, group: int, sample: int, p: float) -> dict[str, Any]:
    ok = bool(rng.random() < p)
    answer = None if rng.random() < 0.15 else ("gold" if ok else str(rng.choice(["1", "2"])))
    visits = int(rng.integers(0, 6))
    tokens_n = int(rng.integers(0, 9))
    response = _response(rng, answer)
    return {
        "step": step, "group": f"g{group}", "sample": sample, "prompt": f"task {group}",
        "response": response,
        "score": float(ok) if rng.random() < 0.7 else float(rng.choice([0.5, -1.0, 0.25, 1.5])),
        "correct": None if rng.random() < 0.1 else ok, "answer": answer,
        "source": str(rng.choice(["gsm8k", "math"])), "split": str(rng.choice(["train", "ood"])),
        "length": None if rng.random() < 0.1 else int(rng.integers(1, 400)),
        "truncated": None if rng.random() < 0.1 else bool(rng.random() < 0.2),
        "advantage": float(rng.normal()),
        "tool_calls": None if rng.random() < 0.3 else [str(rng.choice(WORDS)) for _ in range(int(rng.integers(0, 4)))],
        "actions": [str(rng.choice(ACTIONS)) for _ in range(max(visits - int(rng.integers(0, 2)), 0))],
        "states": None if rng.random() < 0.05 else [str(rng.choice(STATES)) for _ in range(visits)],
        "token_entropy": list(rng.gamma(1.0, 0.7, size=tokens_n)),
        "token_logprob": list(-rng.gamma(1.0, 0.5, size=tokens_n)),
        "token_advantage": list(rng.normal(size=tokens_n)),
        # the response cut into tokens_n pieces: token strings aligned with the per-token lists
        "tokens": [response[t * len(response) // tokens_n:(t + 1) * len(response) // tokens_n]
                   for t in range(tokens_n)],
    }


def rich_table(seed: int, n_steps: int = 3) -> pl.DataFrame:
    """Several steps, mixed group sizes (n = 1 included), every column the families read."""
    rng = np.random.default_rng(seed)
    rows = []
    for step in range(n_steps):
        for group in range(int(rng.integers(2, 7))):
            p = float(rng.choice([0.0, 1.0, rng.random()]))
            rows += [_rollout(rng, step, group, i, p) for i in range(int(rng.choice([1, 2, 3, 4, 4, 4, 7])))]
    return schema.conform(pl.DataFrame(rows, schema_overrides={k: v for k, v in schema.schema().items()}))


def shards(df: pl.DataFrame, n: int, rnd: random.Random) -> list[pl.DataFrame]:
    """``n`` chunks of whole groups (some possibly empty), group order shuffled inside each chunk."""
    keys = df.select("step", "group").unique(maintain_order=True).rows()
    rnd.shuffle(keys)
    out = []
    for i in range(n):
        mine = keys[i::n]
        part = df.join(pl.DataFrame(mine, schema=["step", "group"], orient="row"), on=["step", "group"],
                       maintain_order="left") if mine else df.head(0)
        order = pl.DataFrame([(*k, j) for j, k in enumerate(mine)], schema=["step", "group", "_o"], orient="row")
        out.append(part.join(order, on=["step", "group"], maintain_order="left")
                   .sort("_o", maintain_order=True).drop("_o"))
    return out


def merged(states: list[Any], merge: Callable[[Any, Any], Any], rnd: random.Random) -> Any:
    """Merge in a random tree order."""
    pool = list(states)
    while len(pool) > 1:
        i, j = sorted(rnd.sample(range(len(pool)), 2))
        b, a = pool.pop(j), pool.pop(i)
        pool.append(merge(a, b) if rnd.random() < 0.5 else merge(b, a))
    return pool[0]


FAMILIES: dict[str, tuple[Callable[..., Any], Callable[[Any, Any], Any], Callable[[Any], pl.DataFrame],
                          Callable[[pl.DataFrame], pl.DataFrame]]] = {
    "groups": (lambda s, c: groups.update(s, c, ks=(1, 2, 4)), groups.merge, groups.compute,
               lambda df: groups.step_metrics(df, ks=(1, 2, 4))),
    "steps": (step_groups.update, step_groups.merge, step_groups.compute, step_groups.step_groups_table),
    "lengths": (lengths.update, lengths.merge, lengths.compute, lengths.lengths_table),
    "prompts": (prompts.update, prompts.merge, prompts.compute, prompts.prompts_table),
    "segments": (lambda s, c: segments.update(s, c, tool_call_cap=2), segments.merge, segments.compute,
                 lambda df: segments.segments_table(df, tool_call_cap=2)),
    "tokens": (tokens.update, tokens.merge, tokens.compute, tokens.tokens_table),
    "sources": (lambda s, c: by_source.update(s, c, id_sources=["math"]), by_source.merge, by_source.compute,
                lambda df: by_source.compute(by_source.update(None, df, id_sources=["math"]))),
    "diversity": (diversity.update, diversity.merge, diversity.compute, diversity.diversity_table),
}


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 5), order=st.integers(0, 10_000))
@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_sharded_equals_unsharded(family: str, seed: int, n: int, order: int) -> None:
    update, merge, compute, table = FAMILIES[family]
    df = rich_table(seed)
    rnd = random.Random(order)
    parts = [update(None, part) for part in shards(df, n, rnd)]
    assert_frame_equal(compute(merged(parts, merge, rnd)), table(df), check_exact=True)


#: every setting that adds keys, so the sharded test covers them too
OPTIONS: dict[str, Any] = {"tool_call_cap": 2, "id_sources": ("gsm8k",), "max_response_length": 300}


def _whole(df: pl.DataFrame, ks: tuple[int, ...], **options: Any) -> pl.DataFrame:
    return analysis.analyze_rollouts(RolloutSet(df, SkipLog(), "frame"), ks=ks, **options).steps


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 5), order=st.integers(0, 10_000))
def test_rollout_state_sharded_equals_analyze_rollouts(seed: int, n: int, order: int) -> None:
    df = rich_table(seed, n_steps=4)
    rnd = random.Random(order)
    options = analysis.RolloutOptions(ks=(1, 2, 4), **OPTIONS)
    parts = [analysis.update(None, part, options=options) for part in shards(df, n, rnd)]
    state = merged(parts, analysis.merge, rnd)
    got = analysis.compute(state)
    assert_frame_equal(got, _whole(df, (1, 2, 4), **OPTIONS), check_exact=True)
    assert not state.skipped and not analysis.skipped_reasons(state)
    families = ("pass@4", "group/step_groups/multi_action_share", "diversity/duplicate_rate",
                "rollout/format_compliance", "rollout/length_correct_corr", "prompt/reward_gini",
                "token/logp_adv_cov", "group/size/below_mode", "rollout/length_reading",
                "rollout/tool_calls/at_cap", "source/gsm8k/id_gap", "val/id_ood_gap", "rollout/tool_calls/valid_args",
                "rollout/tool_response/overlap", "rollout/think_entropy/mean")
    assert set(families) <= set(got.columns)


def test_missing_columns_skip_a_family_in_every_shard() -> None:
    df = rich_table(3).drop("token_entropy", "token_logprob", "token_advantage", "states")
    parts = [analysis.update(None, part) for part in shards(df, 3, random.Random(0))]
    state = merged(parts, analysis.merge, random.Random(1))
    assert set(state.skipped) == {"tokens", "step_groups", "segment_entropy"}
    assert analysis.skipped_reasons(state)[0].startswith("step_groups: step-level groups need")
    assert_frame_equal(analysis.compute(state), _whole(df, analysis.DEFAULT_KS), check_exact=True)


def test_merge_rejects_different_ks() -> None:
    df = rich_table(0)
    with pytest.raises(ValueError, match=r"different settings: ks \(1,\) vs \(1, 2\)"):
        analysis.merge(analysis.update(None, df, ks=(1,)), analysis.update(None, df, ks=(1, 2)))
    with pytest.raises(ValueError, match=r"settings differ from the state.s \(ks \(1,\) vs \(2,\)\)"):
        analysis.update(analysis.update(None, df, ks=(1,)), df, ks=(2,))


def test_merge_rejects_different_embed_settings() -> None:
    df = rich_table(0)
    plain = analysis.update(None, df, ks=(1,))
    with pytest.raises(ValueError, match="embed False vs True"):
        analysis.merge(plain, analysis.RolloutState(analysis.RolloutOptions(ks=(1,), embed=True)))
