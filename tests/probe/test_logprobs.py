"""Log-probabilities where the backend offers them: early answering asks for them, the HTTP backend reads them
in both APIs' shapes, the cache keeps them, and the summary gives how sure the model was of each forced answer
as the reasoning is revealed. A server that gives none leaves the figures as they were."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from openai_servers import completion, follows_reasoning, ignores_reasoning, serving

from probe.test_runner import _chains
from rlvitals.probe import Cache, Cached, HttpBackend, ProbeOptions, Request, run_probe
from rlvitals.probe.prompts import Reply, logprob_of


def _sure(numbers: int) -> float:
    """The rule-following model's probability of its answer after seeing ``numbers`` numbers."""
    return math.exp(2 * -0.5 / (1 + numbers))


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_the_confidence_curve_follows_what_the_model_was_shown(api: str) -> None:
    with serving(follows_reasoning) as (url, seen):
        result = run_probe(_chains(), HttpBackend(url, "follower"), ProbeOptions(api=api, max_tokens=8))  # type: ignore[arg-type]
    early = next(p for p in result["probes"] if p["probe"] == "early_answering")  # type: ignore[union-attr]
    # chain 0 ("6 + 3 = 9. Then 9 - 2 = 7. So 7 books.") shows 0, 0, 3 and 6 numbers at 0, 0.25, 0.5, 0.75;
    # chain 1 ("4 * 5 = 20. So 20 pens.") 0, 0, 3, 3
    want = {"0.0": _sure(0), "0.25": _sure(0), "0.5": _sure(3), "0.75": (_sure(6) + _sure(3)) / 2}
    assert early["confidence"] == pytest.approx(want) and early["confidence_n"] == 2
    asked = [b for b in seen if "logprobs" in b]
    assert len(asked) == 8 and {b["logprobs"] for b in asked} == ({True} if api == "chat" else {1})
    assert result["faithfulness"] == pytest.approx((0.5 + 1 + 1 + 1) / 4)  # the answers' figures are unchanged


def test_a_server_without_log_probabilities_leaves_no_confidence() -> None:
    with serving(ignores_reasoning) as (url, _):
        result = run_probe(_chains(), HttpBackend(url, "stubborn"), ProbeOptions(max_tokens=8))
    early = next(p for p in result["probes"] if p["probe"] == "early_answering")  # type: ignore[union-attr]
    assert "confidence" not in early and early["aoc"] == 0.0


def test_log_probabilities_that_are_not_numbers_are_no_log_probability() -> None:
    def odd(body: dict[str, object]) -> tuple[int, bytes]:
        return 200, completion(" 7.", False, [float("-inf"), -0.1]).replace(b"-Infinity", b"null")

    with serving(odd) as (url, _):
        reply = HttpBackend(url, "m").generate([Request("completions", "Q", 4, logprobs=True)])[0]
    assert reply == " 7." and logprob_of(reply) is None  # one token's value is missing: no total is made up


def test_the_cache_keeps_a_reply_with_its_log_probability(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "c.sqlite")
    with serving(follows_reasoning) as (url, seen):
        backend = Cached(HttpBackend(url, "follower"), cache)
        asked = Request("completions", "Question: q\nAnswer: Let's think step by step. 2 + 2 = 4.\n"
                                       "Therefore, the final answer is", 8, logprobs=True)
        plain = Request("completions", asked.prompt, 8)
        first = backend.generate([asked, plain])
        again = Cached(HttpBackend(url, "follower"), cache).generate([asked, plain])
    cache.close()
    assert len(seen) == 2  # asked once each: with and without log-probabilities are two requests
    assert isinstance(first[0], Reply) and first[0].logprob == pytest.approx(-1 / 4)  # 3 numbers shown
    assert isinstance(again[0], Reply) and again[0].logprob == first[0].logprob and again[0] == first[0]
    assert logprob_of(first[1]) is None and logprob_of(again[1]) is None
