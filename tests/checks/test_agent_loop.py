"""Agent-loop efficiency: stragglers and tool-call time — on the corpus's real veRL agent runs (ReTool GRPO,
late-2025 veRL with timing_s/agent_loop/*), healthy controls among them, and constructed edges (said so)."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
from runs import corpus_run, finding, make_run

from rlvitals.diagnosis import Diagnosis, diagnose

HEALTHY = ("verl__agent-opd__qwen2.5-3b-klreward0.0005-healthy",
           "wandb__open-agentrl-opd__qwen2.5-3b-tokenkl0.1-xx1oj7kk")
STRAGGLING = ("verl__agent-opd__qwen2.5-3b-klreward0.05-length-collapse",
              "wandb__open-agentrl-opd__qwen2.5-3b-gjvwlq13", "verl__agent-opd__qwen3-4b-klreward-length-collapse")
TOOLS = "verl__agent-opd__qwen2.5-3b-tokenkl0.02-truncation"


@cache
def diagnosed(run_id: str) -> Diagnosis:
    return diagnose(corpus_run(run_id))


def words(f: Any) -> None:
    for lang in ("en", "zh"):
        assert f.message[lang] and "{" not in f.message[lang], (lang, f.message[lang])
        assert f.advice[lang] and f.title[lang]


@pytest.mark.parametrize("run_id", HEALTHY)
def test_healthy_agent_runs_have_no_straggler_and_no_tool_blow_up(run_id: str) -> None:
    """Real: the healthy ReTool run's slowest sample takes 2.4x the mean (rolling level at most 2.6x); its
    slowest sample's tool time is at most 9 % of the step."""
    d = diagnosed(run_id)
    s, t = finding(d, "agent_stragglers"), finding(d, "agent_tool_time")
    assert s.status == "ok" and t.status == "ok"
    assert s.evidence["peak"] < 5.0 and t.evidence["peak"] < 0.25
    words(s), words(t)


def test_the_healthy_run_says_its_ratio_in_both_languages() -> None:
    s = finding(diagnosed(HEALTHY[0]), "agent_stragglers")
    assert "takes 2.42× the mean sample" in s.message["en"]
    assert "最慢的样本耗时是平均样本的 2.42 倍" in s.message["zh"]


@pytest.mark.parametrize("run_id", STRAGGLING)
def test_a_straggler_while_the_other_responses_collapse_is_a_note(run_id: str) -> None:
    """Real: as the KL penalty makes the answers collapse (length 970 -> 9 tokens), one sample still writes
    thousands of tokens: at step 35 of the 3B run 50.6 s against a mean of 5.5 s, the batch waiting 43 % of
    the step; at step 6 of the 4B run 131 s against 22.6 s, an 8,096-token response (the length cap)."""
    f = finding(diagnosed(run_id), "agent_stragglers")
    assert f.status == "note" and f.evidence["value"] >= 5.0 and f.evidence["wait"] >= 0.1
    assert f.onset_step in (range(30, 40) if "qwen2.5" in run_id else range(3, 10))
    assert "tokens" in f.message["en"] and "个 token" in f.message["zh"]
    words(f)


def test_tool_time_growing_to_a_sixth_of_the_step_is_a_blow_up() -> None:
    """Real: the coef-0.02 ReTool run's slowest sample spends 0.2 % of the step in tools over the first fifth
    and 16 % over the last (tool_calls/max 30 s -> 135 s: calls at a 30 s timeout stacking up)."""
    f = finding(diagnosed(TOOLS), "agent_tool_time")
    assert f.status == "note" and f.message["en"].startswith("Tool calls on the step's critical path")
    assert f.evidence["baseline"] < 0.01 and f.evidence["value"] > 0.15
    assert "tool-time blow-up" in f.message["en"] and "工具耗时在爆炸" in f.message["zh"]
    words(f)


def _agent(n: int = 40, **over: np.ndarray) -> dict[str, np.ndarray]:
    """Constructed: a veRL agent loop's timers, a mean sample of 20 s, the slowest of 50 s, a 200 s step."""
    s = {"timing_s/step": np.full(n, 200.0), "timing_s/gen": np.full(n, 60.0),
         "timing_s/agent_loop/generate_sequences/mean": np.full(n, 20.0),
         "timing_s/agent_loop/generate_sequences/max": np.full(n, 50.0),
         "timing_s/agent_loop/tool_calls/mean": np.full(n, 0.5),
         "timing_s/agent_loop/tool_calls/max": np.full(n, 5.0)}
    return s | over


def test_constructed_tools_taking_a_third_of_every_step_are_heavy() -> None:
    s = _agent()
    s["timing_s/agent_loop/tool_calls/max"] = np.full(40, 70.0)
    f = finding(diagnose(make_run(s)), "agent_tool_time")
    assert f.status == "note" and f.evidence["value"] == pytest.approx(0.35)
    assert "tool_calls/max" in f.message["en"] and "GPU 在等工具" in f.message["zh"]


def test_constructed_stragglers_without_the_slowest_keys_read_the_max() -> None:
    s = _agent(**{"timing_s/agent_loop/generate_sequences/max": np.r_[np.full(20, 50.0), np.full(20, 150.0)]})
    f = finding(diagnose(make_run(s)), "agent_stragglers")
    assert f.status == "note" and 21 <= f.onset_step <= 26 and "timing_s/agent_loop/generate_sequences/max" in f.metrics


def test_a_long_tail_too_short_to_cost_the_step_is_not_a_straggler() -> None:
    """Constructed: the slowest sample 10x the mean, but 9 s of a 200 s step (< 10 % waiting)."""
    s = _agent(**{"timing_s/agent_loop/generate_sequences/mean": np.full(40, 1.0),
                  "timing_s/agent_loop/generate_sequences/max": np.full(40, 10.0)})
    assert finding(diagnose(make_run(s)), "agent_stragglers").status == "ok"


def test_without_agent_loop_timers_or_with_too_few_steps_nothing_is_judged() -> None:
    plain = make_run({"timing_s/step": np.full(40, 100.0), "timing_s/gen": np.full(40, 50.0)})
    short = make_run(_agent(n=4))
    for run in (plain, short):
        found = {f.check: f.status for f in diagnose(run).findings}
        assert found.get("agent_stragglers", "skipped") == "skipped"
        assert found.get("agent_tool_time", "skipped") == "skipped"
