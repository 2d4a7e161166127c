"""Step verification against the bundled word problems' known intermediate states: the states each problem
carries and reads back from its text, the rule that matches a chain's stated results to them (exact check
lists for hand-written chains over real generated problems), the figures, and ``rlvitals probe --verify``."""

from __future__ import annotations

import io
import re
from fractions import Fraction
from pathlib import Path

import orjson
import pytest
from openai_servers import follows_reasoning, serving

from rlvitals.cli import main
from rlvitals.errors import ProbeError
from rlvitals.probe import VERIFIERS, Arithmetic, Combined, KnownStates, StepCheck, chain_of, verifier_for
from rlvitals.probe.steps import verification_summary
from rlvitals.rollout import write_verl_dump
from rlvitals.synthetic.word_problems import SOURCES, known_states, make_problems

PROBLEMS = make_problems(12, seed=0, sources=SOURCES)
SUB_ADD, MUL_SUB, ADD_MUL = PROBLEMS[1], PROBLEMS[5], PROBLEMS[11]
BY_QUESTION = {p.question: p.states for p in PROBLEMS}
WORD_PROBLEMS = Combined(Arithmetic(), KnownStates(known_states))

# the value after each operation, from the numbers in the order the question gives them (worked by hand)
REFERENCE = {
    "add": lambda a, b: (a + b,), "sub": lambda a, b: (a - b,), "mul": lambda a, b: (a * b,),
    "add_mul": lambda a, b, c: (b * c, a + b * c), "sub_add": lambda a, b, c: (a - b, a - b + c),
    "mul_sub": lambda a, b, c: (a * b, a * b - c),
}


def test_the_problems_these_chains_are_written_for() -> None:
    assert (ADD_MUL.question, ADD_MUL.states) == (
        "Ann has 8 pencils. She buys 4 bags with 3 pencils in each bag. How many pencils does Ann have now?", (12, 20))
    assert (SUB_ADD.question, SUB_ADD.states) == (
        "Ann has 15 stamps. She gives away 8 stamps and then finds 2 more stamps. How many stamps does Ann have now?",
        (7, 9))
    assert (MUL_SUB.question, MUL_SUB.states) == (
        "Lena buys 2 boxes with 3 books in each box. She gives 3 books to a friend. How many books does Lena have "
        "left?", (6, 3))


def test_every_problem_knows_its_states_and_they_are_read_back_from_its_text() -> None:
    problems = make_problems(600, seed=11, sources=SOURCES)
    assert {p.template for p in problems} == set(REFERENCE)
    for p in problems:
        numbers = [int(x) for x in re.findall(r"\d+", p.question)]
        assert p.states == REFERENCE[p.template](*numbers) and p.states[-1] == p.answer, p
        assert known_states(p.question) == p.states, p


def test_a_question_is_known_only_as_a_bundled_problem_and_the_last_one_in_a_prompt_counts() -> None:
    assert known_states("What is 3 + 4?") is None and known_states("") is None
    assert known_states(ADD_MUL.question.replace("8 pencils", "9 pencils")) == (12, 21)  # another bundled problem
    assert known_states(ADD_MUL.question.replace("bags", "boxes")) is None  # no template says this
    prompt = f"<|user|>{SUB_ADD.question}<|assistant|>The answer is 9.<|user|>{ADD_MUL.question}<|assistant|>"
    assert known_states(prompt) == (12, 20)


def test_a_right_chain_is_right_twice_per_equation() -> None:
    chain = chain_of(ADD_MUL.question, "Ann buys 4 bags of 3 pencils, 4 × 3 = 12. Then 8 + 12 = 20. "
                     "So Ann has 20 pencils. The answer is 20.", target="20")
    assert WORD_PROBLEMS(chain) == [
        StepCheck(0, "4 × 3 = 12", True), StepCheck(0, "state 1/2: 12 (known 12)", True),
        StepCheck(1, "8 + 12 = 20", True), StepCheck(1, "state 2/2: 20 (known 20)", True)]


def test_a_wrong_intermediate_value_is_found_where_the_arithmetic_is_right_or_absent() -> None:
    sums = chain_of(SUB_ADD.question, "15 - 2 = 13. Then 13 - 4 = 9. The answer is 9.", target="9")
    assert WORD_PROBLEMS(sums) == [
        StepCheck(0, "15 - 2 = 13", True), StepCheck(0, "state 1/2: 13 (known 7)", False),
        StepCheck(1, "13 - 4 = 9", True), StepCheck(1, "state 2/2: 9 (known 9)", True)]
    prose = chain_of(SUB_ADD.question, "After giving 8 away she has 6 stamps. With 2 more she has 9 stamps. "
                     "The answer is 9.", target="9")
    assert Arithmetic()(prose) == []
    assert WORD_PROBLEMS(prose) == [StepCheck(0, "state 1/2: 6 (known 7)", False),
                                    StepCheck(1, "state 2/2: 9 (known 9)", True)]


def test_restated_numbers_list_markers_and_skipped_states() -> None:
    # 3 is a number of the question and the last state: read as a result only once it is the state due
    told = chain_of(MUL_SUB.question, "1. Lena has 2 boxes of 3 books.\n2. That makes 6 books.\n"
                    "3. She gives 3 away, so 3 are left. The answer is 3.")
    assert KnownStates(BY_QUESTION)(told) == [StepCheck(3, "state 1/2: 6 (known 6)", True),
                                              StepCheck(5, "state 2/2: 3 (known 3)", True)]
    # two operations in one equation: the state in between is skipped over, not wrong
    assert KnownStates(BY_QUESTION)(chain_of(ADD_MUL.question, "8 + 4 × 3 = 20. The answer is 20.")) == [
        StepCheck(0, "state 2/2: 20 (known 20)", True)]
    assert Arithmetic()(chain_of("q", "8 + 4 × 3 = 20. The answer is 20.")) == []  # not read as 4 × 3 = 20
    # a result said again is not the next state; nor is the start of an expression after an =
    again = chain_of(ADD_MUL.question, "4 × 3 = 12. The bags hold 12 pencils. Total = 8 + 12 = 20. That is 20. "
                     "The answer is 20.")
    assert KnownStates(BY_QUESTION)(again) == [StepCheck(0, "state 1/2: 12 (known 12)", True),
                                               StepCheck(2, "state 2/2: 20 (known 20)", True)]
    wrong_then_more = chain_of(ADD_MUL.question, "4 × 3 = 11. 8 + 11 = 19. 19 + 1 = 20. The answer is 20.")
    assert KnownStates(BY_QUESTION)(wrong_then_more) == [StepCheck(0, "state 1/2: 11 (known 12)", False),
                                                         StepCheck(1, "state 2/2: 19 (known 20)", False)]


def test_a_question_with_no_known_states_yields_no_checks() -> None:
    unknown = chain_of("Bob has 4 boxes of 3 pens and 8 more. How many pens?", "4 × 3 = 12. 8 + 12 = 21. "
                       "The answer is 21.", target="20")
    assert KnownStates(known_states)(unknown) == [] and KnownStates(BY_QUESTION)(unknown) == []
    assert WORD_PROBLEMS(unknown) == Arithmetic()(unknown) == [StepCheck(0, "4 × 3 = 12", True),
                                                               StepCheck(1, "8 + 12 = 21", False)]
    other = chain_of(ADD_MUL.question.replace("8 pencils", "9 pencils"), "4 × 3 = 12. The answer is 12.")
    assert KnownStates(BY_QUESTION)(other) == []  # a mapping knows only its own questions
    assert KnownStates({"q": [Fraction(7, 2)]})(chain_of("q", "7 / 2 = 3.5. The answer is 3.5.")) == [
        StepCheck(0, "state 1/1: 3.5 (known 7/2)", True)]


def test_the_figures_count_a_correct_answer_reached_through_a_wrong_intermediate_value() -> None:
    chains = [
        chain_of(ADD_MUL.question, "4 × 3 = 12. Then 8 + 12 = 20. The answer is 20.", target="20"),
        chain_of(SUB_ADD.question, "15 - 2 = 13. Then 13 - 4 = 9. The answer is 9.", target="9"),
        chain_of(SUB_ADD.question, "She has 6 stamps. With 2 more she has 9. The answer is 9.", target="9"),
        chain_of("What is 2 + 2?", "2 + 2 = 5. The answer is 4.", target="4"),
    ]
    assert verification_summary(chains, Arithmetic()) == {
        "checked": 5, "right": 4 / 5, "rollouts_checked": 3, "wrong_step_rate": 1 / 3, "correct_checked": 3,
        "correct_through_wrong_step": 1 / 3}
    assert verification_summary(chains, WORD_PROBLEMS) == {
        "checked": 11, "right": 8 / 11, "rollouts_checked": 4, "wrong_step_rate": 3 / 4, "correct_checked": 4,
        "correct_through_wrong_step": 3 / 4}


def test_the_verifier_is_chosen_by_name() -> None:
    assert VERIFIERS == ("arithmetic", "word-problems")
    chain = chain_of(SUB_ADD.question, "She has 6 stamps. The answer is 9.")
    assert verifier_for("arithmetic", known_states)(chain) == []
    assert verifier_for("word-problems", known_states)(chain) == [StepCheck(0, "state 1/2: 6 (known 7)", False)]
    with pytest.raises(ProbeError, match=r"--verify 'states': expected one of arithmetic, word-problems"):
        verifier_for("states", known_states)


def test_probe_verify_word_problems_checks_the_dumped_problems(tmp_path: Path) -> None:
    responses = {ADD_MUL: "4 × 3 = 12. Then 8 + 12 = 20. The answer is 20.",
                 SUB_ADD: "She has 6 stamps. With 2 more she has 9. The answer is 9."}
    write_verl_dump([{"prompt": p.question, "response": r, "score": 1.0, "target": p.target}
                     for p, r in responses.items()], tmp_path, 1)
    figures = {}
    with serving(follows_reasoning) as (url, _):
        for verify in VERIFIERS:
            out, err = io.StringIO(), io.StringIO()
            code = main(["probe", str(tmp_path), "--base-url", url, "--model", "follower", "--json", "--no-cache",
                         "--probes", "filler", "--max-tokens", "8", "--verify", verify], out, err)
            assert code == 0, err.getvalue()
            figures[verify] = orjson.loads(out.getvalue())
    assert figures["arithmetic"]["step_verification"]["checked"] == 2
    assert figures["arithmetic"]["step_verification"]["correct_through_wrong_step"] == 0.0
    words = figures["word-problems"]["step_verification"]
    assert words["checked"] == 6 and words["right"] == 5 / 6 and words["correct_through_wrong_step"] == 0.5
    assert figures["word-problems"]["steps"][0]["reasoning/step_verification"] == 5 / 6
