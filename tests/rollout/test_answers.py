"""The answer parser (rollout/answers.py): ``\\boxed{}`` read as veRL's math reward reads it — balanced braces,
the last one winning, ``\\fbox`` only without a ``\\boxed`` — and the answers the readers take from a real veRL
dump that has no answer column (tests/rollout/data/verl-gsm8k-multiturn-hecate, its source.toml says where
it comes from)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvitals.rollout.analysis import analyze_rollouts
from rlvitals.rollout.answers import default_answer, extract_answer, last_boxed
from rlvitals.rollout.passk import maj_at_k_answers
from rlvitals.rollout.readers import read_rollouts

HECATE = Path(__file__).parent / "data" / "verl-gsm8k-multiturn-hecate"


@pytest.mark.parametrize(("text", "boxed", "answer"), [
    ("so \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}", "\\frac{1}{2}"),
    ("\\boxed{x^{2}+1}", "x^{2}+1", "x^{2}+1"),
    ("\\boxed{ x^{2} + 1 }", " x^{2} + 1 ", "x^{2}+1"),
    ("The answer is \\boxed{\\text{(A)}}", "\\text{(A)}", "(A)"),
    ("\\boxed{\\dfrac{3}{4}}", "\\dfrac{3}{4}", "\\frac{3}{4}"),         # \dfrac and \frac are one answer
    ("\\boxed{1} and later \\boxed{2}", "2", "2"),                      # the last one wins
    ("\\boxed{\\frac{1}{2}} wait, \\boxed{\\frac{1", None, None),         # the last is cut: veRL reads no answer
    ("\\fbox{3}", "3", "3"),                                            # \fbox only where there is no \boxed
    ("\\boxed{5} \\fbox{3}", "5", "5"),
    ("$\\boxed 7$ dollars", "7", "7"),                                  # veRL's \boxed without a brace
    ("\\boxed {12}", "12", "12"),
    ("\\boxedfoo{1}", None, None),                                      # another command, not a box
    ("\\boxed{x = 6}", "x = 6", "6"),
    ("\\boxed{\\$1,200}", "\\$1,200", "1200"),
    ("\\boxed{90^\\circ}", "90^\\circ", "90"),
    ("\\boxed{12 \\text{ cm}}", "12 \\text{ cm}", "12"),
    ("\\boxed{2x}", "2x", "2x"),
    ("\\boxed{x=1, y=2}", "x=1, y=2", "x=1,y=2"),
    ("\\boxed{}", "", None),
    ("no box here", None, None),
])
def test_boxed_answers_with_nested_braces(text: str, boxed: str | None, answer: str | None) -> None:
    assert last_boxed(text) == boxed
    assert default_answer(text) == answer


def test_the_boxed_answer_is_the_answer_wherever_answers_are_extracted() -> None:
    # a nested box used to end at its first inner brace: "\frac{1" and then the last number of that, "1"
    assert extract_answer("We get \\boxed{\\frac{1}{2}}") == "\\frac{1}{2}"
    assert extract_answer("#### 4 and then \\boxed{x^{2}}") == "x^{2}"
    assert default_answer("so she needs 21.\n\n#### 21\n") == "21"
    assert default_answer("#### 616000\n\nso \\(\\boxed{616000}\\).") == "616000"


# -- the balanced-brace parser, for any input -------------------------------------------------

#: text that holds no backslash, so no \boxed or \fbox of its own
plain = st.text(st.characters(blacklist_characters="\\"), max_size=40)
#: a brace-balanced argument, nested to any depth
balanced = st.recursive(st.text(st.characters(blacklist_characters="{}\\"), max_size=8),
                        lambda inner: st.lists(st.one_of(inner, inner.map(lambda s: "{" + s + "}")), max_size=4)
                        .map("".join), max_leaves=20)


@given(plain, balanced, plain)
def test_a_nested_argument_is_read_whole(before: str, arg: str, after: str) -> None:
    assert last_boxed(f"{before}\\boxed{{{arg}}}{after}") == arg


@given(plain, balanced, plain, balanced, plain)
def test_the_last_box_wins(a: str, first: str, b: str, second: str, c: str) -> None:
    text = f"{a}\\boxed{{{first}}}{b}\\boxed{{{second}}}{c}"
    assert last_boxed(text) == second and last_boxed(f"{a}\\fbox{{{first}}}{b}\\boxed{{{second}}}") == second


#: pieces of LaTeX answers, joined in any order: braces left open or closed twice, commands without arguments
pieces = st.lists(st.sampled_from(["\\boxed", "\\fbox", "\\boxed{", "{", "}", " ", "$", "\n", "a", "1", "\\frac",
                                   "\\text{", "=", ",", "-", "\\$", "^\\circ"]), max_size=40).map("".join)


@given(pieces)
def test_unbalanced_input_never_crashes(text: str) -> None:
    found = last_boxed(text)
    assert found is None or found in text
    answer = default_answer(text)
    assert answer is None or (answer.strip() == answer and answer)
    extract_answer(text)


@settings(max_examples=50)
@given(st.text(max_size=200))
def test_any_text_is_read_without_error(text: str) -> None:
    assert last_boxed(text) is None or last_boxed(text) in text
    default_answer(text)


# -- a real veRL dump without an answer column ------------------------------------------------------------

@pytest.fixture(scope="module")
def hecate() -> pl.DataFrame:
    return read_rollouts(HECATE).table


def test_the_readers_take_the_answer_veRL_scored_from_each_response(hecate: pl.DataFrame) -> None:
    """Real: 1024 rollouts of 64 GSM8K prompts; the dump has no 'pred', its reward scored '#### N'. Every
    rollout the reward scored 1.0 has an answer read, and within each prompt they all agree on it."""
    assert hecate.height == 1024 and hecate["answer"].null_count() == 95
    right = hecate.filter(pl.col("score") >= 1.0)
    assert right["answer"].null_count() == 0
    per_prompt = right.group_by("group").agg(pl.col("answer").n_unique().alias("answers"))
    assert per_prompt.height == 64 and per_prompt["answers"].to_list() == [1] * 64
    boxed = hecate.filter(pl.col("response").str.contains("\\\\boxed"))
    assert sorted(boxed["answer"].to_list()) == ["112", "11200", "1800", "45", "616000"]


def test_maj_at_k_and_self_consistency_on_the_real_dump() -> None:
    """maj@16 of the analysis equals the exact single-group formula over the answers read, group by group."""
    analysis = analyze_rollouts(HECATE, ks=(1, 16))
    row = analysis.steps.row(0, named=True)
    table = read_rollouts(HECATE).table
    groups = table.partition_by("group")
    want = sum(maj_at_k_answers(g["answer"].to_list(), (g["score"] >= 1.0).to_list(), 16) for g in groups) / 64
    assert row["maj@16"] == pytest.approx(want, abs=1e-12) and row["maj@16"] == pytest.approx(0.888, abs=1e-3)
    assert row["reasoning/self_consistency_gap@16"] == pytest.approx(row["maj@16"] - row["pass@1"], abs=1e-12)
    assert any("as veRL's default rewards read it" in str(n) for n in analysis.notes)
