"""Intermediate-step verification: are the steps of a chain right, not only its answer?

A :class:`Verifier` looks at a chain and says, step by step, which of the facts it states it could check
and whether each holds. :class:`Arithmetic` checks every ``a op b = c`` (``+ - * × x / ÷``; whole numbers
and decimals) exactly, in rational arithmetic. Other verifiers (a task's known intermediate states,
a unit-test runner) plug in through the same protocol.

>>> from .chain import chain_of
>>> c = chain_of("", "3 + 4 = 7. Then 7 × 2 = 15. The answer is 15.")
>>> [(s.text, s.right) for s in Arithmetic()(c)]
[('3 + 4 = 7', True), ('7 × 2 = 15', False)]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

from ..rollout.answers import same_answer
from .chain import Chain

__all__ = ["Arithmetic", "StepCheck", "Verifier", "verification_summary"]


@dataclass(frozen=True)
class StepCheck:
    """One fact a step states (``text``), in step ``step`` of the chain, and whether it holds."""

    step: int
    text: str
    right: bool


class Verifier(Protocol):
    def __call__(self, chain: Chain) -> Sequence[StepCheck]: ...


_NUM = r"-?\d+(?:,\d{3})*(?:\.\d+)?"
_EQUATION = re.compile(rf"(?<![\w.])({_NUM})\s*([+\-−*×x/÷])\s*({_NUM})\s*=\s*({_NUM})(?![\w]|\.\d)")
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
