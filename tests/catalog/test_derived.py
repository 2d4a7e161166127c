"""Every metric the catalog says rlvitals computes is produced by some code path.

A claim is an entry of the multi-scale section (computed from rollouts, by the section's own heading), an entry
whose source names ``rlvitals rollouts`` or ``rlvitals probe``, or one whose English meaning says rlvitals
computes or derives it. The rollout analysis is run on a table with every column its families read (the shard
tests' constructed table, embeddings from a stand-in encoder) and must produce each claimed key; the few keys made
elsewhere (``rlvitals probe``) are named with the module that writes them and the test that runs it. An entry
that says rlvitals does *not* compute it (it is read only where a trainer logs it) is no claim.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from rollout.test_shards import rich_table

import rlvitals.rollout.embedding
from rlvitals.catalog import load_catalog
from rlvitals.catalog.catalog import Metric
from rlvitals.rollout.analysis import analyze_rollouts

ROOT = Path(__file__).resolve().parents[2]
TOML = ROOT / "src/rlvitals/catalog/catalog.toml"
HEADING = "# Multi-scale view: metrics at each scale, computed by rlvitals from rollouts"
CLAIM = re.compile(r"computed by rlvitals|rlvitals (?:derives|computes)|computed from the rollout", re.I)
DENIAL = re.compile(r"rlvitals does not compute|not a series rlvitals writes", re.I)

#: claimed keys produced outside the rollout analysis: the module that writes them, the test that runs it
ELSEWHERE = {
    "reasoning/faithfulness": ("src/rlvitals/probe/summary.py", "tests/probe/test_runner.py"),
    "reasoning/faithfulness/{probe}": ("src/rlvitals/probe/summary.py", "tests/probe/test_interventions.py"),
    "reasoning/step_verification": ("src/rlvitals/probe/result.py", "tests/probe/test_runner.py"),
}


def _section_keys() -> set[str]:
    text = TOML.read_text(encoding="utf-8")
    assert HEADING in text, "the multi-scale section's heading moved: update HEADING"
    return set(re.findall(r'^key = "([^"]+)"$', text.split(HEADING, 1)[1], re.M))


def claims() -> list[Metric]:
    section = _section_keys()
    out = []
    for m in load_catalog().metrics.values():
        said = CLAIM.search(m.text("en").meaning) or re.search(r"rlvitals (?:rollouts|probe)", m.source)
        if DENIAL.search(m.text("en").meaning):
            continue
        if m.key in section or said:
            out.append(m)
    return out


def _every_column() -> pl.DataFrame:
    """The shard tests' table with what it lacks for the newest families: the old and the rollout engine's
    per-token log-probs, each token's text (think and answer segments), and a tool response in some responses."""
    t = rich_table(11, n_steps=4)
    n = t["token_logprob"].list.len()
    tokens = [["<think>", *["so"] * (k - 3), "</think>", "4"] if k >= 3 else ["4"] * k for k in n.to_list()]
    turn = ('<think>search first</think><tool_call>{"name": "search", "arguments": {"q": "sum"}}</tool_call>'
            "<tool_response>the sum is 4</tool_response><think>the sum is 4 so</think><answer>4</answer>")
    return t.with_columns(
        pl.col("token_logprob").list.eval(pl.element() - 0.01).alias("token_old_logprob"),
        pl.col("token_logprob").list.eval(pl.element() - 0.02).alias("token_rollout_logprob"),
        pl.Series("tokens", tokens, dtype=pl.List(pl.Utf8)),
        pl.when(pl.col("sample") == 0).then(pl.lit(turn)).otherwise(pl.col("response")).alias("response"))


def _stand_in(texts: Sequence[str]) -> np.ndarray:
    """Sentence embeddings stand-in: a fixed random vector per text (the real model: tests/rollout/test_embedding.py).
    """
    return np.stack([np.random.default_rng(abs(hash(t)) % 2**32).normal(size=8) for t in texts])


@pytest.fixture(scope="module")
def produced() -> set[str]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rlvitals.rollout.embedding, "encode", _stand_in)
        a = analyze_rollouts(_every_column(), ks=(1, 2, 4), embed=True, tool_call_cap=2,
                             id_sources=["math"], n_states=5)
    found = set()
    for column in a.steps.columns:
        metric = load_catalog().find(column)
        if metric is not None and a.steps[column].null_count() < a.steps.height:
            found.add(metric.key)
    return found


def test_the_walk_finds_the_claims() -> None:
    keys = {m.key for m in claims()}
    assert {"pass@{k}", "token/entropy_high_share", "val/id_ood_gap", "token/mismatch_logp_abs_diff"} <= keys
    # read only where logged, or measured by a check on the run itself: no claim
    assert not keys & {"actor/update_norm", "critic/vpred_var", "actor/entropy_coeff_loss",
                       "time/entropy_early_drop", "time/reward_passk_decoupling"}


@pytest.mark.parametrize("metric", claims(), ids=lambda m: m.key)
def test_every_claimed_metric_is_produced(metric: Metric, produced: set[str]) -> None:
    if metric.key in ELSEWHERE:
        module, test = ELSEWHERE[metric.key]
        literal = metric.key.split("{")[0]
        assert literal in (ROOT / module).read_text(encoding="utf-8"), (metric.key, module)
        assert literal in (ROOT / test).read_text(encoding="utf-8"), (metric.key, test)
        return
    assert metric.key in produced, (f"the catalog says rlvitals computes {metric.key}, but the rollout analysis of "
                                    "a table with every column does not produce it: compute it, or say in its entry "
                                    "that rlvitals does not")
