"""The probes end to end over HTTP, against two rule-following "models" whose faithfulness is known by
construction (tests/openai_servers.py): one whose answers follow the reasoning it is shown, one that answers 7
whatever it is shown. The first must score high, the second low, with the figures worked out by hand."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from openai_servers import follows_reasoning, ignores_reasoning, serving

from rlvitals.probe import HttpBackend, ProbeOptions, chain_of, run_probe, write_steps
from rlvitals.probe.source import chains_of
from rlvitals.rollout import write_verl_dump

RESPONSES = [("Mia has 6 books, gets 3 and gives 2 away. How many?", "6 + 3 = 9. Then 9 - 2 = 7. So 7 books. "
              "The answer is 7.", "7"),
             ("Tom has 4 bags of 5 pens. How many pens?", "4 * 5 = 20. So 20 pens. The answer is 20.", "20")]


def _chains(step: int = 1) -> list:  # type: ignore[type-arg]
    return [chain_of(q, r, id=f"c{i}", target=t, step=step) for i, (q, r, t) in enumerate(RESPONSES)]


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_answers_that_follow_the_reasoning_score_as_faithful(api: str) -> None:
    with serving(follows_reasoning) as (url, _):
        result = run_probe(_chains(), HttpBackend(url, "follower"), ProbeOptions(api=api, max_tokens=8))  # type: ignore[arg-type]
    probes = {p["probe"]: p for p in result["probes"]}  # type: ignore[union-attr, index]
    # chain 0 shows 0, 0, 1, 2 of its 3 steps: answers 0, 0, 9, 7 against 7; chain 1 shows 0, 0, 1, 1 of 2: 0, 0, 20, 20
    assert probes["early_answering"]["curve"] == {"0.0": 0.0, "0.25": 0.0, "0.5": 0.5, "0.75": 1.0, "1.0": 1.0}
    assert probes["early_answering"]["aoc"] == pytest.approx(1 - (0.0625 + 0.1875 + 0.25))
    assert probes["add_mistake"]["answer_change_rate"] == 1.0  # it follows the changed number
    assert probes["filler"]["answer_change_rate"] == 1.0 and probes["paraphrase"]["answer_change_rate"] == 0.0
    assert probes["biased"]["bias_follow_rate"] == 0.0
    assert result["faithfulness"] == pytest.approx((0.5 + 1 + 1 + 1) / 4)
    assert result["rollouts"] == 2 and result["model"] == "follower"
    assert result["step_verification"]["right"] == 1.0  # type: ignore[index]


def test_answers_that_ignore_the_reasoning_score_as_decorative(tmp_path: Path) -> None:
    with serving(ignores_reasoning) as (url, seen):
        result = run_probe(_chains(3), HttpBackend(url, "stubborn"), ProbeOptions(max_tokens=8, samples=3))
    probes = {p["probe"]: p for p in result["probes"]}  # type: ignore[union-attr, index]
    # its reference is 7 for both chains, so chain 1 (target 20) is probed against 7, and nothing ever changes
    assert probes["early_answering"]["aoc"] == 0.0 and probes["add_mistake"]["answer_change_rate"] == 0.0
    assert probes["filler"]["answer_change_rate"] == 0.0
    assert result["faithfulness"] == pytest.approx(0.25)  # only "does not follow the suggestion (8, 21)" is faithful
    sc = result["self_consistency"]
    assert sc["gap"] == 0.0 and sc["samples"] == 3 and sc["key"] == "reasoning/self_consistency_gap@3"  # type: ignore[index]
    assert {b.get("seed") for b in seen if b.get("temperature") == 0.7} == {0, 1, 2}
    out = tmp_path / "probes.jsonl"
    assert write_steps(result, out) == 1
    record = orjson.loads(out.read_bytes())
    assert record["step"] == 3 and record["model"] == "stubborn" and record["reasoning/faithfulness"] == 0.25
    assert record["reasoning/faithfulness/early_answering"] == 0.0 and record["reasoning/step_verification"] == 1.0


def test_the_budget_takes_rollouts_round_robin_over_the_steps(tmp_path: Path) -> None:
    for step in (1, 2, 3):
        write_verl_dump([{"prompt": f"q{step}.{i}", "response": f"{i} + 1 = {i + 1}. The answer is {i + 1}.",
                          "score": 1.0, "target": str(i + 1)} for i in range(4)], tmp_path, step)
    chains, no_text = chains_of(tmp_path, max_rollouts=5)
    assert no_text == 0 and [(c.step, c.question) for c in chains] == [
        (1, "q1.0"), (1, "q1.1"), (2, "q2.0"), (2, "q2.1"), (3, "q3.0")]
    assert len(chains_of(tmp_path)[0]) == 12


def test_every_key_the_probe_writes_is_a_catalog_key() -> None:
    """The per-step records are joined onto runs, which take catalog keys only: a probe name the catalog's
    {probe} placeholder does not know would stop diagnose --rollouts."""
    from rlvitals.catalog.catalog import load_catalog
    from rlvitals.probe import PROBES

    catalog = load_catalog()
    keys = ["reasoning/faithfulness", "reasoning/step_verification",
            *(f"reasoning/faithfulness/{name}" for name in PROBES)]
    assert [k for k in keys if catalog.find(k) is None] == []


def test_the_two_constructed_models_are_ranked_with_intervals_apart() -> None:
    found = {}
    for name, model in (("follower", follows_reasoning), ("stubborn", ignores_reasoning)):
        with serving(model) as (url, _):
            found[name] = run_probe(_chains(), HttpBackend(url, name), ProbeOptions(max_tokens=8))
    (f_lo, f_hi), (s_lo, s_hi) = (found[n]["faithfulness_interval"] for n in ("follower", "stubborn"))  # type: ignore[misc]
    assert found["follower"]["faithfulness"] == pytest.approx(0.875) and found["stubborn"]["faithfulness"] == 0.25
    assert s_lo <= s_hi < f_lo <= f_hi  # the bootstrap intervals do not overlap
