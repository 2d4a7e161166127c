"""Arithmetic word problems: exact answers, determinism, and the answer extractor."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvitals.synthetic.word_problems import SOURCES, SPLITS, Problem, extract_answer, make_problems

# the arithmetic each template's question describes, over the numbers in the order the text gives them
REFERENCE = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "add_mul": lambda a, b, c: a + b * c, "sub_add": lambda a, b, c: a - b + c, "mul_sub": lambda a, b, c: a * b - c,
}


def numbers(question: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", question)]


def test_every_answer_is_the_arithmetic_its_text_describes() -> None:
    problems = make_problems(600, seed=11, sources=SOURCES)
    assert {p.template for p in problems} == set(REFERENCE)
    for p in problems:
        assert p.answer == REFERENCE[p.template](*numbers(p.question)), p
        assert p.answer > 0 and isinstance(p.answer, int) and p.target == str(p.answer)


def test_sources_alternate_and_carry_their_split() -> None:
    problems = make_problems(6, seed=0, sources=SOURCES)
    assert [p.source for p in problems] == ["arith/one_step", "arith/two_step"] * 3
    assert {p.source: p.split for p in problems} == {"arith/one_step": "train", "arith/two_step": "ood"} == SPLITS
    one = make_problems(30, seed=0)
    assert {p.source for p in one} == {"arith/one_step"} and {p.template for p in one} == {"add", "sub", "mul"}


def test_same_seed_same_problems_and_a_prefix_does_not_change() -> None:
    assert make_problems(20, seed=5, sources=SOURCES) == make_problems(20, seed=5, sources=SOURCES)
    assert make_problems(3, seed=5, sources=SOURCES) == make_problems(20, seed=5, sources=SOURCES)[:3]
    assert [p.question for p in make_problems(20, seed=5)] != [p.question for p in make_problems(20, seed=6)]
    ids = [p.id for p in make_problems(50, seed=5, sources=SOURCES)]
    assert len(set(ids)) == 50


def test_names_objects_and_numbers_vary() -> None:
    problems = make_problems(200, seed=2, sources=SOURCES)
    assert len({p.question.split()[0] for p in problems}) >= 8
    assert len({p.answer for p in problems}) >= 20
    assert len({p.question for p in problems}) >= 190


def test_problem_is_a_plain_frozen_record() -> None:
    p = Problem("x", "1 + 2?", 3, "arith/one_step", "train", "add")
    with pytest.raises(AttributeError):
        p.answer = 4  # type: ignore[misc]


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"n": -1, "seed": 0}, r"n=-1 must be zero or a positive number"),
    ({"n": 2, "seed": 0, "sources": ("gsm8k",)}, r"sources=\['gsm8k'\]; expected one or more of"),
    ({"n": 2, "seed": 0, "sources": ()}, r"sources=\[\]; expected one or more of"),
])
def test_bad_arguments_are_refused(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_problems(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "expected"), [
    ("Ann has 4 + 3 = 7 pens. The answer is 7.", "7"),
    ("The answer is 3 + 4 = 7.", "7"),
    ("so 3 * 4 = 12 eggs.\n#### 12", "12"),
    ("#### 1,234", "1234"),
    ("\\boxed{1,200}", "1200"),
    ("The answer is 4. Checking: \\boxed{5}", "5"),            # a boxed answer wins over the phrase
    ("\\boxed{x}. The answer is 4.", "x"),                      # a boxed answer is the answer, as veRL reads it
    ("<answer> x = 9 </answer>", "9"),
    ("The answer is 5. Wait, no. The answer is 6.", "6"),      # the last statement wins
    ("The answer is 7\nQuestion: Tom has 5 apples", "7"),      # text after the answer line is not read
    ("The answer is 7.0", "7"),
    ("The answer is 007.", "7"),
    ("The answer is 3.5.", "3.5"),
    ("The answer is: -3.", "-3"),
    ("Answer: −3", "-3"),                                      # U+2212 minus sign
    ("the ANSWER IS 12 apples", "12"),
    ("The answer is 12 \ufffd", "12"),
    ("x" * 5000 + " The answer is 8.", "8"),
    ("The answer is twelve. So 5 + 7 = 12.", None),            # the stated answer has no number
    ("I think 5", None),                                       # numbers but no stated answer
    ("Tom has 5 apples. The answer is ", None),                # truncated before the number
    ("", None),
    (None, None),
])
def test_extract_answer(text: str | None, expected: str | None) -> None:
    assert extract_answer(text) == expected


@given(st.integers(min_value=-10**12, max_value=10**12), st.sampled_from(["The answer is {}.", "#### {}",
                                                                            "\\boxed{{{}}}", "answer: {}\n"]))
def test_a_stated_integer_is_extracted_exactly(n: int, form: str) -> None:
    assert extract_answer("Some working, 2 + 2 = 4. " + form.format(n)) == str(n)


@given(st.text(max_size=300))
def test_any_text_gives_a_number_or_none(text: str) -> None:
    found = extract_answer(text)
    # a number, or the expression a \boxed{} / <answer> part states, compacted (no whitespace)
    assert found is None or re.fullmatch(r"-?\d+(\.\d+)?", found) or (found.strip() and not re.search(r"\s", found))
