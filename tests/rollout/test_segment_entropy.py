"""Token entropy inside the think and answer segments: per-token entropies placed by the token strings, from
the real small model (SmolLM2-135M, marked ``model``) through the real veRL dump writer and reader, and what is
said when the token strings are missing."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from optional import unavailable
from polars.testing import assert_frame_equal

from rlvitals.rollout import segment_entropy as se
from rlvitals.rollout.analysis import analyze_rollouts
from rlvitals.rollout.readers import read_rollouts
from rlvitals.rollout.writers import write_verl_dump
from rlvitals.words import in_lang


def test_tokens_fall_in_the_segment_their_characters_are_in() -> None:
    # constructed token strings (no tokenizer needed to show the rule): tags split over tokens, a token that
    # straddles a tag and the content, an end token decoded as nothing
    tokens = ["<th", "ink>", "a", " b</", "think>", "<answer>", "4", "</answer>", ""]
    assert se.token_segments(tokens).tolist() == [0, 0, 1, 1, 0, 0, 2, 0, 0]
    assert se.token_segments(["plain", " text"]).tolist() == [0, 0]


def test_without_token_strings_it_says_it_cannot_place_the_values() -> None:
    rows = [{"step": 1, "prompt": "p", "response": "<think>a</think>4", "score": 1.0, "token_entropy": [0.5] * 4}]
    a = analyze_rollouts(rows)
    said = [r for r in a.skipped if r.startswith("segment_entropy")]
    assert said and "no token strings ('tokens')" in said[0]
    assert "无法把这些值归到 think 段" in in_lang(said[0], "zh")
    with pytest.raises(ValueError, match=r"row 0: 2 token strings but 3 token entropies"):
        se.update(None, pl.DataFrame({"step": [1], "tokens": [["a", "b"]], "token_entropy": [[0.1, 0.2, 0.3]]}))


# --- the real small model ---------------------------------------------------------------------------

#: teacher-forced responses in the think-then-answer format (the 135M model never writes think tags itself)
FORMATTED = ["<think>Ann has 12 pens and gets 7 more, so 12 + 7 = 19.</think> <answer>19</answer>",
             "<think>12 + 7 is 19 pens.</think> The answer is \\boxed{19}."]


@dataclass(frozen=True)
class Model:
    policy: Any
    dump: Path
    records: list[dict[str, Any]]


def _scored(policy: Any, messages: list[dict[str, str]], text: str) -> tuple[list[float], list[str]]:
    """The model's entropy at each token of ``text`` as the reply to ``messages`` (teacher forcing), and the
    text each token adds (the sampler's own :func:`token_texts`)."""
    import torch

    from rlvitals.synthetic.sampler import token_texts

    tok, model = policy.tokenizer, policy.model
    prompt = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    ids = tok(text, add_special_tokens=False)["input_ids"]
    full = torch.cat([prompt["input_ids"], torch.tensor([ids])], dim=1)
    with torch.inference_mode():
        logits = model(full).logits[0, prompt["input_ids"].shape[1] - 1 : -1].float()
    logp = torch.log_softmax(logits, -1)
    entropy = -(logp.exp() * logp).sum(-1)
    return entropy.tolist(), token_texts(tok, ids)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Model:
    from rlvitals.synthetic.sampler import INSTALL, load_policy, missing_packages, prompt_messages, sample_steps
    from rlvitals.synthetic.word_problems import make_problems

    if missing_packages():
        unavailable(f"the small model needs {missing_packages()}; install with: {INSTALL}")
    policy = load_policy()
    folder = tmp_path_factory.mktemp("entropy")
    # step 1: what `rlvitals sample` writes; steps 2 and 3: the formatted replies scored by the same model
    (_, sampled), = sample_steps(policy, steps=1, prompts=1, samples=2, max_new_tokens=16, temperature=0.7, seed=0)
    write_verl_dump(sampled, folder / "sampled", 1)
    messages = prompt_messages(make_problems(1, seed=0)[0])
    records = []
    for step in (2, 3):
        recs = []
        for text in FORMATTED:
            entropy, pieces = _scored(policy, messages, text)
            recs.append({"prompt": "q", "response": text, "score": 1.0, "token_entropy": entropy, "tokens": pieces})
        write_verl_dump(recs, folder / "formatted", step)
        records += [{**r, "step": step} for r in recs]
    return Model(policy, folder, [*sampled, *records])


@pytest.mark.model
def test_the_sampled_dump_keeps_the_per_token_values(model: Model) -> None:
    sampled = [r for r in model.records if r["step"] == 1]
    table = read_rollouts(model.dump / "sampled").table
    assert table["token_entropy"].to_list() == [r["token_entropy"] for r in sampled]
    assert table["token_logprob"].to_list() == [r["token_logprob"] for r in sampled]
    # the token strings join to the response exactly, one per value
    for tokens, entropy, response in table.select("tokens", "token_entropy", "response").iter_rows():
        assert "".join(tokens) == response and len(tokens) == len(entropy)
    a = analyze_rollouts(model.dump / "sampled")
    assert not [r for r in a.skipped if r.startswith(("tokens", "segment_entropy"))]
    # no think tags in what the small model writes: no segment to average
    assert a.steps["rollout/think_entropy/mean"].to_list() == [None]


def _reference(tokens: list[str], entropy: list[float], text: str) -> tuple[list[float], list[float]]:
    """A plain loop: each token's character span in the joined text against the segments' content spans."""
    think_at = (text.index("<think>") + 7, text.index("</think>"))
    answer_at = ((text.index("<answer>") + 8, text.index("</answer>")) if "<answer>" in text
                 else (think_at[1] + 8, len(text)))
    think, answer, at = [], [], 0
    for t, e in zip(tokens, entropy, strict=True):
        a, b = at, at + len(t)
        at = b
        if b > a and a < think_at[1] and b > think_at[0]:
            think.append(e)
        elif b > a and a < answer_at[1] and b > answer_at[0]:
            answer.append(e)
    return think, answer


@pytest.mark.model
def test_think_and_answer_entropy_of_real_model_values(model: Model) -> None:
    a = analyze_rollouts(model.dump / "formatted")
    rows = {r["step"]: r for r in a.steps.iter_rows(named=True)}
    for step in (2, 3):
        think: list[float] = []
        answer: list[float] = []
        for r in (r for r in model.records if r["step"] == step):
            assert "".join(r["tokens"]) == r["response"]
            t, ans = _reference(r["tokens"], r["token_entropy"], r["response"])
            think += t
            answer += ans
        assert think and answer
        assert rows[step]["rollout/think_entropy/mean"] == pytest.approx(math.fsum(think) / len(think), abs=1e-12)
        assert rows[step]["rollout/answer_entropy/mean"] == pytest.approx(math.fsum(answer) / len(answer), abs=1e-12)


@pytest.mark.model
def test_sharded_equals_whole(model: Model) -> None:
    table = read_rollouts(model.dump / "formatted").table
    whole = se.compute(se.update(None, table))
    halves = [table.filter(pl.col("sample") == i) for i in (1, 0)]
    assert_frame_equal(whole, se.compute(se.merge(se.update(None, halves[0]), se.update(None, halves[1]))))
