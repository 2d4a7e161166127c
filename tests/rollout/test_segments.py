from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvitals.rollout import segments as s
from rlvitals.rollout.tags import parse_tag

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


# --- reference: every key of segments_table from a plain loop (str.find, no regex, no polars) ---

TAG_SETS = [
    s.SegmentTags(),
    s.SegmentTags(think=("<reasoning>", "</reasoning>"), answer=("[ANS]", "[/ANS]"), tool_call=("<call>", "</call>")),
    s.SegmentTags(think=("[THINK]", "[/THINK]"), answer=("<final>", "</final>"), tool_call=("{{", "}}")),
]


def ref_find(text: str, tag: tuple[str, str]) -> list[str]:
    out, pos = [], 0
    while (i := text.find(tag[0], pos)) >= 0:
        j = text.find(tag[1], i + len(tag[0]))
        if j < 0:
            break
        out.append(text[i + len(tag[0]):j])
        pos = j + len(tag[1])
    return out


def ref_compliant(text: str, tags: s.SegmentTags) -> bool:
    (t0, t1), (a0, a1) = tags.think, tags.answer
    if any(text.count(t) != 1 for t in (t0, t1, a0, a1)):
        return False
    i, j, k, m = text.find(t0), text.find(t1), text.find(a0), text.find(a1)
    if not i <= j - len(t0) or not j + len(t1) <= k or not k + len(a0) <= m:
        return False
    return not (text[:i].strip() or text[j + len(t1):k].strip() or text[m + len(a1):].strip())


def ref_in_reasoning(text: str, answer: str | None, tags: s.SegmentTags) -> bool | None:
    think = " ".join(ref_find(text, tags.think))
    if answer is None:
        found = ref_find(text, tags.answer)
        answer = found[-1] if found else None
    answer = " ".join((answer or "").split())
    if not think or not answer:
        return None
    hay = " ".join(think.split())
    pos = 0
    while (i := hay.find(answer, pos)) >= 0:
        before = hay[i - 1] if i else " "
        after = hay[i + len(answer)] if i + len(answer) < len(hay) else " "
        if not (before.isalnum() or before in "_.") and not (after.isalnum() or after == "_"):
            return True
        pos = i + 1
    return False


def ref_quantile(xs: list[int], q: float) -> float:
    xs = sorted(xs)
    h = (len(xs) - 1) * q
    lo = int(h)
    return xs[lo] + (h - lo) * (xs[min(lo + 1, len(xs) - 1)] - xs[lo])


def ref_table(rows: list[dict], tags: s.SegmentTags, cap: int) -> dict[int, dict]:
    out = {}
    for step in sorted({r["step"] for r in rows}):
        think_n, answer_n, reps, ok, air, calls_n, repeats, all_calls = [], [], [], 0, [], [], 0, 0
        mine = [r for r in rows if r["step"] == step]
        for r in mine:
            text = r["response"] or ""
            think, answer = ref_find(text, tags.think), ref_find(text, tags.answer)
            if think:
                think_n.append(sum(len(x.split()) for x in think))
                words = " ".join(think).split()
                grams = [tuple(words[i:i + 4]) for i in range(len(words) - 3)]
                if grams:
                    reps.append(1 - len(set(grams)) / len(grams))
            if answer:
                answer_n.append(sum(len(x.split()) for x in answer))
            ok += ref_compliant(text, tags)
            got = ref_in_reasoning(text, r.get("answer"), tags)
            if got is not None:
                air.append(got)
            calls = r.get("tool_calls")
            calls = ref_find(text, tags.tool_call) if calls is None else calls
            calls_n.append(len(calls))
            seen: list[str] = []
            for c in calls:
                norm = " ".join(c.split())
                repeats += norm in seen
                seen.append(norm)
            all_calls += len(calls)
        n = len(mine)
        mean_calls = sum(calls_n) / n
        row = {
            "rollout/think_length/mean": sum(think_n) / len(think_n) if think_n else None,
            "rollout/think_repetition": sum(reps) / len(reps) if reps else None,
            "rollout/answer_length/mean": sum(answer_n) / len(answer_n) if answer_n else None,
            "rollout/format_compliance": ok / n,
            "rollout/answer_in_reasoning": sum(air) / len(air) if air else None,
            "rollout/tool_calls/mean": mean_calls,
            "rollout/tool_calls/std": math.sqrt(sum((c - mean_calls) ** 2 for c in calls_n) / n),
            "rollout/tool_calls/repeat_rate": repeats / all_calls if all_calls else None,
            "rollout/tool_calls/at_cap": sum(c >= cap for c in calls_n) / n,
        }
        for kind, xs in (("think", think_n), ("answer", answer_n)):
            for name, q in (("p10", 0.1), ("p50", 0.5), ("p90", 0.9)):
                row[f"rollout/{kind}_length/{name}"] = ref_quantile(xs, q) if xs else None
            row[f"rollout/{kind}_length/max"] = max(xs) if xs else None
        out[step] = row
    return out


def _pieces(tags: s.SegmentTags) -> st.SearchStrategy[str]:
    marks = [t for pair in (tags.think, tags.answer, tags.tool_call) for t in pair]
    return st.sampled_from(["4", "40", "x", "so", "the", "sum", " ", "\n", "4.", "x_4", *marks, *marks])


@st.composite
def rollouts(draw: st.DrawFn) -> tuple[s.SegmentTags, list[dict]]:
    tags = draw(st.sampled_from(TAG_SETS))
    (t0, t1), (a0, a1) = tags.think, tags.answer
    rows = []
    for _ in range(draw(st.integers(1, 12))):
        if draw(st.booleans()):  # a well-formed response, maybe with calls
            words = " ".join(draw(st.lists(st.sampled_from(["so", "x", "is", "4", "0.4", "40", "the"]), max_size=10)))
            ans = draw(st.sampled_from(["4", "x is 4", "", "7"]))
            text = f"{t0}{words}{t1}\n{a0}{ans}{a1}"
        else:
            text = "".join(draw(st.lists(_pieces(tags), max_size=14)))
        rows.append({"step": draw(st.integers(0, 2)), "response": text,
                     "answer": draw(st.sampled_from([None, None, "4", "x is 4", " "])),
                     "tool_calls": draw(st.one_of(st.none(), st.lists(st.sampled_from(["a", "a ", "b"]), max_size=4)))})
    return tags, rows


@settings(max_examples=150, deadline=None)
@given(rollouts(), st.integers(1, 3))
def test_segments_table_matches_a_plain_loop(case: tuple[s.SegmentTags, list[dict]], cap: int) -> None:
    tags, rows = case
    schema = {"step": pl.Int64, "response": pl.Utf8, "answer": pl.Utf8, "tool_calls": pl.List(pl.Utf8)}
    got = s.segments_table(pl.DataFrame(rows, schema=schema), tags=tags, tool_call_cap=cap)
    want = ref_table(rows, tags, cap)
    assert got["step"].to_list() == sorted(want)
    for row in got.iter_rows(named=True):
        ref = want[row["step"]]
        assert set(row) - {"step"} == set(ref)
        for key, value in ref.items():
            assert row[key] == (None if value is None else pytest.approx(value, abs=1e-12)), key


def test_custom_tags_change_what_counts() -> None:
    tags = s.SegmentTags(think=("[THINK]", "[/THINK]"), answer=("<final>", "</final>"))
    text = "[THINK]a b c[/THINK] <final>4</final>"
    df = pl.DataFrame({"step": [0, 0], "response": [text, "<think>a</think><answer>4</answer>"]})
    custom = s.segments_table(df, tags=tags).row(0, named=True)
    assert custom["rollout/format_compliance"] == 0.5 and custom["rollout/think_length/max"] == 3
    default = s.segments_table(df).row(0, named=True)
    assert default["rollout/format_compliance"] == 0.5 and default["rollout/think_length/max"] == 1


def test_parse_tag_and_tag_clashes() -> None:
    assert parse_tag("think") == ("<think>", "</think>")
    assert parse_tag(" [THINK]  [/THINK] ") == ("[THINK]", "[/THINK]")
    for bad in ("", "a b c", "<x>", "x x"):
        with pytest.raises(ValueError, match=r"is not a segment tag: give a tag name \(think means"):
            parse_tag(bad)
    with pytest.raises(ValueError, match=r"need tags of their own, got think=\('<answer>', '</answer>'\)"):
        s.SegmentTags(think=("<answer>", "</answer>"))


def test_an_end_of_sequence_token_after_the_answer_is_no_text_after_it() -> None:
    """The corpus's Logic-RL dump keeps Qwen's <|im_end|> on every response: they read 0 % compliant."""
    from rlvitals.rollout.segments import format_compliant

    assert format_compliant("<think>a</think>\n<answer>1</answer><|im_end|>")
    assert format_compliant("<think>a</think><answer>1</answer> </s> ")
    assert not format_compliant("<think>a</think><answer>1</answer> and then more")
    assert not format_compliant("<|im_end|><think>a</think><answer>1</answer>")


def test_veRL_boxed_format_is_one_think_segment_then_a_boxed_answer() -> None:
    from rlvitals.rollout.segments import answer_in_reasoning, format_compliant

    # veRL's geo3k format reward, <think>.*</think>.*\boxed{.*}.*, and its math reward's last \boxed
    assert format_compliant("<think>x = 6 since 36 = x^2</think> So \\boxed{x = 6}.<|im_end|>")
    assert format_compliant("<think>half of it</think>\n\\boxed{\\frac{1}{2}}")
    assert not format_compliant("<think>half of it</think> \\boxed{\\frac{1}{2}")     # cut mid-answer
    assert not format_compliant("\\boxed{3} <think>a</think>")                         # no answer after it
    assert not format_compliant("so <think>a</think> \\boxed{3}")                      # text before the think
    assert not format_compliant("<think>a</think><think>b</think> \\boxed{3}")         # two think segments
    assert not format_compliant("2 + 2 = \\boxed{4}")                                  # no think segment
    assert not format_compliant("<think>a</think> \\boxed{3} <answer>3</answer> <answer>4</answer>")
    # the final boxed answer is what the reasoning is searched for, when there is no answer segment
    assert answer_in_reasoning("<think>so x^{2}+1 it is</think> \\boxed{x^{2}+1}") is True
    assert answer_in_reasoning("<think>\\boxed{7} is a guess</think> \\boxed{8}") is False
