"""Tool-call argument validity and the reasoning around a tool response, on the real veRL multi-turn dump
(tests/rollout/data/verl-gsm8k-multiturn-hecate: SGLang with a GSM8K reward tool, Qwen's template; its
source.toml says where it comes from), on dumps written by the real veRL writer, and the shard invariance."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import orjson
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from rlvitals.cli import main
from rlvitals.rollout import tool_turns as tt
from rlvitals.rollout.analysis import analyze_rollouts
from rlvitals.rollout.readers import read_rollouts
from rlvitals.rollout.segments import segments
from rlvitals.rollout.writers import write_verl_dump

HECATE = Path(__file__).parent / "data" / "verl-gsm8k-multiturn-hecate"
CALL = ("<tool_call>", "</tool_call>")


@pytest.fixture(scope="module")
def hecate() -> pl.DataFrame:
    return read_rollouts(HECATE).table


def test_real_calls_that_parse_and_that_do_not(hecate: pl.DataFrame) -> None:
    calls = [c for text in hecate["response"].to_list() for c in segments(text, CALL)]
    bad = [c.strip() for c in calls if not tt.valid_call(c)]
    # 1,750 calls in 1,024 rollouts; 21 whose arguments do not parse, among them these as the policy wrote them
    assert (len(calls), len(bad)) == (1750, 21)
    assert '"name": "calc_gsm8k_reward", "arguments": {"answer": "3.5"}' in bad  # keys without the braces
    assert "#### 30" in bad  # the final answer written into the call
    assert '{"name": "calc_gsm8k_reward", "arguments": {"answer": More_Rocks_Albert_Joshua}}' in bad
    row = tt.tool_turns_table(hecate).row(0, named=True)
    assert row["rollout/tool_calls/valid_args"] == pytest.approx(1729 / 1750)


def _schema(prompt: str) -> dict[str, dict[str, object]]:
    """The tools the prompt offers, from its ``<tools>`` block (one JSON function per line): name → parameters."""
    block = re.search(r"<tools>\n(.*?)\n</tools>", prompt, re.DOTALL)
    assert block
    fns = [json.loads(line)["function"] for line in block[1].splitlines() if line.strip()]
    return {f["name"]: f["parameters"] for f in fns}


def test_the_tool_schema_of_the_real_prompt(hecate: pl.DataFrame) -> None:
    schemas = _schema(hecate["prompt"][0])
    assert schemas["calc_gsm8k_reward"]["required"] == ["answer"]
    assert tt.valid_call('{"name": "calc_gsm8k_reward", "arguments": {"answer": "15"}}', schemas)
    assert not tt.valid_call('{"name": "calc_gsm8k_reward", "arguments": {"answer": 15}}', schemas)
    assert not tt.valid_call('{"name": "calc_gsm8k_reward", "arguments": {}}', schemas)
    assert tt.valid_call('{"name": "calc_gsm8k_reward", "arguments": {"answer": 15}}')  # no schema: JSON is enough
    calls = [c for text in hecate["response"].to_list() for c in segments(text, CALL)]
    fitting = sum(tt.valid_call(c, schemas) for c in calls)
    row = tt.tool_turns_table(hecate, schemas=schemas).row(0, named=True)
    assert row["rollout/tool_calls/valid_args"] == pytest.approx(fitting / 1750) and fitting <= 1729


def test_the_reasoning_after_a_real_tool_response(hecate: pl.DataFrame) -> None:
    first = hecate["response"][0]
    # the policy called first and reasoned after: "Current parsed answer='15' reward=0.0" has six distinct word
    # tokens (current, parsed, answer, 15, reward, 0), of which the reasoning after it uses "15"
    after = first.split("</tool_response>", 1)[1].replace("assistant\n", "", 1)
    assert tt.tool_turns(first) == [(0, len(after.split()), pytest.approx(1 / 6))]
    row = tt.tool_turns_table(hecate).row(0, named=True)
    turns = [t for text in hecate["response"].to_list() for t in tt.tool_turns(text)]
    # 1,716 tool responses in 1,214 runs: the responses to the calls of one turn come back together
    assert len(turns) == 1214 and sum(t.count("<tool_response>") for t in hecate["response"].to_list()) == 1716
    assert row["rollout/tool_response/think_before"] == pytest.approx(sum(t[0] for t in turns) / len(turns))
    assert row["rollout/tool_response/think_after"] == pytest.approx(sum(t[1] for t in turns) / len(turns))
    known = [t[2] for t in turns if not math.isnan(t[2])]
    assert row["rollout/tool_response/overlap"] == pytest.approx(sum(known) / len(known))


def test_think_segments_around_a_tool_response() -> None:
    # constructed: the real dump writes no think tags; with them, the reasoning is the think segments only
    text = ("<think>I need the capital of France</think>\n<tool_call>{\"name\": \"search\", \"arguments\": "
            "{\"q\": \"capital of France\"}}</tool_call>\nuser\n<tool_response>Paris is the capital</tool_response>"
            "\n<tool_response>France: Paris</tool_response>\nassistant\n<think>so Paris</think><answer>Paris"
            "</answer>")
    assert tt.tool_turns(text) == [(6, 2, pytest.approx(1 / 5))]
    # a response that ends the rollout has no reasoning after it; one without words has no overlap
    assert tt.tool_turns("<tool_call>f()</tool_call><tool_response>ok</tool_response>") == [(0, 0, 0.0)]
    nan = tt.tool_turns("x y<tool_call>f()</tool_call><tool_response> ... </tool_response>z")
    assert nan[0][:2] == (2, 1) and math.isnan(nan[0][2])


def test_sharded_equals_whole(hecate: pl.DataFrame) -> None:
    groups = sorted(hecate["group"].unique().to_list())
    parts = [hecate.filter(pl.col("group").is_in(groups[i::3])) for i in range(3)]
    whole = tt.compute(tt.update(None, hecate))
    merged = tt.compute(tt.merge(tt.merge(tt.update(None, parts[2]), tt.update(None, parts[0])),
                                 tt.update(None, parts[1])))
    assert_frame_equal(whole, merged)  # exact: counts, integer sums and fsum


def test_rollouts_json_shows_them_for_a_dump_the_real_writer_wrote(tmp_path: Path) -> None:
    good, bad = '{"name": "search", "arguments": {"q": "rl"}}', 'search(q="rl")'
    for step, broken in ((1, 0), (2, 2)):
        write_verl_dump([{"prompt": "q", "score": float(i % 2),
                          "response": f"<tool_call>{bad if i < broken else good}</tool_call>\nuser\n"
                                      "<tool_response>rl is reinforcement learning</tool_response>\nassistant\n"
                                      "<think>reinforcement learning it is</think><answer>RL</answer>"}
                         for i in range(4)], tmp_path / "d", step)
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", str(tmp_path / "d"), "--json"], out, err) == 0, err.getvalue()
    steps = orjson.loads(out.getvalue())["steps"]
    got = [s["metrics"]["rollout/tool_calls/valid_args"] for s in steps]
    assert got == [1.0, 0.5]
    # "rl is reinforcement learning" → "reinforcement learning it is": 4 words after, 3 of the 4 response words
    assert steps[0]["metrics"]["rollout/tool_response/think_after"] == 4.0
    assert steps[0]["metrics"]["rollout/tool_response/overlap"] == pytest.approx(3 / 4)
    a = analyze_rollouts(tmp_path / "d")
    assert a.overall["rollout/tool_calls/valid_args"] == 0.75
