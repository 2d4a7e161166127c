"""Intermediate-step verification: are the steps of a chain right, not only its answer?

A :class:`Verifier` looks at a chain and says, step by step, which of the facts it states it could check
and whether each holds. :class:`Arithmetic` checks every ``a op b = c`` (``+ - * × x / ÷``; whole numbers
and decimals) exactly, in rational arithmetic. :class:`KnownStates` checks the results a chain states
against the intermediate states its question is known to pass through (the bundled word problems have
them), and :class:`Combined` runs several verifiers over the same chain. Others (a unit-test runner)
plug in through the same protocol.

>>> from .chain import chain_of
>>> c = chain_of("", "3 + 4 = 7. Then 7 × 2 = 15. The answer is 15.")
>>> [(s.text, s.right) for s in Arithmetic()(c)]
[('3 + 4 = 7', True), ('7 × 2 = 15', False)]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

from ..errors import ProbeError
from ..rollout.answers import same_answer
from ..words import Words
from .chain import Chain
from .names import VERIFIERS

__all__ = ["Arithmetic", "Combined", "KnownStates", "States", "StepCheck", "Verifier", "verification_summary"]


@dataclass(frozen=True)
class StepCheck:
    """One fact a step states (``text``), in step ``step`` of the chain, and whether it holds."""

    step: int
    text: str
    right: bool


class Verifier(Protocol):
    def __call__(self, chain: Chain) -> Sequence[StepCheck]: ...


_NUM = r"-?\d+(?:,\d{3})*(?:\.\d+)?"
_OP = r"[+\-−*×x/÷]"
# not the tail of a longer expression ("5 + 3 × 4 = 17" is not "3 × 4 = 17")
_EQUATION = re.compile(rf"(?<![\w.])(?<!{_OP})(?<!{_OP}\s)({_NUM})\s*({_OP})\s*({_NUM})\s*=\s*({_NUM})(?![\w]|\.\d)")
_OPS: dict[str, Callable[[Fraction, Fraction], Fraction | None]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "−": lambda a, b: a - b,
    "*": lambda a, b: a * b, "×": lambda a, b: a * b, "x": lambda a, b: a * b,
    "/": lambda a, b: a / b if b else None, "÷": lambda a, b: a / b if b else None,
}


def _value(text: str) -> Fraction:
    return Fraction(text.replace(",", ""))


class Arithmetic:
    """Every ``a op b = c`` of every step, checked exactly (``7 / 2 = 3.5`` holds, ``1 / 3 = 0.33`` not)."""

    def __call__(self, chain: Chain) -> list[StepCheck]:
        out: list[StepCheck] = []
        for i, step in enumerate(chain.steps):
            for m in _EQUATION.finditer(step):
                a, op, b, c = m.groups()
                result = _OPS[op](_value(a), _value(b))
                out.append(StepCheck(i, m.group().strip(), result is not None and result == _value(c)))
        return out


#: a question's known states: a mapping from the question's text, or a function of it (None: not known)
States = Mapping[str, Sequence[int | Fraction]] | Callable[[str], Sequence[int | Fraction] | None]

_RESULT = re.compile(rf"=\s*\$?({_NUM})(?![\w]|\.\d|\s*{_OP}\s*\d)")
_NUMBER = re.compile(r"(?<![\w.,])\d+(?:,\d{3})*(?:\.\d+)?(?![\w]|\.\d|,\d{3})")
_MARKER = re.compile(r"^\s*(?:step\s+)?\d{1,2}\s*[.:)](?:\s+|$)", re.IGNORECASE)


def _results(step: str) -> list[tuple[str, Fraction, bool]]:
    """The numbers ``step`` may state as results, in order, and whether each ends an equation."""
    if "=" in step:
        return [(m.group(1), _value(m.group(1)), True) for m in _RESULT.finditer(step)]
    return [(m.group(), _value(m.group()), False) for m in _NUMBER.finditer(_MARKER.sub("", step, count=1))]


class KnownStates:
    """Each result a chain states, checked against the intermediate states its question is known to pass
    through (``states``: question text → the value after each operation, the last one the answer).

    The results a step states, in order: in a step with an ``=``, the number after each ``=`` that ends an
    expression (``= 12``, not the ``12`` of ``= 12 + 5``); in a step without one, each number in it (a list
    marker at its start, ``1.`` or ``Step 2:``, left out) except the question's own numbers, taken as
    restated unless one equals the state due. A number the chain already stated as a result is a
    restatement and is not checked again. The results are matched to the states in order: one equal to
    the state due or to a later one is right (the states skipped over, done in one step as in
    ``5 + 3 × 4 = 17``, are not checked); any other is wrong against the state due. Either way the next
    state due is the one after. Once the last state is reached nothing more is checked. A chain whose
    question has no known states yields no checks.

    Numbers written as words are not read, and a number the chain mentions in passing (not a result) is
    taken as one: the rule is strict and documented rather than clever. With :class:`Arithmetic` in
    :class:`Combined`, a step such as ``3 × 4 = 12`` yields two facts, the equation (is the arithmetic
    right?) and the state (is 12 the value this problem needs here?), and is a wrong step when either fails.

    >>> from .chain import chain_of
    >>> c = chain_of("q", "3 × 4 = 13. Then 5 + 12 = 17. The answer is 17.")
    >>> [(s.step, s.text, s.right) for s in KnownStates({"q": (12, 17)})(c)]
    [(0, 'state 1/2: 13 (known 12)', False), (1, 'state 2/2: 17 (known 17)', True)]
    """

    def __init__(self, states: States) -> None:
        self.lookup: Callable[[str], Sequence[int | Fraction] | None] = (
            states.get if isinstance(states, Mapping) else states)

    def __call__(self, chain: Chain) -> list[StepCheck]:
        known = [Fraction(v) for v in self.lookup(chain.question) or ()]
        given = {_value(m.group()) for m in _NUMBER.finditer(chain.question)}
        seen: set[Fraction] = set()
        out: list[StepCheck] = []
        due = 0
        for i, step in enumerate(chain.steps):
            for text, value, equation in _results(step):
                if due == len(known):
                    return out
                pending = known[due:]
                if value in seen or (not equation and value in given and value != known[due]):
                    continue  # a restatement: of a result already stated, or of the question
                seen.add(value)
                at = due + pending.index(value) if value in pending else due
                out.append(StepCheck(i, f"state {at + 1}/{len(known)}: {text} (known {known[at]})", value in pending))
                due = at + 1
        return out


class Combined:
    """The checks of every verifier over the same chain, ordered by step and, within a step, by the order
    the verifiers are given: a step one verifier finds right and another wrong is a wrong step.

    >>> from .chain import chain_of
    >>> c = chain_of("q", "3 × 4 = 12. So 12 + 5 = 18. The answer is 18.")
    >>> [(s.step, s.text, s.right) for s in Combined(Arithmetic(), KnownStates({"q": (12, 17)}))(c)]
    ... # doctest: +NORMALIZE_WHITESPACE
    [(0, '3 × 4 = 12', True), (0, 'state 1/2: 12 (known 12)', True), (1, '12 + 5 = 18', False),
     (1, 'state 2/2: 18 (known 17)', False)]
    """

    def __init__(self, *verifiers: Verifier) -> None:
        self.verifiers = verifiers

    def __call__(self, chain: Chain) -> list[StepCheck]:
        return sorted((c for v in self.verifiers for c in v(chain)), key=lambda c: c.step)


def verification_summary(chains: Sequence[Chain], verifier: Verifier) -> dict[str, object]:
    """Over ``chains``: ``checked`` steps and the share ``right`` (``reasoning/step_verification``), the share
    of rollouts with a wrong step (of those with a checked step), and the share of correct answers (the
    chain's answer equals its target) reached through a wrong step."""
    checks = [list(verifier(c)) for c in chains]
    steps = [s for cs in checks for s in cs]
    checked = [cs for cs in checks if cs]
    wrong = [any(not s.right for s in cs) for cs in checks]
    correct = [i for i, c in enumerate(chains)
               if c.target is not None and same_answer(c.answer, c.target) and checks[i]]
    return {
        "checked": len(steps),
        "right": sum(s.right for s in steps) / len(steps) if steps else None,
        "rollouts_checked": len(checked),
        "wrong_step_rate": sum(wrong) / len(checked) if checked else None,
        "correct_checked": len(correct),
        "correct_through_wrong_step": sum(wrong[i] for i in correct) / len(correct) if correct else None,
    }


ARITHMETIC = Arithmetic()


def verifier_for(choice: str, states: States) -> Verifier:
    """The verifier named ``choice`` (:data:`VERIFIERS`): ``arithmetic`` checks every ``a op b = c``;
    ``word-problems`` checks that and, in order, the results against the known states ``states`` of the
    bundled word problems (:func:`rlvitals.synthetic.word_problems.known_states`; the caller passes it, as
    the probes do not import the made-up data).

    >>> from rlvitals.probe.chain import chain_of
    >>> verifier_for("word-problems", {"q": (12, 17)})(chain_of("q", "3 * 4 = 12. The answer is 12."))
    ... # doctest: +NORMALIZE_WHITESPACE
    [StepCheck(step=0, text='3 * 4 = 12', right=True), StepCheck(step=0, text='state 1/2: 12 (known 12)', right=True)]
    """
    if choice not in VERIFIERS:
        raise ProbeError(Words(f"--verify {choice!r}: expected one of {', '.join(VERIFIERS)}",
                               f"--verify {choice!r}：应为 {', '.join(VERIFIERS)} 之一"))
    return ARITHMETIC if choice == "arithmetic" else Combined(ARITHMETIC, KnownStates(states))
