from __future__ import annotations

import polars as pl
import pytest

from rlvitals.rollout import segments as s

GOOD = "<think>so x is 4 and then 4</think>\n<answer>4</answer>"


def test_hand_values():
    assert s.segments("<a>x</a> y <a>z</a>", ("<a>", "</a>")) == ["x", "z"]
    assert s.repetition_rate("a b c d a b c d", 4) == pytest.approx(0.2)
    assert s.format_compliant(GOOD)
    assert not s.format_compliant("<answer>4</answer><think>x</think>")
    assert not s.format_compliant(GOOD + "<answer>5</answer>")
    assert not s.format_compliant("junk " + GOOD)
    assert s.answer_in_reasoning(GOOD) is True
    assert s.answer_in_reasoning("<think>x is 40</think><answer>4</answer>") is False
    assert s.answer_in_reasoning("<answer>4</answer>") is None
    assert s.repeat_share(["search(a)", "search( a)", "search(b)", "search(a)"]) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="think"):
        s.SegmentTags(think=("<t>", "<t>"))


def test_table():
    df = pl.DataFrame({"step": [0, 0, 1], "response": [
        GOOD + "<tool_call>q</tool_call>",
        "<think>a b c d a b c d</think><tool_call>q</tool_call><tool_call>q</tool_call>", "plain"]})
    row = s.segments_table(df, tool_call_cap=2).row(0, named=True)
    assert row["rollout/think_length/mean"] == pytest.approx((7 + 8) / 2)
    assert row["rollout/answer_length/mean"] == 1.0
    assert row["rollout/format_compliance"] == 0.0  # tool calls outside the think segment
    assert row["rollout/think_repetition"] == pytest.approx((0 + 0.2) / 2)
    assert row["rollout/tool_calls/mean"] == 1.5 and row["rollout/tool_calls/std"] == pytest.approx(0.5)
    assert row["rollout/tool_calls/repeat_rate"] == pytest.approx(1 / 3)
    assert row["rollout/tool_calls/at_cap"] == 0.5
    assert row["rollout/answer_in_reasoning"] == 1.0
    with pytest.raises(ValueError, match="response"):
        s.segments_table(df.drop("response"))


def test_tool_calls_column_preferred():
    df = pl.DataFrame({"step": [0], "response": ["<tool_call>a</tool_call>"], "tool_calls": [["x", "x", "y"]]})
    row = s.segments_table(df).row(0, named=True)
    assert row["rollout/tool_calls/mean"] == 3.0 and row["rollout/tool_calls/repeat_rate"] == pytest.approx(1 / 3)
